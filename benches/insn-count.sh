#!/bin/bash
# insn-count.sh: counts the aarch64 instructions our kernels, their peers (matrixmultiply,
# realfft), openWakeWord, Moonshine, the sanoTTS decoder and Silero VAD end to end execute, under
# qemu-user with the insn-count plugin, and prints the results table of BENCHMARKS.md (with
# --update, also rewrites it there in place).
#
# usage: benches/insn-count.sh [--update]
# env:   INSN_COUNT  path of count-insns.sh
#                    (default: <repo>/../shared/tools/insn-count/count-insns.sh)
#        CPUS        qemu CPU models, space separated (default: "neoverse-n1 cortex-a53")
#        ONLY        an extended regular expression: run only the workloads whose command
#                    (binary and arguments) matches it, e.g. ONLY=insn_moonshine; with
#                    --update, the table rows with the same first cell are replaced and new
#                    rows appended, the others kept
#
# The microWakeWord rows (insn_micro) also fill a table of their own, between the
# `<!-- micro-table:start -->` and `<!-- micro-table:end -->` markers of BENCHMARKS.md
# (instructions per model step, per second of audio, the frontend's share), when CPUS
# includes neoverse-n1 and cortex-a53 and every insn_micro workload ran (ONLY=insn_micro).
#
# The Moonshine rows need the converted model (tools/moonshine/fetch.sh; n/a without it) and
# take a few minutes: the step workload encodes 10 s of audio under qemu before its region.
#
# Each workload runs in its own process (benches/src/bin/insn_*.rs); only the marked
# region around the measured call(s) is counted. FLOPs per instruction = 2*M*N*K / count
# (convs and dense layers: 2 * multiply-adds; pools, activations, normalisations count no
# FLOPs). Workloads with no FLOP count (the mel frontend, whole openWakeWord chunks) print
# instructions only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSN_COUNT="${INSN_COUNT:-$ROOT/../shared/tools/insn-count/count-insns.sh}"
CPUS="${CPUS:-neoverse-n1 cortex-a53}"
ONLY="${ONLY:-}"
update=0
[ "${1:-}" = "--update" ] && update=1
[ -x "$INSN_COUNT" ] || { echo "insn-count.sh: $INSN_COUNT not found (set INSN_COUNT)" >&2; exit 2; }

[ -f "$ROOT/models/moonshine/base-en.safetensors" ] ||
  echo "insn-count.sh: no Moonshine model (run tools/moonshine/fetch.sh): its rows read n/a" >&2

