#!/usr/bin/env python3
"""Converts Silero VAD (16 kHz) from the official ONNX file to one safetensors file for neon.

Usage: convert.py [OUT_DIR] [--check] [--if-needed] [--no-verify]

Source: `silero_vad/data/silero_vad_16k_op15.onnx` inside the silero-vad 6.2.3 wheel (fetched
with `pip download --no-deps` into target/py/cache; wheel and files sha256-checked), read with
the `onnx` package. Each tensor is found by walking the graph (the Conv chain from the input's
reflect Pad to the final Sigmoid; the LSTM operator inside the If branches) and the attributes
the port relies on (kernels, strides, pads, LSTM hidden size, direction, activations) are
checked; anything else stops with "unexpected graph: ...". The LSTM operator's W, R and B inputs
are evaluated from their Slice/Concat/Unsqueeze chain (ONNX gate order i, o, f, c) and put back
in PyTorch order (i, f, g, o). The same constants must also be the 16 kHz branch of
`silero_vad.onnx` (the file the goldens run), which is checked.

Writes to OUT_DIR (default models/vad):

* `silero_vad.safetensors`: f32 tensors under the names of TENSORS (README.md), metadata with the
  source package, version, file and sha256s, licence and the layout.
* `LICENSE.md`: the licence text shipped in the wheel, with a note on the source.

Verification (printed, and fatal when off): the float64 reference (reference.py) built from the
file READ BACK reproduces ONNX Runtime's probabilities on a real clip, on both ONNX files (max
abs difference below sv_env.ORT_VS_F64_TOL = 2e-5; measured 3.0e-6 on that clip); the same
tensors with the LSTM rows left in ONNX order do not (difference above 0.01; measured 0.99),
which is what shows the reorder.

`--check` converts into a temporary directory and compares both outputs byte for byte with
OUT_DIR's. `--if-needed` does nothing when OUT_DIR's files have the pinned content.
"""
import json
import os

import numpy as np

import reference
import sv_env  # puts tools/common on sys.path (regen_check below)
from licence_md import read_mit_licence, write_licence_md
from regen_check import regen_arguments, regen_parser, same_bytes_check

CONVERTER = "tools/silero_vad/convert.py"
OUT_NAME = "silero_vad.safetensors"
# sha256 of the converted file (the converter is deterministic; update on purpose only).
OUTPUT_SHA256 = "12e8f17c8bcecc38ccce6dfdd02f4ed2e3ee33b742cd40a589453c767b819e53"

# Output tensors in file order: name -> (shape, ONNX initializer of silero_vad_16k_op15.onnx).
TENSORS = {
    "stft.basis": ((258, 1, 256), "model.stft.forward_basis_buffer"),
    "encoder.0.weight": ((128, 129, 3), "model.encoder.0.reparam_conv.weight"),
    "encoder.0.bias": ((128,), "model.encoder.0.reparam_conv.bias"),
    "encoder.1.weight": ((64, 128, 3), "model.encoder.1.reparam_conv.weight"),
    "encoder.1.bias": ((64,), "model.encoder.1.reparam_conv.bias"),
    "encoder.2.weight": ((64, 64, 3), "model.encoder.2.reparam_conv.weight"),
    "encoder.2.bias": ((64,), "model.encoder.2.reparam_conv.bias"),
    "encoder.3.weight": ((128, 64, 3), "model.encoder.3.reparam_conv.weight"),
    "encoder.3.bias": ((128,), "model.encoder.3.reparam_conv.bias"),
    "lstm.weight_ih": ((512, 128), "model.decoder.rnn.weight_ih"),
    "lstm.weight_hh": ((512, 128), "model.decoder.rnn.weight_hh"),
    "lstm.bias_ih": ((512,), "model.decoder.rnn.bias_ih"),
    "lstm.bias_hh": ((512,), "model.decoder.rnn.bias_hh"),
    "decoder.weight": ((1, 128, 1), "model.decoder.decoder.2.weight"),
    "decoder.bias": ((1,), "model.decoder.decoder.2.bias"),
}
# Conv chain of the graph: (output tensor prefix, kernel, stride, pads, has bias).
CONVS = [("stft.basis", 256, 128, [0, 0], False)] + [
    (f"encoder.{i}", 3, s, [1, 1], True) for i, s in enumerate(reference.STRIDES)
] + [("decoder", 1, 1, [0, 0], True)]
HIDDEN = reference.HIDDEN
VERIFY_CLIP = "models/moonshine/clips/train_numbers.wav"

