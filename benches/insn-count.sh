#!/bin/bash
# insn-count.sh: counts the aarch64 instructions our GEMM / GEMV kernels and matrixmultiply
# execute on the same problems, under qemu-user with the insn-count plugin, and prints the
# results table of BENCHMARKS.md (with --update, also rewrites it there in place).
#
# usage: benches/insn-count.sh [--update]
# env:   INSN_COUNT  path of count-insns.sh
#                    (default: <repo>/../shared/tools/insn-count/count-insns.sh)
#        CPUS        qemu CPU models, space separated (default: "neoverse-n1 cortex-a53")
#
# Each workload runs in its own process (benches/src/bin/insn_gemm.rs); only the marked
# region around the one measured call is counted. FLOPs per instruction = 2*M*N*K / count.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSN_COUNT="${INSN_COUNT:-$ROOT/../shared/tools/insn-count/count-insns.sh}"
CPUS="${CPUS:-neoverse-n1 cortex-a53}"
update=0
[ "${1:-}" = "--update" ] && update=1
[ -x "$INSN_COUNT" ] || { echo "insn-count.sh: $INSN_COUNT not found (set INSN_COUNT)" >&2; exit 2; }

cd "$ROOT"
cargo build --release --quiet -p neon-benches --bin insn_gemm --target aarch64-unknown-linux-gnu
BIN="$ROOT/target/aarch64-unknown-linux-gnu/release/insn_gemm"

GEMM_FLOPS=$((2 * 256 * 256 * 256))
GEMV_FLOPS=$((2 * 1024 * 1024))
# workload | FLOPs | description
WORKLOADS=(
  "gemm-b|$GEMM_FLOPS|sgemm 256³, ours: NEON gemm_packed_b (5x16), weights packed beforehand"
  "gemm-b-pack|$GEMM_FLOPS|sgemm 256³, ours: pack_b + gemm_packed_b (packing counted)"
  "gemm-a|$GEMM_FLOPS|sgemm 256³, ours: NEON gemm_packed_a (8x12), weights packed beforehand"
  "mm-gemm|$GEMM_FLOPS|sgemm 256³, matrixmultiply 0.3 sgemm (packs both operands per call)"
  "portable-gemm-b|$GEMM_FLOPS|sgemm 256³, ours: Portable gemm_packed_b (no FMA contraction)"
  "portable-gemm-a|$GEMM_FLOPS|sgemm 256³, ours: Portable gemm_packed_a (no FMA contraction)"
  "gemv|$GEMV_FLOPS|GEMV 1024², ours: NEON gemv_packed_b, weights packed beforehand"
  "mm-gemv|$GEMV_FLOPS|GEMV 1024², matrixmultiply 0.3 sgemm with m = 1"
  "portable-gemv|$GEMV_FLOPS|GEMV 1024², ours: Portable gemv_packed_b"
)

table="$(mktemp)"
trap 'rm -f "$table"' EXIT
{
  printf '| workload |'
  for cpu in $CPUS; do printf ' %s instructions | %s FLOPs/insn |' "$cpu" "$cpu"; done
  printf '\n|---|'
  for _ in $CPUS; do printf -- '---:|---:|'; done
  printf '\n'
  for w in "${WORKLOADS[@]}"; do
    IFS='|' read -r name flops desc <<<"$w"
    printf '| %s (`%s`) |' "$desc" "$name"
    for cpu in $CPUS; do
      n="$("$INSN_COUNT" --region --quiet --cpu "$cpu" "$BIN" "$name" 2>/dev/null)"
      awk -v n="$n" -v f="$flops" 'BEGIN { printf " %d | %.2f |", n, f / n }'
    done
    printf '\n'
  done
} >"$table"
cat "$table"

if [ $update = 1 ]; then
  doc="$ROOT/BENCHMARKS.md"
  awk -v table="$table" '
    /<!-- insn-table:start -->/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
    /<!-- insn-table:end -->/ { skip = 0 }
    !skip { print }
  ' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
  echo "updated $doc" >&2
fi
