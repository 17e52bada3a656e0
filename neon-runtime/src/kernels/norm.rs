//! Normalisation kernels: LayerNorm, RMSNorm and GroupNorm, plus a correctly rounded
//! `no_std` square root ([`sqrt_f32`]).
//!
//! Formulas (all statistics are population statistics, dividing by the count `n`, and `eps`
//! is added to the variance inside the square root, as PyTorch does):
//! - **LayerNorm** (Ba, Kiros & Hinton 2016, "Layer Normalization"):
//!   `y = (x - mean) / sqrt(var + eps) * gamma + beta`, statistics over the channels of one
//!   frame.
//! - **RMSNorm** (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization"):
//!   `y = x / sqrt(mean(x^2) + eps) * gamma`.
//! - **GroupNorm** (Wu & He 2018, "Group Normalization"): the channels are split into
//!   `groups` equal consecutive groups; mean and variance are taken over all
//!   `(channels in group) x frames` values of a group, then
//!   `y[c, t] = (x[c, t] - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]`.
//!
//! Two layouts are covered: *rows* kernels normalise each contiguous row of a frame-major
//! `[frames, channels]` tensor (the transformer case); *channels* kernels normalise each
//! column of a channel-first `[channels, frames]` tensor across its channels, vectorised
//! across frames (16 frames at a time, so the strided channel walk touches whole 64-byte
//! lines).
//!
//! ## Accuracy
//! The variance is computed in **two passes** (mean first, then the mean of squared
//! deviations), never as `E[x^2] - E[x]^2`, which cancels catastrophically when the data
//! carry a large common offset (x = 1000 + noise: `E[x^2]` is ~1e6 with an f32 ulp of
//! 0.06, larger than the variance of the noise). The first pass also sums `x - s` with a
//! shift `s` equal to the first value of the set, and the mean is kept as `s + m` with the
//! small residual `m = mean(x - s)`; every later use computes `(x - s) - m`. For data
//! within a factor of two of `s` the difference `x - s` is exact (Sterbenz' lemma), so the
//! rounding errors of the mean, the variance and the output scale with the spread of the
//! data, not with their offset: an f32 mean of 1000 + noise could not be closer than
//! ulp(1000)/2 = 3e-5 to the true mean, which alone would be an output error of 3e-5/std.
//! Sums use 16 independent f32 lanes (channel-first kernels: one lane per frame);
//! row and group sums add blocks of 4096 values in f64, so long GroupNorm sets
//! (`channels/groups * frames` values) keep their accuracy.
//!
//! ## Square root
//! `f32::sqrt` is not in `core` on Rust 1.95 (`core::f32::math::sqrt` is unstable), so the
//! portable backend uses [`sqrt_f32`]: Newton's iteration in f64 from a bit-level estimate,
//! then an exact round-to-nearest correction; it returns the correctly rounded result, the
//! same bits as IEEE `sqrt` (the NEON `FSQRT` instruction, `vsqrtq_f32`, is correctly
//! rounded too). The inverse standard deviation is `1 / sqrt(v)` with a correctly rounded
//! division on both backends (NEON: `vdivq_f32`), so it is within 1 ulp of the exact value
//! and both backends compute identical bits for it. The NEON estimate `vrsqrteq_f32` (8
//! bits) with `vrsqrtsq_f32` Newton steps is not used: it is cheaper but leaves errors of a
//! few ulp, and the square root here is computed once per row or per frame, not per
//! element.

// Explicit lane indexing over fixed-size arrays mirrors the SIMD lanes it compiles to.
#![allow(clippy::needless_range_loop)]

use super::{BackendType, Portable, X86Isa, X86};

/// Correctly rounded square root of an `f32` (IEEE 754 `sqrt`, round to nearest even)
/// without `std`.
///
/// Special values as IEEE: `sqrt(±0) = ±0`, `sqrt(+inf) = +inf`, NaN for negative
/// inputs and NaN. Subnormal inputs are handled.
///
/// Method: the f64 reciprocal square root is estimated from the exponent bits (relative
/// error below 4 %), refined by four Newton steps `r <- r (3 - d r^2) / 2` (each squares
/// the error: ~1e-3, ~1e-6, ~1e-12, then f64 rounding), turned into `s = d r` with one
/// Newton correction, and rounded to f32. A final exact test fixes the last bit: the
/// midpoint between two neighbouring f32 values has at most 25 significant bits, so its
/// square is exact in f64 and can be compared with the input.
pub fn sqrt_f32(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 || x == f32::INFINITY {
        return x;
    }
    let d = x as f64;
    // Initial estimate of 1/sqrt(d) from the bit pattern (the classic magic-constant guess).
    let mut r = f64::from_bits(0x5FE6_EB50_C7B5_37A9 - (d.to_bits() >> 1));
    for _ in 0..4 {
        r *= 1.5 - 0.5 * d * r * r;
    }
    let s = d * r;
    let s = s + 0.5 * (d - s * s) * r;
    let t = s as f32;
    // Exact correction to round-to-nearest. `t` is a positive normal f32 (sqrt of any
    // positive f32 lies in [2^-75, 2^64]), so both neighbours exist and are finite.
    let bits = t.to_bits();
    let up = f32::from_bits(bits + 1);
    let mid_up = (t as f64 + up as f64) * 0.5;
    if mid_up * mid_up < d {
        return up;
    }
    let down = f32::from_bits(bits - 1);
    let mid_down = (t as f64 + down as f64) * 0.5;
    if mid_down * mid_down > d {
        return down;
    }
    t
}