LAYOUT = (
    "All f32, row-major. stft.basis [258, 1, 256]: Conv1d weight (out, in, kernel) of the STFT, "
    "stride 128, no bias; rows 0..129 real parts, 129..258 imaginary parts of bins 0..128. "
    "encoder.N.weight [out, in, 3] and encoder.N.bias [out]: Conv1d kernel 3, padding 1, strides "
    "1, 2, 2, 1 for N = 0..3, each + bias + ReLU (129 -> 128 -> 64 -> 64 -> 128 channels). "
    "lstm.*: one LSTM cell (input 128, hidden 128) as PyTorch's LSTMCell: weight_ih [512, 128], "
    "weight_hh [512, 128], bias_ih [512], bias_hh [512], rows in gate blocks of 128 in PyTorch "
    "order (i, f, g, o). decoder.weight [1, 128, 1], decoder.bias [1]: Conv1d 1x1 on ReLU(h), "
    "then sigmoid. Input per window: 576 samples (64 context + 512 new), reflect-padded by 64 on "
    "the right before the STFT; state (h, c), 2 x 128, carried from window to window."
)


def expect(cond, what):
    if not cond:
        raise SystemExit(f"unexpected graph: {what}")


def attrs(node):
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class Scope:
    """Constant values of a graph and its enclosing graphs (initializers, Constant nodes) and a
    small evaluator for the shape-free ops that build the LSTM inputs from initializers."""

    def __init__(self, graph, parent=None):
        from onnx import numpy_helper

        self.parent = parent
        self.producers = {o: n for n in graph.node for o in n.output}
        self.consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for n in graph.node:
            if n.op_type == "Constant":
                self.consts[n.output[0]] = numpy_helper.to_array(attrs(n)["value"])

    def value(self, name):
        if name in self.consts:
            return self.consts[name]
        node = self.producers.get(name)
        if node is None:
            expect(self.parent is not None, f"{name} is not a constant")
            return self.parent.value(name)
        args = [self.value(i) for i in node.input if i]
        if node.op_type == "Slice":
            data, starts, ends, axes = args[:4]
            expect(len(args) == 4, f"{name}: Slice with steps")
            idx = [slice(None)] * data.ndim
            for s, e, a in zip(starts, ends, axes):
                idx[int(a)] = slice(int(s), int(e))
            return data[tuple(idx)]
        if node.op_type == "Concat":
            return np.concatenate(args, axis=attrs(node)["axis"])
        if node.op_type == "Unsqueeze":
            return np.expand_dims(args[0], tuple(int(a) for a in args[1]))
        expect(False, f"{name}: {node.op_type} in a weight's chain")


def subgraphs(node):
    import onnx

    return [v for v in attrs(node).values() if isinstance(v, onnx.GraphProto)]


def find_lstms(graph, scope, out):
    """Every LSTM node below `graph` (recursively), with the scope of its graph."""
    for n in graph.node:
        if n.op_type == "LSTM":
            out.append((n, scope))
        for g in subgraphs(n):
            find_lstms(g, Scope(g, scope), out)
    return out


def walk_convs(graph, inits):
    """The Conv chain: returns {prefix: (weight name, bias name or None)} after checking the
    data flow Pad(reflect) -> Unsqueeze -> Conv(STFT) -> ... -> Sqrt -> 4 x (Conv, Relu) ->
    ... -> Relu -> Conv -> Sigmoid and every Conv's attributes."""
    producers = {o: n for n in graph.node for o in n.output}
    convs = [n for n in graph.node if n.op_type == "Conv"]
    expect(len(convs) == len(CONVS), f"{len(convs)} Conv nodes, expected {len(CONVS)}")
    names = {}
    for node, (prefix, kernel, stride, pads, bias) in zip(convs, CONVS):
        a = attrs(node)
        expect(list(a.get("kernel_shape", [])) == [kernel] and list(a.get("strides")) == [stride]
               and list(a.get("pads")) == pads and list(a.get("dilations", [1])) == [1]
               and a.get("group", 1) == 1, f"{prefix}: Conv attributes {a}")
        expect(len(node.input) == (3 if bias else 2), f"{prefix}: Conv inputs {node.input}")
        expect(all(i in inits for i in node.input[1:]), f"{prefix}: weights not initializers")
        names[prefix] = (node.input[1], node.input[2] if bias else None)
    # Data flow between the convolutions.
    src = producers[convs[0].input[0]]
    expect(src.op_type == "Unsqueeze" and producers[src.input[0]].op_type == "Pad", "STFT input")
    pad = producers[src.input[0]]
    expect(pad.input[0] == "input" and attrs(pad).get("mode") == b"reflect", "reflect Pad")
    for k in range(1, 5):
        prev = producers[convs[k].input[0]]
        want = "Sqrt" if k == 1 else "Relu"
        expect(prev.op_type == want, f"encoder.{k - 1} input from {prev.op_type}")
        if k > 1:
            expect(prev.input[0] == convs[k - 1].output[0],
                   f"encoder.{k - 1} after encoder.{k - 2}")
    after = [n for n in graph.node if convs[4].output[0] in n.input]
    expect(len(after) == 1 and after[0].op_type == "Relu", "encoder.3 followed by ReLU")
    dec_in = producers[convs[5].input[0]]
    expect(dec_in.op_type == "Relu", "decoder conv on ReLU(h)")
    sig = [n for n in graph.node if convs[5].output[0] in n.input]
    expect(len(sig) == 1 and sig[0].op_type == "Sigmoid", "decoder conv followed by Sigmoid")
    return names


