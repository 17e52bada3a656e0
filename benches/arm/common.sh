# Sourced by benches/arm/<peer>.sh: --help (the caller's header comment), the repository root,
# the instruction counter and the shared settings (CPUS, SYM), then `cd` to the root.
# $1 of the caller is passed as `arm_peer_args "$@"`; the caller's name is in $0.
arm_peer_args() {
  case "${1:-}" in
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--help]" >&2; exit 2 ;;
  esac
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  INSN_COUNT="${INSN_COUNT:-$ROOT/../shared/tools/insn-count/count-insns.sh}"
  CPUS="${CPUS:-neoverse-n1 cortex-a53}"
  SYM="${SYM:-}"
  cd "$ROOT"
  [ -x "$INSN_COUNT" ] || { echo "$(basename "$0"): $INSN_COUNT not found (set INSN_COUNT)" >&2; exit 2; }
  CACHE="$ROOT/target/py/cache"
}
