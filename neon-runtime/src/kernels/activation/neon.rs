//! NEON activation kernels: the `float32x4_t` forms of the approximations (same algorithm
//! and constants as the scalar forms in `portable.rs`) and the slice drivers. Reused by the
//! softmax and attention kernels and by the elementwise kernels.
//!
//! The code calls `core::arch::aarch64` intrinsics from functions without
//! `#[target_feature]` (so that they can be `#[inline(always)]`); that is sound only when the
//! target enables NEON statically, which `kernels/backend.rs` enforces with a
//! `compile_error!`.

use super::consts::*;
use super::{Activation, ActivationKernels, MapArgs};
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `r + r^2 P(r)`.
#[inline(always)]
pub(crate) fn expm1_poly(r: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled (checked by the
    // compile_error! in kernels/backend.rs).
    unsafe { vfmaq_f32(r, vmulq_f32(r, r), horner(r, &EXPM1_P)) }
}

/// `c[0] + x (c[1] + x (... + x c[N - 1]))` per lane, by Horner's rule (one fused
/// multiply-add per coefficient after the last). `N >= 1`. The polynomial forms here and in
/// `trig` evaluate through it.
#[inline(always)]
pub(crate) fn horner<const N: usize>(x: float32x4_t, c: &[f32; N]) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let mut p = vdupq_n_f32(c[N - 1]);
        for &ci in c[..N - 1].iter().rev() {
            p = vfmaq_f32(vdupq_n_f32(ci), p, x);
        }
        p
    }
}

/// Range reduction by a constant split `hi + lo`: `(v, n, r)` with `n = round(x * inv)`
/// (as `v = x * inv + ROUND_MAGIC`, `n` in the low bits of `v`) and `r = x - n hi - n lo`.
/// Shared by [`reduce`] (`ln 2`) and `trig` (`pi/2`, which subtracts a third part).
#[inline(always)]
pub(crate) fn round_reduce(
    x: float32x4_t,
    inv: f32,
    (hi, lo): (f32, f32),
) -> (float32x4_t, float32x4_t, float32x4_t) {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let magic = vdupq_n_f32(ROUND_MAGIC);
        let v = vfmaq_f32(magic, x, vdupq_n_f32(inv));
        let n = vsubq_f32(v, magic);
        let r = vfmsq_f32(x, n, vdupq_n_f32(hi));
        let r = vfmsq_f32(r, n, vdupq_n_f32(lo));
        (v, n, r)
    }
}

/// Range reduction, as `portable::reduce`: `(v, r)`, `n` in the low bits of `v`.
#[inline(always)]
fn reduce(x: float32x4_t) -> (float32x4_t, float32x4_t) {
    let (v, _, r) = round_reduce(x, LOG2E, (LN2_HI, LN2_LO));
    (v, r)
}

/// `exp(x)`.
#[inline(always)]
pub(crate) fn exp(x: float32x4_t) -> float32x4_t {
    let (v, r) = reduce(x);
    let p = expm1_poly(r);
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let q = vaddq_f32(p, vdupq_n_f32(1.0));
        let y = vreinterpretq_f32_u32(vaddq_u32(
            vreinterpretq_u32_f32(q),
            vshlq_n_u32::<23>(vreinterpretq_u32_f32(v)),
        ));
        let y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(0.0), y);
        let inf = vaddq_f32(x, vdupq_n_f32(f32::INFINITY));
        vbslq_f32(vcleq_f32(x, vdupq_n_f32(EXP_HI)), y, inf)
    }
}

/// `(t, p)`: `t = 2^n`, `p = expm1(r)`, as `portable::exp_parts`.
#[inline(always)]
fn exp_parts(x: float32x4_t) -> (float32x4_t, float32x4_t) {
    let (v, r) = reduce(x);
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    let t = unsafe {
        vreinterpretq_f32_u32(vaddq_u32(
            vshlq_n_u32::<23>(vreinterpretq_u32_f32(v)),
            vdupq_n_u32(0x3f80_0000),
        ))
    };
    (t, expm1_poly(r))
}

/// `tanh(x)`.
#[inline(always)]
pub(crate) fn tanh(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let a = vabsq_f32(x);
        // vminq propagates NaN, like the portable compare-and-select.
        let z = vminq_f32(vaddq_f32(a, a), vdupq_n_f32(TANH_ZMAX));
        let (t, p) = exp_parts(z);
        let e = vfmaq_f32(vsubq_f32(t, vdupq_n_f32(1.0)), t, p);
        let y = vdivq_f32(e, vaddq_f32(e, vdupq_n_f32(2.0)));
        vbslq_f32(vdupq_n_u32(0x8000_0000), x, y)
    }
}

