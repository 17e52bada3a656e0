"""Shared by the tools' golden scripts: read the committed test clips (16 kHz mono signed 16-bit
PCM WAV files).

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import wave

import numpy as np


def read_pcm16_mono(path, rate=16000):
    """The samples of a mono signed 16-bit PCM WAV file at `rate` Hz as int16 [N]; exits with
    the file's format when it is anything else."""
    with wave.open(path, "rb") as f:
        got = (f.getnchannels(), f.getsampwidth(), f.getframerate())
        if got != (1, 2, rate):
            raise SystemExit(f"{path}: not {rate} Hz mono s16 (channels {got[0]}, "
                             f"width {got[1]}, rate {got[2]})")
        return np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.int16)
