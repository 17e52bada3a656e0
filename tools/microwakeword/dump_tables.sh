#!/usr/bin/env bash
# Dumps the start-up tables of the pymicro-features 2.0.2 frontend (window, kissfft int16
# twiddles and factors, filterbank, noise reduction, PCAN gain LUT, log scale) as JSON, from
# the package's own C sources built with Debian's g++, and writes them to
# models/microwakeword/frontend_tables.json.
#
#   dump_tables.sh           regenerate the committed JSON
#   dump_tables.sh --check   regenerate into target/ and require byte equality
#
# Steps: `pip download --no-binary :all:` of the sdist into target/mww-sdist/ (once), a build
# of its microfrontend lib/*.cc (not tests, io or mains) with tables_driver.cc and
# -DFIXED_POINT=16 as its setup.py does, the driver's JSON, then two reports:
# tables_wheel.py (the installed wheel's binary builds the same tables) and tables_f64.py
# (margins of every float-rounded entry, and which entries an f64-libm recomputation gets
# wrong). The Python is $MWW_PYTHON, default the venv of tools/microwakeword/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${MWW_PYTHON:-target/py/microwakeword/bin/python}"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
dir=target/mww-sdist
src="$dir/pymicro_features-2.0.2"
if [ ! -d "$src" ]; then
  mkdir -p "$dir"
  "$py" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    pymicro-features==2.0.2 -d "$dir"
  tar -xzf "$dir/pymicro_features-2.0.2.tar.gz" -C "$dir"
fi
lib="$src/tensorflow/lite/experimental/microfrontend/lib"
sources=()
for f in "$lib"/*.cc; do
  case "$(basename "$f")" in
    *_test.cc | *_io.cc | *_main.cc | frontend_memmap_generator.cc) ;;
    # tables_driver.cc includes this one to see kissfft's private state layout.
    kiss_fft_int16.cc) ;;
    *) sources+=("$f") ;;
  esac
done
driver="$dir/tables_driver"
if [ ! -x "$driver" ] || [ tools/microwakeword/tables_driver.cc -nt "$driver" ]; then
  nice g++ -O2 -DFIXED_POINT=16 -I"$src" -I"$src/kissfft" -o "$driver" \
    tools/microwakeword/tables_driver.cc "${sources[@]}"
fi
out=models/microwakeword/frontend_tables.json
if [ "$check" = 1 ]; then
  fresh="$dir/frontend_tables.json"
else
  mkdir -p models/microwakeword
  fresh="$out"
fi
"$driver" >"$fresh"
"$py" tools/microwakeword/tables_wheel.py "$fresh"
"$py" tools/microwakeword/tables_f64.py "$fresh"
if [ "$check" = 1 ]; then
  if ! cmp -s "$fresh" "$out"; then
    echo "dump_tables: $out differs from a fresh dump ($fresh)" >&2
    exit 1
  fi
  echo "dump_tables: $out is up to date"
fi
