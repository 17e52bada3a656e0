//! The packed-A tile with its output stage, and the packed-B tile, written once for both
//! levels over the level's vectors ([`Simd`]: `L` lanes): every function is
//! `#[inline(always)]`, compiled into the level's `#[target_feature]` callers (`avx2.rs`,
//! `avx512.rs`, conv2d's direct kernel).

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::{TileA, VecEpilogue};
use crate::kernels::gemm::{GemmB, PACK_MR, PACK_NR};
use crate::kernels::x86_simd::Simd;
use core::marker::PhantomData;

/// The output stage on one accumulator (see [`VecEpilogue`]).
#[inline(always)]
fn epilogue<const L: usize, S: Simd<L>>(
    s: S,
    x: S::V,
    slope: S::V,
    min: S::V,
    zero_fix: bool,
) -> S::V {
    let v = s.max(x, s.mul(x, slope));
    let r = s.max(min, v);
    if zero_fix {
        s.select(s.eq(v, min), min, r)
    } else {
        r
    }
}

/// Where one packed-A tile reads and writes: its weights `w` (`w[kk * 8 + i]` for row `i`
/// at reduction step `kk`), its first column of `B` (the rows placed by `TileA::br` from
/// `b`), its first element of `C` `c` (rows `TileA::ldc` apart), and how many of its rows
/// of `C` are stored.
#[derive(Clone, Copy)]
pub(super) struct At {
    pub(super) w: *const f32,
    pub(super) b: *const f32,
    pub(super) c: *mut f32,
    pub(super) rows: usize,
}

/// A packed-A tile of `R` rows by `NV` vectors of `L` lanes at the level `S`, the last
/// vector limited to the lanes of a mask when `MASKED` (masked loads and stores touch no
/// memory outside the mask).
pub(super) struct Tile<const L: usize, S, const R: usize, const NV: usize, const MASKED: bool>(
    PhantomData<S>,
);

