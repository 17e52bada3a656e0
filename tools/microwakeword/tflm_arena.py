#!/usr/bin/env python3
"""The tensor arena TensorFlow Lite for Microcontrollers itself uses for each official
microWakeWord model, next to the model JSON's `tensor_arena_size`, with TFLM's outputs checked
against the goldens.

Usage (after tools/tflm/setup.sh; from any directory):
  target/py/tflm/bin/python tools/microwakeword/tflm_arena.py [--arena BYTES]

Per model (models/microwakeword/<m>.tflite): one `tflite_micro.runtime.Interpreter` (the
package's MicroInterpreter with a RecordingMicroAllocator, the default
kAllocationRecording configuration, TFLM's reference kernels) over an arena of --arena bytes
(default 65,536: more than every model needs), fed the golden's int8 input of every step of
its own recording (`input.<m>` of models/microwakeword/goldens/<m>.safetensors) in order, the
state carried; its uint8 outputs are compared with `output.<m>` (TFLite's, from
pymicro-wakeword's libtensorflowlite_c, which neon's plans reproduce bit for bit): the table
gives the steps whose output is equal and the largest difference. Then `print_allocations()` (written by the C++ code to file
descriptor 2, captured here) gives the arena TFLM used: `total` = `head` (the non-persistent
section: activations, planned by TFLM's greedy memory planner) + `tail` (persistent: the
interpreter's structures, the operators' persistent buffers and the resource variables that
hold the streaming state), and the tail's parts.

The figures are for this host (x86-64: 8-byte pointers); on a 32-bit microcontroller the
interpreter's structures (TfLiteEvalTensor, NodeAndRegistration, ...) are smaller, so TFLM
there uses somewhat less than printed here; the head (activations) is the same.

--trace: instead, per model, the first 3 steps of the per-op golden's window (clip "a" of
models/microwakeword/goldens/ops_<m>.safetensors, tools/microwakeword/dump_ops.py: the
outputs of every computing op, from TFLite's interpreter) at which a TFLM tensor differs,
naming the first differing tensor of the step (in tensor order), its producing op, how many of
its values differ and by how much (TFLM run with kPreserveAllTensors).

Prints a Markdown table: model, JSON tensor_arena_size, TFLM total, head, tail, the steps\nequal to the golden and the largest difference; then the tail's parts per model.
"""
import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np
from tflite_micro import runtime

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(TOOLS_DIR), "common"))
from repo_paths import models_dir  # noqa: E402
from safetensors_io import read_safetensors  # noqa: E402

MODELS = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]
LINE = re.compile(r"Arena allocation (total|head|tail) (\d+) bytes")
PART = re.compile(r"'([^']+)' used (\d+) bytes")


def allocations(interpreter):
    """print_allocations()'s report, read back from file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as f:
        os.dup2(f.fileno(), 2)
        try:
            interpreter.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read()
    sizes = {k: int(v) for k, v in LINE.findall(text)}
    if set(sizes) != {"total", "head", "tail"}:
        raise SystemExit(f"unexpected print_allocations output:\n{text}")
    return sizes, {k: int(v) for k, v in PART.findall(text)}


def measure(model, arena):
    base = models_dir("microwakeword")
    with open(os.path.join(base, f"{model}.json")) as f:
        json_arena = json.load(f)["micro"]["tensor_arena_size"]
    tensors, _ = read_safetensors(os.path.join(base, "goldens", f"{model}.safetensors"))
    inputs, outputs = tensors[f"input.{model}"], tensors[f"output.{model}"]
    interp = runtime.Interpreter.from_file(os.path.join(base, f"{model}.tflite"),
                                           arena_size=arena)
    got = []
    for x in inputs:
        interp.set_input(np.ascontiguousarray(x[np.newaxis]), 0)
        interp.invoke()
        got.append(int(interp.get_output(0).reshape(-1)[0]))
    diff = np.abs(np.array(got, dtype=np.int32) - outputs.astype(np.int32))
    sizes, parts = allocations(interp)
    return json_arena, sizes, parts, diff


def trace(model, arena, most=3):
    """Prints where TFLM's op outputs first differ from TFLite's (module docstring)."""
    from safetensors import safe_open

    base = models_dir("microwakeword")
    tensors, _ = read_safetensors(os.path.join(base, "goldens", f"{model}.safetensors"))
    with safe_open(os.path.join(base, "goldens", f"ops_{model}.safetensors"), "numpy") as f:
        meta = json.loads(f.metadata()["dump"])
        ops = {int(k[len("a.t"):]): f.get_tensor(k) for k in f.keys() if k.startswith("a.t")}
    first = meta["clips"]["a"]["first"]
    interp = runtime.Interpreter.from_file(
        os.path.join(base, f"{model}.tflite"), arena_size=arena,
        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    found = 0
    for step, x in enumerate(tensors[f"input.{model}"]):
        interp.set_input(np.ascontiguousarray(x[np.newaxis]), 0)
        interp.invoke()
        k = step - first
        if not 0 <= k < len(next(iter(ops.values()))):
            continue
        for i in sorted(ops):
            want = ops[i][k]
            got = interp.GetTensor(i, 0)["tensor_data"].reshape(want.shape)
            diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
            if diff.any():
                print(f"{model} step {step}: t{i} ({meta['tensors'][str(i)]['producer']}) "
                      f"{int((diff > 0).sum())} of {diff.size} values differ, by up to "
                      f"{int(diff.max())}")
                found += 1
                break
        if found == most:
            return
    if not found:
        print(f"{model}: every op output equal in the window")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arena", type=int, default=65536)
    p.add_argument("--trace", action="store_true")
    a = p.parse_args()
    if a.trace:
        for model in MODELS:
            trace(model, a.arena)
        return
    print("| model | JSON tensor_arena_size (B) | TFLM total (B) | head (B) | tail (B) | "
          "steps equal to the golden | max \\|TFLM - golden\\| |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    details = []
    for model in MODELS:
        json_arena, s, parts, diff = measure(model, a.arena)
        equal = int((diff == 0).sum())
        print(f"| {model} | {json_arena:,} | {s['total']:,} | {s['head']:,} | {s['tail']:,} | "
              f"{equal} / {len(diff)} | {int(diff.max())} |")
        details.append((model, parts))
    print()
    for model, parts in details:
        print(f"{model} tail: " + ", ".join(f"{k} {v:,}" for k, v in parts.items()))


if __name__ == "__main__":
    main()
