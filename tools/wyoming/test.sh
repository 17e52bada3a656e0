#!/usr/bin/env bash
# Runs tools/wyoming/test_serve.py: `neon serve` driven by the `wyoming` client library
# (pinned, in a venv under target/py/wyoming), over stdio and TCP. Uses the `neon` binary of
# NEON (default target/debug/neon, which `cargo test` builds; built here if missing).
# Budget: under 1 minute (measured: ~10 s with the venv in place, ~15 s from scratch).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
pinned_venv wyoming
neon=${NEON:-target/debug/neon}
if [ ! -x "$neon" ]; then
  cargo test -p neon-models --test cli_serve --no-run >/dev/null 2>&1
fi
timeout 300 "$venv/bin/python" tools/wyoming/test_serve.py "$neon"