/// `1 / sqrt(var + eps)`: two correctly rounded operations.
#[inline]
fn inv_std(var: f32, eps: f32) -> f32 {
    1.0 / sqrt_f32(var + eps)
}

/// Normalisation kernels (see the module documentation for the formulas).
///
/// Every kernel writes all of `y` (out of place; `x` is not modified). `gamma` is the
/// per-channel scale, `beta` the optional per-channel bias, `eps > 0` the variance floor.
pub trait NormKernels: BackendType {
    /// LayerNorm of every row of a row-major `[rows, n]` matrix (frame-major
    /// `[frames, channels]` with `n = channels`): each row is normalised over its `n`
    /// values, then `y = x_hat * gamma + beta`.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * n`, `gamma` (or `beta`) does not hold `n`
    /// values, or `n == 0`.
    fn layer_norm_rows(
        rows: usize,
        n: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        layer_norm_rows_with::<Portable>(rows, n, x, gamma, beta, eps, y)
    }

    /// LayerNorm of a channel-first `[channels, frames]` tensor across its channels: each
    /// frame (column) is normalised over its `channels` values, then
    /// `y[c, t] = x_hat[c, t] * gamma[c] + beta[c]`.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `channels * frames`, `gamma` (or `beta`) does not
    /// hold `channels` values, or `channels == 0`.
    fn layer_norm_channels(
        channels: usize,
        frames: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        check_channels("layer_norm_channels", channels, frames, x, y, gamma);
        check_beta("layer_norm_channels", beta, channels);
        if frames == 1 {
            // One frame: the column is contiguous, so it is a row (vectorised over channels).
            return Self::layer_norm_rows(1, channels, x, gamma, beta, eps, y);
        }
        let (c, t) = (channels, frames);
        let mut f0 = 0;
        while f0 + 16 <= t {
            layer_norm_cf_block::<16>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 16;
        }
        while f0 + 4 <= t {
            layer_norm_cf_block::<4>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 4;
        }
        while f0 < t {
            layer_norm_cf_block::<1>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 1;
        }
    }

    /// RMSNorm of every row of a row-major `[rows, n]` matrix (frame-major):
    /// `y = x / sqrt(mean(x^2) + eps) * gamma`, the mean over the row.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * n`, `gamma.len() != n`, or `n == 0`.
    fn rms_norm_rows(rows: usize, n: usize, x: &[f32], gamma: &[f32], eps: f32, y: &mut [f32]) {
        rms_norm_rows_with::<Portable>(rows, n, x, gamma, eps, y)
    }

    /// RMSNorm of a channel-first `[channels, frames]` tensor across its channels:
    /// `y[c, t] = x[c, t] / sqrt(mean_c(x[c, t]^2) + eps) * gamma[c]`.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `channels * frames`, `gamma.len() != channels`,
    /// or `channels == 0`.
    fn rms_norm_channels(
        channels: usize,
        frames: usize,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        check_channels("rms_norm_channels", channels, frames, x, y, gamma);
        if frames == 1 {
            // One frame: the column is contiguous, so it is a row (vectorised over channels).
            return Self::rms_norm_rows(1, channels, x, gamma, eps, y);
        }
        let (c, t) = (channels, frames);
        let mut f0 = 0;
        while f0 + 16 <= t {
            rms_norm_cf_block::<16>(c, t, f0, x, gamma, eps, y);
            f0 += 16;
        }
        while f0 + 4 <= t {
            rms_norm_cf_block::<4>(c, t, f0, x, gamma, eps, y);
            f0 += 4;
        }
        while f0 < t {
            rms_norm_cf_block::<1>(c, t, f0, x, gamma, eps, y);
            f0 += 1;
        }
    }

    /// GroupNorm of a channel-first `[channels, frames]` tensor (any trailing spatial axes
    /// flattened into `frames`): statistics per group of `channels / groups` consecutive
    /// channels over all their frames, per-channel `gamma` and `beta`.
    ///
    /// # Panics
    /// When `groups == 0`, `groups` does not divide `channels`, `x.len()` or `y.len()` is
    /// not `channels * frames`, `gamma` (or `beta`) does not hold `channels` values, or
    /// `channels == 0` or `frames == 0`.
    fn group_norm(
        channels: usize,
        frames: usize,
        groups: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        group_norm_with::<Portable>(channels, frames, groups, x, gamma, beta, eps, y)
    }
}

