#!/bin/bash
# moonshine-peers.sh: Moonshine base-en on the host, neon next to ONNX Runtime in one session,
# with ratios (neon time / ONNX Runtime time) against the shipped int8 model and its plain-f32
# copy: encoder, one cached decoder step at position 7, audio to first logits, whole greedy
# transcription, on beckett.wav and a 30 s clip (beckett.wav three times), at 1 and 2
# threads (ours: a worker team; ONNX Runtime: intra_op_num_threads).
#
# usage: benches/moonshine-peers.sh [ROUNDS]     (default 3 rounds, each: neon, then ORT)
# env:   SCALE    repetition-count multiplier for both sides (default 1; 0.2 for a quick look)
#        THREADS  thread counts to measure (default "1 2")
#        CLIPS    clips to measure (default "beckett beckett30")
#        OUT      directory of the per-round JSON files and the summaries
#                 (default target/moonshine-peers; one summary-CLIP-tTHREADS.json each)
#
# Sets up what is missing first: the converted model (tools/moonshine/fetch.sh), the bench
# venv (setup.sh --bench) and the f32 ONNX copies (convert.py --onnx-f32
# target/py/moonshine-onnx). neon: benches/src/bin/time_moonshine.rs (FastBackend, release
# build); ONNX Runtime: tools/moonshine/bench_peers.py (see their docs for the workloads).
. "$(dirname "${BASH_SOURCE[0]}")/peer-lib.sh"
peer_args moonshine 3 "$@"
SCALE="${SCALE:-1}"
OUT="${OUT:-target/moonshine-peers}"
onnx=target/py/moonshine-onnx

tools/moonshine/fetch.sh >/dev/null
tools/moonshine/setup.sh --bench >/dev/null
if [ ! -f "$onnx/encoder_model_f32.onnx" ] || [ ! -f "$onnx/decoder_model_merged_f32.onnx" ]; then
  "$py" tools/moonshine/convert.py models/moonshine --if-needed --onnx-f32 "$onnx"
fi
mkdir -p "$OUT"
peer_session time_moonshine
for clip in ${CLIPS:-beckett beckett30}; do
  for threads in ${THREADS:-1 2}; do
    pairs=()
    for r in $(seq 1 "$rounds"); do
      echo "== $clip, $threads thread(s): round $r / $rounds"
      tag="$clip-t$threads.$r"
      target/release/time_moonshine --scale "$SCALE" --threads "$threads" --clip "$clip" \
        --json "$OUT/neon.$tag.json"
      "$py" tools/moonshine/bench_peers.py --scale "$SCALE" --threads "$threads" --clip "$clip" \
        --json "$OUT/ort.$tag.json"
      pairs+=("$OUT/neon.$tag.json" "$OUT/ort.$tag.json")
    done
    echo "== load average: $(load_average)"
    "$py" tools/moonshine/bench_peers.py --compare "${pairs[@]}" \
      --json "$OUT/summary-$clip-t$threads.json"
  done
done
