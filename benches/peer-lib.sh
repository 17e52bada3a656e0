# Shared by the peer benchmarks (moonshine-peers.sh, sanotts-peer.sh, vad-peer.sh), which source
# it first: it sets the shell options (set -euo pipefail) and changes to the repository root.
#
#   peer_args VENV DEFAULT [ROUNDS]
#                      sets `rounds` (ROUNDS, the script's first argument, else DEFAULT) and `py`
#                      (the Python of the tools' virtual environment target/py/VENV)
#   peer_session BIN [CARGO ARGS]
#                      builds the release bench binary BIN of neon-benches (target/release/BIN;
#                      further arguments go to cargo, e.g. --features micro),
#                      then prints the session line: "commit HASH; N CPUs, load average A B C"
#                      (HASH marked "(with uncommitted changes)" when the tree differs from HEAD)
#   load_average       prints the load averages "A B C" (1, 5 and 15 min, from /proc/loadavg)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

peer_args() {
  rounds="${3:-$2}"
  py="target/py/$1/bin/python"
}

load_average() {
  cut -d' ' -f1-3 /proc/loadavg
}

peer_session() {
  cargo build --release --quiet -p neon-benches --bin "$@"
  local commit
  commit="$(git rev-parse --short HEAD)"
  git diff --quiet HEAD || commit="$commit (with uncommitted changes)"
  echo "commit $commit; $(nproc) CPUs, load average $(load_average)"
}
