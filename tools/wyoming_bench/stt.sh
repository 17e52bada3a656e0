#!/usr/bin/env bash
# `neon serve`'s speech recognition measured by a third-party Wyoming client: the real
# `wyoming-bench stt` (pinned in tools/wyoming_bench/requirements.txt, venv
# target/py/wyoming_bench) over the ten real clips of models/speech/clips, in both of its modes
# (non-streaming: one `transcript`; streaming: `transcript-start`, `transcript-chunk`s,
# `transcript-stop`).
#
#   tools/wyoming_bench/stt.sh [--trailing-silence SEC] [--chunk-delay SEC] [--rounds N]
#                              [--references]
#
# The corpus (target/wyoming_bench/corpus-unpadded): each clip as <stem>.wav and <stem>.txt,
# the text being `neon transcribe --vad off` of the unpadded clip ("the unpadded
# transcripts"; remade when the binary is newer). Then, each against its own server on a free
# port of 127.0.0.1 (`neon serve --model-dir models/moonshine`):
#   1. default (VAD on, no endpointing): checked;
#   2. --vad-endpointing 0.7: checked, its WER over the clips with no pause of 0.7 s or more
#      between their speech segments (`neon vad`): the server ends a request at such a pause,
#      by design, as Home Assistant's own 0.7 s endpointing does (jfk_ask_not pauses 0.99 s
#      after "my fellow Americans", so its text stops there); the WER over all clips is
#      printed as well;
#   3. --vad off: for the record only (the behaviour before the VAD).
# Each run is `wyoming-bench stt 127.0.0.1:PORT --corpus DIR --mode both --rounds N --warmup 0
# --trailing-silence SEC --chunk-delay SEC -v`: trailing silence 1.0 s unless given (appended
# to each clip on the wire), chunk delay 0 (the pause after each audio-chunk of 1024 samples in
# streaming mode; 0.064 is real time), 1 round. Checked (tools/wyoming_bench/report.py):
# wyoming-bench exits 0, both modes ran (streaming not skipped), ok=10 per round and fail=0
# and the pooled WER at most 4% in each mode, and the server is still running afterwards.
# Prints one line per mode and server (WER, CER, RTF, mean total time, streaming TTFT); the
# full reports and the server logs stay in target/wyoming_bench/.
#
# --references: the corpus texts are the source reference texts of models/speech/SOURCES.md
# (tools/wyoming_bench/references.tsv) instead; nothing is checked then (a report for
# BENCHMARKS.md).
#
# Uses the `neon` of NEON (default target/debug/neon, the optimised build of `cargo test`,
# made here when stale; BENCHMARKS.md's figures use NEON=target/release/neon). Needs
# models/moonshine (tools/moonshine/fetch.sh).
# Budget: under 2 min on a 2-core machine. Measured 2026-12-05 on this project's 2-core
# machine (target/debug/neon of `cargo test`): 11 s with the venv and the transcripts in
# place, 19 s from no venv and no corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
trailing=1.0
delay=0
rounds=1
texts=unpadded
while [ $# -gt 0 ]; do
  case "$1" in
    --trailing-silence) trailing="$2"; shift 2 ;;
    --chunk-delay) delay="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --references) texts=references; shift ;;
    *)
      echo "usage: $0 [--trailing-silence SEC] [--chunk-delay SEC] [--rounds N] [--references]" >&2
      exit 2
      ;;
  esac
done
. tools/common/venv.sh
pinned_venv wyoming_bench
python="$venv/bin/python"
# Without NEON: target/debug/neon as `cargo test` builds it (the test profile, optimised; a
# plain `cargo build` leaves there an unoptimised one, some 15 times slower at transcription).
neon=${NEON:-target/debug/neon}
if [ -z "${NEON:-}" ] && ! out=$(cargo test -p neon-cli --test cli_serve --no-run 2>&1); then
  echo "$out" >&2
  exit 1
fi
model=models/moonshine
if [ ! -f "$model/base-en.safetensors" ]; then
  echo "stt.sh: no Moonshine model in $model (run tools/moonshine/fetch.sh)" >&2
  exit 1
