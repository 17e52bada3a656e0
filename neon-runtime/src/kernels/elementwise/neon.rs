//! NEON elementwise kernels: drivers for two- and three-input maps (16 floats per step, then
//! vectors, then a partial vector through a stack buffer) and the hook overrides. Lengths
//! are checked by the entry points.
//!
//! Every closure below is register-only NEON arithmetic; NEON is statically enabled
//! (compile-time check in `kernels/backend.rs`), which is what the SAFETY comments refer to.

use super::{ElementwiseKernels, ZipArgs};
use crate::kernels::activation::neon::{map, map_args};
use crate::kernels::activation::MapArgs;
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// Loads `x.len() < 4` values into a zero-padded vector.
#[inline(always)]
fn load_partial(x: &[f32]) -> float32x4_t {
    debug_assert!(x.len() < 4);
    let mut buf = [0.0f32; 4];
    buf[..x.len()].copy_from_slice(x);
    // SAFETY: `buf` holds 4 f32; NEON is statically enabled (see kernels/backend.rs).
    unsafe { vld1q_f32(buf.as_ptr()) }
}

/// Stores the first `y.len() < 4` lanes of `v` into `y`.
#[inline(always)]
fn store_partial(y: &mut [f32], v: float32x4_t) {
    debug_assert!(y.len() < 4);
    let mut buf = [0.0f32; 4];
    // SAFETY: `buf` holds 4 f32; NEON is statically enabled.
    unsafe { vst1q_f32(buf.as_mut_ptr(), v) };
    let n = y.len();
    y.copy_from_slice(&buf[..n]);
}

/// `out[i] = f(a[i], b[i])` for `i < n`: 16 floats per step, then vectors, then a partial
/// vector through a stack buffer.
///
/// # Safety
/// `a` and `b` are readable and `out` writable for `n` floats; `out` may be `a` (in place:
/// each step reads its block before writing it), no other overlap.
#[inline(always)]
unsafe fn zip_raw(
    (a, b, out): (*const f32, *const f32, *mut f32),
    n: usize,
    f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
) {
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: i + 16 <= n (the caller's contract); NEON statically enabled.
        unsafe {
            let u = vld1q_f32_x4(a.add(i));
            let v = vld1q_f32_x4(b.add(i));
            let r = float32x4x4_t(f(u.0, v.0), f(u.1, v.1), f(u.2, v.2), f(u.3, v.3));
            vst1q_f32_x4(out.add(i), r);
        }
        i += 16;
    }
    while i + 4 <= n {
        // SAFETY: i + 4 <= n (the caller's contract); NEON statically enabled.
        unsafe { vst1q_f32(out.add(i), f(vld1q_f32(a.add(i)), vld1q_f32(b.add(i)))) };
        i += 4;
    }
    if i < n {
        // SAFETY: the last `n - i < 4` floats of each range (the caller's contract); the
        // slices of the inputs are dead before `out`'s is made.
        unsafe {
            let k = n - i;
            let r = f(
                load_partial(core::slice::from_raw_parts(a.add(i), k)),
                load_partial(core::slice::from_raw_parts(b.add(i), k)),
            );
            store_partial(core::slice::from_raw_parts_mut(out.add(i), k), r);
        }
    }
}

/// `out[i] = f(a[i], b[i])`.
#[inline(always)]
fn zip(a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t) {
    let n = out.len();
    assert!(a.len() == n && b.len() == n);
    // SAFETY: the three slices hold `n` floats; `out` is a distinct `&mut`.
    unsafe { zip_raw((a.as_ptr(), b.as_ptr(), out.as_mut_ptr()), n, f) }
}

/// `acc[i] = f(acc[i], b[i])`.
#[inline(always)]
fn zip_assign(acc: &mut [f32], b: &[f32], f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t) {
    let n = acc.len();
    assert!(b.len() == n);
    let p = acc.as_mut_ptr();
    // SAFETY: both slices hold `n` floats; `acc` is read and written in place, which
    // `zip_raw` allows, and `b` is a shared borrow distinct from it.
    unsafe { zip_raw((p, b.as_ptr(), p), n, f) }
}

