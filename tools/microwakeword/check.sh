#!/usr/bin/env bash
# Regenerates the microWakeWord oracle files into temporary directories and requires them to be
# bit-identical to the committed ones:
# - models/microwakeword/goldens/<clip>.safetensors and SUMMARY.md (goldens.py --check);
# - the frontend's start-up tables, models/microwakeword/frontend_tables.json, built from
#   pymicro-features' own C sources (dump_tables.sh --check);
# - the per-op tensors, models/microwakeword/goldens/ops_<model>.safetensors (dump_ops.py
#   --check);
# - the crafted models (models/tests/data/microwakeword/crafted/, crafted.py --check) and their
#   goldens, models/microwakeword/goldens/crafted_<model>.safetensors (goldens_crafted.py --check);
# - the frontend's features on extreme synthetic signals,
#   models/tests/data/microwakeword/frontend_digests.json (frontend_features.py --check).
# Runs setup.sh first. Needs g++ (scripts/setup.sh installs build-essential).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/microwakeword/setup.sh
py=target/py/microwakeword/bin/python
"$py" tools/microwakeword/goldens.py --check
tools/microwakeword/dump_tables.sh --check
"$py" tools/microwakeword/dump_ops.py --check
"$py" tools/microwakeword/frontend_features.py --check
"$py" tools/microwakeword/crafted.py --check
"$py" tools/microwakeword/goldens_crafted.py --check
