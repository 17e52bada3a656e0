#!/bin/bash
# ort.sh: the ONNX Runtime rows of benches/arm-peers.sh: Silero VAD per 32 ms window, the
# Moonshine base-en encoder and one decoder step, the sanoTTS decoder per second of audio, ours
# (benches/src/bin/insn_vad.rs, insn_moonshine.rs, insn_sanotts.rs) next to ONNX Runtime 1.30.0's C library for Linux arm64
# (onnxruntime-node 1.30.0's bin/napi-v6/linux/arm64/libonnxruntime.so.1), both counted by
# the insn-count plugin under qemu-aarch64 (count-insns.sh --region), at one thread.
#
# usage: benches/arm/ort.sh [--help]
# env:   INSN_COUNT  count-insns.sh (default: <repo>/../shared/tools/insn-count/count-insns.sh)
#        CPUS        qemu CPU models, space separated (default: "neoverse-n1 cortex-a53")
#        SYM         a directory: also write each count's --sym profile (functions by
#                    instructions) there, <workload>.<cpu>.<ours|peer>.txt
#        ONLY        an extended regular expression: only the workloads whose key matches
#                    (vad, ms_encoder_2, ms_encoder_beckett, ms_step, ms_step_dot, sanotts)
#
# Prints only table rows `| workload | cpu | ours | peer | ours/peer |` (instructions per
# workload; the ratio to 2 decimals). Where the peer has two variants (the shipped int8 .ort
# Moonshine files and their f32 copies; sanoTTS's graph unfolded and with its input convs
# folded), the peer is the one with fewer instructions on that CPU, named in the row.
#
# Setup (idempotent, into target/arm-peers/ort): `npm pack onnxruntime-node@1.30.0` and
# `pip download --no-deps silero-vad==6.2.3`, sha256 checked; the peer program
# benches/arm/ort_peer.c built with Debian's aarch64-linux-gnu-gcc; the Moonshine and sanoTTS
# graphs, inputs and expected outputs written by benches/arm/ort_inputs.py (in the venvs of
# tools/moonshine, with its shipped .ort files and f32 copies, and tools/sanotts; the Moonshine
# rows need tools/moonshine/fetch.sh's model and are left out with a note on stderr without
# it); our bench binaries built for aarch64-unknown-linux-gnu.
#
# The /proc/cpuinfo trap: ONNX Runtime reads /proc/cpuinfo when it loads (its CPU detection,
# which also picks kernels by core: e.g. its Cortex-A53 SGEMM) and segfaults on the host's x86
# one (qemu-user 7.2 passes the host's file through). Every peer run is therefore made in a
# private mount namespace (`unshare -m`, root) with an aarch64 cpuinfo for the emulated core
# bind-mounted over /proc/cpuinfo: Neoverse N1 (implementer 0x41, part 0xd0c r3p1, its
# feature flags asimddp atomics lrcpc ...) or Cortex-A53 (part 0xd03 r0p4, fp asimd aes pmull
# sha1 sha2 crc32), two processors as the host's /sys/devices/system/cpu lists.
#
# Each peer run checks its output before its count is kept; a mismatch ends the script with
# status 1 (no row):
# - Silero VAD: the probability of window 109 of models/moonshine/clips/train_numbers.wav
#   within 1e-4 of models/vad/goldens/train_numbers.json (insn_vad's tolerance);
# - Moonshine: the encoder output within 5e-4 and the step's logits within 1e-3 of ONNX
#   Runtime's on the host (models/tests/moonshine_golden.rs's tolerances; on beckett.wav these
#   are the repository's goldens, models/moonshine/goldens/beckett.safetensors);
# - sanoTTS: the waveform within relative L2 1e-4 of the numpy f64 reference
#   (tools/sanotts/reference.py; the bound of models/tests/sanotts_golden.rs).
#
# Rows (the same inputs on both sides, the region around the call that computes them):
# - Silero VAD window: insn_vad `window` (the plan on window 109, after windows 0..108) against
#   one session.run on the same window and state (silero_vad.onnx, as OnnxWrapper feeds it);
# - Moonshine encoder 2 s / beckett: insn_moonshine `encoder 2` / `encoder 10` against one
#   run of the encoder graph on the same samples after one warm-up run. Ours also computes the
#   decoder's cross-attention keys and values there (16 T 416^2 multiply-adds: 11% of the
#   encode's at 2 s, 10% on beckett), which ONNX Runtime's graph leaves to its first decoder
#   step: the ratio is pessimistic for ours by about that much;
# - Moonshine decoder step: insn_moonshine `step` (position 7 over beckett's 413 frames)
#   against one cached step of the merged decoder on the same token, caches and encoder
#   output, every output fetched;
# - Moonshine decoder step, dot path: insn_moonshine `step-dot` (the same step on the
#   decoder's int8-activation path, moonshine_asr.int8=dot: `sdot` on neoverse-n1, the
#   portable evaluation of the same arithmetic on cortex-a53, which has no dotprod) against
#   the same ONNX Runtime step (counted once per run for both step rows);
# - sanoTTS decoder, 1 s: insn_sanotts `decode 125` (network and iSTFT, synthetic voice, the
#   seeded test hidden states) against one run of tools/sanotts/onnx_peer.py's graph (network
#   and the iSTFT as ConvTranspose) on the same voice and hidden states, after one warm-up run.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
arm_peer_args "$@"
ONLY="${ONLY:-}"
WORK="$ROOT/target/arm-peers/ort"
ORT_TGZ=onnxruntime-node-1.30.0.tgz
ORT_TGZ_SHA256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
ORT_LIB_IN_TGZ=package/bin/napi-v6/linux/arm64/libonnxruntime.so.1
ORT_LIB_SHA256=1f549d46250b005580b597f4164984aaf75b3bcb9f3aeb07c7f8a8fe60b23c76
# silero-vad 6.2.3 (as tools/silero_vad/sv_env.py: WHEEL_SHA256, FILE_SHA256[ONNX]).
SV_WHEEL=silero_vad-6.2.3-py3-none-any.whl
SV_WHEEL_SHA256=7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8
SV_ONNX=silero_vad/data/silero_vad.onnx
SV_ONNX_SHA256=1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3
# insn_vad's window (neon_benches::vad::COUNTED_WINDOW) and clip.
VAD_WINDOW=109
VAD_CLIP=models/moonshine/clips/train_numbers.wav
# The f32 copies of the Moonshine graphs (benches/moonshine-peers.sh's folder).
MS_F32="$ROOT/target/py/moonshine-onnx"

