#!/usr/bin/env bash
# Regenerates models/microwakeword/goldens/ into a temporary directory and requires every tensor,
# its metadata and SUMMARY.md to be bit-identical to the committed files (goldens.py --check).
# Then, when tools/microwakeword/dump_tables.sh exists, checks the frontend's start-up tables
# the same way. Runs setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/microwakeword/setup.sh
py=target/py/microwakeword/bin/python
"$py" tools/microwakeword/goldens.py --check
# The frontend tables (models/microwakeword/frontend_tables.json), from pymicro-features' own C
# code; the script is added by the frontend-tables change.
if [ -x tools/microwakeword/dump_tables.sh ]; then
  tools/microwakeword/dump_tables.sh --check
fi
