//! The NEON rotation of one head: `ld2`/`st2` de-interleave the interleaved pairs, the
//! half-split pairs are two contiguous vectors, 4 pairs per step with one fused
//! multiply-add per value; the last 1..=3 pairs go through a stack buffer so every lane is
//! computed the same way.

use super::{RotaryKernels, RotaryPairs, SinCos, HALF_MAX};
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `(a c - b s, b c + a s)` lane by lane (one fused multiply-add each): the rotation of
/// `a + i b` by the angle of `c + i s`. The FFT's twiddle product uses it too.
#[inline(always)]
pub(crate) fn rotate(
    a: float32x4_t,
    b: float32x4_t,
    c: float32x4_t,
    s: float32x4_t,
) -> (float32x4_t, float32x4_t) {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled (compile_error!
    // in kernels/mod.rs).
    unsafe { (vfmsq_f32(vmulq_f32(a, c), b, s), vfmaq_f32(vmulq_f32(b, c), a, s)) }
}

/// Interleaved pairs `(2i, 2i + 1)` of `head[..2 * half]`.
///
/// # Safety
/// `2 * half <= head.len()` and `half <= HALF_MAX`.
#[inline(always)]
unsafe fn interleaved(head: &mut [f32], sin: &[f32; HALF_MAX], cos: &[f32; HALF_MAX], half: usize) {
    let full = half / 4 * 4;
    let mut i = 0;
    while i < full {
        // SAFETY: `2 * (i + 4) <= 2 * half <= head.len()` and `i + 4 <= half <= HALF_MAX`
        // for the tables (contract).
        unsafe {
            let p = head.as_mut_ptr().add(2 * i);
            let x = vld2q_f32(p);
            let (c, s) = (vld1q_f32(cos.as_ptr().add(i)), vld1q_f32(sin.as_ptr().add(i)));
            let (a, b) = rotate(x.0, x.1, c, s);
            vst2q_f32(p, float32x4x2_t(a, b));
        }
        i += 4;
    }
    if full < half {
        // The last 1..=3 pairs through a buffer (padding lanes are discarded). The
        // tables are read at `full..full + 4 <= HALF_MAX` (half < HALF_MAX here, and
        // `full` is a multiple of 4): entries past `half` are stale or zero, unused.
        let n = 2 * (half - full);
        let mut buf = [0.0f32; 8];
        buf[..n].copy_from_slice(&head[2 * full..2 * half]);
        // SAFETY: `buf` holds 8 values; `full + 4 <= HALF_MAX` (see above).
        unsafe {
            let x = vld2q_f32(buf.as_ptr());
            let (c, s) = (vld1q_f32(cos.as_ptr().add(full)), vld1q_f32(sin.as_ptr().add(full)));
            let (a, b) = rotate(x.0, x.1, c, s);
            vst2q_f32(buf.as_mut_ptr(), float32x4x2_t(a, b));
        }
        head[2 * full..2 * half].copy_from_slice(&buf[..n]);
    }
}

/// Half-split pairs `(i, i + half)` of `head[..2 * half]`.
///
/// # Safety
/// As [`interleaved`].
#[inline(always)]
unsafe fn half_split(head: &mut [f32], sin: &[f32; HALF_MAX], cos: &[f32; HALF_MAX], half: usize) {
    let full = half / 4 * 4;
    let mut i = 0;
    while i < full {
        // SAFETY: `half + i + 4 <= 2 half <= head.len()`; `i + 4 <= half <= HALF_MAX`.
        unsafe {
            let p = head.as_mut_ptr().add(i);
            let q = head.as_mut_ptr().add(half + i);
            let (c, s) = (vld1q_f32(cos.as_ptr().add(i)), vld1q_f32(sin.as_ptr().add(i)));
            let (a, b) = rotate(vld1q_f32(p), vld1q_f32(q), c, s);
            vst1q_f32(p, a);
            vst1q_f32(q, b);
        }
        i += 4;
    }
    if full < half {
        let n = half - full;
        let (mut ba, mut bb) = ([0.0f32; 4], [0.0f32; 4]);
        ba[..n].copy_from_slice(&head[full..half]);
        bb[..n].copy_from_slice(&head[half + full..2 * half]);
        // SAFETY: the buffers hold 4 values; `full + 4 <= HALF_MAX` as in `interleaved`.
        unsafe {
            let (c, s) = (vld1q_f32(cos.as_ptr().add(full)), vld1q_f32(sin.as_ptr().add(full)));
            let (a, b) = rotate(vld1q_f32(ba.as_ptr()), vld1q_f32(bb.as_ptr()), c, s);
            vst1q_f32(ba.as_mut_ptr(), a);
            vst1q_f32(bb.as_mut_ptr(), b);
        }
        head[full..half].copy_from_slice(&ba[..n]);
        head[half + full..2 * half].copy_from_slice(&bb[..n]);
    }
}

impl RotaryKernels for Neon {
    #[inline]
    unsafe fn rotary_head(head: &mut [f32], t: &SinCos, pairs: RotaryPairs) {
        // SAFETY: the hook's contract is the functions' (`2 half <= head.len()`, `half <=
        // HALF_MAX`).
        unsafe {
            match pairs {
                RotaryPairs::Interleaved => interleaved(head, &t.sin, &t.cos, t.half),
                RotaryPairs::HalfSplit => half_split(head, &t.sin, &t.cos, t.half),
            }
        }
    }
}
