//! NEON trigonometric kernels: the `float32x4_t` forms (same algorithm and constants as
//! `portable.rs`) and their slice drivers (four lanes per step, a partial vector through a
//! stack buffer). Intrinsics are called from functions without `#[target_feature]`, which
//! is sound because `kernels/backend.rs` requires NEON to be enabled statically.

use super::consts::*;
use super::TrigKernels;
use crate::kernels::activation::consts::ROUND_MAGIC;
use crate::kernels::activation::neon::exp;
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `(sin x, cos x)` per lane.
#[inline(always)]
pub(crate) fn sin_cos(x: float32x4_t) -> (float32x4_t, float32x4_t) {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let magic = vdupq_n_f32(ROUND_MAGIC);
        let v = vfmaq_f32(magic, x, vdupq_n_f32(FRAC_2_PI));
        let n = vsubq_f32(v, magic);
        let r = vfmsq_f32(x, n, vdupq_n_f32(PIO2_HI));
        let r = vfmsq_f32(r, n, vdupq_n_f32(PIO2_MID));
        let r = vfmsq_f32(r, n, vdupq_n_f32(PIO2_LO));
        let r2 = vmulq_f32(r, r);
        let mut sp = vdupq_n_f32(SIN_P[3]);
        sp = vfmaq_f32(vdupq_n_f32(SIN_P[2]), sp, r2);
        sp = vfmaq_f32(vdupq_n_f32(SIN_P[1]), sp, r2);
        sp = vfmaq_f32(vdupq_n_f32(SIN_P[0]), sp, r2);
        let s = vfmaq_f32(r, vmulq_f32(r, r2), sp);
        let mut cp = vdupq_n_f32(COS_P[4]);
        cp = vfmaq_f32(vdupq_n_f32(COS_P[3]), cp, r2);
        cp = vfmaq_f32(vdupq_n_f32(COS_P[2]), cp, r2);
        cp = vfmaq_f32(vdupq_n_f32(COS_P[1]), cp, r2);
        cp = vfmaq_f32(vdupq_n_f32(COS_P[0]), cp, r2);
        let c = vfmaq_f32(vdupq_n_f32(1.0), r2, cp);
        let q = vreinterpretq_u32_f32(v);
        let swap = vtstq_u32(q, vdupq_n_u32(1));
        let a = vbslq_f32(swap, c, s);
        let b = vbslq_f32(swap, s, c);
        let two = vdupq_n_u32(2);
        let sign_a = vshlq_n_u32::<30>(vandq_u32(q, two));
        let sign_b = vshlq_n_u32::<30>(vandq_u32(vaddq_u32(q, vdupq_n_u32(1)), two));
        (
            vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(a), sign_a)),
            vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(b), sign_b)),
        )
    }
}

/// `(m cos p, m sin p)` per lane, `m = exp(min(l, max_log))` (`fmin` propagates NaN).
#[inline(always)]
fn log_polar(max_log: float32x4_t, l: float32x4_t, p: float32x4_t) -> (float32x4_t, float32x4_t) {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let m = exp(vminq_f32(l, max_log));
        let (s, c) = sin_cos(p);
        (vmulq_f32(m, c), vmulq_f32(m, s))
    }
}

/// `(out_a[i], out_b[i]) = f(a[i], b[i])` for `a`, `b` read from `ra`, `rb` (4 lanes per step,
/// a partial vector through stack buffers). All four slices have the same length.
#[inline(always)]
fn map2(
    ra: &[f32],
    rb: &[f32],
    wa: &mut [f32],
    wb: &mut [f32],
    f: impl Fn(float32x4_t, float32x4_t) -> (float32x4_t, float32x4_t),
) {
    let len = ra.len();
    assert!(rb.len() == len && wa.len() == len && wb.len() == len);
    let mut i = 0;
    while i + 4 <= len {
        // SAFETY: i + 4 <= len for all four slices (asserted above).
        unsafe {
            let (a, b) = f(vld1q_f32(ra.as_ptr().add(i)), vld1q_f32(rb.as_ptr().add(i)));
            vst1q_f32(wa.as_mut_ptr().add(i), a);
            vst1q_f32(wb.as_mut_ptr().add(i), b);
        }
        i += 4;
    }
    if i < len {
        let k = len - i;
        let (mut a, mut b) = ([0.0f32; 4], [0.0f32; 4]);
        a[..k].copy_from_slice(&ra[i..]);
        b[..k].copy_from_slice(&rb[i..]);
        // SAFETY: `a` and `b` hold 4 floats each.
        unsafe {
            let (va, vb) = f(vld1q_f32(a.as_ptr()), vld1q_f32(b.as_ptr()));
            vst1q_f32(a.as_mut_ptr(), va);
            vst1q_f32(b.as_mut_ptr(), vb);
        }
        wa[i..].copy_from_slice(&a[..k]);
        wb[i..].copy_from_slice(&b[..k]);
    }
}

impl TrigKernels for Neon {
    fn sin_cos_unchecked(x: &[f32], sin: &mut [f32], cos: &mut [f32]) {
        // The second input lane is unused (x twice).
        map2(x, x, sin, cos, |v, _| sin_cos(v));
    }

    fn from_log_polar_unchecked(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        // SAFETY: register-only; NEON is statically enabled.
        let mx = unsafe { vdupq_n_f32(max_log) };
        let len = a.len();
        // In place: each 4-lane step reads a block before writing it.
        let (pa, pb) = (a.as_mut_ptr(), b.as_mut_ptr());
        let mut i = 0;
        while i + 4 <= len {
            // SAFETY: i + 4 <= len = a.len() = b.len() (the entry point's contract).
            unsafe {
                let (x, y) = log_polar(mx, vld1q_f32(pa.add(i)), vld1q_f32(pb.add(i)));
                vst1q_f32(pa.add(i), x);
                vst1q_f32(pb.add(i), y);
            }
            i += 4;
        }
        if i < len {
            let k = len - i;
            let (mut ta, mut tb) = ([0.0f32; 4], [0.0f32; 4]);
            ta[..k].copy_from_slice(&a[i..]);
            tb[..k].copy_from_slice(&b[i..]);
            // SAFETY: `ta` and `tb` hold 4 floats each.
            unsafe {
                let (x, y) = log_polar(mx, vld1q_f32(ta.as_ptr()), vld1q_f32(tb.as_ptr()));
                vst1q_f32(ta.as_mut_ptr(), x);
                vst1q_f32(tb.as_mut_ptr(), y);
            }
            a[i..].copy_from_slice(&ta[..k]);
            b[i..].copy_from_slice(&tb[..k]);
        }
    }
}