# check_sha256 FILE SHA256
check_sha256() {
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  [ "$got" = "$2" ] || { echo "ort.sh: $1: sha256 $got, expected $2" >&2; exit 1; }
}

# cpuinfo CPU: an aarch64 /proc/cpuinfo for qemu's CPU model CPU (as Linux prints it).
cpuinfo() {
  local variant part revision features
  case "$1" in
    neoverse-n1)
      variant=0x3 part=0xd0c revision=1
      features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs" ;;
    cortex-a53)
      variant=0x0 part=0xd03 revision=4
      features="fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid" ;;
    *) echo "ort.sh: no cpuinfo for CPU model $1 (neoverse-n1, cortex-a53)" >&2; exit 2 ;;
  esac
  for p in 0 1; do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t: %s\nCPU implementer\t: 0x41\n' "$p" "$features"
    printf 'CPU architecture: 8\nCPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %d\n\n' "$variant" "$part" "$revision"
  done
}

setup() {
  mkdir -p "$CACHE" "$WORK"
  if [ ! -f "$WORK/libonnxruntime.so.1" ]; then
    [ -f "$CACHE/$ORT_TGZ" ] || (cd "$CACHE" && npm pack --silent onnxruntime-node@1.30.0 >/dev/null)
    check_sha256 "$CACHE/$ORT_TGZ" "$ORT_TGZ_SHA256"
    tar -xzf "$CACHE/$ORT_TGZ" -O "$ORT_LIB_IN_TGZ" >"$WORK/libonnxruntime.so.1.tmp"
    mv "$WORK/libonnxruntime.so.1.tmp" "$WORK/libonnxruntime.so.1"
  fi
  check_sha256 "$WORK/libonnxruntime.so.1" "$ORT_LIB_SHA256"
  if [ ! -f "$WORK/silero_vad.onnx" ]; then
    [ -f "$CACHE/$SV_WHEEL" ] ||
      pip download --quiet --no-deps --only-binary=:all: -d "$CACHE" silero-vad==6.2.3 >&2
    check_sha256 "$CACHE/$SV_WHEEL" "$SV_WHEEL_SHA256"
    unzip -p "$CACHE/$SV_WHEEL" "$SV_ONNX" >"$WORK/silero_vad.onnx"
  fi
  check_sha256 "$WORK/silero_vad.onnx" "$SV_ONNX_SHA256"
  for cpu in $CPUS; do cpuinfo "$cpu" >"$WORK/cpuinfo.$cpu"; done
  aarch64-linux-gnu-gcc -O2 -Wall -Wextra -Werror -o "$WORK/ort_peer" benches/arm/ort_peer.c -ldl -lm
}

