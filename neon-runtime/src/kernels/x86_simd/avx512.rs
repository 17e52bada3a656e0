//! The AVX-512F level: 16 lanes in `zmm` registers.

use super::{intrinsics, memory_intrinsics, Simd};
use core::arch::x86_64::*;

/// The AVX-512F token: exists only where the CPU implements AVX-512F.
#[derive(Clone, Copy)]
pub(crate) struct Zmm(());

impl Zmm {
    /// The token.
    ///
    /// # Safety
    /// The CPU implements AVX-512F.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        Zmm(())
    }
}

/// The steps of [`Simd::hsum_rows`] (named functions, not closures: see the module docs of
/// [`super`]).
impl Zmm {
    /// `[x0 + x2, y0 + y2, x1 + x3, y1 + y3]` per 128-bit lane.
    #[inline(always)]
    fn pairs(self, x: __m512, y: __m512) -> __m512 {
        // SAFETY: the level (token).
        unsafe { _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y)) }
    }
    /// The 64-bit halves of two [`Zmm::pairs`] results, added.
    #[inline(always)]
    fn quads(self, x: __m512, y: __m512) -> __m512 {
        // SAFETY: the level (token).
        unsafe {
            let (xd, yd) = (_mm512_castps_pd(x), _mm512_castps_pd(y));
            _mm512_add_ps(
                _mm512_castpd_ps(_mm512_unpacklo_pd(xd, yd)),
                _mm512_castpd_ps(_mm512_unpackhi_pd(xd, yd)),
            )
        }
    }
    /// 128-bit lanes: `[x.0 + x.1, x.2 + x.3, y.0 + y.1, y.2 + y.3]`.
    #[inline(always)]
    fn lanes(self, x: __m512, y: __m512) -> __m512 {
        // SAFETY: the level (token).
        unsafe {
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0b10_00_10_00>(x, y),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(x, y),
            )
        }
    }
}

/// Mask of the first `n` (`<= 16`) lanes.
#[inline(always)]
fn first(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

impl Simd<16> for Zmm {
    type V = __m512;
    type Mask = __mmask16;
    type Lim = __m512i;

    intrinsics! {
        fn add(a: __m512, b: __m512) -> __m512 => _mm512_add_ps(a, b);
        fn sub(a: __m512, b: __m512) -> __m512 => _mm512_sub_ps(a, b);
        fn mul(a: __m512, b: __m512) -> __m512 => _mm512_mul_ps(a, b);
        fn div(a: __m512, b: __m512) -> __m512 => _mm512_div_ps(a, b);
        fn max(a: __m512, b: __m512) -> __m512 => _mm512_max_ps(a, b);
        fn min(a: __m512, b: __m512) -> __m512 => _mm512_min_ps(a, b);
        fn abs(a: __m512) -> __m512 => _mm512_abs_ps(a);
        fn copysign(a: __m512, b: __m512) -> __m512 => {
            let sign = _mm512_set1_epi32(i32::MIN);
            let (a, b) = (_mm512_castps_si512(a), _mm512_castps_si512(b));
            _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_andnot_si512(sign, a),
                _mm512_and_si512(sign, b),
            ))
        };
        fn neg(a: __m512) -> __m512 => _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(a),
            _mm512_set1_epi32(i32::MIN),
        ));
        fn fma(a: __m512, b: __m512, c: __m512) -> __m512 => _mm512_fmadd_ps(a, b, c);
        fn fnma(a: __m512, b: __m512, c: __m512) -> __m512 => _mm512_fnmadd_ps(a, b, c);
        fn splat(x: f32) -> __m512 => _mm512_set1_ps(x);
        fn zero() -> __m512 => _mm512_setzero_ps();
        fn lt(a: __m512, b: __m512) -> __mmask16 => _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b);
        fn le(a: __m512, b: __m512) -> __mmask16 => _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b);
        fn gt(a: __m512, b: __m512) -> __mmask16 => _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b);
        fn eq(a: __m512, b: __m512) -> __mmask16 => _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
        fn select(m: __mmask16, t: __m512, f: __m512) -> __m512 => _mm512_mask_mov_ps(f, m, t);
        fn below(lim: __m512i, j: i32) -> __mmask16 =>
            _mm512_cmpgt_epi32_mask(lim, _mm512_set1_epi32(j));
        // A tree of `vmaxps`.
        fn hmax(x: __m512) -> f32 => _mm512_reduce_max_ps(x);
        fn hsum(x: __m512) -> f32 => _mm512_reduce_add_ps(x);
        fn scale_pow2(q: __m512, v: __m512) -> __m512 => _mm512_castsi512_ps(_mm512_add_epi32(
            _mm512_castps_si512(q),
            _mm512_slli_epi32::<23>(_mm512_castps_si512(v)),
        ));
        // The array's 16 values.
        fn limits(l: &[i32; 16]) -> __m512i => _mm512_loadu_si512(l.as_ptr().cast());
    }

    #[inline(always)]
    fn any(self, m: __mmask16) -> bool {
        m != 0
    }
    #[inline(always)]
    fn first(self, n: usize) -> __mmask16 {
        first(n)
    }
    /// `vunpck{l,h}ps`, `vunpck{l,h}pd`, two rounds of `vshuff64x2`.
    #[inline(always)]
    fn hsum_rows(self, a: &[__m512; 16]) -> __m512 {
        // Pairs: per 128-bit lane [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
        let mut p = [self.zero(); 8];
        for i in 0..8 {
            p[i] = self.pairs(a[2 * i], a[2 * i + 1]);
        }
        // Quads: per 128-bit lane the partial sums of 4 rows, in row order.
        let mut q = [self.zero(); 4];
        for i in 0..4 {
            q[i] = self.quads(p[2 * i], p[2 * i + 1]);
        }
        let (w0, w1) = (self.lanes(q[0], q[1]), self.lanes(q[2], q[3]));
        self.lanes(w0, w1)
    }
    memory_intrinsics! {
        unsafe fn load(p: *const f32) -> __m512 => _mm512_loadu_ps(p);
        /// Masked: nothing else is read.
        unsafe fn load_n(p: *const f32, n: usize) -> __m512 => _mm512_maskz_loadu_ps(first(n), p);
        unsafe fn load_masked(p: *const f32, m: __mmask16) -> __m512 =>
            _mm512_maskz_loadu_ps(m, p);
        unsafe fn store(p: *mut f32, x: __m512) => _mm512_storeu_ps(p, x);
        /// Masked: nothing else is written.
        unsafe fn store_n(p: *mut f32, x: __m512, n: usize) =>
            _mm512_mask_storeu_ps(p, first(n), x);
        unsafe fn store_masked(p: *mut f32, x: __m512, m: __mmask16) =>
            _mm512_mask_storeu_ps(p, m, x);
        /// An embedded broadcast operand where it feeds an FMA.
        unsafe fn bcast(p: *const f32) -> __m512 => _mm512_set1_ps(*p);
    }
}
