#!/usr/bin/env python3
"""Per-op oracle for the microWakeWord models: every intermediate tensor, step by step.

For each of the 7 models (the 4 official ones in models/microwakeword/, the 3 community ones of
wyoming-microwakeword in models/tests/data/microwakeword/wakewords/) and 2 clips (the model's
own recording and another one, from models/tests/data/microwakeword/, each followed by 1 s of
zeros), it

1. computes the features with pymicro-wakeword's MicroWakeWordFeatures and quantises each
   step's N frames as pymicro-wakeword does (float64 round, numpy cast to int8);
2. runs the TFLite C library of the pymicro-wakeword wheel (the detector's own interpreter,
   `MicroWakeWord.from_config`, driven through its ctypes handle) and ai-edge-litert's
   Interpreter (builtin kernels without default delegates, every tensor preserved) side by
   side, and requires their u8 outputs to be equal at every step of both clips;
3. checks that the preserved tensors belong to the step just run: each READ_VARIABLE's
   output at step s + 1 equals the value its variable was assigned at step s (and at step 0
   the constant the init subgraph assigns);
4. writes goldens/ops_<model>.safetensors with 50 steps of each clip: clip "a" (the model's
   own word) the 50 steps ending 15 after its largest output, clip "b" its first 50 steps
   (so from the initial state). To stay small it keeps what copies cannot rebuild: the
   graph input and the output of every computing op per step, and the variables at the
   window's ends (the copies in between, CONCATENATION / STRIDED_SLICE / SPLIT_V / RESHAPE
   and READ/ASSIGN_VARIABLE, follow from those). Tensors (little endian):
     <clip>.steps [50] I32         the step numbers within the clip
     <clip>.t<i> [50, *shape]      tensor i of subgraph 0 after each of those steps: the
                                   input and the outputs of CONV_2D, DEPTHWISE_CONV_2D,
                                   FULLY_CONNECTED, LOGISTIC, QUANTIZE and DEQUANTIZE
     <clip>.before.t<i> [*shape]   READ_VARIABLE output i at the first step: the variable's
                                   value before the window
     <clip>.after.t<i> [*shape]    ASSIGN_VARIABLE value input i at the last step: its value
                                   after the window
   and one metadata entry "dump": JSON with the model, clips, step ranges, package versions,
   per variable (shared_name) its READ_VARIABLE output and ASSIGN_VARIABLE value tensors, and
   per dumped tensor its name, type, shape, scale, zero point and producing op.

Usage: dump_ops.py [--check] [--root DIR] [--model NAME ...]
  --check   regenerate into a temporary directory and require byte-identical files
  --root    the repository root holding models/ (default: this checkout)
"""
import argparse
import json
import os
import sys
import tempfile
from importlib.metadata import version

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from pymicro_wakeword import MicroWakeWord, MicroWakeWordFeatures
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import tflite_model  # noqa: E402
from wav_io import read_pcm16_mono  # noqa: E402

OFFICIAL = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]
COMMUNITY = ["choo_choo_homie", "hey_home_assistant", "okay_computer"]
STEPS = 50
# Ops whose outputs are not copies of their inputs.
COMPUTING = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "LOGISTIC", "QUANTIZE",
             "DEQUANTIZE")
AFTER_PEAK = 15
PAD_SAMPLES = 16000


def paths(root, model):
    """(json path, clip "a" wav, clip "b" wav) of `model` under the repository `root`."""
    data = os.path.join(root, "models", "tests", "data", "microwakeword")
    if model in OFFICIAL:
        cfg = os.path.join(root, "models", "microwakeword", model + ".json")
    else:
        cfg = os.path.join(data, "wakewords", model + ".json")
    other = "hey_jarvis" if model == "okay_nabu" else "okay_nabu"
    return cfg, os.path.join(data, model + ".wav"), os.path.join(data, other + ".wav")


def features(wav):
    """The padded clip's features [F, 40] f64, from an unmodified MicroWakeWordFeatures."""
    pcm = np.concatenate([read_pcm16_mono(wav), np.zeros(PAD_SAMPLES, np.int16)])
    frames = list(MicroWakeWordFeatures().process_streaming(pcm.astype("<i2").tobytes()))
    return np.concatenate(frames, axis=1)[0]


