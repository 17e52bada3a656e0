#!/usr/bin/env bash
# Creates the Python environment for tools/moonshine: a venv in target/py/moonshine (build
# output, ignored by git) with the pinned packages of requirements.txt, installed with
# `pip install --no-deps` (see requirements.txt for why). Idempotent: when the venv already has
# exactly the pinned versions, nothing is installed.
#
#   setup.sh           the converter / golden environment
#   setup.sh --bench   also bench_requirements.txt (the `onnx` package for convert.py --onnx-f32)
#
# Needs python3 (3.11 here; any version that onnxruntime 1.32.0 and numpy 2.4.6 have wheels for)
# with the venv module. make_clips.sh additionally needs Debian's espeak-ng and sox.
set -euo pipefail
bench=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.."
venv=target/py/moonshine
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
reqs=(tools/moonshine/requirements.txt)
if [ "$bench" = 1 ]; then
  reqs+=(tools/moonshine/bench_requirements.txt)
fi
# Fast path: every pinned `name==version` already installed (pip is slow even when it has
# nothing to do).
if ! "$venv/bin/python" - "${reqs[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
for path in sys.argv[1:]:
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, want = line.split("==")
        try:
            if version(name) != want:
                sys.exit(1)
        except PackageNotFoundError:
            sys.exit(1)
PY
then
  for r in "${reqs[@]}"; do
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$r"
  done
fi
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
