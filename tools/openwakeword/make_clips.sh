#!/usr/bin/env bash
# Synthesises the openWakeWord test clips: 16 kHz mono signed 16-bit WAV (plain 44-byte header)
# under models/openwakeword/clips/ (or the directory given as $1).
#
# Needs Debian's `espeak-ng` and `sox` (installed here with apt-get when missing and running as
# root). The committed clips were made with espeak-ng 1.51+dfsg-10+deb12u2 and sox
# 14.4.2+git20190427-3.5 (Debian 12); other versions may give different samples, so check.sh
# compares a fresh synthesis with the committed clips and only reports a difference.
#
# Pipeline per clip: espeak-ng (voice en-us, 150 words/min, 22050 Hz s16 WAV) -> sox: resample to
# 16 kHz with its default (high-quality) rate effect, no dither (-D), mono, s16.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-models/openwakeword/clips}"

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

# name|voice|words per minute|text. One positive clip per pretrained head and one negative.
# Some wake words are spelled by sound so that espeak-ng says them the way the models expect
# ("mycroft" and "rhasspy" as written do not trigger their heads).
clips=(
  "hey_jarvis|en-us|150|hey jarvis, what time is it"
  "alexa|en-us|150|alexa, turn on the lights"
  "hey_mycroft|en-us|150|hey my croft, what is the weather"
  "hey_rhasspy|en-us|150|hey rass pea, set a timer"
  "ok_nabu|en-us|150|okay nabu, turn off the lights"
  "weather|en-us|150|the weather is nice today"
)
for spec in "${clips[@]}"; do
  IFS='|' read -r name voice wpm text <<<"$spec"
  espeak-ng -v "$voice" -s "$wpm" -w "$tmp/$name.wav" "$text"
  sox -D "$tmp/$name.wav" -r 16000 -c 1 -b 16 -e signed-integer "$out/$name.wav"
  echo "make_clips: $out/$name.wav ($(soxi -s "$out/$name.wav") samples): \"$text\" ($voice, $wpm wpm)"
done
