#!/usr/bin/env bash
# Synthesises test clips with espeak-ng: 16 kHz mono signed 16-bit WAV (plain 44-byte header).
#
#   espeak_clips.sh OUT_DIR "name|voice|words per minute|text" ...
#
# Needs Debian's `espeak-ng` and `sox` (installed here with apt-get when missing and running as
# root). The committed clips were made with espeak-ng 1.51+dfsg-10+deb12u2 and sox
# 14.4.2+git20190427-3.5 (Debian 12); other versions may give different samples, so the check
# scripts compare a fresh synthesis with the committed clips and only report a difference.
#
# Pipeline per clip: espeak-ng (22050 Hz s16 WAV) -> sox: resample to 16 kHz with its default
# (high-quality) rate effect, no dither (-D), mono, s16. Used by tools/*/make_clips.sh.
set -euo pipefail
out="$1"
shift

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
for spec in "$@"; do
  IFS='|' read -r name voice wpm text <<<"$spec"
  espeak-ng -v "$voice" -s "$wpm" -w "$tmp/$name.wav" "$text"
  sox -D "$tmp/$name.wav" -r 16000 -c 1 -b 16 -e signed-integer "$out/$name.wav"
  echo "make_clips: $out/$name.wav ($(soxi -s "$out/$name.wav") samples): \"$text\" ($voice, $wpm wpm)"
done