/// `acc[i] = f(acc[i], x[i], s[i])` (three inputs, one of them updated).
#[inline(always)]
fn zip3_assign(
    acc: &mut [f32],
    x: &[f32],
    s: &[f32],
    f: impl Fn(float32x4_t, float32x4_t, float32x4_t) -> float32x4_t,
) {
    let mut a16 = acc.chunks_exact_mut(16);
    let mut x16 = x.chunks_exact(16);
    let mut s16 = s.chunks_exact(16);
    for ((a, u), w) in (&mut a16).zip(&mut x16).zip(&mut s16) {
        // SAFETY: the three chunks have exactly 16 elements; NEON statically enabled.
        unsafe {
            let p = vld1q_f32_x4(a.as_ptr());
            let q = vld1q_f32_x4(u.as_ptr());
            let r = vld1q_f32_x4(w.as_ptr());
            let o = float32x4x4_t(
                f(p.0, q.0, r.0),
                f(p.1, q.1, r.1),
                f(p.2, q.2, r.2),
                f(p.3, q.3, r.3),
            );
            vst1q_f32_x4(a.as_mut_ptr(), o);
        }
    }
    let mut a4 = a16.into_remainder().chunks_exact_mut(4);
    let mut x4 = x16.remainder().chunks_exact(4);
    let mut s4 = s16.remainder().chunks_exact(4);
    for ((a, u), w) in (&mut a4).zip(&mut x4).zip(&mut s4) {
        // SAFETY: the three chunks have exactly 4 elements; NEON statically enabled.
        unsafe {
            let r = f(vld1q_f32(a.as_ptr()), vld1q_f32(u.as_ptr()), vld1q_f32(w.as_ptr()));
            vst1q_f32(a.as_mut_ptr(), r);
        }
    }
    let (ar, xr, sr) = (a4.into_remainder(), x4.remainder(), s4.remainder());
    if !ar.is_empty() {
        let r = f(load_partial(ar), load_partial(xr), load_partial(sr));
        store_partial(ar, r);
    }
}

/// [`zip`] or [`zip_assign`], as `io` says.
#[inline(always)]
fn zip_args(io: ZipArgs<'_>, f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t) {
    match io {
        ZipArgs::Assign(acc, b) => zip_assign(acc, b, f),
        ZipArgs::To(a, b, out) => zip(a, b, out, f),
    }
}

impl ElementwiseKernels for Neon {
    fn add_unchecked(io: ZipArgs<'_>) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        zip_args(io, |x, y| unsafe { vaddq_f32(x, y) })
    }
    fn mul_unchecked(io: ZipArgs<'_>) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        zip_args(io, |x, y| unsafe { vmulq_f32(x, y) })
    }
    fn scale_unchecked(io: MapArgs<'_>, s: f32) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        map_args(io, |v| unsafe { vmulq_n_f32(v, s) })
    }
    fn scale_shift_unchecked(io: MapArgs<'_>, s: f32, b: f32) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        map_args(io, |v| unsafe { vfmaq_n_f32(vdupq_n_f32(b), v, s) })
    }
    fn add_scalar_unchecked(x: &mut [f32], b: f32) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        map(x, |v| unsafe { vaddq_f32(v, vdupq_n_f32(b)) })
    }
    fn add_scaled_unchecked(acc: &mut [f32], x: &[f32], s: f32) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        zip_assign(acc, x, |a, v| unsafe { vfmaq_n_f32(a, v, s) })
    }
    fn add_mul_unchecked(acc: &mut [f32], x: &[f32], s: &[f32]) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        zip3_assign(acc, x, s, |a, v, s| unsafe { vfmaq_f32(a, v, s) })
    }
    fn mul_add_unchecked(x: &mut [f32], s: &[f32], b: &[f32]) {
        // SAFETY: register-only NEON arithmetic, NEON statically enabled.
        zip3_assign(x, s, b, |v, s, b| unsafe { vfmaq_f32(b, v, s) })
    }
}
