#!/bin/bash
# moonshine-peers.sh: Moonshine base-en on the host, neon next to ONNX Runtime in one session,
# with ratios (neon time / ONNX Runtime time) against the shipped int8 model and its plain-f32
# copy: encoder, one cached decoder step at position 7, audio to first logits, whole greedy
# transcription, all on beckett.wav, one thread.
#
# usage: benches/moonshine-peers.sh [ROUNDS]     (default 3 rounds, each: neon, then ORT)
# env:   SCALE  repetition-count multiplier for both sides (default 1; 0.2 for a quick look)
#        OUT    directory of the per-round JSON files and summary.json
#               (default target/moonshine-peers)
#
# Sets up what is missing first: the converted model (tools/moonshine/fetch.sh), the bench
# venv (setup.sh --bench) and the f32 ONNX copies (convert.py --onnx-f32
# target/py/moonshine-onnx). neon: benches/src/bin/time_moonshine.rs (FastBackend, release
# build); ONNX Runtime: tools/moonshine/bench_peers.py (see their docs for the workloads).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rounds="${1:-3}"
SCALE="${SCALE:-1}"
OUT="${OUT:-target/moonshine-peers}"
py=target/py/moonshine/bin/python
onnx=target/py/moonshine-onnx

tools/moonshine/fetch.sh >/dev/null
tools/moonshine/setup.sh --bench >/dev/null
if [ ! -f "$onnx/encoder_model_f32.onnx" ] || [ ! -f "$onnx/decoder_model_merged_f32.onnx" ]; then
  "$py" tools/moonshine/convert.py models/moonshine --if-needed --onnx-f32 "$onnx"
fi
cargo build --release --quiet -p neon-benches --bin time_moonshine
mkdir -p "$OUT"

commit="$(git rev-parse --short HEAD)"
git diff --quiet HEAD || commit="$commit (with uncommitted changes)"
echo "commit $commit; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
pairs=()
for r in $(seq 1 "$rounds"); do
  echo "== round $r / $rounds"
  target/release/time_moonshine --scale "$SCALE" --json "$OUT/neon.$r.json"
  "$py" tools/moonshine/bench_peers.py --scale "$SCALE" --json "$OUT/ort.$r.json"
  pairs+=("$OUT/neon.$r.json" "$OUT/ort.$r.json")
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" tools/moonshine/bench_peers.py --compare "${pairs[@]}" --json "$OUT/summary.json"
