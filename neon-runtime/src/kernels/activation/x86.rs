//! The x86-64 activation kernels (`X86<I>`): GELU, erf form, 8 lanes at a time with AVX2 and
//! FMA, at both levels (every AVX-512F CPU also has AVX2 and FMA; the AVX-512 level checks
//! it and otherwise runs the portable code). Every other function runs the portable code.
//!
//! The algorithm and the constants are the portable ones (see the [family docs](super));
//! as on NEON, the multiply-adds are fused (one rounding), so the results differ from the
//! portable ones by a few ulps at most (the family's accuracy table holds for every
//! backend, and the tests check each level against the f64 references). Each element is
//! computed by the same instructions wherever it sits in the slice (full vectors and the
//! masked last one alike), so any split of a slice gives the same bits.
//!
//! Why only GELU: it is the one transcendental activation on a hot path of the host models
//! (the sanoTTS decoder's ConvNeXt blocks: 48,000 values per second of audio per block);
//! the portable form, vectorised by LLVM for the SSE2 baseline (4 lanes, no FMA, selects
//! as and/andnot/or), cost about 15% of the decoder's time on an AVX2 host.

use super::ActivationKernels;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
use super::{ActivationFn, MapArgs};
use crate::kernels::{X86Isa, X86};

impl<I: X86Isa> ActivationKernels for X86<I> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
    fn activate_unchecked(f: ActivationFn, io: MapArgs<'_>) {
        use crate::kernels::cpu::X86Level;
        // The level's own requirement, then (for AVX-512) the AVX2 + FMA these kernels use.
        Self::require();
        if f != ActivationFn::GeluErf || !X86Level::Avx2.supported() {
            return super::portable::activate(f, io);
        }
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { avx2::map(io) }
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
mod avx2 {
    use super::super::consts::*;
    use super::MapArgs;
    use core::arch::x86_64::*;

    /// `r + r^2 P(r)` (`portable::expm1_poly`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn expm1_poly(r: __m256) -> __m256 {
        let mut p = _mm256_set1_ps(EXPM1_P[4]);
        for &c in EXPM1_P[..4].iter().rev() {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        _mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r)
    }

    /// `(t, p)`: `t = 2^n`, `p = expm1(r)`, `x = n ln2 + r` (`portable::exp_parts`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp_parts(x: __m256) -> (__m256, __m256) {
        let magic = _mm256_set1_ps(ROUND_MAGIC);
        let v = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), magic);
        let n = _mm256_sub_ps(v, magic);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
        // 2^n from the exponent bits (n << 23 == bits(v) << 23).
        let t = _mm256_add_epi32(
            _mm256_slli_epi32::<23>(_mm256_castps_si256(v)),
            _mm256_set1_epi32(0x3f80_0000),
        );
        (_mm256_castsi256_ps(t), expm1_poly(r))
    }

    /// GELU, erf form (`portable::gelu_erf`): `(x/2) e` for `x < 0`, `x - (x/2) e` for
    /// `x >= 0`, `e = exp(-a H(a)) = erfc(a)`, `a = |x| / sqrt 2`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn gelu_erf(x: __m256) -> __m256 {
        let sign = _mm256_set1_ps(-0.0);
        let a = _mm256_mul_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(FRAC_1_SQRT_2));
        let mut h = _mm256_set1_ps(ERF_H[10]);
        for &c in ERF_H[..10].iter().rev() {
            h = _mm256_fmadd_ps(h, a, _mm256_set1_ps(c));
        }
        // -a H(a): the product with its sign flipped (exact).
        let (t, p) = exp_parts(_mm256_xor_ps(_mm256_mul_ps(a, h), sign));
        let e = _mm256_fmadd_ps(t, p, t);
        // NaN `a` fails the compare: `e` keeps its NaN, as in the portable select.
        let sat = _mm256_cmp_ps::<_CMP_GE_OQ>(a, _mm256_set1_ps(ERF_SAT));
        let e = _mm256_andnot_ps(sat, e);
        // Clamp of the x / 2 factor, NaN kept: vmaxps / vminps return their second operand
        // when either is NaN, so `x` goes second.
        let xc = _mm256_max_ps(_mm256_set1_ps(-GELU_ERF_XMAX), x);
        let xc = _mm256_min_ps(_mm256_set1_ps(GELU_ERF_XMAX), xc);
        let hx = _mm256_mul_ps(xc, _mm256_set1_ps(0.5));
        let neg = _mm256_mul_ps(hx, e);
        let pos = _mm256_fnmadd_ps(hx, e, x);
        // x < 0 (ordered: NaN takes `pos`, which is NaN, as the portable `else` branch).
        let lt = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps());
        _mm256_blendv_ps(pos, neg, lt)
    }

    /// A mask of the first `n` lanes (`n <= 8`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn lanes(n: usize) -> __m256i {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx)
    }

    /// `y[i] = gelu_erf(x[i])` for `i < n`: 4 vectors per step (independent chains), then
    /// single vectors, then one masked vector (masked loads and stores touch no memory
    /// outside the mask).
    ///
    /// # Safety
    /// AVX2 + FMA; `x` readable and `y` writable for `n` values (they may be equal).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn gelu_erf_n(x: *const f32, y: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY (the three loops): every access is at an index < n, per the contract.
        unsafe {
            while i + 32 <= n {
                let (x, y) = (x.add(i), y.add(i));
                let v0 = gelu_erf(_mm256_loadu_ps(x));
                let v1 = gelu_erf(_mm256_loadu_ps(x.add(8)));
                let v2 = gelu_erf(_mm256_loadu_ps(x.add(16)));
                let v3 = gelu_erf(_mm256_loadu_ps(x.add(24)));
                _mm256_storeu_ps(y, v0);
                _mm256_storeu_ps(y.add(8), v1);
                _mm256_storeu_ps(y.add(16), v2);
                _mm256_storeu_ps(y.add(24), v3);
                i += 32;
            }
            while i + 8 <= n {
                _mm256_storeu_ps(y.add(i), gelu_erf(_mm256_loadu_ps(x.add(i))));
                i += 8;
            }
            if i < n {
                let m = lanes(n - i);
                let r = gelu_erf(_mm256_maskload_ps(x.add(i), m));
                _mm256_maskstore_ps(y.add(i), m, r);
            }
        }
    }

    /// GELU (erf form) over `io`.
    ///
    /// # Safety
    /// AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn map(io: MapArgs<'_>) {
        // SAFETY: the slices hold the `n` values read and written (equal lengths for
        // `To`, checked by the entry point); AVX2 + FMA per the contract.
        unsafe {
            match io {
                MapArgs::InPlace(x) => {
                    let p = x.as_mut_ptr();
                    gelu_erf_n(p, p, x.len())
                }
                MapArgs::To(x, y) => gelu_erf_n(x.as_ptr(), y.as_mut_ptr(), x.len()),
            }
        }
    }
}
