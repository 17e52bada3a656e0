#!/usr/bin/env python3
"""Golden outputs of the unmodified microWakeWord Python pipeline for neon's tests.

Runs pymicro-features 2.0.2's frontend through pymicro-wakeword 2.5.0's `MicroWakeWordFeatures`
and, on its features, one fresh `MicroWakeWord.from_config(<model>.json)` per clip and model
(the TFLite C library inside the pymicro-wakeword wheel), for the 4 official models
(models/microwakeword/) and the 3 community models of wyoming-microwakeword
(models/tests/data/microwakeword/wakewords/). Neither class is modified: the detector's handle
on the C library is wrapped only to record the bytes it copies into the input tensor and out of
the output tensor.

Clips: the 7 recordings of wyoming-microwakeword's test (models/tests/data/microwakeword/*.wav,
named by their stem) and, as further negatives, those of wyoming-openwakeword's test
(models/tests/data/wyoming/*.wav, named `oww_<stem>`; a file byte-identical to one of the first
set is skipped: alexa.wav is). Each clip is followed by 1 s (16000 samples) of zeros, so that
the window mean can settle after the word; nothing is put before it.

goldens/<clip>.safetensors (little endian)
  features [F, 40] U16       the frontend's raw output: pymicro-features returns
                             (double)(u16 * 0.0390625f), which is exact, so feature / 0.0390625
                             is the u16 (checked exact for every value)
  mix_sizes [M] I32          seeded random push sizes in 0..=4000 samples covering the padded
                             clip (some 0, some under one 160-sample hop, some exactly one)
  features_mix [F, 40] U16   the features when the padded clip is pushed in those sizes to a
                             fresh MicroWakeWordFeatures; equal to `features` (checked)
  for each model m (N = the model's input frames per step; S = F // N steps); the community
  models only in the goldens of the community models' recordings (choo_choo_homie,
  hey_home_assistant, okay_computer), to keep the files small:
  input.<m> [S, N, 40] I8    what the detector copies into the input tensor at each step:
                             round(frames / in_scale + in_zero_point) in float64 with numpy's
                             round (ties to even), then numpy's cast to int8 (re-derived and
                             checked)
  output.<m> [S] U8          the output tensor after each step
  prob.<m> [S] F64           process_streaming_prob's value at each step: the exact mean of the
                             last `sliding_window_size` dequantised outputs (u8 / 256), 0.0
                             until that many steps have run (re-derived and checked)
  detect.<m> [S] U8          1 where prob > probability_cutoff (what process_streaming
                             returns), else 0

goldens/SUMMARY.md: per clip and model (all of them, stored or not), the steps, the largest
prob, the number of detecting steps and the first one.

`--check` regenerates everything into a temporary directory and requires every tensor, every
metadata entry and SUMMARY.md to be bit-identical to the committed files.
"""
import ctypes
import hashlib
import os
import sys
from fractions import Fraction

import numpy as np

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from regen_check import check_or_write, check_regenerated  # noqa: E402
from repo_paths import REPO_ROOT, models_dir  # noqa: E402
from safetensors_io import read_safetensors, sha256_file, write_safetensors  # noqa: E402
from wav_io import read_pcm16_mono  # noqa: E402

MODELS_DIR = models_dir("microwakeword")
TEST_DATA = os.path.join(REPO_ROOT, "models", "tests", "data", "microwakeword")
OWW_CLIPS = os.path.join(REPO_ROOT, "models", "tests", "data", "wyoming")

OFFICIAL = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]
COMMUNITY = ["choo_choo_homie", "hey_home_assistant", "okay_computer"]
PAD = 16000
# pymicro-features (micro_features.cpp) scales each u16 by this f32 constant (5 / 128).
FEATURE_SCALE = 0.0390625
MIX_SEED = 20261206
MAX_PUSH = 4000
HOP = 160
# The size of the committed goldens (about 1.5 MB) allows the community models' tensors on
# their own three recordings only; SUMMARY.md still reports them on every clip.


def model_paths():
    """{model: its .json}: the official ones, then the community ones."""
    paths = {m: os.path.join(MODELS_DIR, f"{m}.json") for m in OFFICIAL}
    paths.update({m: os.path.join(TEST_DATA, "wakewords", f"{m}.json") for m in COMMUNITY})
    return paths


def check_official_models():
    """The committed official models must be the installed wheel's files, byte for byte."""
    import pymicro_wakeword

    shipped = os.path.join(os.path.dirname(pymicro_wakeword.__file__), "models")
    for m in OFFICIAL:
        for ext in ("json", "tflite"):
            mine = os.path.join(MODELS_DIR, f"{m}.{ext}")
            if sha256_file(mine) != sha256_file(os.path.join(shipped, f"{m}.{ext}")):
                raise SystemExit(f"{mine} differs from the pymicro-wakeword wheel's copy")


