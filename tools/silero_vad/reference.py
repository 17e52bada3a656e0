"""Silero VAD (16 kHz) in plain numpy float64, from the converted tensors (the names and layouts
of models/vad/silero_vad.safetensors, README.md). It is the proof of the converter's LSTM gate
order: with (i, f, g, o) rows it reproduces ONNX Runtime's probabilities on real audio to about
1e-6 (convert.py and goldens.py check it); with the rows left in ONNX's (i, o, f, c) order it
does not.

Per window of 576 samples (64 context + 512 new):
  1. reflect-pad 64 samples on the right (640 samples);
  2. STFT as a convolution with `stft.basis` [258, 1, 256], stride 128, no bias: 4 frames; rows
     0..129 real parts, 129..258 imaginary parts; magnitude sqrt(re^2 + im^2) -> [129, 4];
  3. four conv1d, kernel 3, padding 1, strides 1, 2, 2, 1, each + bias + ReLU -> [128, 1];
  4. one LSTM cell (input 128, hidden 128), gates z = W_ih x + b_ih + W_hh h + b_hh split in
     PyTorch order (i, f, g, o): i, f, o sigmoid, g tanh; c' = f c + i g; h' = o tanh(c');
  5. ReLU(h'), 1x1 conv 128 -> 1 with bias, sigmoid: the probability.
The state (h', c') is carried to the next window.

Usage as a script: reference.py WEIGHTS.safetensors CLIP.wav   (prints the probabilities)
"""
import sys

import numpy as np

HIDDEN = 128
PAD = 64
HOP = 128
BINS = 129
STRIDES = (1, 2, 2, 1)
# Row blocks of the LSTM matrices: PyTorch order (i, f, g, o); ONNX's LSTM operator takes
# (i, o, f, c) with c = g. ONNX_TO_TORCH[k] = the ONNX block that holds PyTorch block k.
TORCH_GATES = ("i", "f", "g", "o")
ONNX_GATES = ("i", "o", "f", "g")
ONNX_TO_TORCH = [ONNX_GATES.index(g) for g in TORCH_GATES]  # [0, 2, 3, 1]


def reorder_gates(a, perm):
    """Block k of the result (rows k*128 .. (k+1)*128 along axis 0) is block perm[k] of `a`."""
    blocks = np.split(np.asarray(a), 4, axis=0)
    return np.concatenate([blocks[p] for p in perm], axis=0)


def conv1d(x, w, b, stride, pad):
    """x [C_in, T], w [C_out, C_in, K], b [C_out] or None -> [C_out, T_out], zero padding."""
    c_in, t = x.shape
    k = w.shape[2]
    xp = np.zeros((c_in, t + 2 * pad))
    xp[:, pad:pad + t] = x
    t_out = (t + 2 * pad - k) // stride + 1
    cols = np.stack([xp[:, j * stride:j * stride + k] for j in range(t_out)], axis=-1)
    y = np.einsum("oik,ikt->ot", w, cols)
    return y if b is None else y + b[:, None]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class SileroVad:
    """The window network in float64; `step` runs one window, `run` a whole clip."""

    def __init__(self, tensors, gate_order=TORCH_GATES):
        t = {k: np.asarray(v, np.float64) for k, v in tensors.items()}
        self.basis = t["stft.basis"][:, 0, :]
        self.convs = [(t[f"encoder.{i}.weight"], t[f"encoder.{i}.bias"], s)
                      for i, s in enumerate(STRIDES)]
        # Split the gate rows in the order the caller claims they are stored in.
        perm = [gate_order.index(g) for g in TORCH_GATES]
        self.w_ih = reorder_gates(t["lstm.weight_ih"], perm)
        self.w_hh = reorder_gates(t["lstm.weight_hh"], perm)
        self.bias = reorder_gates(t["lstm.bias_ih"] + t["lstm.bias_hh"], perm)
        self.dec_w = t["decoder.weight"][:, :, 0]
        self.dec_b = t["decoder.bias"]

    def step(self, x, h, c):
        """x [576] (context + window), h, c [128] -> (probability, h', c')."""
        x = np.asarray(x, np.float64)
        n = len(x)
        xp = np.concatenate([x, x[n - 1 - np.arange(1, PAD + 1)]])  # reflect, edge not repeated
        frames = (len(xp) - self.basis.shape[1]) // HOP + 1
        seg = np.stack([xp[j * HOP:j * HOP + self.basis.shape[1]] for j in range(frames)], 1)
        spec = self.basis @ seg  # [258, frames]
        y = np.sqrt(spec[:BINS] ** 2 + spec[BINS:] ** 2)
        for w, b, s in self.convs:
            y = np.maximum(conv1d(y, w, b, s, 1), 0.0)
        z = self.w_ih @ y[:, 0] + self.w_hh @ h + self.bias
        i, f, g, o = np.split(z, 4)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        logit = self.dec_w @ np.maximum(h, 0.0) + self.dec_b
        return float(sigmoid(logit)[0]), h, c

    def run(self, windows):
        """windows [n, 576] (sv_env.windows) -> float64 [n], state carried from zeros."""
        h = np.zeros(HIDDEN)
        c = np.zeros(HIDDEN)
        out = []
        for x in windows:
            p, h, c = self.step(x, h, c)
            out.append(p)
        return np.array(out)


def main():
    import sv_env

    tensors, _ = sv_env.read_safetensors(sys.argv[1])
    probs = SileroVad(tensors).run(sv_env.windows(sv_env.read_clip(sys.argv[2])))
    print(" ".join(f"{p:.6f}" for p in probs))


if __name__ == "__main__":
    main()