/// Values summed in f32 before a block's sum is added in f64 (GroupNorm).
const SUM_BLOCK: usize = 4096;

/// Per-row primitives that the shared drivers below are written against; one
/// implementation per backend.
trait RowPrims {
    /// `sum(x - shift)`.
    fn sum_shifted(x: &[f32], shift: f32) -> f32;
    /// `sum(((x - shift) - m)^2)`.
    fn sum_sq_dev(x: &[f32], shift: f32, m: f32) -> f32;
    /// `sum(x^2)`.
    fn sum_sq(x: &[f32]) -> f32;
    /// `y = ((x - shift) - m) * inv * gamma + beta` (`beta` treated as 0 when `None`).
    fn normalize_row(
        x: &[f32],
        shift: f32,
        m: f32,
        inv: f32,
        gamma: &[f32],
        beta: Option<&[f32]>,
        y: &mut [f32],
    );
    /// `y = x * inv * gamma` (RMSNorm).
    fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]);
    /// `1 / sqrt(var + eps)`, correctly rounded square root and division.
    fn inv_std(var: f32, eps: f32) -> f32 {
        inv_std(var, eps)
    }
    /// `y = ((x - shift) - m) * scale + bias` with scalar `scale` and `bias`.
    fn scale_shift_row(x: &[f32], shift: f32, m: f32, scale: f32, bias: f32, y: &mut [f32]);
}

fn check_rows(what: &str, rows: usize, n: usize, x: &[f32], y: &[f32], gamma: &[f32]) {
    assert!(n > 0, "{what}: n must be >= 1");
    let len = rows.checked_mul(n).expect("rows * n overflows");
    assert_eq!(x.len(), len, "{what}: x length");
    assert_eq!(y.len(), len, "{what}: y length");
    assert_eq!(gamma.len(), n, "{what}: gamma length");
}

fn check_beta(what: &str, beta: Option<&[f32]>, n: usize) {
    if let Some(b) = beta {
        assert_eq!(b.len(), n, "{what}: beta length");
    }
}

fn layer_norm_rows_with<P: RowPrims>(
    rows: usize,
    n: usize,
    x: &[f32],
    gamma: &[f32],
    beta: Option<&[f32]>,
    eps: f32,
    y: &mut [f32],
) {
    check_rows("layer_norm_rows", rows, n, x, y, gamma);
    check_beta("layer_norm_rows", beta, n);
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        let (shift, m, var) = mean_var::<P>(xr);
        P::normalize_row(xr, shift, m, P::inv_std(var, eps), gamma, beta, yr);
    }
}

/// Two-pass shifted mean and population variance of `x` (non-empty), blocks of
/// [`SUM_BLOCK`] added in f64: `(shift, m, var)` with mean = `shift + m`.
fn mean_var<P: RowPrims>(x: &[f32]) -> (f32, f32, f32) {
    let n = x.len() as f64;
    let shift = x[0];
    let sum: f64 = x.chunks(SUM_BLOCK).map(|b| P::sum_shifted(b, shift) as f64).sum();
    let m = (sum / n) as f32;
    let ss: f64 = x.chunks(SUM_BLOCK).map(|b| P::sum_sq_dev(b, shift, m) as f64).sum();
    (shift, m, (ss / n) as f32)
}

fn rms_norm_rows_with<P: RowPrims>(
    rows: usize,
    n: usize,
    x: &[f32],
    gamma: &[f32],
    eps: f32,
    y: &mut [f32],
) {
    check_rows("rms_norm_rows", rows, n, x, y, gamma);
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
        let ss: f64 = xr.chunks(SUM_BLOCK).map(|b| P::sum_sq(b) as f64).sum();
        P::scale_row(xr, P::inv_std((ss / n as f64) as f32, eps), gamma, yr);
    }
}

fn check_channels(what: &str, channels: usize, frames: usize, x: &[f32], y: &[f32], g: &[f32]) {
    assert!(channels > 0, "{what}: channels must be >= 1");
    let len = channels.checked_mul(frames).expect("channels * frames overflows");
    assert_eq!(x.len(), len, "{what}: x length");
    assert_eq!(y.len(), len, "{what}: y length");
    assert_eq!(g.len(), channels, "{what}: gamma length");
}

