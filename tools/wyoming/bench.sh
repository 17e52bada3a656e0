#!/usr/bin/env bash
# Manual benchmark (issue 17), not part of scripts/test.sh or CI: CPU time per second of audio
# of `neon serve` next to wyoming-openwakeword 1.8.2 (the newest release on PyPI), five wake
# words on one stream, one client over TCP; tools/wyoming/bench_serve.py says how it measures,
# BENCHMARKS.md ("Wyoming server: neon serve vs wyoming-openwakeword") has the results.
# Builds the release `neon`, installs the peer in target/py/wyoming/peer (pinned in
# tools/wyoming/peer/requirements.txt). About 4 minutes with the defaults (each server gets
# 3 runs of 120 s of audio sent at 4x real time, plus a warm-up); CPU time, not wall time, is
# measured, so other jobs on the machine matter less, but they still move it (see BENCHMARKS.md).
#   tools/wyoming/bench.sh [bench_serve.py options: --seconds 120 --speed 4 --runs 3
#                           --only neon|peer --verbose]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv wyoming/peer
cargo build --release --quiet -p neon-cli --bin neon
"$venv/bin/python" tools/wyoming/bench_serve.py --neon target/release/neon \
  --peer-python "$venv/bin/python" "$@"
