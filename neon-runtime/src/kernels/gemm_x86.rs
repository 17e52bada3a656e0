//! x86-64 fast paths of the portable backend's GEMM and GEMV: AVX-512F (16-wide) and
//! AVX2 + FMA (8-wide) kernels over the same packed layouts as every other backend.
//!
//! [`Portable`](crate::Portable) picks the best [`Level`] once ([`detected`]): with
//! feature `std` by run-time detection (`is_x86_feature_detected!`, cached in an atomic),
//! without it from the build's target features (`-C target-feature=+avx512f` or
//! `-C target-cpu=...`). Under Miri this module does not exist and the baseline runs.
//! The free functions here run one level explicitly (tests and benchmarks compare them).
//! `gemm_packed_a_rows` (conv2d: `B` rows in [`BRows`] segments, the [`Epilogue`] fused
//! into the tile's registers in the `vmaxps` form described in [`gemm`](super)) shares
//! the packed-A tiles with `gemm_packed_a`, so both give the same bits on the same level.
//! Tile shapes, register budgets and measured speeds: the module documentation of
//! [`gemm`](super).

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::{
    baseline, bias_only_a, bias_only_b, check_gemv, check_packed_a, check_packed_a_rows,
    check_packed_b, padded, BRows, Epilogue, PACK_MR, PACK_NR,
};
use crate::kernels::conv2d::RowConv;
use core::arch::x86_64::*;

/// An instruction-set level of the x86-64 GEMM kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// The plain-Rust kernels, compiled for the build's target features (SSE2 by default).
    Baseline,
    /// 8-wide AVX2 + FMA kernels.
    Avx2,
    /// 16-wide AVX-512F kernels.
    Avx512,
}

impl Level {
    /// Every level, slowest first.
    pub const ALL: [Level; 3] = [Level::Baseline, Level::Avx2, Level::Avx512];

    /// Short name: `"baseline"`, `"avx2"`, `"avx512"`.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// Whether this level may run here: at compile time from the build's target features,
    /// and with feature `std` also by run-time detection. Without `std`, a CPU that has
    /// the extensions but a build that does not target them reports `false`.
    pub fn supported(self) -> bool {
        match self {
            Level::Baseline => true,
            Level::Avx2 => {
                if cfg!(all(target_feature = "avx2", target_feature = "fma")) {
                    return true;
                }
                #[cfg(feature = "std")]
                {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
                #[cfg(not(feature = "std"))]
                {
                    false
                }
            }
            Level::Avx512 => {
                if cfg!(target_feature = "avx512f") {
                    return true;
                }
                #[cfg(feature = "std")]
                {
                    std::arch::is_x86_feature_detected!("avx512f")
                }
                #[cfg(not(feature = "std"))]
                {
                    false
                }
            }
        }
    }
}

/// The level [`Portable`](crate::Portable) uses: the best [`Level::supported`] one,
/// determined once (the answer is cached in an atomic, so a call costs one load).
pub fn detected() -> Level {
    use core::sync::atomic::{AtomicU8, Ordering};
    /// 0: not determined yet; otherwise 1 + the index into `Level::ALL`.
    static CACHE: AtomicU8 = AtomicU8::new(0);
    match CACHE.load(Ordering::Relaxed) {
        1 => Level::Baseline,
        2 => Level::Avx2,
        3 => Level::Avx512,
        _ => {
            let best = *Level::ALL.iter().rev().find(|l| l.supported()).unwrap_or(&Level::Baseline);
            let code = Level::ALL.iter().position(|&l| l == best).unwrap_or(0) as u8 + 1;
            CACHE.store(code, Ordering::Relaxed);
            best
        }
    }
}

/// [`GemmKernels::gemm_packed_b`](super::GemmKernels::gemm_packed_b) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`GemmKernels::gemm_packed_b`](super::GemmKernels::gemm_packed_b).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_b(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    check_packed_b(m, n, k, a, lda, b, bias, c, ldc);
    if m == 0 || n == 0 || k == 0 {
        return bias_only_b(m, n, bias, c, ldc);
    }
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe {
        match level {
            Level::Baseline => baseline::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc),
            Level::Avx2 => avx2::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc),
            Level::Avx512 => avx512::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc),
        }
    }
}

/// [`GemmKernels::gemm_packed_a`](super::GemmKernels::gemm_packed_a) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`GemmKernels::gemm_packed_a`](super::GemmKernels::gemm_packed_a).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_a(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    ldb: usize,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    check_packed_a(m, n, k, a, b, ldb, bias, c, ldc);
    if m == 0 || n == 0 || k == 0 {
        return bias_only_a(m, n, bias, None, c, ldc);
    }
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { rows_at(level, m, n, a, b, BRows::contiguous(k, ldb), bias, None, c, ldc) }
}

/// [`GemmKernels::gemm_packed_a_rows`](super::GemmKernels::gemm_packed_a_rows) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`GemmKernels::gemm_packed_a_rows`](super::GemmKernels::gemm_packed_a_rows).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_packed_a_rows(
    level: Level,
    m: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    rows: BRows,
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    c: &mut [f32],
    ldc: usize,
) {
    let k = check_packed_a_rows(m, n, a, b, rows, bias, c, ldc);
    if m == 0 || n == 0 || k == 0 {
        return bias_only_a(m, n, bias, epilogue, c, ldc);
    }
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { rows_at(level, m, n, a, b, rows, bias, epilogue, c, ldc) }
}

/// The largest `kernel_w` [`conv_rows`] takes.
pub const ROW_CONV_MAX_KW: usize = 3;

