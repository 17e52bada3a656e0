#!/usr/bin/env python3
"""The sanoTTS decoder as an ONNX model (built with the `onnx` package), run in ONNX Runtime.

The third independent check of our decoder (next to the Rust f64 reference test and
reference.py) and the benchmark peer. The graph is what a vocoder exported from a training
framework looks like (Vocos-style layout), built from a voice file of shared/models/sanotts.md:

  input  `hidden` f32 [1, 192, T]  (T dynamic)
  output `audio`  f32 [1, 128 T]

  unfolded (default): Conv 1x1 proj (no bias) -> Conv k7 pad 3 (embed) -> Add speaker [1,128,1]
  folded (--folded):  one Conv k7 pad 3, weight W'[d,h,t] = sum_m embed[d,m,t] proj[m,h] and
                      bias embed.bias + speaker, both folded in numpy f64 then rounded to f32
  ResidualConv: LeakyRelu 0.1 -> Conv k3 dil 1 pad 1 -> LeakyRelu 0.1 -> Conv k3 dil 3 pad 3
                -> Add skip
  Transpose to [1, T, 128] -> LayerNormalization (axis -1, eps 1e-6) -> Transpose back
  4 x ConvNeXt: Conv depthwise (group 128) k7 pad 3 -> Transpose -> LayerNormalization ->
                MatMul 128x384 + Add -> GELU as torch exports it (Div sqrt 2, Erf, Add 1, Mul x,
                Mul 0.5) -> MatMul 384x128 + Add -> Mul gamma -> Transpose back -> Add skip
  Transpose -> LayerNormalization (norm1) -> MatMul 128x514 + Add (head) -> [1, T, 514]
  iSTFT: Split 257 | 257 -> Exp(Min(log-magnitude, ln 100)), Cos/Sin(phase) -> real, imag ->
         Concat -> Transpose [1, 514, T] -> ConvTranspose (stride 128) whose weight [514, 1, 512]
         is the fixed windowed inverse-DFT matrix (see idft_basis(): 1/n, DC and Nyquist counted
         once, their imaginary rows zero, times the periodic Hann window), i.e. the inverse DFT
         and the overlap-add in one operator, as conv-based iSTFT exports do
         -> envelope division -> Slice 256 .. len - 128 (exactly 128 T samples).
  Envelope: the overlap-added squared window, ConvTranspose (stride 128) of a row of T ones
         with the precomputed w^2 [1, 1, 512] (exact for every T; a table precomputed for one
         length would be wrong in the last 384 samples of other lengths), then
         Where(env < 1e-11, buffer, buffer / env).

ORT runs it on the CPU provider with graph optimisations at their default (all), sequential
execution, intra_op_num_threads as given (1 unless said).

Usage:
    onnx_peer.py export VOICE.safetensors OUT.onnx [--folded]
    onnx_peer.py run VOICE.safetensors HIDDEN.safetensors -o OUT.safetensors [--wav OUT.wav]
                 [--folded] [--threads N]
    onnx_peer.py selfcheck     ORT (both forms) vs reference.py, relative L2 <= 1e-4,
                               T in {1, 2, 7, 64, 333}, synthetic voice and second voice
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, HERE)
import reference  # noqa: E402
from onnx_build import checked_model  # noqa: E402
import safetensors_io  # noqa: E402
import voice as voice_mod  # noqa: E402

OPSET = 17  # LayerNormalization
N_FFT = 512
HOP = 128
BINS = N_FFT // 2 + 1
EPS = 1e-6
SAMPLE_RATE = 16000
SELFCHECK_FRAMES = (1, 2, 7, 64, 333)
SELFCHECK_TOL = 1e-4  # issue 12's tolerance for every independent check


def hann_periodic():
    i = np.arange(N_FFT)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * i / N_FFT)


def idft_basis():
    """The windowed inverse real DFT as a matrix [514, 512] (f64).

    frame[n] * w[n] = sum_r spec[r] * B[r, n] with spec = (Re X_0..X_256, Im X_0..X_256):
    B[k, n] = c_k cos(2 pi k n / 512) w[n] / 512 and B[257 + k, n] = -c_k sin(...) w[n] / 512,
    c_0 = c_256 = 1, else 2 (each other bin stands for itself and its conjugate); the rows of
    Im X_0 and Im X_256 are zero (numpy.fft.irfft ignores those parts). Angles are reduced as
    (k n mod 512) before scaling so every entry is accurate to f64 rounding.
    """
    k = np.arange(BINS)[:, None]
    n = np.arange(N_FFT)[None, :]
    angle = 2.0 * np.pi * ((k * n) % N_FFT) / N_FFT
    c = np.full((BINS, 1), 2.0)
    c[0] = c[-1] = 1.0
    w = hann_periodic()[None, :] / N_FFT
    real = c * np.cos(angle) * w
    imag = -c * np.sin(angle) * w
    imag[0] = 0.0
    imag[-1] = 0.0
    return np.concatenate([real, imag], axis=0)


def fold_input_conv(v):
    """(weight [128, 192, 7], bias [128]) of the folded input conv, computed in f64."""
    w = v["embed.weight"].astype(np.float64)
    p = v["proj.weight"].astype(np.float64)
    folded = np.einsum("dmt,mh->dht", w, p)
    bias = v["embed.bias"].astype(np.float64) + v["speaker"].astype(np.float64)
    return folded.astype(np.float32), bias.astype(np.float32)


class Graph:
    """A small ONNX graph builder: named initializers, fresh value names."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value, name=None, dtype=np.float32):
        name = name or f"const{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def node(self, op, inputs, n_out=1, **attrs):
        outs = []
        for _ in range(n_out):
            self.count += 1
            outs.append(f"{op.lower()}_{self.count}")
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, w, b, name, pad, dilation=1, group=1):
        inputs = [x, self.const(w, name + ".weight")]
        if b is not None:
            inputs.append(self.const(b, name + ".bias"))
        return self.node("Conv", inputs, kernel_shape=[w.shape[2]], pads=[pad, pad],
                         dilations=[dilation], group=group)

    def to_channels_last(self, x):
        return self.node("Transpose", [x], perm=[0, 2, 1])

    to_channels_first = to_channels_last

    def layer_norm(self, x, v, name):
        return self.node("LayerNormalization",
                         [x, self.const(v[name + ".weight"], name + ".weight"),
                          self.const(v[name + ".bias"], name + ".bias")],
                         axis=-1, epsilon=EPS)

    def linear(self, x, w, b, name):
        """x [1, T, in] @ w.T + b, as torch exports nn.Linear on a 3-D input."""
        y = self.node("MatMul", [x, self.const(np.ascontiguousarray(w.T), name + ".weight_t")])
        return self.node("Add", [y, self.const(b, name + ".bias")])

    def gelu_erf(self, x):
        s = self.node("Div", [x, self.const(np.float32(math.sqrt(2.0)))])
        e = self.node("Add", [self.node("Erf", [s]), self.const(np.float32(1.0))])
        return self.node("Mul", [self.node("Mul", [x, e]), self.const(np.float32(0.5))])


