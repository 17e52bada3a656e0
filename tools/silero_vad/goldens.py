#!/usr/bin/env python3
"""Goldens of Silero VAD for the Rust tests: ONNX Runtime's speech probabilities on the project's
clips, fed exactly as silero-vad's OnnxWrapper feeds the model at 16 kHz, and the float64
reference's (reference.py) beside them.

Usage: goldens.py [--check]

For every clip of sv_env.clips() that is present (the committed clips of models/openwakeword/
and models/moonshine/, and models/moonshine/beckett.wav when tools/moonshine/fetch.sh has put
it there), writes models/vad/goldens/<clip>.json:

    {"clip": "<repo-relative path>", "window": 512, "samples": N,
     "source": "...", "probabilities": [...], "reference_f64": [...],
     "max_abs_ort_minus_f64": d}

* `probabilities`: ONNX Runtime 1.32.0 (CPU provider, 1 intra-op and 1 inter-op thread, default
  graph optimisations: as OnnxWrapper opens it) on `silero_vad.onnx` of silero-vad 6.2.3, one
  value per window of 512 samples: samples = int16 / 32768, the end zero-padded to a multiple of
  512, each call's `input` [1, 576] = the previous call's last 64 input samples (zeros for the
  first) + the 512 new ones, `state` [2, 1, 128] zeros then carried, `sr` = 16000 (int64
  scalar). The f32 outputs are written exactly (shortest decimal that reads back as the same
  double, which is the f32 value).
* `reference_f64`: reference.py (numpy float64) from models/vad/silero_vad.safetensors on the
  same windows, full double precision; `max_abs_ort_minus_f64` the largest difference (must be
  below sv_env.ORT_VS_F64_TOL, else the script stops).

`--check` regenerates into a temporary directory and compares with the committed files: clip,
window and samples exact; `probabilities` within CHECK_TOL_ORT and `reference_f64` within
CHECK_TOL_F64 absolute (see there). A committed golden whose clip is absent (beckett.wav before
tools/moonshine/fetch.sh) is reported and skipped; so is a present optional clip without a
committed golden.
"""
import json
import os

import numpy as np

import reference
import sv_env  # puts tools/common on sys.path (regen_check below)
from regen_check import check_only_arguments

OUT_DIR = os.path.join(sv_env.MODELS_DIR, "goldens")
WEIGHTS = os.path.join(sv_env.MODELS_DIR, "silero_vad.safetensors")

# Tolerances of --check (regenerated vs committed, absolute, on probabilities in [0, 1]).
# ORT: on one machine a regeneration is bit-identical (1 thread, deterministic kernels). ONNX
# Runtime's CPU kernels (MLAS) pick their code path by the CPU's vector extensions, which changes
# the f32 accumulation order; switching kernel paths here (graph optimisations off vs on) moved
# the probabilities by up to 1.0e-6 (beckett), and every ORT run is within 5.8e-6 of the f64
# reference. So 1e-6 would sit on that noise floor; 1e-5 is 10x above it and still 3x below
# the smallest feeding mistake tried (scaling by 1/32767 instead of 1/32768: 3.4e-5; a dropped
# context 0.68, a reset state 1.0, a one-sample shift 0.076, gates in ONNX order 0.99).
# f64 reference: only last-ulp differences of numpy's exp/tanh/sqrt and of its summation order
# across machines, carried through the recurrence: far below 1e-9.
CHECK_TOL_ORT = 1e-5
CHECK_TOL_F64 = 1e-9


def source_note():
    import onnxruntime

    return (f"ONNX Runtime {onnxruntime.__version__} (CPU, 1 thread) on {sv_env.ONNX} of "
            f"{sv_env.SOURCE_PACKAGE} {sv_env.SOURCE_VERSION}, fed as its OnnxWrapper at 16 kHz; "
            "reference_f64: tools/silero_vad/reference.py from models/vad/silero_vad.safetensors")