fn group_norm_with<P: RowPrims>(
    channels: usize,
    frames: usize,
    groups: usize,
    x: &[f32],
    gamma: &[f32],
    beta: Option<&[f32]>,
    eps: f32,
    y: &mut [f32],
) {
    check_channels("group_norm", channels, frames, x, y, gamma);
    check_beta("group_norm", beta, channels);
    assert!(frames > 0, "group_norm: frames must be >= 1");
    assert!(
        groups > 0 && channels.is_multiple_of(groups),
        "group_norm: groups must divide channels"
    );
    let per_group = channels / groups;
    let glen = per_group * frames;
    for (g, (xg, yg)) in x.chunks_exact(glen).zip(y.chunks_exact_mut(glen)).enumerate() {
        let (shift, m, var) = mean_var::<P>(xg);
        let inv = P::inv_std(var, eps);
        for (k, (xr, yr)) in xg.chunks_exact(frames).zip(yg.chunks_exact_mut(frames)).enumerate() {
            let c = g * per_group + k;
            let bias = beta.map_or(0.0, |b| b[c]);
            P::scale_shift_row(xr, shift, m, inv * gamma[c], bias, yr);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Portable
// ---------------------------------------------------------------------------------------

/// Independent f32 accumulators in the portable sums (4 NEON / 2 AVX vectors).
const LANES: usize = 16;

/// Sum of the lanes, in order. (A pairwise tree here makes LLVM's SLP vectoriser pick
/// 2-lane vectors for the whole loop on aarch64; the order of 16 terms hardly matters.)
#[inline(always)]
fn hsum(a: [f32; LANES]) -> f32 {
    a.iter().fold(0.0, |s, &v| s + v)
}

impl RowPrims for Portable {
    fn sum_shifted(x: &[f32], shift: f32) -> f32 {
        let mut acc = [0.0f32; LANES];
        let mut it = x.chunks_exact(LANES);
        for c in &mut it {
            for j in 0..LANES {
                acc[j] += c[j] - shift;
            }
        }
        it.remainder().iter().fold(hsum(acc), |s, &v| s + (v - shift))
    }

    fn sum_sq_dev(x: &[f32], shift: f32, m: f32) -> f32 {
        let mut acc = [0.0f32; LANES];
        let mut it = x.chunks_exact(LANES);
        for c in &mut it {
            for j in 0..LANES {
                let d = (c[j] - shift) - m;
                acc[j] += d * d;
            }
        }
        it.remainder().iter().fold(hsum(acc), |s, &v| {
            let d = (v - shift) - m;
            s + d * d
        })
    }

    fn sum_sq(x: &[f32]) -> f32 {
        let mut acc = [0.0f32; LANES];
        let mut it = x.chunks_exact(LANES);
        for c in &mut it {
            for j in 0..LANES {
                acc[j] += c[j] * c[j];
            }
        }
        it.remainder().iter().fold(hsum(acc), |s, &v| s + v * v)
    }

    fn normalize_row(
        x: &[f32],
        shift: f32,
        m: f32,
        inv: f32,
        gamma: &[f32],
        beta: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let xg = x.iter().zip(gamma);
        match beta {
            Some(b) => {
                for ((o, (&v, &g)), &b) in y.iter_mut().zip(xg).zip(b) {
                    *o = ((v - shift) - m) * inv * g + b;
                }
            }
            None => {
                for (o, (&v, &g)) in y.iter_mut().zip(xg) {
                    *o = ((v - shift) - m) * inv * g;
                }
            }
        }
    }

    fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
        for (o, (&v, &g)) in y.iter_mut().zip(x.iter().zip(gamma)) {
            *o = v * inv * g;
        }
    }

    fn scale_shift_row(x: &[f32], shift: f32, m: f32, scale: f32, bias: f32, y: &mut [f32]) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = ((v - shift) - m) * scale + bias;
        }
    }
}

/// Portable channel-first LayerNorm of the `W` frames starting at `f0`.
#[inline(always)]
fn layer_norm_cf_block<const W: usize>(
    c: usize,
    t: usize,
    f0: usize,
    x: &[f32],
    gamma: &[f32],
    beta: Option<&[f32]>,
    eps: f32,
    y: &mut [f32],
) {
    let mut shift = [0.0f32; W];
    shift.copy_from_slice(&x[f0..f0 + W]);
    let mut acc = [0.0f32; W];
    for ch in 0..c {
        let r = &x[ch * t + f0..][..W];
        for j in 0..W {
            acc[j] += r[j] - shift[j];
        }
    }
    let n = c as f32;
    let mut m = [0.0f32; W];
    for j in 0..W {
        m[j] = acc[j] / n;
    }
    let mut acc = [0.0f32; W];
    for ch in 0..c {
        let r = &x[ch * t + f0..][..W];
        for j in 0..W {
            let d = (r[j] - shift[j]) - m[j];
            acc[j] += d * d;
        }
    }
    let mut inv = [0.0f32; W];
    for j in 0..W {
        inv[j] = inv_std(acc[j] / n, eps);
    }
    for ch in 0..c {
        let (g, b) = (gamma[ch], beta.map_or(0.0, |b| b[ch]));
        let r = &x[ch * t + f0..][..W];
        let o = &mut y[ch * t + f0..][..W];
        for j in 0..W {
            o[j] = ((r[j] - shift[j]) - m[j]) * inv[j] * g + b;
        }
    }
}