def clips():
    """[(name, path)]: wyoming-microwakeword's recordings, then wyoming-openwakeword's ones
    that are not byte-identical to one of them (returned second: [(name, path)])."""
    ours = [(n[:-4], os.path.join(TEST_DATA, n))
            for n in sorted(os.listdir(TEST_DATA)) if n.endswith(".wav")]
    seen = {sha256_file(p): n for n, p in ours}
    extra, skipped = [], []
    for n in sorted(os.listdir(OWW_CLIPS)):
        if not n.endswith(".wav"):
            continue
        path = os.path.join(OWW_CLIPS, n)
        digest = sha256_file(path)
        if digest in seen:
            skipped.append(f"models/tests/data/wyoming/{n} (= {seen[digest]})")
        else:
            extra.append((f"oww_{n[:-4]}", path))
    return ours + extra, skipped


def mix_sizes(name, total):
    """Push sizes summing to `total`, seeded by the clip's name: 0 (10 %), 1..159 (30 %),
    exactly 160 (10 %) or 161..4000 (50 %); the 4th is always 0."""
    seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) ^ MIX_SEED
    rng = np.random.default_rng(seed)
    sizes = []
    while sum(sizes) < total:
        kind = rng.choice(4, p=[0.1, 0.3, 0.1, 0.5])
        size = [0, int(rng.integers(1, HOP)), HOP, int(rng.integers(HOP + 1, MAX_PUSH + 1))][kind]
        sizes.append(min(size, total - sum(sizes)))
    sizes.insert(3, 0)
    return sizes


def frontend_frames(data, sizes):
    """The frames a fresh MicroWakeWordFeatures yields when `data` is pushed in `sizes`:
    a list of float64 arrays [1, 1, 40], as the detector receives them."""
    from pymicro_wakeword import MicroWakeWordFeatures

    frontend = MicroWakeWordFeatures()
    frames, at = [], 0
    for size in sizes:
        frames.extend(frontend.process_streaming(data[at:at + size].tobytes()))
        at += size
    return frames


def raw_features(frames, what):
    """The u16 behind the frontend's float64 features [F, 40] (checked exact)."""
    x = np.concatenate([f.reshape(1, 40) for f in frames]) if frames else np.zeros((0, 40))
    raw = x / FEATURE_SCALE
    u16 = raw.astype(np.uint16)
    exact = (raw == np.floor(raw)) & (raw >= 0) & (raw <= 65535)
    back = (u16.astype(np.float32) * np.float32(FEATURE_SCALE)).astype(np.float64)
    if not exact.all() or not np.array_equal(back, x):
        raise SystemExit(f"{what}: a feature is not u16 * 0.0390625f")
    return u16


class RecordingLib:
    """Stands in for a MicroWakeWord's `lib` (the ctypes handle on libtensorflowlite_c): every
    call goes to the library; the bytes copied into and out of tensors are kept."""

    def __init__(self, lib):
        self._lib = lib
        self.inputs = []
        self.outputs = []

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def TfLiteTensorCopyFromBuffer(self, tensor, data, size):  # noqa: N802 (the C name)
        self.inputs.append(ctypes.string_at(data, size))
        return self._lib.TfLiteTensorCopyFromBuffer(tensor, data, size)

    def TfLiteTensorCopyToBuffer(self, tensor, data, size):  # noqa: N802 (the C name)
        status = self._lib.TfLiteTensorCopyToBuffer(tensor, data, size)
        self.outputs.append(ctypes.string_at(data, size))
        return status


