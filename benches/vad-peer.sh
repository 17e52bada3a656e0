#!/bin/bash
# vad-peer.sh: Silero VAD per 512-sample window (32 ms) on the host, neon next to ONNX Runtime
# 1.32.0 on silero-vad 6.2.3's silero_vad.onnx in one session, one thread each, alternating
# rounds (neon, then ONNX Runtime), then the speed-up of ours (ONNX Runtime's median time per
# window / ours) per round and its median and range over the rounds.
#
# usage: benches/vad-peer.sh [ROUNDS]     (default 5 rounds)
# env:   PASSES     passes over the clip's 183 windows per case and round (default 30)
#        BACKENDS   ours (default "best portable": the backend `neon vad` runs, and Portable)
#        WORKLOADS  ours (default "push run")
#        OUT        directory of the per-round JSON files and the summary
#                   (default target/vad-peer; summary.json)
#
# Both sides stream the windows of models/moonshine/clips/train_numbers.wav as silero-vad's
# OnnxWrapper feeds them, the state carried, each call timed on its own. neon:
# benches/src/bin/time_vad.rs (release build); ONNX Runtime: tools/silero_vad/bench_peer.py
# (session as OnnxWrapper opens it, intra_op_num_threads 1; `call` = session.run as
# OnnxWrapper, `bare` = run_with_iobinding). Sets up the Python environment first
# (tools/silero_vad/setup.sh).
. "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"
peer_args silero_vad 5 "$@"
PASSES="${PASSES:-30}"
OUT="${OUT:-target/vad-peer}"
read -r -a backends <<<"${BACKENDS:-best portable}"
read -r -a workloads <<<"${WORKLOADS:-push run}"

tools/silero_vad/setup.sh >/dev/null
mkdir -p "$OUT"
peer_session time_vad
pairs=()
for r in $(seq 1 "$rounds"); do
  echo "== round $r / $rounds"
  target/release/time_vad --passes "$PASSES" --backends "${backends[@]}" \
    --workloads "${workloads[@]}" --json "$OUT/neon.$r.json"
  "$py" tools/silero_vad/bench_peer.py --passes "$PASSES" --threads 1 --json "$OUT/ort.$r.json"
  pairs+=("$OUT/neon.$r.json" "$OUT/ort.$r.json")
done
echo "== load average: $(load_average)"
"$py" tools/silero_vad/bench_peer.py --compare "${pairs[@]}" --json "$OUT/summary.json"
