"""Margins and an f64-libm recomputation of the pymicro-features start-up tables.

Reads the JSON printed by tables_driver.cc (path in argv[1]) and reports, for every table
entry that the library computes in floating point and then rounds:

* its margin: how far the value before rounding (`x`, e.g. `v * 2^12 + 0.5f`) lies from
  the nearest rounding boundary (an integer, since the library floors or truncates), in
  ulps of `x`; and how many ulps the libm result `v` must move for the entry to change
  (`flip`, searched up to 16). Entries with a flip distance of 2 ulps or less depend on the
  libm (`cosf`, `log1pf`, `powf`, `cos`, `sin`);
* whether the same table, computed with correctly rounded f64 libm functions rounded to f32
  at the points where the C code is f32 (what a Rust `const fn` with f64 maths does), is
  equal to the library's.

It only reports (exit status 0); the committed tables are the C library's. Run by
dump_tables.sh.
"""

import json
import math
import sys

import numpy as np

f32 = np.float32
FLIP_LIMIT = 16


def bits(v):
    return int(np.array(v, dtype=np.float32).view(np.uint32))


def from_bits(u):
    return f32(np.array(u, dtype=np.uint32).view(np.float32))


def ulps_to_int32(x):
    """Distance of the positive f32 `x` from its nearest integer, in ulps of f32."""
    n = f32(round(float(x)))
    return abs(bits(x) - bits(n))


def ulps_to_int64(x):
    n = round(x)
    return abs(np.array(x).view(np.int64) - np.array(float(n)).view(np.int64))


def flip32(v, quantise):
    """Smallest k <= FLIP_LIMIT such that moving `v` by k f32 ulps changes quantise(v)."""
    q = quantise(v)
    up = down = v
    for k in range(1, FLIP_LIMIT + 1):
        up = np.nextafter(up, f32(np.inf))
        down = np.nextafter(down, f32(-np.inf))
        if quantise(up) != q or quantise(down) != q:
            return k
    return FLIP_LIMIT + 1


def flip64(v, quantise):
    q = quantise(v)
    up = down = v
    for k in range(1, FLIP_LIMIT + 1):
        up = math.nextafter(up, math.inf)
        down = math.nextafter(down, -math.inf)
        if quantise(up) != q or quantise(down) != q:
            return k
    return FLIP_LIMIT + 1


class Report:
    def __init__(self):
        self.mismatch = 0
        self.lines = []
        self.v_differs = {}

    def table(self, name, margins, c_values, f64_values):
        """margins: list of (index, x_ulps, flip). Compares c_values with f64_values."""
        diff = [(i, a, b) for i, (a, b) in enumerate(zip(c_values, f64_values)) if a != b]
        if len(c_values) != len(f64_values):
            diff.append(("length", len(c_values), len(f64_values)))
        self.mismatch += len(diff)
        close = [m for m in margins if m[2] <= 2]
        min_x = min((m[1] for m in margins), default=None)
        min_flip = min((m[2] for m in margins), default=None)
        self.lines.append(
            f"{name}: {len(c_values)} entries, {len(margins)} rounded from floats; "
            f"min margin {min_x} ulps of x, min flip {min_flip} ulps of v; "
            f"within 2 ulps: {close if close else 'none'}; "
            f"f64-libm recomputation mismatches (index, C, f64): {diff if diff else 'none'}"
        )


def window(d, rep):
    size = d["window_size"]
    arg = f32(f32(math.pi) * f32(2.0)) / f32(size)
    quant = lambda v: int(math.floor(f32(v * f32(4096) + f32(0.5))))
    margins, ours = [], []
    for i, u in enumerate(d["window_value_bits"]):
        v_c = from_bits(u)
        v = f32(0.5) - f32(0.5) * f32(math.cos(float(f32(arg * f32(f32(i) + f32(0.5))))))
        ours.append(quant(v))
        margins.append((i, ulps_to_int32(f32(v_c * f32(4096) + f32(0.5))), flip32(v_c, quant)))
        if bits(v) != u:
            rep.v_differs["window (cosf)"] = rep.v_differs.get("window (cosf)", 0) + 1
    rep.table("window_coefficients", margins, d["window_coefficients"], ours)


