#!/usr/bin/env python3
"""Prepares and compares arm64_check.sh's runs of the TFLite C library on two machines.

  cross_check.py prepare DIR [JSON ...]
                                writes into DIR, per model of dump_ops.py (and per model JSON
                                given, its .tflite beside it) and per clip of
                                models/tests/data/{microwakeword,wyoming}/*.wav:
                                  <model>.tflite   the model with every computing op's output
                                                   (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
                                                   LOGISTIC, QUANTIZE, DEQUANTIZE) appended to
                                                   the main subgraph's outputs, so that the
                                                   interpreter keeps them (only the output list
                                                   changes; kernels and weights are the same)
                                  <model>.<clip>.in      the int8 inputs, one step after another
                                  <model>.<clip>.npz     ai-edge-litert's values of those outputs
                                (and each FULLY_CONNECTED's input, to tell its rounding)
                                and manifest.json
  cross_check.py compare DIR A B  compares step_driver's outputs DIR/A/<model>.<clip>.out with
                                ai-edge-litert's (A must equal them) and with DIR/B/..., and
                                prints, per op kind, how many elements B differs in, and which
                                of op_facts.py's roundings reproduce each run's FC outputs
"""
import glob
import json
import os
import sys
from collections import Counter

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import dump_ops  # noqa: E402
import op_facts  # noqa: E402
import tflite_model  # noqa: E402
from safetensors_io import sha256_file  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def clips():
    """The recordings of models/tests/data/{microwakeword,wyoming}/, without byte-identical
    repeats (wyoming/alexa.wav is microwakeword/alexa.wav)."""
    data = os.path.join(ROOT, "models", "tests", "data")
    seen, out = set(), []
    for wav in sorted(glob.glob(os.path.join(data, "microwakeword", "*.wav"))) + sorted(
            glob.glob(os.path.join(data, "wyoming", "*.wav"))):
        digest = sha256_file(wav)
        if digest not in seen:
            seen.add(digest)
            out.append(wav)
    return out


def clip_name(wav):
    return os.path.basename(os.path.dirname(wav)) + "_" + os.path.basename(wav)[:-4]


def expose(tflite, extra, out_path):
    """Writes `tflite` with `extra` tensor indices appended to subgraph 0's outputs."""
    model = schema.ModelT.InitFromPackedBuf(open(tflite, "rb").read(), 0)
    sg = model.subgraphs[0]
    sg.outputs = list(sg.outputs) + list(extra)
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    open(out_path, "wb").write(b.Output())


def fc_entry(sg, op):
    """What compare needs to requantise an FC (one output row, per-tensor weights)."""
    x, w, b = (sg["tensors"][i] for i in op["inputs"][:3])
    out = sg["tensors"][op["outputs"][0]]
    real = float(np.float64(x["scale"][0]) * np.float64(w["scale"][0])
                 / np.float64(out["scale"][0]))
    return {"input": op["inputs"][0], "output": op["outputs"][0], "in_zp": x["zero_point"][0],
            "out_zp": out["zero_point"][0], "weights": w["data"].T.tolist(),
            "bias": b["data"].tolist(), "real": real}


def prepare(out_dir, extra_json):
    os.makedirs(out_dir, exist_ok=True)
    manifest = {}
    models = [(name, dump_ops.paths(ROOT, name)[0])
              for name in dump_ops.OFFICIAL + dump_ops.COMMUNITY]
    models += [(os.path.basename(p)[:-len(".json")], p) for p in extra_json]
    for name, cfg in models:
        tflite = os.path.join(os.path.dirname(cfg), json.load(open(cfg))["model"])
        model = tflite_model.load(tflite)
        sg = model["subgraphs"][0]
        extra = [op["outputs"][0] for op in sg["ops"]
                 if op["op"] in dump_ops.COMPUTING and op["outputs"][0] not in sg["outputs"]]
        # The FC input too (a RESHAPE's output), for the FC rounding candidates in compare.
        extra += [op["inputs"][0] for op in sg["ops"] if op["op"] == "FULLY_CONNECTED"]
        kinds = {o: op["op"] for op in sg["ops"] for o in op["outputs"]}
        outputs = sg["outputs"] + extra
        expose(tflite, extra, os.path.join(out_dir, name + ".tflite"))
        entry = {"outputs": [{"tensor": t, "op": kinds.get(t, "output"),
                              "shape": sg["tensors"][t]["shape"],
                              "type": sg["tensors"][t]["type"]} for t in outputs],
                 "step_bytes": int(np.prod(sg["tensors"][sg["inputs"][0]]["shape"])),
                 "fc": [fc_entry(sg, op) for op in sg["ops"] if op["op"] == "FULLY_CONNECTED"],
                 "clips": []}
        for wav in clips():
            qs, _, per = dump_ops.run_clip(tflite, cfg, model, dump_ops.features(wav))
            c = clip_name(wav)
            qs.tofile(os.path.join(out_dir, f"{name}.{c}.in"))
            np.savez(os.path.join(out_dir, f"{name}.{c}.npz"),
                     **{f"t{t}": per[t] for t in outputs})
            entry["clips"].append({"clip": c, "steps": int(qs.shape[0])})
        manifest[name] = entry
        print(f"prepare: {name}: {len(outputs)} outputs, {len(entry['clips'])} clips")
    json.dump(manifest, open(os.path.join(out_dir, "manifest.json"), "w"), indent=1)


