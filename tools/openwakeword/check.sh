#!/usr/bin/env bash
# Regenerates everything under models/openwakeword/ into temporary directories and compares it
# with the committed files: converted weights and frontend constants bit for bit (convert.py
# --check), goldens within 1e-6 relative, scores within 2e-6 absolute (goldens.py --check).
# Then, if espeak-ng and sox are installed, re-synthesises the clips and reports (without
# failing) whether they are identical: the goldens are computed from the committed clips, and
# other espeak-ng/sox versions may synthesise different samples. Runs setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/openwakeword/setup.sh
py=target/py/openwakeword/bin/python
export TF_CPP_MIN_LOG_LEVEL=2
"$py" tools/openwakeword/convert.py --check
"$py" tools/openwakeword/goldens.py --check
tools/common/compare_clips.sh tools/openwakeword/make_clips.sh models/openwakeword/clips
