#!/usr/bin/env bash
# Runs tools/wyoming/test_serve.py: `neon serve` driven by the `wyoming` client library
# (pinned, in a venv under target/py/wyoming), over stdio and TCP; then, with pytest,
# tools/wyoming/test_micro.py (`neon serve --engine micro` as wyoming-microwakeword's test
# checks it) in that project's layout, the server started through tools/wyoming/peer_shim.
# MWW_PEER_TEST=PATH also runs wyoming-microwakeword 2.1.0's own tests/test_microwakeword.py,
# unchanged, in the same layout (the project is not on PyPI; its file is not committed). Uses
# the `neon` binary of NEON (default target/debug/neon, which `cargo test` builds; made here
# when stale).
# Budget: under 1 minute (measured 2026-12-05 on 2 cores: ~5 s with the venv in place, ~9 s
# from no venv; the speech-recognition checks over TCP, three servers, take ~4 s of it). The
# microWakeWord suite: ~1 s (2026-12-06; ~2 s with MWW_PEER_TEST; pytest's install adds ~20 s
# once).
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

# wyoming-microwakeword's test layout: tests/<model>.wav beside the test, ../wakewords.
suite=$(mktemp -d)
trap 'rm -rf "$suite"' EXIT
data=models/tests/data/microwakeword
mkdir "$suite/tests"
cp "$data"/*.wav tools/wyoming/test_micro.py "$suite/tests/"
cp -r "$data/wakewords" "$suite/wakewords"
if [ -n "${MWW_PEER_TEST:-}" ]; then
  cp "$MWW_PEER_TEST" "$suite/tests/test_microwakeword.py"
fi
NEON=$(realpath "$neon") PYTHONPATH="$PWD/tools/wyoming/peer_shim" timeout 120 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
  --rootdir "$suite" "$suite/tests"
