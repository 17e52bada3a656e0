//! Portable activation kernels: the scalar forms of the approximations, written
//! branch-free (every `if` is a select) so that LLVM vectorises the loops that call them,
//! and the slice drivers that map them. The portable backend is these functions mapped over
//! the slices; other kernel families (softmax, attention) reuse them as `activation::scalar`.

use super::consts::*;
use super::{Activation, MapArgs};
use crate::kernels::gemm::fmax;

/// `r + r^2 P(r)`, `|r| <= ln2/2`.
#[inline(always)]
pub(crate) fn expm1_poly(r: f32) -> f32 {
    let mut p = EXPM1_P[4];
    p = p * r + EXPM1_P[3];
    p = p * r + EXPM1_P[2];
    p = p * r + EXPM1_P[1];
    p = p * r + EXPM1_P[0];
    (r * r) * p + r
}

/// Range reduction: returns `(v, r)` where the low bits of `v` hold `n = round(x / ln2)`
/// and `r = x - n ln2`. Valid for `|x| < 2^21`.
#[inline(always)]
fn reduce(x: f32) -> (f32, f32) {
    let v = x * LOG2E + ROUND_MAGIC;
    let n = v - ROUND_MAGIC;
    let r = x - n * LN2_HI;
    let r = r - n * LN2_LO;
    (v, r)
}

/// `exp(x)`; see the [family docs](super) for range and special values.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let (v, r) = reduce(x);
    let q = expm1_poly(r) + 1.0;
    // q * 2^n by adding n to the exponent field (n << 23 == v.to_bits() << 23).
    let y = f32::from_bits(q.to_bits().wrapping_add(v.to_bits() << 23));
    let y = if x < EXP_LO { 0.0 } else { y };
    // NaN and x > EXP_HI both fail `x <= EXP_HI`: x + inf is +inf or NaN.
    if x <= EXP_HI {
        y
    } else {
        x + f32::INFINITY
    }
}

/// `(t, p)` with `t = 2^n`, `p = expm1(r)`, `x = n ln2 + r`, for `|x| <= 87` (NaN
/// propagates into `p`). `exp(x) = t + t p`, `expm1(x) = (t - 1) + t p`.
#[inline(always)]
fn exp_parts(x: f32) -> (f32, f32) {
    let (v, r) = reduce(x);
    // 2^n from the exponent bits (n << 23 == v.to_bits() << 23).
    let t = f32::from_bits((v.to_bits() << 23).wrapping_add(0x3f80_0000));
    (t, expm1_poly(r))
}

/// `tanh(x)`.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let z = x.abs() + x.abs();
    let z = if z > TANH_ZMAX { TANH_ZMAX } else { z };
    let (t, p) = exp_parts(z);
    let e = t * p + (t - 1.0); // expm1(2|x|)
    (e / (e + 2.0)).copysign(x)
}

/// `1 / (1 + exp(-x))`.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// `x * sigmoid(x)`.
#[inline(always)]
pub(crate) fn silu(x: f32) -> f32 {
    let xm = if x < GATE_XMIN { GATE_XMIN } else { x };
    xm * sigmoid(x)
}

/// GELU, tanh form, as `x * sigmoid(x (K0 + K1 x^2))`.
#[inline(always)]
pub(crate) fn gelu_tanh(x: f32) -> f32 {
    let w = x * (GELU_K1 * (x * x) + GELU_K0);
    let xm = if x < GATE_XMIN { GATE_XMIN } else { x };
    xm * sigmoid(w)
}

/// `z H(z)` for `z >= 0`: `erf(z) = 1 - exp(-z H(z))`.
#[inline(always)]
fn erf_exponent(a: f32) -> f32 {
    let mut h = ERF_H[10];
    for &c in ERF_H[..10].iter().rev() {
        h = h * a + c;
    }
    a * h
}

/// `erf(z)`.
#[inline(always)]
pub(crate) fn erf(z: f32) -> f32 {
    let a = z.abs();
    let (t, p) = exp_parts(-erf_exponent(a));
    let r = (1.0 - t) - t * p; // -expm1(-a H(a))
    let r = if a >= ERF_SAT { 1.0 } else { r };
    r.copysign(z)
}

/// GELU, erf form: with `e = exp(-a H(a)) = 1 - erf(a)`, `a = |x| / sqrt 2`:
/// `gelu(x) = (x/2) e` for `x < 0` and `x - (x/2) e` for `x >= 0` (no cancellation).
#[inline(always)]
pub(crate) fn gelu_erf(x: f32) -> f32 {
    let a = x.abs() * FRAC_1_SQRT_2;
    let (t, p) = exp_parts(-erf_exponent(a));
    let e = t * p + t;
    let e = if a >= ERF_SAT { 0.0 } else { e };
    let xc = if x < -GELU_ERF_XMAX { -GELU_ERF_XMAX } else { x };
    let xc = if xc > GELU_ERF_XMAX { GELU_ERF_XMAX } else { xc };
    let hx = 0.5 * xc;
    if x < 0.0 {
        hx * e
    } else {
        x - hx * e
    }
}

