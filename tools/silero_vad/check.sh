#!/usr/bin/env bash
# Regenerates everything under models/vad/ into temporary directories and compares it with the
# committed files: the converted weights and LICENSE.md byte for byte (convert.py --check), the
# goldens with clip, window and sample count exact, ONNX Runtime's probabilities within 1e-5 and
# the float64 reference's within 1e-9 absolute (goldens.py --check, which says why). Every
# regenerated golden also re-proves the LSTM gate order: the f64 reference from the converted
# tensors must stay within 2e-5 of ONNX Runtime. Runs setup.sh first; downloads the silero-vad
# wheel once into target/py/cache. models/moonshine/beckett.wav is compared only when
# tools/moonshine/fetch.sh has put it in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/silero_vad/setup.sh
py=target/py/silero_vad/bin/python
"$py" tools/silero_vad/convert.py --check
"$py" tools/silero_vad/goldens.py --check