GEMM_FLOPS=$((2 * 256 * 256 * 256))
GEMV_FLOPS=$((2 * 1024 * 1024))
QGEMV_FLOPS=$((2 * 416 * 1664))           # Moonshine base: d_model 416 -> MLP 1664
QGEMM_FLOPS=$((2 * 413 * 416 * 1664))     # 413 encoder frames (beckett.wav)
# Real FFT: the conventional 2.5 n log2 n FLOPs per transform, 10 transforms per region.
RFFT512_FLOPS=$((10 * 5 * 512 * 9 / 2))
RFFT4096_FLOPS=$((10 * 5 * 4096 * 12 / 2))
SAME_FLOPS=$((2 * 32 * 16 * 48 * 48 * 3))  # conv2d 1x3 "same" 48->48 on 32x16
VALID_FLOPS=$((2 * 28 * 8 * 72 * 72 * 3))  # conv2d 3x1 "valid" 72->72 on 30x8 (28x8 out)
EMB_FLOPS=$((2 * 41955840))               # openWakeWord's embedding: 20 convs
EMB_STEP_FLOPS=$((2 * 5612544))           # one incremental step: the rows 8 new frames add
# hey_jarvis_v0.1: dense layers 1536->128->128->1, second stage 1536->64->64->1.
HEAD_FLOPS=$((2 * (1536 * 128 + 128 * 128 + 128)))
HEAD2_FLOPS=$((HEAD_FLOPS + 2 * (1536 * 64 + 64 * 64 + 64)))
# Attention, Moonshine base (8 heads x 52 = 416 channels): 4 * queries * keys * 416 (the
# q.k and p.v multiply-adds; exponentials and the softmax bookkeeping count no FLOPs).
ATT_ENC_FLOPS=$((4 * 413 * 413 * 416))
ATT_CROSS_FLOPS=$((4 * 1 * 400 * 416))
ATT_SELF_FLOPS=$((4 * 1 * 200 * 416))
# Moonshine base-en, as neon_benches::moonshine::{encoder_macs, step_macs} (2 x multiply-adds):
# encode of N samples: stem convs (T1 x 416 x 127, T2 x 832 x 416 x 7, T x 416 x 832 x 3), per
# layer (8) q/k/v/o 4 T 416^2, attention 2 T^2 416, MLP 2 T 416 1664, and the decoder's
# cross-attention K/V 16 T 416^2; decoder step at position P over T frames: per layer q/k/v/o
# and cross q/o 6 x 416^2, MLP 416 x 3328 + 1664 x 416, attention 2 (P + 1 + T) 416; LM head
# 416 x 32768.
ms_encoder_flops() {
  local n=$1 t1 t2 t
  t1=$(((n - 127) / 64 + 1)); t2=$(((t1 - 7) / 3 + 1)); t=$(((t2 - 3) / 2 + 1))
  echo $((2 * (t1 * 416 * 127 + t2 * 832 * 416 * 7 + t * 416 * 832 * 3
    + 8 * (4 * t * 416 * 416 + 2 * t * t * 416 + 2 * t * 416 * 1664) + 16 * t * 416 * 416)))
}
ms_step_flops() {
  local p=$1 t=$2
  echo $((2 * (8 * (6 * 416 * 416 + 416 * 3328 + 1664 * 416 + 2 * (p + 1 + t) * 416) + 416 * 32768)))
}
MS_ENC2_FLOPS=$(ms_encoder_flops 32000)   # 2 s of beckett.wav: 82 frames
MS_STEP_FLOPS=$(ms_step_flops 7 413)      # position 7 over beckett's 413 frames
# sanoTTS decoder, as neon_benches::sanotts::MACS_PER_FRAME: 647,936 multiply-adds per frame
# (projection 80x192, input conv 128x80x7, residual convs 2x128x128x3, 4 ConvNeXt 128x7 +
# 2x128x384, head 514x128); 125 frames = 1 s of audio. Streaming's recomputed context frames not counted.
SANO_FLOPS=$((2 * 647936 * 125))
# Silero VAD, as neon_benches::vad::MACS_PER_WINDOW: 679,552 multiply-adds per 512-sample window
# (STFT conv 258x256 x 4 frames, encoder convs 128x129x3 x 4, 64x128x3 x 2, 64x64x3 x 1,
# 128x64x3 x 1, LSTM cell 512x256, decoder 128).
VAD_FLOPS=$((2 * (258 * 256 * 4 + 128 * 129 * 3 * 4 + 64 * 128 * 3 * 2 + 64 * 64 * 3 + 128 * 64 * 3 + 512 * 256 + 128)))
# binary and arguments | FLOPs | description [| divisor: the region holds that many units,
# the table gives the count per unit]
WORKLOADS=(
  "insn_gemm gemm-b|$GEMM_FLOPS|sgemm 256³, ours: NEON gemm_packed_b (5x16), weights packed beforehand"
  "insn_gemm gemm-b-pack|$GEMM_FLOPS|sgemm 256³, ours: pack_b + gemm_packed_b (packing counted)"
  "insn_gemm gemm-a|$GEMM_FLOPS|sgemm 256³, ours: NEON gemm_packed_a (8x12), weights packed beforehand"
  "insn_gemm mm-gemm|$GEMM_FLOPS|sgemm 256³, matrixmultiply 0.3 sgemm (packs both operands per call)"
  "insn_gemm portable-gemm-b|$GEMM_FLOPS|sgemm 256³, ours: Portable gemm_packed_b (no FMA contraction)"
  "insn_gemm portable-gemm-a|$GEMM_FLOPS|sgemm 256³, ours: Portable gemm_packed_a (no FMA contraction)"
  "insn_gemm gemv|$GEMV_FLOPS|GEMV 1024², ours: NEON gemv_packed_b, weights packed beforehand"
  "insn_gemm mm-gemv|$GEMV_FLOPS|GEMV 1024², matrixmultiply 0.3 sgemm with m = 1"
  "insn_gemm portable-gemv|$GEMV_FLOPS|GEMV 1024², ours: Portable gemv_packed_b"
  "insn_quant gemv-f32 1 416 1664|$QGEMV_FLOPS|GEMV 416→1664, f32 weights (reference for the int8 rows)"
  "insn_quant gemv-i8 1 416 1664|$QGEMV_FLOPS|GEMV 416→1664, int8 per-tensor, NEON widening path (default)"
  "insn_quant gemv-i8-block 1 416 1664|$QGEMV_FLOPS|GEMV 416→1664, block-int8, NEON widening path"
  "insn_quant gemv-i8-dot 1 416 1664|$QGEMV_FLOPS|GEMV 416→1664, int8 per-tensor, sdot path (dotprod CPUs only)"
  "insn_quant gemm-f32 413 416 1664|$QGEMM_FLOPS|GEMM 413x416→1664, f32 weights"
  "insn_quant gemm-i8 413 416 1664|$QGEMM_FLOPS|GEMM 413x416→1664, int8 per-tensor"
  "insn_fft rfft 512|$RFFT512_FLOPS|real FFT n=512 x10, ours: NEON rfft"
  "insn_fft portable-rfft 512|$RFFT512_FLOPS|real FFT n=512 x10, ours: Portable rfft"
  "insn_fft realfft 512|$RFFT512_FLOPS|real FFT n=512 x10, realfft 3 (rustfft 6, NEON)"
  "insn_fft rfft 4096|$RFFT4096_FLOPS|real FFT n=4096 x10, ours: NEON rfft"
  "insn_fft realfft 4096|$RFFT4096_FLOPS|real FFT n=4096 x10, realfft 3 (rustfft 6, NEON)"
  "insn_conv2d same-1x3|$SAME_FLOPS|conv2d 1x3 same 48→48 on 32x16: im2col + 8x12 GEMM, fused leaky ReLU + clamp"
  "insn_conv2d same-1x3-separate|$SAME_FLOPS|the same conv, then separate leaky_relu and clamp_min passes"
  "insn_conv2d valid-3x1|$VALID_FLOPS|conv2d 3x1 valid 72→72 on 30x8: direct (the GEMM reads the input), fused stage"
  "insn_conv2d valid-3x1-im2col|$VALID_FLOPS|the same conv through im2col_2d + the GEMM"
  "insn_conv2d embedding|$EMB_FLOPS|openWakeWord embedding, 76x32 -> 96: 20 convs, 5 max pools, operators one by one"
  "insn_oww mel||openWakeWord mel frontend, 1760 samples → 8x32 dB"
  "insn_oww embedding|$EMB_FLOPS|openWakeWord embedding: the EmbeddingNet plan, converted weights, golden mel window"
  "insn_oww embedding-step|$EMB_STEP_FLOPS|openWakeWord incremental embedding: one EmbeddingStep (the rows 8 new mel frames add) after the previous window"
  "insn_oww embedding-prime||openWakeWord incremental embedding of a window that follows none: the priming pass (10 steps)"
  "insn_oww head|$HEAD_FLOPS|openWakeWord hey_jarvis_v0.1 head, first stage only (p1 < 0.5)"
  "insn_oww head-stage2|$HEAD2_FLOPS|openWakeWord hey_jarvis_v0.1 head, both stages (p1 ≥ 0.5)"
  "insn_oww chunk||openWakeWord per 80 ms chunk: mel + embedding + head"
  "insn_oww push||openWakeWord WakeDetector::push of one 1280-sample chunk, steady state (buffering included; incremental embedding, the default)"
  "insn_oww push-stage2||the same push on a chunk where hey_jarvis's second stage runs"
  "insn_oww push-full||the same push with the whole-window embedding (EmbeddingMode::Full, as openwakeword)"
  "insn_oww push-heads:5||the same push scoring 5 heads (hey_jarvis, alexa, hey_mycroft, hey_rhasspy, ok_nabu)"
  "insn_oww push-heads:20||the same push scoring 20 heads (the five in turn)"
  "insn_oww push-heads:100||the same push scoring 100 heads (the five in turn)"
  "insn_oww embedding portable|$EMB_FLOPS|openWakeWord embedding on the Portable backend"
  "insn_oww chunk portable||openWakeWord per 80 ms chunk on the Portable backend"
  "insn_oww push portable||openWakeWord WakeDetector::push on the Portable backend"
  "insn_attention attention 413 413|$ATT_ENC_FLOPS|attention, Moonshine encoder layer: 413 x 413 frames, 8 heads x 52, NEON"
  "insn_attention portable-attention 413 413|$ATT_ENC_FLOPS|the same attention on the Portable backend"
  "insn_attention attention 1 400|$ATT_CROSS_FLOPS|attention, decoder step cross-attention: 1 query x 400 frames, NEON"
  "insn_attention attention-causal 1 200|$ATT_SELF_FLOPS|attention, decoder step self-attention: 1 query x 200 cached frames, causal, NEON"
  "insn_attention rotary 413 0||rotary embedding, 413 frames x 8 heads, 32 of 52 dims (f64 sin/cos per frame), NEON"
  "insn_attention rotary 1 200||rotary embedding of one decoder step (1 frame at position 200), NEON"
  "insn_moonshine encoder 2|$MS_ENC2_FLOPS|Moonshine base-en encode of 2 s (82 frames): stem, 8 layers, norm, decoder cross-attention K/V; NEON"
  "insn_moonshine encoder 2 portable|$MS_ENC2_FLOPS|the same encode on the Portable backend"
  "insn_moonshine encoder-dot 2|$MS_ENC2_FLOPS|the same encode, its int8 GEMMs on the int8-activation path (moonshine_asr.encoder_int8=dot: sdot); NEON"
  "insn_moonshine step|$MS_STEP_FLOPS|Moonshine base-en decoder step at position 7 (8 cached tokens) over 413 frames (int8 GEMVs, LM head); NEON"
  "insn_moonshine step portable|$MS_STEP_FLOPS|the same decoder step on the Portable backend"
  "insn_moonshine step-dot|$MS_STEP_FLOPS|the same decoder step on the int8-activation path (moonshine_asr.int8=dot: sdot where the core has dotprod, e.g. neoverse-n1; portable arithmetic elsewhere, e.g. cortex-a53); NEON"
  "insn_sanotts network 125|$SANO_FLOPS|sanoTTS decoder network, 1 s of audio (125 frames), synthetic voice; NEON"
  "insn_sanotts decode 125|$SANO_FLOPS|sanoTTS whole-utterance decode of 1 s: network + iSTFT; NEON"
  "insn_sanotts stream 125 25|$SANO_FLOPS|sanoTTS Vocoder, 1 s in pushes of 25 frames (200 ms), context recomputed; NEON"
  "insn_sanotts stream 125 5|$SANO_FLOPS|sanoTTS Vocoder, 1 s in pushes of 5 frames (40 ms); NEON"
  "insn_sanotts network 125 portable|$SANO_FLOPS|sanoTTS decoder network, 1 s, on the Portable backend"
  "insn_vad window|$VAD_FLOPS|Silero VAD, one 512-sample window (32 ms): the SileroVad plan; NEON"
  "insn_vad push|$VAD_FLOPS|Silero VAD Vad::push of one window, steady state (stream buffering included); NEON"
  "insn_vad window portable|$VAD_FLOPS|the same window on the Portable backend"
  "insn_micro step:alexa||microWakeWord alexa: one model step (N = 3 frames, int8 stream plan), mean of 20; NEON (sdot where the core has it)|20"
  "insn_micro step:alexa widening||the same step on the NEON widening path (NeonWidening)|20"
  "insn_micro step:hey_jarvis||microWakeWord hey_jarvis: one model step (N = 3 frames, int8 stream plan), mean of 20; NEON (sdot where the core has it)|20"
  "insn_micro step:hey_jarvis widening||the same step on the NEON widening path (NeonWidening)|20"
  "insn_micro step:hey_mycroft||microWakeWord hey_mycroft: one model step (N = 3 frames, int8 stream plan), mean of 20; NEON (sdot where the core has it)|20"
  "insn_micro step:hey_mycroft widening||the same step on the NEON widening path (NeonWidening)|20"
  "insn_micro step:okay_nabu||microWakeWord okay_nabu: one model step (N = 3 frames, int8 stream plan), mean of 20; NEON (sdot where the core has it)|20"
  "insn_micro step:okay_nabu widening||the same step on the NEON widening path (NeonWidening)|20"
  "insn_micro frontend||microWakeWord frontend, per 10 ms frame (mean of 100: 1 s of okay_nabu.wav)|100"
  "insn_micro detector:alexa||microWakeWord detector, alexa: frontend + steps + windows of 1 s of audio; NEON"
  "insn_micro detector:alexa widening||the same detector second on the NEON widening path"
  "insn_micro detector:hey_jarvis||microWakeWord detector, hey_jarvis: frontend + steps + windows of 1 s of audio; NEON"
  "insn_micro detector:hey_jarvis widening||the same detector second on the NEON widening path"
  "insn_micro detector:hey_mycroft||microWakeWord detector, hey_mycroft: frontend + steps + windows of 1 s of audio; NEON"
  "insn_micro detector:hey_mycroft widening||the same detector second on the NEON widening path"
  "insn_micro detector:okay_nabu||microWakeWord detector, okay_nabu: frontend + steps + windows of 1 s of audio; NEON"
  "insn_micro detector:okay_nabu widening||the same detector second on the NEON widening path"
  "insn_micro detector:all||microWakeWord detector, the four models on one stream: frontend + steps + windows of 1 s of audio; NEON"
  "insn_micro detector:all widening||the same detector second on the NEON widening path"
)

