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

/// Where a head of `half` pairs keeps them: the layout-specific loads, stores and tail
/// copies of [`rotate_head`], which holds the loop once for both layouts.
trait Layout {
    /// The two vectors `(a, b)` of pairs `i..i + 4` of the head at `p`.
    ///
    /// # Safety
    /// Those pairs lie within the head at `p`.
    unsafe fn load(p: *const f32, i: usize, half: usize) -> (float32x4_t, float32x4_t);
    /// Stores `(a, b)` as pairs `i..i + 4` of the head at `p` (the inverse of `load`).
    ///
    /// # Safety
    /// As [`load`](Self::load), and `p` is writable.
    unsafe fn store(p: *mut f32, i: usize, half: usize, a: float32x4_t, b: float32x4_t);
    /// The values of pairs `full..half` (1 to 3 pairs) as at most two runs `(start in the
    /// head, start in a buffer laid out as a head of 4 pairs, length)`; an unused run is
    /// empty.
    fn tail_runs(full: usize, half: usize) -> [(usize, usize, usize); 2];
}

/// Interleaved pairs `(2i, 2i + 1)` (`ld2`/`st2`).
struct Interleaved;

impl Layout for Interleaved {
    #[inline(always)]
    unsafe fn load(p: *const f32, i: usize, _half: usize) -> (float32x4_t, float32x4_t) {
        // SAFETY: values `2 i..2 i + 8` are in the head (the caller's contract).
        let x = unsafe { vld2q_f32(p.add(2 * i)) };
        (x.0, x.1)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, i: usize, _half: usize, a: float32x4_t, b: float32x4_t) {
        // SAFETY: as in `load`.
        unsafe { vst2q_f32(p.add(2 * i), float32x4x2_t(a, b)) }
    }
    #[inline(always)]
    fn tail_runs(full: usize, half: usize) -> [(usize, usize, usize); 2] {
        [(2 * full, 0, 2 * (half - full)), (0, 0, 0)]
    }
}

/// Half-split pairs `(i, i + half)` (two contiguous vectors).
struct HalfSplit;

impl Layout for HalfSplit {
    #[inline(always)]
    unsafe fn load(p: *const f32, i: usize, half: usize) -> (float32x4_t, float32x4_t) {
        // SAFETY: values `i..i + 4` and `half + i..half + i + 4` are in the head (the
        // caller's contract).
        unsafe { (vld1q_f32(p.add(i)), vld1q_f32(p.add(half + i))) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, i: usize, half: usize, a: float32x4_t, b: float32x4_t) {
        // SAFETY: as in `load`.
        unsafe {
            vst1q_f32(p.add(i), a);
            vst1q_f32(p.add(half + i), b);
        }
    }
    #[inline(always)]
    fn tail_runs(full: usize, half: usize) -> [(usize, usize, usize); 2] {
        let n = half - full;
        [(full, 0, n), (half + full, 4, n)]
    }
}

/// Rotates the pairs of `head[..2 * half]`, laid out as `L` says.
///
/// # Safety
/// `2 * half <= head.len()` and `half <= HALF_MAX`.
#[inline(always)]
unsafe fn rotate_head<L: Layout>(
    head: &mut [f32],
    sin: &[f32; HALF_MAX],
    cos: &[f32; HALF_MAX],
    half: usize,
) {
    let full = half / 4 * 4;
    let mut i = 0;
    while i < full {
        // SAFETY: pairs `i..i + 4` lie in `head[..2 * half]` (`i + 4 <= half`,
        // `2 * half <= head.len()`), and `i + 4 <= half <= HALF_MAX` for the tables
        // (contract).
        unsafe {
            let p = head.as_mut_ptr();
            let (x, y) = L::load(p, i, half);
            let (c, s) = (vld1q_f32(cos.as_ptr().add(i)), vld1q_f32(sin.as_ptr().add(i)));
            let (a, b) = rotate(x, y, c, s);
            L::store(p, i, half, a, b);
        }
        i += 4;
    }
    if full < half {
        // The last 1..=3 pairs through a buffer laid out as a head of 4 pairs (padding
        // lanes are discarded). The tables are read at `full..full + 4 <= HALF_MAX`
        // (half < HALF_MAX here, and `full` is a multiple of 4): entries past `half` are
        // stale or zero, unused.
        let mut buf = [0.0f32; 8];
        let runs = L::tail_runs(full, half);
        for (h, b, n) in runs {
            buf[b..b + n].copy_from_slice(&head[h..h + n]);
        }
        // SAFETY: `buf` holds the 4 pairs of a head with `half = 4`; `full + 4 <= HALF_MAX`
        // (see above).
        unsafe {
            let (x, y) = L::load(buf.as_ptr(), 0, 4);
            let (c, s) = (vld1q_f32(cos.as_ptr().add(full)), vld1q_f32(sin.as_ptr().add(full)));
            let (a, b) = rotate(x, y, c, s);
            L::store(buf.as_mut_ptr(), 0, 4, a, b);
        }
        for (h, b, n) in runs {
            head[h..h + n].copy_from_slice(&buf[b..b + n]);
        }
    }
}

impl RotaryKernels for Neon {
    #[inline]
    unsafe fn rotary_head(head: &mut [f32], t: &SinCos, pairs: RotaryPairs) {
        // SAFETY: the hook's contract is the functions' (`2 half <= head.len()`, `half <=
        // HALF_MAX`).
        unsafe {
            match pairs {
                RotaryPairs::Interleaved => {
                    rotate_head::<Interleaved>(head, &t.sin, &t.cos, t.half)
                }
                RotaryPairs::HalfSplit => rotate_head::<HalfSplit>(head, &t.sin, &t.cos, t.half),
            }
        }
    }
}