# The Moonshine models and inputs; returns 1 (rows left out) without the converted model.
moonshine_setup() {
  if [ ! -f models/moonshine/base-en.safetensors ] || [ ! -f models/moonshine/goldens/beckett.safetensors ]; then
    echo "ort.sh: no Moonshine model (run tools/moonshine/fetch.sh): its rows are left out" >&2
    return 1
  fi
  tools/moonshine/setup.sh --bench >/dev/null
  local py=target/py/moonshine/bin/python
  if [ ! -f "$MS_F32/encoder_model_f32.onnx" ] || [ ! -f "$MS_F32/decoder_model_merged_f32.onnx" ]; then
    "$py" tools/moonshine/convert.py models/moonshine --if-needed --onnx-f32 "$MS_F32" >/dev/null
  fi
  MS_PKG="$("$py" -c 'import sys; sys.path.insert(0, "tools/moonshine"); import ms_env, os; print(os.path.join(ms_env.source_dir(), "models/base-en"))')"
  if [ ! -f "$WORK/moonshine/done" ] || [ benches/arm/ort_inputs.py -nt "$WORK/moonshine/done" ]; then
    rm -rf "$WORK/moonshine"
    "$py" benches/arm/ort_inputs.py moonshine "$WORK/moonshine"
    touch "$WORK/moonshine/done"
  fi
}

sanotts_setup() {
  tools/sanotts/setup.sh >/dev/null
  if [ ! -f "$WORK/sanotts/done" ] || [ benches/arm/ort_inputs.py -nt "$WORK/sanotts/done" ]; then
    rm -rf "$WORK/sanotts"
    target/py/sanotts/bin/python benches/arm/ort_inputs.py sanotts "$WORK/sanotts"
    touch "$WORK/sanotts/done"
  fi
}

# count SYM_NAME CPU BIN ARGS...: the region's instructions (stdout), the profile in SYM.
count() {
  local name="$1" cpu="$2"
  shift 2
  if [ -n "$SYM" ]; then
    "$INSN_COUNT" --region --quiet --sym --top 40 --cpu "$cpu" "$@" 2>"$SYM/$name.txt"
  else
    "$INSN_COUNT" --region --quiet --cpu "$cpu" "$@" 2>/dev/null
  fi
}

# peer NAME CPU ARGS...: ort_peer's region count (stdout) with the CPU's cpuinfo mounted; its
# check failing (or no count) ends the script.
peer() {
  local name="$1" cpu="$2" log n
  shift 2
  log="$WORK/$name.$cpu.log"
  # shellcheck disable=SC2016 # expanded by the inner shell
  if ! n="$(unshare -m sh -c 'mount --bind "$0" /proc/cpuinfo && exec "$@"' \
    "$WORK/cpuinfo.$cpu" "$INSN_COUNT" --region --percpu --cpu "$cpu" ${SYM:+--sym --top 40} \
    "$WORK/ort_peer" "$WORK/libonnxruntime.so.1" "$@" 2>"$log")" || [ "${n:-0}" -le 0 ]; then
    echo "ort.sh: the ONNX Runtime peer failed on $name ($cpu):" >&2
    cat "$log" >&2
    exit 1
  fi
  [ -n "$SYM" ] && cp "$log" "$SYM/$name.$cpu.peer.txt"
  echo "$n"
}

# row WORKLOAD CPU OURS PEER [PEER_NAME]
row() {
  awk -v w="$1" -v c="$2" -v o="$3" -v p="$4" -v pn="${5:-}" 'BEGIN {
    printf "| %s%s | %s | %.0f | %.0f | %.2f |\n", w, pn == "" ? "" : " (ONNX Runtime " pn ")", c, o, p, o / p
  }'
}

want() { [ -z "$ONLY" ] || [[ "$1" =~ $ONLY ]]; }

setup >&2
[ -n "$SYM" ] && mkdir -p "$SYM"
bins=(--bin insn_vad)
ms=0
if { want ms_encoder_2 || want ms_encoder_beckett || want ms_step || want ms_step_dot; } &&
  moonshine_setup >&2; then
  ms=1
  bins+=(--bin insn_moonshine)
