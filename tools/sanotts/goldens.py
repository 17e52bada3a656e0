#!/usr/bin/env python3
"""Goldens of the sanoTTS decoder for the Rust tests: ONNX Runtime's output of onnx_peer.py's
graph on the seeded test hidden states.

Usage: goldens.py [--check]

Writes models/tests/data/sanotts/<voice>_t<T>.safetensors for (synthetic voice 0x5A70, T = 7),
(0x5A70, T = 64) and (second voice 0x5A71, T = 7), each with:

* `hidden` f32 [192, T]: the test hidden states (voice.py: SplitMix64 seed 0xB1D0, row-major).
* `audio` f32 [128 T]: ONNX Runtime (CPU provider, 1 intra-op thread, sequential, default graph
  optimisations) on the unfolded graph of onnx_peer.py.
* `reference` f32 [128 T]: reference.py's f64 waveform rounded to f32.

Metadata: generator, format, voice and hidden seeds, frames, graph form, the measured relative L2
of `audio` against `reference` (computed before rounding), and the versions of Python, numpy,
onnx and onnxruntime.

`--check` regenerates into a temporary directory and compares with the committed files: seeds,
frames, format and graph exact; `hidden` within 1e-6 absolute; `audio` within relative L2 1e-5
and `reference` within relative L2 1e-7 (see CHECK_TOL). It also says whether the files are
byte-identical.
"""
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import onnx_peer  # noqa: E402
import reference  # noqa: E402
import regen_check  # noqa: E402
import safetensors_io  # noqa: E402
import voice as voice_mod  # noqa: E402

REPO_ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.path.join("models", "tests", "data", "sanotts")
GENERATOR = "tools/sanotts/goldens.py"
FORMAT = "1"  # bump when the content of the golden files changes
CASES = [("synthetic", voice_mod.VOICE_SEED, 7), ("synthetic", voice_mod.VOICE_SEED, 64),
         ("second", voice_mod.SECOND_VOICE_SEED, 7)]
EXACT_META = ("format", "voice_seed", "hidden_seed", "frames", "graph", "generator")

# Tolerances of --check (regenerated vs committed). `audio`: ORT's CPU kernels (MLAS) choose
# their code path by the CPU's vector extensions, which changes the f32 accumulation order, so
# another machine's output differs from ours at the f32 rounding level; each is within the
# measured 1.1e-6 relative L2 of the f64 reference (onnx_peer.py selfcheck), so two of them
# are within ~2.2e-6 of each other, and 1e-5 leaves a 4.5x margin while still catching any
# real change of the graph (a wrong tap or constant moves it by 1e-3 or more). `reference`:
# f64 arithmetic; the only run-to-run source is numpy's f64 log/cos/exp (vectorised code paths
# that differ in the last ulp by CPU), which can flip the f32 rounding of a few voice weights or
# hidden values by one f32 ulp (6e-8 relative) each: far below 1e-7 of the waveform's L2.
# `hidden`: unit-scale values, a one-ulp f32 flip is < 1e-6.
CHECK_TOL = {"audio": 1e-5, "reference": 1e-7}
HIDDEN_TOL = 1e-6


def file_name(name, frames):
    return f"{name}_t{frames}.safetensors"


def versions():
    import onnx
    import onnxruntime

    return {"python": platform.python_version(), "numpy": np.__version__,
            "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}


def generate(out_dir, verbose=True):
    written = []
    sessions = {}
    for name, seed, frames in CASES:
        if seed not in sessions:
            v = voice_mod.voice(seed)
            sessions[seed] = (v, onnx_peer.session(onnx_peer.build_model(v), threads=1))
        v, sess = sessions[seed]
        h = voice_mod.hidden(frames)
        audio = onnx_peer.run(sess, h)
        want = reference.decode(v, h)
        err = onnx_peer.rel_l2(audio, want)
        if err > onnx_peer.SELFCHECK_TOL:
            raise SystemExit(f"{name} T={frames}: ORT vs reference relative L2 {err:.2e}")
        meta = {"generator": GENERATOR, "format": FORMAT, "voice_seed": f"0x{seed:X}",
                "hidden_seed": f"0x{voice_mod.HIDDEN_SEED:X}", "frames": str(frames),
                "graph": "unfolded", "ort_settings": "CPUExecutionProvider, "
                "intra_op_num_threads 1, sequential, default graph optimisations",
                "audio_vs_reference_rel_l2": f"{err:.3e}"}
        meta.update(versions())
        path = os.path.join(out_dir, file_name(name, frames))
        safetensors_io.write_safetensors(
            path, {"hidden": h, "audio": audio, "reference": want.astype(np.float32)}, meta)
        written.append(file_name(name, frames))
        if verbose:
            print(f"wrote {path}: {audio.shape[0]} samples, ORT vs f64 reference relative L2 "
                  f"{err:.2e}")
    return written


def compare(tmp, fname):
    committed = os.path.join(REPO_ROOT, OUT_DIR, fname)
    if not os.path.exists(committed):
        return fname, None, ""
    fresh = os.path.join(tmp, fname)
    a, ma = safetensors_io.read_safetensors(committed)
    b, mb = safetensors_io.read_safetensors(fresh)
    problems = [f"{k} {ma.get(k)!r} != {mb.get(k)!r}" for k in EXACT_META if ma.get(k) != mb.get(k)]
    if set(a) != set(b):
        problems.append(f"tensors {sorted(a)} != {sorted(b)}")
    else:
        for k in a:
            if a[k].shape != b[k].shape:
                problems.append(f"{k} shape {a[k].shape} != {b[k].shape}")
        if not problems:
            dh = float(np.abs(a["hidden"].astype(np.float64) - b["hidden"]).max())
            if dh > HIDDEN_TOL:
                problems.append(f"hidden max diff {dh:.2e} > {HIDDEN_TOL:g}")
            for k, tol in CHECK_TOL.items():
                e = onnx_peer.rel_l2(b[k], a[k])
                if e > tol:
                    problems.append(f"{k} relative L2 {e:.2e} > {tol:g}")
    if problems:
        return fname, False, ": " + "; ".join(problems)
    same = safetensors_io.sha256_file(committed) == safetensors_io.sha256_file(fresh)
    e = onnx_peer.rel_l2(b["audio"], a["audio"])
    return fname, True, f" ({'byte-identical' if same else f'audio relative L2 {e:.2e}'})"


def main():
    regen_check.check_only_arguments(__doc__, lambda: regen_check.check_regenerated(
        "sanotts_goldens_", lambda tmp: generate(tmp, verbose=False), compare,
        summary="within tolerance"))
    generate(os.path.join(REPO_ROOT, OUT_DIR))


if __name__ == "__main__":
    main()
