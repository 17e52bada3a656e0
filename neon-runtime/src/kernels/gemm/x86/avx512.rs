//! The AVX-512F kernels. Every driver has the contract of the matching hook, already
//! checked (geometry, `m, n, k >= 1`), and needs a CPU with AVX-512F. conv2d's direct
//! kernel (`conv2d/x86.rs`) shares the packed-A tile's lane masks and output stage.

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::seq_rows;
use super::tile::{tile_b, At, Tile};
use super::{TileA, VecEpilogue};
use crate::kernels::gemm::driver::{self, ATile, BOperands, BTile, KernelA, KernelB};
use crate::kernels::gemm::{GemmA, GemmB, PACK_MR, PACK_NR};
use crate::kernels::x86_simd::{Simd, Zmm};
use crate::kernels::StridedMut;
use core::arch::x86_64::*;

/// Rows of the packed-B tile.
pub(crate) const MR_B: usize = 8;
/// Panels (of 16 columns) of the packed-B tile.
pub(crate) const NP_B: usize = 2;
/// Rows of `A` per block of the packed-B driver (a multiple of [`MR_B`]): the block
/// stays in L2 while every pair of panels passes over it, each pair (`32 * k` values)
/// in L1 (for `k` up to ~300).
const MC_B: usize = 10 * MR_B;

/// Columns of the packed-A tile (3 vectors) by one 8-row panel.
pub(crate) const NR_A: usize = 48;

/// The first `cols` (1..=16) lanes.
#[inline(always)]
pub(crate) fn lanes(cols: usize) -> __mmask16 {
    (u32::MAX >> (32 - cols)) as __mmask16
}

/// [`Tile::finish`] at AVX-512F on an 8-row tile of `16 * NV` columns (conv2d's direct
/// tile): the output stage `ep`, if any, on the accumulators, then `rows` (0..=8) rows of
/// them stored (`ldc` apart), the last vector of each through `mask` when `MASKED`.
///
/// # Safety
/// AVX-512F; `c.add(r * ldc + j)` writable (`r < rows`) for every column `j` the stores
/// reach.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn finish<const NV: usize, const MASKED: bool>(
    acc: [[__m512; NV]; PACK_MR],
    ep: Option<VecEpilogue>,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    mask: __mmask16,
) {
    // SAFETY: AVX-512F (contract), so the token may exist; the rest is the caller's
    // contract.
    unsafe {
        Tile::<16, Zmm, PACK_MR, NV, MASKED>::finish(Zmm::new(), acc, ep, (c, ldc), rows, mask)
    }
}

/// The AVX-512 micro-kernels of the shared drivers: packed B [`MR_B`] rows by [`NP_B`]
/// panels, packed A one panel by [`NR_A`] columns (column blocks outermost: the `k x 48`
/// block of `B` is reused from L1 by every panel), GEMV two panels at a time.
pub(crate) struct Avx512Kernel;

impl KernelA for Avx512Kernel {
    const NR: usize = NR_A;
    const COLUMNS_OUTER: bool = true;
    type Ctx = TileA;

    /// The widest of the [`Tile`] shapes (the 8-row panel by 1..=3 vectors) that fits
    /// `t.cols`, the last vector masked when `t.cols` is not a multiple of 16 (masked loads
    /// and stores touch no memory outside the mask).
    #[inline(always)]
    unsafe fn tile(
        _: &GemmA,
        ctx: &TileA,
        a: &[f32],
        b: &[f32],
        init: &[f32; PACK_MR],
        c: &mut StridedMut<'_>,
        t: ATile,
    ) {
        let k = ctx.br.rows * ctx.br.segments;
        let (rows, cols) = (t.rows, t.cols);
        // SAFETY: the drivers run in `gemm_packed_a`, which requires AVX-512F (so the
        // token may exist) and sets `ctx.accumulate` false (the tile starts from `init`);
        // by the contract (check_packed_a) panel row0 / 8 holds 8 * k values, every row of
        // `b` that `br` places holds n >= j + cols values from its offset (`br.span(n) <=
        // b.len()`), the block `c` owns n values from r * ldc in each row r < m (`c.ld()
        // == ldc`); the tile touches columns j..j + cols only (masked tail).
        unsafe {
            let w = a.as_ptr().add(t.row0 * k);
            let (b, c) = (b.as_ptr().add(t.j), c.as_mut_ptr().add(t.row0 * ctx.ldc + t.j));
            let (s, at, mask) = (Zmm::new(), At { w, b, c, rows }, lanes((cols - 1) % 16 + 1));
            match cols {
                48 => Tile::<16, Zmm, 8, 3, false>::run(s, ctx, at, init, mask),
                33..=47 => Tile::<16, Zmm, 8, 3, true>::run(s, ctx, at, init, mask),
                32 => Tile::<16, Zmm, 8, 2, false>::run(s, ctx, at, init, mask),
                17..=31 => Tile::<16, Zmm, 8, 2, true>::run(s, ctx, at, init, mask),
                16 => Tile::<16, Zmm, 8, 1, false>::run(s, ctx, at, init, mask),
                _ => Tile::<16, Zmm, 8, 1, true>::run(s, ctx, at, init, mask),
            }
        }
    }
}

