//! The AVX2 + FMA kernels. Every driver has the contract of the matching hook, already
//! checked (geometry, `m, n, k >= 1`), and needs a CPU with AVX2 and FMA.

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::seq_rows;
use super::tile::{tile_b, At, Tile};
use super::{ABlock, TileA, VecEpilogue};
use crate::kernels::gemm::driver::{self, BOperands, BTile, KernelB};
use crate::kernels::gemm::{padded, GemmA, GemmB, PACK_MR, PACK_NR};
use crate::kernels::x86_simd::{Simd, Ymm};
use crate::kernels::StridedMut;
use core::arch::x86_64::*;

/// Rows of the packed-B tile (by one 16-wide panel: 2 vectors).
pub(crate) const MR_B: usize = 6;
/// Rows of `A` per block of the packed-B driver (a multiple of [`MR_B`]).
const MC_B: usize = 14 * MR_B;
/// Columns of the packed-A tile (3 vectors) by half an 8-row panel.
pub(crate) const NR_A: usize = 24;

/// An `_mm256_maskload_ps` / `_mm256_maskstore_ps` mask of the first `cols` lanes
/// (`cols` may be 0 or exceed 8).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn lanes(cols: usize) -> __m256i {
    let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_cmpgt_epi32(_mm256_set1_epi32(cols.min(8) as i32), idx)
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
/// round trip on that accumulator's dependency chain; measured: see BENCHMARKS.md,
/// Kernel design measurements).
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

/// The full 4x24 packed-A tile (as [`Tile::run`] with 4 rows by 3 vectors): the assembly
/// loop once per segment of `B`.
///
/// # Safety
/// AVX2 + FMA; [`Tile::run`]'s contract with 4 rows and 24 columns.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_a_24(t: &TileA, at: At, bias: &[f32]) {
    type T = Tile<8, Ymm, 4, 3, false>;
    let br = t.br;
    // SAFETY: AVX2 + FMA (contract), so the token may exist.
    let s = unsafe { Ymm::new() };
    let mut acc = T::start(s, t, at, bias, s.first(8));
    for seg in 0..br.segments {
        let (ws, bs) = (at.w.add(seg * br.rows * PACK_MR), at.b.add(seg * br.segment_stride));
        kernel_4x24(&mut acc, ws, bs, br.ldb, br.rows);
    }
    T::finish(s, acc, t.ep, (at.c, t.ldc), at.rows, s.first(8));
}

/// Reduction steps per block of the packed-A driver's blocked path (products with a longer
/// reduction, e.g. Moonshine's stem convs, `k` = 2,912 and 2,496): a 4x24 tile then reads
/// 24 KiB of packed `B` and 4 KiB of weights per block.
pub(crate) const KC_A: usize = 256;
/// Columns of `B` packed per block of the blocked path: 8 column blocks of [`NR_A`], so
/// every weight panel read for a block serves 192 columns (192 KiB of packed `B` per block,
/// on the stack).
const NC_A: usize = 8 * NR_A;

/// The packed-A driver: [`super::packed_a_blocked`] (blocks of [`KC_A`] steps by [`NC_A`]
/// columns for longer reductions) over [`packed_a_columns`].
///
/// # Safety
/// AVX2 + FMA; [`super::packed_a_blocked`]'s contract.
#[inline]
#[target_feature(enable = "avx2,fma")]
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
        super::packed_a_blocked::<NR_A, KC_A, NC_A>(g, t, a, b, c, |t, blk, ap, bp, cp| {
            packed_a_columns(t, blk, ap, bp, bias, cp)
        })
    }
}

