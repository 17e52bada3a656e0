# Shared by tools/*/setup.sh, which source it from the repository root.
#
#   pinned_venv NAME [--bench] [--onnx]
#   venv_ready NAME MODULES PACKAGE...
#   onnx_tool_venv NAME [ARG...]
#
# Creates the venv target/py/NAME (build output, ignored by git) when it is missing and
# installs the pinned packages of tools/NAME/requirements.txt (with --bench also
# tools/NAME/bench_requirements.txt, with --onnx also tools/NAME/requirements_onnx.txt) with
# `pip install --no-deps` (each requirements.txt says why). Fast path: when every pinned
# `name==version` is already installed, pip is not run (it is slow even when it has nothing to
# do). Sets `venv` (the venv's path), `bench` (1 with --bench, else 0) and `onnx` (1 with
# --onnx, else 0). Needs python3 (or $PYTHON) with the venv module.
pinned_venv() {
  local name="$1"
  shift
  bench=0
  onnx=0
  for arg in "$@"; do
    case "$arg" in
      --bench) bench=1 ;;
      --onnx) onnx=1 ;;
      *) echo "usage: $0 [--bench] [--onnx]" >&2; exit 2 ;;
    esac
  done
  venv="target/py/$name"
  if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
  fi
  local reqs=("tools/$name/requirements.txt")
  if [ "$bench" = 1 ]; then
    reqs+=("tools/$name/bench_requirements.txt")
  fi
  if [ "$onnx" = 1 ]; then
    reqs+=("tools/$name/requirements_onnx.txt")
  fi
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
    local r
    for r in "${reqs[@]}"; do
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$r"
    done
  fi
}

# After pinned_venv NAME: imports each of the space-separated MODULES in the venv (a missing or
# broken package fails here), then prints "setup: target/py/NAME ready: " and the installed
# version of each PACKAGE.
venv_ready() {
  local name="$1" modules="$2"
  shift 2
  "target/py/$name/bin/python" - "$name" "$modules" "$@" <<'PY'
import importlib
import sys
from importlib.metadata import version
name, modules, packages = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
for module in modules:
    importlib.import_module(module)
print(f"setup: target/py/{name} ready:", ", ".join(f"{p} {version(p)}" for p in packages))
PY
}

# The whole setup of a tool whose environment is numpy, safetensors, onnx (with protobuf) and
# ONNX Runtime, with no option (tools/sanotts, tools/silero_vad): pinned_venv NAME, then
# venv_ready with those modules and packages. Any argument is a usage error.
onnx_tool_venv() {
  local name="$1"
  shift
  if [ "$#" -ne 0 ]; then echo "usage: $0" >&2; exit 2; fi
  pinned_venv "$name"
  venv_ready "$name" "numpy onnx onnxruntime safetensors" \
    numpy safetensors onnx protobuf onnxruntime
}
