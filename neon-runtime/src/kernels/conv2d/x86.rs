//! The x86-64 backend's conv2d: `impl<I: X86Isa> Conv2dKernels for X86<I>`, with the
//! direct kernel for convs "valid" along the height and "same" along the width
//! ([`Conv2dKernels::conv_rows`]) at the AVX-512F level: the packed-A GEMM's 8x48 tile
//! (`gemm/x86/avx512.rs`; lane masks and output stage shared with it) reading `B` straight
//! from the input image: tap `(i, j)` of pixel `p` is `x[i * width + p + j - pad_left]` of
//! each channel plane, loaded under a lane mask that zeroes the columns outside the image
//! row (masks per 48-column block and tap, from a bit pattern of the image width). No
//! im2col; the same bits as im2col + `gemm_packed_a` at the same level. AVX2 has no such
//! kernel (`conv_rows` answers `false`: the caller runs im2col + GEMM), and im2col is the
//! portable one at both levels.

use super::Conv2dKernels;
use crate::kernels::{X86Isa, X86};

#[cfg(neon_x86)]
use crate::kernels::StridedMut;
#[cfg(neon_x86)]
use core::ops::Range;

#[cfg(neon_x86)]
use super::RowConv;
#[cfg(neon_x86)]
use crate::kernels::cpu::X86Level;
#[cfg(neon_x86)]
use crate::kernels::gemm::Epilogue;

impl<I: X86Isa> Conv2dKernels for X86<I> {
    #[cfg(neon_x86)]
    const CONV_ROWS_COL_TILE: usize = crate::kernels::gemm::x86::avx512::NR_A;

    #[cfg(neon_x86)]
    fn conv_rows_supported(g: &RowConv) -> bool {
        I::LEVEL == X86Level::Avx512 && (1..=super::ROW_CONV_MAX_KW).contains(&g.kernel_w)
    }

    #[cfg(neon_x86)]
    unsafe fn conv_rows_unchecked(
        packed: &[f32],
        g: RowConv,
        x: &[f32],
        (bias, epilogue): (Option<&[f32]>, Option<Epilogue>),
        pixels: Range<usize>,
        mut y: StridedMut<'_>,
    ) {
        Self::require();
        crate::kernels::gemm::x86::with_vec_epilogue(epilogue, &mut y, |ep, y| {
            // SAFETY: the entry points checked the contract (sizes >= 1) and, through
            // `conv_rows_supported`, the level (AVX-512F) and `1 <= kernel_w <= 3`;
            // `require` asserted that the CPU has the level; `pixels` and `y` are the
            // hook's (a block of whole 48-pixel tiles from the first pixel on).
            unsafe {
                let px = pixels.clone();
                match g.kernel_w {
                    1 => avx512::conv_rows::<1>(g, packed, x, bias, ep, px, y),
                    2 => avx512::conv_rows::<2>(g, packed, x, bias, ep, px, y),
                    _ => avx512::conv_rows::<3>(g, packed, x, bias, ep, px, y),
                }
            }
        })
    }
}

/// The AVX-512F direct kernel.
#[cfg(neon_x86)]
mod avx512 {
    // Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
    // every element stays in its own register.
    #![allow(clippy::needless_range_loop)]

    use super::RowConv;
    use crate::kernels::gemm::padded;
    use crate::kernels::gemm::x86::avx512::{finish, lanes, NR_A};
    use crate::kernels::gemm::x86::VecEpilogue;
    use crate::kernels::gemm::PACK_MR;
    use crate::kernels::StridedMut;
    use core::arch::x86_64::*;
    use core::ops::Range;

    /// Lane masks of the `B` loads of a [`conv_rows`](super::Conv2dKernels::conv_rows) tile
    /// at columns `j0 .. j0 + cols` (`cols <= 16 * NV <= 48`): bit `l` of `masks[q][v]` is set when
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

    /// What every tile of one direct conv shares: the input's channels, kernel rows, width
    /// and plane size, the output stage in vector form (if fused), the distance between rows
    /// of the output.
    #[derive(Clone, Copy)]
    struct RowTile {
        channels: usize,
        kh: usize,
        width: usize,
        plane: usize,
        ep: Option<VecEpilogue>,
        ldc: usize,
    }

    /// The lane masks of one 48-column block: of the `B` loads per tap ([`edge_masks`]) and
    /// of the last vector's stores.
    struct BlockMasks<const NV: usize, const KW: usize> {
        taps: [[__mmask16; NV]; KW],
        store: __mmask16,
    }

