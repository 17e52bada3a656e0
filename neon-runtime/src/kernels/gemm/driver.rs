//! The arch-neutral blocking of the packed f32 products, written once over per-architecture
//! micro-kernels (the matrixmultiply / tract `frame/mmm` pattern): a micro-kernel is a
//! zero-sized type whose tile shape is a set of associated constants, and each driver here
//! is generic over it and inlined into the backend's hook, so it monomorphises to that
//! backend's loops with the tile shape as constants.
//!
//! - [`packed_b`]: blocks of [`KernelB::MC`] rows of `A`; every group of
//!   [`KernelB::NP`] panels passes over each block (the block is reused from cache by every
//!   panel, each panel by every tile); within a block, tiles of [`KernelB::MR`] rows and
//!   one tile of the remaining rows.
//! - [`gemv`]: groups of [`KernelB::GEMV_NP`] panels, the last group shorter.
//! - [`packed_a`]: 8-row weight panels by column tiles of at most [`KernelA::NR`] columns
//!   (the last one narrower), panels innermost or outermost ([`KernelA::COLUMNS_OUTER`]).
//!
//! The team splits ([`GemmKernels`](super::GemmKernels)'s `_in` entry points) cut a product
//! into blocks of whole tiles of these loops, so every split gives the serial call's bits.

use super::{padded, GemmA, GemmB, PACK_MR, PACK_NR};
use crate::kernels::StridedMut;

/// Rows of `A` per block of the portable and NEON packed-B drivers: the block (`MC_B * k`
/// values) is reused from cache by every panel, while each panel (`PACK_NR * k`) is reused
/// by every tile.
pub(crate) const MC_B: usize = 80;

/// Where a packed-B tile is: rows `i .. i + rows` of `A` and `C` (`1 <= rows <=`
/// [`KernelB::MR`]) by columns `col0 .. col0 + cols` (`col0` a multiple of [`PACK_NR`]):
/// the `cols.div_ceil(PACK_NR) <=` [`KernelB::NP`] panels from `col0` on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BTile {
    pub(crate) i: usize,
    pub(crate) rows: usize,
    pub(crate) col0: usize,
    pub(crate) cols: usize,
}

/// What the tiles of one group of panels of a packed-B product share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BOperands<'a> {
    /// The product's geometry.
    pub(crate) g: GemmB,
    /// `A`: row `i` at `a[i * g.lda..]`.
    pub(crate) a: &'a [f32],
    /// The packed weights ([`pack_b`](super::pack_b)).
    pub(crate) b: &'a [f32],
    /// The accumulators' start: the bias of the group's columns (from its first), zero
    /// padded.
    pub(crate) init: [f32; 2 * PACK_NR],
}

/// A packed-B micro-kernel (`C = A · W^T + bias`, `W` packed by [`pack_b`](super::pack_b)):
/// `MR` rows of `A` by `NP` panels of 16 outputs held in registers while the panels'
/// weights stream through once.
pub(crate) trait KernelB {
    /// Rows of a whole tile.
    const MR: usize;
    /// Panels (of [`PACK_NR`] outputs) of a tile (1 or 2).
    const NP: usize = 1;
    /// Rows of `A` per block of the driver (a multiple of `MR`).
    const MC: usize = MC_B;
    /// Panels per step of the GEMV (1 or 2).
    const GEMV_NP: usize = 1;

    /// Writes tile `t` of `C`: `C[i, j] = sum_r A[i, r] W[j, r] + init[j - col0]`.
    ///
    /// # Safety
    /// The contract of [`GemmKernels::gemm_packed_b`](super::GemmKernels::gemm_packed_b)
    /// holds for `op.g`, `op.a`, `op.b` and the block `c` (`c.ld() == g.ldc`), `g.k >= 1`,
    /// and `t` is a tile of [`packed_b`]'s loops.
    unsafe fn tile(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile);

    /// Writes `y`, outputs `col0 .. col0 + y.len()`: `y[j] = sum_r x[r] W[col0 + j, r] +
    /// init[j]`, over the `y.len().div_ceil(PACK_NR) <= GEMV_NP` panels of `b` from
    /// `col0` on (`k = x.len()`).
    ///
    /// # Safety
    /// The contract of [`GemmKernels::gemv_packed_b`](super::GemmKernels::gemv_packed_b)
    /// holds for the whole product, `k >= 1`, and `y` is a group of [`gemv`]'s loop.
    unsafe fn gemv(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize);
}

/// The packed-B product over micro-kernel `K` (loops in the module docs).
///
/// # Safety
/// The contract of [`GemmKernels::gemm_packed_b`](super::GemmKernels::gemm_packed_b) holds
/// for `g`, `a`, `b`, `bias` and the block `c` (`c.ld() == g.ldc`), and `m, n, k >= 1`.
#[inline(always)]
pub(crate) unsafe fn packed_b<K: KernelB>(
    g: GemmB,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut StridedMut<'_>,
) {
    let (m, n) = (g.m, g.n);
    let panels = n.div_ceil(PACK_NR);
    for i0 in (0..m).step_by(K::MC) {
        let end = m.min(i0 + K::MC);
        let mut p = 0;
        while p < panels {
            let np = (panels - p).min(K::NP);
            let col0 = p * PACK_NR;
            let cols = (n - col0).min(np * PACK_NR);
            let op = BOperands { g, a, b, init: padded(bias, col0, cols) };
            let mut i = i0;
            while i < end {
                let t = BTile { i, rows: (end - i).min(K::MR), col0, cols };
                // SAFETY: the caller's contract; `t` is a tile of these loops.
                unsafe { K::tile(&op, c, t) };
                i += t.rows;
            }
            p += np;
        }
    }
}