# Build the binaries of the selected workloads only.
declare -A BINS
for w in "${WORKLOADS[@]}"; do
  cmd="${w%%|*}"
  if [ -z "$ONLY" ] || [[ "$cmd" =~ $ONLY ]]; then BINS["--bin ${cmd%% *}"]=1; fi
done
cd "$ROOT"
# shellcheck disable=SC2046 # one word per "--bin NAME"
cargo build --release --quiet -p neon-benches $(printf '%s\n' "${!BINS[@]}") --target aarch64-unknown-linux-gnu
BINDIR="$ROOT/target/aarch64-unknown-linux-gnu/release"

table="$(mktemp)"
micro="$(mktemp)"
trap 'rm -f "$table" "$micro"' EXIT
# Instructions per unit of each workload run, by "command|cpu" (for the microWakeWord table).
declare -A COUNT
{
  printf '| workload |'
  for cpu in $CPUS; do printf ' %s instructions | %s FLOPs/insn |' "$cpu" "$cpu"; done
  printf '\n|---|'
  for _ in $CPUS; do printf -- '---:|---:|'; done
  printf '\n'
  for w in "${WORKLOADS[@]}"; do
    IFS='|' read -r cmd flops desc per <<<"$w"
    if [ -n "$ONLY" ] && ! [[ "$cmd" =~ $ONLY ]]; then continue; fi
    read -r -a argv <<<"$cmd"
    printf '| %s (`%s`) |' "$desc" "${argv[*]:1}"
    for cpu in $CPUS; do
      n="$("$INSN_COUNT" --region --quiet --cpu "$cpu" "$BINDIR/${argv[0]}" "${argv[@]:1}" 2>/dev/null || true)"
      n="$(awk -v n="$n" -v p="${per:-1}" 'BEGIN { if (n + 0 > 0) printf "%.0f", n / p }')"
      COUNT["$cmd|$cpu"]="$n"
      # A workload the CPU model cannot run (sdot without dotprod) prints n/a; one without a
      # FLOP count leaves its FLOPs column empty.
      awk -v n="$n" -v f="$flops" 'BEGIN {
        if (n + 0 <= 0) printf " n/a | n/a |"
        else if (f == "") printf " %.0f | |", n
        else printf " %.0f | %.2f |", n, f / n
      }'
    done
    printf '\n'
  done
} >"$table"
cat "$table"