/// Log reduction: `(n, f)` with `x = 2^n (1 + f)`, `|f| <= 1/3`, `f` exact, for finite
/// `x > 0` (subnormals included); garbage (replaced by [`log_special`]) otherwise.
#[inline(always)]
fn log_reduce(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * TWO23 } else { x };
    let bits = xs.to_bits();
    let e = (bits.wrapping_sub(LOG_OFF) as i32) >> 23;
    let m = f32::from_bits(bits.wrapping_sub((e << 23) as u32));
    let n = e as f32 - if sub { 23.0 } else { 0.0 };
    (n, m - 1.0)
}

/// `ln(1 + f) ~= f + f^2 Q(f)`, `|f| <= 1/3`.
#[inline(always)]
fn log1p_poly(f: f32) -> f32 {
    let mut q = LOG_Q[8];
    for &c in LOG_Q[..8].iter().rev() {
        q = q * f + c;
    }
    (f * f) * q + f
}

/// Special values of the logs: `r` for finite `x > 0`, `-inf` at `+-0`, `+inf` at
/// `+inf`, NaN for `x < 0` and NaN.
#[inline(always)]
fn log_special(x: f32, r: f32) -> f32 {
    let r = if x == f32::INFINITY { x } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    if x >= 0.0 {
        r
    } else {
        f32::NAN
    }
}

/// `ln(x) = n ln2 + ln(1 + f)`, `ln2` split so that `n * LN2_HI` is exact.
#[inline(always)]
pub(crate) fn ln(x: f32) -> f32 {
    let (n, f) = log_reduce(x);
    let l = log1p_poly(f);
    log_special(x, n * LN2_HI + (n * LN2_LO + l))
}

/// `log10(x) = n log10(2) + ln(1 + f) log10(e)`.
#[inline(always)]
pub(crate) fn log10(x: f32) -> f32 {
    let (n, f) = log_reduce(x);
    let l = log1p_poly(f);
    log_special(x, n * LOG10_2_HI + (n * LOG10_2_LO + l * LOG10_E))
}

/// `max(x, 0)` with NaN propagated and `relu(-0) = +0` (the semantics of NEON `fmax`).
#[inline(always)]
pub(crate) fn relu(x: f32) -> f32 {
    let y = if x > 0.0 { x } else { 0.0 };
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// `max(x, min)` (IEEE `maximum`, the semantics of NEON `fmax`).
#[inline(always)]
pub(crate) fn clamp_min(x: f32, min: f32) -> f32 {
    fmax(x, min)
}

/// Leaky ReLU.
#[inline(always)]
pub(crate) fn leaky_relu(x: f32, slope: f32) -> f32 {
    if x < 0.0 {
        x * slope
    } else {
        x
    }
}

/// Width of the fixed inner loops of the portable drivers: two 128-bit vectors (or one
/// 256-bit vector), enough independent work for LLVM to vectorise and interleave.
const LANES: usize = 8;

/// `x[i] = f(x[i])`: full `LANES` chunks (vectorised by LLVM), then the scalar tail.
#[inline(always)]
pub(crate) fn portable_map(x: &mut [f32], f: impl Fn(f32) -> f32) {
    let mut chunks = x.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for v in c.iter_mut() {
            *v = f(*v);
        }
    }
    for v in chunks.into_remainder() {
        *v = f(*v);
    }
}

/// `y[i] = f(x[i])` (`x.len() == y.len()`, checked by the callers).
#[inline(always)]
fn portable_map_to(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    let mut xs = x.chunks_exact(LANES);
    let mut ys = y.chunks_exact_mut(LANES);
    for (a, b) in (&mut xs).zip(&mut ys) {
        for (u, v) in a.iter().zip(b.iter_mut()) {
            *v = f(*u);
        }
    }
    for (u, v) in xs.remainder().iter().zip(ys.into_remainder()) {
        *v = f(*u);
    }
}

/// [`portable_map`] or [`portable_map_to`], as `io` says.
#[inline(always)]
pub(crate) fn map_args(io: MapArgs<'_>, f: impl Fn(f32) -> f32) {
    match io {
        MapArgs::InPlace(x) => portable_map(x, f),
        MapArgs::To(x, y) => portable_map_to(x, y, f),
    }
}

/// The portable [`ActivationKernels::activate_unchecked`](super::ActivationKernels).
pub(super) fn activate(f: Activation, io: MapArgs<'_>) {
    activate_with_forms!(f, io)
}
