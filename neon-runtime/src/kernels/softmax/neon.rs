//! The NEON softmax of one row: 16-lane partial maxima and sums (four registers), the
//! runtime's vector exponential, a padded 4-lane tail.

use super::SoftmaxKernels;
use crate::kernels::activation::neon::{exp, map};
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `acc[j] = f(acc[j], v.j)` for the four registers of a 16-lane step: the body shared by
/// the reductions below (partial maxima, partial sums).
#[inline(always)]
fn fold4(
    acc: &mut [float32x4_t; 4],
    v: float32x4x4_t,
    f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
) {
    *acc = [f(acc[0], v.0), f(acc[1], v.1), f(acc[2], v.2), f(acc[3], v.3)];
}

/// Max of a row; `vmaxq` propagates NaN, so a NaN anywhere gives `m = NaN` (a NaN row).
fn row_max(x: &[f32]) -> f32 {
    let mut c16 = x.chunks_exact(16);
    // SAFETY: every load below reads a chunk of exactly the loaded length; NEON is
    // statically enabled (compile-time check in activation.rs).
    unsafe {
        let ninf = vdupq_n_f32(f32::NEG_INFINITY);
        let mut m4 = [ninf; 4];
        for ch in &mut c16 {
            fold4(&mut m4, vld1q_f32_x4(ch.as_ptr()), |a, v| vmaxq_f32(a, v));
        }
        let mut c4 = c16.remainder().chunks_exact(4);
        for ch in &mut c4 {
            m4[0] = vmaxq_f32(m4[0], vld1q_f32(ch.as_ptr()));
        }
        let [m0, m1, m2, m3] = m4;
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
        let mut s = [z; 4];
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
            fold4(&mut s, e, |a, v| vaddq_f32(a, v));
        }
        let mut c4 = c16.into_remainder().chunks_exact_mut(4);
        for ch in &mut c4 {
            let e = exp(vsubq_f32(vld1q_f32(ch.as_ptr()), mv));
            vst1q_f32(ch.as_mut_ptr(), e);
            s[0] = vaddq_f32(s[0], e);
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
            s[1] = vaddq_f32(s[1], e);
        }
        let [s0, s1, s2, s3] = s;
        vaddvq_f32(vaddq_f32(vaddq_f32(s0, s2), vaddq_f32(s1, s3)))
    }
}

impl SoftmaxKernels for Neon {
    #[inline]
    fn softmax_row(y: &mut [f32]) {
        let m = row_max(y);
        let s = exp_sum(y, m);
        let inv = 1.0 / s;
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        map(y, |v| unsafe { vmulq_n_f32(v, inv) });
    }
}
