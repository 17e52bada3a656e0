#!/usr/bin/env python3
"""Measures the numeric facts of FACTS.md on the 7 microWakeWord models.

For each model (the list and clips of dump_ops.py; every step of both clips, run through
ai-edge-litert with all tensors preserved after dump_ops.py has proved its outputs equal to
the C library's) it prints:

* the graph: subgraphs, op histogram, each op kind's distinct options, tensor types,
  per-channel or per-tensor weight quantisation, input/output shapes and quantisation, the
  variables (from the init subgraph) and the JSON's fields;
* requantisation: every CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED output recomputed in
  int64 from its inputs, with TFLite's QuantizeMultiplier (frexp of the f64 real multiplier,
  q * 2^31 rounded half away from zero) and three roundings: "gemmlowp" (SRDHM then
  RoundingDivideByPOT, both half away from zero), "neon" (vqrdmulh then vrshl: both half up),
  "single" (one rounding half up at 31 - shift) and "neon8" ("neon" on the channels of whole
  blocks of 8, "gemmlowp" on the last C % 8), each with the real multiplier computed as
  f64(in_s) * f64(w_s) / f64(out_s) ("f64") or f64(f32(in_s * w_s)) / f64(out_s)
  ("f32prod"). Counts mismatches per op kind and the ties (elements where the roundings
  disagree);
* LOGISTIC: the 256-entry int8 LUT built as TFLite's LUTPopulate does (dequantise in f32,
  1 / (1 + exp(-x)) in f32, round half away from zero of x * (1 / out_scale), + zp, clamp)
  with three exps (glibc expf, f64 exp rounded to f32, numpy f32 exp), compared with every
  observed (input, output) pair, and each entry's margin from its rounding boundary;
* QUANTIZE / DEQUANTIZE / CONCATENATION scales, STRIDED_SLICE and SPLIT_V forms;
* whether the C library creates an XNNPACK delegate (its log line, with a positive control).

Usage: op_facts.py [--root DIR] [--model NAME ...] [--model-json PATH ...] [--all-clips]
  --model-json  also measure a model outside the repository (its JSON next to its .tflite),
                on okay_nabu.wav and hey_jarvis.wav of models/tests/data/microwakeword/
  --all-clips   measure on every recording of models/tests/data/microwakeword/ and
                models/tests/data/wyoming/ instead of dump_ops.py's 2 clips per model
"""
import argparse
import ctypes
import glob
import json
import math
import os
import sys
from collections import Counter, defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dump_ops  # noqa: E402
import tflite_model  # noqa: E402

ROUNDINGS = ("gemmlowp", "neon", "single", "neon8")
# "neon8": "neon" on the channels of whole blocks of 8, "gemmlowp" on the last C % 8 channels.
BLOCK = 8


