#!/usr/bin/env bash
# Creates the Python environment for tools/microwakeword: a venv in target/py/microwakeword
# (build output, ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (see requirements.txt for why; tools/common/venv.sh). Idempotent:
# when the venv already has exactly the pinned versions, nothing is installed. Ends by
# importing every package and printing its version.
#
# Needs python3 (3.11 here; any version that pymicro-features 2.0.2 (abi3, >= 3.9),
# ai-edge-litert 2.3.0 and numpy 2.4.6 have x86_64 or aarch64 Linux wheels for) with the venv
# module.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
if [ "$#" -ne 0 ]; then echo "usage: $0" >&2; exit 2; fi
pinned_venv microwakeword
venv_ready microwakeword \
  "pymicro_wakeword pymicro_features numpy safetensors ai_edge_litert.interpreter flatbuffers" \
  pymicro-wakeword pymicro-features numpy safetensors ai-edge-litert flatbuffers
