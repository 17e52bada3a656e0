#!/usr/bin/env bash
# Regenerates everything under models/openwakeword/ into temporary directories and compares it
# with the committed files: converted weights and frontend constants bit for bit (convert.py
# --check), goldens within 1e-6 relative (goldens.py --check). Then, if espeak-ng and sox are
# installed, re-synthesises the clips and reports (without failing) whether they are identical:
# the goldens are computed from the committed clips, and other espeak-ng/sox versions may
# synthesise different samples. Runs setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/openwakeword/setup.sh
py=target/py/openwakeword/bin/python
export TF_CPP_MIN_LOG_LEVEL=2
"$py" tools/openwakeword/convert.py --check
"$py" tools/openwakeword/goldens.py --check
if command -v espeak-ng >/dev/null && command -v sox >/dev/null; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  tools/openwakeword/make_clips.sh "$tmp" >/dev/null
  for f in models/openwakeword/clips/*.wav; do
    if cmp -s "$f" "$tmp/$(basename "$f")"; then
      echo "clips: ok   $(basename "$f")"
    else
      echo "clips: NOTE $(basename "$f") differs from a fresh synthesis (espeak-ng/sox version?)"
    fi
  done
else
  echo "clips: espeak-ng or sox not installed; clip synthesis not compared"
fi