def run_model(json_path, frames, what):
    """Feeds `frames` to a fresh MicroWakeWord; returns (tensors, facts) for one model."""
    from pymicro_wakeword import MicroWakeWord

    word = MicroWakeWord.from_config(json_path)
    lib = RecordingLib(word.lib)
    word.lib = lib
    n, scale, zp = word.stride, word.input_scale, word.input_zero_point
    window, cutoff = word.sliding_window_size, word.probability_cutoff
    probs = []
    for frame in frames:
        steps = len(lib.outputs)
        prob = word.process_streaming_prob(frame)
        if len(lib.outputs) > steps:
            probs.append(prob)
        elif prob != 0.0:
            raise SystemExit(f"{what}: a probability without a step")
    word.close()
    steps = len(probs)
    inputs = np.frombuffer(b"".join(lib.inputs), np.int8).reshape(steps, n, 40)
    outputs = np.frombuffer(b"".join(lib.outputs), np.uint8)
    if (word.output_scale, word.output_zero_point) != (1 / 256, 0) or len(outputs) != steps:
        raise SystemExit(f"{what}: output is not one u8 of scale 1/256 per step")

    # The documented rules, re-derived from the frames.
    x = np.concatenate([f.reshape(1, 40) for f in frames[:steps * n]]).reshape(steps, n, 40)
    q = np.round(x / scale + zp)
    outside = int(np.count_nonzero((q < -128) | (q > 127)))
    if not np.array_equal(q.astype(np.int8), inputs):
        raise SystemExit(f"{what}: the input is not round(x / scale + zero_point) as int8")
    mean = [0.0 if s + 1 < window else
            float(Fraction(int(outputs[s + 1 - window:s + 1].astype(np.int64).sum()),
                           256 * window))
            for s in range(steps)]
    if mean != probs:
        raise SystemExit(f"{what}: prob is not the exact mean of the last {window} outputs / 256")

    prob = np.array(probs, np.float64)
    detect = (prob > cutoff).astype(np.uint8)
    tensors = {"input": inputs, "output": outputs, "prob": prob, "detect": detect}
    facts = {
        "N": n, "in_scale": scale, "in_zero_point": zp, "window": window, "cutoff": cutoff,
        "steps": steps, "outside": outside, "max_prob": float(prob.max()) if steps else 0.0,
        "detections": int(detect.sum()),
        "first": int(np.argmax(detect)) if detect.any() else None,
    }
    return tensors, facts


def clip_goldens(name, path, models):
    """(tensors, metadata, {model: facts}) of one clip."""
    clip = read_pcm16_mono(path)
    data = np.concatenate([clip, np.zeros(PAD, np.int16)])
    frames = frontend_frames(data, [len(data)])
    features = raw_features(frames, name)
    sizes = mix_sizes(name, len(data))
    features_mix = raw_features(frontend_frames(data, sizes), f"{name} (mix)")
    if not np.array_equal(features_mix, features):
        raise SystemExit(f"{name}: pushing in mix_sizes changes the features")
    tensors = {"features": features, "mix_sizes": np.array(sizes, np.int32),
               "features_mix": features_mix}
    facts = {}
    meta = {
        "generator": "tools/microwakeword/goldens.py",
        "pipeline": pipeline(),
        "clip": os.path.relpath(path, REPO_ROOT),
        "clip_sha256": sha256_file(path),
        "clip_samples": str(len(clip)),
        "padding": f"{PAD} zero samples after the clip (none before)",
        "features": "raw u16 of pymicro-features (feature = u16 * 0.0390625f), one push of "
                    "the padded clip",
    }
    for m, json_path in models.items():
        t, f = run_model(json_path, frames, f"{name} / {m}")
        facts[m] = f
        if m in COMMUNITY and name not in COMMUNITY:
            continue
        for k, v in t.items():
            tensors[f"{k}.{m}"] = v
        meta[f"model.{m}"] = (
            f"{os.path.relpath(json_path, REPO_ROOT)} (tflite sha256 "
            f"{sha256_file(json_path[:-5] + '.tflite')}): N {f['N']}, input scale "
            f"{f['in_scale']!r} zero point {f['in_zero_point']}, sliding_window_size "
            f"{f['window']}, probability_cutoff {f['cutoff']!r}")
    return tensors, meta, facts


def pipeline():
    """The versions of the pipeline's parts, for the metadata and the summary."""
    from importlib.metadata import version

    import pymicro_wakeword

    lib_dir = os.path.join(os.path.dirname(pymicro_wakeword.__file__), "lib")
    lib = ctypes.CDLL(os.path.join(lib_dir, "libtensorflowlite_c.so"))
    lib.TfLiteVersion.restype = ctypes.c_char_p
    return (f"pymicro-wakeword {version('pymicro-wakeword')} (MicroWakeWordFeatures, "
            f"MicroWakeWord, its libtensorflowlite_c: TFLite {lib.TfLiteVersion().decode()}), "
            f"pymicro-features {version('pymicro-features')}, numpy {version('numpy')}")


