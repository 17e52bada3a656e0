#!/usr/bin/env python3
"""Reference features of the microWakeWord frontend for models/tests/mww_frontend.rs.

Runs the unmodified pymicro-features 2.0.2 package (`MicroFrontend`) on the 16 kHz mono 16-bit
clips of models/tests/data/wyoming/, fed 160 samples per call as pymicro-wakeword 2.5.0 does,
and writes into models/tests/data/microwakeword/:
  - frontend_<clip>.safetensors for the clips in FULL: `features` [frames, 40] uint16, the raw
    values (feature / 0.0390625, checked to be integers);
  - frontend_digests.json for every clip and every synthetic signal of `synthetic()` (extreme
    inputs: full-scale noise, -32768, square waves; the same formulas as in the Rust test):
    frames and the FNV-1a 64-bit hash of the raw features as little-endian uint16, row-major.

Usage: frontend_features.py [--check]   (--check compares with the committed files instead)
Needs: pymicro-features==2.0.2, numpy, safetensors (e.g. in a private venv).
"""

import argparse
import json
import sys
import wave
from pathlib import Path

import numpy as np
from pymicro_features import MicroFrontend
from safetensors.numpy import load_file, save_file

REPO = Path(__file__).resolve().parents[2]
CLIPS = REPO / "models" / "tests" / "data" / "wyoming"
OUT = REPO / "models" / "tests" / "data" / "microwakeword"
FULL = ["alexa", "okay_nabu"]
SCALE = 0.0390625
CHUNK_BYTES = 320  # 160 samples of 16-bit audio: one 10 ms step


def synthetic() -> dict:
    """Extreme 16 kHz signals, as 16-bit little-endian bytes (models/tests/mww_frontend.rs)."""
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
        "impulses": [-32768 if i % 480 == 240 else 32767 if i % 333 == 0 else 0 for i in range(16000)],
    }
    return {name: np.array(x, dtype="<i2").tobytes() for name, x in signals.items()}


def features(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2), path
        audio = w.readframes(w.getnframes())
    return run(audio, str(path))


def run(audio: bytes, what: str) -> np.ndarray:
    frontend = MicroFrontend()
    rows = []
    for start in range(0, len(audio) - CHUNK_BYTES + 1, CHUNK_BYTES):
        out = frontend.process_samples(audio[start : start + CHUNK_BYTES])
        if out.features:
            raw = [v / SCALE for v in out.features]
            assert all(r == int(r) for r in raw), what
            rows.append([int(r) for r in raw])
    return np.array(rows, dtype=np.uint16).reshape(-1, 40)


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()

    digests = {}
    ok = True
    for path in sorted(CLIPS.glob("*.wav")):
        f = features(path)
        digests[path.stem] = {"frames": int(f.shape[0]), "fnv1a64": fnv1a64(f.astype("<u2").tobytes())}
        if path.stem in FULL:
            target = OUT / f"frontend_{path.stem}.safetensors"
            if args.check:
                same = np.array_equal(load_file(str(target))["features"], f)
                ok &= same
                print(f"{target.name}: {'same' if same else 'DIFFERENT'}")
            else:
                save_file({"features": f}, str(target))
    for name, audio in synthetic().items():
        f = run(audio, name)
        digests[f"synthetic/{name}"] = {"frames": int(f.shape[0]), "fnv1a64": fnv1a64(f.astype("<u2").tobytes())}
    text = json.dumps(digests, indent=1, sort_keys=True) + "\n"
    target = OUT / "frontend_digests.json"
    if args.check:
        same = target.read_text() == text
        ok &= same
        print(f"{target.name}: {'same' if same else 'DIFFERENT'}")
    else:
        target.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