/// `1 / (1 + exp(-x))`.
#[inline(always)]
pub(crate) fn sigmoid(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let e = exp(vnegq_f32(vabsq_f32(x)));
        let one = vdupq_n_f32(1.0);
        let num = vbslq_f32(vcltzq_f32(x), e, one);
        vdivq_f32(num, vaddq_f32(one, e))
    }
}

/// `x * sigmoid(x)`.
#[inline(always)]
pub(crate) fn silu(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vmulq_f32(vmaxq_f32(x, vdupq_n_f32(GATE_XMIN)), sigmoid(x)) }
}

/// GELU, tanh form, as `x * sigmoid(x (K0 + K1 x^2))`.
#[inline(always)]
pub(crate) fn gelu_tanh(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let t = vfmaq_f32(vdupq_n_f32(GELU_K0), vdupq_n_f32(GELU_K1), vmulq_f32(x, x));
        let s = sigmoid(vmulq_f32(x, t));
        vmulq_f32(vmaxq_f32(x, vdupq_n_f32(GATE_XMIN)), s)
    }
}

/// `a H(a)`, as `portable::erf_exponent`.
#[inline(always)]
fn erf_exponent(a: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vmulq_f32(a, horner(a, &ERF_H)) }
}

/// `erf(z)`.
#[inline(always)]
pub(crate) fn erf(z: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let a = vabsq_f32(z);
        let one = vdupq_n_f32(1.0);
        let (t, p) = exp_parts(vnegq_f32(erf_exponent(a)));
        let r = vfmsq_f32(vsubq_f32(one, t), t, p);
        let r = vbslq_f32(vcgeq_f32(a, vdupq_n_f32(ERF_SAT)), one, r);
        vbslq_f32(vdupq_n_u32(0x8000_0000), z, r)
    }
}

/// GELU, erf form, as `portable::gelu_erf`.
#[inline(always)]
pub(crate) fn gelu_erf(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let a = vmulq_n_f32(vabsq_f32(x), FRAC_1_SQRT_2);
        let (t, p) = exp_parts(vnegq_f32(erf_exponent(a)));
        let e = vfmaq_f32(t, t, p);
        let e = vbslq_f32(vcgeq_f32(a, vdupq_n_f32(ERF_SAT)), vdupq_n_f32(0.0), e);
        // vmaxq / vminq propagate NaN like the portable compare-and-select clamp.
        let xc = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-GELU_ERF_XMAX)), vdupq_n_f32(GELU_ERF_XMAX));
        let hx = vmulq_n_f32(xc, 0.5);
        vbslq_f32(vcltzq_f32(x), vmulq_f32(hx, e), vfmsq_f32(x, hx, e))
    }
}

/// Log reduction, as `portable::log_reduce`: `(n, f)`, `x = 2^n (1 + f)`.
#[inline(always)]
fn log_reduce(x: float32x4_t) -> (float32x4_t, float32x4_t) {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let sub = vcltq_f32(x, vdupq_n_f32(f32::MIN_POSITIVE));
        let xs = vbslq_f32(sub, vmulq_n_f32(x, TWO23), x);
        let bits = vreinterpretq_s32_f32(xs);
        let e = vshrq_n_s32::<23>(vsubq_s32(bits, vdupq_n_s32(LOG_OFF as i32)));
        let m = vreinterpretq_f32_s32(vsubq_s32(bits, vshlq_n_s32::<23>(e)));
        // 23 where the input was scaled, else 0.
        let adj = vreinterpretq_f32_u32(vandq_u32(sub, vreinterpretq_u32_f32(vdupq_n_f32(23.0))));
        let n = vsubq_f32(vcvtq_f32_s32(e), adj);
        (n, vsubq_f32(m, vdupq_n_f32(1.0)))
    }
}

/// `f + f^2 Q(f)`.
#[inline(always)]
fn log1p_poly(f: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vfmaq_f32(f, vmulq_f32(f, f), horner(f, &LOG_Q)) }
}

/// Special values, as `portable::log_special`.
#[inline(always)]
fn log_special(x: float32x4_t, r: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe {
        let inf = vdupq_n_f32(f32::INFINITY);
        let r = vbslq_f32(vceqq_f32(x, inf), inf, r);
        let r = vbslq_f32(vceqzq_f32(x), vdupq_n_f32(f32::NEG_INFINITY), r);
        // x >= 0 is false for negative x and for NaN.
        vbslq_f32(vcgezq_f32(x), r, vdupq_n_f32(f32::NAN))
    }
}

/// `ln(x)`.
#[inline(always)]
pub(crate) fn ln(x: float32x4_t) -> float32x4_t {
    let (n, f) = log_reduce(x);
    let l = log1p_poly(f);
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    let r = unsafe { vfmaq_f32(vfmaq_f32(l, n, vdupq_n_f32(LN2_LO)), n, vdupq_n_f32(LN2_HI)) };
    log_special(x, r)
}