def summary(results, skipped, models):
    """SUMMARY.md text: one table, clips by models."""
    frames = sorted({f["N"] for facts in (r[1] for r in results) for f in facts.values()})
    lines = [
        "# microWakeWord goldens: summary",
        "",
        "Written by tools/microwakeword/goldens.py (do not edit). Per clip and model: the largest",
        "`prob`, the number of steps whose `prob` exceeds the model's cutoff, and the first such",
        "step (0-based). `steps` is the clip's step count (a step takes N frames of 10 ms; N",
        f"is {' or '.join(map(str, frames))} here). `*` marks a model's own recording of",
        "wyoming-microwakeword's test: it must detect there and nowhere else among those 7.",
        "The community models' tensors are stored only in the files of their own three",
        "recordings; this table covers every pair.",
        "",
        f"Pipeline: {pipeline()}.",
        "",
        "| clip | steps | " + " | ".join(models) + " |",
        "| --- | --- |" + " --- |" * len(models),
    ]
    for name, facts in results:
        steps = {f["steps"] for f in facts.values()}
        cells = []
        for m in models:
            f = facts[m]
            first = "-" if f["first"] is None else str(f["first"])
            mark = "*" if name == m else ""
            cells.append(f"{mark}{f['max_prob']:.4f} / {f['detections']} / {first}")
        lines.append(f"| {name} | {'/'.join(map(str, sorted(steps)))} | " + " | ".join(cells)
                     + " |")
    lines += ["", "Cells: largest prob / detecting steps / first detecting step."]
    if skipped:
        lines += ["", "Not used (byte-identical to a clip above): " + ", ".join(skipped) + "."]
    return "\n".join(lines) + "\n"


def surprises(results, models):
    """The departures from "each model detects on its own recording and on no other one of
    wyoming-microwakeword's test"."""
    out = []
    own = {n for n, _ in results if not n.startswith("oww_")}
    for name, facts in results:
        if name not in own:
            continue
        for m in models:
            detected = facts[m]["detections"] > 0
            if detected != (name == m):
                out.append(f"{m} {'detects' if detected else 'misses'} on {name}.wav")
    return out


def generate(out_dir, verbose=True):
    """Writes goldens/ under `out_dir`; returns the paths written."""
    check_official_models()
    models = model_paths()
    clip_list, skipped = clips()
    written, results, outside, loudest = [], [], 0, 0
    for name, path in clip_list:
        tensors, meta, facts = clip_goldens(name, path, models)
        out = os.path.join(out_dir, "goldens", f"{name}.safetensors")
        write_safetensors(out, tensors, meta)
        written.append(out)
        results.append((name, facts))
        outside += sum(f["outside"] for f in facts.values())
        loudest = max(loudest, int(tensors["features"].max()))
        if verbose:
            print(f"{name}: {tensors['features'].shape[0]} frames, {len(tensors['mix_sizes'])} "
                  f"mix pushes, {os.path.getsize(out)} bytes")
    out = os.path.join(out_dir, "goldens", "SUMMARY.md")
    with open(out, "w", encoding="utf-8") as f:
        f.write(summary(results, skipped, list(models)))
    written.append(out)
    if verbose:
        print(summary(results, skipped, list(models)), end="")
        print(f"quantised inputs outside [-128, 127] before the cast (all clips, models): "
              f"{outside}; largest raw feature {loudest} (with the input scale of every model "
              f"here, 26/255, a raw feature of 667 or more quantises above 127)")
        odd = surprises(results, list(models))
        print("surprises: " + ("; ".join(odd) if odd else "none"))
    return written


def first_difference(a, b):
    """One line saying where two tensors of the same shape and dtype differ."""
    diff = np.argwhere(a != b)
    at = tuple(int(i) for i in diff[0])
    return f"{len(diff)} of {a.size} values differ, first at {list(at)}: {a[at]} vs {b[at]}"


def compare(tmp, path):
    """`compare` of check_regenerated: bit-exact tensors and metadata; SUMMARY.md by bytes."""
    rel = os.path.relpath(path, tmp)
    mine = os.path.join(MODELS_DIR, rel)
    if not os.path.exists(mine):
        return rel, None, ""
    if not path.endswith(".safetensors"):
        return rel, sha256_file(path) == sha256_file(mine), ""
    new, meta_new = read_safetensors(path)
    old, meta_old = read_safetensors(mine)
    if set(new) != set(old):
        return rel, False, f": tensors {sorted(set(new) ^ set(old))} only on one side"
    for k in new:
        a, b = new[k], old[k]
        if a.dtype != b.dtype or a.shape != b.shape:
            return rel, False, f": {k} is {a.dtype} {a.shape}, committed {b.dtype} {b.shape}"
        if a.tobytes() != b.tobytes():
            return rel, False, f": {k}: {first_difference(a, b)} (new vs committed)"
    for k in sorted(set(meta_new) | set(meta_old)):
        if meta_new.get(k) != meta_old.get(k):
            return rel, False, f": metadata {k}: {meta_new.get(k)!r} vs {meta_old.get(k)!r}"
    return rel, True, ""


def main():
    def check():
        return check_regenerated("mww-goldens-", lambda tmp: generate(tmp, verbose=False),
                                 compare, "bit-identical")

    check_or_write(__doc__, check, lambda: generate(MODELS_DIR), REPO_ROOT)


if __name__ == "__main__":
    main()
