#!/bin/bash
# micro-peers.sh: the four official microWakeWord models on the host, neon next to
# pymicro-wakeword 2.5.0 (its wheel's libtensorflowlite_c, TFLite 2.17.1) in one session,
# alternating rounds (neon, then the peer), then `| workload | ours | peer | ours/peer |`
# rows: per workload the median over the rounds of each side and of the per-round ratios.
#
# usage: benches/micro-peers.sh [ROUNDS]     (default 5 rounds)
# env:   PASSES   passes over each model's clip per workload and round (default 20)
#        BACKEND  ours, for `step` (default best: the best backend of the CPU, printed)
#        OUT      directory of the per-round JSON files and the summary
#                 (default target/micro-peers; summary.json)
#
# Workloads, per model, on its own recording (models/tests/data/microwakeword/<m>.wav) and
# 1 s of silence, both sides checked against the goldens (models/microwakeword/goldens) first:
# `step` is one model step (ours StreamPlan::run, the peer's TfLiteInterpreterInvoke on one
# thread), the median in us per step; `push` is the whole process (ours MicroDetector::push,
# the peer's MicroWakeWordFeatures + MicroWakeWord), process CPU us per second of audio.
# neon: benches/src/bin/time_micro.rs (release build, feature micro); the peer:
# tools/microwakeword/bench_peer.py. Sets up the Python environment first
# (tools/microwakeword/setup.sh).
. "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"
peer_args microwakeword 5 "$@"
PASSES="${PASSES:-20}"
BACKEND="${BACKEND:-best}"
OUT="${OUT:-target/micro-peers}"

tools/microwakeword/setup.sh >/dev/null
mkdir -p "$OUT"
peer_session time_micro --features micro
pairs=()
for r in $(seq 1 "$rounds"); do
  echo "== round $r / $rounds"
  target/release/time_micro --passes "$PASSES" --backend "$BACKEND" --json "$OUT/neon.$r.json"
  "$py" tools/microwakeword/bench_peer.py --passes "$PASSES" --json "$OUT/peer.$r.json"
  pairs+=("$OUT/neon.$r.json" "$OUT/peer.$r.json")
done
echo "== load average: $(load_average)"
"$py" tools/microwakeword/bench_peer.py --compare "${pairs[@]}" --json "$OUT/summary.json"