def build_model(v, folded=False):
    """The decoder of voice `v` (dict of the voice-file tensors, f32) as an ONNX ModelProto."""
    voice_mod.check_voice(v)
    g = Graph()
    # 1-2. Input conv and speaker.
    if folded:
        w, b = fold_input_conv(v)
        x = g.conv("hidden", w, b, "embed_folded", pad=3)
    else:
        mel = g.conv("hidden", v["proj.weight"][:, :, None], None, "proj", pad=0)
        x = g.conv(mel, v["embed.weight"], v["embed.bias"], "embed", pad=3)
        x = g.node("Add", [x, g.const(v["speaker"][None, :, None], "speaker")])
    # 3. ResidualConv.
    r = g.node("LeakyRelu", [x], alpha=0.1)
    r = g.conv(r, v["res.conv1.weight"], v["res.conv1.bias"], "res.conv1", pad=1)
    r = g.node("LeakyRelu", [r], alpha=0.1)
    r = g.conv(r, v["res.conv2.weight"], v["res.conv2.bias"], "res.conv2", pad=3, dilation=3)
    x = g.node("Add", [x, r])
    # 4. LayerNorm over channels.
    x = g.to_channels_first(g.layer_norm(g.to_channels_last(x), v, "norm0"))
    # 5. ConvNeXt blocks.
    for i in range(4):
        p = f"convnext.{i}"
        y = g.conv(x, v[p + ".dw.weight"], v[p + ".dw.bias"], p + ".dw", pad=3, group=128)
        y = g.layer_norm(g.to_channels_last(y), v, p + ".norm")
        y = g.gelu_erf(g.linear(y, v[p + ".pw1.weight"], v[p + ".pw1.bias"], p + ".pw1"))
        y = g.linear(y, v[p + ".pw2.weight"], v[p + ".pw2.bias"], p + ".pw2")
        y = g.node("Mul", [y, g.const(v[p + ".gamma"], p + ".gamma")])
        x = g.node("Add", [x, g.to_channels_first(y)])
    # 6. Final LayerNorm and head.
    y = g.layer_norm(g.to_channels_last(x), v, "norm1")
    y = g.linear(y, v["head.weight"], v["head.bias"], "head")  # [1, T, 514]
    # 7. iSTFT.
    logmag, phase = g.node("Split", [y, g.const([BINS, BINS], "split", np.int64)], n_out=2,
                           axis=-1)
    mag = g.node("Exp", [g.node("Min", [logmag, g.const(np.float32(math.log(100.0)),
                                                        "ln_100")])])
    real = g.node("Mul", [mag, g.node("Cos", [phase])])
    imag = g.node("Mul", [mag, g.node("Sin", [phase])])
    spec = g.to_channels_first(g.node("Concat", [real, imag], axis=-1))  # [1, 514, T]
    basis = g.const(idft_basis()[:, None, :], "istft.idft_window")
    buf = g.node("ConvTranspose", [spec, basis], kernel_shape=[N_FFT], strides=[HOP])
    # Envelope: overlap-added w^2 over the T frames.
    shape = g.node("Shape", ["hidden"])
    frames = g.node("Slice", [shape, g.const([2], "s2", np.int64), g.const([3], "s3", np.int64)])
    ones_shape = g.node("Concat", [g.const([1, 1], "ones_lead", np.int64), frames], axis=0)
    ones = g.node("ConstantOfShape", [ones_shape],
                  value=numpy_helper.from_array(np.ones(1, np.float32)))
    w2 = g.const((hann_periodic() ** 2)[None, None, :], "istft.window_sq")
    env = g.node("ConvTranspose", [ones, w2], kernel_shape=[N_FFT], strides=[HOP])
    start, end, axis = (g.const([N_FFT // 2], "trim_start", np.int64),
                        g.const([-(N_FFT // 2 - HOP)], "trim_end", np.int64),
                        g.const([2], "trim_axis", np.int64))
    buf = g.node("Slice", [buf, start, end, axis])
    env = g.node("Slice", [env, start, end, axis])
    small = g.node("Less", [env, g.const(np.float32(1e-11), "env_min")])
    out = g.node("Where", [small, buf, g.node("Div", [buf, env])])
    g.nodes.append(helper.make_node("Reshape", [out, g.const([1, -1], "flat", np.int64)],
                                    ["audio"]))
    return checked_model(g.nodes, "sanotts_decoder" + ("_folded" if folded else ""),
                         [("hidden", [1, 192, "T"])], [("audio", [1, "samples"])], g.inits,
                         OPSET, "neon tools/sanotts/onnx_peer.py")


def session(model, threads=1):
    """An ONNX Runtime CPU session of `model` (ModelProto or path), `threads` intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    data = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def run(sess, hidden):
    """hidden f32 [192, T] -> audio f32 [128 T]."""
    x = np.ascontiguousarray(hidden, np.float32)[None]
    return sess.run(["audio"], {"hidden": x})[0].reshape(-1)


def rel_l2(got, want):
    want = np.asarray(want, np.float64)
    return float(np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want))


def write_wav(path, audio):
    """16 kHz mono 32-bit float WAV (format tag 3, with cbSize 0 and a `fact` chunk, as the
    WAVE spec asks of non-PCM formats), samples as given (no clipping)."""
    data = np.ascontiguousarray(audio, "<f4").tobytes()
    n = len(data) // 4

    def u16(v):
        return v.to_bytes(2, "little")

    def u32(v):
        return v.to_bytes(4, "little")

    fmt = u16(3) + u16(1) + u32(SAMPLE_RATE) + u32(SAMPLE_RATE * 4) + u16(4) + u16(32) + u16(0)
    chunks = (b"fmt " + u32(len(fmt)) + fmt + b"fact" + u32(4) + u32(n)
              + b"data" + u32(len(data)) + data)
    with open(path, "wb") as f:
        f.write(b"RIFF" + u32(4 + len(chunks)) + b"WAVE" + chunks)


def read_voice(path):
    tensors, _ = safetensors_io.read_safetensors(path)
    voice_mod.check_voice(tensors)
    return tensors


def read_hidden(path):
    tensors, _ = safetensors_io.read_safetensors(path)
    h = tensors.get("hidden")
    if h is None or h.dtype != np.float32 or h.ndim != 2 or h.shape[0] != 192 or h.shape[1] < 1:
        raise SystemExit(f"{path}: want tensor `hidden` f32 [192, T]")
    if not np.isfinite(h).all():
        raise SystemExit(f"{path}: `hidden` has non-finite values")
    return h


def selfcheck():
    """ORT vs reference.py: both graph forms, two voices, T in SELFCHECK_FRAMES. 0 if all pass."""
    voice_mod.self_test()
    reference.self_test()
    worst = 0.0
    for seed in (voice_mod.VOICE_SEED, voice_mod.SECOND_VOICE_SEED):
        v = voice_mod.voice(seed)
        sessions = {form: session(build_model(v, form == "folded")) for form in
                    ("unfolded", "folded")}
        for t in SELFCHECK_FRAMES:
            h = voice_mod.hidden(t)
            want = reference.decode(v, h)
            for form, sess in sessions.items():
                got = run(sess, h)
                if got.shape != (HOP * t,):
                    raise SystemExit(f"{form}: {got.shape[0]} samples for T = {t}")
                e = rel_l2(got, want)
                worst = max(worst, e)
                print(f"selfcheck voice 0x{seed:X} {form:8} T={t:3}: relative L2 {e:.2e} "
                      f"(|ref| max {np.abs(want).max():.3g})")
    ok = worst <= SELFCHECK_TOL
    print(f"selfcheck: worst relative L2 {worst:.2e} {'<=' if ok else '>'} {SELFCHECK_TOL:g}: "
          f"{'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write the ONNX model of a voice")
    e.add_argument("voice")
    e.add_argument("out")
    e.add_argument("--folded", action="store_true")
    r = sub.add_parser("run", help="decode a hidden-states file in ONNX Runtime")
    r.add_argument("voice")
    r.add_argument("hidden")
    r.add_argument("-o", "--out", required=True, help="safetensors with `audio` f32 [128 T]")
    r.add_argument("--wav", help="also a 16 kHz mono f32 WAV")
    r.add_argument("--folded", action="store_true")
    r.add_argument("--threads", type=int, default=1)
    sub.add_parser("selfcheck", help="ORT vs the numpy f64 reference")
    a = p.parse_args()
    if a.cmd == "selfcheck":
        sys.exit(selfcheck())
    v = read_voice(a.voice)
    model = build_model(v, a.folded)
    if a.cmd == "export":
        onnx.save(model, a.out)
        print(f"wrote {a.out} ({'folded' if a.folded else 'unfolded'}, opset {OPSET})")
        return
    h = read_hidden(a.hidden)
    t0 = time.perf_counter()
    audio = run(session(model, a.threads), h)
    dt = time.perf_counter() - t0
    import onnxruntime as ort

    safetensors_io.write_safetensors(a.out, {"audio": audio}, {
        "generator": "tools/sanotts/onnx_peer.py",
        "graph": "folded" if a.folded else "unfolded",
        "onnx": onnx.__version__, "onnxruntime": ort.__version__,
        "voice_sha256": safetensors_io.sha256_file(a.voice),
        "hidden_sha256": safetensors_io.sha256_file(a.hidden),
    })
    if a.wav:
        write_wav(a.wav, audio)
    print(f"wrote {a.out}{' and ' + a.wav if a.wav else ''}: {audio.shape[0]} samples "
          f"({h.shape[1]} frames) in {dt * 1e3:.1f} ms including session creation")


if __name__ == "__main__":
    main()