def lstm_tensors(graph):
    """W, R, B of every LSTM node below the graph, back in PyTorch gate order; all must agree."""
    found = find_lstms(graph, Scope(graph), [])
    expect(len(found) >= 1, "no LSTM node")
    result = None
    for node, scope in found:
        a = attrs(node)
        expect(a.get("hidden_size") == HIDDEN, f"LSTM hidden_size {a.get('hidden_size')}")
        expect(a.get("direction", b"forward") == b"forward" and "activations" not in a
               and "clip" not in a and a.get("input_forget", 0) == 0
               and a.get("layout", 0) == 0, f"LSTM attributes {a}")
        expect(len(node.input) >= 5 and node.input[4] == "", "LSTM without sequence_lens")
        w, r, b = (scope.value(node.input[k]) for k in (1, 2, 3))
        expect(w.shape == (1, 4 * HIDDEN, HIDDEN) and r.shape == (1, 4 * HIDDEN, HIDDEN)
               and b.shape == (1, 8 * HIDDEN), f"LSTM W {w.shape} R {r.shape} B {b.shape}")
        torch_order = {
            "lstm.weight_ih": reference.reorder_gates(w[0], reference.ONNX_TO_TORCH),
            "lstm.weight_hh": reference.reorder_gates(r[0], reference.ONNX_TO_TORCH),
            "lstm.bias_ih": reference.reorder_gates(b[0, :4 * HIDDEN], reference.ONNX_TO_TORCH),
            "lstm.bias_hh": reference.reorder_gates(b[0, 4 * HIDDEN:], reference.ONNX_TO_TORCH),
        }
        onnx_order = {"lstm.weight_ih": w[0], "lstm.weight_hh": r[0],
                      "lstm.bias_ih": b[0, :4 * HIDDEN], "lstm.bias_hh": b[0, 4 * HIDDEN:]}
        if result is None:
            result = (torch_order, onnx_order)
        else:
            expect(all(np.array_equal(result[0][k], v) for k, v in torch_order.items()),
                   "the LSTM nodes of the If branches use different weights")
    return result[0], result[1], len(found)


