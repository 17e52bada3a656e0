//! x86-64 fast paths of the portable backend's max pooling: AVX-512F (16 outputs per step)
//! and AVX2 (8) for windows two columns wide at column stride 2 (openWakeWord's 2x2/2 and
//! 1x2/(1,2) pools), any kernel height and row stride. Other windows run the plain-Rust
//! kernel. The level is the GEMM's ([`detected`]): the same run-time (feature `std`) or
//! build-time detection.
//!
//! Per output row, each of the `kernel_h` window rows is loaded as two vectors of
//! consecutive columns (the two taps of 16 or 8 windows), the rows are reduced with a
//! vertical maximum, then the even and odd columns are separated with one permutation and
//! reduced. A 1x2/(1,2) pool over an even width is one row: the whole tensor, every input
//! pair an output. The last `out_width % 16` (AVX2: `% 8`) outputs of a row use the same
//! steps under lane masks (masked loads touch no memory outside the mask).
//!
//! The maximum is the scalar kernel's IEEE `maximum` bit for bit (`vmaxps` returns its
//! second operand when either is NaN or both are equal: a NaN first operand and ties of
//! `-0` and `+0` are then fixed with compare masks), so the paths differ at most in
//! which NaN of a window with several NaNs is returned.

use super::check_pool;
use crate::kernels::gemm::x86::{detected, Level};
use core::arch::x86_64::*;

/// [`PoolKernels::max_pool2d`](super::PoolKernels::max_pool2d) at `level` (the plain-Rust
/// kernel for [`Level::Baseline`] and for windows other than `kernel_w = stride_w = 2`).
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`PoolKernels::max_pool2d`](super::PoolKernels::max_pool2d).
pub unsafe fn max_pool2d(
    level: Level,
    x: &[f32],
    channels: usize,
    height: usize,
    width: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    y: &mut [f32],
) {
    let out = check_pool(x.len(), channels, (height, width), kernel, stride, y.len());
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    if !unsafe { pool_at(level, x, (height, width), kernel, stride, out, y) } {
        super::baseline(x, (height, width), kernel, stride, out, y);
    }
}

/// The portable backend's x86 path at the [`detected`] level: `false` when it does not
/// apply (baseline level, or a window other than `kernel_w = stride_w = 2`), and then
/// nothing was written.
///
/// # Panics
/// When the geometry was not checked by `check_pool` (it is, by the caller).
pub(super) fn pool(
    x: &[f32],
    hw: (usize, usize),
    kernel: (usize, usize),
    stride: (usize, usize),
    out: (usize, usize),
    y: &mut [f32],
) -> bool {
    // SAFETY: `detected()` only returns a level whose extensions the CPU (or the build's
    // target) has; the geometry was checked by the caller.
    unsafe { pool_at(detected(), x, hw, kernel, stride, out, y) }
}

/// The vector kernels of `level` over a checked geometry (`x`: `[channels, height, width]`,
/// `y`: `[channels, out_h, out_w]`); `false` (nothing written) when they do not apply.
///
/// # Safety
/// The CPU implements `level`; `check_pool` accepted the geometry and returned `out`.
unsafe fn pool_at(
    level: Level,
    x: &[f32],
    (height, width): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (oh_n, ow_n): (usize, usize),
    y: &mut [f32],
) -> bool {
    if (kw, sw) != (2, 2) || level == Level::Baseline {
        return false;
    }
    let plane = height * width;
    // (window rows, row stride, input offset of output row r of channel c, outputs per row,
    // rows): a 1x2/(1,2) pool over an even width is a single row over the whole tensor.
    let (flat, rows) = if (kh, sh) == (1, 1) && width.is_multiple_of(2) {
        (true, 1)
    } else {
        (false, y.len() / ow_n.max(1))
    };
    let n_out = if flat { y.len() } else { ow_n };
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    for r in 0..rows {
        let top = if flat { 0 } else { (r / oh_n) * plane + (r % oh_n) * sh * width };
        // SAFETY: window row i < kh of output row r starts at top + i * width and reads
        // columns < 2 * n_out <= width (or, flat, the whole tensor: 2 * y.len() = x.len()),
        // all inside `x` (check_pool: oh * sh + kh <= height); the row writes
        // y[r * n_out ..][..n_out]. The CPU implements `level` (caller).
        unsafe {
            let (p, q) = (xp.add(top), yp.add(r * n_out));
            match (level, kh) {
                (Level::Avx512, 1) => avx512::row::<1>(p, width, 1, n_out, q),
                (Level::Avx512, 2) => avx512::row::<2>(p, width, 2, n_out, q),
                (Level::Avx512, _) => avx512::row::<0>(p, width, kh, n_out, q),
                (_, 1) => avx2::row::<1>(p, width, 1, n_out, q),
                (_, 2) => avx2::row::<2>(p, width, 2, n_out, q),
                (_, _) => avx2::row::<0>(p, width, kh, n_out, q),
            }
        }
    }
    true
}

/// AVX-512F: 16 outputs per step.
mod avx512 {
    use super::*;

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
mod avx2 {
    use super::*;

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
