//! The x86-64 FFT-family kernels (`X86<I>`): the magnitudes of a split spectrum with the
//! SSE square root (`sqrtps`, IEEE's correctly rounded square root, part of the x86-64
//! baseline): the portable code's bits, four lanes per instruction instead of the software
//! square root, a noticeable part of a Silero VAD window (`BENCHMARKS.md`, "Host: ours vs
//! ONNX Runtime (x86-64, one thread)"). Every other function runs the portable code.

use super::FftKernels;
use crate::kernels::{X86Isa, X86};

impl<I: X86Isa> FftKernels for X86<I> {
    #[cfg(neon_x86)]
    unsafe fn magnitude_spectrum_unchecked(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
        use core::arch::x86_64::{__m128, _mm_add_ps, _mm_mul_ps, _mm_sqrt_ps};
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
impl super::Lanes4 for core::arch::x86_64::__m128 {
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: `p` is readable for 4 floats (the caller's contract); unaligned load,
        // SSE is part of every x86-64 target.
        unsafe { core::arch::x86_64::_mm_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: `p` is writable for 4 floats (the caller's contract); unaligned store.
        unsafe { core::arch::x86_64::_mm_storeu_ps(p, v) }
    }
}
