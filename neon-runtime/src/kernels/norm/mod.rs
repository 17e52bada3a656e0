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
//!
//! ## Structure
//! The entry points of [`NormKernels`] check the contract, walk the rows, frames and groups,
//! and compute the statistics with the backend's row reductions; what a backend provides are
//! the hooks: the row reductions and row outputs (`sum_shifted`, `sum_sq_dev`, `sum_sq`,
//! `normalize_row`, `scale_row`, `scale_shift_row`, `inv_std`) and the channel-first blocks of
//! 16, 4 and 1 frames (`layer_norm_frames`, `rms_norm_frames`). `portable.rs` holds the
//! portable hooks, `neon.rs` the NEON ones; `X86<I>` runs the portable channel-first
//! LayerNorm blocks compiled for its level (`x86.rs`) and the portable code elsewhere.

use super::parallel::{row_blocks, Parallel, Rows};
use super::{BackendType, Portable, X86Isa, X86};
use crate::error::Error;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
#[cfg(neon_x86)]
mod x86;

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

/// The per-channel affine parameters and the variance floor of a LayerNorm or GroupNorm:
/// `y = x_hat * gamma + beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormParams<'a> {
    /// Per-channel scale.
    pub gamma: &'a [f32],
    /// Per-channel bias, `None` for none (zero).
    pub beta: Option<&'a [f32]>,
    /// Variance floor, `> 0`, added to the variance inside the square root.
    pub eps: f32,
}

/// The mean of a normalised set kept as `shift + m`: `shift` is the set's first value and
/// `m = mean(x - shift)` the small residual (see the module docs, *Accuracy*); every use
/// computes `(x - shift) - m`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShiftedMean {
    /// The shift, the first value of the set.
    pub shift: f32,
    /// The mean of `x - shift`.
    pub m: f32,
}

/// The block of frames `f0..f0 + W` of a channel-first `[channels, frames]` tensor that a
/// channel-first hook normalises (`W` = 16, 4 or 1, a constant of the hook).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameBlock {
    /// Channels (rows) of the tensor.
    pub channels: usize,
    /// Frames (columns) of the tensor.
    pub frames: usize,
    /// The block's first frame.
    pub f0: usize,
}