/// [`Conv2dKernels::conv_rows`](crate::kernels::Conv2dKernels::conv_rows) at `level`:
/// `true` (and done) at [`Level::Avx512`] with `kernel_w <= ROW_CONV_MAX_KW`, else `false`
/// with nothing written. `B` rows are read with AVX-512 masked loads (which touch no memory
/// outside the mask) straight from `x`: reduction row `(c * kernel_h + i) * kernel_w + j`
/// of pixel `p` is `x[c * height * width + i * width + p + j - pad_left]`, masked to zero
/// where that column leaves the image row. Tiles, epilogue and bits as
/// `gemm_packed_a_rows` at the same level.
///
/// # Safety
/// The CPU must implement `level`'s extensions.
///
/// # Panics
/// As [`Conv2dKernels::conv_rows`](crate::kernels::Conv2dKernels::conv_rows).
#[allow(clippy::too_many_arguments)]
pub unsafe fn conv_rows(
    level: Level,
    g: RowConv,
    a: &[f32],
    x: &[f32],
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    y: &mut [f32],
) -> bool {
    if level != Level::Avx512 || g.kernel_w > ROW_CONV_MAX_KW || g.kernel_w == 0 {
        return false;
    }
    assert!(g.pad_left < g.kernel_w, "conv_rows: pad_left >= kernel_w");
    assert!(g.kernel_h >= 1 && g.kernel_h <= g.height, "conv_rows: kernel_h");
    let plane = g.height.checked_mul(g.width).expect("conv_rows: plane overflows");
    let k = g
        .channels
        .checked_mul(g.kernel_h)
        .and_then(|v| v.checked_mul(g.kernel_w))
        .expect("conv_rows: k overflows");
    let (m, n) = (g.out_channels, (g.height - g.kernel_h + 1) * g.width);
    assert!(g.channels.checked_mul(plane).is_some_and(|l| x.len() >= l), "conv_rows: x too short");
    assert!(
        m.checked_add(PACK_MR).and_then(|v| v.checked_mul(k)).is_some()
            && a.len() >= super::packed_a_len(m, k),
        "conv_rows: packed a too short"
    );
    assert!(m.checked_mul(n).is_some_and(|l| y.len() >= l), "conv_rows: y too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= m, "conv_rows: bias too short");
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        bias_only_a(m, n, bias, epilogue, y, n);
        return true;
    }
    let fused = epilogue.map(VecEpilogue::new);
    // SAFETY: the geometry was checked above; the caller guarantees AVX-512F.
    unsafe { avx512::conv_rows(g, a, x, bias, fused.flatten(), y) };
    if let (Some(e), Some(None)) = (epilogue, fused) {
        y[..m * n].iter_mut().for_each(|v| *v = e.apply(*v));
    }
    true
}

/// The packed-A driver of `level` with the output stage: in registers when
/// [`VecEpilogue::new`] accepts it, else as a scalar pass over the result.
///
/// # Safety
/// The contract of `gemm_packed_a_rows` checked, `m, n, k >= 1`; the CPU implements `level`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn rows_at(
    level: Level,
    m: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    rows: BRows,
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    c: &mut [f32],
    ldc: usize,
) {
    let fused = epilogue.map(VecEpilogue::new);
    let vec_ep = fused.flatten();
    // SAFETY: as the caller guarantees.
    unsafe {
        match level {
            Level::Baseline => {
                return baseline::gemm_packed_a_rows(m, n, a, b, rows, bias, epilogue, c, ldc)
            }
            Level::Avx2 => avx2::gemm_packed_a(m, n, a, b, rows, bias, vec_ep, c, ldc),
            Level::Avx512 => avx512::gemm_packed_a(m, n, a, b, rows, bias, vec_ep, c, ldc),
        }
    }
    if let (Some(e), Some(None)) = (epilogue, fused) {
        for row in c.chunks_mut(ldc).take(m) {
            row[..n].iter_mut().for_each(|v| *v = e.apply(*v));
        }
    }
}

/// An [`Epilogue`] in the form the vector kernels apply to their accumulators:
/// `max(min, max(x, slope * x))` with `vmaxps`, which returns its second operand when the
/// operands are equal or either is NaN. That is [`Epilogue::apply`] (IEEE `maximum`, NaN
/// propagating, `max(-0, +0) = +0`) bit for bit when `slope` is not NaN and has its sign
/// bit clear and `min` is not NaN: `slope * x` is NaN exactly when `x` is (it carries `x`'s
/// payload) or when it is `0 * inf` (then the maximum is that NaN, as `apply` gives), and
/// `x`, `slope * x` are never zeros of opposite signs. The second maximum
/// returns `v = max(x, slope * x)` on a tie, which differs from `apply` only for `v = -0`,
/// `min = +0`: `zero_fix` then selects `min` where `v == min`. Other epilogues (a negative
/// or NaN slope, a NaN bound) are applied by a scalar pass after the kernel.
#[derive(Clone, Copy, Debug)]
pub(super) struct VecEpilogue {
    slope: f32,
    min: f32,
    zero_fix: bool,
}

impl VecEpilogue {
    fn new(e: Epilogue) -> Option<Self> {
        let ok = !e.slope.is_nan() && e.slope.is_sign_positive() && !e.min.is_nan();
        ok.then_some(Self { slope: e.slope, min: e.min, zero_fix: e.min.to_bits() == 0 })
    }
}

/// [`GemmKernels::gemv_packed_b`](super::GemmKernels::gemv_packed_b) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`GemmKernels::gemv_packed_b`](super::GemmKernels::gemv_packed_b).
pub unsafe fn gemv_packed_b(
    level: Level,
    n: usize,
    k: usize,
    x: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    check_gemv(n, k, x, b, bias, y);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe {
        match level {
            Level::Baseline => baseline::gemv_packed_b(n, k, x, b, bias, y),
            Level::Avx2 => avx2::gemv_packed_b(n, k, x, b, bias, y),
            Level::Avx512 => avx512::gemv_packed_b(n, k, x, b, bias, y),
        }
    }
}

// ------------------------------------------------------------------------------------
// AVX-512F
// ------------------------------------------------------------------------------------

/// The AVX-512F kernels. Every function has the contract of the matching trait method,
/// already checked (geometry, `m, n, k >= 1`), and needs a CPU with AVX-512F.
pub(super) mod avx512 {
    use super::*;

    /// Rows of the packed-B tile.
    const MR_B: usize = 8;
    /// Panels (of 16 columns) of the packed-B tile.
    const NP_B: usize = 2;
    /// Rows of `A` per block of the packed-B driver (a multiple of [`MR_B`]): the block
    /// stays in L2 while every pair of panels passes over it, each pair (`32 * k` values)
    /// in L1 (for `k` up to ~300).
    const MC_B: usize = 10 * MR_B;

    /// `match $rows { 1 => { const R: usize = 1; $body } ... }` for 1..=[`MR_B`] rows.
    macro_rules! seq_rows {
        ($rows:expr, $r:ident => $body:expr) => {
            match $rows {
                1 => {
                    const $r: usize = 1;
                    $body
                }
                2 => {
                    const $r: usize = 2;
                    $body
                }
                3 => {
                    const $r: usize = 3;
                    $body
                }
                4 => {
                    const $r: usize = 4;
                    $body
                }
                5 => {
                    const $r: usize = 5;
                    $body
                }
                6 => {
                    const $r: usize = 6;
                    $body
                }
                7 => {
                    const $r: usize = 7;
                    $body
                }
                _ => {
                    const $r: usize = 8;
                    $body
                }
            }
        };
    }

