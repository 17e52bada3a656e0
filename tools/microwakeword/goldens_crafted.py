#!/usr/bin/env python3
"""Goldens of the crafted models (crafted.py, models/tests/data/microwakeword/crafted/).

For each crafted model and 2 clips of models/tests/data/microwakeword/ (okay_nabu.wav, "a",
and hey_jarvis.wav, "b", each followed by 1 s of zeros), it computes the features and the
int8 inputs as dump_ops.py does, runs the TFLite C library of pymicro-wakeword and
ai-edge-litert side by side (dump_ops.run_clip: equal u8 output on every step, or exit), checks
that each variable read at step s + 1 is the value assigned at step s (dump_ops.check_variables),
and writes models/microwakeword/goldens/crafted_<model>.safetensors (little endian):

  <clip>.output [S] U8           the u8 output of every step
  <clip>.input [S, N, 40] I8     the inputs, only when N != 3 (for N = 3 they are the clip
                                 goldens' input.okay_nabu, checked equal here)
  <clip>.after.<var> [*shape]    every variable after the clip's last step (FLOAT32 for
                                 okay_nabu_f32_state: its last DEQUANTIZE outputs), keyed by
                                 its shared name with "/" as "."
  a.prob.<json> [S] F64          clip "a" through pymicro-wakeword's detector
  a.detect.<json> [S] U8         (process_streaming_prob, goldens.py run_model) with each JSON
                                 of the model (<json> its stem: window 5, and 8 for _w8)

and one metadata entry "crafted": JSON with the model's sha256, N, the clips (wav, sha256,
steps), the package versions and, when the model has okay_nabu's N, the number of steps whose
output equals okay_nabu's clip golden (the f32 state's sanity check: all of them).

It also measures DEQUANTIZE's rounding on one-operator models of lengths 1-67
(dequantize_rounding: prints the counts, exits on a difference from neon-runtime's rule).

Usage: goldens_crafted.py [--check]
  --check  regenerate into a temporary directory and require byte-identical files
"""
import argparse
import json
import os
import sys
from importlib.metadata import version

import numpy as np
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import crafted  # noqa: E402
import dump_ops  # noqa: E402
import goldens  # noqa: E402
import tflite_model  # noqa: E402
from regen_check import same_bytes_check  # noqa: E402
from safetensors_io import sha256_file  # noqa: E402
from wav_io import read_pcm16_mono  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

ROOT = crafted.ROOT
GOLDENS = os.path.join(ROOT, "models", "microwakeword", "goldens")
CLIPS = (("a", "okay_nabu"), ("b", "hey_jarvis"))


def final_variables(model, per):
    """{shared name: value after the last step} from ai-edge-litert's preserved tensors."""
    main = model["subgraphs"][0]
    handles = tflite_model.variable_names(main)
    return {handles[op["inputs"][0]]: per[op["inputs"][1]][-1]
            for op in main["ops"] if op["op"] == "ASSIGN_VARIABLE"}


def detector_goldens(name, wav, out, tensors):
    """pymicro-wakeword's detector (goldens.run_model: process_streaming_prob, re-derived) on
    the padded clip `wav`, per JSON of model `name` (its own and its variants): adds
    `a.prob.<json stem>` [S] F64 and `a.detect.<json stem>` [S] U8 to `tensors`; its outputs
    must equal `out`."""
    data = np.concatenate([read_pcm16_mono(wav), np.zeros(dump_ops.PAD_SAMPLES, np.int16)])
    frames = goldens.frontend_frames(data, [len(data)])
    for suffix in ["", *crafted.CRAFTED[name][1]]:
        cfg = os.path.join(crafted.OUT_DIR, name + suffix + ".json")
        t, _ = goldens.run_model(cfg, frames, f"{name}{suffix}")
        if not np.array_equal(t["output"], out):
            raise SystemExit(f"{name}{suffix}: the detector's outputs differ from run_clip's")
        tensors[f"a.prob.{name}{suffix}"] = t["prob"]
        tensors[f"a.detect.{name}{suffix}"] = t["detect"]