/// The packed-B GEMV over micro-kernel `K`: groups of [`KernelB::GEMV_NP`] panels
/// (`k = x.len()`, `n = y.len()`).
///
/// # Safety
/// The contract of [`GemmKernels::gemv_packed_b`](super::GemmKernels::gemv_packed_b)
/// holds and `n, k >= 1`.
#[inline(always)]
pub(crate) unsafe fn gemv<K: KernelB>(x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    let n = y.len();
    let panels = n.div_ceil(PACK_NR);
    let mut p = 0;
    while p < panels {
        let np = (panels - p).min(K::GEMV_NP);
        let col0 = p * PACK_NR;
        let cols = (n - col0).min(np * PACK_NR);
        let init = padded(bias, col0, cols);
        // SAFETY: the caller's contract; panels p .. p + np exist.
        unsafe { K::gemv(x, b, &init, &mut y[col0..col0 + cols], col0) };
        p += np;
    }
}

/// Where a packed-A tile is: rows `row0 .. row0 + rows` of `C` (`row0` a multiple of
/// [`PACK_MR`], `1 <= rows <= PACK_MR`: one weight panel) by columns `j .. j + cols`
/// (`1 <= cols <=` [`KernelA::NR`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ATile {
    pub(crate) row0: usize,
    pub(crate) rows: usize,
    pub(crate) j: usize,
    pub(crate) cols: usize,
}

/// A packed-A micro-kernel (`C = e(W · B + bias)`, `W` packed by [`pack_a`](super::pack_a),
/// `B`'s rows placed by [`BRows`](super::BRows), `e` the fused [`Epilogue`](super::Epilogue)):
/// one 8-row weight panel by up to `NR` columns of `B`.
pub(crate) trait KernelA {
    /// Columns of the widest tile; narrower ones only at the end of a row of tiles.
    const NR: usize;
    /// Column blocks outermost (each `k x NR` block of `B` reused from cache by every
    /// panel), or panels outermost (each panel reused by every column block).
    const COLUMNS_OUTER: bool;
    /// What every tile of one product shares (e.g. the epilogue in the kernel's form),
    /// prepared once per call by the backend's hook.
    type Ctx;

    /// Writes tile `t` of `C`: `C[i, j] = e(sum_r W[i, r] B[r, j] + init[i - row0])`.
    ///
    /// # Safety
    /// The contract of [`GemmKernels::gemm_packed_a`](super::GemmKernels::gemm_packed_a)
    /// holds for `g`, `a`, `b` and the block `c` (`c.ld() == g.ldc`), `k >= 1`, `ctx` is
    /// the hook's for `g` and `t` is a tile of [`packed_a`]'s loops.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile(
        g: &GemmA,
        ctx: &Self::Ctx,
        a: &[f32],
        b: &[f32],
        init: &[f32; PACK_MR],
        c: &mut StridedMut<'_>,
        t: ATile,
    );
}

/// The packed-A product over micro-kernel `K` (loops in the module docs).
///
/// # Safety
/// The contract of [`GemmKernels::gemm_packed_a`](super::GemmKernels::gemm_packed_a) holds
/// for `g`, `a`, `b`, `bias` and the block `c` (`c.ld() == g.ldc`), `m, n, k >= 1`, and
/// `ctx` is what `K`'s tiles of `g` share.
#[inline(always)]
pub(crate) unsafe fn packed_a<K: KernelA>(
    g: GemmA,
    ctx: K::Ctx,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut StridedMut<'_>,
) {
    let (m, n) = (g.m, g.n);
    let panels = m.div_ceil(PACK_MR);
    let panel = |p: usize| {
        let row0 = p * PACK_MR;
        let rows = (m - row0).min(PACK_MR);
        (row0, rows, padded(bias, row0, rows))
    };
    if K::COLUMNS_OUTER {
        for j in (0..n).step_by(K::NR) {
            for p in 0..panels {
                let (row0, rows, init) = panel(p);
                let t = ATile { row0, rows, j, cols: (n - j).min(K::NR) };
                // SAFETY: the caller's contract; `t` is a tile of these loops.
                unsafe { K::tile(&g, &ctx, a, b, &init, c, t) };
            }
        }
    } else {
        for p in 0..panels {
            let (row0, rows, init) = panel(p);
            for j in (0..n).step_by(K::NR) {
                let t = ATile { row0, rows, j, cols: (n - j).min(K::NR) };
                // SAFETY: as above.
                unsafe { K::tile(&g, &ctx, a, b, &init, c, t) };
            }
        }
    }
}
