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
        use core::arch::x86_64::{
            __m128, _mm_add_ps, _mm_loadu_ps, _mm_mul_ps, _mm_sqrt_ps, _mm_storeu_ps,
        };
        #[inline(always)]
        fn step(a: __m128, b: __m128) -> __m128 {
            // SAFETY: SSE2 is part of every x86-64 target (the cfg above). Both squares and
            // the sum rounded, no fused multiply-add (see the trait).
            unsafe { _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(a, a), _mm_mul_ps(b, b))) }
        }
        let k = magnitude.len();
        let mut i = 0;
        while i + 4 <= k {
            // SAFETY: i + 4 <= k = re.len() = im.len() = magnitude.len() (the caller's
            // contract); unaligned loads and stores.
            unsafe {
                let v = step(_mm_loadu_ps(re.as_ptr().add(i)), _mm_loadu_ps(im.as_ptr().add(i)));
                _mm_storeu_ps(magnitude.as_mut_ptr().add(i), v);
            }
            i += 4;
        }
        if i < k {
            // Partial vector through stack buffers (padding lanes are 0 and dropped).
            let n = k - i;
            let (mut a, mut b) = ([0.0f32; 4], [0.0f32; 4]);
            a[..n].copy_from_slice(&re[i..]);
            b[..n].copy_from_slice(&im[i..]);
            // SAFETY: a and b hold 4 floats each.
            unsafe {
                let v = step(_mm_loadu_ps(a.as_ptr()), _mm_loadu_ps(b.as_ptr()));
                _mm_storeu_ps(a.as_mut_ptr(), v);
            }
            magnitude[i..].copy_from_slice(&a[..n]);
        }
    }
}