def quantize_multiplier(real):
    """TFLite QuantizeMultiplier: (q31 multiplier, shift) of a positive f64."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = int(math.floor(q * 2.0**31 + 0.5))  # q > 0: std::round, half away from zero
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def trunc_shift31(v):
    """C integer division by 2^31 (toward zero) of an int64 array."""
    return np.where(v >= 0, v >> 31, -((-v) >> 31))


def requantize(acc, mult, shift, rounding):
    """MultiplyByQuantizedMultiplier of int64 `acc` with per-element `mult`, `shift` arrays."""
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    a = acc << left
    ab = a * mult
    if rounding == "gemmlowp":
        x = trunc_shift31(ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30)))
        mask = (np.int64(1) << right) - 1
        threshold = (mask >> 1) + (x < 0)
        return (x >> right) + ((x & mask) > threshold)
    if rounding == "neon":
        x = (ab + (1 << 30)) >> 31
        return np.where(right > 0, (x + ((np.int64(1) << np.maximum(right - 1, 0)))) >> right, x)
    if rounding == "neon8":
        body = np.arange(acc.shape[-1]) < acc.shape[-1] - acc.shape[-1] % BLOCK
        return np.where(body, requantize(acc, mult, shift, "neon"),
                        requantize(acc, mult, shift, "gemmlowp"))
    total = 31 - shift + left  # single rounding: one shift of the 64-bit product
    return (ab + (np.int64(1) << (total - 1))) >> total


def act_range(act, zp, scale):
    if act == "NONE":
        return -128, 127
    if act == "RELU":
        return max(-128, zp), 127
    if act == "RELU6":
        return max(-128, zp), min(127, zp + round(6.0 / scale))
    raise SystemExit(f"activation {act} not handled")


def same_pad(size, k, stride, dil, padding):
    eff = (k - 1) * dil + 1
    out = -(-size // stride) if padding == "SAME" else -(-(size - eff + 1) // stride)
    total = max((out - 1) * stride + eff - size, 0) if padding == "SAME" else 0
    return out, total // 2


def conv_acc(x, w, bias, in_zp, o, depthwise):
    """int64 accumulators [S, OH, OW, C] of a (depthwise) conv over steps x [S, H, W, Cin]."""
    x = x.astype(np.int64) - in_zp
    s_, h, wd, cin = x.shape
    kh, kw = w.shape[1], w.shape[2]
    oh, ph = same_pad(h, kh, o["strideH"], o["dilationHFactor"], o["padding"])
    ow, pw = same_pad(wd, kw, o["strideW"], o["dilationWFactor"], o["padding"])
    pad_h = max(0, (oh - 1) * o["strideH"] + (kh - 1) * o["dilationHFactor"] + 1 - h - ph)
    pad_w = max(0, (ow - 1) * o["strideW"] + (kw - 1) * o["dilationWFactor"] + 1 - wd - pw)
    xp = np.pad(x, ((0, 0), (ph, pad_h), (pw, pad_w), (0, 0)))
    w = w.astype(np.int64)
    cout = w.shape[3] if depthwise else w.shape[0]
    acc = np.zeros((s_, oh, ow, cout), np.int64)
    for i in range(oh):
        for j in range(ow):
            rows = [i * o["strideH"] + a * o["dilationHFactor"] for a in range(kh)]
            cols = [j * o["strideW"] + b * o["dilationWFactor"] for b in range(kw)]
            patch = xp[:, rows][:, :, cols]  # [S, KH, KW, Cin]
            if depthwise:
                m = cout // cin
                rep = np.repeat(patch, m, axis=3)
                acc[:, i, j] = np.einsum("shwc,hwc->sc", rep, w[0])
            else:
                acc[:, i, j] = np.einsum("shwc,ohwc->so", patch, w)
    return acc + bias.astype(np.int64)


class Tally:
    def __init__(self):
        self.elements = Counter()
        self.mismatch = defaultdict(Counter)
        self.ties = Counter()
        self.mult_variants = Counter()


def requant_op(sg, op, per, tally):
    ts = sg["tensors"]
    x, w, b = (ts[i] for i in op["inputs"][:3])
    out = ts[op["outputs"][0]]
    kind = op["op"]
    o = op["options"]
    in_s, out_s = x["scale"][0], out["scale"][0]
    in_zp, out_zp = x["zero_point"][0], out["zero_point"][0]
    xs = per[op["inputs"][0]]
    got = per[op["outputs"][0]].astype(np.int64)
    steps = xs.shape[0]
    bias = b["data"] if b["data"] is not None else np.zeros(len(w["scale"]), np.int32)
    if kind == "FULLY_CONNECTED":
        k = w["shape"][1]
        acc = (xs.reshape(steps, -1, k).astype(np.int64) - in_zp) @ w["data"].astype(np.int64).T
        acc = acc + bias.astype(np.int64)
        got = got.reshape(acc.shape)
    else:
        acc = conv_acc(xs.reshape((steps,) + tuple(x["shape"][1:])), w["data"], bias, in_zp, o,
                       kind == "DEPTHWISE_CONV_2D")
        got = got.reshape(acc.shape)
    ws = w["scale"] if len(w["scale"]) > 1 else w["scale"] * acc.shape[-1]
    mult64 = [quantize_multiplier(float(np.float64(in_s) * np.float64(s) / np.float64(out_s)))
              for s in ws]
    mult32 = [quantize_multiplier(float(np.float64(np.float32(in_s) * np.float32(s))
                                        / np.float64(out_s))) for s in ws]
    tally.mult_variants[(kind, mult64 == mult32)] += 1
    lo, hi = act_range(o.get("fusedActivationFunction", "NONE"), out_zp, out_s)
    res = {}
    for variant, mults in (("f64", mult64), ("f32prod", mult32)):
        m = np.array([v[0] for v in mults], np.int64)
        sh = np.array([v[1] for v in mults], np.int64)
        for r in ROUNDINGS:
            y = np.clip(requantize(acc, m, sh, r) + out_zp, lo, hi)
            res[(variant, r)] = y
            tally.mismatch[kind][(variant, r)] += int((y != got).sum())
    tally.elements[kind] += got.size
    g, n, s, _ = (res[("f64", r)] for r in ROUNDINGS)
    tally.ties[(kind, "gemmlowp!=neon")] += int((g != n).sum())
    tally.ties[(kind, "gemmlowp!=single")] += int((g != s).sum())


def expf_glibc():
    m = ctypes.CDLL("libm.so.6")
    m.expf.restype = ctypes.c_float
    m.expf.argtypes = [ctypes.c_float]
    return lambda v: np.float32(m.expf(float(v)))


EXPS = {
    "glibc expf": expf_glibc(),
    "f64 exp to f32": lambda v: np.float32(math.exp(float(v)) if v < 709 else math.inf),
    "numpy f32 exp": lambda v: np.exp(np.float32(v)),
}


def logistic_lut(in_s, in_zp, out_s, out_zp, exp):
    """TFLite LUTPopulate<int8_t> for the logistic: ({q: out}, {q: margin in ulps})."""
    f32 = np.float32
    inv = f32(1) / f32(out_s)
    lut, margin = {}, {}
    for q in range(-128, 128):
        deq = f32(f32(in_s) * f32(q - in_zp))
        with np.errstate(over="ignore"):  # exp overflows to inf; 1 / (1 + inf) is 0 as in C
            y = f32(f32(1) / f32(f32(1) + exp(f32(-deq))))
        r = f32(y * inv)
        rounded = math.copysign(math.floor(abs(float(r)) + 0.5), float(r))
        v = int(f32(f32(rounded) + f32(out_zp)))
        lut[q] = max(-128, min(127, v))
        boundary = math.floor(float(r)) + 0.5
        bits = lambda z: int(np.array(z, np.float32).view(np.int32))
        margin[q] = abs(bits(r) - bits(f32(boundary)))
    return lut, margin


def round_away(v):
    v = v.astype(np.float64)
    return np.where(v >= 0, np.floor(v + 0.5), -np.floor(-v + 0.5))


def float_op(sg, op, per_clips, counts):
    """f32 QUANTIZE (x / s vs x * (1 / s), half away from zero) and DEQUANTIZE (one rounding
    f32(q - zp) * s vs two, f32(q * s) + f32(-zp * s), vs an FMA of them) candidates."""
    f32 = np.float32
    kind = op["op"]
    for per in per_clips:
        x, y = per[op["inputs"][0]], per[op["outputs"][0]]
        if kind == "QUANTIZE":
            t = sg["tensors"][op["outputs"][0]]
            s, zp = f32(t["scale"][0]), t["zero_point"][0]
            xf = x.astype(f32)
            div = np.clip(round_away(xf / s) + zp, -128, 127)
            mul = np.clip(round_away(xf * (f32(1) / s)) + zp, -128, 127)
            counts["QUANTIZE f32 elements"] += x.size
            counts["QUANTIZE x/s"] += int((div != y).sum())
            counts["QUANTIZE x*(1/s)"] += int((mul != y).sum())
            counts["QUANTIZE x/s != x*(1/s)"] += int((div != mul).sum())
        else:
            t = sg["tensors"][op["inputs"][0]]
            s, zp = f32(t["scale"][0]), t["zero_point"][0]
            q = x.astype(np.int64)
            one = (q - zp).astype(f32) * s
            two = q.astype(f32) * s + f32(f32(-zp) * s)
            fma = (q.astype(np.float64) * np.float64(s) + np.float64(f32(f32(-zp) * s))).astype(f32)
            counts["DEQUANTIZE elements"] += x.size
            counts["DEQUANTIZE f32(q-zp)*s"] += int((one != y).sum())
            counts["DEQUANTIZE f32(q*s)+f32(-zp*s)"] += int((two != y).sum())
            counts["DEQUANTIZE fma(q,s,-zp*s)"] += int((fma != y).sum())


def model_facts(name, cfg, model, per_clips):
    main = model["subgraphs"][0]
    ts = main["tensors"]
    lines = [f"### {name}"]
    conf = json.load(open(cfg))
    lines.append(f"- JSON: {json.dumps({k: v for k, v in conf.items()}, sort_keys=True)}")
    lines.append("- subgraphs: " + ", ".join(f"{sg['name']} ({len(sg['ops'])} ops, "
                                               f"{len(sg['tensors'])} tensors)"
                                               for sg in model["subgraphs"]))
    hist = Counter(op["op"] for op in main["ops"])
    lines.append("- ops (main): " + ", ".join(f"{k} {v}" for k, v in sorted(hist.items())))
    opts = defaultdict(set)
    for op in main["ops"]:
        if op["options"] and op["op"] not in ("VAR_HANDLE",):
            opts[op["op"]].add(json.dumps(op["options"], sort_keys=True))
    for k in sorted(opts):
        lines.append(f"- {k} options: " + " | ".join(sorted(opts[k])))
    types = Counter((t["type"], t["data"] is not None) for t in ts)
    lines.append("- tensor types (main): " + ", ".join(
        f"{t}{' const' if c else ''} {n}" for (t, c), n in sorted(types.items())))
    quant = Counter()
    for op in main["ops"]:
        if op["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            w = ts[op["inputs"][1]]
            b = ts[op["inputs"][2]] if len(op["inputs"]) > 2 and op["inputs"][2] >= 0 else None
            kind = f"per-channel axis {w['axis']}" if len(w["scale"]) > 1 else "per-tensor"
            quant[(op["op"], w["type"], kind, b["type"] if b else "no bias",
                   all(z == 0 for z in w["zero_point"]))] += 1
    for (op, wt, kind, bt, zp0), n in sorted(quant.items()):
        lines.append(f"- {op} weights: {wt} {kind}, weight zero points all 0: {zp0}, "
                     f"bias {bt} ({n} ops)")
    i, o = ts[main["inputs"][0]], ts[main["outputs"][0]]
    lines.append(f"- input {i['type']} {i['shape']} scale {i['scale']} zp {i['zero_point']}; "
                 f"output {o['type']} {o['shape']} scale {o['scale']} zp {o['zero_point']}")
    init = model["subgraphs"][1]
    ih = tflite_model.variable_names(init)
    vs = []
    for op in init["ops"]:
        if op["op"] == "ASSIGN_VARIABLE":
            t = init["tensors"][op["inputs"][1]]
            d = t["data"]
            vs.append(f"{ih[op['inputs'][0]]} {t['type']} {t['shape']} "
                      f"init {'all ' + str(d.flat[0]) if d.min() == d.max() else 'mixed'}"
                      f" (scale {t['scale']}, zp {t['zero_point']})")
    lines.append(f"- variables ({len(vs)}): " + "; ".join(vs))
    for op in main["ops"]:
        if op["op"] == "CONCATENATION":
            ins = [(ts[k]["scale"], ts[k]["zero_point"]) for k in op["inputs"]]
            out = (ts[op["outputs"][0]]["scale"], ts[op["outputs"][0]]["zero_point"])
            if any(v != out for v in ins):
                lines.append(f"- CONCATENATION rescales: {ins} -> {out}")
        if op["op"] in ("QUANTIZE", "DEQUANTIZE"):
            a, b = ts[op["inputs"][0]], ts[op["outputs"][0]]
            lines.append(f"- {op['op']}: {a['type']} scale {a['scale']} zp {a['zero_point']} -> "
                         f"{b['type']} scale {b['scale']} zp {b['zero_point']}")
        if op["op"] == "STRIDED_SLICE":
            consts = [ts[k]["data"].tolist() for k in op["inputs"][1:]]
            opts["_ss_forms"].add(json.dumps(consts))
        if op["op"] == "SPLIT_V":
            consts = [ts[k]["data"].tolist() for k in op["inputs"][1:]]
            opts["_split_forms"].add(json.dumps(consts))
    lines.append("- STRIDED_SLICE constant (begin, end, strides): "
                 + " | ".join(sorted(opts["_ss_forms"])))
    if opts["_split_forms"]:
        lines.append("- SPLIT_V constant (size_splits, axis): "
                     + " | ".join(sorted(opts["_split_forms"])))
    return lines


XNNPACK_LINE = "Created TensorFlow Lite XNNPACK delegate"
XNNPACK_PROBE = """
import ctypes, sys
import numpy as np
from pymicro_wakeword import MicroWakeWord
m = MicroWakeWord.from_config(sys.argv[1])
for _ in range(6):
    m.process_streaming(np.zeros((1, 1, 40)))
