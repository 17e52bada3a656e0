//! The x86-64 max pooling (`X86<I>`): AVX-512F (16 outputs per step) and AVX2 (8) for
//! windows two columns wide at column stride 2 (openWakeWord's 2x2/2 and 1x2/(1,2) pools),
//! any kernel height and row stride, one body generic over the level's vectors
//! (`kernels/x86_simd`). Other windows run the portable kernel, whose branchy
//! scalar maximum would make openWakeWord's five pools cost about as much as its twenty
//! convs on x86-64 (`BENCHMARKS.md`, "Host: openWakeWord per chunk (x86-64)").
//!
//! Per output row, each of the `kernel_h` window rows is loaded as two vectors of
//! consecutive columns (the two taps of 16 or 8 windows), the rows are reduced with a
//! vertical maximum, then the even and odd columns are separated with one permutation and
//! reduced. A 1x2/(1,2) pool over an even width is one row: the whole tensor, every input
//! pair an output. The last `out_width % 16` (AVX2: `% 8`) outputs of a row use the same
//! steps under lane masks (masked loads touch no memory outside the mask).
//!
//! The maximum is the portable kernel's IEEE `maximum` bit for bit (`vmaxps` returns its
//! second operand when either is NaN or both are equal: a NaN first operand and ties of
//! `-0` and `+0` are then fixed with compare masks), so the paths differ at most in
//! which NaN of a window with several NaNs is returned.

use super::PoolKernels;
use crate::kernels::{X86Isa, X86};

impl<I: X86Isa> PoolKernels for X86<I> {
    #[cfg(neon_x86)]
    unsafe fn max_pool2d_unchecked(x: &[f32], g: super::PoolGeometry, y: &mut [f32]) {
        use crate::kernels::cpu::X86Level;
        if (g.kernel.1, g.stride.1) != (2, 2) {
            return super::portable::max_pool2d(x, g, y);
        }
        Self::require();
        let ((kh, sh), (oh_n, ow_n)) = ((g.kernel.0, g.stride.0), g.out_dims());
        let (width, plane) = (g.width, g.height * g.width);
        // (window rows, row stride, input offset of output row r of channel c, outputs per
        // row, rows): a 1x2/(1,2) pool over an even width is a single row over the whole
        // tensor.
        let (flat, rows) = if (kh, sh) == (1, 1) && width.is_multiple_of(2) {
            (true, 1)
        } else {
            (false, y.len() / ow_n)
        };
        let n_out = if flat { y.len() } else { ow_n };
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        for r in 0..rows {
            let top = if flat { 0 } else { (r / oh_n) * plane + (r % oh_n) * sh * width };
            // SAFETY: window row i < kh of output row r starts at top + i * width and reads
            // columns < 2 * n_out <= width (or, flat, the whole tensor: 2 * y.len() =
            // x.len()), all inside `x` (the entry point's check: oh * sh + kh <= height);
            // the row writes y[r * n_out ..][..n_out]. The CPU implements the level
            // (`require`).
            unsafe {
                let (p, q) = (xp.add(top), yp.add(r * n_out));
                match (I::LEVEL, kh) {
                    (X86Level::Avx512, 1) => levels::row_avx512::<1>(p, width, 1, n_out, q),
                    (X86Level::Avx512, 2) => levels::row_avx512::<2>(p, width, 2, n_out, q),
                    (X86Level::Avx512, _) => levels::row_avx512::<0>(p, width, kh, n_out, q),
                    (X86Level::Avx2, 1) => levels::row_avx2::<1>(p, width, 1, n_out, q),
                    (X86Level::Avx2, 2) => levels::row_avx2::<2>(p, width, 2, n_out, q),
                    (X86Level::Avx2, _) => levels::row_avx2::<0>(p, width, kh, n_out, q),
                }
            }
        }
    }
}

/// One body for both levels, generic over the level's vectors (`x86_simd::Simd`), and the
/// two steps whose instructions differ by level (`PoolSimd`).
#[cfg(neon_x86)]
mod levels {
    use crate::kernels::x86_simd::{Simd, Ymm, Zmm};
    use core::arch::x86_64::*;

    /// The pooling's steps on a level's vectors of `L` lanes.
    pub(super) trait PoolSimd<const L: usize>: Simd<L> {
        /// IEEE `maximum` of each lane (the scalar `fmax`): `vmaxps` gives `b` on NaN or a
        /// tie; a NaN `a` is kept, and a tie gives `a & b` (`+0` from `-0`, `+0`).
        fn fmax(self, a: Self::V, b: Self::V) -> Self::V;
        /// The maximum of the even and odd columns of `a` (columns `0..L`) and `b`
        /// (`L..2L`), in column order.
        fn pairs(self, a: Self::V, b: Self::V) -> Self::V;
    }

