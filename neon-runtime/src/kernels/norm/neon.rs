//! NEON normalisation hooks. Every function carries `#[target_feature(enable = "neon")]` so
//! the arithmetic intrinsics are safe to call inside; loads and stores go through [`ld`] and
//! [`st`], which check the slice length. NEON is part of the ARMv8-A baseline that the
//! `Neon` backend requires, which is what makes calling these functions sound.

// Explicit lane indexing over fixed-size arrays mirrors the SIMD lanes it compiles to.
#![allow(clippy::needless_range_loop)]

use core::arch::aarch64::*;

use super::{FrameBlock, NormKernels, NormParams, ShiftedMean};
use crate::kernels::Neon;

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
        fn $name(x: &[f32], s: f32, m: f32) -> f32 {
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
fn normalize_row(x: &[f32], mean: ShiftedMean, inv: f32, p: NormParams<'_>, y: &mut [f32]) {
    let (ShiftedMean { shift, m }, NormParams { gamma, beta, .. }) = (mean, p);
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
fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
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
fn inv_std1(var: f32, eps: f32) -> f32 {
    let v = vdup_n_f32(var + eps);
    vget_lane_f32::<0>(vdiv_f32(vdup_n_f32(1.0), vsqrt_f32(v)))
}

#[target_feature(enable = "neon")]
fn scale_shift_row(x: &[f32], mean: ShiftedMean, scale: f32, bias: f32, y: &mut [f32]) {
    let ShiftedMean { shift, m } = mean;
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
fn layer_norm_cf_vec<const V: usize>(b: FrameBlock, x: &[f32], p: NormParams<'_>, y: &mut [f32]) {
    let (c, t, f0) = (b.channels, b.frames, b.f0);
    let (gamma, beta, eps) = (p.gamma, p.beta, p.eps);
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

/// Channel-first RMSNorm of the `4 * V` frames starting at `f0`.
#[inline]
#[target_feature(enable = "neon")]
fn rms_norm_cf_vec<const V: usize>(
    b: FrameBlock,
    x: &[f32],
    gamma: &[f32],
    eps: f32,
    y: &mut [f32],
) {
    let (c, t, f0) = (b.channels, b.frames, b.f0);
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

// SAFETY (for every `unsafe` call below): the callees only require the `neon` target
// feature, which is part of the ARMv8-A baseline the `Neon` backend is built for; they
// check their own bounds.
impl NormKernels for Neon {
    fn sum_shifted(x: &[f32], shift: f32) -> f32 {
        // SAFETY: NEON is available (see above).
        unsafe { sum_shifted(x, shift, 0.0) }
    }
    fn sum_sq_dev(x: &[f32], mean: ShiftedMean) -> f32 {
        // SAFETY: NEON is available (see above).
        unsafe { sum_sq_dev(x, mean.shift, mean.m) }
    }
    fn sum_sq(x: &[f32]) -> f32 {
        // SAFETY: NEON is available (see above).
        unsafe { sum_sq(x, 0.0, 0.0) }
    }
    fn inv_std(var: f32, eps: f32) -> f32 {
        // SAFETY: NEON is available (see above).
        unsafe { inv_std1(var, eps) }
    }
    fn normalize_row(x: &[f32], mean: ShiftedMean, inv: f32, p: NormParams<'_>, y: &mut [f32]) {
        // SAFETY: NEON is available (see above).
        unsafe { normalize_row(x, mean, inv, p, y) }
    }
    fn scale_row(x: &[f32], inv: f32, gamma: &[f32], y: &mut [f32]) {
        // SAFETY: NEON is available (see above).
        unsafe { scale_row(x, inv, gamma, y) }
    }
    fn scale_shift_row(x: &[f32], mean: ShiftedMean, scale: f32, bias: f32, y: &mut [f32]) {
        // SAFETY: NEON is available (see above).
        unsafe { scale_shift_row(x, mean, scale, bias, y) }
    }
    fn layer_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        // 16 and 4 frames in vectors; a single frame (a strided column cannot fill a vector;
        // a single-frame tensor never gets here, it is normalised as a contiguous row) with
        // the portable code.
        match W {
            // SAFETY: NEON is available (see above).
            16 => unsafe { layer_norm_cf_vec::<4>(b, x, p, y) },
            // SAFETY: NEON is available (see above).
            4 => unsafe { layer_norm_cf_vec::<1>(b, x, p, y) },
            _ => super::portable::layer_norm_frames::<W>(b, x, p, y),
        }
    }
    fn rms_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        gamma: &[f32],
        eps: f32,
        y: &mut [f32],
    ) {
        match W {
            // SAFETY: NEON is available (see above).
            16 => unsafe { rms_norm_cf_vec::<4>(b, x, gamma, eps, y) },
            // SAFETY: NEON is available (see above).
            4 => unsafe { rms_norm_cf_vec::<1>(b, x, gamma, eps, y) },
            _ => super::portable::rms_norm_frames::<W>(b, x, gamma, eps, y),
        }
    }
}
