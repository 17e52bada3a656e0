//! The AVX2 + FMA level: 8 lanes in `ymm` registers.

use super::{intrinsics, memory_intrinsics, Simd};
use core::arch::x86_64::*;

/// The AVX2 + FMA token: exists only where the CPU implements AVX2 and FMA.
#[derive(Clone, Copy)]
pub(crate) struct Ymm(());

impl Ymm {
    /// The token.
    ///
    /// # Safety
    /// The CPU implements AVX2 and FMA.
    #[inline(always)]
    pub(crate) unsafe fn new() -> Self {
        Ymm(())
    }
}

/// Mask of the first `n` (`<= 8`) lanes, for `vmaskmovps`.
///
/// # Safety
/// The CPU implements AVX2.
#[inline(always)]
unsafe fn first_i32(n: usize) -> __m256i {
    // SAFETY: the level (contract).
    unsafe {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx)
    }
}

/// The reduction of the 8 lanes of `$x` with the 4-lane operation `$op` and its scalar
/// form `$op_ss`: the two halves, then the two pairs, then the last two lanes.
macro_rules! reduce {
    ($x:expr, $op:ident, $op_ss:ident) => {{
        let x = $x;
        let h = $op(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
        let h = $op(h, _mm_movehl_ps(h, h));
        _mm_cvtss_f32($op_ss(h, _mm_shuffle_ps::<1>(h, h)))
    }};
}

impl Simd<8> for Ymm {
    type V = __m256;
    type Mask = __m256;
    type Lim = __m256i;

    intrinsics! {
        fn add(a: __m256, b: __m256) -> __m256 => _mm256_add_ps(a, b);
        fn sub(a: __m256, b: __m256) -> __m256 => _mm256_sub_ps(a, b);
        fn mul(a: __m256, b: __m256) -> __m256 => _mm256_mul_ps(a, b);
        fn div(a: __m256, b: __m256) -> __m256 => _mm256_div_ps(a, b);
        fn max(a: __m256, b: __m256) -> __m256 => _mm256_max_ps(a, b);
        fn min(a: __m256, b: __m256) -> __m256 => _mm256_min_ps(a, b);
        fn abs(a: __m256) -> __m256 => _mm256_andnot_ps(_mm256_set1_ps(-0.0), a);
        fn neg(a: __m256) -> __m256 => _mm256_xor_ps(a, _mm256_set1_ps(-0.0));
        fn copysign(a: __m256, b: __m256) -> __m256 => {
            let sign = _mm256_set1_ps(-0.0);
            _mm256_or_ps(_mm256_andnot_ps(sign, a), _mm256_and_ps(sign, b))
        };
        fn fma(a: __m256, b: __m256, c: __m256) -> __m256 => _mm256_fmadd_ps(a, b, c);
        fn fnma(a: __m256, b: __m256, c: __m256) -> __m256 => _mm256_fnmadd_ps(a, b, c);
        fn splat(x: f32) -> __m256 => _mm256_set1_ps(x);
        fn zero() -> __m256 => _mm256_setzero_ps();
        fn lt(a: __m256, b: __m256) -> __m256 => _mm256_cmp_ps::<_CMP_LT_OQ>(a, b);
        fn le(a: __m256, b: __m256) -> __m256 => _mm256_cmp_ps::<_CMP_LE_OQ>(a, b);
        fn gt(a: __m256, b: __m256) -> __m256 => _mm256_cmp_ps::<_CMP_GT_OQ>(a, b);
        fn eq(a: __m256, b: __m256) -> __m256 => _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b);
        fn any(m: __m256) -> bool => _mm256_movemask_ps(m) != 0;
        fn select(m: __m256, t: __m256, f: __m256) -> __m256 => _mm256_blendv_ps(f, t, m);
        fn below(lim: __m256i, j: i32) -> __m256 =>
            _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim, _mm256_set1_epi32(j)));
        fn first(n: usize) -> __m256 => _mm256_castsi256_ps(first_i32(n));
        fn scale_pow2(q: __m256, v: __m256) -> __m256 => _mm256_castsi256_ps(_mm256_add_epi32(
            _mm256_castps_si256(q),
            _mm256_slli_epi32::<23>(_mm256_castps_si256(v)),
        ));
        // The array's 8 values.
        fn limits(l: &[i32; 8]) -> __m256i => _mm256_loadu_si256(l.as_ptr().cast());
        fn hmax(x: __m256) -> f32 => reduce!(x, _mm_max_ps, _mm_max_ss);
        fn hsum(x: __m256) -> f32 => reduce!(x, _mm_add_ps, _mm_add_ss);
    }

    /// `vhaddps` tree.
    #[inline(always)]
    fn hsum_rows(self, a: &[__m256; 8]) -> __m256 {
        // SAFETY: the level (token).
        unsafe {
            let h = [
                _mm256_hadd_ps(a[0], a[1]),
                _mm256_hadd_ps(a[2], a[3]),
                _mm256_hadd_ps(a[4], a[5]),
                _mm256_hadd_ps(a[6], a[7]),
            ];
            // Per 128-bit half: the partial sums of rows 0..4 (lo) and 4..8 (hi).
            let (lo, hi) = (_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
            _mm256_add_ps(
                _mm256_permute2f128_ps::<0x20>(lo, hi),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            )
        }
    }
    memory_intrinsics! {
        unsafe fn load(p: *const f32) -> __m256 => _mm256_loadu_ps(p);
        /// Masked (`vmaskmovps`): nothing else is read.
        unsafe fn load_n(p: *const f32, n: usize) -> __m256 =>
            _mm256_maskload_ps(p, first_i32(n));
        /// `vmaskmovps`, on the sign bit of each lane of `m`.
        unsafe fn load_masked(p: *const f32, m: __m256) -> __m256 =>
            _mm256_maskload_ps(p, _mm256_castps_si256(m));
        unsafe fn store(p: *mut f32, x: __m256) => _mm256_storeu_ps(p, x);
        /// `vmaskmovps`, on the sign bit of each lane of `m`.
        unsafe fn store_masked(p: *mut f32, x: __m256, m: __m256) =>
            _mm256_maskstore_ps(p, _mm256_castps_si256(m), x);
        unsafe fn bcast(p: *const f32) -> __m256 => _mm256_broadcast_ss(&*p);
    }
    /// Below 8 lanes through a stack copy: `vmaskmovps` stores are slow on some cores.
    #[inline(always)]
    unsafe fn store_n(self, p: *mut f32, x: __m256, n: usize) {
        if n == 8 {
            // SAFETY: contract: 8 values; the level (token).
            return unsafe { _mm256_storeu_ps(p, x) };
        }
        let a = self.to_array(x);
        // SAFETY: contract: `n` values.
        unsafe { core::ptr::copy_nonoverlapping(a.as_ptr(), p, n) }
    }
}