/// `log10(x)`.
#[inline(always)]
pub(crate) fn log10(x: float32x4_t) -> float32x4_t {
    let (n, f) = log_reduce(x);
    let l = log1p_poly(f);
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    let r = unsafe {
        let t = vfmaq_f32(vmulq_n_f32(l, LOG10_E), n, vdupq_n_f32(LOG10_2_LO));
        vfmaq_f32(t, n, vdupq_n_f32(LOG10_2_HI))
    };
    log_special(x, r)
}

/// `max(x, 0)` (`fmax`: NaN propagates, `-0 -> +0`).
#[inline(always)]
pub(crate) fn relu(x: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vmaxq_f32(x, vdupq_n_f32(0.0)) }
}

/// `max(x, min)` (`fmax`).
#[inline(always)]
pub(crate) fn clamp_min(x: float32x4_t, min: f32) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vmaxq_f32(x, vdupq_n_f32(min)) }
}

/// Leaky ReLU (compare and select, as the portable code).
#[inline(always)]
pub(crate) fn leaky_relu(x: float32x4_t, slope: f32) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
    unsafe { vbslq_f32(vcltzq_f32(x), vmulq_n_f32(x, slope), x) }
}

/// Applies `f` to one partial vector of `x.len() < 4` lanes through a stack buffer
/// (the padding lanes are 0 and their results are discarded by the caller).
#[inline(always)]
fn tail(x: &[f32], f: &impl Fn(float32x4_t) -> float32x4_t) -> [f32; 4] {
    debug_assert!(x.len() < 4);
    let mut buf = [0.0f32; 4];
    buf[..x.len()].copy_from_slice(x);
    // SAFETY: `buf` holds 4 f32; NEON is statically enabled.
    unsafe { vst1q_f32(buf.as_mut_ptr(), f(vld1q_f32(buf.as_ptr()))) };
    buf
}

/// `x[i] = f(x[i])`: 16 floats (4 independent vectors) per step, then single vectors,
/// then a partial vector.
#[inline(always)]
pub(crate) fn map(x: &mut [f32], f: impl Fn(float32x4_t) -> float32x4_t) {
    let mut c16 = x.chunks_exact_mut(16);
    for c in &mut c16 {
        // SAFETY: `c` has exactly 16 elements (4 vectors); NEON is statically enabled.
        unsafe {
            let v = vld1q_f32_x4(c.as_ptr());
            let r = float32x4x4_t(f(v.0), f(v.1), f(v.2), f(v.3));
            vst1q_f32_x4(c.as_mut_ptr(), r);
        }
    }
    let mut c4 = c16.into_remainder().chunks_exact_mut(4);
    for c in &mut c4 {
        // SAFETY: `c` has exactly 4 elements; NEON is statically enabled.
        unsafe { vst1q_f32(c.as_mut_ptr(), f(vld1q_f32(c.as_ptr()))) };
    }
    let rest = c4.into_remainder();
    if !rest.is_empty() {
        let r = tail(rest, &f);
        let n = rest.len();
        rest.copy_from_slice(&r[..n]);
    }
}

/// `y[i] = f(x[i])` (`x.len() == y.len()`, checked by the callers).
#[inline(always)]
pub(crate) fn map_to(x: &[f32], y: &mut [f32], f: impl Fn(float32x4_t) -> float32x4_t) {
    let mut x16 = x.chunks_exact(16);
    let mut y16 = y.chunks_exact_mut(16);
    for (a, b) in (&mut x16).zip(&mut y16) {
        // SAFETY: `a` and `b` have exactly 16 elements; NEON is statically enabled.
        unsafe {
            let v = vld1q_f32_x4(a.as_ptr());
            let r = float32x4x4_t(f(v.0), f(v.1), f(v.2), f(v.3));
            vst1q_f32_x4(b.as_mut_ptr(), r);
        }
    }
    let mut x4 = x16.remainder().chunks_exact(4);
    let mut y4 = y16.into_remainder().chunks_exact_mut(4);
    for (a, b) in (&mut x4).zip(&mut y4) {
        // SAFETY: `a` and `b` have exactly 4 elements; NEON is statically enabled.
        unsafe { vst1q_f32(b.as_mut_ptr(), f(vld1q_f32(a.as_ptr()))) };
    }
    let (xr, yr) = (x4.remainder(), y4.into_remainder());
    if !xr.is_empty() {
        yr.copy_from_slice(&tail(xr, &f)[..xr.len()]);
    }
}

/// [`map`] or [`map_to`], as `io` says.
#[inline(always)]
pub(crate) fn map_args(io: MapArgs<'_>, f: impl Fn(float32x4_t) -> float32x4_t) {
    match io {
        MapArgs::InPlace(x) => map(x, f),
        MapArgs::To(x, y) => map_to(x, y, f),
    }
}

impl ActivationKernels for Neon {
    fn activate_unchecked(f: Activation, io: MapArgs<'_>) {
        activate_with_forms!(f, io)
    }
}
