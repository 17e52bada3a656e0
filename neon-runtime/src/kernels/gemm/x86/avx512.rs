//! The AVX-512F kernels. Every driver has the contract of the matching hook, already
//! checked (geometry, `m, n, k >= 1`), and needs a CPU with AVX-512F. conv2d's direct
//! kernel (`conv2d/x86.rs`) shares the packed-A tile's lane masks and output stage.

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::seq_rows;
use super::tile::{tile_b, At, Tile};
use super::{ABlock, TileA, VecEpilogue};
use crate::kernels::gemm::driver::{self, ATile, BOperands, BTile, KernelA, KernelB};
use crate::kernels::gemm::{padded, GemmA, GemmB, PACK_MR, PACK_NR};
use crate::kernels::x86_simd::{Simd, Zmm};
use crate::kernels::StridedMut;
use core::arch::x86_64::*;

/// Rows of the packed-B tile.
pub(crate) const MR_B: usize = 12;
/// Panels (of 16 columns) of the packed-B tile.
pub(crate) const NP_B: usize = 2;
/// Rows of `A` per block of the shared packed-B driver (a multiple of [`MR_B`]), for
/// reductions up to [`KC_B`]: the block stays in L2 while every pair of panels passes over
/// it, each pair (`32 * k` values) in L1.
const MC_B: usize = 8 * MR_B;
/// Longest reduction of the shared packed-B driver; longer ones run blocked
/// ([`packed_b`]) in blocks of at most this many steps: a pair of panels' block (`32 * KC_B`
/// values, 32 KiB) stays in L1 while the tiles of [`MC_KB`] rows pass over it.
const KC_B: usize = 256;
/// Rows of `A` per block of the blocked packed-B driver (a multiple of [`MR_B`]): the
/// block's `MC_KB x KC_B` values (432 KiB) stay in L2 while every pair of panels passes
/// over them, so each block of packed `B` is read from beyond L2 once per row block.
const MC_KB: usize = 36 * MR_B;

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

    /// [`tile_a`] on tile `t` of `b` as it is (column `t.j` at `b[t.j]`).
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
        // SAFETY: the drivers run in `gemm_packed_a`, which requires AVX-512F and sets
        // `ctx.accumulate` false (the tile starts from `init`); by the contract
        // (check_packed_a) panel row0 / 8 holds 8 * k values, every row of `b` that `br`
        // places holds n >= j + cols values from its offset (`br.span(n) <= b.len()`),
        // the block `c` owns n values from r * ldc in each row r < m (`c.ld() == ldc`).
        unsafe {
            let w = a.as_ptr().add(t.row0 * k);
            let (b, c) = (b.as_ptr().add(t.j), c.as_mut_ptr().add(t.row0 * ctx.ldc + t.j));
            tile_a(ctx, At { w, b, c, rows: t.rows }, init, t.cols);
        }
    }
}