    /// Columns of the packed-A tile (3 vectors) by one 8-row panel.
    const NR_A: usize = 48;

    /// The first `cols` (1..=16) lanes.
    #[inline(always)]
    fn lanes(cols: usize) -> __mmask16 {
        (u32::MAX >> (32 - cols)) as __mmask16
    }

    /// The output stage on one accumulator (see [`VecEpilogue`]).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn epilogue(x: __m512, slope: __m512, min: __m512, zero_fix: bool) -> __m512 {
        let v = _mm512_max_ps(x, _mm512_mul_ps(x, slope));
        let r = _mm512_max_ps(min, v);
        if zero_fix {
            _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(v, min), min)
        } else {
            r
        }
    }

    /// Packed-A tile: the 8-row panel times `16 * NV` columns of `B` (its rows placed by
    /// `br` from `b`), the last vector limited to the lanes in `mask` when `MASKED` (masked
    /// loads and stores touch no memory outside the mask); the output stage `ep`, if any,
    /// in registers; `rows` (1..=8) rows of `C` are stored.
    ///
    /// # Safety
    /// AVX-512F; `panel` readable for `8 * k` values (`k = br.rows * br.segments`);
    /// `b.add(s * br.segment_stride + q * br.ldb + j)` readable (`s < br.segments`,
    /// `q < br.rows`) and `c.add(r * ldc + j)` writable (`r < rows`) for every column `j`
    /// of the tile.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_a<const NV: usize, const MASKED: bool>(
        br: BRows,
        panel: *const f32,
        b: *const f32,
        bias: &[f32; PACK_MR],
        ep: Option<VecEpilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        mask: __mmask16,
    ) {
        let mut acc = [[_mm512_setzero_ps(); NV]; PACK_MR];
        for i in 0..PACK_MR {
            for v in 0..NV {
                acc[i][v] = _mm512_set1_ps(bias[i]);
            }
        }
        let ldb = br.ldb;
        let mut w = panel;
        for s in 0..br.segments {
            // Wrapping: after the last step the pointers may leave the slices unused.
            let mut row = b.wrapping_add(s * br.segment_stride);
            for _ in 0..br.rows {
                let mut bv = [_mm512_setzero_ps(); NV];
                for (v, bv) in bv.iter_mut().enumerate() {
                    *bv = if MASKED && v + 1 == NV {
                        _mm512_maskz_loadu_ps(mask, row.add(16 * v))
                    } else {
                        _mm512_loadu_ps(row.add(16 * v))
                    };
                }
                for i in 0..PACK_MR {
                    let wi = _mm512_set1_ps(*w.add(i));
                    for v in 0..NV {
                        acc[i][v] = _mm512_fmadd_ps(wi, bv[v], acc[i][v]);
                    }
                }
                w = w.wrapping_add(PACK_MR);
                row = row.wrapping_add(ldb);
            }
        }
        if let Some(e) = ep {
            let (slope, min) = (_mm512_set1_ps(e.slope), _mm512_set1_ps(e.min));
            for i in 0..PACK_MR {
                for v in 0..NV {
                    acc[i][v] = epilogue(acc[i][v], slope, min, e.zero_fix);
                }
            }
        }
        for i in 0..PACK_MR {
            if i < rows {
                let ci = c.add(i * ldc);
                for v in 0..NV {
                    if MASKED && v + 1 == NV {
                        _mm512_mask_storeu_ps(ci.add(16 * v), mask, acc[i][v]);
                    } else {
                        _mm512_storeu_ps(ci.add(16 * v), acc[i][v]);
                    }
                }
            }
        }
    }

    /// The packed-A driver (`gemm_packed_a_rows` with its contract checked, `m, n, k >= 1`,
    /// and the output stage in vector form).
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(in super::super) unsafe fn gemm_packed_a(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        br: BRows,
        bias: Option<&[f32]>,
        ep: Option<VecEpilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = br.rows * br.segments;
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        let panels = m.div_ceil(PACK_MR);
        let mut j = 0;
        // Columns outermost: the `k x 48` block of `B` is reused from L1 by every panel.
        while j < n {
            let cols = (n - j).min(NR_A);
            for p in 0..panels {
                let row0 = p * PACK_MR;
                let rows = (m - row0).min(PACK_MR);
                let init = padded::<PACK_MR>(bias, row0, rows);
                // SAFETY: check_packed_a_rows: panel p holds 8 * k values; every row of `b`
                // that `br` places holds n >= j + cols values from its offset
                // (`br.span(n) <= b.len()`); rows < m of `c` hold n values from r * ldc.
                // The tile touches columns j..j + cols only (masked tail).
                unsafe {
                    let (w, bb, cc) = (ap.add(p * PACK_MR * k), bp.add(j), cp.add(row0 * ldc + j));
                    let mask = lanes((cols - 1) % 16 + 1);
                    match cols {
                        48 => tile_a::<3, false>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                        33..=47 => tile_a::<3, true>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                        32 => tile_a::<2, false>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                        17..=31 => tile_a::<2, true>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                        16 => tile_a::<1, false>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                        _ => tile_a::<1, true>(br, w, bb, &init, ep, cc, ldc, rows, mask),
                    }
                }
            }
            j += cols;
        }
    }

    /// Lane masks of the `B` loads of a [`conv_rows`](super::conv_rows) tile at columns
    /// `j0 .. j0 + cols` (`cols <= 16 * NV <= 48`): bit `l` of `masks[q][v]` is set when
    /// column `j0 + 16 v + l` is in the tile and its tap `q` reads inside the image row
    /// (`pad_left <= w + q < width + pad_left`, `w` the pixel's column). `period` has a bit
    /// at every multiple of `width` below 64: the tile columns with pixel column `w` are
    /// `period` shifted to the first of them.
    #[inline(always)]
    fn edge_masks<const NV: usize, const KW: usize>(
        j0: usize,
        cols: usize,
        width: usize,
        pad_left: usize,
        period: u64,
    ) -> [[__mmask16; NV]; KW] {
        let phase = j0 % width;
        let column = |w: usize| period.checked_shl(((w + width - phase) % width) as u32);
        let all = (1u64 << cols) - 1;
        let mut masks = [[0; NV]; KW];
        for (q, mq) in masks.iter_mut().enumerate() {
            // Pixel columns whose tap q falls left of the image (w < pad_left - q) or right
            // of it (w >= width + pad_left - q).
            let mut out = 0u64;
            for w in 0..pad_left.saturating_sub(q).min(width) {
                out |= column(w).unwrap_or(0);
            }
            for w in (width + pad_left).saturating_sub(q).min(width)..width {
                out |= column(w).unwrap_or(0);
            }
            let m = all & !out;
            for (v, mv) in mq.iter_mut().enumerate() {
                *mv = (m >> (16 * v)) as __mmask16;
            }
        }
        masks
    }

    /// A [`conv_rows`](super::conv_rows) tile: the 8-row panel times `16 * NV` columns;
    /// reduction row `(s * kh + i) * KW + q` of column `j` is `b[s * plane + i * width + q +
    /// j]` under `masks[q][j / 16]` (zero outside it); the output stage `ep`, if any, in
    /// registers; `rows` (1..=8) rows of `C` stored, the last vector under `store`.
    ///
    /// # Safety
    /// AVX-512F; `panel` readable for `8 * channels * kh * KW` values; every masked-in lane
    /// readable; `c.add(r * ldc + j)` writable (`r < rows`) for the stored columns.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_rows<const NV: usize, const KW: usize>(
        (channels, kh, width, plane): (usize, usize, usize, usize),
        panel: *const f32,
        b: *const f32,
        masks: &[[__mmask16; NV]; KW],
        bias: &[f32; PACK_MR],
        ep: Option<VecEpilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        store: __mmask16,
    ) {
        let mut acc = [[_mm512_setzero_ps(); NV]; PACK_MR];
        for i in 0..PACK_MR {
            for v in 0..NV {
                acc[i][v] = _mm512_set1_ps(bias[i]);
            }
        }
        let mut w = panel;
        for s in 0..channels {
            for i in 0..kh {
                // Wrapping: the tap rows start up to `pad_left` columns before a row of `x`,
                // and masked-out lanes may lie outside `x`; only masked-in lanes are read.
                let base = b.wrapping_add(s * plane + i * width);
                for (q, mq) in masks.iter().enumerate() {
                    let row = base.wrapping_add(q);
                    let mut bv = [_mm512_setzero_ps(); NV];
                    for v in 0..NV {
                        bv[v] = _mm512_maskz_loadu_ps(mq[v], row.wrapping_add(16 * v));
                    }
                    for r in 0..PACK_MR {
                        let wr = _mm512_set1_ps(*w.add(r));
                        for v in 0..NV {
                            acc[r][v] = _mm512_fmadd_ps(wr, bv[v], acc[r][v]);
                        }
                    }
                    w = w.wrapping_add(PACK_MR);
                }
            }
        }
        if let Some(e) = ep {
            let (slope, min) = (_mm512_set1_ps(e.slope), _mm512_set1_ps(e.min));
            for r in 0..PACK_MR {
                for v in 0..NV {
                    acc[r][v] = epilogue(acc[r][v], slope, min, e.zero_fix);
                }
            }
        }
        for r in 0..PACK_MR {
            if r < rows {
                let cr = c.add(r * ldc);
                for v in 0..NV {
                    if v + 1 == NV {
                        _mm512_mask_storeu_ps(cr.add(16 * v), store, acc[r][v]);
                    } else {
                        _mm512_storeu_ps(cr.add(16 * v), acc[r][v]);
                    }
                }
            }
        }
    }

    /// The [`conv_rows`](super::conv_rows) driver at one `KW`: columns (output pixels) in
    /// blocks of 48, every panel over each block (as the packed-A driver).
    ///
    /// # Safety
    /// AVX-512F; the contract of `conv_rows` checked, `m, n, k >= 1`, `g.kernel_w == KW`.
    #[target_feature(enable = "avx512f")]
    unsafe fn conv_rows_kw<const KW: usize>(
        g: RowConv,
        a: &[f32],
        x: &[f32],
        bias: Option<&[f32]>,
        ep: Option<VecEpilogue>,
        y: &mut [f32],
    ) {
        let (m, width, plane) = (g.out_channels, g.width, g.height * g.width);
        let n = (g.height - g.kernel_h + 1) * width;
        let k = g.channels * g.kernel_h * KW;
        let dims = (g.channels, g.kernel_h, width, plane);
        let mut period = 0u64;
        for c in (0..64).step_by(width) {
            period |= 1 << c;
        }
        // Column j of tap (i, q) reads x[i * width + j + q - pad_left] (of each plane).
        let xb = x.as_ptr().wrapping_sub(g.pad_left);
        let (ap, yp) = (a.as_ptr(), y.as_mut_ptr());
        let panels = m.div_ceil(PACK_MR);
        let mut j = 0;
        while j < n {
            let cols = (n - j).min(NR_A);
            let store = lanes((cols - 1) % 16 + 1);
            macro_rules! block {
                ($nv:literal) => {{
                    let masks = edge_masks::<$nv, KW>(j, cols, width, g.pad_left, period);
                    for p in 0..panels {
                        let row0 = p * PACK_MR;
                        let rows = (m - row0).min(PACK_MR);
                        let init = padded::<PACK_MR>(bias, row0, rows);
                        // SAFETY: conv_rows checked the lengths: panel p holds 8 * k values;
                        // a masked-in lane of tap (i, q), channel s, column j + l reads
                        // x[s * plane + i * width + j + l + q - pad_left], inside row
                        // (j + l) / width + i < height of that channel's plane (edge_masks);
                        // rows < m of `y` hold n values from r * n, and the stores stop at
                        // column j + cols.
                        unsafe {
                            let w = ap.add(p * PACK_MR * k);
                            let (bb, cc) = (xb.wrapping_add(j), yp.add(row0 * n + j));
                            tile_rows::<$nv, KW>(
                                dims, w, bb, &masks, &init, ep, cc, n, rows, store,
                            );
                        }
                    }
                }};
            }
            match cols {
                33..=48 => block!(3),
                17..=32 => block!(2),
                _ => block!(1),
            }
            j += cols;
        }
    }

    /// [`conv_rows`](super::conv_rows) with its contract checked, `m, n, k >= 1`,
    /// `1 <= kernel_w <= 3`.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn conv_rows(
        g: RowConv,
        a: &[f32],
        x: &[f32],
        bias: Option<&[f32]>,
        ep: Option<VecEpilogue>,
        y: &mut [f32],
    ) {
        // SAFETY: as this function's contract.
        unsafe {
            match g.kernel_w {
                1 => conv_rows_kw::<1>(g, a, x, bias, ep, y),
                2 => conv_rows_kw::<2>(g, a, x, bias, ep, y),
                _ => conv_rows_kw::<3>(g, a, x, bias, ep, y),
            }
        }
    }

    /// Packed-B tile: `R` rows of `A` (`lda` apart) times `P` consecutive 16-wide panels;
    /// the columns in `mask` of the last panel (all of the others) are stored into `R`
    /// rows of `c`.
    ///
    /// # Safety
    /// AVX-512F; `a.add(r * lda)` readable for `k` values (`r < R`), `panels` for
    /// `16 * P * k`; `c.add(r * ldc + j)` writable for `j < 16 * (P - 1)` and the lanes
    /// `16 * (P - 1) + l` with `l` in `mask`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_b<const R: usize, const P: usize>(
        k: usize,
        a: *const f32,
        lda: usize,
        panels: *const f32,
        init: &[__m512; P],
        c: *mut f32,
        ldc: usize,
        mask: __mmask16,
    ) {
        // Fewer than 8 accumulators cannot hide the FMA latency (4 cycles, 2 per cycle):
        // then `U` sets take the `k` values in turn and are added at the end.
        let u_sets = (8 / (R * P)).clamp(1, 4);
        let mut acc = [[[_mm512_setzero_ps(); P]; R]; 4];
        acc[0] = [*init; R];
        let mut rows = [a; R];
        for (r, row) in rows.iter_mut().enumerate() {
            *row = a.add(r * lda);
        }
        let mut pp = [panels; P];
        for (q, pp) in pp.iter_mut().enumerate() {
            *pp = panels.add(q * PACK_NR * k);
        }
        #[inline(always)]
        unsafe fn step<const R: usize, const P: usize>(
            acc: &mut [[__m512; P]; R],
            rows: &[*const f32; R],
            pp: &[*const f32; P],
            kk: usize,
        ) {
            let mut bv = [_mm512_setzero_ps(); P];
            for q in 0..P {
                bv[q] = _mm512_loadu_ps(pp[q].add(kk * PACK_NR));
            }
            for r in 0..R {
                let av = _mm512_set1_ps(*rows[r].add(kk));
                for q in 0..P {
                    acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
                }
            }
        }
        let mut kk = 0;
        while kk + u_sets <= k {
            for (u, acc) in acc.iter_mut().enumerate().take(u_sets) {
                step(acc, &rows, &pp, kk + u);
            }
            kk += u_sets;
        }
        while kk < k {
            step(&mut acc[0], &rows, &pp, kk);
            kk += 1;
        }
        let [mut acc, a1, a2, a3] = acc;
        if u_sets > 1 {
            for r in 0..R {
                for q in 0..P {
                    let hi = _mm512_add_ps(a2[r][q], a3[r][q]);
                    acc[r][q] = _mm512_add_ps(_mm512_add_ps(acc[r][q], a1[r][q]), hi);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for q in 0..P {
                let m = if q + 1 == P { mask } else { 0xFFFF };
                _mm512_mask_storeu_ps(c.add(r * ldc + 16 * q), m, acc[q]);
            }
        }
    }

    /// Dispatches a packed-B tile of `rows` (1..=[`MR_B`]) rows by `P` panels.
    ///
    /// # Safety
    /// As [`tile_b`] with `R = rows`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_b_rows<const P: usize>(
        rows: usize,
        k: usize,
        a: *const f32,
        lda: usize,
        panels: *const f32,
        init: &[__m512; P],
        c: *mut f32,
        ldc: usize,
        mask: __mmask16,
    ) {
        seq_rows!(rows, R => tile_b::<R, P>(k, a, lda, panels, init, c, ldc, mask))
    }

    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(in super::super) unsafe fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        let panels = n.div_ceil(PACK_NR);
        for i0 in (0..m).step_by(MC_B) {
            let mc = (m - i0).min(MC_B);
            let mut p = 0;
            while p < panels {
                let np = (panels - p).min(NP_B);
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(np * PACK_NR);
                let init_f = padded::<{ NP_B * PACK_NR }>(bias, col0, cols);
                let mut init = [_mm512_setzero_ps(); NP_B];
                for (q, init) in init.iter_mut().enumerate() {
                    *init = _mm512_loadu_ps(init_f.as_ptr().add(16 * q));
                }
                let mask = lanes((cols - 1) % 16 + 1);
                let mut i = i0;
                // SAFETY: check_packed_b: rows i < m of `a` hold k values from i * lda,
                // panels p..p + np exist (16 * k values each), rows i < m of `c` hold
                // n >= col0 + cols values from i * ldc; the last panel's stores are
                // limited to its valid lanes.
                unsafe {
                    let pan = bp.add(col0 * k);
                    while i < i0 + mc {
                        let rows = (i0 + mc - i).min(MR_B);
                        let (aa, cc) = (ap.add(i * lda), cp.add(i * ldc + col0));
                        if np == 2 {
                            tile_b_rows::<2>(rows, k, aa, lda, pan, &init, cc, ldc, mask);
                        } else {
                            let init = &[init[0]];
                            tile_b_rows::<1>(rows, k, aa, lda, pan, init, cc, ldc, mask);
                        }
                        i += rows;
                    }
                }
                p += np;
            }
        }
    }

    /// GEMV over `P` consecutive panels (`16 * P` outputs; the lanes in `mask` of the last
    /// panel are stored). Four accumulators per panel take the `k` values in turn, so
    /// four independent FMA chains per panel hide the FMA latency.
    ///
    /// # Safety
    /// AVX-512F; `panels` readable for `16 * P * k` values, `x` for `k`; `y` writable for
    /// `16 * (P - 1)` values plus the lanes in `mask`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn gemv_panels<const P: usize>(
        k: usize,
        x: *const f32,
        panels: *const f32,
        init: &[f32; 2 * PACK_NR],
        y: *mut f32,
        mask: __mmask16,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 4]; P];
        let mut pp = [panels; P];
        for q in 0..P {
            acc[q][0] = _mm512_loadu_ps(init.as_ptr().add(16 * q));
            pp[q] = panels.add(q * PACK_NR * k);
        }
        let mut kk = 0;
        while kk + 4 <= k {
            for u in 0..4 {
                let xv = _mm512_set1_ps(*x.add(kk + u));
                for q in 0..P {
                    let w = _mm512_loadu_ps(pp[q].add((kk + u) * PACK_NR));
                    acc[q][u] = _mm512_fmadd_ps(xv, w, acc[q][u]);
                }
            }
            kk += 4;
        }
        while kk < k {
            let xv = _mm512_set1_ps(*x.add(kk));
            for q in 0..P {
                let w = _mm512_loadu_ps(pp[q].add(kk * PACK_NR));
                acc[q][0] = _mm512_fmadd_ps(xv, w, acc[q][0]);
            }
            kk += 1;
        }
        for (q, acc) in acc.iter().enumerate() {
            let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
            let m = if q + 1 == P { mask } else { 0xFFFF };
            _mm512_mask_storeu_ps(y.add(16 * q), m, s);
        }
    }

    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let panels = n.div_ceil(PACK_NR);
        let (xp, bp, yp) = (x.as_ptr(), b.as_ptr(), y.as_mut_ptr());
        let mut p = 0;
        while p < panels {
            let col0 = p * PACK_NR;
            let cols = (n - col0).min(2 * PACK_NR);
            let init = padded::<{ 2 * PACK_NR }>(bias, col0, cols);
            let mask = lanes((cols - 1) % 16 + 1);
            // SAFETY: check_gemv: x holds k values, y n >= col0 + cols values, b the
            // `panels` panels of 16 * k values, of which p and (when used) p + 1 exist;
            // stores stop at col0 + cols (masked last panel).
            unsafe {
                let panel = bp.add(col0 * k);
                if p + 2 <= panels {
                    gemv_panels::<2>(k, xp, panel, &init, yp.add(col0), mask);
                } else {
                    gemv_panels::<1>(k, xp, panel, &init, yp.add(col0), mask);
                }
            }
            p += 2;
        }
    }
}

