#!/bin/bash
# arm-peers.sh: ours against the peers' aarch64 C libraries, in instructions counted by the
# insn-count plugin under qemu-aarch64 (count-insns.sh --region, the same region markers around
# the same work on both sides, one thread each), on the emulated cores of CPUS: one markdown
# table `| workload | cpu | ours | peer | ours/peer |`.
#
# usage: benches/arm-peers.sh [--help]
# env:   INSN_COUNT  count-insns.sh (default: <repo>/../shared/tools/insn-count/count-insns.sh;
#                    its setup.sh runs first when the plugin is not built yet)
#        CPUS        qemu CPU models, space separated (default: "neoverse-n1 cortex-a53")
#        PEERS       the peer scripts to run, space separated (default: "tflite ort")
#        SYM         a directory for the counts' --sym profiles (see the peer scripts)
#
# Each benches/arm/<peer>.sh of PEERS that exists runs in turn (it sets its peer up: fetches
# the library with the package's own client, checks its sha256, builds the peer program and
# our bench binaries) and prints only rows, each after the peer's output on the same input
# matched its golden; a peer script that fails (a mismatch is a failure, not a row) is
# reported on stderr, the others still run, and the exit status is 1. The peers:
# - tflite: TFLite 2.17.1 (pymicro-wakeword 2.5.0's aarch64 wheel): microWakeWord per model
#   step, openWakeWord per 80 ms chunk (benches/arm/tflite.sh);
# - ort: ONNX Runtime (benches/arm/ort.sh): Moonshine, sanoTTS, Silero VAD.
# Not part of CI (scripts/test.sh): a benchmark of some minutes (qemu, two cores per CPU model).
set -euo pipefail
case "${1:-}" in
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--help]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSN_COUNT="${INSN_COUNT:-$ROOT/../shared/tools/insn-count/count-insns.sh}"
export INSN_COUNT CPUS="${CPUS:-neoverse-n1 cortex-a53}" SYM="${SYM:-}"
PEERS="${PEERS:-tflite ort}"
[ -x "$INSN_COUNT" ] || { echo "arm-peers.sh: $INSN_COUNT not found (set INSN_COUNT)" >&2; exit 2; }
# The plugin count-insns.sh loads (its own default path): built by setup.sh beside it.
plugin="${INSNPROF_SO:-${INSN_COUNT_HOME:-$HOME/.cache/insn-count}/plugins/libinsnprof.so}"
[ -f "$plugin" ] || "$(dirname "$INSN_COUNT")/setup.sh" >&2

echo "| workload | cpu | ours | peer | ours/peer |"
echo "|---|---|---:|---:|---:|"
status=0
for peer in $PEERS; do
  script="$ROOT/benches/arm/$peer.sh"
  [ -f "$script" ] || continue
  if ! "$script"; then
    echo "arm-peers.sh: benches/arm/$peer.sh failed: its rows are missing" >&2
    status=1
  fi
done
exit $status