impl<const L: usize, S: Simd<L>, const R: usize, const NV: usize, const MASKED: bool>
    Tile<L, S, R, NV, MASKED>
{
    /// `NV` vectors of consecutive values from `p`, the last one through `mask` when
    /// `MASKED` (zeros elsewhere).
    ///
    /// # Safety
    /// `p.add(j)` readable for every column `j` the loads reach.
    #[inline(always)]
    unsafe fn load(s: S, p: *const f32, mask: S::Mask) -> [S::V; NV] {
        let mut x = [s.zero(); NV];
        for (v, x) in x.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *x = unsafe {
                if MASKED && v + 1 == NV {
                    s.load_masked(p.add(L * v), mask)
                } else {
                    s.load(p.add(L * v))
                }
            };
        }
        x
    }

    /// The end of the tile: the output stage `ep`, if any, on the accumulators, then
    /// `rows` (0..=`R`) rows of them stored (`ldc` apart), the last vector of each
    /// through `mask` when `MASKED`.
    ///
    /// # Safety
    /// `c.add(r * ldc + j)` writable (`r < rows`) for every column `j` the stores reach.
    #[inline(always)]
    pub(super) unsafe fn finish(
        s: S,
        mut acc: [[S::V; NV]; R],
        ep: Option<VecEpilogue>,
        (c, ldc): (*mut f32, usize),
        rows: usize,
        mask: S::Mask,
    ) {
        if let Some(e) = ep {
            let (slope, min) = (s.splat(e.slope), s.splat(e.min));
            for i in 0..R {
                for v in 0..NV {
                    acc[i][v] = epilogue(s, acc[i][v], slope, min, e.zero_fix);
                }
            }
        }
        for i in 0..R {
            if i < rows {
                // SAFETY: row i < rows of `c`, the columns the stores reach (the caller's
                // contract).
                unsafe {
                    let ci = c.add(i * ldc);
                    for v in 0..NV {
                        if MASKED && v + 1 == NV {
                            s.store_masked(ci.add(L * v), acc[i][v], mask);
                        } else {
                            s.store(ci.add(L * v), acc[i][v]);
                        }
                    }
                }
            }
        }
    }

    /// Where the accumulators start: each row's `bias[i]`, or, when `t.accumulate` (a
    /// later block of a blocked reduction), the `at.rows` rows of `C` that the earlier
    /// blocks stored, as [`Tile::finish`] stores them (rows past `at.rows` start at 0 and
    /// are not stored). Continuing from the stored sums keeps each output's chain of FMAs,
    /// so a blocked reduction gives the bits of an unblocked one.
    ///
    /// # Safety
    /// `bias[i]` for `i < R` when not accumulating; `at.c.add(r * t.ldc + j)` readable
    /// (`r < at.rows`) for every column `j` the loads reach when accumulating.
    #[inline(always)]
    pub(super) unsafe fn start(
        s: S,
        t: &TileA,
        at: At,
        bias: &[f32],
        mask: S::Mask,
    ) -> [[S::V; NV]; R] {
        let mut acc = [[s.zero(); NV]; R];
        for i in 0..R {
            if !t.accumulate {
                acc[i] = [s.splat(bias[i]); NV];
            } else if i < at.rows {
                // SAFETY: row i < rows of `c`, the columns the loads reach (the caller's
                // contract).
                acc[i] = unsafe { Self::load(s, at.c.add(i * t.ldc), mask) };
            }
        }
        acc
    }

    /// The tile: `R` rows of an 8-row panel times `L * NV` columns of `B`; accumulators
    /// from [`Tile::start`], the output stage `t.ep`, if any, in registers; `at.rows`
    /// (0..=`R`) rows of `C` stored.
    ///
    /// # Safety
    /// `at.w` readable at `kk * 8 + i` (`kk < k = br.rows * br.segments`, `i < R`);
    /// `at.b.add(s * br.segment_stride + q * br.ldb + j)` readable (`s < br.segments`,
    /// `q < br.rows`) and `at.c.add(r * t.ldc + j)` writable (`r < at.rows`) for every
    /// column `j` of the tile; [`Tile::start`]'s contract.
    #[inline(always)]
    pub(super) unsafe fn run(s: S, t: &TileA, at: At, bias: &[f32], mask: S::Mask) {
        let br = t.br;
        // SAFETY: the caller's contract.
        let mut acc = unsafe { Self::start(s, t, at, bias, mask) };
        let mut w = at.w;
        for seg in 0..br.segments {
            // Wrapping: after the last step the pointers may leave the slices unused.
            let mut row = at.b.wrapping_add(seg * br.segment_stride);
            for _ in 0..br.rows {
                // SAFETY: a row of `B` and a step of the panel inside the tile (the
                // caller's contract).
                unsafe {
                    let bv = Self::load(s, row, mask);
                    for i in 0..R {
                        let wi = s.bcast(w.add(i));
                        for v in 0..NV {
                            acc[i][v] = s.fma(wi, bv[v], acc[i][v]);
                        }
                    }
                }
                w = w.wrapping_add(PACK_MR);
                row = row.wrapping_add(br.ldb);
            }
        }
        // SAFETY: the caller's contract.
        unsafe { Self::finish(s, acc, t.ep, (at.c, t.ldc), at.rows, mask) }
    }
}

/// Packed-B tile: `R` rows of `A` (`g.lda` apart) times `NV` vectors of `L` columns of
/// packed `B`, vector `q` of reduction step `kk` at `pp[q] + 16 kk` (one 16-wide panel in
/// two `ymm` vectors, or `NV` panels in `zmm` vectors), from the bias vectors `init`, or,
/// when `init` is `None` (a later block of a blocked reduction), from the `R` rows of `C`
/// that the earlier blocks stored (continuing an output's one chain of FMAs: the bits of
/// an unblocked reduction when `U` is 1); vector `q` of each row stored to `c + L q`
/// (rows `g.ldc` apart), through `masks[q]` when `MASKED`.
///
/// Fewer than 8 accumulators cannot hide the FMA latency (4 cycles, 2 per cycle): then `U`
/// sets take the `k` values in turn and are added at the end. The count depends on the
/// rows only (as if every tile had 2 vectors per row, the full tile of both levels), so a
/// column's bits do not depend on the tile's width: blocks of a team may start at any
/// panel.
///
/// # Safety
/// `a.add(r * g.lda)` readable for `g.k` values (`r < R`), `pp[q]` for `16 * (g.k - 1) +
/// L` values; `c.add(r * g.ldc + L * q + l)` writable for the lanes `l` stored (and
/// readable when `init` is `None`).
#[inline(always)]
pub(super) unsafe fn tile_b<
    const L: usize,
    S: Simd<L>,
    const R: usize,
    const NV: usize,
    const MASKED: bool,