fi
work=target/wyoming_bench
corpus="$work/corpus-$texts"
mkdir -p "$corpus"
samples=0
endpoint=0.7
paused=()
for clip in models/speech/clips/*.wav; do
  stem=$(basename "$clip" .wav)
  cp "$clip" "$corpus/$stem.wav"
  txt="$corpus/$stem.txt"
  if [ "$texts" = references ]; then
    awk -F'\t' -v s="$stem" '$1 == s { print $2 }' tools/wyoming_bench/references.tsv >"$txt"
  elif [ ! -s "$txt" ] || [ "$neon" -nt "$txt" ] || [ "$clip" -nt "$txt" ]; then
    "$neon" transcribe --vad off --model-dir "$model" "$clip" >"$txt.tmp"
    mv "$txt.tmp" "$txt"
  fi
  if [ ! -s "$txt" ]; then
    echo "stt.sh: no text for $stem in $txt" >&2
    exit 1
  fi
  samples=$((samples + 1))
  # The longest pause between two of the clip's speech segments (as the server's VAD cuts
  # them): a clip with a pause of at least the endpointing silence is ended there, by design.
  pause=$("$neon" vad "$clip" | awk 'NF == 5 && $5 == "speech" {
    if (n++ && $1 - end > max) max = $1 - end
    end = $3
  } END { printf "%.2f", max }')
  if awk -v p="$pause" -v e="$endpoint" 'BEGIN { exit !(p >= e) }'; then
    paused+=("$stem")
    echo "$stem: a pause of $pause s inside (--vad-endpointing $endpoint ends the request there)"
  fi
done
echo "corpus: $samples clips in $corpus (texts: $texts); $neon"

server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT
trap 'exit 143' INT TERM

# start_server LABEL [neon serve options]: a server on a free port (sets `port`), once it
# accepts connections.
start_server() {
  local label="$1"
  shift
  port=$("$python" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
  "$neon" serve --uri "tcp://127.0.0.1:$port" --model-dir "$model" "$@" \
    2>"$work/$label.serve.log" &
  server_pid=$!
  if ! "$python" - "$port" "$server_pid" <<'PY'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit(1)
        time.sleep(0.1)
sys.exit(1)
PY
  then
    echo "stt.sh: neon serve $* did not start; its log:" >&2
    cat "$work/$label.serve.log" >&2
    exit 1
  fi
}

failed=0
# run LABEL check|record [neon serve options]; the clips of `skip` are left out of the WER
# checked (report.py --skip-wer).
run() {
  local label="$1" mode="$2"
  shift 2
  start_server "$label" "$@"
  local log="$work/$label.log" rc=0
  "$venv/bin/wyoming-bench" stt "127.0.0.1:$port" --corpus "$corpus" --mode both \
    --rounds "$rounds" --warmup 0 --trailing-silence "$trailing" --chunk-delay "$delay" -v \
    >"$log" 2>&1 || rc=$?
  local alive=1
  kill -0 "$server_pid" 2>/dev/null || alive=0
  stop_server
  local check=()
  if [ "$mode" = check ] && [ "$texts" = unpadded ]; then
    check=(--check --samples $((samples * rounds)) --max-wer 4)
  fi
  local stem
  for stem in "${skip[@]}"; do
    check+=(--corpus "$corpus" --skip-wer "$stem")
  done
  local ok=1
  local title="neon serve${*:+ $*} (trailing $trailing s, chunk delay $delay s, rounds $rounds)"
  "$python" tools/wyoming_bench/report.py "$log" "$title" "${check[@]}" || ok=0
  if [ "$rc" != 0 ]; then
    echo "  wyoming-bench exited with status $rc"
    if [ "$mode" = check ]; then
      ok=0
    fi
  fi
  if [ "$alive" = 0 ]; then
    echo "  FAIL: the server exited during the run; its log:"
    cat "$work/$label.serve.log"
    ok=0
  fi
  if [ "$ok" = 0 ]; then
    echo "  --- $log:"
    sed 's/^/  | /' "$log"
    failed=1
  fi
}

skip=()
run default check
skip=("${paused[@]}")
run endpointing check --vad-endpointing "$endpoint"
skip=()
run vad-off record --vad off
if [ "$failed" != 0 ]; then
  echo "stt.sh: FAILED"
  exit 1
fi
if [ "$texts" = references ]; then
  echo "stt.sh: done (--references: nothing checked)"
else
  echo "stt.sh: passed"
fi
