//! The x86-64 FFT-family kernels (`X86<I>`), SSE only (the x86-64 baseline, so every level
//! runs them):
//! - the magnitudes of a split spectrum with the SSE square root (`sqrtps`, IEEE's
//!   correctly rounded square root): the portable code's bits, four lanes per instruction
//!   instead of the software square root, a noticeable part of a Silero VAD window
//!   (`BENCHMARKS.md`, "Host: ours vs ONNX Runtime (x86-64, one thread)");
//! - step 1 of the transform (load, first two stages, bit-reversed stores) four `b` at a
//!   time, with a 4x4 transpose, and the inverse transform's pre-processing and final
//!   interleave four `k` (`j`) at a time: the scalar loops of the portable code, which the
//!   inverse real FFT of the sanoTTS iSTFT runs per frame. The code is NEON's (`simd.rs`,
//!   generic over `FftLanes`); without fused multiply-adds (not in the baseline) its
//!   operations are the portable code's, in its order, so the results are the portable
//!   code's bits (`tests/fft.rs`, `tests/irfft.rs` assert it).
//!
//! The radix-2 stages and the forward post-processing run the portable code (its loops
//! vectorise).

use super::FftKernels;
#[cfg(neon_x86)]
use super::{simd, simd::FftLanes, RealFft};
use crate::kernels::{X86Isa, X86};
#[cfg(neon_x86)]
use core::arch::x86_64::*;

impl<I: X86Isa> FftKernels for X86<I> {
    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn rfft_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
        let m = re.len();
        // SAFETY: the caller guarantees x has 2m floats, re and im m each, m a power of two
        // >= 16; the spectrum does not alias x (& vs &mut).
        unsafe { simd::first_pass::<__m128>(x.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr(), m) }
    }

    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn irfft_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
        simd::inverse_pre::<__m128>(fft, re, im, x);
        // The pair k = 0 as the portable code computes it (the vector lane gives the same
        // value but for the sign of a zero): the portable code's bits.
        let m = re.len() - 1;
        let g = 1.0 / fft.len() as f32;
        x[0] = g * (re[0] - re[m]);
        x[1] = g * (re[0] + re[m]);
    }

    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn irfft_interleave(re: &[f32], im: &[f32], x: &mut [f32]) {
        // SAFETY: the caller's contract (the hook's).
        unsafe { simd::interleave_swapped::<__m128>(re, im, x) }
    }

    #[cfg(neon_x86)]
    unsafe fn magnitude_spectrum_unchecked(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
        #[inline(always)]
        fn step(a: __m128, b: __m128) -> __m128 {
            // SAFETY: SSE2 is part of every x86-64 target (the cfg above). Both squares and
            // the sum rounded, no fused multiply-add (see the trait).
            unsafe { _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(a, a), _mm_mul_ps(b, b))) }
        }
        // SAFETY: re, im and magnitude have the same length (the caller's contract).
        unsafe { super::map_pairs(re, im, magnitude, step) }
    }
}

#[cfg(neon_x86)]
impl super::Lanes4 for __m128 {
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: `p` is readable for 4 floats (the caller's contract); unaligned load,
        // SSE is part of every x86-64 target.
        unsafe { _mm_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: `p` is writable for 4 floats (the caller's contract); unaligned store.
        unsafe { _mm_storeu_ps(p, v) }
    }
}

// SAFETY (every block below): register-only SSE/SSE2 operations, or unaligned loads and
// stores within the caller's contract; both are part of every x86-64 target.
#[cfg(neon_x86)]
impl FftLanes for __m128 {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_mul_ps(a, b) }
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        // SAFETY: see above.
        unsafe { _mm_set1_ps(v) }
    }
    /// Both products rounded (no FMA in the baseline): the portable code's bits.
    #[inline(always)]
    fn mul_sub(a: Self, b: Self, c: Self, d: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_sub_ps(_mm_mul_ps(a, b), _mm_mul_ps(c, d)) }
    }
    /// Both products rounded (no FMA in the baseline): the portable code's bits.
    #[inline(always)]
    fn mul_add(a: Self, b: Self, c: Self, d: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_add_ps(_mm_mul_ps(a, b), _mm_mul_ps(c, d)) }
    }
    #[inline(always)]
    fn zero_lane0(v: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_move_ss(v, _mm_setzero_ps()) }
    }
    #[inline(always)]
    fn reverse(v: Self) -> Self {
        // SAFETY: see above.
        unsafe { _mm_shuffle_ps::<0b00_01_10_11>(v, v) }
    }
    #[inline(always)]
    fn transpose(a: Self, b: Self, c: Self, d: Self) -> [Self; 4] {
        // SAFETY: see above.
        unsafe {
            let ab0 = _mm_unpacklo_ps(a, b); // a0 b0 a1 b1
            let ab1 = _mm_unpackhi_ps(a, b); // a2 b2 a3 b3
            let cd0 = _mm_unpacklo_ps(c, d); // c0 d0 c1 d1
            let cd1 = _mm_unpackhi_ps(c, d); // c2 d2 c3 d3
            [
                _mm_movelh_ps(ab0, cd0), // a0 b0 c0 d0
                _mm_movehl_ps(cd0, ab0), // a1 b1 c1 d1
                _mm_movelh_ps(ab1, cd1), // a2 b2 c2 d2
                _mm_movehl_ps(cd1, ab1), // a3 b3 c3 d3
            ]
        }
    }
    #[inline(always)]
    unsafe fn load2(p: *const f32) -> (Self, Self) {
        // SAFETY: `p` is readable for 8 floats (the caller's contract); see above.
        unsafe {
            let (u, v) = (_mm_loadu_ps(p), _mm_loadu_ps(p.add(4)));
            (_mm_shuffle_ps::<0b10_00_10_00>(u, v), _mm_shuffle_ps::<0b11_01_11_01>(u, v))
        }
    }
    #[inline(always)]
    unsafe fn store2(p: *mut f32, a: Self, b: Self) {
        // SAFETY: `p` is writable for 8 floats (the caller's contract); see above.
        unsafe {
            _mm_storeu_ps(p, _mm_unpacklo_ps(a, b));
            _mm_storeu_ps(p.add(4), _mm_unpackhi_ps(a, b));
        }
    }
}