    /// A [`conv_rows`](super::Conv2dKernels::conv_rows) tile: the 8-row panel times `16 * NV`
    /// columns; reduction row `(s * kh + i) * KW + q` of column `j` is `b[s * plane + i * width
    /// + q + j]` under `masks.taps[q][j / 16]` (zero outside it); the output stage `t.ep`, if
    /// any, in registers; `rows` (1..=8) rows of `C` (`t.ldc` apart) stored, the last vector
    /// under `masks.store`.
    ///
    /// # Safety
    /// AVX-512F; `panel` readable for `8 * channels * kh * KW` values; every masked-in lane
    /// readable; `c.add(r * ldc + j)` writable (`r < rows`) for the stored columns.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_rows<const NV: usize, const KW: usize>(
        t: &RowTile,
        masks: &BlockMasks<NV, KW>,
        panel: *const f32,
        b: *const f32,
        bias: &[f32; PACK_MR],
        c: *mut f32,
        rows: usize,
    ) {
        let RowTile { channels, kh, width, plane, ep, ldc } = *t;
        let store = masks.store;
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
                for (q, mq) in masks.taps.iter().enumerate() {
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
        finish::<NV, true>(acc, ep, c, ldc, rows, store);
    }

    /// The [`conv_rows`](super::Conv2dKernels::conv_rows) kernel at one `KW` (1 to 3) for
    /// the output pixels `pixels` (columns of the output), into the block `y` (those
    /// pixels of every output channel, rows `n` apart): columns in blocks of 48 from
    /// `pixels.start` (a multiple of 48, or 0), every panel over each block (as the
    /// packed-A driver).
    ///
    /// # Safety
    /// AVX-512F; the contract of `conv_rows` checked, `m, n, k >= 1`, `g.kernel_w == KW`;
    /// `pixels` a non-empty range of the `n` output pixels and `y` an `m x pixels.len()`
    /// block with `y.ld() == n`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn conv_rows<const KW: usize>(
        g: RowConv,
        a: &[f32],
        x: &[f32],
        bias: Option<&[f32]>,
        ep: Option<VecEpilogue>,
        pixels: Range<usize>,
        y: &mut StridedMut<'_>,
    ) {
        let (m, width, plane) = (g.out_channels, g.width, g.height * g.width);
        let n = (g.height - g.kernel_h + 1) * width;
        let k = g.channels * g.kernel_h * KW;
        let t = RowTile { channels: g.channels, kh: g.kernel_h, width, plane, ep, ldc: n };
        let mut period = 0u64;
        for c in (0..64).step_by(width) {
            period |= 1 << c;
        }
        // Column j of tap (i, q) reads x[i * width + j + q - pad_left] (of each plane).
        let xb = x.as_ptr().wrapping_sub(g.pad_left);
        let (ap, yp) = (a.as_ptr(), y.as_mut_ptr());
        let panels = m.div_ceil(PACK_MR);
        let mut j = pixels.start;
        while j < pixels.end {
            let cols = (pixels.end - j).min(NR_A);
            let store = lanes((cols - 1) % 16 + 1);
            macro_rules! block {
                ($nv:literal) => {{
                    let taps = edge_masks::<$nv, KW>(j, cols, width, g.pad_left, period);
                    let masks = BlockMasks { taps, store };
                    for p in 0..panels {
                        let row0 = p * PACK_MR;
                        let rows = (m - row0).min(PACK_MR);
                        let init = padded::<PACK_MR>(bias, row0, rows);
                        // SAFETY: the entry point checked the lengths: panel p holds 8 * k values;
                        // a masked-in lane of tap (i, q), channel s, column j + l reads
                        // x[s * plane + i * width + j + l + q - pad_left], inside row
                        // (j + l) / width + i < height of that channel's plane (edge_masks);
                        // the block `y` owns pixels `pixels` of each channel r < m, at
                        // r * n + (pixel - pixels.start), and the stores stop at pixel
                        // j + cols <= pixels.end.
                        unsafe {
                            let w = ap.add(p * PACK_MR * k);
                            let cc = yp.add(row0 * n + (j - pixels.start));
                            let bb = xb.wrapping_add(j);
                            tile_rows::<$nv, KW>(&t, &masks, w, bb, &init, cc, rows);
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
}
