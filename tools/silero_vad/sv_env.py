"""Shared by the Silero VAD tools: paths, the pinned source wheel, the clips and the feeding of
silero-vad's OnnxWrapper at 16 kHz.

The model source is the PyPI package `silero-vad` 6.2.3 (MIT; a pure-Python wheel that ships the
model files in silero_vad/data/). It is fetched with pip's own client (`pip download --no-deps`)
into target/py/cache and unpacked there; the wheel and every file used are sha256-checked on
every run (tools/common/fetch_pinned.py).
"""
import glob
import os
import sys

import numpy as np

# Repository layout (this file lives in tools/silero_vad/).
TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from repo_paths import CACHE_DIR, REPO_ROOT, models_dir  # noqa: E402,F401
from fetch_pinned import pinned_wheel  # noqa: E402
from regen_check import check_regenerated, same_bytes_as_in  # noqa: E402,F401
from safetensors_io import (  # noqa: E402,F401
    read_safetensors,
    read_safetensors_metadata,
    sha256_file,
    write_safetensors,
)
from wav_io import read_pcm16_mono  # noqa: E402

MODELS_DIR = models_dir("vad")

SOURCE_PACKAGE = "silero-vad"
SOURCE_VERSION = "6.2.3"
WHEEL_NAME = "silero_vad-6.2.3-py3-none-any.whl"
WHEEL_SHA256 = "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"
LICENCE = "MIT"

# The files used from the wheel (paths inside it) and their sha256.
OP15_ONNX = "silero_vad/data/silero_vad_16k_op15.onnx"  # converted (16 kHz only, opset 15)
ONNX = "silero_vad/data/silero_vad.onnx"  # run for the goldens (8 and 16 kHz behind an If)
UTILS = "silero_vad/utils_vad.py"  # OnnxWrapper: the feeding restated below
LICENSE = "silero_vad-6.2.3.dist-info/licenses/LICENSE"
METADATA = "silero_vad-6.2.3.dist-info/METADATA"
FILE_SHA256 = {
    OP15_ONNX: "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
    ONNX: "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
    UTILS: "15d0f6b3ef9590e22ca2f146e1436f6901da356cb552d3183df4100862b333cb",
    LICENSE: "2e63e9a38b6e8fc0c7bc37ce174caca1862870856c6daf5697cfb785e925520b",
}

# OnnxWrapper at 16 kHz (silero_vad/utils_vad.py): windows of 512 new samples; each call gets
# the last 64 samples of the previous call's input in front (zeros before the first window);
# state [2, 1, 128] (h, c) zeros at the start and carried; audio_forward zero-pads the end to a
# multiple of 512.
SAMPLE_RATE = 16000
WINDOW = 512
CONTEXT = 64
STATE_SHAPE = (2, 1, 128)

# Largest accepted |ONNX Runtime - float64 reference| of a probability (convert.py's
# verification, every golden). Measured on the clips: up to 5.8e-6 (ORT's f32 convolutions; a
# numpy f32 version of the network stays within 1.5e-6 of f64); the LSTM rows in ONNX order
# instead give 0.99.
ORT_VS_F64_TOL = 2e-5

# The clips the goldens are computed on: every committed 16 kHz clip of the other models, and
# Moonshine's beckett.wav when tools/moonshine/fetch.sh has put it in place (git-ignored).
CLIP_GLOBS = ["models/openwakeword/clips/*.wav", "models/moonshine/clips/*.wav"]
OPTIONAL_CLIPS = ["models/moonshine/beckett.wav"]


def source_dir():
    """Downloads (once) and unpacks the wheel; returns the unpacked directory (paths of
    FILE_SHA256 are relative to it). The wheel and every file of FILE_SHA256 are checked."""
    return pinned_wheel(CACHE_DIR, SOURCE_PACKAGE, SOURCE_VERSION, WHEEL_NAME, WHEEL_SHA256,
                        FILE_SHA256, extra_members=[METADATA])


def clips():
    """(repo-relative path, present) of every golden clip, sorted by name; the committed clips
    are always present, the optional ones only when fetched. Clip names are unique."""
    found = sorted(p for g in CLIP_GLOBS for p in glob.glob(g, root_dir=REPO_ROOT))
    out = [(p, True) for p in found]
    out += [(p, os.path.exists(os.path.join(REPO_ROOT, p))) for p in OPTIONAL_CLIPS]
    names = [clip_name(p) for p, _ in out]
    if len(set(names)) != len(names):
        raise SystemExit(f"clip names collide: {names}")
    return sorted(out, key=lambda c: clip_name(c[0]))


def clip_name(path):
    return os.path.splitext(os.path.basename(path))[0]


def read_clip(path):
    """A clip's samples as float32 int16 / 32768 (exact in f32, range [-1, 1 - 2^-15])."""
    pcm = read_pcm16_mono(os.path.join(REPO_ROOT, path), SAMPLE_RATE)
    return pcm.astype(np.float32) / np.float32(32768.0)


def windows(audio):
    """The model inputs of OnnxWrapper.audio_forward at 16 kHz: float32 [n, CONTEXT + WINDOW],
    row k = the 64 samples before window k (zeros for k = 0) followed by window k, the audio
    zero-padded at the end to a multiple of WINDOW."""
    n = -(-len(audio) // WINDOW)
    padded = np.zeros(CONTEXT + n * WINDOW, np.float32)
    padded[CONTEXT:CONTEXT + len(audio)] = audio
    return np.stack([padded[k * WINDOW:k * WINDOW + CONTEXT + WINDOW] for k in range(n)])


def ort_session(path, threads=1):
    """ONNX Runtime session as OnnxWrapper opens it (CPU provider, 1 intra- and 1 inter-op
    thread, default graph optimisations)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


def ort_probabilities(session, audio):
    """One speech probability per window (float32 [n]) from ONNX Runtime, fed as OnnxWrapper
    feeds it: `input` [1, 576], `state` [2, 1, 128] carried, `sr` int64 scalar 16000."""
    state = np.zeros(STATE_SHAPE, np.float32)
    sr = np.array(SAMPLE_RATE, dtype=np.int64)
    probs = []
    for x in windows(audio):
        out, state = session.run(None, {"input": x[None, :], "state": state, "sr": sr})
        probs.append(out.reshape(()))
    return np.array(probs, np.float32)
