#!/usr/bin/env python3
"""Writes crafted microWakeWord models: the forms of community models that cannot be committed
(FACTS.md section 9), derived from the official Apache-2.0 okay_nabu.tflite by rewriting its
FlatBuffer with the object API of ai-edge-litert's schema_py_generated. Weights, biases and
quantisation are okay_nabu's; only the streaming state's form changes.

- `okay_nabu_f32_state`: the state in float32, as in hey_luna (read from that file: 6 FLOAT32
  variables initialised to 0.0, 12 DEQUANTIZE and 6 f32 -> int8 QUANTIZE). For each variable,
  whose int8 pattern is READ_VARIABLE -> CONCATENATION(state, new) -> STRIDED_SLICE (the last T
  rows) -> ASSIGN_VARIABLE, with the concatenation also feeding the layer after it:
    new (int8) -> DEQUANTIZE -> f32;  READ_VARIABLE -> f32;  CONCATENATION in f32;
    QUANTIZE f32 -> int8 (the int8 concatenation's tensor, with its quantisation), read by the
    layer and by the STRIDED_SLICE (int8); the slice -> DEQUANTIZE -> f32 -> ASSIGN_VARIABLE.
  Since every f32 value is a dequantised int8 value and QUANTIZE maps it back, the outputs
  should equal okay_nabu's on every step (checked by goldens_crafted.py).
- `okay_nabu_n2`: two feature frames per step, as in hey_morgan: input [1, 2, 40], the first
  variable [1, 3, 1, 40] (3 old + 2 new frames = the 5 rows of the first CONV_2D's kernel),
  that conv's stride 2 in time; the rest unchanged (int8 state).

Each model gets a .json beside it (okay_nabu's, with `model` and `wake_word` changed; the
`_w8` JSON of okay_nabu_f32_state has sliding_window_size 8, as hey_morgan).

Usage: crafted.py [--check] [OUT_DIR]  (default models/tests/data/microwakeword/crafted)
  --check  write into a temporary directory and require byte-identical files
"""
import argparse
import copy
import json
import os
import sys

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from regen_check import same_bytes_check  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SOURCE = os.path.join(ROOT, "models", "microwakeword", "okay_nabu")
OUT_DIR = os.path.join(ROOT, "models", "tests", "data", "microwakeword", "crafted")
Op = schema.BuiltinOperator


def load(path):
    return schema.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0)


def save(model, path):
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    open(path, "wb").write(b.Output())


def opcode(model, code, version):
    """Index of builtin `code` in the model's operator codes (added when missing)."""
    for k, c in enumerate(model.operatorCodes):
        if max(c.builtinCode, c.deprecatedBuiltinCode) == code:
            return k
    c = schema.OperatorCodeT()
    c.builtinCode, c.deprecatedBuiltinCode, c.version = code, min(code, 127), version
    model.operatorCodes.append(c)
    return len(model.operatorCodes) - 1


def add_buffer(model, data):
    b = schema.BufferT()
    b.data = np.frombuffer(data, np.uint8).copy() if data is not None else None
    model.buffers.append(b)
    return len(model.buffers) - 1


def f32_tensor(model, sg, like, suffix):
    """A new FLOAT32 activation tensor of `like`'s shape (no quantisation, empty buffer)."""
    t = schema.TensorT()
    t.shape = np.array(like.shape, np.int32)
    t.type = schema.TensorType.FLOAT32
    t.buffer = add_buffer(model, None)
    t.name = like.name + suffix.encode()
    t.quantization = schema.QuantizationParametersT()
    t.hasRank = True
    sg.tensors.append(t)
    return len(sg.tensors) - 1


def make_op(code, inputs, outputs):
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = code, list(inputs), list(outputs)
    op.builtinOptionsType = 0
    return op