# The microWakeWord table (when its workloads ran): per model, N, steps per second, the
# instructions of a step and of a second of audio on neoverse-n1 (sdot, widening) and
# cortex-a53 (widening: no dotprod), and the frontend's share of the second.
micro_table() {
  local n1 a53 m steps fe
  c() { echo "${COUNT["$1|$2"]:-}"; }
  n1=neoverse-n1 a53=cortex-a53
  fe="$(c "insn_micro frontend" $n1)"
  printf '| model | N | steps/s | n1 sdot insns/step | n1 widening insns/step | a53 insns/step | n1 sdot insns/s of audio | n1 widening insns/s | a53 insns/s | frontend share (n1 sdot) |\n'
  printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  for m in alexa hey_jarvis hey_mycroft okay_nabu all; do
    steps=3
    awk -v m="$m" -v n="$steps" -v s1="$(c "insn_micro step:$m" $n1)" \
      -v s2="$(c "insn_micro step:$m widening" $n1)" -v s3="$(c "insn_micro step:$m" $a53)" \
      -v d1="$(c "insn_micro detector:$m" $n1)" -v d2="$(c "insn_micro detector:$m widening" $n1)" \
      -v d3="$(c "insn_micro detector:$m" $a53)" -v fe="$fe" '
      function cell(v) { return v == "" ? " n/a |" : sprintf(" %.0f |", v) }
      BEGIN {
        if (m == "all") printf "| the four on one stream | 3 | 4 x %.1f |", 100 / n
        else printf "| %s | %d | %.1f |", m, n, 100 / n
        if (m == "all") printf " | | |"; else printf "%s%s%s", cell(s1), cell(s2), cell(s3)
        printf "%s%s%s", cell(d1), cell(d2), cell(d3)
        if (d1 == "" || fe == "") printf " n/a |\n"; else printf " %.0f%% |\n", 100 * 100 * fe / d1
      }'
  done
  [ -n "$fe" ] && printf '\nThe frontend alone: %s instructions per 10 ms frame on neoverse-n1, %s on cortex-a53.\n' \
    "$fe" "$(c "insn_micro frontend" $a53)"
  return 0
}
if [ -n "${COUNT["insn_micro frontend|neoverse-n1"]:-}${COUNT["insn_micro step:okay_nabu|neoverse-n1"]:-}" ]; then
  micro_table >"$micro"
  echo
  cat "$micro"