// ------------------------------------------------------------------------------------
// AVX2 + FMA
// ------------------------------------------------------------------------------------

/// The AVX2 + FMA kernels. Every function has the contract of the matching trait method,
/// already checked (geometry, `m, n, k >= 1`), and needs a CPU with AVX2 and FMA.
pub(super) mod avx2 {
    use super::*;

    /// Rows of the packed-B tile (by one 16-wide panel: 2 vectors).
    const MR_B: usize = 6;
    /// Rows of `A` per block of the packed-B driver (a multiple of [`MR_B`]).
    const MC_B: usize = 14 * MR_B;
    /// Columns of the packed-A tile (3 vectors) by half an 8-row panel.
    const NR_A: usize = 24;

    /// An `_mm256_maskload_ps` / `_mm256_maskstore_ps` mask of the first `cols` lanes
    /// (`cols` may be 0 or exceed 8).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn lanes(cols: usize) -> __m256i {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(cols.min(8) as i32), idx)
    }

    /// The output stage on one accumulator (see [`VecEpilogue`]).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn epilogue(x: __m256, slope: __m256, min: __m256, zero_fix: bool) -> __m256 {
        let v = _mm256_max_ps(x, _mm256_mul_ps(x, slope));
        let r = _mm256_max_ps(min, v);
        if zero_fix {
            _mm256_blendv_ps(r, min, _mm256_cmp_ps::<_CMP_EQ_OQ>(v, min))
        } else {
            r
        }
    }

    /// The output stage on 4 rows of accumulators, then the stores of `rows` (0..=4) of
    /// them, the last vector of each through `mask` when `MASKED`.
    ///
    /// # Safety
    /// AVX2 + FMA; `c.add(r * ldc + j)` writable (`r < rows`) for every column `j` the
    /// stores reach.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn finish<const NV: usize, const MASKED: bool>(
        mut acc: [[__m256; NV]; 4],
        ep: Option<VecEpilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        mask: __m256i,
    ) {
        if let Some(e) = ep {
            let (slope, min) = (_mm256_set1_ps(e.slope), _mm256_set1_ps(e.min));
            for i in 0..4 {
                for v in 0..NV {
                    acc[i][v] = epilogue(acc[i][v], slope, min, e.zero_fix);
                }
            }
        }
        for i in 0..4 {
            if i < rows {
                let ci = c.add(i * ldc);
                for v in 0..NV {
                    if MASKED && v + 1 == NV {
                        _mm256_maskstore_ps(ci.add(8 * v), mask, acc[i][v]);
                    } else {
                        _mm256_storeu_ps(ci.add(8 * v), acc[i][v]);
                    }
                }
            }
        }
    }

    /// Packed-A tile: 4 rows of the 8-row panel (weights at `w[kk * 8 + i]`, `i < 4`)
    /// times `8 * NV` columns of `B` (rows placed by `br` from `b`); the last vector
    /// limited to the lanes in `mask` when `MASKED`; the output stage `ep`, if any, in
    /// registers. `rows` (0..=4) rows of `C` are stored.
    ///
    /// # Safety
    /// AVX2 + FMA; `w` readable at `kk * 8 + i` (`kk < k = br.rows * br.segments`,
    /// `i < 4`); `b.add(s * br.segment_stride + q * br.ldb + j)` readable (`s <
    /// br.segments`, `q < br.rows`) and `c.add(r * ldc + j)` writable (`r < rows`) for
    /// every column `j` of the tile.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_a<const NV: usize, const MASKED: bool>(
        br: BRows,
        w: *const f32,
        b: *const f32,
        bias: &[f32],
        ep: Option<VecEpilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        mask: __m256i,
    ) {
        let mut acc = [[_mm256_setzero_ps(); NV]; 4];
        for i in 0..4 {
            for v in 0..NV {
                acc[i][v] = _mm256_set1_ps(bias[i]);
            }
        }
        let ldb = br.ldb;
        let mut w = w;
        for s in 0..br.segments {
            // Wrapping: after the last step the pointers may leave the slices unused.
            let mut row = b.wrapping_add(s * br.segment_stride);
            for _ in 0..br.rows {
                let mut bv = [_mm256_setzero_ps(); NV];
                for (v, bv) in bv.iter_mut().enumerate() {
                    *bv = if MASKED && v + 1 == NV {
                        _mm256_maskload_ps(row.add(8 * v), mask)
                    } else {
                        _mm256_loadu_ps(row.add(8 * v))
                    };
                }
                for i in 0..4 {
                    let wi = _mm256_broadcast_ss(&*w.add(i));
                    for v in 0..NV {
                        acc[i][v] = _mm256_fmadd_ps(wi, bv[v], acc[i][v]);
                    }
                }
                w = w.wrapping_add(PACK_MR);
                row = row.wrapping_add(ldb);
            }
        }
        finish::<NV, MASKED>(acc, ep, c, ldc, rows, mask);
    }

    /// Lines of the 4x24 inner loop for row `$i`: broadcast the row's weight into ymm15
    /// and multiply-add it with the 24 values of `B` in ymm12..ymm14 into the row's three
    /// accumulators.
    macro_rules! asm_a_row {
        ($off:literal, $c0:literal, $c1:literal, $c2:literal) => {
            concat!(
                "vbroadcastss ymm15, dword ptr [{w} + ",
                $off,
                "]\n",
                "vfmadd231ps ",
                $c0,
                ", ymm15, ymm12\n",
                "vfmadd231ps ",
                $c1,
                ", ymm15, ymm13\n",
                "vfmadd231ps ",
                $c2,
                ", ymm15, ymm14\n",
            )
        };
    }

    /// The 4x24 inner loop over `k >= 1` steps, in assembly: 12 accumulators, 3 `B`
    /// vectors and one broadcast weight fill the 16 vector registers exactly, and LLVM's
    /// allocation of the same code spills an accumulator every step (a store-to-load
    /// round trip on that accumulator's dependency chain: 2x slower).
    ///
    /// # Safety
    /// AVX2 + FMA; `w` readable at `kk * 8 + i` (`kk < k`, `i < 4`); `b.add(kk * ldb)`
    /// readable for 24 values (`kk < k`).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel_4x24(
        acc: &mut [[__m256; 3]; 4],
        w: *const f32,
        b: *const f32,
        ldb: usize,
        k: usize,
    ) {
        let [r0, r1, r2, r3] = acc;
        // SAFETY: reads 4 weights of each of k groups of 8 from `w` and 24 values of k rows
        // of `b`, readable per this function's contract; only the declared registers are
        // written.
        unsafe {
            core::arch::asm!(
                "2:",
                "vmovups ymm12, ymmword ptr [{b}]",
                "vmovups ymm13, ymmword ptr [{b} + 32]",
                "vmovups ymm14, ymmword ptr [{b} + 64]",
                asm_a_row!("0", "ymm0", "ymm1", "ymm2"),
                asm_a_row!("4", "ymm3", "ymm4", "ymm5"),
                asm_a_row!("8", "ymm6", "ymm7", "ymm8"),
                asm_a_row!("12", "ymm9", "ymm10", "ymm11"),
                "add {w}, 32",
                "add {b}, {ldb}",
                "dec {n}",
                "jnz 2b",
                w = inout(reg) w => _,
                b = inout(reg) b => _,
                ldb = in(reg) ldb * 4,
                n = inout(reg) k => _,
                inout("ymm0") r0[0], inout("ymm1") r0[1], inout("ymm2") r0[2],
                inout("ymm3") r1[0], inout("ymm4") r1[1], inout("ymm5") r1[2],
                inout("ymm6") r2[0], inout("ymm7") r2[1], inout("ymm8") r2[2],
                inout("ymm9") r3[0], inout("ymm10") r3[1], inout("ymm11") r3[2],
                out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
                options(nostack, readonly),
            );
        }
    }

    /// The full 4x24 packed-A tile (arguments as [`tile_a`]): the assembly loop once per
    /// segment of `B`.
    ///
    /// # Safety
    /// As [`tile_a`] with 24 columns.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_a_24(
        br: BRows,
        w: *const f32,
        b: *const f32,
        bias: &[f32],
        ep: Option<VecEpilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 3]; 4];
        for i in 0..4 {
            acc[i] = [_mm256_set1_ps(bias[i]); 3];
        }
        for s in 0..br.segments {
            let (ws, bs) = (w.add(s * br.rows * PACK_MR), b.add(s * br.segment_stride));
            kernel_4x24(&mut acc, ws, bs, br.ldb, br.rows);
        }
        finish::<3, false>(acc, ep, c, ldc, rows, lanes(8));
    }

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(in super::super) unsafe fn gemm_packed_a(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        br: BRows,
        bias: Option<&[f32]>,
        ep: Option<VecEpilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = br.rows * br.segments;
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        let panels = m.div_ceil(PACK_MR);
        let mut j = 0;
        while j < n {
            let cols = (n - j).min(NR_A);
            let mask = lanes((cols - 1) % 8 + 1);
            for p in 0..panels {
                let row0 = p * PACK_MR;
                let rows = (m - row0).min(PACK_MR);
                let init = padded::<PACK_MR>(bias, row0, rows);
                // Two halves of the panel: rows 0..4 and 4..8 (the second may be empty).
                for h in 0..2 {
                    let hrows = rows.saturating_sub(4 * h).min(4);
                    if hrows == 0 {
                        continue;
                    }
                    let bias = &init[4 * h..];
                    // SAFETY: as in the AVX-512 driver: panel p holds 8 * k values (this
                    // half reads offsets kk * 8 + 4h + i, i < 4), every row of `b` that `br`
                    // places holds n >= j + cols values, rows row0 + 4h + r < m of `c` hold
                    // n values; the tiles touch columns j..j + cols only (masked tails).
                    unsafe {
                        let w = ap.add(p * PACK_MR * k + 4 * h);
                        let (bb, cc) = (bp.add(j), cp.add((row0 + 4 * h) * ldc + j));
                        match cols {
                            24 => tile_a_24(br, w, bb, bias, ep, cc, ldc, hrows),
                            17..=23 => {
                                let full = lanes(8);
                                tile_a::<2, false>(br, w, bb, bias, ep, cc, ldc, hrows, full);
                                let (bb, cc) = (bb.add(16), cc.add(16));
                                tile_a::<1, true>(br, w, bb, bias, ep, cc, ldc, hrows, mask);
                            }
                            16 => tile_a::<2, false>(br, w, bb, bias, ep, cc, ldc, hrows, mask),
                            9..=15 => tile_a::<2, true>(br, w, bb, bias, ep, cc, ldc, hrows, mask),
                            8 => tile_a::<1, false>(br, w, bb, bias, ep, cc, ldc, hrows, mask),
                            _ => tile_a::<1, true>(br, w, bb, bias, ep, cc, ldc, hrows, mask),
                        }
                    }
                }
            }
            j += cols;
        }
    }

    /// Packed-B tile: `R` rows of `A` times one 16-wide panel (2 vectors); `cols` (1..=16)
    /// columns are stored (`MASKED`: through lane masks; otherwise all 16).
    ///
    /// # Safety
    /// AVX2 + FMA; `a.add(r * lda)` readable for `k` values (`r < R`), `panel` for
    /// `16 * k`; `c.add(r * ldc + j)` writable for `j < cols`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_b<const R: usize, const MASKED: bool>(
        k: usize,
        a: *const f32,
        lda: usize,
        panel: *const f32,
        init: &[__m256; 2],
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        // Fewer than 8 accumulators cannot hide the FMA latency: then `u_sets` sets take
        // the `k` values in turn and are added at the end.
        let u_sets = (4 / R).clamp(1, 4);
        let mut acc = [[[_mm256_setzero_ps(); 2]; R]; 4];
        acc[0] = [*init; R];
        let mut rows = [a; R];
        for (r, row) in rows.iter_mut().enumerate() {
            *row = a.add(r * lda);
        }
        #[inline(always)]
        unsafe fn step<const R: usize>(
            acc: &mut [[__m256; 2]; R],
            rows: &[*const f32; R],
            panel: *const f32,
            kk: usize,
        ) {
            let b0 = _mm256_loadu_ps(panel.add(kk * PACK_NR));
            let b1 = _mm256_loadu_ps(panel.add(kk * PACK_NR + 8));
            for r in 0..R {
                let av = _mm256_broadcast_ss(&*rows[r].add(kk));
                acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
            }
        }
        let mut kk = 0;
        while kk + u_sets <= k {
            for (u, acc) in acc.iter_mut().enumerate().take(u_sets) {
                step(acc, &rows, panel, kk + u);
            }
            kk += u_sets;
        }
        while kk < k {
            step(&mut acc[0], &rows, panel, kk);
            kk += 1;
        }
        let [mut acc, a1, a2, a3] = acc;
        if u_sets > 1 {
            for r in 0..R {
                for h in 0..2 {
                    let hi = _mm256_add_ps(a2[r][h], a3[r][h]);
                    acc[r][h] = _mm256_add_ps(_mm256_add_ps(acc[r][h], a1[r][h]), hi);
                }
            }
        }
        let (m0, m1) = (lanes(cols), lanes(cols.saturating_sub(8)));
        for (r, acc) in acc.iter().enumerate() {
            let cr = c.add(r * ldc);
            if MASKED {
                _mm256_maskstore_ps(cr, m0, acc[0]);
                // With `cols <= 8` the mask is empty and the address may be past `c`.
                _mm256_maskstore_ps(cr.wrapping_add(8), m1, acc[1]);
            } else {
                _mm256_storeu_ps(cr, acc[0]);
                _mm256_storeu_ps(cr.add(8), acc[1]);
            }
        }
    }

    /// Dispatches a packed-B tile of `rows` (1..=[`MR_B`]) rows.
    ///
    /// # Safety
    /// As [`tile_b`] with `R = rows`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_b_rows<const MASKED: bool>(
        rows: usize,
        k: usize,
        a: *const f32,
        lda: usize,
        panel: *const f32,
        init: &[__m256; 2],
        c: *mut f32,
        ldc: usize,
        cols: usize,
    ) {
        match rows {
            6 => tile_b::<6, MASKED>(k, a, lda, panel, init, c, ldc, cols),
            5 => tile_b::<5, MASKED>(k, a, lda, panel, init, c, ldc, cols),
            4 => tile_b::<4, MASKED>(k, a, lda, panel, init, c, ldc, cols),
            3 => tile_b::<3, MASKED>(k, a, lda, panel, init, c, ldc, cols),
            2 => tile_b::<2, MASKED>(k, a, lda, panel, init, c, ldc, cols),
            _ => tile_b::<1, MASKED>(k, a, lda, panel, init, c, ldc, cols),
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(in super::super) unsafe fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        for i0 in (0..m).step_by(MC_B) {
            let mc = (m - i0).min(MC_B);
            for p in 0..n.div_ceil(PACK_NR) {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(PACK_NR);
                let init = padded::<PACK_NR>(bias, col0, cols);
                let init = [_mm256_loadu_ps(init.as_ptr()), _mm256_loadu_ps(init.as_ptr().add(8))];
                let mut i = i0;
                // SAFETY: as in the AVX-512 driver (masked stores stop at col0 + cols).
                unsafe {
                    let panel = bp.add(col0 * k);
                    while i < i0 + mc {
                        let rows = (i0 + mc - i).min(MR_B);
                        let (aa, cc) = (ap.add(i * lda), cp.add(i * ldc + col0));
                        if cols == PACK_NR {
                            tile_b_rows::<false>(rows, k, aa, lda, panel, &init, cc, ldc, cols);
                        } else {
                            tile_b_rows::<true>(rows, k, aa, lda, panel, &init, cc, ldc, cols);
                        }
                        i += rows;
                    }
                }
            }
        }
    }

    /// GEMV over one panel (16 outputs, `cols` of them stored): 4 accumulator pairs take
    /// the `k` values in turn (8 independent FMA chains).
    ///
    /// # Safety
    /// AVX2 + FMA; `panel` readable for `16 * k` values, `x` for `k`, `y` writable for
    /// `cols` (1..=16).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn gemv_panel(
        k: usize,
        x: *const f32,
        panel: *const f32,
        init: &[f32; PACK_NR],
        y: *mut f32,
        cols: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; 4];
        acc[0] = [_mm256_loadu_ps(init.as_ptr()), _mm256_loadu_ps(init.as_ptr().add(8))];
        let mut kk = 0;
        while kk + 4 <= k {
            for (u, acc) in acc.iter_mut().enumerate() {
                let xv = _mm256_broadcast_ss(&*x.add(kk + u));
                let w = panel.add((kk + u) * PACK_NR);
                acc[0] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w), acc[0]);
                acc[1] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w.add(8)), acc[1]);
            }
            kk += 4;
        }
        while kk < k {
            let xv = _mm256_broadcast_ss(&*x.add(kk));
            let w = panel.add(kk * PACK_NR);
            acc[0][0] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w), acc[0][0]);
            acc[0][1] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w.add(8)), acc[0][1]);
            kk += 1;
        }
        let mut s = [_mm256_setzero_ps(); 2];
        for (h, s) in s.iter_mut().enumerate() {
            *s = _mm256_add_ps(
                _mm256_add_ps(acc[0][h], acc[1][h]),
                _mm256_add_ps(acc[2][h], acc[3][h]),
            );
        }
        if cols == PACK_NR {
            _mm256_storeu_ps(y, s[0]);
            _mm256_storeu_ps(y.add(8), s[1]);
        } else {
            _mm256_maskstore_ps(y, lanes(cols), s[0]);
            // With `cols <= 8` the mask is empty and the address may be past `y`.
            _mm256_maskstore_ps(y.wrapping_add(8), lanes(cols.saturating_sub(8)), s[1]);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let (xp, bp, yp) = (x.as_ptr(), b.as_ptr(), y.as_mut_ptr());
        for p in 0..n.div_ceil(PACK_NR) {
            let col0 = p * PACK_NR;
            let cols = (n - col0).min(PACK_NR);
            let init = padded::<PACK_NR>(bias, col0, cols);
            // SAFETY: check_gemv: x holds k values, panel p 16 * k values, y n >= col0 +
            // cols values; stores stop at col0 + cols (masked).
            unsafe { gemv_panel(k, xp, bp.add(col0 * k), &init, yp.add(col0), cols) };
        }
    }
}
