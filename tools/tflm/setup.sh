#!/usr/bin/env bash
# Creates the Python environment for tools/tflm: a venv in target/py/tflm (build output,
# ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (tools/common/venv.sh). Idempotent. Ends by importing every package
# and printing its version.
#
# Needs python3 (3.11 here; a version the pinned tflite-micro build has a wheel for) with the
# venv module.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
if [ "$#" -ne 0 ]; then echo "usage: $0" >&2; exit 2; fi
pinned_venv tflm
venv_ready tflm "tflite_micro numpy safetensors yaml flatbuffers" \
  tflite-micro pyyaml numpy flatbuffers safetensors