/// Normalisation kernels (see the module documentation for the formulas).
///
/// Every kernel writes all of `y` (out of place; `x` is not modified). `gamma` is the
/// per-channel scale, `beta` the optional per-channel bias, `eps > 0` the variance floor.
///
/// The five normalisations are the entry points: they check the lengths, walk the rows,
/// frames or groups, and call the hooks (the remaining methods, each documented as one).
/// Backends override hooks only, never an entry point; the hooks' defaults are the portable
/// code. Hooks are called only by the entry points, with the contract checked and at least
/// one value per row.
pub trait NormKernels: BackendType {
    /// LayerNorm of every row of a row-major `[rows, n]` matrix (frame-major
    /// `[frames, channels]` with `n = channels`): each row is normalised over its `n`
    /// values, then `y = x_hat * gamma + beta`.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * n`, `gamma` (or `beta`) does not hold `n`
    /// values, or `n == 0`.
    fn layer_norm_rows(rows: usize, n: usize, x: &[f32], p: NormParams<'_>, y: &mut [f32]) {
        check_rows("layer_norm_rows", rows, n, x, y, p.gamma);
        check_beta("layer_norm_rows", p.beta, n);
        for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
            let (mean, var) = mean_var::<Self>(xr);
            Self::normalize_row(xr, mean, Self::inv_std(var, p.eps), p, yr);
        }
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
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        check_channels("layer_norm_channels", channels, frames, x, y, p.gamma);
        check_beta("layer_norm_channels", p.beta, channels);
        if frames == 1 {
            // One frame: the column is contiguous, so it is a row (vectorised over channels).
            return Self::layer_norm_rows(1, channels, x, p, y);
        }
        let b = |f0| FrameBlock { channels, frames, f0 };
        frame_blocks(frames, |f0, width| match width {
            16 => Self::layer_norm_frames::<16>(b(f0), x, p, y),
            4 => Self::layer_norm_frames::<4>(b(f0), x, p, y),
            _ => Self::layer_norm_frames::<1>(b(f0), x, p, y),
        });
    }

    /// RMSNorm of every row of a row-major `[rows, n]` matrix (frame-major):
    /// `y = x / sqrt(mean(x^2) + eps) * gamma`, the mean over the row.
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * n`, `gamma.len() != n`, or `n == 0`.
    fn rms_norm_rows(rows: usize, n: usize, x: &[f32], gamma: &[f32], eps: f32, y: &mut [f32]) {
        check_rows("rms_norm_rows", rows, n, x, y, gamma);
        for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(n)) {
            let ss: f64 = xr.chunks(SUM_BLOCK).map(|b| Self::sum_sq(b) as f64).sum();
            Self::scale_row(xr, Self::inv_std((ss / n as f64) as f32, eps), gamma, yr);
        }
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
        let b = |f0| FrameBlock { channels, frames, f0 };
        frame_blocks(frames, |f0, width| match width {
            16 => Self::rms_norm_frames::<16>(b(f0), x, gamma, eps, y),
            4 => Self::rms_norm_frames::<4>(b(f0), x, gamma, eps, y),
            _ => Self::rms_norm_frames::<1>(b(f0), x, gamma, eps, y),
        });
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
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        check_group_norm(channels, frames, groups, x, y, p);
        let per_group = channels / groups;
        let glen = per_group * frames;
        for (g, (xg, yg)) in x.chunks_exact(glen).zip(y.chunks_exact_mut(glen)).enumerate() {
            let (mean, var) = mean_var::<Self>(xg);
            let inv = Self::inv_std(var, p.eps);
            scale_shift_channels::<Self>(g * per_group, (xg, yg), frames, (mean, inv), p);
        }
    }

    /// [`layer_norm_rows`](Self::layer_norm_rows) on `par`: blocks of rows (each row is
    /// normalised alone, so any context gives the same bits).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`layer_norm_rows`](Self::layer_norm_rows), before any task runs.
    fn layer_norm_rows_in(
        par: &dyn Parallel,
        (rows, n): (usize, usize),
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) -> Result<(), Error> {
        check_rows("layer_norm_rows", rows, n, x, y, p.gamma);
        check_beta("layer_norm_rows", p.beta, n);
        // Three passes over a row: about the cost of 3 multiply-adds per value.
        let split = Rows { shape: (rows, n, n), tile: 1, join_tail: false, work_per_row: 3 * n };
        row_blocks(par, split, y, |r, y| {
            Self::layer_norm_rows(r.len(), n, &x[r.start * n..r.end * n], p, y);
        })
    }

    /// [`rms_norm_rows`](Self::rms_norm_rows) on `par`: blocks of rows (each row is
    /// normalised alone, so any context gives the same bits).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`rms_norm_rows`](Self::rms_norm_rows), before any task runs.
    fn rms_norm_rows_in(
        par: &dyn Parallel,
        (rows, n): (usize, usize),
        x: &[f32],
        (gamma, eps): (&[f32], f32),
        y: &mut [f32],
    ) -> Result<(), Error> {
        check_rows("rms_norm_rows", rows, n, x, y, gamma);
        let split = Rows { shape: (rows, n, n), tile: 1, join_tail: false, work_per_row: 2 * n };
        row_blocks(par, split, y, |r, y| {
            Self::rms_norm_rows(r.len(), n, &x[r.start * n..r.end * n], gamma, eps, y);
        })
    }

    /// [`group_norm`](Self::group_norm) on `par`: each group's partial sums (blocks of
    /// 4096 values) in blocks of their own, added on the calling thread in the serial
    /// call's order (groups of up to 2,097,152 values; a larger group sums on the calling
    /// thread), then its rows normalised in blocks of channels: the same bits for any
    /// context.
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`group_norm`](Self::group_norm), before any task runs.
    fn group_norm_in(
        par: &dyn Parallel,
        (channels, frames, groups): (usize, usize, usize),
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) -> Result<(), Error> {
        check_group_norm(channels, frames, groups, x, y, p);
        let per_group = channels / groups;
        let glen = per_group * frames;
        for (g, (xg, yg)) in x.chunks_exact(glen).zip(y.chunks_exact_mut(glen)).enumerate() {
            let (mean, var) = mean_var_in::<Self>(par, xg)?;
            let inv = Self::inv_std(var, p.eps);
            let split = Rows {
                shape: (per_group, frames, frames),
                tile: 1,
                join_tail: false,
                work_per_row: frames,
            };
            row_blocks(par, split, yg, |r, yr| {
                let xr = &xg[r.start * frames..r.end * frames];
                let c0 = g * per_group + r.start;
                scale_shift_channels::<Self>(c0, (xr, yr), frames, (mean, inv), p);
            })?;
        }
        Ok(())
    }

    /// Hook: `sum(x - shift)` (a block of 1 to 4096 values).
    fn sum_shifted(x: &[f32], shift: f32) -> f32 {
        portable::sum_shifted(x, shift)
    }
    /// Hook: `sum(((x - shift) - m)^2)` (a block of 1 to 4096 values).
    fn sum_sq_dev(x: &[f32], mean: ShiftedMean) -> f32 {
        portable::sum_sq_dev(x, mean)
    }
    /// Hook: `sum(x^2)` (a block of 1 to 4096 values).
    fn sum_sq(x: &[f32]) -> f32 {
        portable::sum_sq(x)
    }
    /// Hook: `1 / sqrt(var + eps)`, correctly rounded square root and division (the same
    /// bits on every backend).
    fn inv_std(var: f32, eps: f32) -> f32 {
        inv_std(var, eps)
    }
    /// Hook: one LayerNorm row, `y = ((x - shift) - m) * inv * gamma + beta` with `gamma`,
    /// `beta` of `p` (`beta` treated as 0 when `None`; `p.eps` is already in `inv`; `y`,
    /// `gamma` and `beta` at least as long as `x`).
    fn normalize_row(x: &[f32], mean: ShiftedMean, inv: f32, p: NormParams<'_>, y: &mut [f32]) {
        portable::normalize_row(x, mean, inv, p, y)
    }
    /// Hook: one RMSNorm row, `y = x * inv * gamma`.
    fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
        portable::scale_row(x, inv, gamma, y)
    }
    /// Hook: one GroupNorm channel row, `y = ((x - shift) - m) * scale + bias` with scalar
    /// `scale` and `bias`.
    fn scale_shift_row(x: &[f32], mean: ShiftedMean, scale: f32, bias: f32, y: &mut [f32]) {
        portable::scale_shift_row(x, mean, scale, bias, y)
    }
    /// Hook: channel-first LayerNorm of the [`FrameBlock`] `b` (`W` = 16, 4 or 1 frames,
    /// `b.f0 + W <= b.frames`) of `x` into `y`.
    fn layer_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        portable::layer_norm_frames::<W>(b, x, p, y)
    }
    /// Hook: channel-first RMSNorm of the [`FrameBlock`] `b` (as
    /// [`layer_norm_frames`](Self::layer_norm_frames)).
    fn rms_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        portable::rms_norm_frames::<W>(b, x, gamma, eps, y)
    }
}

/// Values summed in f32 before a block's sum is added in f64 (rows and groups).
const SUM_BLOCK: usize = 4096;

fn check_rows(what: &str, rows: usize, n: usize, x: &[f32], y: &[f32], gamma: &[f32]) {
    check_lengths(what, [("rows", rows), ("n", n)], 1, (x, y, gamma));
}

fn check_beta(what: &str, beta: Option<&[f32]>, n: usize) {
    if let Some(b) = beta {
        assert_eq!(b.len(), n, "{what}: beta length");
    }
}

fn check_channels(what: &str, channels: usize, frames: usize, x: &[f32], y: &[f32], g: &[f32]) {
    check_lengths(what, [("channels", channels), ("frames", frames)], 0, (x, y, g));
}

/// The lengths contract of a norm over `dims[norm]` (the normalised axis, at least 1) of a
/// `dims[0] x dims[1]` tensor: `x` and `y` hold `dims[0] * dims[1]` values, `gamma` one a
/// normalised value. Panics naming `what` and the axes.
fn check_lengths(
    what: &str,
    dims: [(&str, usize); 2],
    norm: usize,
    (x, y, gamma): (&[f32], &[f32], &[f32]),
) {
    let [(a, rows), (b, cols)] = dims;
    let (name, n) = dims[norm];
    assert!(n > 0, "{what}: {name} must be >= 1");
    let len = rows.checked_mul(cols).unwrap_or_else(|| panic!("{a} * {b} overflows"));
    assert_eq!(x.len(), len, "{what}: x length");
    assert_eq!(y.len(), len, "{what}: y length");
    assert_eq!(gamma.len(), n, "{what}: gamma length");
}

/// The contract of [`NormKernels::group_norm`] (panics, as documented there).
fn check_group_norm(
    channels: usize,
    frames: usize,
    groups: usize,
    x: &[f32],
    y: &[f32],
    p: NormParams<'_>,
) {
    check_channels("group_norm", channels, frames, x, y, p.gamma);
    check_beta("group_norm", p.beta, channels);
    assert!(frames > 0, "group_norm: frames must be >= 1");
    assert!(
        groups > 0 && channels.is_multiple_of(groups),
        "group_norm: groups must divide channels"
    );
}

/// `sum(x - shift)` with the row reduction of `B` ([`NormKernels::sum_shifted`]) on blocks
/// of [`SUM_BLOCK`] values, the blocks added in f64 (also the global mean pool's sum).
pub(crate) fn sum_shifted_blocks<B: NormKernels>(x: &[f32], shift: f32) -> f64 {
    x.chunks(SUM_BLOCK).map(|b| B::sum_shifted(b, shift) as f64).sum()
}

/// Two-pass shifted mean and population variance of `x` (non-empty) with the row
/// reductions of `B`, blocks of [`SUM_BLOCK`] added in f64: `(mean, var)`.
fn mean_var<B: NormKernels>(x: &[f32]) -> (ShiftedMean, f32) {
    let n = x.len() as f64;
    let shift = x[0];
    let m = (sum_shifted_blocks::<B>(x, shift) / n) as f32;
    let mean = ShiftedMean { shift, m };
    let ss: f64 = x.chunks(SUM_BLOCK).map(|b| B::sum_sq_dev(b, mean) as f64).sum();
    (mean, (ss / n) as f32)
}

/// GroupNorm's output stage on consecutive channels `c0..` (rows of `frames` values of `x`
/// and `y`) of one group with statistics `(mean, inv)`:
/// `y = (x - mean) * inv * gamma[c] + beta[c]`.
fn scale_shift_channels<B: NormKernels>(
    c0: usize,
    (x, y): (&[f32], &mut [f32]),
    frames: usize,
    (mean, inv): (ShiftedMean, f32),
    p: NormParams<'_>,
) {
    for (k, (xr, yr)) in x.chunks_exact(frames).zip(y.chunks_exact_mut(frames)).enumerate() {
        let c = c0 + k;
        let bias = p.beta.map_or(0.0, |b| b[c]);
        B::scale_shift_row(xr, mean, inv * p.gamma[c], bias, yr);
    }
}

/// Blocks of [`SUM_BLOCK`] values whose partial sums [`mean_var_in`] keeps on the stack
/// (2 KiB): groups of up to 2,097,152 values.
const PARTIALS_MAX: usize = 512;

/// [`mean_var`] on `par`: the partial sum of every block of [`SUM_BLOCK`] values in blocks
/// of blocks, then added on the calling thread in order, as [`mean_var`] adds them: the
/// same bits for any context. Larger inputs than [`PARTIALS_MAX`] blocks run [`mean_var`].
///
/// # Errors
/// The context's ([`Parallel::dispatch`]).
fn mean_var_in<B: NormKernels>(par: &dyn Parallel, x: &[f32]) -> Result<(ShiftedMean, f32), Error> {
    let blocks = x.len().div_ceil(SUM_BLOCK);
    if par.workers() <= 1 || !(2..=PARTIALS_MAX).contains(&blocks) {
        return Ok(mean_var::<B>(x));
    }
    let mut partials = [0.0f32; PARTIALS_MAX];
    let partials = &mut partials[..blocks];
    let block = |i: usize| &x[i * SUM_BLOCK..x.len().min((i + 1) * SUM_BLOCK)];
    let split = Rows { shape: (blocks, 1, 1), tile: 1, join_tail: false, work_per_row: SUM_BLOCK };
    let n = x.len() as f64;
    let shift = x[0];
    row_blocks(par, split, partials, |r, p| {
        for (i, p) in r.zip(p) {
            *p = B::sum_shifted(block(i), shift);
        }
    })?;
    let sum: f64 = partials.iter().map(|&p| p as f64).sum();
    let mean = ShiftedMean { shift, m: (sum / n) as f32 };
    row_blocks(par, split, partials, |r, p| {
        for (i, p) in r.zip(p) {
            *p = B::sum_sq_dev(block(i), mean);
        }
    })?;
    let ss: f64 = partials.iter().map(|&p| p as f64).sum();
    Ok((mean, (ss / n) as f32))
}

/// The partition of `t` frames into blocks of 16, then 4, then 1 frames (the channel-first
/// kernels' vector widths): `block(f0, 16)` for `f0 = 0, 16, ...` while 16 frames remain,
/// then `block(f0, 4)`, then `block(f0, 1)`. Inlined, so that each call's width is a
/// constant.
#[inline(always)]
fn frame_blocks(t: usize, mut block: impl FnMut(usize, usize)) {
    let mut f0 = 0;
    while f0 + 16 <= t {
        block(f0, 16);
        f0 += 16;
    }
    while f0 + 4 <= t {
        block(f0, 4);
        f0 += 4;
    }
    while f0 < t {
        block(f0, 1);
        f0 += 1;
    }
}

impl NormKernels for Portable {}

impl<I: X86Isa> NormKernels for X86<I> {
    #[cfg(neon_x86)]
    fn layer_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        x86::layer_norm_frames::<I, W>(b, x, p, y)
    }
}
