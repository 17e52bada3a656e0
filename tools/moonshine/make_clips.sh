#!/usr/bin/env bash
# Synthesises the Moonshine test clips under models/moonshine/clips/ (or the directory given
# as $1) with tools/common/espeak_clips.sh (espeak-ng + sox, 16 kHz mono s16 WAV).
set -euo pipefail
cd "$(dirname "$0")/../.."
# name|voice|words per minute|text: a ~2 s clip, the pangram (~3.7 s) and ~5.8 s with numbers
# (transcribed with digits and symbols: "7:45", "$23"). The pangram is spoken at 140 words/min:
# at 150 the model hears "fox jumps" as two other words with a top-2 logit gap of only 0.06,
# too close to a tie for a golden.
exec tools/common/espeak_clips.sh "${1:-models/moonshine/clips}" \
  "open_the_door|en-us|150|open the door, please" \
  "quick_brown_fox|en-us|140|the quick brown fox jumps over the lazy dog" \
  "train_numbers|en-us|160|the train leaves at 7 45 from platform 12 and costs 23 dollars"
