"""A float64 numpy Moonshine base-en built from base-en.safetensors (convert.py's output).

Independent of ONNX Runtime: convert.py compares it with the shipped graphs to show that every
tensor got the right name. Written for clarity, not speed (full recomputation per decoder step).
Shapes: audio [N]; encoder output [T, 416]; logits [L, 32768].
"""
import math

import numpy as np

D_MODEL, HEADS, HEAD_DIM, ROTARY_DIM, THETA, EPS = 416, 8, 52, 32, 10000.0, 1e-5
_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    """Exact (erf) GELU."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, w):
    """LayerNorm over the last axis, biased variance, weight only."""
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * w


def conv1d(x, w, b, stride):
    """Valid 1-D convolution: x [C_in, N], w [C_out, C_in, K] -> [C_out, T]."""
    k = w.shape[2]
    win = np.lib.stride_tricks.sliding_window_view(x, k, axis=1)[:, ::stride]  # [C_in, T, K]
    y = np.einsum("ctk,ock->ot", win, w)
    return y if b is None else y + b[:, None]


def rotary(x, positions):
    """Rotary embedding on dims [0, 32) of each head, interleaved pairs (2i, 2i+1),
    inv_freq[i] = 10000^(-2i/32); x [heads, L, 52]."""
    inv = THETA ** (-np.arange(0, ROTARY_DIM, 2) / ROTARY_DIM)  # [16]
    ang = positions[:, None].astype(np.float64) * inv[None, :]  # [L, 16]
    cos, sin = np.cos(ang), np.sin(ang)
    out = x.copy()
    a, b = x[..., 0:ROTARY_DIM:2], x[..., 1:ROTARY_DIM:2]
    out[..., 0:ROTARY_DIM:2] = a * cos - b * sin
    out[..., 1:ROTARY_DIM:2] = b * cos + a * sin
    return out


class Moonshine:
    def __init__(self, tensors):
        self.t = tensors
        self.cache = {}

    def w(self, name):
        """A weight as the graph computes it: int8 -> f32(q) * scale + offset in f32, then f64."""
        if name not in self.cache:
            a = self.t[name]
            if a.dtype == np.int8:
                s = self.t[name + ".scale"].astype(np.float32)
                o = self.t[name + ".offset"].astype(np.float32)
                a = a.astype(np.float32) * s + o
            self.cache[name] = a.astype(np.float64)
        return self.cache[name]

    def attention(self, p, h, kv, rope, causal):
        """Multi-head attention with projections p.{q,k,v,o}; h [Lq, 416], kv [Lk, 416]."""
        def heads(y):
            return y.reshape(y.shape[0], HEADS, HEAD_DIM).transpose(1, 0, 2)

        q = heads(h @ self.w(f"{p}.q.weight"))
        k = heads(kv @ self.w(f"{p}.k.weight"))
        v = heads(kv @ self.w(f"{p}.v.weight"))
        if rope:
            q = rotary(q, np.arange(h.shape[0]))
            k = rotary(k, np.arange(kv.shape[0]))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD_DIM)
        if causal:
            s = s + np.triu(np.full(s.shape[1:], -np.inf), 1)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(h.shape[0], D_MODEL)
        return o @ self.w(f"{p}.o.weight")

    def encode(self, audio):
        """audio [N] in [-1, 1] -> [T, 416]."""
        x = np.asarray(audio, np.float64)[None, :]
        x = np.tanh(conv1d(x, self.w("encoder.conv1.weight"), None, 64))
        m, v = x.mean(), x.var()
        x = (x - m) / np.sqrt(v + EPS) * self.w("encoder.groupnorm.weight")[:, None] \
            + self.w("encoder.groupnorm.bias")[:, None]
        x = gelu(conv1d(x, self.w("encoder.conv2.weight"), self.w("encoder.conv2.bias"), 3))
        x = gelu(conv1d(x, self.w("encoder.conv3.weight"), self.w("encoder.conv3.bias"), 2))
        x = x.T
        for i in range(8):
            p = f"encoder.layers.{i}"
            h = layer_norm(x, self.w(f"{p}.attn_norm.weight"))
            x = x + self.attention(f"{p}.attn", h, h, rope=True, causal=False)
            h = layer_norm(x, self.w(f"{p}.mlp_norm.weight"))
            y = gelu(h @ self.w(f"{p}.mlp.fc1.weight") + self.w(f"{p}.mlp.fc1.bias"))
            x = x + y @ self.w(f"{p}.mlp.fc2.weight") + self.w(f"{p}.mlp.fc2.bias")
        return layer_norm(x, self.w("encoder.norm.weight"))

    def decode_logits(self, enc, tokens):
        """Teacher-forced decoder: logits [L, 32768], row s after tokens[0..=s]."""
        enc = np.asarray(enc, np.float64)
        x = self.w("decoder.embed.weight")[np.asarray(tokens)]
        for i in range(8):
            p = f"decoder.layers.{i}"
            h = layer_norm(x, self.w(f"{p}.self_attn_norm.weight"))
            x = x + self.attention(f"{p}.self_attn", h, h, rope=True, causal=True)
            h = layer_norm(x, self.w(f"{p}.cross_attn_norm.weight"))
            x = x + self.attention(f"{p}.cross_attn", h, enc, rope=False, causal=False)
            h = layer_norm(x, self.w(f"{p}.mlp_norm.weight"))
            u = h @ self.w(f"{p}.mlp.up.weight") + self.w(f"{p}.mlp.up.bias")
            value, gate = u[:, :1664], u[:, 1664:]
            y = gate / (1.0 + np.exp(-gate)) * value
            x = x + y @ self.w(f"{p}.mlp.down.weight") + self.w(f"{p}.mlp.down.bias")
        h = layer_norm(x, self.w("decoder.norm.weight"))
        return h @ self.w("decoder.embed.weight").T
