#!/usr/bin/env bash
# Synthesises the Moonshine test clips: 16 kHz mono signed 16-bit WAV (plain 44-byte header)
# under models/moonshine/clips/ (or the directory given as $1).
#
# Needs Debian's `espeak-ng` and `sox` (installed here with apt-get when missing and running as
# root). The committed clips were made with espeak-ng 1.51+dfsg-10+deb12u2 and sox
# 14.4.2+git20190427-3.5 (Debian 12); other versions may give different samples, so check.sh
# compares a fresh synthesis with the committed clips and only reports a difference.
#
# Pipeline per clip (as tools/openwakeword/make_clips.sh): espeak-ng (voice en-us, 150 words/min,
# 22050 Hz s16 WAV) -> sox: resample to 16 kHz with its default (high-quality) rate effect, no
# dither (-D), mono, s16.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-models/moonshine/clips}"

need=()
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v sox >/dev/null || need+=(sox)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "make_clips: missing Debian packages: ${need[*]} (apt-get install them)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# name|voice|words per minute|text: a ~2 s clip, the pangram (~3.7 s) and ~5.8 s with numbers
# (transcribed with digits and symbols: "7:45", "$23"). The pangram is spoken at 140 words/min:
# at 150 the model hears "fox jumps" as two other words with a top-2 logit gap of only 0.06,
# too close to a tie for a golden.
clips=(
  "open_the_door|en-us|150|open the door, please"
  "quick_brown_fox|en-us|140|the quick brown fox jumps over the lazy dog"
  "train_numbers|en-us|160|the train leaves at 7 45 from platform 12 and costs 23 dollars"
)
for spec in "${clips[@]}"; do
  IFS='|' read -r name voice wpm text <<<"$spec"
  espeak-ng -v "$voice" -s "$wpm" -w "$tmp/$name.wav" "$text"
  sox -D "$tmp/$name.wav" -r 16000 -c 1 -b 16 -e signed-integer "$out/$name.wav"
  echo "make_clips: $out/$name.wav ($(soxi -s "$out/$name.wav") samples): \"$text\" ($voice, $wpm wpm)"
done
