//! The AVX2 depthwise conv2d with depth multiplier 1: per output pixel, channels in chunks
//! of [`DW_BLOCK`] on the stack, each tap walked once per chunk, its channels in blocks of
//! 8: `x - x_zp` and `w` sign-extended to i16 (`vpmovsxbw`), their product in i16
//! (`vpmullw`: at most `255 * 128` in magnitude, exact), sign-extended to i32 and added to
//! the accumulators; the last `C mod 8` channels scalar in the same walk. The output stage
//! of whole blocks of 8 is [`Stage8`], the rest the portable one. Every sum wraps, as the
//! portable kernel's.

use super::super::portable::{finish, pixels, DW_BLOCK};
use super::super::{DepthwiseGeometry, LayerQuant, ROUNDING_BLOCK};
use super::stage::Stage8;
use core::arch::x86_64::*;

/// Depthwise conv2d with depth multiplier 1 (checked arguments).
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn depthwise(g: &DepthwiseGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    let c = g.window.channels;
    let body = c - c % ROUNDING_BLOCK;
    let LayerQuant { x_zp, weights: w, out } = q;
    // `x_zp` is in the int8 range (checked), so it fits i16.
    let zp = _mm_set1_epi16(x_zp as i16);
    for (px, y) in pixels(&g.window).zip(y.chunks_exact_mut(c)) {
        for c0 in (0..c).step_by(DW_BLOCK) {
            let n = DW_BLOCK.min(c - c0);
            // The chunk's channels in whole blocks of 8 (c0 is a multiple of 8).
            let vector = body.saturating_sub(c0).min(n);
            let mut acc = [0i32; DW_BLOCK];
            let acc = &mut acc[..n];
            for (j, acc) in acc.iter_mut().enumerate() {
                *acc = w.bias(c0 + j);
            }
            px.for_each_tap(&g.window, |t, i| {
                let (xs, ws) = (&x[i * c + c0..][..n], &w.filter[t * c + c0..][..n]);
                let (head, tail) = acc.split_at_mut(vector);
                // SAFETY: AVX2 (this function's contract).
                unsafe { mla_blocks(head, xs, ws, zp) };
                for ((acc, &x), &w) in tail.iter_mut().zip(&xs[vector..]).zip(&ws[vector..]) {
                    *acc = acc.wrapping_add((i32::from(x) - x_zp) * i32::from(w));
                }
            });
            let (yv, yt) = y[c0..c0 + n].split_at_mut(vector);
            for (b, (y, acc)) in yv.chunks_exact_mut(8).zip(acc.chunks_exact(8)).enumerate() {
                // SAFETY: AVX2; `acc` and `y` hold 8 values each.
                unsafe {
                    let stage = Stage8::new(&out, &w, c0 + 8 * b, c);
                    stage.store(_mm256_loadu_si256(acc.as_ptr().cast()), y.as_mut_ptr());
                }
            }
            for (j, (y, &acc)) in yt.iter_mut().zip(&acc[vector..]).enumerate() {
                *y = finish(&out, &w, (c0 + vector + j, c), acc);
            }
        }
    }
}

/// `acc += (x - x_zp) * w` over whole blocks of 8 values of `acc`; `x` and `w` at least as
/// long as `acc`; `zp` holds `x_zp` in 8 i16 lanes.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn mla_blocks(acc: &mut [i32], x: &[i8], w: &[i8], zp: __m128i) {
    for ((acc, x), w) in acc.chunks_exact_mut(8).zip(x.chunks_exact(8)).zip(w.chunks_exact(8)) {
        // SAFETY: each chunk holds 8 values (8 bytes of `x` and `w`, 8 i32 of `acc`).
        unsafe {
            let xv = _mm_sub_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(x.as_ptr().cast())), zp);
            let wv = _mm_cvtepi8_epi16(_mm_loadl_epi64(w.as_ptr().cast()));
            let p = _mm256_cvtepi16_epi32(_mm_mullo_epi16(xv, wv));
            let a = _mm256_loadu_si256(acc.as_ptr().cast());
            _mm256_storeu_si256(acc.as_mut_ptr().cast(), _mm256_add_epi32(a, p));
        }
    }
}