sys.stderr.write("PROBE-RAN\\n")
sys.stderr.flush()
m.lib.TfLiteXNNPackDelegateCreate.restype = ctypes.c_void_p
m.lib.TfLiteXNNPackDelegateCreate.argtypes = [ctypes.c_void_p]
m.lib.TfLiteXNNPackDelegateCreate(None)
"""


def xnnpack_report(cfg):
    """Runs the detector in a child process (TF_CPP_MIN_LOG_LEVEL=0) and reports whether the
    C library logged XNNPACK's creation line before its own positive control creates one."""
    import subprocess
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0")
    err = subprocess.run([sys.executable, "-c", XNNPACK_PROBE, cfg], env=env, check=True,
                         capture_output=True, text=True).stderr
    before, _, after = err.partition("PROBE-RAN")
    return (f"XNNPACK: the detector's run logged the creation line: {XNNPACK_LINE in before}; "
            f"the positive control (TfLiteXNNPackDelegateCreate) logged it: "
            f"{XNNPACK_LINE in after}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.abspath(os.path.join(HERE, "..", "..")))
    ap.add_argument("--model", action="append", choices=dump_ops.OFFICIAL + dump_ops.COMMUNITY)
    ap.add_argument("--model-json", action="append", default=[])
    ap.add_argument("--all-clips", action="store_true")
    args = ap.parse_args()
    data = os.path.join(args.root, "models", "tests", "data")
    every = sorted(glob.glob(os.path.join(data, "microwakeword", "*.wav"))
                   + glob.glob(os.path.join(data, "wyoming", "*.wav")))
    tally = Tally()
    lut_report = []
    floats = Counter()
    jobs = [(name, dump_ops.paths(args.root, name))
            for name in (args.model or ([] if args.model_json else
                                        dump_ops.OFFICIAL + dump_ops.COMMUNITY))]
    for path in args.model_json:
        wav = os.path.join(data, "microwakeword", "{}.wav")
        jobs.append((os.path.basename(path)[:-5], (path, wav.format("okay_nabu"),
                                                   wav.format("hey_jarvis"))))
    for name, (cfg, wav_a, wav_b) in jobs:
        tflite = os.path.join(os.path.dirname(cfg), json.load(open(cfg))["model"])
        model = tflite_model.load(tflite)
        per_clips = []
        for wav in every if args.all_clips else (wav_a, wav_b):
            _, _, per = dump_ops.run_clip(tflite, cfg, model, dump_ops.features(wav))
            per_clips.append(per)
        print("\n".join(model_facts(name, cfg, model, per_clips)))
        main_sg = model["subgraphs"][0]
        for op in main_sg["ops"]:
            if op["op"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
                for per in per_clips:
                    requant_op(main_sg, op, per, tally)
            if op["op"] == "LOGISTIC":
                x, y = (main_sg["tensors"][k] for k in (op["inputs"][0], op["outputs"][0]))
                pairs = set()
                for per in per_clips:
                    pairs |= set(zip(per[op["inputs"][0]].ravel().tolist(),
                                     per[op["outputs"][0]].ravel().tolist()))
                luts = []
                for ename, exp in EXPS.items():
                    lut, margin = logistic_lut(x["scale"][0], x["zero_point"][0], y["scale"][0],
                                               y["zero_point"][0], exp)
                    luts.append(lut)
                    bad = [(a, b, lut[a]) for a, b in pairs if lut[a] != b]
                    lut_report.append(f"{name} LOGISTIC with {ename}: in scale {x['scale'][0]} "
                                      f"zp {x['zero_point'][0]}, out scale {y['scale'][0]} zp "
                                      f"{y['zero_point'][0]}; {len(pairs)} distinct observed "
                                      f"inputs, mismatches {bad if bad else 'none'}; min margin "
                                      f"{min(margin.values())} ulps, entries within 2 ulps "
                                      f"{[q for q, m in margin.items() if m <= 2]}")
                lut_report.append(f"{name} LOGISTIC: the {len(luts)} LUTs are identical: "
                                  f"{all(t == luts[0] for t in luts)}")
            if op["op"] == "DEQUANTIZE" or (op["op"] == "QUANTIZE" and main_sg["tensors"][
                    op["inputs"][0]]["type"] == "FLOAT32"):
                float_op(main_sg, op, per_clips, floats)
            elif op["op"] == "QUANTIZE":
                a = np.concatenate([p[op["inputs"][0]].ravel() for p in per_clips])
                b = np.concatenate([p[op["outputs"][0]].ravel() for p in per_clips])
                same = bool(np.array_equal(a.astype(np.int64) + 128, b.astype(np.int64)))
                lut_report.append(f"{name} QUANTIZE: output == input + 128 on all "
                                  f"{a.size} observed values: {same}")
    print("\n### Requantisation")
    for kind, n in sorted(tally.elements.items()):
        counts = ", ".join(f"{v}/{r}: {c}" for (v, r), c in sorted(tally.mismatch[kind].items()))
        print(f"- {kind}: {n} outputs; mismatches {counts}; ties gemmlowp!=neon "
              f"{tally.ties[(kind, 'gemmlowp!=neon')]}, gemmlowp!=single "
              f"{tally.ties[(kind, 'gemmlowp!=single')]}")
    print("- multipliers equal with f64 and f32 scale products (op kind, equal): "
          + ", ".join(f"{k}: {v}" for k, v in sorted(tally.mult_variants.items())))
    if floats:
        print("- f32 QUANTIZE / DEQUANTIZE (mismatch counts per candidate): "
              + ", ".join(f"{k}: {v}" for k, v in sorted(floats.items())))
    print("\n### Delegates")
    print("- " + xnnpack_report(jobs[0][1][0]))
    print("\n### LOGISTIC and QUANTIZE")
    print("\n".join("- " + line for line in lut_report))


if __name__ == "__main__":
    main()
