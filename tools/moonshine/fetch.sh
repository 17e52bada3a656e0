#!/usr/bin/env bash
# The one command that provides Moonshine base-en for neon: the pinned Python environment,
# models/moonshine/{base-en.safetensors, tokenizer.bin, beckett.wav} and the golden files
# models/moonshine/goldens/*.safetensors (all git-ignored; the clips, the JSON goldens and
# LICENSE.md are committed). Cheap when everything is in place: each step checks its outputs
# (sha256 of the converted weights and copies, metadata of the goldens) and skips the work.
#
#   tools/moonshine/fetch.sh           from any directory; needs python3 with venv and access to
#                                      the Python package index (pip)
#
# Steps: setup.sh (venv target/py/moonshine), convert.py models/moonshine --if-needed
# (downloads the moonshine-cpp 0.1.4 wheel into target/py/cache when it must convert),
# goldens.py models/moonshine --if-needed (ONNX Runtime on the committed clips and beckett.wav).
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/moonshine/setup.sh
py=target/py/moonshine/bin/python
"$py" tools/moonshine/convert.py models/moonshine --if-needed
"$py" tools/moonshine/goldens.py models/moonshine --if-needed
