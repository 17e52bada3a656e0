"""The sanoTTS decoder in plain numpy float64, unfolded, written from shared/models/sanotts.md.

The check that onnx_peer.py's ONNX graph (run in ONNX Runtime) must meet. Independent of the
graph builder: no shared helpers beyond reading the voice tensors, its own inverse real FFT
(numpy.fft.irfft, which normalises by 1/n and ignores the imaginary parts of DC and Nyquist, as
the page states) and its own overlap-add loop. Every voice tensor is widened to f64 first.
"""
import math

import numpy as np

EPS = 1e-6
N_FFT = 512
HOP = 128
LN_100 = math.log(100.0)


def conv1d(x, w, b=None, dilation=1, padding=0):
    """Cross-correlation as torch.nn.Conv1d computes it. x [in, T], w [out, in, k] -> [out, T']."""
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (padding, padding)))
    t_out = xp.shape[1] - dilation * (k - 1)
    y = np.zeros((w.shape[0], t_out))
    for j in range(k):
        y += w[:, :, j] @ xp[:, j * dilation: j * dilation + t_out]
    if b is not None:
        y += b[:, None]
    return y


def depthwise_conv1d(x, w, b, padding):
    """Depthwise (groups = channels) conv. x [C, T], w [C, 1, k] -> [C, T + 2 padding - k + 1]."""
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (padding, padding)))
    t_out = xp.shape[1] - (k - 1)
    y = np.zeros((x.shape[0], t_out))
    for j in range(k):
        y += w[:, 0, j][:, None] * xp[:, j: j + t_out]
    return y + b[:, None]


def layer_norm_channels(x, weight, bias, eps=EPS):
    """LayerNorm over the channel axis of x [C, T] (biased variance), per frame."""
    mean = x.mean(axis=0, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=0, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight[:, None] + bias[:, None]


def leaky_relu(x, slope=0.1):
    return np.where(x >= 0, x, slope * x)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """GELU with the exact erf: 0.5 x (1 + erf(x / sqrt 2))."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def hann_periodic(n=N_FFT):
    i = np.arange(n)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * i / n)


def istft(y):
    """sanotts.md's iSTFT head: y [514, T] (log-magnitudes, phases) -> waveform [128 T]."""
    t_frames = y.shape[1]
    bins = N_FFT // 2 + 1
    mag = np.exp(np.minimum(y[:bins], LN_100))
    phase = y[bins:]
    spec = mag * (np.cos(phase) + 1j * np.sin(phase))
    frames = np.fft.irfft(spec, n=N_FFT, axis=0)  # [512, T]
    w = hann_periodic()
    length = (t_frames - 1) * HOP + N_FFT
    buf = np.zeros(length)
    env = np.zeros(length)
    for t in range(t_frames):
        buf[t * HOP: t * HOP + N_FFT] += frames[:, t] * w
        env[t * HOP: t * HOP + N_FFT] += w * w
    out = buf.copy()
    ok = env >= 1e-11
    out[ok] = buf[ok] / env[ok]
    start = N_FFT // 2
    return out[start: start + HOP * t_frames]


def decode(voice, hidden):
    """The unfolded decoder: voice (dict of voice-file tensors), hidden [192, T] -> f64 [128 T]."""
    v = {k: np.asarray(a, np.float64) for k, a in voice.items()}
    h = np.asarray(hidden, np.float64)
    # 1-2. The acoustic model's projection, conv_embed (padding 3), the speaker embedding.
    mel = v["proj.weight"] @ h
    x = conv1d(mel, v["embed.weight"], v["embed.bias"], padding=3) + v["speaker"][:, None]
    # 3. ResidualConv: dilation 1 (padding 1), then dilation 3 (padding 3).
    r = conv1d(leaky_relu(x), v["res.conv1.weight"], v["res.conv1.bias"], 1, 1)
    r = conv1d(leaky_relu(r), v["res.conv2.weight"], v["res.conv2.bias"], 3, 3)
    x = x + r
    # 4. LayerNorm over channels.
    x = layer_norm_channels(x, v["norm0.weight"], v["norm0.bias"])
    # 5. ConvNeXt blocks.
    for i in range(4):
        p = f"convnext.{i}."
        y = depthwise_conv1d(x, v[p + "dw.weight"], v[p + "dw.bias"], 3)
        y = layer_norm_channels(y, v[p + "norm.weight"], v[p + "norm.bias"])
        y = v[p + "pw1.weight"] @ y + v[p + "pw1.bias"][:, None]
        y = gelu(y)
        y = v[p + "pw2.weight"] @ y + v[p + "pw2.bias"][:, None]
        x = x + v[p + "gamma"][:, None] * y
    # 6. Final LayerNorm, linear head.
    x = layer_norm_channels(x, v["norm1.weight"], v["norm1.bias"])
    y = v["head.weight"] @ x + v["head.bias"][:, None]
    # 7. iSTFT.
    return istft(y)


def self_test():
    """conv1d and depthwise_conv1d against literal loops on odd shapes (dilation, padding)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 9))
    for k, d, p in ((3, 1, 1), (3, 3, 3), (7, 1, 3), (1, 1, 0)):
        w, b = rng.standard_normal((4, 5, k)), rng.standard_normal(4)
        want = np.zeros((4, 9 + 2 * p - d * (k - 1)))
        for o in range(4):
            for t in range(want.shape[1]):
                acc = b[o]
                for i in range(5):
                    for j in range(k):
                        s = t + j * d - p
                        if 0 <= s < 9:
                            acc += w[o, i, j] * x[i, s]
                want[o, t] = acc
        if np.abs(conv1d(x, w, b, d, p) - want).max() > 1e-12:
            raise SystemExit(f"reference.py: conv1d k={k} d={d} p={p} differs from the loop")
    w, b = rng.standard_normal((5, 1, 7)), rng.standard_normal(5)
    want = np.array([[b[c] + sum(w[c, 0, j] * x[c, t + j - 3] for j in range(7)
                                 if 0 <= t + j - 3 < 9) for t in range(9)] for c in range(5)])
    if np.abs(depthwise_conv1d(x, w, b, 3) - want).max() > 1e-12:
        raise SystemExit("reference.py: depthwise_conv1d differs from the loop")