def var_names(sg):
    """Resource handle tensor -> shared name, of the VAR_HANDLEs in `sg`."""
    return {op.outputs[0]: op.builtinOptions.sharedName for op in sg.operators
            if op.builtinOptions is not None and hasattr(op.builtinOptions, "sharedName")}


def code_of(model, op):
    c = model.operatorCodes[op.opcodeIndex]
    return max(c.builtinCode, c.deprecatedBuiltinCode)


def f32_state(model):
    """Rewrites `model` (okay_nabu's form) into hey_luna's float32 state (module docs)."""
    main, init = model.subgraphs[0], model.subgraphs[1]
    deq = opcode(model, Op.DEQUANTIZE, 2)
    quant = opcode(model, Op.QUANTIZE, 1)
    ops = list(main.operators)
    reads = {op.outputs[0]: op for op in ops if code_of(model, op) == Op.READ_VARIABLE}
    new_ops, changed = [], {}
    for op in ops:
        kind = code_of(model, op)
        if kind == Op.CONCATENATION and op.inputs[0] in reads:
            state, new = op.inputs
            read = reads[state]
            st = main.tensors[state]
            st.type = schema.TensorType.FLOAT32
            st.quantization = schema.QuantizationParametersT()
            new_f = f32_tensor(model, main, main.tensors[new], "_f32")
            cat = op.outputs[0]
            cat_f = f32_tensor(model, main, main.tensors[cat], "_f32")
            new_ops.append(make_op(deq, [new], [new_f]))
            op.inputs = [state, new_f]
            op.outputs = [cat_f]
            new_ops.append(op)
            new_ops.append(make_op(quant, [cat_f], [cat]))
            changed[cat] = read.inputs[0]
            continue
        new_ops.append(op)
        if kind == Op.STRIDED_SLICE and op.inputs[0] in changed:
            handle = changed[op.inputs[0]]
            out_f = f32_tensor(model, main, main.tensors[op.outputs[0]], "_f32")
            new_ops.append(make_op(deq, [op.outputs[0]], [out_f]))
            changed[("slice", handle)] = (op.outputs[0], out_f)
    for op in new_ops:
        if code_of(model, op) == Op.ASSIGN_VARIABLE and ("slice", op.inputs[0]) in changed:
            sliced, out_f = changed[("slice", op.inputs[0])]
            assert op.inputs[1] == sliced, "the assigned value is not the state's slice"
            op.inputs = [op.inputs[0], out_f]
    main.operators = new_ops
    names = var_names(main)
    states = {names[h] for k, h in changed.items() if not isinstance(k, tuple)}
    assert len(states) == 6, states
    init_names = var_names(init)
    for op in init.operators:
        if code_of(model, op) == Op.ASSIGN_VARIABLE and init_names[op.inputs[0]] in states:
            t = init.tensors[op.inputs[1]]
            n = int(np.prod(t.shape))
            t.type = schema.TensorType.FLOAT32
            t.quantization = schema.QuantizationParametersT()
            t.buffer = add_buffer(model, np.zeros(n, "<f4").tobytes())
    return model


