#!/usr/bin/env bash
# Regenerates everything under models/moonshine/ into temporary directories and compares it with
# the files in place (run fetch.sh first): the converted weights and copied files byte for byte
# (convert.py --check), the goldens with tokens and text exact and tensors within
# 1e-4 * max(1, |value|) (goldens.py --check). Then, if espeak-ng and sox are installed,
# re-synthesises the clips and reports (without failing) whether they are identical: the goldens
# are computed from the committed clips, and other espeak-ng/sox versions may synthesise
# different samples.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/moonshine/fetch.sh >/dev/null
py=target/py/moonshine/bin/python
"$py" tools/moonshine/convert.py models/moonshine --check
"$py" tools/moonshine/goldens.py models/moonshine --check
tools/common/compare_clips.sh tools/moonshine/make_clips.sh models/moonshine/clips
