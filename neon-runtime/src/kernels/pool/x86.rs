//! The x86-64 max pooling (`X86<I>`): AVX-512F (16 outputs per step) and AVX2 (8) for
//! windows two columns wide at column stride 2 (openWakeWord's 2x2/2 and 1x2/(1,2) pools),
//! any kernel height and row stride. Other windows run the portable kernel, whose branchy
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
                    (X86Level::Avx512, 1) => avx512::row::<1>(p, width, 1, n_out, q),
                    (X86Level::Avx512, 2) => avx512::row::<2>(p, width, 2, n_out, q),
                    (X86Level::Avx512, _) => avx512::row::<0>(p, width, kh, n_out, q),
                    (X86Level::Avx2, 1) => avx2::row::<1>(p, width, 1, n_out, q),
                    (X86Level::Avx2, 2) => avx2::row::<2>(p, width, 2, n_out, q),
                    (X86Level::Avx2, _) => avx2::row::<0>(p, width, kh, n_out, q),
                }
            }
        }
    }
}

/// AVX-512F: 16 outputs per step.
#[cfg(neon_x86)]
mod avx512 {
    use core::arch::x86_64::*;

    /// IEEE `maximum` of each lane (the scalar `fmax`): `vmaxps` gives `b` on NaN or a tie;
    /// a NaN `a` is kept, and a tie gives `a & b` (`+0` from `-0`, `+0`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fmax(a: __m512, b: __m512) -> __m512 {
        let r = _mm512_max_ps(a, b);
        let r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a), a);
        let tie = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b);
        let (ai, bi) = (_mm512_castps_si512(a), _mm512_castps_si512(b));
        _mm512_castsi512_ps(_mm512_mask_and_epi32(_mm512_castps_si512(r), tie, ai, bi))
    }

    /// The first `n` (0..=16) lanes.
    #[inline(always)]
    fn lanes(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// Maximum over the `kh` window rows (`width` apart) of the 32 values from `p`, under
    /// the masks of the two vectors.
    ///
    /// # Safety
    /// AVX-512F; the masked lanes of `p.add(i * width)[..32]` readable for `i < kh`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn rows<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        (m0, m1): (__mmask16, __mmask16),
    ) -> (__m512, __m512) {
        let kh = if KH == 0 { kh } else { KH };
        // Wrapping: with an empty second mask `p + 16` may be past the row.
        let mut a = _mm512_maskz_loadu_ps(m0, p);
        let mut b = _mm512_maskz_loadu_ps(m1, p.wrapping_add(16));
        for i in 1..kh {
            let r = p.add(i * width);
            a = fmax(a, _mm512_maskz_loadu_ps(m0, r));
            b = fmax(b, _mm512_maskz_loadu_ps(m1, r.wrapping_add(16)));
        }
        (a, b)
    }

    /// The maximum of the even and odd columns of `a` (columns 0..16) and `b` (16..32).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn pairs(a: __m512, b: __m512) -> __m512 {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        fmax(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b))
    }

    /// One output row: `q[o] = max_{i < kh, j < 2} p[i * width + 2 o + j]` for `o < n`.
    /// `KH` is the kernel height when known at compile time (0: `kh`).
    ///
    /// # Safety
    /// AVX-512F; `p.add(i * width)` readable for `2 * n` values (`i < kh`), `q` writable
    /// for `n`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn row<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        n: usize,
        q: *mut f32,
    ) {
        let mut o = 0;
        while o + 16 <= n {
            let (a, b) = rows::<KH>(p.add(2 * o), width, kh, (0xFFFF, 0xFFFF));
            _mm512_storeu_ps(q.add(o), pairs(a, b));
            o += 16;
        }
        if o < n {
            let left = 2 * (n - o);
            let masks = (lanes(left.min(16)), lanes(left.saturating_sub(16)));
            let (a, b) = rows::<KH>(p.add(2 * o), width, kh, masks);
            _mm512_mask_storeu_ps(q.add(o), lanes(n - o), pairs(a, b));
        }
    }
}

/// AVX2: 8 outputs per step.
#[cfg(neon_x86)]
mod avx2 {
    use core::arch::x86_64::*;

    /// IEEE `maximum` of each lane, as the AVX-512 version.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn fmax(a: __m256, b: __m256) -> __m256 {
        let r = _mm256_max_ps(a, b);
        let r = _mm256_blendv_ps(r, a, _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a));
        _mm256_blendv_ps(r, _mm256_and_ps(a, b), _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b))
    }

    /// A `vmaskmovps` mask of the first `n` lanes (`n` may be 0 or exceed 8).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lanes(n: usize) -> __m256i {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n.min(8) as i32), idx)
    }

    /// Maximum over the `kh` window rows of the 16 values from `p`, under the masks of the
    /// two vectors (`None`: unmasked).
    ///
    /// # Safety
    /// AVX2; the masked lanes of `p.add(i * width)[..16]` readable for `i < kh`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn rows<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        masks: Option<(__m256i, __m256i)>,
    ) -> (__m256, __m256) {
        let kh = if KH == 0 { kh } else { KH };
        let (mut a, mut b) = load(p, masks);
        for i in 1..kh {
            let (c, d) = load(p.add(i * width), masks);
            a = fmax(a, c);
            b = fmax(b, d);
        }
        (a, b)
    }

    /// The 16 values from `r` as two vectors, under `masks` (`None`: unmasked).
    ///
    /// # Safety
    /// AVX2; the masked lanes of `r[..16]` readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load(r: *const f32, masks: Option<(__m256i, __m256i)>) -> (__m256, __m256) {
        match masks {
            None => (_mm256_loadu_ps(r), _mm256_loadu_ps(r.add(8))),
            // Wrapping: with an empty second mask `r + 8` may be past the row.
            Some((m0, m1)) => {
                (_mm256_maskload_ps(r, m0), _mm256_maskload_ps(r.wrapping_add(8), m1))
            }
        }
    }

    /// The maximum of the even and odd columns of `a` (columns 0..8) and `b` (8..16), in
    /// column order.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pairs(a: __m256, b: __m256) -> __m256 {
        // Within each 128-bit half: [a0 a2 b0 b2 | a4 a6 b4 b6] and the odd columns.
        let m = fmax(_mm256_shuffle_ps::<0x88>(a, b), _mm256_shuffle_ps::<0xDD>(a, b));
        // 64-bit blocks 0, 2, 1, 3: [a0 a2 a4 a6 b0 b2 b4 b6].
        _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(m)))
    }

    /// One output row, as the AVX-512 version.
    ///
    /// # Safety
    /// AVX2; `p.add(i * width)` readable for `2 * n` values (`i < kh`), `q` writable for
    /// `n`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row<const KH: usize>(
        p: *const f32,
        width: usize,
        kh: usize,
        n: usize,
        q: *mut f32,
    ) {
        let mut o = 0;
        while o + 8 <= n {
            let (a, b) = rows::<KH>(p.add(2 * o), width, kh, None);
            _mm256_storeu_ps(q.add(o), pairs(a, b));
            o += 8;
        }
        if o < n {
            let left = 2 * (n - o);
            let masks = (lanes(left), lanes(left.saturating_sub(8)));
            let (a, b) = rows::<KH>(p.add(2 * o), width, kh, Some(masks));
            _mm256_maskstore_ps(q.add(o), lanes(n - o), pairs(a, b));
        }
    }
}
