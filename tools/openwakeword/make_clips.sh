#!/usr/bin/env bash
# Synthesises the openWakeWord test clips under models/openwakeword/clips/ (or the directory
# given as $1) with tools/common/espeak_clips.sh (espeak-ng + sox, 16 kHz mono s16 WAV).
set -euo pipefail
cd "$(dirname "$0")/../.."
# name|voice|words per minute|text. One positive clip per pretrained head and one negative.
# Some wake words are spelled by sound so that espeak-ng says them the way the models expect
# ("mycroft" and "rhasspy" as written do not trigger their heads).
exec tools/common/espeak_clips.sh "${1:-models/openwakeword/clips}" \
  "hey_jarvis|en-us|150|hey jarvis, what time is it" \
  "alexa|en-us|150|alexa, turn on the lights" \
  "hey_mycroft|en-us|150|hey my croft, what is the weather" \
  "hey_rhasspy|en-us|150|hey rass pea, set a timer" \
  "ok_nabu|en-us|150|okay nabu, turn off the lights" \
  "weather|en-us|150|the weather is nice today"
