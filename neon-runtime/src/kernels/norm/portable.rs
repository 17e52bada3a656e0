//! Portable normalisation hooks: row reductions over 16 independent f32 lanes (LLVM
//! vectorises them), row outputs, and the channel-first blocks of `W` frames (one lane per
//! frame).

// Explicit lane indexing over fixed-size arrays mirrors the SIMD lanes it compiles to.
#![allow(clippy::needless_range_loop)]

use super::{inv_std, FrameBlock, NormParams, ShiftedMean};

/// Independent f32 accumulators in the portable sums (4 NEON / 2 AVX vectors).
const LANES: usize = 16;

/// Sum of the lanes, in order. (A pairwise tree here makes LLVM's SLP vectoriser pick
/// 2-lane vectors for the whole loop on aarch64; the order of 16 terms hardly matters.)
#[inline(always)]
fn hsum(a: [f32; LANES]) -> f32 {
    a.iter().fold(0.0, |s, &v| s + v)
}

pub(super) fn sum_shifted(x: &[f32], shift: f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut it = x.chunks_exact(LANES);
    for c in &mut it {
        for j in 0..LANES {
            acc[j] += c[j] - shift;
        }
    }
    it.remainder().iter().fold(hsum(acc), |s, &v| s + (v - shift))
}

pub(super) fn sum_sq_dev(x: &[f32], mean: ShiftedMean) -> f32 {
    let ShiftedMean { shift, m } = mean;
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

pub(super) fn sum_sq(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut it = x.chunks_exact(LANES);
    for c in &mut it {
        for j in 0..LANES {
            acc[j] += c[j] * c[j];
        }
    }
    it.remainder().iter().fold(hsum(acc), |s, &v| s + v * v)
}

pub(super) fn normalize_row(
    x: &[f32],
    mean: ShiftedMean,
    inv: f32,
    p: NormParams<'_>,
    y: &mut [f32],
) {
    let (ShiftedMean { shift, m }, NormParams { gamma, beta, .. }) = (mean, p);
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

pub(super) fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
    for (o, (&v, &g)) in y.iter_mut().zip(x.iter().zip(gamma)) {
        *o = v * inv * g;
    }
}

pub(super) fn scale_shift_row(x: &[f32], mean: ShiftedMean, scale: f32, bias: f32, y: &mut [f32]) {
    let ShiftedMean { shift, m } = mean;
    for (o, &v) in y.iter_mut().zip(x) {
        *o = ((v - shift) - m) * scale + bias;
    }
}

/// Portable channel-first LayerNorm of the `W` frames starting at `f0`.
#[inline(always)]
pub(super) fn layer_norm_frames<const W: usize>(
    b: FrameBlock,
    x: &[f32],
    p: NormParams<'_>,
    y: &mut [f32],
) {
    let (c, t, f0) = (b.channels, b.frames, b.f0);
    let (gamma, beta, eps) = (p.gamma, p.beta, p.eps);
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
pub(super) fn rms_norm_frames<const W: usize>(
    b: FrameBlock,
    x: &[f32],
    gamma: &[f32],
    eps: f32,
    y: &mut [f32],
) {
    let (c, t, f0) = (b.channels, b.frames, b.f0);
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