def dumps(golden):
    """JSON with one line per key (arrays on one line), floats in shortest round-trip form."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def compute(path, session, model):
    audio = sv_env.read_clip(path)
    probs = sv_env.ort_probabilities(session, audio)
    ref = model.run(sv_env.windows(audio))
    gap = float(np.abs(probs.astype(np.float64) - ref).max())
    if gap > sv_env.ORT_VS_F64_TOL:
        raise SystemExit(f"{path}: ORT vs f64 reference {gap:.3g} > {sv_env.ORT_VS_F64_TOL}")
    return {
        "clip": path,
        "window": sv_env.WINDOW,
        "samples": len(audio),
        "source": source_note(),
        "probabilities": [float(p) for p in probs],
        "reference_f64": [float(p) for p in ref],
        "max_abs_ort_minus_f64": gap,
    }


def generate(out_dir, only=None, verbose=True):
    """Writes the goldens of the present clips (or of the clip paths in `only`); returns the
    file names."""
    pkg = sv_env.source_dir()
    session = sv_env.ort_session(os.path.join(pkg, sv_env.ONNX))
    weights, _ = sv_env.read_safetensors(WEIGHTS)
    model = reference.SileroVad(weights)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for path, present in sv_env.clips():
        if not present or (only is not None and path not in only):
            if verbose and not present:
                print(f"skipped {path} (not present; tools/moonshine/fetch.sh provides it)")
            continue
        golden = compute(path, session, model)
        name = sv_env.clip_name(path) + ".json"
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(dumps(golden))
        written.append(name)
        if verbose:
            print(f"wrote {os.path.relpath(os.path.join(out_dir, name), sv_env.REPO_ROOT)}: "
                  f"{len(golden['probabilities'])} windows, max |ORT - f64| "
                  f"{golden['max_abs_ort_minus_f64']:.3g}")
    return written


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def compare(tmp, name):
    committed = os.path.join(OUT_DIR, name)
    if not os.path.exists(committed):
        return name, None, ""
    a, b = load(committed), load(os.path.join(tmp, name))
    problems = [f"{k} {a.get(k)!r} != {b.get(k)!r}" for k in ("clip", "window", "samples")
                if a.get(k) != b.get(k)]
    diffs = {}
    for key, tol in (("probabilities", CHECK_TOL_ORT), ("reference_f64", CHECK_TOL_F64)):
        x, y = np.array(a[key], np.float64), np.array(b[key], np.float64)
        if x.shape != y.shape:
            problems.append(f"{key}: {x.shape[0]} values, regenerated {y.shape[0]}")
            continue
        diffs[key] = float(np.abs(x - y).max()) if len(x) else 0.0
        if diffs[key] > tol:
            problems.append(f"{key} max |diff| {diffs[key]:.3g} > {tol:g}")
    if problems:
        return name, False, ": " + "; ".join(problems)
    with open(committed, "rb") as f1, open(os.path.join(tmp, name), "rb") as f2:
        same = f1.read() == f2.read()
    detail = "byte-identical" if same else (
        f"ORT max |diff| {diffs['probabilities']:.3g}, f64 {diffs['reference_f64']:.3g}")
    return name, True, f" ({detail})"


def check():
    compared = []
    for path, present in sv_env.clips():
        name = sv_env.clip_name(path) + ".json"
        has_golden = os.path.exists(os.path.join(OUT_DIR, name))
        if not present:
            if has_golden:
                print(f"skip {name}: {path} not present (tools/moonshine/fetch.sh provides it)")
            continue
        if not has_golden and path in sv_env.OPTIONAL_CLIPS:
            print(f"skip {name}: {path} is present but its golden is not committed")
            continue
        compared.append(path)
    return sv_env.check_regenerated(
        "silero-vad-goldens-", lambda tmp: generate(tmp, only=compared, verbose=False), compare,
        summary="within tolerance")


def main():
    check_only_arguments(__doc__, check)
    generate(OUT_DIR)


if __name__ == "__main__":
    main()