def fc_candidates(fc, vals, counts):
    """Counts, per op_facts.py rounding, the FC outputs of one run it does not reproduce."""
    x = vals[fc["input"]].reshape(vals[fc["input"]].shape[0], -1).astype(np.int64)
    acc = (x - fc["in_zp"]) @ np.asarray(fc["weights"], np.int64) + fc["bias"]
    got = vals[fc["output"]].reshape(acc.shape).astype(np.int64)
    mult, shift = op_facts.quantize_multiplier(fc["real"])
    for r in op_facts.ROUNDINGS[:3]:
        y = op_facts.requantize(acc, np.full(acc.shape, mult), np.full(acc.shape, shift), r)
        counts[r] += int((np.clip(y + fc["out_zp"], -128, 127) != got).sum())
    counts["outputs"] += got.size


def read_run(path, entry, steps):
    raw = np.fromfile(path, dtype=np.uint8)
    sizes = [int(np.prod(o["shape"])) * np.dtype(tflite_model.NP_TYPES[
        getattr(schema.TensorType, o["type"])]).itemsize for o in entry["outputs"]]
    per_step = sum(sizes)
    if raw.size != per_step * steps:
        raise SystemExit(f"{path}: {raw.size} bytes, expected {per_step * steps}")
    raw = raw.reshape(steps, per_step)
    out, at = {}, 0
    for o, n in zip(entry["outputs"], sizes):
        dt = tflite_model.NP_TYPES[getattr(schema.TensorType, o["type"])]
        out[o["tensor"]] = np.ascontiguousarray(raw[:, at:at + n]).view(dt).reshape(
            [steps] + o["shape"])
        at += n
    return out


def compare(work, a, b):
    manifest = json.load(open(os.path.join(work, "manifest.json")))
    diff, total, final = Counter(), Counter(), Counter()
    rounding = {a: Counter(), b: Counter()}
    examples = []
    for name, entry in manifest.items():
        kinds = {o["tensor"]: o["op"] for o in entry["outputs"]}
        for c in entry["clips"]:
            stem = f"{name}.{c['clip']}"
            lite = np.load(os.path.join(work, stem + ".npz"))
            ra = read_run(os.path.join(work, a, stem + ".out"), entry, c["steps"])
            rb = read_run(os.path.join(work, b, stem + ".out"), entry, c["steps"])
            for t, va in ra.items():
                if not np.array_equal(va, lite[f"t{t}"].reshape(va.shape)):
                    raise SystemExit(f"{a}/{stem}: tensor {t} differs from ai-edge-litert")
                d = va != rb[t]
                diff[kinds[t]] += int(d.sum())
                total[kinds[t]] += d.size
                if d.any() and len(examples) < 10:
                    s = np.argwhere(d)[0]
                    examples.append(f"{stem} tensor {t} ({kinds[t]}) step {s[0]} index "
                                    f"{s[1:].tolist()}: {a} {va[tuple(s)]} {b} {rb[t][tuple(s)]}")
            for fc in entry["fc"]:
                for run, vals in ((a, ra), (b, rb)):
                    fc_candidates(fc, vals, rounding[run])
            out_t = entry["outputs"][0]["tensor"]
            final["steps"] += c["steps"]
            final["differing"] += int((ra[out_t] != rb[out_t]).sum())
    print(f"compare: {a} equals ai-edge-litert on every exposed tensor of every step")
    for k in sorted(total):
        print(f"compare: {k}: {diff[k]} of {total[k]} elements differ between {a} and {b}")
    print(f"compare: final u8 output differs on {final['differing']} of {final['steps']} steps")
    print("\n".join("compare: e.g. " + e for e in examples))
    for run, counts in rounding.items():
        print(f"compare: {run}: FULLY_CONNECTED mismatches per rounding (op_facts.py): "
              + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 1 if sum(diff.values()) else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(compare(*sys.argv[2:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