class CLibrary:
    """The pymicro-wakeword detector's own TFLite C interpreter, one step at a time."""

    def __init__(self, cfg):
        self.mw = MicroWakeWord.from_config(cfg)

    def step(self, q):
        mw = self.mw
        q = np.ascontiguousarray(q)
        mw.lib.TfLiteTensorCopyFromBuffer(mw.input_tensor, q.ctypes.data, q.nbytes)
        if mw.lib.TfLiteInterpreterInvoke(mw.interpreter) != 0:
            raise SystemExit("C library: Invoke failed")
        out = np.empty(1, np.uint8)
        mw.lib.TfLiteTensorCopyToBuffer(mw.output_tensor, out.ctypes.data, out.nbytes)
        return int(out[0])


def dumped_tensors(model):
    """Indices of subgraph 0's tensors that are neither constants nor resource handles."""
    sg = model["subgraphs"][0]
    return [i for i, t in enumerate(sg["tensors"])
            if t["data"] is None and t["type"] not in ("RESOURCE", "VARIANT")]


def run_clip(tflite, cfg, model, feats):
    """Runs both interpreters over a clip. Returns (inputs [S,N,40] i8, C outputs [S] u8,
    {tensor index: [S, *shape]} from ai-edge-litert). Exits on any C/litert difference."""
    clib = CLibrary(cfg)
    it = Interpreter(model_path=tflite, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    n = int(inp["shape"][1])
    scale, zp = inp["quantization"]
    keep = dumped_tensors(model)
    steps = len(feats) // n
    qs = np.round(feats[:steps * n].reshape(steps, n, 40) / scale + zp).astype(np.int8)
    c_out, per = [], {i: [] for i in keep}
    for s in range(steps):
        c_out.append(clib.step(qs[s][None]))
        it.set_tensor(inp["index"], qs[s][None])
        it.invoke()
        for i in keep:
            per[i].append(it.get_tensor(i))
    per = {i: np.stack(v) for i, v in per.items()}
    lite = per[out["index"]].reshape(steps)
    c_out = np.array(c_out, np.uint8)
    bad = np.nonzero(lite != c_out)[0]
    if len(bad):
        raise SystemExit(f"{tflite}: ai-edge-litert and the C library differ at steps "
                         f"{bad[:10].tolist()} ({len(bad)} of {steps})")
    return qs, c_out, per


def check_variables(model, per, name):
    """READ_VARIABLE at step s + 1 == ASSIGN_VARIABLE value at step s; step 0 == init."""
    main, init = model["subgraphs"][0], model["subgraphs"][1]
    handles = tflite_model.variable_names(main)
    init_handles = tflite_model.variable_names(init)
    initial = {init_handles[op["inputs"][0]]: init["tensors"][op["inputs"][1]]["data"]
               for op in init["ops"] if op["op"] == "ASSIGN_VARIABLE"}
    reads = {handles[op["inputs"][0]]: op["outputs"][0]
             for op in main["ops"] if op["op"] == "READ_VARIABLE"}
    assigns = {handles[op["inputs"][0]]: op["inputs"][1]
               for op in main["ops"] if op["op"] == "ASSIGN_VARIABLE"}
    for var, r in reads.items():
        a = assigns[var]
        got, put = per[r], per[a]
        if not np.array_equal(got[0], initial[var].reshape(got[0].shape)):
            raise SystemExit(f"{name}: {var} read at step 0 is not its initial value")
        if not np.array_equal(got[1:], put[:-1].reshape(got[1:].shape)):
            raise SystemExit(f"{name}: {var} read at step s+1 is not the value assigned at s")
    return len(reads)


def window(c_out, own):
    """First step of the 50-step window: around the largest output for the own clip."""
    if not own:
        return 0
    peak = int(np.argmax(c_out))
    return max(0, min(len(c_out) - STEPS, peak + AFTER_PEAK + 1 - STEPS))


def producers(sg):
    out = {}
    for k, op in enumerate(sg["ops"]):
        for o in op["outputs"]:
            out[o] = f"{k}:{op['op']}"
    return out


def dump_model(root, name, out_dir):
    cfg, wav_a, wav_b = paths(root, name)
    tflite = os.path.join(os.path.dirname(cfg), json.load(open(cfg))["model"])
    model = tflite_model.load(tflite)
    sg = model["subgraphs"][0]
    made_by = producers(sg)
    stepwise = [sg["inputs"][0]] + [op["outputs"][0] for op in sg["ops"] if op["op"] in COMPUTING]
    tensors, meta_clips, summary = {}, {}, []
    for clip, wav in (("a", wav_a), ("b", wav_b)):
        feats = features(wav)
        qs, c_out, per = run_clip(tflite, cfg, model, feats)
        nvars = check_variables(model, per, f"{name}/{os.path.basename(wav)}")
        first = window(c_out, clip == "a")
        last = first + STEPS - 1
        tensors[f"{clip}.steps"] = np.arange(first, first + STEPS, dtype=np.int32)
        for i in stepwise:
            tensors[f"{clip}.t{i}"] = np.ascontiguousarray(per[i][first:last + 1])
        for op in sg["ops"]:
            if op["op"] == "READ_VARIABLE":
                i = op["outputs"][0]
                tensors[f"{clip}.before.t{i}"] = np.ascontiguousarray(per[i][first])
            elif op["op"] == "ASSIGN_VARIABLE":
                i = op["inputs"][1]
                tensors[f"{clip}.after.t{i}"] = np.ascontiguousarray(per[i][last])
        meta_clips[clip] = {"wav": os.path.basename(wav), "steps": len(c_out), "first": first}
        raw_max = int(np.round(feats.max() / 0.0390625))
        summary.append(f"{os.path.basename(wav)}: {len(c_out)} steps equal "
                       f"(max output {int(c_out.max())}), {nvars} variables consistent, "
                       f"max raw feature {raw_max} (a quantised input wraps above 667), "
                       f"input range [{int(qs.min())}, {int(qs.max())}]")
    handles = tflite_model.variable_names(sg)
    variables = {}
    for op in sg["ops"]:
        if op["op"] == "READ_VARIABLE":
            variables.setdefault(handles[op["inputs"][0]], {})["read"] = op["outputs"][0]
        elif op["op"] == "ASSIGN_VARIABLE":
            variables.setdefault(handles[op["inputs"][0]], {})["assign"] = op["inputs"][1]
    meta = {
        "model": name,
        "variables": variables,
        "clips": meta_clips,
        "versions": {p: version(p) for p in ("pymicro-wakeword", "pymicro-features",
                                             "ai-edge-litert", "numpy")},
        "tensors": {str(i): {"name": sg["tensors"][i]["name"], "type": sg["tensors"][i]["type"],
                             "shape": sg["tensors"][i]["shape"],
                             "scale": sg["tensors"][i]["scale"],
                             "zero_point": sg["tensors"][i]["zero_point"],
                             "producer": made_by.get(i, "input")}
                    for i in sorted({int(k.split(".t")[1]) for k in tensors if ".t" in k})},
    }
    path = os.path.join(out_dir, f"ops_{name}.safetensors")
    save_file(tensors, path, metadata={"dump": json.dumps(meta, sort_keys=True)})
    return path, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--root", default=os.path.abspath(os.path.join(HERE, "..", "..")))
    ap.add_argument("--model", action="append", choices=OFFICIAL + COMMUNITY)
    args = ap.parse_args()
    committed = os.path.join(args.root, "models", "microwakeword", "goldens")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = tmp if args.check else committed
        os.makedirs(out_dir, exist_ok=True)
        for name in args.model or OFFICIAL + COMMUNITY:
            path, summary = dump_model(args.root, name, out_dir)
            print(f"{name}: {os.path.getsize(path)} bytes; " + "; ".join(summary))
            if args.check:
                mine = os.path.join(committed, os.path.basename(path))
                if not os.path.exists(mine) or open(mine, "rb").read() != open(path, "rb").read():
                    print(f"dump_ops: {mine} differs from a fresh dump", file=sys.stderr)
                    failed = True
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