impl KernelB for Avx512Kernel {
    const MR: usize = MR_B;
    const NP: usize = NP_B;
    const MC: usize = MC_B;
    const GEMV_NP: usize = 2;

    #[inline(always)]
    unsafe fn tile(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
        // SAFETY: the caller's contract; the drivers run in `gemm_packed_b`, which
        // requires AVX-512F.
        unsafe { tile_b_at(op, c, t) }
    }

    #[inline(always)]
    unsafe fn gemv(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize) {
        // SAFETY: the caller's contract; the drivers run in `gemv_packed_b`, which
        // requires AVX-512F.
        unsafe { gemv_at(x, b, init, y, col0) }
    }
}

/// Packed-B tile `t` ([`KernelB::tile`]): the bias into registers, then [`tile_b`] over
/// its one or two panels (a vector each), the last one's stores masked to its valid
/// columns.
///
/// # Safety
/// AVX-512F; [`KernelB::tile`]'s contract.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tile_b_at(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
    let (g, init) = (&op.g, &op.init);
    // SAFETY: AVX-512F (contract), so the token may exist.
    let s = unsafe { Zmm::new() };
    let iv = [s.load(init.as_ptr()), s.load(init.as_ptr().add(16))];
    let mask = lanes((t.cols - 1) % 16 + 1);
    // SAFETY: check_packed_b: rows i..i + rows < m of `a` hold k values from i * lda,
    // panels col0 / 16 .. + cols.div_ceil(16) exist (16 * k values each), the block `c` owns
    // n >= col0 + cols values from i * ldc in each row i < m (`c.ld() == ldc`); the last
    // panel's stores are limited to its valid lanes.
    unsafe {
        let aa = op.a.as_ptr().add(t.i * g.lda);
        let pan = op.b.as_ptr().add(t.col0 * g.k);
        let cc = c.as_mut_ptr().add(t.i * g.ldc + t.col0);
        if t.cols > PACK_NR {
            let (pp, masks) = ([pan, pan.add(PACK_NR * g.k)], [0xFFFF, mask]);
            seq_rows!(t.rows, R =>
                tile_b::<16, _, R, 2, true>(s, g, aa, pp, &iv, cc, masks);
                1 2 3 4 5 6 7; 8)
        } else {
            seq_rows!(t.rows, R =>
                tile_b::<16, _, R, 1, true>(s, g, aa, [pan], &[iv[0]], cc, [mask]);
                1 2 3 4 5 6 7; 8)
        }
    }
}

super::shared_drivers!(Avx512Kernel, driver::packed_a::<Avx512Kernel>, "avx512f", "AVX-512F");

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

/// A GEMV group ([`KernelB::gemv`]): [`gemv_panels`] over its one or two panels, the last one's
/// stores masked to its valid outputs.
///
/// # Safety
/// AVX-512F; [`KernelB::gemv`]'s contract.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gemv_at(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize) {
    let k = x.len();
    let mask = lanes((y.len() - 1) % 16 + 1);
    // SAFETY: check_gemv: x holds k values, y the group's outputs, b the panels of
    // 16 * k values, of which col0 / 16 and (when y.len() > 16) the next exist; stores stop at
    // y.len() (masked last panel).
    unsafe {
        let (xp, panel, yp) = (x.as_ptr(), b.as_ptr().add(col0 * k), y.as_mut_ptr());
        if y.len() > PACK_NR {
            gemv_panels::<2>(k, xp, panel, init, yp, mask);
        } else {
            gemv_panels::<1>(k, xp, panel, init, yp, mask);
        }
    }
}