/// Portable channel-first RMSNorm of the `W` frames starting at `f0`.
#[inline(always)]
fn rms_norm_cf_block<const W: usize>(
    c: usize,
    t: usize,
    f0: usize,
    x: &[f32],
    gamma: &[f32],
    eps: f32,
    y: &mut [f32],
) {
    let mut acc = [0.0f32; W];
    for ch in 0..c {
        let r = &x[ch * t + f0..][..W];
        for j in 0..W {
            acc[j] += r[j] * r[j];
        }
    }
    let mut inv = [0.0f32; W];
    for j in 0..W {
        inv[j] = inv_std(acc[j] / c as f32, eps);
    }
    for ch in 0..c {
        let g = gamma[ch];
        let r = &x[ch * t + f0..][..W];
        let o = &mut y[ch * t + f0..][..W];
        for j in 0..W {
            o[j] = r[j] * inv[j] * g;
        }
    }
}

impl NormKernels for Portable {}

impl<I: X86Isa> NormKernels for X86<I> {}

// ---------------------------------------------------------------------------------------
// NEON
// ---------------------------------------------------------------------------------------

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    //! NEON bodies. Every function carries `#[target_feature(enable = "neon")]` so the
    //! arithmetic intrinsics are safe to call inside; loads and stores go through [`ld`]
    //! and [`st`], which check the slice length. NEON is part of the ARMv8-A baseline that
    //! the `Neon` backend requires, which is what makes calling these functions sound.

    use core::arch::aarch64::*;

    use super::{layer_norm_cf_block, rms_norm_cf_block, RowPrims};

    /// Loads `x[0..4]`.
    #[inline]
    #[target_feature(enable = "neon")]
    fn ld(x: &[f32]) -> float32x4_t {
        assert!(x.len() >= 4);
        // SAFETY: the assert above guarantees 4 readable f32 at `x.as_ptr()`; `vld1q_f32`
        // has no alignment requirement beyond that of f32.
        unsafe { vld1q_f32(x.as_ptr()) }
    }

    /// Stores `v` into `y[0..4]`.
    #[inline]
    #[target_feature(enable = "neon")]
    fn st(y: &mut [f32], v: float32x4_t) {
        assert!(y.len() >= 4);
        // SAFETY: the assert above guarantees 4 writable f32 at `y.as_mut_ptr()`, borrowed
        // mutably, so nothing else aliases them.
        unsafe { vst1q_f32(y.as_mut_ptr(), v) }
    }

    /// Sum of the 16 lanes of four accumulators, pairwise.
    #[inline]
    #[target_feature(enable = "neon")]
    fn hsum4(a: [float32x4_t; 4]) -> f32 {
        vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[1]), vaddq_f32(a[2], a[3])))
    }

    /// `1 / sqrt(v + eps)` per lane: `FSQRT` and `FDIV`, both correctly rounded, so the
    /// lanes equal the portable `inv_std` bit for bit.
    #[inline]
    #[target_feature(enable = "neon")]
    fn inv_std4(v: float32x4_t, eps: float32x4_t) -> float32x4_t {
        vdivq_f32(vdupq_n_f32(1.0), vsqrtq_f32(vaddq_f32(v, eps)))
    }

    /// Generates a reduction `fn(x, s) -> f32` over 16-value chunks (four accumulators),
    /// 4-value chunks, then a scalar tail. The first body folds one vector `v` into the
    /// accumulator `a` (with `s` broadcast), the second one scalar.
    macro_rules! reduction {
        ($name:ident, |$a:ident, $v:ident, $s:ident, $m:ident| $vec:expr,
         |$a1:ident, $v1:ident, $s1:ident, $m1:ident| $sc:expr) => {
            #[target_feature(enable = "neon")]
            pub(super) fn $name(x: &[f32], s: f32, m: f32) -> f32 {
                let (sv, mv) = (vdupq_n_f32(s), vdupq_n_f32(m));
                let mut acc = [vdupq_n_f32(0.0); 4];
                let mut it = x.chunks_exact(16);
                for c in &mut it {
                    for k in 0..4 {
                        let ($a, $v, $s, $m) = (acc[k], ld(&c[4 * k..]), sv, mv);
                        acc[k] = $vec;
                    }
                }
                let mut it4 = it.remainder().chunks_exact(4);
                for c in &mut it4 {
                    let ($a, $v, $s, $m) = (acc[0], ld(c), sv, mv);
                    acc[0] = $vec;
                }
                let mut r = hsum4(acc);
                for &x1 in it4.remainder() {
                    let ($a1, $v1, $s1, $m1) = (r, x1, s, m);
                    r = $sc;
                }
                r
            }
        };
    }

    reduction!(sum_shifted, |a, v, s, _m| vaddq_f32(a, vsubq_f32(v, s)), |a, v, s, _m| a + (v - s));
    reduction!(
        sum_sq_dev,
        |a, v, s, m| {
            let d = vsubq_f32(vsubq_f32(v, s), m);
            vfmaq_f32(a, d, d)
        },
        |a, v, s, m| {
            let d = (v - s) - m;
            a + d * d
        }
    );
    reduction!(sum_sq, |a, v, _s, _m| vfmaq_f32(a, v, v), |a, v, _s, _m| a + v * v);

    #[target_feature(enable = "neon")]
    pub(super) fn normalize_row(
        x: &[f32],
        shift: f32,
        m: f32,
        inv: f32,
        gamma: &[f32],
        beta: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let n = x.len();
        let (gamma, y) = (&gamma[..n], &mut y[..n]);
        let (sv, mv, iv) = (vdupq_n_f32(shift), vdupq_n_f32(m), vdupq_n_f32(inv));
        let (mut xs, mut gs) = (x.chunks_exact(4), gamma.chunks_exact(4));
        let mut ys = y.chunks_exact_mut(4);
        match beta {
            Some(b) => {
                let mut bs = b[..n].chunks_exact(4);
                for (((xc, gc), bc), yc) in (&mut xs).zip(&mut gs).zip(&mut bs).zip(&mut ys) {
                    let d = vmulq_f32(vsubq_f32(vsubq_f32(ld(xc), sv), mv), iv);
                    st(yc, vfmaq_f32(ld(bc), d, ld(gc)));
                }
                let tail = xs.remainder().iter().zip(gs.remainder()).zip(bs.remainder());
                for (o, ((&v, &g), &b)) in ys.into_remainder().iter_mut().zip(tail) {
                    *o = ((v - shift) - m) * inv * g + b;
                }
            }
            None => {
                for ((xc, gc), yc) in (&mut xs).zip(&mut gs).zip(&mut ys) {
                    let d = vmulq_f32(vsubq_f32(vsubq_f32(ld(xc), sv), mv), iv);
                    st(yc, vmulq_f32(d, ld(gc)));
                }
                let tail = xs.remainder().iter().zip(gs.remainder());
                for (o, (&v, &g)) in ys.into_remainder().iter_mut().zip(tail) {
                    *o = ((v - shift) - m) * inv * g;
                }
            }
        }
    }

    #[target_feature(enable = "neon")]
    pub(super) fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
        let n = x.len();
        let (gamma, y) = (&gamma[..n], &mut y[..n]);
        let iv = vdupq_n_f32(inv);
        let (mut xs, mut gs) = (x.chunks_exact(4), gamma.chunks_exact(4));
        let mut ys = y.chunks_exact_mut(4);
        for ((xc, gc), yc) in (&mut xs).zip(&mut gs).zip(&mut ys) {
            st(yc, vmulq_f32(vmulq_f32(ld(xc), iv), ld(gc)));
        }
        let tail = xs.remainder().iter().zip(gs.remainder());
        for (o, (&v, &g)) in ys.into_remainder().iter_mut().zip(tail) {
            *o = v * inv * g;
        }
    }

    /// Scalar `1 / sqrt(var + eps)` with `FSQRT` and `FDIV` (same bits as the portable
    /// `inv_std`).
    #[target_feature(enable = "neon")]
    pub(super) fn inv_std1(var: f32, eps: f32) -> f32 {
        let v = vdup_n_f32(var + eps);
        vget_lane_f32::<0>(vdiv_f32(vdup_n_f32(1.0), vsqrt_f32(v)))
    }

    #[target_feature(enable = "neon")]
    pub(super) fn scale_shift_row(
        x: &[f32],
        shift: f32,
        m: f32,
        scale: f32,
        bias: f32,
        y: &mut [f32],
    ) {
        let n = x.len();
        let y = &mut y[..n];
        let (hv, mv) = (vdupq_n_f32(shift), vdupq_n_f32(m));
        let (sv, bv) = (vdupq_n_f32(scale), vdupq_n_f32(bias));
        let mut xs = x.chunks_exact(16);
        let mut ys = y.chunks_exact_mut(16);
        for (xc, yc) in (&mut xs).zip(&mut ys) {
            for k in 0..4 {
                let d = vsubq_f32(vsubq_f32(ld(&xc[4 * k..]), hv), mv);
                st(&mut yc[4 * k..], vfmaq_f32(bv, d, sv));
            }
        }
        let (xr, yr) = (xs.remainder(), ys.into_remainder());
        let mut xs = xr.chunks_exact(4);
        let mut ys = yr.chunks_exact_mut(4);
        for (xc, yc) in (&mut xs).zip(&mut ys) {
            st(yc, vfmaq_f32(bv, vsubq_f32(vsubq_f32(ld(xc), hv), mv), sv));
        }
        for (o, &v) in ys.into_remainder().iter_mut().zip(xs.remainder()) {
            *o = ((v - shift) - m) * scale + bias;
        }
    }

    /// Channel-first LayerNorm of the `4 * V` frames starting at `f0`: the statistics of
    /// `V` vectors of frames are kept in registers while walking down the channels.
    #[inline]
    #[target_feature(enable = "neon")]
    fn layer_norm_cf_vec<const V: usize>(
        c: usize,
        t: usize,
        f0: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        // Every access below is x[ch * t + f0 + i] or y[ch * t + f0 + i] with ch < c and
        // i < 4 * V, so these bounds make all of them in range.
        assert!(c >= 1 && f0 + 4 * V <= t && x.len() == c * t && y.len() == c * t);
        let (gamma, beta) = (&gamma[..c], beta.map(|b| &b[..c]));
        let (px, py) = (x[f0..].as_ptr(), y[f0..].as_mut_ptr());
        let mut shift = [vdupq_n_f32(0.0); V];
        let mut acc = [vdupq_n_f32(0.0); V];
        // SAFETY: reads x[ch * t + f0 + 4k .. + 4] for ch < c, k < V: in bounds by the
        // assert above.
        unsafe {
            for k in 0..V {
                shift[k] = vld1q_f32(px.add(4 * k));
            }
            for ch in 0..c {
                let r = px.add(ch * t);
                for k in 0..V {
                    acc[k] = vaddq_f32(acc[k], vsubq_f32(vld1q_f32(r.add(4 * k)), shift[k]));
                }
            }
        }
        let rn = vdupq_n_f32(c as f32);
        let mut m = [vdupq_n_f32(0.0); V];
        for k in 0..V {
            m[k] = vdivq_f32(acc[k], rn);
        }
        let mut acc = [vdupq_n_f32(0.0); V];
        // SAFETY: the same reads as above.
        unsafe {
            for ch in 0..c {
                let r = px.add(ch * t);
                for k in 0..V {
                    let d = vsubq_f32(vsubq_f32(vld1q_f32(r.add(4 * k)), shift[k]), m[k]);
                    acc[k] = vfmaq_f32(acc[k], d, d);
                }
            }
        }
        let ev = vdupq_n_f32(eps);
        let mut inv = [vdupq_n_f32(0.0); V];
        for k in 0..V {
            inv[k] = inv_std4(vdivq_f32(acc[k], rn), ev);
        }
        for ch in 0..c {
            let g = vdupq_n_f32(gamma[ch]);
            let b = vdupq_n_f32(match beta {
                Some(b) => b[ch],
                None => 0.0,
            });
            // SAFETY: the same reads as above, and writes to the same positions of `y`
            // (in bounds by the assert; `y` is borrowed mutably, so nothing aliases it).
            unsafe {
                let (r, o) = (px.add(ch * t), py.add(ch * t));
                for k in 0..V {
                    let d = vsubq_f32(vsubq_f32(vld1q_f32(r.add(4 * k)), shift[k]), m[k]);
                    let d = vmulq_f32(d, inv[k]);
                    vst1q_f32(o.add(4 * k), vfmaq_f32(b, d, g));
                }
            }
        }
    }

    #[target_feature(enable = "neon")]
    pub(super) fn layer_norm_channels(
        c: usize,
        t: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        let mut f0 = 0;
        while f0 + 16 <= t {
            layer_norm_cf_vec::<4>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 16;
        }
        while f0 + 4 <= t {
            layer_norm_cf_vec::<1>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 4;
        }
        // The last `t % 4` frames: one frame at a time with the scalar path (a strided
        // column cannot fill a vector; a single-frame tensor never gets here, it is
        // normalised as a contiguous row).
        while f0 < t {
            layer_norm_cf_block::<1>(c, t, f0, x, gamma, beta, eps, y);
            f0 += 1;
        }
    }

    /// Channel-first RMSNorm of the `4 * V` frames starting at `f0`.
    #[inline]
    #[target_feature(enable = "neon")]
    fn rms_norm_cf_vec<const V: usize>(
        c: usize,
        t: usize,
        f0: usize,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        // As in `layer_norm_cf_vec`: these bounds cover every access below.
        assert!(c >= 1 && f0 + 4 * V <= t && x.len() == c * t && y.len() == c * t);
        let gamma = &gamma[..c];
        let (px, py) = (x[f0..].as_ptr(), y[f0..].as_mut_ptr());
        let mut acc = [vdupq_n_f32(0.0); V];
        // SAFETY: reads x[ch * t + f0 + 4k .. + 4] for ch < c, k < V: in bounds by the
        // assert above.
        unsafe {
            for ch in 0..c {
                let r = px.add(ch * t);
                for k in 0..V {
                    let v = vld1q_f32(r.add(4 * k));
                    acc[k] = vfmaq_f32(acc[k], v, v);
                }
            }
        }
        let (rn, ev) = (vdupq_n_f32(c as f32), vdupq_n_f32(eps));
        let mut inv = [vdupq_n_f32(0.0); V];
        for k in 0..V {
            inv[k] = inv_std4(vdivq_f32(acc[k], rn), ev);
        }
        for ch in 0..c {
            let g = vdupq_n_f32(gamma[ch]);
            // SAFETY: the same reads as above, and writes to the same positions of `y`
            // (in bounds by the assert; `y` is borrowed mutably, so nothing aliases it).
            unsafe {
                let (r, o) = (px.add(ch * t), py.add(ch * t));
                for k in 0..V {
                    let v = vmulq_f32(vmulq_f32(vld1q_f32(r.add(4 * k)), inv[k]), g);
                    vst1q_f32(o.add(4 * k), v);
                }
            }
        }
    }

    #[target_feature(enable = "neon")]
    pub(super) fn rms_norm_channels(
        c: usize,
        t: usize,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        let mut f0 = 0;
        while f0 + 16 <= t {
            rms_norm_cf_vec::<4>(c, t, f0, x, gamma, eps, y);
            f0 += 16;
        }
        while f0 + 4 <= t {
            rms_norm_cf_vec::<1>(c, t, f0, x, gamma, eps, y);
            f0 += 4;
        }
        while f0 < t {
            rms_norm_cf_block::<1>(c, t, f0, x, gamma, eps, y);
            f0 += 1;
        }
    }

    /// Marker type carrying the NEON row primitives for the shared drivers.
    pub(super) struct NeonRows;

    // SAFETY (for every `unsafe` call below): the callees only require the `neon` target
    // feature, which is part of the ARMv8-A baseline the `Neon` backend is built for.
    impl RowPrims for NeonRows {
        fn sum_shifted(x: &[f32], shift: f32) -> f32 {
            // SAFETY: NEON is available (see above).
            unsafe { sum_shifted(x, shift, 0.0) }
        }
        fn sum_sq_dev(x: &[f32], shift: f32, m: f32) -> f32 {
            // SAFETY: NEON is available (see above).
            unsafe { sum_sq_dev(x, shift, m) }
        }
        fn sum_sq(x: &[f32]) -> f32 {
            // SAFETY: NEON is available (see above).
            unsafe { sum_sq(x, 0.0, 0.0) }
        }
        fn normalize_row(
            x: &[f32],
            shift: f32,
            m: f32,
            inv: f32,
            gamma: &[f32],
            beta: Option<&[f32]>,
            y: &mut [f32],
        ) {
            // SAFETY: NEON is available (see above).
            unsafe { normalize_row(x, shift, m, inv, gamma, beta, y) }
        }
        fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
            // SAFETY: NEON is available (see above).
            unsafe { scale_row(x, inv, gamma, y) }
        }
        fn inv_std(var: f32, eps: f32) -> f32 {
            // SAFETY: NEON is available (see above).
            unsafe { inv_std1(var, eps) }
        }
        fn scale_shift_row(x: &[f32], shift: f32, m: f32, scale: f32, bias: f32, y: &mut [f32]) {
            // SAFETY: NEON is available (see above).
            unsafe { scale_shift_row(x, shift, m, scale, bias, y) }
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl NormKernels for super::Neon {
    fn layer_norm_rows(
        rows: usize,
        n: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        layer_norm_rows_with::<neon::NeonRows>(rows, n, x, gamma, beta, eps, y)
    }

    fn layer_norm_channels(
        channels: usize,
        frames: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        check_channels("layer_norm_channels", channels, frames, x, y, gamma);
        check_beta("layer_norm_channels", beta, channels);
        if frames == 1 {
            // One frame: the column is contiguous, so it is a row (vectorised over channels).
            return Self::layer_norm_rows(1, channels, x, gamma, beta, eps, y);
        }
        // SAFETY: the callee only requires NEON, part of the ARMv8-A baseline.
        unsafe { neon::layer_norm_channels(channels, frames, x, gamma, beta, eps, y) }
    }

    fn rms_norm_rows(rows: usize, n: usize, x: &[f32], gamma: &[f32], eps: f32, y: &mut [f32]) {
        rms_norm_rows_with::<neon::NeonRows>(rows, n, x, gamma, eps, y)
    }

    fn rms_norm_channels(
        channels: usize,
        frames: usize,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        check_channels("rms_norm_channels", channels, frames, x, y, gamma);
        if frames == 1 {
            // One frame: the column is contiguous, so it is a row (vectorised over channels).
            return Self::rms_norm_rows(1, channels, x, gamma, eps, y);
        }
        // SAFETY: the callee only requires NEON, part of the ARMv8-A baseline.
        unsafe { neon::rms_norm_channels(channels, frames, x, gamma, eps, y) }
    }

    fn group_norm(
        channels: usize,
        frames: usize,
        groups: usize,
        x: &[f32],
        gamma: &[f32],
        beta: Option<&[f32]>,
        eps: f32,
        y: &mut [f32],
    ) {
        group_norm_with::<neon::NeonRows>(channels, frames, groups, x, gamma, beta, eps, y)
    }
}
