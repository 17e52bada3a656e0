#!/usr/bin/env bash
# Re-synthesises a model's test clips and reports, without failing, whether each is identical
# to the committed one: the goldens are computed from the committed clips, and other
# espeak-ng/sox versions may synthesise different samples. Skipped (with a note) when espeak-ng
# or sox is not installed. Used by tools/*/check.sh, from the repository root.
#
#   compare_clips.sh MAKE_CLIPS CLIPS_DIR    e.g. tools/moonshine/make_clips.sh models/moonshine/clips
set -euo pipefail
make_clips="$1"
clips="$2"
if command -v espeak-ng >/dev/null && command -v sox >/dev/null; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$make_clips" "$tmp" >/dev/null
  for f in "$clips"/*.wav; do
    if cmp -s "$f" "$tmp/$(basename "$f")"; then
      echo "clips: ok   $(basename "$f")"
    else
      echo "clips: NOTE $(basename "$f") differs from a fresh synthesis (espeak-ng/sox version?)"
    fi
  done
else
  echo "clips: espeak-ng or sox not installed; clip synthesis not compared"
fi
