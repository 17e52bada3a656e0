#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for SECONDS seconds each (default 20), starting from the
# committed seeds (fuzz/seeds/TARGET) and the corpus of earlier runs (fuzz/corpus/TARGET,
# not committed). Fails on the first crash, panic, timeout or out-of-memory input; libFuzzer
# writes it to fuzz/artifacts/TARGET/ (rerun with `cargo fuzz run --sanitizer none TARGET
# fuzz/artifacts/TARGET/crash-...`). `--sanitizer none`: AddressSanitizer needs a nightly
# compiler, and the targets are safe Rust over safe parsers. -timeout=60: a WAV header with an
# odd rate such as 567487 Hz makes the resampler plan a 1.1 M-point FFT, 0.3 s in a release
# build and 1.5 s to over 10 s in the instrumented fuzz build on a busy 2-core machine; a real
# hang still fails. FUZZ_JOBS targets run at once (default 2): each libFuzzer process is one
# thread, so on a 2-core machine two at a time fuzz each target as long as one at a time did,
# in half the time.
#   [FUZZ_JOBS=N] scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build --sanitizer none 2>&1 | tail -1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Runs target $1 with its log in $logs/$1; prints its result line, or its log's tail and
# fails.
fuzz() {
  local t=$1 max_len
  mkdir -p "corpus/$t"
  # Model files are 50-210 KB: the model parsers see their seeds whole.
  case $t in
    *_head | micro_tflite) max_len=262144 ;;
    *) max_len=4096 ;;
  esac
  if ! cargo fuzz run --sanitizer none "$t" "corpus/$t" "seeds/$t" -- \
      -max_total_time="$seconds" -rss_limit_mb=1024 -max_len="$max_len" -timeout=60 \
      >"$logs/$t" 2>&1; then
    tail -40 "$logs/$t"
    echo "fuzz target $t failed" >&2
    return 1
  fi
  echo "fuzz $t: $(grep -E '^Done [0-9]+ runs' "$logs/$t" | tail -1)"
}

# A pool of FUZZ_JOBS: a new target starts when one ends. After a failure no new target
# starts; the running ones end (within SECONDS) and the script fails.
jobs_max=${FUZZ_JOBS:-2}
running=0
failed=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  [ "$failed" = 0 ] || break
  fuzz "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