fi

# Replaces the lines between `<!-- $1:start -->` and `<!-- $1:end -->` of file $3 by file $2.
splice() {
  awk -v table="$2" -v start="<!-- $1:start -->" -v end="<!-- $1:end -->" '
    $0 == start { print; while ((getline line < table) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$3" >"$3.tmp"
  mv "$3.tmp" "$3"
}

if [ $update = 1 ]; then
  doc="$ROOT/BENCHMARKS.md"
  if [ -z "$ONLY" ]; then
    splice insn-table "$table" "$doc"
  else
    # Only some rows were measured: replace the rows with the same first cell (description and
    # arguments), append the others at the end of the table.
    awk -v table="$table" '
      BEGIN {
        while ((getline line < table) > 0) {
          if (line ~ /^\| workload/ || line ~ /^\|---/) continue
          split(line, cell, " [|] "); row[cell[1]] = line; order[++n] = cell[1]
        }
      }
      /<!-- insn-table:start -->/ { inside = 1; print; next }
      /<!-- insn-table:end -->/ {
        for (i = 1; i <= n; i++) if (!(order[i] in done)) print row[order[i]]
        inside = 0; print; next
      }
      inside && /^\| / { split($0, cell, " [|] "); if (cell[1] in row) { print row[cell[1]]; done[cell[1]] = 1; next } }
      { print }
    ' "$doc" >"$doc.tmp"
    mv "$doc.tmp" "$doc"
  fi
  # The microWakeWord table is rewritten only when every one of its cells was measured.
  if [ -s "$micro" ] && ! grep -q 'n/a' "$micro"; then
    splice micro-table "$micro" "$doc"
  elif [ -s "$micro" ]; then
    echo "insn-count.sh: some microWakeWord workloads did not run: its table is left as it was" >&2
  fi
  echo "updated $doc" >&2
fi
