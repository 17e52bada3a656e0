#!/usr/bin/env bash
# Creates the Python environment for tools/sanotts: a venv in target/py/sanotts (build output,
# ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (see requirements.txt for why; tools/common/venv.sh). Idempotent: when
# the venv already has exactly the pinned versions, nothing is installed.
#
# Needs python3 (3.11 here; any version that onnxruntime 1.32.0 and numpy 2.4.6 have wheels for)
# with the venv module.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
onnx_tool_venv sanotts "$@"
