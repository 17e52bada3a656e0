//! Softmax over the last axis of a row-major `[rows, cols]` tensor.
//!
//! Numerically stable: each row is shifted by its maximum before exponentiation
//! (`y[j] = exp(x[j] - m) / sum_k exp(x[k] - m)`, `m = max_k x[k]`), so no exponential
//! overflows and the largest term is exactly 1. The exponential is the one of the activation
//! kernels (`kernels/activation.rs`, max relative error ~1.5e-7); the row sum is accumulated in
//! 8 (portable) or 16 (NEON) independent f32 partial sums, and the row is scaled by the
//! reciprocal of the sum. Error per element, relative: a few eps for the exponential and the
//! scaling, plus `|x[j] - m| * eps / 2` from rounding the shifted argument, plus the
//! summation error (`<= (cols / 8 + 4) eps / 2` worst case; far less in practice).
//!
//! # Special values
//! Rows are expected to be finite. `-inf` entries (masked logits) give exactly 0 as long as
//! the row has a finite entry; a row that contains NaN or `+inf`, or only `-inf`, comes out
//! as all NaN (like the f64 formula).

use super::activation::scalar;
use super::{BackendType, Portable, X86Isa, X86};

/// Softmax kernels.
pub trait SoftmaxKernels: BackendType {
    /// Softmax of every row of `x` (`[rows, cols]`, row-major), in place.
    ///
    /// # Panics
    /// When `x.len() != rows * cols`.
    fn softmax(x: &mut [f32], rows: usize, cols: usize) {
        check(x.len(), rows, cols);
        if cols == 0 {
            return;
        }
        for row in x.chunks_exact_mut(cols) {
            portable_row(row);
        }
    }
    /// Softmax of every row of `x` into `y` (both `[rows, cols]`, row-major).
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * cols`.
    fn softmax_to(x: &[f32], y: &mut [f32], rows: usize, cols: usize) {
        check(x.len(), rows, cols);
        check(y.len(), rows, cols);
        y.copy_from_slice(x);
        Self::softmax(y, rows, cols);
    }
}

fn check(x_len: usize, rows: usize, cols: usize) {
    assert_eq!(rows.checked_mul(cols), Some(x_len), "softmax: data length is not rows * cols");
}

/// Width of the partial maxima / sums of the portable code.
const LANES: usize = 8;

/// Portable: max of a row (NaN entries are skipped here; they turn the row into NaN later,
/// through `exp(NaN - m)` and the sum).
fn portable_row_max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut c = x.chunks_exact(LANES);
    for ch in &mut c {
        for i in 0..LANES {
            acc[i] = if ch[i] > acc[i] { ch[i] } else { acc[i] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in acc.iter().chain(c.remainder()) {
        m = if v > m { v } else { m };
    }
    m
}

/// Portable: `y[j] = exp(x[j] - m)` (x and y may be the same row: see callers), returns the
/// sum.
fn portable_exp_sum(y: &mut [f32], m: f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut c = y.chunks_exact_mut(LANES);
    for ch in &mut c {
        for i in 0..LANES {
            let e = scalar::exp(ch[i] - m);
            ch[i] = e;
            acc[i] += e;
        }
    }
    let mut tail = 0.0f32;
    for v in c.into_remainder() {
        let e = scalar::exp(*v - m);
        *v = e;
        tail += e;
    }
    // Pairwise combine of the partial sums.
    let s4 = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

fn portable_row(y: &mut [f32]) {
    let m = portable_row_max(y);
    let s = portable_exp_sum(y, m);
    let inv = 1.0 / s;
    super::activation::portable_map(y, |v| v * inv);
}

impl SoftmaxKernels for Portable {}

impl<I: X86Isa> SoftmaxKernels for X86<I> {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_impl {
    use super::super::activation::neon::{exp, map};
    use super::super::Neon;
    use super::{check, SoftmaxKernels};
    use core::arch::aarch64::*;

    /// Max of a row; `vmaxq` propagates NaN, so a NaN anywhere gives `m = NaN` (a NaN row).
    fn row_max(x: &[f32]) -> f32 {
        let mut c16 = x.chunks_exact(16);
        // SAFETY: every load below reads a chunk of exactly the loaded length; NEON is
        // statically enabled (compile-time check in activation.rs).
        unsafe {
            let ninf = vdupq_n_f32(f32::NEG_INFINITY);
            let (mut m0, mut m1, mut m2, mut m3) = (ninf, ninf, ninf, ninf);
            for ch in &mut c16 {
                let v = vld1q_f32_x4(ch.as_ptr());
                m0 = vmaxq_f32(m0, v.0);
                m1 = vmaxq_f32(m1, v.1);
                m2 = vmaxq_f32(m2, v.2);
                m3 = vmaxq_f32(m3, v.3);
            }
            let mut c4 = c16.remainder().chunks_exact(4);
            for ch in &mut c4 {
                m0 = vmaxq_f32(m0, vld1q_f32(ch.as_ptr()));
            }
            let mut m = vmaxvq_f32(vmaxq_f32(vmaxq_f32(m0, m1), vmaxq_f32(m2, m3)));
            for &v in c4.remainder() {
                // Same NaN propagation as vmaxq for the scalar tail.
                m = if v.is_nan() || m.is_nan() { f32::NAN } else { m.max(v) };
            }
            m
        }
    }

    /// `y[j] = exp(y[j] - m)`, returns the sum.
    fn exp_sum(y: &mut [f32], m: f32) -> f32 {
        // SAFETY: every load/store below touches a chunk (or stack buffer) of exactly the
        // accessed length; NEON is statically enabled.
        unsafe {
            let mv = vdupq_n_f32(m);
            let z = vdupq_n_f32(0.0);
            let (mut s0, mut s1, mut s2, mut s3) = (z, z, z, z);
            let mut c16 = y.chunks_exact_mut(16);
            for ch in &mut c16 {
                let v = vld1q_f32_x4(ch.as_ptr());
                let e = float32x4x4_t(
                    exp(vsubq_f32(v.0, mv)),
                    exp(vsubq_f32(v.1, mv)),
                    exp(vsubq_f32(v.2, mv)),
                    exp(vsubq_f32(v.3, mv)),
                );
                vst1q_f32_x4(ch.as_mut_ptr(), e);
                s0 = vaddq_f32(s0, e.0);
                s1 = vaddq_f32(s1, e.1);
                s2 = vaddq_f32(s2, e.2);
                s3 = vaddq_f32(s3, e.3);
            }
            let mut c4 = c16.into_remainder().chunks_exact_mut(4);
            for ch in &mut c4 {
                let e = exp(vsubq_f32(vld1q_f32(ch.as_ptr()), mv));
                vst1q_f32(ch.as_mut_ptr(), e);
                s0 = vaddq_f32(s0, e);
            }
            let rest = c4.into_remainder();
            if !rest.is_empty() {
                // Pad with -inf: exp(-inf - m) = 0 adds nothing to the sum (for finite m).
                let mut buf = [f32::NEG_INFINITY; 4];
                buf[..rest.len()].copy_from_slice(rest);
                let e = exp(vsubq_f32(vld1q_f32(buf.as_ptr()), mv));
                vst1q_f32(buf.as_mut_ptr(), e);
                let n = rest.len();
                rest.copy_from_slice(&buf[..n]);
                s1 = vaddq_f32(s1, e);
            }
            vaddvq_f32(vaddq_f32(vaddq_f32(s0, s2), vaddq_f32(s1, s3)))
        }
    }

    fn row(y: &mut [f32]) {
        let m = row_max(y);
        let s = exp_sum(y, m);
        let inv = 1.0 / s;
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        map(y, |v| unsafe { vmulq_n_f32(v, inv) });
    }

    impl SoftmaxKernels for Neon {
        fn softmax(x: &mut [f32], rows: usize, cols: usize) {
            check(x.len(), rows, cols);
            if cols == 0 {
                return;
            }
            for r in x.chunks_exact_mut(cols) {
                row(r);
            }
        }
        fn softmax_to(x: &[f32], y: &mut [f32], rows: usize, cols: usize) {
            check(x.len(), rows, cols);
            check(y.len(), rows, cols);
            y.copy_from_slice(x);
            Self::softmax(y, rows, cols);
        }
    }
}
