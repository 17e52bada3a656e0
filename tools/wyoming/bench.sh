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
#
# With `--engine micro`: `neon serve --engine micro` next to wyoming-microwakeword 2.1.0, the
# four official microWakeWord models on one stream (BENCHMARKS.md, "Wyoming server: neon serve
# --engine micro vs wyoming-microwakeword"). That peer is not on PyPI: MWW_PEER_DIR must name a
# checkout of its 2.1.0 release (the repository rhasspy/wyoming-microwakeword at that version).
# It is installed from there, without dependencies, into target/py/wyoming/micro_peer, whose
# other packages are pinned in tools/wyoming/micro_peer/requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/common/venv.sh
case " $* " in
  *" --engine micro "* | *" --engine=micro "*)
    if [ -z "${MWW_PEER_DIR:-}" ] || [ ! -d "$MWW_PEER_DIR/wyoming_microwakeword" ]; then
      echo "bench.sh --engine micro: set MWW_PEER_DIR to a checkout of wyoming-microwakeword 2.1.0" >&2
      exit 2
    fi
    pinned_venv wyoming/micro_peer
    if [ "$("$venv/bin/python" -m wyoming_microwakeword --version 2>/dev/null)" != 2.1.0 ]; then
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        "$MWW_PEER_DIR"
    fi
    ;;
  *) pinned_venv wyoming/peer ;;
esac
cargo build --release --quiet -p neon-cli --bin neon
"$venv/bin/python" tools/wyoming/bench_serve.py --neon target/release/neon \
  --peer-python "$venv/bin/python" "$@"