    impl PoolSimd<16> for Zmm {
        #[inline(always)]
        fn fmax(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the level (token).
            unsafe {
                let r = _mm512_max_ps(a, b);
                let r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a), a);
                let tie = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
                let (ai, bi) = (_mm512_castps_si512(a), _mm512_castps_si512(b));
                _mm512_castsi512_ps(_mm512_mask_and_epi32(_mm512_castps_si512(r), tie, ai, bi))
            }
        }

        #[inline(always)]
        fn pairs(self, a: __m512, b: __m512) -> __m512 {
            // SAFETY: the level (token).
            unsafe {
                let even =
                    _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                let odd =
                    _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
                let (e, o) =
                    (_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
                self.fmax(e, o)
            }
        }
    }

    impl PoolSimd<8> for Ymm {
        #[inline(always)]
        fn fmax(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the level (token).
            unsafe {
                let r = _mm256_max_ps(a, b);
                let r = _mm256_blendv_ps(r, a, _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a));
                _mm256_blendv_ps(r, _mm256_and_ps(a, b), _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b))
            }
        }

        #[inline(always)]
        fn pairs(self, a: __m256, b: __m256) -> __m256 {
            // SAFETY: the level (token).
            unsafe {
                // Within each 128-bit half: [a0 a2 b0 b2 | a4 a6 b4 b6] and the odd columns.
                let m = self.fmax(_mm256_shuffle_ps::<0x88>(a, b), _mm256_shuffle_ps::<0xDD>(a, b));
                // 64-bit blocks 0, 2, 1, 3: [a0 a2 a4 a6 b0 b2 b4 b6].
                _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(m)))
            }
        }
    }

    /// The `2L` values from `r` as two vectors: all of them (`n = None`), or the first
    /// `n` (0..=`2L`), zeros after (masked loads touch no memory outside the mask).
    ///
    /// # Safety
    /// `r[..2L]` readable (`None`), or `r[..n]`.
    #[inline(always)]
    unsafe fn load<const L: usize, S: PoolSimd<L>>(
        s: S,
        r: *const f32,
        n: Option<usize>,
    ) -> (S::V, S::V) {
        // SAFETY: the caller's contract.
        unsafe {
            match n {
                None => (s.load(r), s.load(r.add(L))),
                // Wrapping: with an empty second vector `r + L` may be past the row.
                Some(n) => {
                    (s.load_n(r, n.min(L)), s.load_n(r.wrapping_add(L), n.saturating_sub(L)))
                }
            }
        }
    }

    /// Maximum over the `kh` window rows (`width` apart) of the `2L` values from `p` (or
    /// the first `n`, as [`load`]).
    ///
    /// # Safety
    /// [`load`]'s contract at `p.add(i * width)` for `i < kh`.
    #[inline(always)]
    unsafe fn rows<const L: usize, S: PoolSimd<L>, const KH: usize>(
        s: S,
        p: *const f32,
        width: usize,
        kh: usize,
        n: Option<usize>,
    ) -> (S::V, S::V) {
        let kh = if KH == 0 { kh } else { KH };
        // SAFETY: the caller's contract.
        unsafe {
            let (mut a, mut b) = load(s, p, n);
            for i in 1..kh {
                let (c, d) = load(s, p.add(i * width), n);
                a = s.fmax(a, c);
                b = s.fmax(b, d);
            }
            (a, b)
        }
    }

    /// One output row: `q[o] = max_{i < kh, j < 2} p[i * width + 2 o + j]` for `o < n`,
    /// `L` outputs per step, then the last `n % L` under lane masks. `KH` is the kernel
    /// height when known at compile time (0: `kh`).
    ///
    /// # Safety
    /// `p.add(i * width)` readable for `2 * n` values (`i < kh`), `q` writable for `n`.
    #[inline(always)]
    unsafe fn row<const L: usize, S: PoolSimd<L>, const KH: usize>(
        s: S,
        p: *const f32,
        width: usize,
        kh: usize,
        n: usize,
        q: *mut f32,
    ) {
        let mut o = 0;
        // SAFETY: the caller's contract: 2 * o + 2 * L <= 2 * n values, then the last
        // 2 * (n - o) of them.
        unsafe {
            while o + L <= n {
                let (a, b) = rows::<L, S, KH>(s, p.add(2 * o), width, kh, None);
                s.store(q.add(o), s.pairs(a, b));
                o += L;
            }
            if o < n {
                let (a, b) = rows::<L, S, KH>(s, p.add(2 * o), width, kh, Some(2 * (n - o)));
                s.store_n(q.add(o), s.pairs(a, b), n - o);
            }
        }
    }

    /// [`row`] at AVX-512F: 16 outputs per step.
    ///
    /// # Safety
    /// The CPU implements AVX-512F; [`row`]'s contract.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn row_avx512<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        n: usize,
        q: *mut f32,
    ) {
        // SAFETY: the CPU implements AVX-512F (contract), so the token may exist; the rest
        // is the caller's contract.
        unsafe { row::<16, Zmm, KH>(Zmm::new(), p, width, kh, n, q) }
    }

    /// [`row`] at AVX2 + FMA: 8 outputs per step.
    ///
    /// # Safety
    /// The CPU implements AVX2 and FMA; [`row`]'s contract.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn row_avx2<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        n: usize,
        q: *mut f32,
    ) {
        // SAFETY: the CPU implements AVX2 and FMA (contract), so the token may exist; the
        // rest is the caller's contract.
        unsafe { row::<8, Ymm, KH>(Ymm::new(), p, width, kh, n, q) }
    }
}
