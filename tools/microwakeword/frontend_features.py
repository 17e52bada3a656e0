#!/usr/bin/env python3
"""Digests of pymicro-features' features on extreme synthetic signals, for mww/frontend.rs.

Runs the unmodified pymicro-features 2.0.2 `MicroFrontend` on the signals of `synthetic()`
(full-scale noise, quiet noise, -32768 throughout, a -32768/32767 square wave, impulses; the
same formulas as `synthetic()` in models/tests/mww/frontend.rs), fed 160 samples per call as
pymicro-wakeword 2.5.0 does, and writes models/tests/data/microwakeword/frontend_digests.json:
per signal (`synthetic/<name>`) the frame count and the FNV-1a 64-bit hash of the raw features
(feature / 0.0390625, checked integral) as little-endian uint16, row-major.

No recorded clip holds -32768 (their samples lie in -32764..=32764), so only these signals
reach the window's wrapping negation of a -32768 peak and full-scale square waves and noise. The
recorded clips are checked in full against models/microwakeword/goldens/ (goldens.py).

Usage: frontend_features.py [--check]   (--check regenerates into a temporary directory and
compares byte for byte; tools/microwakeword/check.sh runs it). Needs the venv of setup.sh.
"""
import json
import os
import sys

import numpy as np

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from regen_check import check_or_write, check_regenerated, same_bytes_as_in  # noqa: E402
from repo_paths import REPO_ROOT  # noqa: E402

OUT_DIR = os.path.join(REPO_ROOT, "models", "tests", "data", "microwakeword")
NAME = "frontend_digests.json"
SCALE = 0.0390625
CHUNK_BYTES = 320  # 160 samples of 16-bit audio: one 10 ms step


def synthetic():
    """Extreme 16 kHz signals, as 16-bit little-endian bytes (models/tests/mww/frontend.rs)."""
    state = 39
    noise, quiet = [], []
    for _ in range(48000):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        noise.append(((state >> 48) ^ 0x8000) - 0x8000)
        quiet.append((state >> 33) % 5 - 2)
    signals = {
        "full_scale_noise": noise,
        "quiet_noise": quiet,
        "min_value": [-32768] * 16000,
        "square_min_max": [-32768 if (i // 7) % 2 else 32767 for i in range(16000)],
        "impulses": [-32768 if i % 480 == 240 else 32767 if i % 333 == 0 else 0
                     for i in range(16000)],
    }
    return {name: np.array(x, dtype="<i2").tobytes() for name, x in signals.items()}


def run(audio, what):
    """Raw features [frames, 40] u16 of `audio` pushed 160 samples per call."""
    from pymicro_features import MicroFrontend

    frontend = MicroFrontend()
    rows = []
    for start in range(0, len(audio) - CHUNK_BYTES + 1, CHUNK_BYTES):
        out = frontend.process_samples(audio[start:start + CHUNK_BYTES])
        if out.features:
            raw = [v / SCALE for v in out.features]
            if not all(r == int(r) and 0 <= r <= 65535 for r in raw):
                raise SystemExit(f"{what}: a feature is not u16 * 0.0390625")
            rows.append([int(r) for r in raw])
    return np.array(rows, dtype=np.uint16).reshape(-1, 40)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def generate(out_dir):
    """Writes NAME into `out_dir`; returns its path."""
    digests = {}
    for name, audio in synthetic().items():
        f = run(audio, name)
        digests[f"synthetic/{name}"] = {"frames": int(f.shape[0]),
                                        "fnv1a64": fnv1a64(f.astype("<u2").tobytes())}
    path = os.path.join(out_dir, NAME)
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return [path]


def main():
    check_or_write(__doc__, lambda: check_regenerated(
        "mww-frontend-digests-", generate, same_bytes_as_in(OUT_DIR)), lambda: generate(OUT_DIR),
        REPO_ROOT)


if __name__ == "__main__":
    main()