def golden(name, out_dir):
    cfg = os.path.join(crafted.OUT_DIR, name + ".json")
    tflite = os.path.join(crafted.OUT_DIR, name + ".tflite")
    model = tflite_model.load(tflite)
    n = model["subgraphs"][0]["tensors"][model["subgraphs"][0]["inputs"][0]]["shape"][1]
    tensors, clips, same = {}, {}, 0
    for clip, stem in CLIPS:
        wav = os.path.join(ROOT, "models", "tests", "data", "microwakeword", stem + ".wav")
        qs, out, per = dump_ops.run_clip(tflite, cfg, model, dump_ops.features(wav))
        dump_ops.check_variables(model, per, f"{name}/{stem}")
        tensors[f"{clip}.output"] = out
        if n == 3:
            ref = load_file(os.path.join(GOLDENS, stem + ".safetensors"))
            if not np.array_equal(ref["input.okay_nabu"], qs):
                raise SystemExit(f"{name}/{stem}: inputs differ from input.okay_nabu")
            same += int((ref["output.okay_nabu"] == out).sum())
        else:
            tensors[f"{clip}.input"] = qs
        for var, value in final_variables(model, per).items():
            tensors[f"{clip}.after.{var.replace('/', '.')}"] = np.ascontiguousarray(value)
        clips[clip] = {"wav": stem + ".wav", "sha256": sha256_file(wav), "steps": len(out)}
        if clip == "a":
            detector_goldens(name, wav, out, tensors)
    meta = {"model": name, "sha256": sha256_file(tflite), "n": n, "clips": clips,
            "versions": {p: version(p) for p in ("pymicro-wakeword", "pymicro-features",
                                                 "ai-edge-litert", "numpy")}}
    if n == 3:
        meta["steps_equal_to_okay_nabu"] = same
    path = os.path.join(out_dir, f"crafted_{name}.safetensors")
    save_file(tensors, path, metadata={"crafted": json.dumps(meta, sort_keys=True)})
    steps = sum(c["steps"] for c in clips.values())
    print(f"{name}: {steps} steps on {len(clips)} clips, C library == ai-edge-litert"
          + (f", {same} equal to okay_nabu's" if n == 3 else "")
          + f"; {os.path.getsize(path)} bytes")
    return path


def dequantize_rounding(lengths=range(1, 68), trials=8, seed=39):
    """DEQUANTIZE int8 -> f32 in ai-edge-litert on one-operator models (crafted.py
    dequantize_model) of every length in `lengths`, random scales and zero points: counts the
    outputs that differ from "two roundings, f32(x*s) + f32(-zp*s), on the first len - len % 8,
    one rounding of (x - zp)*s on the rest" (what neon-runtime's kernel does) and from one
    rounding everywhere. Exits unless the first count is 0."""
    rng = np.random.default_rng(seed)
    rule = one = total = 0
    for n in lengths:
        for _ in range(trials):
            s, zp = np.float32(rng.uniform(1e-3, 1.0)), int(rng.integers(-128, 128))
            it = dump_ops.Interpreter(
                model_content=crafted.dequantize_model(n, s, zp),
                experimental_op_resolver_type=dump_ops.OpResolverType
                .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            it.allocate_tensors()
            x = rng.integers(-128, 128, (1, n)).astype(np.int8)
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            y = it.get_tensor(it.get_output_details()[0]["index"])[0]
            single = ((x[0].astype(np.float64) - zp) * np.float64(s)).astype(np.float32)
            double = x[0].astype(np.float32) * s + np.float32(-zp * np.float64(s))
            body = n - n % 8
            want = np.concatenate([double[:body], single[body:]])
            rule += int((y.view(np.uint32) != want.view(np.uint32)).sum())
            one += int((y.view(np.uint32) != single.view(np.uint32)).sum())
            total += n
    print(f"DEQUANTIZE on lengths {lengths.start}-{lengths.stop - 1}: {total} values; two "
          f"roundings on blocks of 8 and one on the tail: {rule} differ; one rounding "
          f"everywhere: {one} differ")
    if rule:
        raise SystemExit("goldens_crafted: DEQUANTIZE does not follow the kernel's rule")


def write(out_dir):
    return [golden(name, out_dir) for name in crafted.CRAFTED]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    dequantize_rounding()
    if ap.parse_args().check:
        sys.exit(same_bytes_check("crafted-goldens-", write)(GOLDENS))
    write(GOLDENS)


if __name__ == "__main__":
    main()
