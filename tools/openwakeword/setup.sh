#!/usr/bin/env bash
# Creates the Python environment for tools/openwakeword: a venv in target/py/openwakeword
# (build output, ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (see requirements.txt for why; tools/common/venv.sh). Idempotent:
# when the venv already has exactly the pinned versions, nothing is installed.
#
#   setup.sh           the converter / golden environment
#   setup.sh --bench   also the peer-benchmark packages of bench_requirements.txt (ONNX Runtime)
#   setup.sh --onnx    also onnx and ONNX Runtime for onnx_heads.py (requirements_onnx.txt)
#
# Needs python3 (3.11 here; any version that ai-edge-litert 2.3.0 and numpy 2.4.6 have wheels
# for) with the venv module. The clip script additionally needs Debian's espeak-ng and sox
# (make_clips.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv openwakeword "$@"
"$venv/bin/python" - "$bench" "$onnx" <<'PY'
import sys
sys.path.insert(0, "tools/openwakeword")
import oww_env
oww = oww_env.import_openwakeword()
from importlib.metadata import version
packages = ["openwakeword", "ai-edge-litert", "numpy", "safetensors"]
if sys.argv[1] == "1":
    import onnxruntime
    packages.append("onnxruntime")
if sys.argv[2] == "1":
    import onnx
    import onnxruntime
    packages += ["onnx", "onnxruntime"] if sys.argv[1] != "1" else ["onnx"]
print("setup: target/py/openwakeword ready:", ", ".join(
    f"{p} {version(p)}" for p in packages))
PY