/// A packed-A tile of one 8-row panel by `cols` (1..=[`NR_A`]) columns at `at`: the widest
/// of the [`Tile`] shapes (1..=3 vectors) that fits, the last vector masked when `cols` is
/// not a multiple of 16 (masked loads and stores touch no memory outside the mask).
///
/// # Safety
/// AVX-512F; [`Tile::run`]'s contract for `cols` columns.
#[inline(always)]
unsafe fn tile_a(ctx: &TileA, at: At, init: &[f32; PACK_MR], cols: usize) {
    // SAFETY: AVX-512F (contract), so the token may exist; the tile touches columns
    // 0..cols only (masked tail), the caller's contract.
    unsafe {
        let (s, mask) = (Zmm::new(), lanes((cols - 1) % 16 + 1));
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

/// Reduction steps per block of the packed-A product's blocked path
/// ([`super::packed_a_blocked`]; Moonshine's stem convs, `k` = 2,912 and 2,496): an 8x48
/// tile then reads 48 KiB of packed `B` and 8 KiB of weights per block.
const KC_A: usize = 256;
/// Columns of `B` packed per block of the blocked path: 4 strips of [`NR_A`], so every
/// weight panel read for a block serves 192 columns (192 KiB of packed `B` on the stack,
/// as at AVX2).
const NC_A: usize = 4 * NR_A;

/// The packed-A driver: up to [`KC_A`] steps the shared driver
/// ([`driver::packed_a`] over [`Avx512Kernel`]), longer reductions blocked
/// ([`super::packed_a_blocked`]: [`KC_A`] steps by [`NC_A`] columns of `B` copied into
/// strips) over [`packed_a_columns`]. The same tiles in the same order per output: the
/// same bits either way.
///
/// # Safety
/// AVX-512F; [`super::packed_a_blocked`]'s contract.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn packed_a(
    g: GemmA,
    t: TileA,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut StridedMut<'_>,
) {
    // SAFETY: the caller's contract; `columns` gets blocks whose strips hold the rows it
    // is given (packed_a_blocked's guarantee) and `bias` holds m values (the contract).
    unsafe {
        if t.br.rows * t.br.segments <= KC_A {
            return driver::packed_a::<Avx512Kernel>(g, t, a, b, bias, c);
        }
        super::packed_a_blocked::<NR_A, KC_A, NC_A>(g, t, a, b, c, |t, blk, ap, bp, cp| {
            packed_a_columns(t, blk, ap, bp, bias, cp)
        })
    }
}

/// The packed-A tiles over one block of the blocked path: strips of [`NR_A`] columns
/// outermost, every panel over each strip while it is cached.
///
/// # Safety
/// AVX-512F; panel `p < m.div_ceil(8)` readable at `a.add(p * panel_stride + kk * 8 + i)`
/// (`kk < t.br`'s `k`, `i < 8`); for every strip `j`, the rows `t.br` places from
/// `b.add(j / NR_A * strip_stride)` readable for its columns; `c.add(r * t.ldc + j)`
/// writable (and readable when `t.accumulate`) for `r < m`, `j < n`; `bias`, if any,
/// holds `m` values.
#[inline(always)]
unsafe fn packed_a_columns(
    t: &TileA,
    blk: &ABlock,
    ap: *const f32,
    bp: *const f32,
    bias: Option<&[f32]>,
    cp: *mut f32,
) {
    let ABlock { m, n, panel_stride, strip_stride } = *blk;
    for j in (0..n).step_by(NR_A) {
        for p in 0..m.div_ceil(PACK_MR) {
            let row0 = p * PACK_MR;
            let rows = (m - row0).min(PACK_MR);
            let init = padded::<PACK_MR>(bias, row0, rows);
            // SAFETY: the caller's contract, for panel p, strip j and its rows of `c`.
            unsafe {
                let (w, b) = (ap.add(p * panel_stride), bp.add(j / NR_A * strip_stride));
                let at = At { w, b, c: cp.add(row0 * t.ldc + j), rows };
                tile_a(t, at, &init, (n - j).min(NR_A));
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
                tile_b::<16, _, R, 2, true>(s, g, aa, pp, Some(&iv), cc, masks);
                1 2 3 4 5 6 7 8 9 10 11; 12)
        } else {
            seq_rows!(t.rows, R =>
                tile_b::<16, _, R, 1, true>(s, g, aa, [pan], Some(&[iv[0]]), cc, [mask]);
                1 2 3 4 5 6 7 8 9 10 11; 12)
        }
    }
}

super::shared_drivers!(Avx512Kernel, packed_a, packed_b, "avx512f", "AVX-512F");

/// The packed-B driver: up to [`KC_B`] steps the shared driver ([`driver::packed_b`] over
/// [`Avx512Kernel`]); longer reductions in `k.div_ceil(KC_B)` blocks of equal length (the
/// last shorter), each block over rows of [`MC_KB`] by pairs of panels by tiles of
/// [`MR_B`] rows, later blocks continuing from the sums the earlier ones stored in `C`.
/// A tile of 4 or more rows keeps one chain of FMAs per output, so blocked it gives the
/// bits of the shared driver; the last tile, when it has fewer than 4 rows (its chains
/// take the `k` steps in turn, see [`tile_b`]), runs unblocked, as there.
///
/// # Safety
/// AVX-512F; [`KernelB::tile`]'s contract for the whole product (`m, n, k >= 1`).
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn packed_b(
    g: GemmB,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut StridedMut<'_>,
) {
    if g.k <= KC_B {
        // SAFETY: the caller's contract.
        return unsafe { driver::packed_b::<Avx512Kernel>(g, a, b, bias, c) };
    }
    let (m, n, k) = (g.m, g.n, g.k);
    let kc = k.div_ceil(k.div_ceil(KC_B));
    // Rows in tiles of one chain per output; the rest (0..=3 rows) is the last tile.
    let tail = if m % MR_B < 4 { m % MR_B } else { 0 };
    let blocked = m - tail;
    let panels = n.div_ceil(PACK_NR);
    // SAFETY: AVX-512F (contract), so the token may exist.
    let s = unsafe { Zmm::new() };
    for k0 in (0..k).step_by(kc) {
        let gk = GemmB { k: kc.min(k - k0), ..g };
        for i0 in (0..blocked).step_by(MC_KB) {
            let end = blocked.min(i0 + MC_KB);
            for p in (0..panels).step_by(NP_B) {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(NP_B * PACK_NR);
                let init = padded::<{ 2 * PACK_NR }>(bias, col0, cols);
                let iv = [s.load(init.as_ptr()), s.load(init.as_ptr().add(16))];
                let start = if k0 == 0 { Some(&iv) } else { None };
                let mask = lanes((cols - 1) % 16 + 1);
                let mut i = i0;
                while i < end {
                    let rows = (end - i).min(MR_B);
                    // SAFETY: check_packed_b: rows i..i + rows < m of `a` hold k values
                    // from i * lda, of which steps k0..k0 + gk.k are read; panels p and
                    // (when cols > 16) p + 1 exist (16 * k values each, read from step
                    // k0 on); the block `c` owns n >= col0 + cols values from i * ldc in
                    // each row i < m (`c.ld() == ldc`), stores limited to its valid lanes
                    // and, from the second block on, read where they are stored.
                    unsafe {
                        let aa = a.as_ptr().add(i * g.lda + k0);
                        let pan = b.as_ptr().add(col0 * k + k0 * PACK_NR);
                        let cc = c.as_mut_ptr().add(i * g.ldc + col0);
                        if cols > PACK_NR {
                            let (pp, masks) = ([pan, pan.add(PACK_NR * k)], [0xFFFF, mask]);
                            seq_rows!(rows, R =>
                                tile_b::<16, _, R, 2, true>(s, &gk, aa, pp, start, cc, masks);
                                4 5 6 7 8 9 10 11; 12)
                        } else {
                            let one = start.map(|iv| [iv[0]]);
                            seq_rows!(rows, R =>
                                tile_b::<16, _, R, 1, true>(s, &gk, aa, [pan], one.as_ref(), cc, [mask]);
                                4 5 6 7 8 9 10 11; 12)
                        }
                    }
                    i += rows;
                }
            }
        }
    }
    if tail > 0 {
        let op = BOperands { g, a, b, init: [0.0; 2 * PACK_NR] };
        for p in (0..panels).step_by(NP_B) {
            let col0 = p * PACK_NR;
            let cols = (n - col0).min(NP_B * PACK_NR);
            let op = BOperands { init: padded(bias, col0, cols), ..op };
            // SAFETY: the caller's contract; rows blocked..m are one tile of the shared
            // driver's loops (the last, as MC_B is a multiple of MR_B).
            unsafe { tile_b_at(&op, c, BTile { i: blocked, rows: tail, col0, cols }) };
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
