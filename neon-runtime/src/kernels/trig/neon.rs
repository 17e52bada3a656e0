//! NEON trigonometric kernels: the `float32x4_t` forms (same algorithm and constants as
//! `portable.rs`) and their slice drivers (four lanes per step, a partial vector through a
//! stack buffer). Intrinsics are called from functions without `#[target_feature]`, which
//! is sound because `kernels/backend.rs` requires NEON to be enabled statically.

use super::consts::*;
use super::TrigKernels;
use crate::kernels::activation::neon::{exp, horner, round_reduce};
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `(sin x, cos x)` per lane.
#[inline(always)]
pub(crate) fn sin_cos(x: float32x4_t) -> (float32x4_t, float32x4_t) {
    let (v, n, r) = round_reduce(x, FRAC_2_PI, (PIO2_HI, PIO2_MID));
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let r = vfmsq_f32(r, n, vdupq_n_f32(PIO2_LO));
        let r2 = vmulq_f32(r, r);
        let s = vfmaq_f32(r, vmulq_f32(r, r2), horner(r2, &SIN_P));
        let c = vfmaq_f32(vdupq_n_f32(1.0), r2, horner(r2, &COS_P));
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

/// `(wa[i], wb[i]) = f(ra[i], rb[i])` for `i < len` (4 lanes per step, a partial vector
/// through stack buffers).
///
/// # Safety
/// `ra`, `rb` are readable and `wa`, `wb` writable for `len` floats. A written range may be
/// the same memory as a read one (in place: each step reads its block before writing it);
/// no other overlap.
#[inline(always)]
unsafe fn map2(
    (ra, rb): (*const f32, *const f32),
    (wa, wb): (*mut f32, *mut f32),
    len: usize,
    f: impl Fn(float32x4_t, float32x4_t) -> (float32x4_t, float32x4_t),
) {
    let mut i = 0;
    while i + 4 <= len {
        // SAFETY: i + 4 <= len, in bounds of all four ranges (the caller's contract).
        unsafe {
            let (a, b) = f(vld1q_f32(ra.add(i)), vld1q_f32(rb.add(i)));
            vst1q_f32(wa.add(i), a);
            vst1q_f32(wb.add(i), b);
        }
        i += 4;
    }
    if i < len {
        let k = len - i;
        let (mut a, mut b) = ([0.0f32; 4], [0.0f32; 4]);
        // SAFETY: the last `k` floats of each range (the caller's contract), and `a`, `b`
        // hold 4 floats each on the stack (no overlap with the ranges).
        unsafe {
            core::ptr::copy_nonoverlapping(ra.add(i), a.as_mut_ptr(), k);
            core::ptr::copy_nonoverlapping(rb.add(i), b.as_mut_ptr(), k);
            let (va, vb) = f(vld1q_f32(a.as_ptr()), vld1q_f32(b.as_ptr()));
            vst1q_f32(a.as_mut_ptr(), va);
            vst1q_f32(b.as_mut_ptr(), vb);
            core::ptr::copy_nonoverlapping(a.as_ptr(), wa.add(i), k);
            core::ptr::copy_nonoverlapping(b.as_ptr(), wb.add(i), k);
        }
    }
}

impl TrigKernels for Neon {
    fn sin_cos_unchecked(x: &[f32], sin: &mut [f32], cos: &mut [f32]) {
        let len = x.len();
        assert!(sin.len() == len && cos.len() == len);
        // SAFETY: the three slices hold `len` floats; `sin` and `cos` are distinct `&mut`.
        // The second input lane is unused (x twice).
        unsafe {
            map2((x.as_ptr(), x.as_ptr()), (sin.as_mut_ptr(), cos.as_mut_ptr()), len, |v, _| {
                sin_cos(v)
            })
        };
    }

    fn from_log_polar_unchecked(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        // SAFETY: register-only; NEON is statically enabled.
        let mx = unsafe { vdupq_n_f32(max_log) };
        let len = a.len();
        let (pa, pb) = (a.as_mut_ptr(), b.as_mut_ptr());
        // SAFETY: len = a.len() = b.len() (the entry point's contract), and `a`, `b` are
        // distinct; each is read and written in place, which `map2` allows.
        unsafe { map2((pa, pb), (pa, pb), len, |l, p| log_polar(mx, l, p)) };
    }
}
