#!/usr/bin/env bash
# The issue 17 benchmark: CPU time per second of audio of `neon serve` next to
# wyoming-openwakeword 1.8.2, five wake words, one client over TCP (tools/wyoming/bench_serve.py
# says how it measures). Builds the release `neon`, installs the peer in target/py/wyoming/peer.
# Not part of the test command: about 1 + 2 x RUNS x SECONDS / SPEED seconds (default 3.5 min).
#   tools/wyoming/bench.sh [bench_serve.py options: --seconds 60 --speed 4 --runs 3]
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv wyoming/peer
cargo build --release --quiet -p neon-models --bin neon
"$venv/bin/python" tools/wyoming/bench_serve.py --neon target/release/neon \
  --peer-python "$venv/bin/python" "$@"
