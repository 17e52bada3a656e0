#!/usr/bin/env python3
"""The seeded synthetic sanoTTS voice and the seeded test hidden states, in numpy f64.

Written from ../shared/models/sanotts.md ("Synthetic weights", "Voice files"), independently of
the Rust generator: two implementations of one convention, so a slip in either shows as a
waveform mismatch in the golden test.

Generator: SplitMix64 (state += 0x9E3779B97F4A7C15, then the usual two xor-shift-multiply
rounds and a final xor-shift; the first output is that of the incremented state). One standard
normal value per two consecutive outputs x1, x2 (Box-Muller, cosine half only):

    u1 = (x1 >> 11) * 2^-53 + 2^-54      (in (0, 1): ln u1 is finite)
    u2 = (x2 >> 11) * 2^-53
    z  = sqrt(-2 ln u1) cos(2 pi u2)

Voice (seed 0x5A70; the second test voice uses 0x5A71): tensors drawn in the voice-file list
order (VOICE_TENSORS), each in row-major order; conv and linear weights z / sqrt(fan_in)
(fan_in = in/groups * k for convs, in for linears), biases and `speaker` 0.1 z, norm weights
1 + 0.1 z, norm biases 0.1 z, layer scales `gamma` exactly 0.1 with no draw. Computed in f64,
stored as f32.

Test hidden states (the convention shared with the Rust tests): SplitMix64 seeded with 0xB1D0,
the same draw, row-major [192, T], unit scale, stored as safetensors tensor `hidden` f32
[192, T]. The hidden states for T and T' are different arrangements of one stream (row 0 of
[192, T] holds draws 0..T), not prefixes of each other.

Usage:
    voice.py voice OUT.safetensors [--seed 0x5A70]
    voice.py hidden OUT.safetensors --frames T [--seed 0xB1D0]
    voice.py compare VOICE.safetensors [--seed 0x5A70]

`compare` checks another implementation's voice file (e.g. `neon vocode --save-voice`) against
this generator: names, shapes, dtypes, and every value; exit status 0 only when all are
bit-identical. (Measured here: numpy's f64 log/cos give the same values as the C library's on
all 653 058 draws of the voice, and z / sqrt(fan_in) versus z * (1 / sqrt(fan_in)) differs in
the last f64 bit for a quarter of the weights but in none of their f32 roundings, so a
faithful implementation is expected to be bit-identical; a one-ulp f32 difference in a few
values would still be harmless to the waveform tolerances.)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import safetensors_io  # noqa: E402

VOICE_SEED = 0x5A70
SECOND_VOICE_SEED = 0x5A71
HIDDEN_SEED = 0xB1D0

H = 192  # acoustic hidden channels
M = 80  # mel-like channels of the acoustic model's projection
D = 128  # decoder width
E = 384  # ConvNeXt expansion
BLOCKS = 4
HEAD = 514  # 257 log-magnitudes + 257 phases

GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def _voice_tensors():
    """(name, shape, kind, fan_in) in the voice-file order of sanotts.md.

    kind: "weight" (z / sqrt(fan_in)), "bias" (0.1 z), "norm_weight" (1 + 0.1 z),
    "norm_bias" (0.1 z), "gamma" (0.1, no draw).
    """
    out = [
        ("proj.weight", (M, H), "weight", H),
        ("embed.weight", (D, M, 7), "weight", M * 7),
        ("embed.bias", (D,), "bias", None),
        ("speaker", (D,), "bias", None),
        ("res.conv1.weight", (D, D, 3), "weight", D * 3),
        ("res.conv1.bias", (D,), "bias", None),
        ("res.conv2.weight", (D, D, 3), "weight", D * 3),
        ("res.conv2.bias", (D,), "bias", None),
        ("norm0.weight", (D,), "norm_weight", None),
        ("norm0.bias", (D,), "norm_bias", None),
    ]
    for i in range(BLOCKS):
        p = f"convnext.{i}."
        out += [
            (p + "dw.weight", (D, 1, 7), "weight", 1 * 7),
            (p + "dw.bias", (D,), "bias", None),
            (p + "norm.weight", (D,), "norm_weight", None),
            (p + "norm.bias", (D,), "norm_bias", None),
            (p + "pw1.weight", (E, D), "weight", D),
            (p + "pw1.bias", (E,), "bias", None),
            (p + "pw2.weight", (D, E), "weight", E),
            (p + "pw2.bias", (D,), "bias", None),
            (p + "gamma", (D,), "gamma", None),
        ]
    out += [
        ("norm1.weight", (D,), "norm_weight", None),
        ("norm1.bias", (D,), "norm_bias", None),
        ("head.weight", (HEAD, D), "weight", D),
        ("head.bias", (HEAD,), "bias", None),
    ]
    return out


VOICE_TENSORS = _voice_tensors()


class SplitMix64:
    """SplitMix64 with vectorised block output (uint64 arithmetic wraps modulo 2^64)."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next_block(self, n):
        """The next n outputs as uint64 [n]."""
        steps = np.arange(1, n + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(self.state) + steps * np.uint64(GOLDEN)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        self.state = (self.state + n * GOLDEN) & MASK
        return z

    def normals(self, n):
        """The next n standard normal values (f64), two outputs each, Box-Muller cosine half."""
        x = self.next_block(2 * n)
        u1 = (x[0::2] >> np.uint64(11)).astype(np.float64) * 2.0**-53 + 2.0**-54
        u2 = (x[1::2] >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def _splitmix64_scalar(state):
    """One step of the textbook scalar form: (new state, output). Used by self_test()."""
    state = (state + GOLDEN) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def self_test():
    """The scalar form gives SplitMix64's published first outputs for seed 0, and the vectorised
    generator equals the scalar one (block boundaries included)."""
    state, a = _splitmix64_scalar(0)
    _, b = _splitmix64_scalar(state)
    if (a, b) != (0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4):
        raise SystemExit("voice.py: SplitMix64 does not reproduce its seed-0 outputs")
    state = VOICE_SEED
    want = []
    for _ in range(10):
        state, x = _splitmix64_scalar(state)
        want.append(x)
    g = SplitMix64(VOICE_SEED)
    got = list(g.next_block(3)) + list(g.next_block(7))
    if [int(v) for v in got] != want:
        raise SystemExit("voice.py: vectorised SplitMix64 differs from the scalar form")


def voice_f64(seed=VOICE_SEED):
    """The synthetic voice as f64 arrays (dict in file order), before the f32 rounding."""
    g = SplitMix64(seed)
    out = {}
    for name, shape, kind, fan_in in VOICE_TENSORS:
        n = int(np.prod(shape))
        if kind == "gamma":
            out[name] = np.full(shape, 0.1)
            continue
        z = g.normals(n).reshape(shape)
        if kind == "weight":
            out[name] = z / np.sqrt(float(fan_in))
        elif kind in ("bias", "norm_bias"):
            out[name] = 0.1 * z
        else:  # norm_weight
            out[name] = 1.0 + 0.1 * z
    return out


def voice(seed=VOICE_SEED):
    """The synthetic voice as stored: dict name -> f32 array, in voice-file order."""
    return {k: v.astype(np.float32) for k, v in voice_f64(seed).items()}


def hidden(frames, seed=HIDDEN_SEED):
    """Test hidden states f32 [192, frames]."""
    if not 1 <= frames:
        raise ValueError(f"frames must be >= 1, got {frames}")
    return SplitMix64(seed).normals(H * frames).reshape(H, frames).astype(np.float32)


def check_voice(tensors):
    """Raises ValueError unless `tensors` has every voice-file name with its shape, f32, finite."""
    for name, shape, _, _ in VOICE_TENSORS:
        if name not in tensors:
            raise ValueError(f"voice file: missing tensor {name}")
        t = tensors[name]
        if t.dtype != np.float32 or tuple(t.shape) != shape:
            raise ValueError(f"voice file: {name} is {t.dtype} {list(t.shape)}, want f32 "
                             f"{list(shape)}")
        if not np.isfinite(t).all():
            raise ValueError(f"voice file: {name} has non-finite values")
    extra = sorted(set(tensors) - {n for n, _, _, _ in VOICE_TENSORS})
    if extra:
        raise ValueError(f"voice file: unexpected tensors {extra}")


def write_voice(path, seed=VOICE_SEED):
    safetensors_io.write_safetensors(path, voice(seed), {
        "generator": "tools/sanotts/voice.py",
        "voice": "sanoTTS nano synthetic voice (shared/models/sanotts.md)",
        "seed": f"0x{seed:X}",
    })


def write_hidden(path, frames, seed=HIDDEN_SEED):
    safetensors_io.write_safetensors(path, {"hidden": hidden(frames, seed)}, {
        "generator": "tools/sanotts/voice.py",
        "seed": f"0x{seed:X}",
        "frames": str(frames),
    })


def compare(path, seed):
    """0 when the voice file at `path` equals voice(seed) bit for bit, else 1 (printed)."""
    tensors, _ = safetensors_io.read_safetensors(path)
    try:
        check_voice(tensors)
    except ValueError as e:
        print(e)
        return 1
    bad = 0
    for name, want in voice(seed).items():
        got = tensors[name]
        n = int((got.view(np.uint32) != want.view(np.uint32)).sum())
        if n:
            d = float(np.abs(got.astype(np.float64) - want).max())
            print(f"DIFF {name}: {n} of {got.size} values differ, max |diff| {d:.3g}")
            bad += 1
    print(f"compare: {path} vs voice seed 0x{seed:X}: "
          f"{'bit-identical' if not bad else f'{bad} tensors differ'}")
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    v = sub.add_parser("voice", help="write a synthetic voice file")
    v.add_argument("out")
    v.add_argument("--seed", type=lambda s: int(s, 0), default=VOICE_SEED)
    h = sub.add_parser("hidden", help="write test hidden states `hidden` f32 [192, T]")
    h.add_argument("out")
    h.add_argument("--frames", type=int, required=True)
    h.add_argument("--seed", type=lambda s: int(s, 0), default=HIDDEN_SEED)
    c = sub.add_parser("compare", help="compare a voice file with this generator's voice")
    c.add_argument("path")
    c.add_argument("--seed", type=lambda s: int(s, 0), default=VOICE_SEED)
    a = p.parse_args()
    self_test()
    if a.what == "compare":
        sys.exit(compare(a.path, a.seed))
    if a.what == "voice":
        write_voice(a.out, a.seed)
        print(f"wrote {a.out}: voice seed 0x{a.seed:X}, {len(VOICE_TENSORS)} tensors")
    else:
        write_hidden(a.out, a.frames, a.seed)
        print(f"wrote {a.out}: hidden [192, {a.frames}], seed 0x{a.seed:X}")


if __name__ == "__main__":
    main()