>(
    s: S,
    g: &GemmB,
    a: *const f32,
    pp: [*const f32; NV],
    init: Option<&[S::V; NV]>,
    c: *mut f32,
    masks: [S::Mask; NV],
) {
    let (k, lda, ldc) = (g.k, g.lda, g.ldc);
    let u_sets = (4 / R).clamp(1, 4);
    let mut acc = [[[s.zero(); NV]; R]; 4];
    match init {
        Some(init) => acc[0] = [*init; R],
        None => {
            for (r, acc) in acc[0].iter_mut().enumerate() {
                let cr = c.wrapping_add(r * ldc);
                for q in 0..NV {
                    // SAFETY: the lanes stored below are readable (the caller's
                    // contract); masked loads touch no memory outside the mask.
                    acc[q] = unsafe {
                        if MASKED {
                            s.load_masked(cr.wrapping_add(L * q), masks[q])
                        } else {
                            s.load(cr.add(L * q))
                        }
                    };
                }
            }
        }
    }
    let mut rows = [a; R];
    for (r, row) in rows.iter_mut().enumerate() {
        *row = a.wrapping_add(r * lda);
    }
    let mut kk = 0;
    // SAFETY: steps kk < k of the rows and panels (the caller's contract).
    unsafe {
        while kk + u_sets <= k {
            for (u, acc) in acc.iter_mut().enumerate().take(u_sets) {
                step_b(s, acc, &rows, &pp, kk + u);
            }
            kk += u_sets;
        }
        while kk < k {
            step_b(s, &mut acc[0], &rows, &pp, kk);
            kk += 1;
        }
    }
    let [mut acc, a1, a2, a3] = acc;
    if u_sets > 1 {
        for r in 0..R {
            for q in 0..NV {
                let hi = s.add(a2[r][q], a3[r][q]);
                acc[r][q] = s.add(s.add(acc[r][q], a1[r][q]), hi);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // Wrapping: a vector whose mask is empty may lie past `c`.
        let cr = c.wrapping_add(r * ldc);
        for q in 0..NV {
            // SAFETY: the stored lanes (the caller's contract).
            unsafe {
                if MASKED {
                    s.store_masked(cr.wrapping_add(L * q), acc[q], masks[q]);
                } else {
                    s.store(cr.add(L * q), acc[q]);
                }
            }
        }
    }
}

/// One reduction step `kk` of [`tile_b`]: the `NV` vectors of packed `B`, times each row's
/// `A[r, kk]`, into `acc`.
///
/// # Safety
/// `pp[q] + 16 kk` readable for `L` values, `rows[r] + kk` readable.
#[inline(always)]
unsafe fn step_b<const L: usize, S: Simd<L>, const R: usize, const NV: usize>(
    s: S,
    acc: &mut [[S::V; NV]; R],
    rows: &[*const f32; R],
    pp: &[*const f32; NV],
    kk: usize,
) {
    let mut bv = [s.zero(); NV];
    for q in 0..NV {
        // SAFETY: the caller's contract.
        bv[q] = unsafe { s.load(pp[q].add(kk * PACK_NR)) };
    }
    for r in 0..R {
        // SAFETY: the caller's contract.
        let av = unsafe { s.bcast(rows[r].add(kk)) };
        for q in 0..NV {
            acc[r][q] = s.fma(av, bv[q], acc[r][q]);
        }
    }
}
