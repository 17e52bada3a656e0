#!/usr/bin/env python3
"""Fits the polynomial / rational approximations used by neon-runtime's activation kernels.

Reproduces the coefficients in `neon-runtime/src/kernels/activation/mod.rs`:

* expm1(r) ~= r + r^2 * P(r), P of degree 4, on |r| <= ln(2)/2 (plus a small margin for the
  rounding of the range reduction); minimises the maximum *relative* error of expm1.
  exp(r) = 1 + expm1(r) shares the polynomial.
* ln(1 + f) ~= f + f^2 * Q(f), Q of degree 8, on |f| <= 1/3 (the reduced argument of the
  log kernels, mantissa in [2/3, 4/3)); minimises the maximum *relative* error of ln(1 + f).
* erf(z) = 1 - exp(-z H(z)) on 0 <= z <= 3.92, H a polynomial of degree 10 in z fitted to
  H(z) = -ln(erfc(z)) / z; minimises the maximum *relative* error of H. That bounds both
  the relative error of erf (an error dH changes erf by z erfc(z) dH, at most H's relative
  error) and the relative error of exp(-z H(z)) = erfc(z), which the GELU kernel uses for
  negative x (an absolute error in h = z H changes exp(-h) by the factor exp(-dh)).

Method: Lawson's iteratively reweighted least squares on a dense grid (each step minimises
sum lambda_i * (w_i (P(x_i) - T_i))^2, then lambda_i <- lambda_i * |e_i|; the code also
handles a rational P/Q, linearised, which an earlier erf fit used), in 30-digit arithmetic
with mpmath; then the coefficients
are rounded to f32 one at a time from the highest degree down, re-fitting the remaining ones
after each rounding so they absorb the rounding error. The script prints the f32 coefficients
(decimal and hex) and the maximum relative error of the rounded approximation in exact
arithmetic (the f32 evaluation error comes on top; the Rust tests measure the total).

Needs only `mpmath` (pip install mpmath). Runs in about 15 minutes on one core.
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 30


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def f32hex(x):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", float(x)))[0]


def polyval(c, x):
    s = mp.mpf(0)
    for a in reversed(c):
        s = s * x + a
    return s


def lawson(xs, target, weight, np_, nq, fixed_p=None, fixed_q=None, iters=150):
    """Weighted minimax fit of target(x) by P(x)/Q(x), deg P = np_, deg Q = nq, Q[0] = 1.

    fixed_p / fixed_q: dicts {degree: value} of coefficients held fixed (already rounded).
    Returns (p, q, max weighted error).
    """
    fixed_p = fixed_p or {}
    fixed_q = fixed_q or {}
    fixed_q = dict(fixed_q)
    fixed_q[0] = mp.mpf(1)
    free_p = [j for j in range(np_ + 1) if j not in fixed_p]
    free_q = [j for j in range(nq + 1) if j not in fixed_q]
    T = [target(x) for x in xs]
    W = [weight(x) for x in xs]
    lam = [mp.mpf(1) / len(xs)] * len(xs)
    qprev = [mp.mpf(1)] * len(xs)
    p = [mp.mpf(0)] * (np_ + 1)
    q = [mp.mpf(0)] * (nq + 1)
    best = None
    for it in range(iters):
        n = len(free_p) + len(free_q)
        ata = mp.matrix(n, n)
        atb = mp.matrix(n, 1)
        for i, x in enumerate(xs):
            s = W[i] / qprev[i]
            sw = mp.sqrt(lam[i]) * s
            # residual: sum_free_p p_j x^j - T sum_free_q q_j x^j - (T*Qfixed - Pfixed)
            row = [x**j * sw for j in free_p] + [-T[i] * x**j * sw for j in free_q]
            pf = sum((v * x**j for j, v in fixed_p.items()), mp.mpf(0))
            qf = sum((v * x**j for j, v in fixed_q.items()), mp.mpf(0))
            rhs = (T[i] * qf - pf) * sw
            for a in range(n):
                atb[a] += row[a] * rhs
                for b in range(a, n):
                    ata[a, b] += row[a] * row[b]
        for a in range(n):
            for b in range(a):
                ata[a, b] = ata[b, a]
        sol = mp.lu_solve(ata, atb)
        for k, j in enumerate(free_p):
            p[j] = sol[k]
        for j, v in fixed_p.items():
            p[j] = v
        for k, j in enumerate(free_q):
            q[j] = sol[len(free_p) + k]
        for j, v in fixed_q.items():
            q[j] = v
        errs = []
        for i, x in enumerate(xs):
            qx = polyval(q, x)
            qprev[i] = qx
            errs.append(W[i] * (polyval(p, x) / qx - T[i]))
        emax = max(abs(e) for e in errs)
        if best is None or emax < best[2]:
            best = (list(p), list(q), emax)
        tot = sum(l * abs(e) for l, e in zip(lam, errs))
        lam = [l * abs(e) / tot for l, e in zip(lam, errs)]
    return best


def round_down_the_degrees(xs, target, weight, np_, nq, iters):
    """Rounds coefficients to f32 from the highest degree down, refitting the rest."""
    fixed_p, fixed_q = {}, {}
    p, q, e = lawson(xs, target, weight, np_, nq, iters=iters)
    order = [("q", j) for j in range(nq, 0, -1)] + [("p", j) for j in range(np_, -1, -1)]
    # Interleave: highest degrees of both first.
    order.sort(key=lambda t: -t[1])
    for which, j in order:
        if which == "p":
            fixed_p[j] = mp.mpf(f32(p[j]))
        else:
            fixed_q[j] = mp.mpf(f32(q[j]))
        if len(fixed_p) == np_ + 1 and len(fixed_q) == nq:
            break
        p, q, e = lawson(xs, target, weight, np_, nq, fixed_p, fixed_q, iters=iters)
    p = [fixed_p[j] for j in range(np_ + 1)]
    q = [mp.mpf(1)] + [fixed_q[j] for j in range(1, nq + 1)]
    return p, q


def max_rel_err(xs, approx, exact):
    worst = (mp.mpf(0), None)
    for x in xs:
        ex = exact(x)
        if ex == 0:
            continue
        e = abs((approx(x) - ex) / ex)
        if e > worst[0]:
            worst = (e, x)
    return worst


def show(name, coeffs):
    for j, c in enumerate(coeffs):
        print("  %s[%d] = %.9e  (%s)" % (name, j, f32(c), f32hex(c)))


def fit_expm1(iters):
    a = mp.log(2) / 2 + mp.mpf("0.0005")
    xs = [a * (2 * mp.mpf(i) / 400 - 1) for i in range(401) if i != 200]
    g = lambda r: (mp.expm1(r) - r) / r**2
    w = lambda r: r**2 / mp.expm1(r)
    p, _ = round_down_the_degrees(xs, g, w, 4, 0, iters)
    print("expm1(r) = r + r^2 * P(r), |r| <= %.6f" % a)
    show("P", p)
    dense = [a * (2 * mp.mpf(i) / 4000 - 1) for i in range(4001) if i != 2000]
    e, at = max_rel_err(dense, lambda r: r + r**2 * polyval(p, r), mp.expm1)
    print("  max rel error of expm1 (exact arithmetic, f32 coefficients): %.3e at r = %.5f" % (e, at))
    e, at = max_rel_err(dense, lambda r: 1 + r + r**2 * polyval(p, r), mp.exp)
    print("  max rel error of exp = 1 + expm1: %.3e at r = %.5f" % (e, at))


def fit_erf(deg, zmax, iters):
    xs = [zmax * mp.mpf(i) / 300 for i in range(1, 301)]
    H = lambda z: -mp.log(mp.erfc(z)) / z
    w = lambda z: 1 / H(z)
    p, _ = round_down_the_degrees(xs, H, w, deg, 0, iters)
    print("erf(z) = 1 - exp(-z H(z)), 0 <= z <= %s, deg H = %d" % (zmax, deg))
    show("H", p)
    dense = [zmax * mp.mpf(i) / 2000 for i in range(1, 2001)]
    e, at = max_rel_err(dense, lambda z: polyval(p, z), H)
    print("  max rel error of H (exact arithmetic, f32 coefficients): %.3e at z = %.5f" % (e, at))
    e, at = max_rel_err(dense, lambda z: -mp.expm1(-z * polyval(p, z)), mp.erf)
    print("  max rel error of erf: %.3e at z = %.5f" % (e, at))


def fit_log(deg, iters):
    a = mp.mpf(1) / 3 + mp.mpf("0.0001")
    xs = [a * (2 * mp.mpf(i) / 400 - 1) for i in range(401) if i != 200]
    g = lambda f: (mp.log1p(f) - f) / f**2
    w = lambda f: f**2 / mp.log1p(f)
    p, _ = round_down_the_degrees(xs, g, w, deg, 0, iters)
    print("ln(1 + f) = f + f^2 * Q(f), |f| <= %.6f, deg Q = %d" % (a, deg))
    show("Q", p)
    dense = [a * (2 * mp.mpf(i) / 4000 - 1) for i in range(4001) if i != 2000]
    e, at = max_rel_err(dense, lambda f: f + f**2 * polyval(p, f), mp.log1p)
    print("  max rel error of ln(1 + f) (exact arithmetic, f32 coefficients): %.3e at f = %.5f" % (e, at))


if __name__ == "__main__":
    # usage: fit_activation_approx.py [iterations] [expm1|erf|log ...]
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    which = sys.argv[2:] or ["expm1", "erf", "log"]
    if "expm1" in which:
        fit_expm1(iters)
    if "erf" in which:
        fit_erf(10, mp.mpf("3.92"), iters)
    if "log" in which:
        fit_log(8, iters)