def mel(f):
    return f32(f32(1127.0) * f32(math.log1p(float(f32(f / f32(700.0))))))


def filterbank(d, rep):
    n1 = d["num_channels"] + 1
    spectrum = d["fft_size"] // 2 + 1
    lo, hi = mel(f32(125.0)), mel(f32(7500.0))
    spacing = f32(f32(hi - lo) / f32(n1))
    centers = [f32(lo + f32(spacing * f32(c + 1))) for c in range(n1)]
    hz = f32(f32(f32(0.5) * f32(16000)) / f32(f32(spectrum) - f32(1)))
    start_index = int(f32(1.5) + f32(f32(125.0) / hz))
    total = len(d["weights"])
    weights, unweights = [0] * total, [0] * total
    starts, wstarts, widths = [], [], []
    wq = lambda v: int(math.floor(f32(v * f32(4096) + f32(0.5))))
    uq = lambda v: int(math.floor(f32(f32(f32(1.0) - v) * f32(4096) + f32(0.5))))
    margins_w, margins_u = [], []
    c_values = {e[0]: from_bits(e[2]) for e in d["weight_values"]}
    start, windex, end_index = start_index, 0, 0
    per_chan = []
    needs_zeros = False
    for c in range(n1):
        f = start
        while mel(f32(f32(f) * hz)) <= centers[c]:
            f += 1
        width = f - start
        if width == 0:
            starts.append(0)
            wstarts.append(0)
            widths.append(4)
            if not needs_zeros:
                needs_zeros = True
                wstarts[:c] = [w + 4 for w in wstarts[:c]]
                windex += 4
        else:
            aligned = (start // 2) * 2
            padded = ((start - aligned + width - 1) // 4 + 1) * 4
            starts.append(aligned)
            wstarts.append(windex)
            widths.append(padded)
            windex += padded
        per_chan.append((start, width))
        start = f
    for c, (first, width) in enumerate(per_chan):
        prev = lo if c == 0 else centers[c - 1]
        for b in range(first, first + width):
            w = f32(f32(centers[c] - mel(f32(f32(b) * hz))) / f32(centers[c] - prev))
            idx = wstarts[c] + b - starts[c]
            if idx < total:
                weights[idx], unweights[idx] = wq(w), uq(w)
            v_c = c_values.get(idx)
            if v_c is not None:
                margins_w.append((idx, ulps_to_int32(f32(v_c * f32(4096) + f32(0.5))),
                                  flip32(v_c, wq)))
                margins_u.append((idx, ulps_to_int32(f32(f32(f32(1.0) - v_c) * f32(4096)
                                                         + f32(0.5))), flip32(v_c, uq)))
                if bits(w) != bits(v_c):
                    key = "filterbank weights (log1pf)"
                    rep.v_differs[key] = rep.v_differs.get(key, 0) + 1
        end_index = max(end_index, first + width)
    rep.table("start_index/end_index", [], [d["start_index"], d["end_index"]],
              [start_index, end_index])
    rep.table("channel_frequency_starts", [], d["channel_frequency_starts"], starts)
    rep.table("channel_weight_starts", [], d["channel_weight_starts"], wstarts)
    rep.table("channel_widths", [], d["channel_widths"], widths)
    rep.table("weights", margins_w, d["weights"], weights)
    rep.table("unweights", margins_u, d["unweights"], unweights)


def noise(d, rep):
    cfg = [f32(0.025), f32(0.06), f32(0.05)]
    ours = [int(f32(v * f32(16384))) for v in cfg]
    margins = []
    for i, u in enumerate(d["noise_config_value_bits"]):
        x = from_bits(u)
        margins.append((i, ulps_to_int32(x), flip32(x, lambda v: int(v))))
    c = [d["noise_even_smoothing"], d["noise_odd_smoothing"], d["noise_min_signal_remaining"]]
    rep.table("noise even/odd/min_signal_remaining (truncated)", margins, c, ours)


def pcan(d, rep):
    in_bits = d["pcan_input_bits"]

    def gain(x):
        xf = f32(f32(x) / f32(1 << in_bits))
        return f32(f32(1 << 21) * f32(math.pow(float(f32(xf + f32(80.0))), -float(f32(0.95)))))

    quant = lambda g: 32767 if g > f32(32767) else int(f32(g + f32(0.5)))
    margins = []
    for x, u in d["pcan_gain_values"]:
        g = from_bits(u)
        margins.append((x, ulps_to_int32(f32(g + f32(0.5))), flip32(g, quant)))
        if bits(gain(x)) != u:
            rep.v_differs["pcan (powf)"] = rep.v_differs.get("pcan (powf)", 0) + 1
    lut = [None] * len(d["pcan_gain_lut"])
    lut[0], lut[1] = quant(gain(0)), quant(gain(1))
    for interval in range(2, 33):
        x0 = 1 << (interval - 1)
        x1 = x0 + (x0 >> 1)
        x2 = x0 + (x0 - 1) if interval == 32 else 2 * x0
        y0, y1, y2 = (quant(gain(x)) for x in (x0, x1, x2))
        a1 = 4 * (y1 - y0) - (y2 - y0)
        a2 = (y2 - y0) - a1
        base = 4 * interval - 6
        lut[base:base + 3] = [y0, np.int16(a1).item(), np.int16(a2).item()]
    rep.table("pcan_gain_lut (margins per evaluated x)", margins, d["pcan_gain_lut"], lut)


def kiss(d, rep):
    n = d["kiss_nfft"]
    q = lambda c: int(math.floor(0.5 + 32767 * c))
    tw, margins = [], []
    for i in range(n):
        phase = -2 * math.pi * i / n
        c, s = math.cos(phase), math.sin(phase)
        tw.append([q(c), q(s)])
        margins.append((i, int(min(ulps_to_int64(0.5 + 32767 * c), ulps_to_int64(0.5 + 32767 * s))),
                        min(flip64(c, q), flip64(s, q))))
    rep.table("kiss_twiddles (f64 cos/sin)", margins, d["kiss_twiddles"], tw)
    sup, margins = [], []
    for i in range(n // 2):
        phase = -3.14159265358979323846264338327 * ((i + 1) / n + 0.5)
        c, s = math.cos(phase), math.sin(phase)
        sup.append([q(c), q(s)])
        margins.append((i, int(min(ulps_to_int64(0.5 + 32767 * c), ulps_to_int64(0.5 + 32767 * s))),
                        min(flip64(c, q), flip64(s, q))))
    rep.table("kiss_super_twiddles (f64 cos/sin)", margins, d["kiss_super_twiddles"], sup)
    factors, m, p = [], n, 4
    while m > 1:
        while m % p:
            p = 2 if p == 4 else (3 if p == 2 else p + 2)
            if p > math.floor(math.sqrt(n)):
                p = m
        m //= p
        factors += [p, m]
    rep.table("kiss_factors", [], d["kiss_factors"], factors)


def main():
    d = json.load(open(sys.argv[1]))
    rep = Report()
    window(d, rep)
    filterbank(d, rep)
    noise(d, rep)
    pcan(d, rep)
    kiss(d, rep)
    print("\n".join(rep.lines))
    for k, n in rep.v_differs.items():
        print(f"f32 values v where f64 libm rounded to f32 differs from the C libm: {k}: {n}")
    print(f"tables_f64: {rep.mismatch} table entries differ between f64 libm and the C library")


if __name__ == "__main__":
    main()
