//! Portable trigonometric kernels: the scalar forms (branch-free: every `if` is a select,
//! so the slice loops vectorise) and the slice drivers.

use super::consts::*;
use crate::kernels::activation::consts::ROUND_MAGIC;
use crate::kernels::activation::scalar;

/// `(sin x, cos x)`; see the [family docs](super) for the algorithm, range and accuracy.
#[inline(always)]
pub(crate) fn sin_cos(x: f32) -> (f32, f32) {
    // n = round(x 2/pi), in the low mantissa bits of v.
    let v = x * FRAC_2_PI + ROUND_MAGIC;
    let n = v - ROUND_MAGIC;
    let r = x - n * PIO2_HI;
    let r = r - n * PIO2_MID;
    let r = r - n * PIO2_LO;
    let r2 = r * r;
    let mut sp = SIN_P[3];
    sp = sp * r2 + SIN_P[2];
    sp = sp * r2 + SIN_P[1];
    sp = sp * r2 + SIN_P[0];
    let s = (r * r2) * sp + r;
    let mut cp = COS_P[4];
    cp = cp * r2 + COS_P[3];
    cp = cp * r2 + COS_P[2];
    cp = cp * r2 + COS_P[1];
    cp = cp * r2 + COS_P[0];
    let c = r2 * cp + 1.0;
    let q = v.to_bits();
    let (a, b) = if q & 1 != 0 { (c, s) } else { (s, c) };
    // sin: negative for n mod 4 in {2, 3}; cos: for n mod 4 in {1, 2}.
    let sign_a = (q & 2) << 30;
    let sign_b = (q.wrapping_add(1) & 2) << 30;
    (f32::from_bits(a.to_bits() ^ sign_a), f32::from_bits(b.to_bits() ^ sign_b))
}

/// `min(l, max)` propagating NaN in `l`.
#[inline(always)]
pub(crate) fn min_nan(l: f32, max: f32) -> f32 {
    if l > max {
        max
    } else {
        l
    }
}

/// `sin[i], cos[i] = sin_cos(x[i])` (equal lengths, checked by the entry point).
pub(crate) fn sin_cos_slices(x: &[f32], sin: &mut [f32], cos: &mut [f32]) {
    for ((&v, s), c) in x.iter().zip(sin.iter_mut()).zip(cos.iter_mut()) {
        (*s, *c) = sin_cos(v);
    }
}

/// One log-polar pair: `(m cos p, m sin p)`, `m = exp(min(l, max_log))`.
#[inline(always)]
pub(crate) fn log_polar(max_log: f32, l: f32, p: f32) -> (f32, f32) {
    let m = scalar::exp(min_nan(l, max_log));
    let (s, c) = sin_cos(p);
    (m * c, m * s)
}

/// [`log_polar`] over `(a, b)` in place (equal lengths, checked by the entry point;
/// inlined into the x86 levels' copies, `x86.rs`).
#[inline(always)]
pub(crate) fn from_log_polar(max_log: f32, a: &mut [f32], b: &mut [f32]) {
    for (l, p) in a.iter_mut().zip(b.iter_mut()) {
        (*l, *p) = log_polar(max_log, *l, *p);
    }
}
