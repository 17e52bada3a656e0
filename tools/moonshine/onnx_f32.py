"""Plain-f32 ONNX copies of the shipped Moonshine models, for peer benchmarks (`convert.py
--onnx-f32 DIR`; needs `setup.sh --bench` for the `onnx` package).

Per model: ONNX Runtime loads the .ort file with every graph optimisation disabled and serialises
it as .onnx (`SessionOptions.optimized_model_filepath`), so the graph is the shipped one. Then,
with the `onnx` package, each int8 dequantisation chain Cast(q) -> Mul(scale) -> Add(offset) of
the main graph is replaced by one f32 initializer under the chain's output name holding
f32(q) * scale + offset computed in f32 (what ONNX Runtime computes on every call), so the If
branches of the decoder still find their weights. Nothing else changes. The copies are checked
against the .ort files in ONNX Runtime on the first 4 s of beckett.wav (encoder output and the
first two decoder steps).
"""
import os

import numpy as np

import ms_env

OUTPUTS = {ms_env.ENCODER: "encoder_model_f32.onnx", ms_env.DECODER: "decoder_model_merged_f32.onnx"}


def dequantise_graph(model):
    """Replaces the Cast -> Mul -> Add chains of int8 initializers in the main graph."""
    from onnx import TensorProto, numpy_helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = {}
    for node in g.node:
        for v in node.input:
            uses.setdefault(v, []).append(node)
    drop_nodes, drop_inits, new_inits = set(), set(), []
    for node in g.node:
        if node.op_type != "Cast" or node.input[0] not in inits:
            continue
        if inits[node.input[0]].data_type != TensorProto.INT8:
            continue
        (mul,) = uses[node.output[0]]
        (add,) = uses[mul.output[0]]
        assert mul.op_type == "Mul" and add.op_type == "Add", (mul.op_type, add.op_type)
        q = numpy_helper.to_array(inits[node.input[0]])
        scale = numpy_helper.to_array(inits[mul.input[1]]).astype(np.float32)
        offset = numpy_helper.to_array(inits[add.input[1]]).astype(np.float32)
        w = (q.astype(np.float32) * scale + offset).astype(np.float32)
        new_inits.append(numpy_helper.from_array(w, add.output[0]))
        drop_nodes.update(id(n) for n in (node, mul, add))
        drop_inits.update([node.input[0], mul.input[1], add.input[1]])
    # ONNX Runtime's serialisation leaves the If branches unnamed; the ONNX checker requires
    # names.
    if not g.name:
        g.name = "main"
    for node in g.node:
        for attr in node.attribute:
            if attr.HasField("g") and not attr.g.name:
                attr.g.name = f"{node.name}/{attr.name}"
    kept = [n for n in g.node if id(n) not in drop_nodes]
    still_used = {v for n in kept for v in n.input}
    assert not (drop_inits & still_used), "a scale/offset initializer is shared"
    del g.node[:]
    g.node.extend(kept)
    keep_inits = [t for t in g.initializer if t.name not in drop_inits]
    del g.initializer[:]
    g.initializer.extend(keep_inits + new_inits)
    return len(new_inits)


def write(pkg, out_dir):
    import onnx
    import onnxruntime as ort

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for src, name in OUTPUTS.items():
        dst = os.path.join(out_dir, name)
        raw = dst + ".shipped-graph.onnx"
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.optimized_model_filepath = raw
        ort.InferenceSession(os.path.join(pkg, src), so, providers=["CPUExecutionProvider"])
        model = onnx.load(raw)
        os.remove(raw)
        n = dequantise_graph(model)
        model.producer_name = "tools/moonshine/onnx_f32.py"
        model.doc_string = (f"{ms_env.SOURCE_PACKAGE} {ms_env.SOURCE_VERSION} {src} with its "
                            f"{n} int8 weights dequantised to f32 (f32(q) * scale + offset)")
        onnx.save(model, dst)
        print(f"  {name}: {n} int8 weights dequantised")
        written.append(dst)
    compare(pkg, out_dir)
    return written


def compare(pkg, out_dir):
    """ONNX Runtime on the f32 copies vs the .ort files."""
    import onnxruntime as ort

    shipped = ms_env.OrtMoonshine(pkg)
    f32 = ms_env.OrtMoonshine(pkg)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    f32.encoder = ort.InferenceSession(os.path.join(out_dir, OUTPUTS[ms_env.ENCODER]), so,
                                       providers=["CPUExecutionProvider"])
    f32.decoder = ort.InferenceSession(os.path.join(out_dir, OUTPUTS[ms_env.DECODER]), so,
                                       providers=["CPUExecutionProvider"])
    _, audio = ms_env.read_wav(os.path.join(pkg, ms_env.BECKETT))
    audio = audio[:4 * ms_env.SAMPLE_RATE]
    e1, e2 = shipped.encode(audio), f32.encode(audio)
    t1, l1 = shipped.greedy(e1, 2)
    t2, l2 = f32.greedy(e1, 2)
    de, dl = float(np.abs(e1 - e2).max()), float(np.abs(l1 - l2).max())
    print(f"  f32 ONNX vs shipped .ort in ONNX Runtime (beckett.wav[:4 s]): encoder max abs diff "
          f"{de:.3g}, first 2 decoder steps logits max abs diff {dl:.3g}, tokens "
          f"{'equal' if (t1 == t2).all() else 'DIFFERENT'}")
    if de > 1e-3 or dl > 1e-3 or not (t1 == t2).all():
        raise SystemExit("f32 ONNX copies do not match the shipped models")