fi
if want sanotts; then
  sanotts_setup >&2
  bins+=(--bin insn_sanotts)
fi
cargo build --release --quiet -p neon-benches "${bins[@]}" --target aarch64-unknown-linux-gnu >&2
BIN="$ROOT/target/aarch64-unknown-linux-gnu/release"

if want vad; then
  vad_golden="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["probabilities"][int(sys.argv[2])])' \
    models/vad/goldens/train_numbers.json "$VAD_WINDOW")"
  for cpu in $CPUS; do
    p="$(peer vad "$cpu" vad "$WORK/silero_vad.onnx" "$ROOT/$VAD_CLIP" "$VAD_WINDOW" "$vad_golden")"
    o="$(count "vad.$cpu.ours" "$cpu" "$BIN/insn_vad" window)"
    row "Silero VAD, one 32 ms window" "$cpu" "$o" "$p"
  done
fi

# moonshine KEY SPEC DESCRIPTION GRAPH (encoder or decoder) OURS_ARGS...: the row of each CPU,
# the peer the faster of the int8 .ort graph and its f32 copy on the inputs of ort_inputs.py's
# SPEC (each peer counted once per run and CPU, in PEER_COUNT).
declare -A PEER_COUNT
moonshine() {
  local key="$1" spec="$2" desc="$3" graph="$4" int8 f32 cpu o p8 p32
  shift 4
  want "$key" || return 0
  case "$graph" in
    encoder) int8="$MS_PKG/encoder_model.ort" f32="$MS_F32/encoder_model_f32.onnx" ;;
    decoder) int8="$MS_PKG/decoder_model_merged.ort" f32="$MS_F32/decoder_model_merged_f32.onnx" ;;
  esac
  for cpu in $CPUS; do
    [ -n "${PEER_COUNT[$spec.int8.$cpu]:-}" ] ||
      PEER_COUNT[$spec.int8.$cpu]="$(peer "$spec.int8" "$cpu" run "$int8" "$WORK/moonshine/$spec/spec")"
    [ -n "${PEER_COUNT[$spec.f32.$cpu]:-}" ] ||
      PEER_COUNT[$spec.f32.$cpu]="$(peer "$spec.f32" "$cpu" run "$f32" "$WORK/moonshine/$spec/spec")"
    p8="${PEER_COUNT[$spec.int8.$cpu]}" p32="${PEER_COUNT[$spec.f32.$cpu]}"
    o="$(count "$key.$cpu.ours" "$cpu" "$BIN/insn_moonshine" "$@")"
    if [ "$p32" -lt "$p8" ]; then
      row "$desc" "$cpu" "$o" "$p32" "f32 copy; int8 .ort $p8"
    else
      row "$desc" "$cpu" "$o" "$p8" "int8 .ort; f32 copy $p32"
    fi
  done
}
if [ $ms = 1 ]; then
  moonshine ms_encoder_2 ms_encoder_2 "Moonshine base-en encoder, 2 s (82 frames)" encoder encoder 2
  moonshine ms_encoder_beckett ms_encoder_beckett "Moonshine base-en encoder, beckett.wav (9.96 s, 413 frames)" encoder encoder 10
  moonshine ms_step ms_step "Moonshine base-en decoder step (position 7, 413 frames)" decoder step
  moonshine ms_step_dot ms_step "Moonshine base-en decoder step, dot path (position 7, 413 frames)" decoder step-dot
fi

if want sanotts; then
  for cpu in $CPUS; do
    p1="$(peer sanotts.unfolded "$cpu" run "$WORK/sanotts/sanotts_125/sanotts.onnx" "$WORK/sanotts/sanotts_125/spec")"
    p2="$(peer sanotts.folded "$cpu" run "$WORK/sanotts/sanotts_125/sanotts_folded.onnx" "$WORK/sanotts/sanotts_125/spec")"
    o="$(count "sanotts.$cpu.ours" "$cpu" "$BIN/insn_sanotts" decode 125)"
    if [ "$p2" -lt "$p1" ]; then
      row "sanoTTS decoder, 1 s of audio (125 frames)" "$cpu" "$o" "$p2" "folded graph; unfolded $p1"
    else
      row "sanoTTS decoder, 1 s of audio (125 frames)" "$cpu" "$o" "$p1" "unfolded graph; folded $p2"
    fi
  done
fi
