#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for SECONDS seconds each (default 20), starting from the
# committed seeds (fuzz/seeds/TARGET) and the corpus of earlier runs (fuzz/corpus/TARGET,
# not committed). Fails on the first crash, panic, timeout or out-of-memory input; libFuzzer
# writes it to fuzz/artifacts/TARGET/ (rerun with `cargo fuzz run --sanitizer none TARGET
# fuzz/artifacts/TARGET/crash-...`). `--sanitizer none`: AddressSanitizer needs a nightly
# compiler, and the targets are safe Rust over safe parsers. -timeout=60: a WAV header with an
# odd rate such as 567487 Hz makes the resampler plan a 1.1 M-point FFT, 0.3 s in a release
# build and 1.5 s to over 10 s in the instrumented fuzz build on a busy 2-core machine; a real
# hang still fails.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build --sanitizer none 2>&1 | tail -1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  log=$(mktemp)
  # Model files are 50-210 KB: the model parsers see their seeds whole.
  case $t in
    *_head | micro_tflite) max_len=262144 ;;
    *) max_len=4096 ;;
  esac
  if ! cargo fuzz run --sanitizer none "$t" "corpus/$t" "seeds/$t" -- \
      -max_total_time="$seconds" -rss_limit_mb=1024 -max_len="$max_len" -timeout=60 >"$log" 2>&1; then
    tail -40 "$log"
    rm -f "$log"
    echo "fuzz target $t failed" >&2
    exit 1
  fi
  echo "fuzz $t: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1)"
  rm -f "$log"
done