/// The packed-A tiles over one block: column blocks of 24, every half panel over each
/// block; the last 1..=8 columns of a block (a block of 1..=8, or 17..=23 after two
/// vectors) by whole panels (one vector of 8 columns by 8 rows: 8 accumulators, enough
/// independent FMA chains, where a half panel by one vector would have 4 and wait on the
/// FMA latency).
///
/// # Safety
/// AVX2 + FMA; panel `p < m.div_ceil(8)` readable at `a.add(p * panel_stride + kk * 8 +
/// i)` (`kk < t.br`'s `k`, `i < 8`); for every column block `j`, the rows `t.br` places
/// from `b.add(j / NR_A * strip_stride)` readable for its columns; `c.add(r * t.ldc + j)`
/// writable (and readable when `t.accumulate`) for `r < m`, `j < n`; `bias`, if any,
/// holds `m` values.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn packed_a_columns(
    t: &TileA,
    blk: &ABlock,
    ap: *const f32,
    bp: *const f32,
    bias: Option<&[f32]>,
    cp: *mut f32,
) {
    let ABlock { m, n, panel_stride, strip_stride } = *blk;
    let ldc = t.ldc;
    // SAFETY: AVX2 + FMA (contract).
    let s = unsafe { Ymm::new() };
    let panels = m.div_ceil(PACK_MR);
    let mut j = 0;
    while j < n {
        let cols = (n - j).min(NR_A);
        let mask = s.first((cols - 1) % 8 + 1);
        let bj = bp.add(j / NR_A * strip_stride);
        for p in 0..panels {
            let row0 = p * PACK_MR;
            let rows = (m - row0).min(PACK_MR);
            let init = padded::<PACK_MR>(bias, row0, rows);
            // Up to 8 columns (the last block of a product, or the last 1..=7 columns of
            // a 17..=23 one): one tile of the whole panel. Else two halves of the panel:
            // rows 0..4 and 4..8 (the second may be empty).
            let (half_cols, rest) = match cols {
                1..=8 => (0, cols),
                17..=23 => (16, cols - 16),
                _ => (cols, 0),
            };
            if rest > 0 {
                let mask = s.first(rest);
                // SAFETY: as below, for the whole panel (offsets kk * 8 + i, i < 8) and
                // columns j + half_cols .. j + cols.
                unsafe {
                    let w = ap.add(p * panel_stride);
                    let (b, c) = (bj.add(half_cols), cp.add(row0 * ldc + j + half_cols));
                    let at = At { w, b, c, rows };
                    if rest == 8 {
                        Tile::<8, Ymm, 8, 1, false>::run(s, t, at, &init, mask);
                    } else {
                        Tile::<8, Ymm, 8, 1, true>::run(s, t, at, &init, mask);
                    }
                }
            }
            if half_cols == 0 {
                continue;
            }
            for h in 0..2 {
                let hrows = rows.saturating_sub(4 * h).min(4);
                if hrows == 0 {
                    continue;
                }
                let bias = &init[4 * h..];
                // SAFETY: as in the AVX-512 driver: panel p holds 8 * k values (this
                // half reads offsets kk * 8 + 4h + i, i < 4), every row of `b` that `br`
                // places holds the block's columns, the block `c` owns n values in rows
                // row0 + 4h + r < m; the tiles touch columns j..j + cols only (masked
                // tails).
                unsafe {
                    let w = ap.add(p * panel_stride + 4 * h);
                    let c = cp.add((row0 + 4 * h) * ldc + j);
                    let at = At { w, b: bj, c, rows: hrows };
                    match half_cols {
                        24 => tile_a_24(t, at, bias),
                        16 => Tile::<8, Ymm, 4, 2, false>::run(s, t, at, bias, mask),
                        _ => Tile::<8, Ymm, 4, 2, true>::run(s, t, at, bias, mask),
                    }
                }
            }
        }
        j += cols;
    }
}

/// The AVX2 micro-kernels of the shared drivers: packed B [`MR_B`] rows by one panel, GEMV
/// one panel at a time. (The packed-A product has its own driver, [`packed_a`]: its
/// long reductions run blocked over copies of `B`.)
pub(crate) struct Avx2Kernel;

impl KernelB for Avx2Kernel {
    const MR: usize = MR_B;
    const MC: usize = MC_B;

    #[inline(always)]
    unsafe fn tile(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
        // SAFETY: the caller's contract; the drivers run in `gemm_packed_b`, which
        // requires AVX2 and FMA.
        unsafe { tile_b_at(op, c, t) }
    }

    #[inline(always)]
    unsafe fn gemv(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize) {
        let (k, init) = (x.len(), init.first_chunk::<PACK_NR>().unwrap());
        // SAFETY: x holds k values, panel col0 / 16 16 * k values, y the panel's outputs;
        // stores stop at y.len() (masked); the drivers run in `gemv_packed_b`, which
        // requires AVX2 and FMA.
        unsafe {
            gemv_panel(k, x.as_ptr(), b.as_ptr().add(col0 * k), init, y.as_mut_ptr(), y.len())
        }
    }
}

/// Packed-B tile `t` ([`KernelB::tile`]): the bias into registers, then [`tile_b`] over
/// the panel's two vectors, with full or masked stores.
///
/// # Safety
/// AVX2 + FMA; [`KernelB::tile`]'s contract.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_b_at(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
    let (g, init) = (&op.g, &op.init);
    // SAFETY: AVX2 + FMA (contract), so the token may exist.
    let s = unsafe { Ymm::new() };
    let init = [s.load(init.as_ptr()), s.load(init.as_ptr().add(8))];
    // SAFETY: rows i..i + rows < m of `a` hold k values from i * lda, panel col0 / 16
    // holds 16 * k values, the block `c` owns n >= col0 + cols values from i * ldc in each
    // row i < m (`c.ld() == ldc`); masked stores stop at col0 + cols.
    unsafe {
        let aa = op.a.as_ptr().add(t.i * g.lda);
        let panel = op.b.as_ptr().add(t.col0 * g.k);
        let cc = c.as_mut_ptr().add(t.i * g.ldc + t.col0);
        // One panel in two vectors.
        let pp = [panel, panel.add(8)];
        if t.cols == PACK_NR {
            let masks = [s.first(8); 2];
            seq_rows!(t.rows, R =>
                tile_b::<8, _, R, 2, false>(s, g, aa, pp, Some(&init), cc, masks);
                1 2 3 4 5; 6)
        } else {
            let masks = [s.first(t.cols.min(8)), s.first(t.cols.saturating_sub(8))];
            seq_rows!(t.rows, R =>
                tile_b::<8, _, R, 2, true>(s, g, aa, pp, Some(&init), cc, masks);
                1 2 3 4 5; 6)
        }
    }
}

super::shared_drivers!(Avx2Kernel, packed_a, "avx2,fma", "AVX2 + FMA");

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
        *s =
            _mm256_add_ps(_mm256_add_ps(acc[0][h], acc[1][h]), _mm256_add_ps(acc[2][h], acc[3][h]));
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
