#!/usr/bin/env bash
# Runs tools/wyoming/test_serve.py: `neon serve` driven by the `wyoming` client library
# (pinned, in a venv under target/py/wyoming), over stdio and TCP. Uses the `neon` binary of
# NEON (default target/debug/neon, which `cargo test` builds; made here when stale).
# Budget: under 1 minute (measured 2026-12-05 on 2 cores: ~5 s with the venv in place, ~9 s
# from no venv; the speech-recognition checks over TCP, three servers, take ~4 s of it).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv wyoming
# Without NEON: target/debug/neon as `cargo test` builds it (the test profile, optimised; a
# plain `cargo build` leaves there an unoptimised one, some 15 times slower at transcription).
# Nothing to do when `cargo test` ran before, as in scripts/test.sh.
neon=${NEON:-target/debug/neon}
if [ -z "${NEON:-}" ] && ! out=$(cargo test -p neon-cli --test cli_serve --no-run 2>&1); then
  echo "$out" >&2
  exit 1
fi
timeout 300 "$venv/bin/python" tools/wyoming/test_serve.py "$neon"