def read_source(pkg):
    """(tensors in file order, ONNX-order LSTM tensors, facts) from silero_vad_16k_op15.onnx."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(os.path.join(pkg, sv_env.OP15_ONNX))
    g = model.graph
    expect([i.name for i in g.input] == ["input", "state", "sr"]
           and [o.name for o in g.output] == ["output", "stateN"], "inputs / outputs")
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    expect(sorted(inits) == sorted(src for _, src in TENSORS.values()),
           f"initializers {sorted(inits)}")
    convs = walk_convs(g, inits)
    tensors = {}
    for prefix, (w, b) in convs.items():
        if prefix == "stft.basis":
            tensors[prefix] = inits[w]
        else:
            tensors[f"{prefix}.weight"] = inits[w]
            tensors[f"{prefix}.bias"] = inits[b]
    torch_lstm, onnx_lstm, n_lstm = lstm_tensors(g)
    tensors.update(torch_lstm)
    out = {}
    for name, (shape, src) in TENSORS.items():
        a = tensors[name]
        expect(a.dtype == np.float32 and a.shape == shape, f"{name}: {a.dtype} {a.shape}")
        out[name] = a
    # The LSTM initializers are stored in PyTorch order already (the graph slices them into
    # ONNX order), so the reordered LSTM inputs must equal them bit for bit.
    lstm_same = all(np.array_equal(out[k], inits[TENSORS[k][1]]) for k in torch_lstm)
    expect(lstm_same, "the LSTM initializers are not the PyTorch-order rows of the LSTM inputs")
    # And every other tensor is its initializer as found by the walk.
    for name, (_, src) in TENSORS.items():
        expect(np.array_equal(out[name], inits[src]), f"{name} is not initializer {src}")
    facts = {"opset": model.opset_import[0].version, "producer":
             f"{model.producer_name} {model.producer_version}", "lstm_nodes": n_lstm}
    check_same_as_16k_branch(pkg, out)
    return out, onnx_lstm, facts


def check_same_as_16k_branch(pkg, tensors):
    """The 16 kHz branch of silero_vad.onnx (If on sr == 16000) holds the same constants."""
    import onnx
    from onnx import numpy_helper

    g = onnx.load(os.path.join(pkg, sv_env.ONNX)).graph
    scope = Scope(g)
    ifs = [n for n in g.node if n.op_type == "If"]
    expect(len(ifs) == 1, "silero_vad.onnx: one top-level If")
    eq = scope.producers[ifs[0].input[0]]
    expect(eq.op_type == "Equal" and "sr" in eq.input, "silero_vad.onnx: If on sr")
    rate = [scope.value(i) for i in eq.input if i != "sr"][0]
    expect(int(rate) == sv_env.SAMPLE_RATE, f"silero_vad.onnx: If on sr == {rate}")
    branch = attrs(ifs[0])["then_branch"]
    consts = {}
    for n in branch.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = numpy_helper.to_array(attrs(n)["value"])
    for t in branch.initializer:
        consts[t.name] = numpy_helper.to_array(t)
    for name, (_, src) in TENSORS.items():
        if name.startswith("lstm."):
            continue
        key = src[len("model."):]
        hits = [v for k, v in consts.items() if k.endswith("__" + key)]
        expect(len(hits) == 1 and np.array_equal(hits[0], tensors[name]),
               f"silero_vad.onnx 16 kHz branch: {key} differs")
    # The LSTM inputs of that branch, evaluated as above.
    torch_lstm, _, _ = lstm_tensors(branch)
    for k, v in torch_lstm.items():
        expect(np.array_equal(v, tensors[k]), f"silero_vad.onnx 16 kHz branch: {k} differs")


def write_license(out_dir, pkg):
    with open(os.path.join(pkg, sv_env.METADATA), encoding="utf-8") as f:
        meta = f.read().split("\n\n")[0]
    expect("Classifier: License :: OSI Approved :: MIT License" in meta.splitlines(),
           "package metadata: MIT classifier")
    text = read_mit_licence(os.path.join(pkg, sv_env.LICENSE), expect, "the wheel")
    body = (
        "# Silero VAD: source and licence\n\n"
        f"`silero_vad.safetensors` in this directory is converted from the PyPI package "
        f"`{sv_env.SOURCE_PACKAGE}` {sv_env.SOURCE_VERSION} (wheel `{sv_env.WHEEL_NAME}`, sha256 "
        f"`{sv_env.WHEEL_SHA256}`), file `{sv_env.OP15_ONNX}` (sha256 "
        f"`{sv_env.FILE_SHA256[sv_env.OP15_ONNX]}`), by `tools/silero_vad/convert.py`. The "
        "conversion keeps every value bit for bit and only renames tensors (the LSTM's gate "
        "rows are in PyTorch order, as in the source file's initializers).\n\n"
        "Licence: MIT. The package's metadata declares the classifier `License :: OSI Approved :: "
        "MIT License` and the wheel ships the licence text below as "
        f"`{sv_env.LICENSE}` (`convert.py` checks both).\n\n"
        "The expected outputs in `goldens/` are outputs of the model above (ONNX Runtime on "
        f"`{sv_env.ONNX}` from the same wheel) on the project's own clips.\n\n"
        "## Licence text shipped in the package\n\n"
    )
    return write_licence_md(out_dir, body, text)


def metadata(facts):
    return {
        "source_package": sv_env.SOURCE_PACKAGE,
        "source_version": sv_env.SOURCE_VERSION,
        "source_wheel": sv_env.WHEEL_NAME,
        "source_wheel_sha256": sv_env.WHEEL_SHA256,
        "source_file": sv_env.OP15_ONNX,
        "source_file_sha256": sv_env.FILE_SHA256[sv_env.OP15_ONNX],
        "source_onnx": json.dumps({"opset": facts["opset"], "producer": facts["producer"]},
                                  sort_keys=True),
        "source_tensors": json.dumps({k: src for k, (_, src) in TENSORS.items()}),
        "converter": CONVERTER,
        "licence": sv_env.LICENCE,
        "licence_note": "silero-vad package metadata (classifier License :: OSI Approved :: MIT "
                        "License) and its LICENSE file; see models/vad/LICENSE.md",
        "layout": LAYOUT,
        "lstm_gate_order": "i,f,g,o",
        "sample_rate": str(sv_env.SAMPLE_RATE),
        "window": str(sv_env.WINDOW),
        "context": str(sv_env.CONTEXT),
    }


def convert(out_dir, verify=True):
    pkg = sv_env.source_dir()
    tensors, onnx_lstm, facts = read_source(pkg)
    n_params = sum(a.size for a in tensors.values())
    print(f"  {len(tensors)} tensors, {n_params} parameters; {facts['lstm_nodes']} LSTM nodes "
          "(If branches), W/R/B evaluated from their Slice/Concat chains and put in PyTorch "
          "order (i, f, g, o): identical to the initializers")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, OUT_NAME)
    sv_env.write_safetensors(path, tensors, metadata(facts))
    written = [path, write_license(out_dir, pkg)]
    digest = sv_env.sha256_file(path)
    if OUTPUT_SHA256 is not None:
        if digest != OUTPUT_SHA256:
            raise SystemExit(f"{path}: sha256 {digest}, pinned {OUTPUT_SHA256} (update "
                             "OUTPUT_SHA256 if the converter changed on purpose)")
    if verify:
        verify_against_ort(path, pkg, onnx_lstm)
    return written


def verify_against_ort(path, pkg, onnx_lstm):
    """float64 reference from the written file vs ONNX Runtime on VERIFY_CLIP; and the same with
    the LSTM rows left in ONNX order (must be far off)."""
    weights, _ = sv_env.read_safetensors(path)
    x = sv_env.windows(sv_env.read_clip(VERIFY_CLIP))
    ref = reference.SileroVad(weights).run(x)
    unordered = reference.SileroVad({**weights, **onnx_lstm}).run(x)
    for name in (sv_env.OP15_ONNX, sv_env.ONNX):
        ort = sv_env.ort_probabilities(sv_env.ort_session(os.path.join(pkg, name)),
                                       sv_env.read_clip(VERIFY_CLIP))
        d = float(np.abs(ort - ref).max())
        d_bad = float(np.abs(ort - unordered).max())
        print(f"  numpy f64 reference (from the written file) vs ONNX Runtime on "
              f"{os.path.basename(name)}, {os.path.basename(VERIFY_CLIP)} ({len(x)} windows): "
              f"max |diff| {d:.3g}; with the LSTM rows left in ONNX order: {d_bad:.3g}")
        expect(d < sv_env.ORT_VS_F64_TOL,
               f"reference vs ORT {d:.3g} >= {sv_env.ORT_VS_F64_TOL}")
        expect(d_bad > 1e-2, f"ONNX-order LSTM rows also match ({d_bad:.3g}): no proof")


def up_to_date(out_dir):
    path = os.path.join(out_dir, OUT_NAME)
    return (OUTPUT_SHA256 is not None and os.path.exists(path)
            and sv_env.sha256_file(path) == OUTPUT_SHA256
            and os.path.exists(os.path.join(out_dir, "LICENSE.md")))


def main():
    ap = regen_parser(
        __doc__, sv_env.MODELS_DIR, "convert",
        "do nothing when OUT_DIR's outputs already have the expected content")
    ap.add_argument("--no-verify", action="store_true", help="skip the numpy-vs-ORT check")
    args = regen_arguments(ap, same_bytes_check("silero-vad-convert-",
                                                lambda tmp: convert(tmp, verify=False)))
    if args.if_needed and up_to_date(args.out_dir):
        print("convert: up to date (silero_vad.safetensors, LICENSE.md)")
        return
    for path in convert(args.out_dir, verify=not args.no_verify):
        print(f"wrote {os.path.relpath(path, sv_env.REPO_ROOT)} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
