#!/usr/bin/env bash
# Manual check (not run by CI): do the x86-64 and aarch64 TFLite C libraries of pymicro-wakeword
# 2.5.0 compute the same int8 results? Runs every computing op of the 7 models on the 13 clips
# with both and compares them element by element (cross_check.py).
#
#   arm64_check.sh [QEMU_CPU ...]     default: max cortex-a72
#
# Needs Debian's gcc, gcc-aarch64-linux-gnu (its /usr/aarch64-linux-gnu sysroot supplies the
# aarch64 libc, libm and libstdc++) and qemu-user. Fetches the aarch64 wheel with
# `pip download --platform manylinux_2_35_aarch64` into target/mww-arm64/ (once), builds
# step_driver.c for both machines against each wheel's libtensorflowlite_c.so, and runs the
# aarch64 one under qemu-aarch64 once per QEMU_CPU. Exit status 1 when a run differs.
# The Python is $MWW_PYTHON, default the venv of tools/microwakeword/setup.sh.
# MWW_EXTRA_MODELS: model JSON paths (space-separated, .tflite beside each) to check as well,
# e.g. models that are not committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${MWW_PYTHON:-target/py/microwakeword/bin/python}"
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(max cortex-a72)
dir=target/mww-arm64
mkdir -p "$dir"
wheel="$dir/pymicro_wakeword-2.5.0-py3-none-manylinux_2_35_aarch64.whl"
if [ ! -f "$wheel" ]; then
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_35_aarch64 --python-version 3.11 pymicro-wakeword==2.5.0 -d "$dir"
fi
arm_lib="$dir/aarch64"
if [ ! -f "$arm_lib/pymicro_wakeword/lib/libtensorflowlite_c.so" ]; then
  "$py" -m zipfile -e "$wheel" "$arm_lib"
fi
arm_lib="$arm_lib/pymicro_wakeword/lib"
x86_lib="$("$py" -c 'import os, pymicro_wakeword as p
print(os.path.join(os.path.dirname(p.__file__), "lib"))')"
gcc -O2 -Wall -Wextra -o "$dir/step_driver_x86_64" tools/microwakeword/step_driver.c \
  -L"$x86_lib" -ltensorflowlite_c -Wl,-rpath,"$x86_lib"
aarch64-linux-gnu-gcc -O2 -Wall -Wextra -o "$dir/step_driver_aarch64" \
  tools/microwakeword/step_driver.c -L"$arm_lib" -ltensorflowlite_c
work="$dir/work"
rm -rf "$work"
# shellcheck disable=SC2086 # MWW_EXTRA_MODELS is a space-separated list of model JSON paths
"$py" tools/microwakeword/cross_check.py prepare "$work" ${MWW_EXTRA_MODELS:-}
run() { # run NAME COMMAND...: every model and clip into $work/NAME/
  local name="$1" input model step clip
  shift
  mkdir -p "$work/$name"
  for input in "$work"/*.in; do
    clip="$(basename "${input%.in}")"
    model="$work/${clip%%.*}.tflite"
    step="$("$py" -c 'import json, sys
print(json.load(open(sys.argv[1]))[sys.argv[2]]["step_bytes"])' \
      "$work/manifest.json" "${clip%%.*}")"
    "$@" "$model" "$input" "$step" >"$work/$name/$clip.out"
  done
}
run x86_64 "$dir/step_driver_x86_64"
status=0
for cpu in "${cpus[@]}"; do
  run "aarch64-$cpu" qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu \
    -E LD_LIBRARY_PATH="$arm_lib" "$dir/step_driver_aarch64"
  echo "== aarch64 under qemu -cpu $cpu"
  "$py" tools/microwakeword/cross_check.py compare "$work" x86_64 "aarch64-$cpu" || status=1
done
exit $status
