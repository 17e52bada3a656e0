#!/bin/bash
# sanotts-peer.sh: the sanoTTS decoder on the host, neon next to ONNX Runtime in one session:
# time per second of audio (T = 125 frames) on one thread, with the built-in synthetic voice
# and the seeded test hidden states, alternating rounds (neon, then ONNX Runtime).
#
# usage: benches/sanotts-peer.sh [ROUNDS]     (default 3 rounds)
# env:   FRAMES  frames per call (default 125 = 1 s of audio)
#        REPS    timed calls per case (default 50)
#
# Sets up the Python environment first (tools/sanotts/setup.sh). neon:
# benches/src/bin/time_sanotts.rs (`neon vocode`'s backend, release build; `decode` is the
# network and the iSTFT, what the peer times); ONNX Runtime: tools/sanotts/bench_peer.py
# (the voice as onnx_peer.py writes it, unfolded and folded graphs, intra_op_num_threads 1).
. "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"
peer_args sanotts 3 "$@"
FRAMES="${FRAMES:-125}"
REPS="${REPS:-50}"

tools/sanotts/setup.sh >/dev/null
peer_session time_sanotts
for r in $(seq 1 "$rounds"); do
  echo "== round $r / $rounds"
  target/release/time_sanotts --frames "$FRAMES" --reps "$REPS" --workloads decode network
  "$py" tools/sanotts/bench_peer.py --frames "$FRAMES" --reps "$REPS" --threads 1
done
echo "== load average: $(load_average)"
