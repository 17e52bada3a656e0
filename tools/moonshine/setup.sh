#!/usr/bin/env bash
# Creates the Python environment for tools/moonshine: a venv in target/py/moonshine (build
# output, ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (see requirements.txt for why; tools/common/venv.sh). Idempotent: when
# the venv already has exactly the pinned versions, nothing is installed.
#
#   setup.sh           the converter / golden environment
#   setup.sh --bench   also bench_requirements.txt (the `onnx` package for convert.py --onnx-f32)
#
# Needs python3 (3.11 here; any version that onnxruntime 1.32.0 and numpy 2.4.6 have wheels for)
# with the venv module. make_clips.sh additionally needs Debian's espeak-ng and sox.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv moonshine "$@"
"$venv/bin/python" - "$bench" <<'PY'
import sys
from importlib.metadata import version
import numpy
import onnxruntime
import onnxruntime.tools.ort_format_model  # noqa: F401 (the flatbuffer readers)
import safetensors  # noqa: F401
packages = ["onnxruntime", "flatbuffers", "numpy", "safetensors"]
if sys.argv[1] == "1":
    import onnx  # noqa: F401
    packages += ["onnx", "protobuf"]
print("setup: target/py/moonshine ready:", ", ".join(f"{p} {version(p)}" for p in packages))
PY
