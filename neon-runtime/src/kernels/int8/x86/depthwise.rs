//! The AVX2 depthwise conv2d with depth multiplier 1: the portable loop
//! ([`depthwise_dm1_with`]: per output pixel, channels in chunks on the stack, each tap
//! walked once per chunk) with blocks of 8 channels in AVX2 registers: `x - x_zp` and `w`
//! sign-extended to i16 (`vpmovsxbw`), their product in i16 (`vpmullw`: at most `255 * 128`
//! in magnitude, exact), sign-extended to i32 and added to the accumulators; the output
//! stage of whole blocks of 8 is [`Stage8`]. Every sum wraps, as the portable kernel's.

use super::super::portable::{depthwise_dm1_with, DepthwisePieces};
use super::super::{DepthwiseGeometry, LayerQuant};
use super::stage::Stage8;
use core::arch::x86_64::*;

/// The AVX2 pieces of the depthwise loop (only built where the CPU has AVX2).
struct Avx2Depthwise {
    /// The input zero point in 8 i16 lanes.
    zp: __m128i,
}

impl DepthwisePieces for Avx2Depthwise {
    fn mla_blocks(&self, acc: &mut [i32], x: &[i8], w: &[i8]) {
        // SAFETY: the value exists only where the CPU has AVX2 (`depthwise`'s contract).
        unsafe { mla_blocks(acc, x, w, self.zp) }
    }

    fn stage8(
        &self,
        q: &LayerQuant<'_>,
        (c0, channels): (usize, usize),
        acc: &[i32],
        y: &mut [i8],
    ) {
        assert!(acc.len() >= 8 && y.len() >= 8, "a block of 8 channels");
        // SAFETY: AVX2 as above; `acc` and `y` hold 8 values each (asserted).
        unsafe {
            let stage = Stage8::new(&q.out, &q.weights, c0, channels);
            stage.store(_mm256_loadu_si256(acc.as_ptr().cast()), y.as_mut_ptr());
        }
    }
}

/// Depthwise conv2d with depth multiplier 1 (checked arguments).
///
/// # Safety
/// The CPU has AVX2.
pub(super) unsafe fn depthwise(g: &DepthwiseGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    // SAFETY: AVX2 (this function's contract); `x_zp` is in the int8 range (checked), so it
    // fits i16.
    let zp = unsafe { set1_epi16(q.x_zp as i16) };
    depthwise_dm1_with(g, x, q, y, &Avx2Depthwise { zp });
}

/// `_mm_set1_epi16`, compiled with AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
unsafe fn set1_epi16(v: i16) -> __m128i {
    _mm_set1_epi16(v)
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
