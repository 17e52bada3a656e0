#!/usr/bin/env bash
# Builds examples/c/neon_example.c against the static library of neon-capi and runs it on the
# committed clips, checking that it detects hey_jarvis (openWakeWord) and okay_nabu
# (microWakeWord), finds the speech segments of a speech clip (those of `neon vad` on it) and
# transcribes "open the door".
#
#   examples/c/run.sh            # host: release build, wake detection (both engines), VAD
#                                # and transcription (transcription skipped with a message
#                                # when models/moonshine/base-en.safetensors is absent)
#   examples/c/run.sh --aarch64  # cross-build for aarch64-unknown-linux-gnu with
#                                # aarch64-linux-gnu-gcc, run under qemu-aarch64 (wake with
#                                # both engines, and VAD)
set -euo pipefail
# The same release settings as scripts/release.sh (no debug info), so the two share builds.
export CARGO_PROFILE_RELEASE_DEBUG=false

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
out=$target_dir/c-example
mkdir -p "$out"
wake_clip=models/openwakeword/clips/hey_jarvis.wav
micro_clip=models/tests/data/microwakeword/okay_nabu.wav
vad_clip=models/speech/clips/jfk_ask_not.wav
speech_clip=models/moonshine/clips/open_the_door.wav
model_dir=models/moonshine
sources=(examples/c/neon_example.c examples/c/wav.c)
cflags=(-std=c99 -O2 -Wall -Wextra -Werror -Ineon-capi/include -Iexamples/c)
libs=(-lpthread -ldl -lm)

case "${1:-}" in
"")
    cargo build -p neon-capi --release
    cc "${cflags[@]}" "${sources[@]}" "$target_dir/release/libneon_capi.a" "${libs[@]}" \
        -o "$out/neon_example"
    if [[ -f $model_dir/base-en.safetensors ]]; then
        output=$("$out/neon_example" "$wake_clip" "$micro_clip" "$vad_clip" "$model_dir" \
            "$speech_clip")
        transcribe=1
    else
        echo "run.sh: no $model_dir/base-en.safetensors (tools/moonshine/fetch.sh): no text"
        output=$("$out/neon_example" "$wake_clip" "$micro_clip" "$vad_clip")
        transcribe=0
    fi
    ;;
--aarch64)
    triple=aarch64-unknown-linux-gnu
    cargo build -p neon-capi --release --target $triple
    aarch64-linux-gnu-gcc "${cflags[@]}" "${sources[@]}" \
        "$target_dir/$triple/release/libneon_capi.a" "${libs[@]}" -o "$out/neon_example_aarch64"
    output=$(qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/neon_example_aarch64" "$wake_clip" \
        "$micro_clip" "$vad_clip")
    transcribe=0
    ;;
*)
    echo "usage: $0 [--aarch64]" >&2
    exit 2
    ;;
esac

# The segments `neon vad models/speech/clips/jfk_ask_not.wav` prints.
vad_segments='vad      0.13 s      2.08 s  speech
vad      3.07 s      4.22 s  speech
vad      5.19 s      7.45 s  speech
vad      7.97 s     10.35 s  speech'

echo "$output"
if ! grep -q '^wake .* hey_jarvis' <<<"$output"; then
    echo "run.sh: FAILED: no hey_jarvis detection" >&2
    exit 1
fi
if ! grep -q '^wake .* okay_nabu' <<<"$output"; then
    echo "run.sh: FAILED: no okay_nabu detection (microWakeWord)" >&2
    exit 1
fi
if [[ $(grep '^vad .* speech$' <<<"$output") != "$vad_segments" ]]; then
    echo "run.sh: FAILED: the speech segments of $vad_clip are not" >&2
    echo "$vad_segments" >&2
    exit 1
fi
if [[ $transcribe == 1 ]] && ! grep -qi '^text: open the door' <<<"$output"; then
    echo "run.sh: FAILED: the text is not \"open the door ...\"" >&2
    exit 1
fi
echo "run.sh: ok"