def n2(model):
    """Rewrites `model` (okay_nabu's form) into two frames per step (module docs)."""
    main, init = model.subgraphs[0], model.subgraphs[1]
    ops = main.operators
    inp = main.inputs[0]
    main.tensors[inp].shape = np.array([1, 2, 40], np.int32)
    reshape = next(op for op in ops if len(op.inputs) and op.inputs[0] == inp)
    assert code_of(model, reshape) == Op.RESHAPE
    main.tensors[reshape.outputs[0]].shape = np.array([1, 2, 1, 40], np.int32)
    shape_t = main.tensors[reshape.inputs[1]]
    shape_t.buffer = add_buffer(model, np.array([1, 2, 1, 40], "<i4").tobytes())
    frames = reshape.outputs[0]
    cat = next(op for op in ops if code_of(model, op) == Op.CONCATENATION
               and op.inputs[1] == frames)
    state = main.tensors[cat.inputs[0]]
    state.shape = np.array([1, 3, 1, 40], np.int32)
    handle = next(op.inputs[0] for op in ops
                  if op.outputs is not None and len(op.outputs) and op.outputs[0] == cat.inputs[0])
    sl = next(op for op in ops if code_of(model, op) == Op.STRIDED_SLICE
              and op.inputs[0] == cat.outputs[0])
    begin = copy.deepcopy(main.tensors[sl.inputs[1]])
    begin.buffer = add_buffer(model, np.array([0, -3, 0, 0], "<i4").tobytes())
    begin.name = b"crafted/n2/begin"
    main.tensors.append(begin)
    sl.inputs = [sl.inputs[0], len(main.tensors) - 1] + list(sl.inputs[2:])
    main.tensors[sl.outputs[0]].shape = np.array([1, 3, 1, 40], np.int32)
    conv = next(op for op in ops if code_of(model, op) == Op.CONV_2D
                and op.inputs[0] == cat.outputs[0])
    conv.builtinOptions.strideH = 2
    name = var_names(main)[handle]
    init_names = var_names(init)
    for op in init.operators:
        if code_of(model, op) == Op.ASSIGN_VARIABLE and init_names[op.inputs[0]] == name:
            t = init.tensors[op.inputs[1]]
            t.shape = np.array([1, 3, 1, 40], np.int32)
            t.buffer = add_buffer(model, np.full(120, -128, np.int8).tobytes())
    return model


def dequantize_model(n, scale, zero_point):
    """A one-operator model, int8 [1, n] (scale, zero_point) -> DEQUANTIZE -> f32 [1, n], as
    bytes (for goldens_crafted.py's DEQUANTIZE rounding measurement)."""
    model = schema.ModelT()
    model.version = 3
    model.operatorCodes, model.buffers = [], [schema.BufferT()]
    code = opcode(model, Op.DEQUANTIZE, 2)
    sg = schema.SubGraphT()
    sg.tensors = []
    x = schema.TensorT()
    x.shape, x.type, x.name = np.array([1, n], np.int32), schema.TensorType.INT8, b"x"
    x.buffer = add_buffer(model, None)
    x.quantization = schema.QuantizationParametersT()
    x.quantization.scale = np.array([scale], np.float32)
    x.quantization.zeroPoint = np.array([zero_point], np.int64)
    sg.tensors.append(x)
    y = f32_tensor(model, sg, x, "_f32")
    sg.inputs, sg.outputs, sg.operators = [0], [y], [make_op(code, [0], [y])]
    model.subgraphs = [sg]
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# name -> (rewrite, extra JSON variants {suffix: micro overrides})
CRAFTED = {
    "okay_nabu_f32_state": (f32_state, {"_w8": {"sliding_window_size": 8}}),
    "okay_nabu_n2": (n2, {}),
}


def write(out_dir):
    """Writes every crafted model and JSON into `out_dir`; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = json.load(open(SOURCE + ".json"))
    written = []
    for name, (rewrite, variants) in CRAFTED.items():
        path = os.path.join(out_dir, name + ".tflite")
        save(rewrite(load(SOURCE + ".tflite")), path)
        written.append(path)
        for suffix, micro in {"": {}, **variants}.items():
            c = copy.deepcopy(cfg)
            c["model"] = name + ".tflite"
            c["wake_word"] = f"{cfg['wake_word']} (crafted: {name}{suffix})"
            c["micro"].update(micro)
            p = os.path.join(out_dir, name + suffix + ".json")
            with open(p, "w") as f:
                json.dump(c, f, indent=2)
                f.write("\n")
            written.append(p)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=OUT_DIR)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        sys.exit(same_bytes_check("crafted-", write)(args.out_dir))
    for p in write(args.out_dir):
        print(f"crafted: {os.path.relpath(p, ROOT)} ({os.path.getsize(p)} bytes)")


if __name__ == "__main__":
    main()
