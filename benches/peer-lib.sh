# Shared by the peer benchmarks (moonshine-peers.sh, sanotts-peer.sh, vad-peer.sh), which source
# it after `cd` to the repository root.
#
#   peer_session BIN   builds the release bench binary BIN of neon-benches (target/release/BIN),
#                      then prints the session line: "commit HASH; N CPUs, load average A B C"
#                      (HASH marked "(with uncommitted changes)" when the tree differs from HEAD)
#   load_average       prints the load averages "A B C" (1, 5 and 15 min, from /proc/loadavg)

load_average() {
  cut -d' ' -f1-3 /proc/loadavg
}

peer_session() {
  cargo build --release --quiet -p neon-benches --bin "$1"
  local commit
  commit="$(git rev-parse --short HEAD)"
  git diff --quiet HEAD || commit="$commit (with uncommitted changes)"
  echo "commit $commit; $(nproc) CPUs, load average $(load_average)"
}
