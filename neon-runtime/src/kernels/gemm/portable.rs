//! The portable micro-kernels: plain Rust over fixed-size accumulator arrays that LLVM keeps
//! in vector registers (tile shapes in the module docs of [`gemm`](super)), run by the
//! drivers of `driver.rs` in the [`GemmKernels`](super::GemmKernels) hooks' provided
//! methods.

use super::driver::{ATile, BOperands, BTile, KernelA, KernelB};
use super::{GemmA, GemmB, PACK_MR, PACK_NR};
use crate::kernels::StridedMut;

/// Rows of the portable packed-B tile (by 16 columns): 2 x 16 accumulators are 8 SSE
/// registers of x86-64's 16 (4 x 16 spills there); aarch64 has 32.
#[cfg(target_arch = "aarch64")]
pub(super) const P_MR_B: usize = 4;
#[cfg(not(target_arch = "aarch64"))]
pub(super) const P_MR_B: usize = 2;
/// Columns of the portable packed-A tile (by 8 rows, vectorised along the rows): 4
/// columns are 8 accumulator registers on x86-64 (16 SSE registers) and aarch64 alike;
/// 8 columns make LLVM's vectoriser shuffle on aarch64 and spill on x86-64 (measured: see
/// BENCHMARKS.md, Kernel design measurements).
pub(super) const P_NC_A: usize = 4;

/// The sums of the portable packed-B tile: `init` plus `R` rows of `a` (`g.lda` apart)
/// times one panel, `acc[r]` holding row `r`. Out of line for the reason
/// [`reduce_a`] is.
#[inline(never)]
fn reduce_b<const R: usize>(
    g: &GemmB,
    a: &[f32],
    panel: &[f32],
    init: &[f32; PACK_NR],
) -> [[f32; PACK_NR]; R] {
    let (k, lda) = (g.k, g.lda);
    let mut acc = [*init; R];
    let rows: [&[f32]; R] = core::array::from_fn(|r| &a[r * lda..r * lda + k]);
    for (kk, brow) in panel[..k * PACK_NR].chunks_exact(PACK_NR).enumerate() {
        let brow: &[f32; PACK_NR] = brow.try_into().unwrap();
        for r in 0..R {
            let av = rows[r][kk];
            for (acc, &bv) in acc[r].iter_mut().zip(brow) {
                *acc += av * bv;
            }
        }
    }
    acc
}

/// Portable packed-B tile: `R` rows of `a` (`g.lda` apart) times one panel, stored into
/// columns `col0 .. col0 + cols` of rows `i .. i + R` of `c`.
#[inline(always)]
fn tile_b<const R: usize>(
    g: &GemmB,
    a: &[f32],
    panel: &[f32],
    init: &[f32; PACK_NR],
    c: &mut StridedMut<'_>,
    (i, col0, cols): (usize, usize, usize),
) {
    let acc = reduce_b::<R>(g, a, panel, init);
    for (r, acc) in acc.iter().enumerate() {
        c.row(i + r)[col0..col0 + cols].copy_from_slice(&acc[..cols]);
    }
}

/// The sums of the portable packed-A tile: `init` plus the 8-row panel times `NC` columns
/// of `b` (`cols <= NC` of them valid; rows placed by `g.rows`, relative to `b[0]`), as
/// `acc[j]` holding column `j` for the 8 rows.
///
/// Out of line on purpose: inlined into the driver's loops, LLVM (rustc 1.95, aarch64)
/// kept columns 1.. of the accumulators in memory, a scalar multiply-add and a store per
/// product, whenever `B` has several segments (the convolutions: 3.4x the instructions of
/// sanoTTS's portable network, BENCHMARKS.md "Instruction counts"; the packed-B tile
/// likewise in Silero VAD's). On its own, `acc` is
/// a local that never escapes, so the accumulators stay in registers.
#[inline(never)]
fn reduce_a<const NC: usize>(
    g: &GemmA,
    panel: &[f32],
    b: &[f32],
    init: &[f32; PACK_MR],
    cols: usize,
) -> [[f32; PACK_MR]; NC] {
    // acc[j] holds column j for the 8 rows: the vectors run along the packed weights
    // (contiguous) and B[k, j] is broadcast; this keeps LLVM's vectoriser off shuffles.
    let mut acc: [[f32; PACK_MR]; NC] = [*init; NC];
    #[inline(always)]
    fn step<const NC: usize>(acc: &mut [[f32; PACK_MR]; NC], w: &[f32], brow: &[f32; NC]) {
        let w: &[f32; PACK_MR] = w.try_into().unwrap();
        for (acc, &bv) in acc.iter_mut().zip(brow) {
            for (acc, &wv) in acc.iter_mut().zip(w) {
                *acc += wv * bv;
            }
        }
    }
    let br = g.rows;
    let (k, ldb) = (br.rows, br.ldb);
    for (wo, bo) in br.segment_starts() {
        let (panel, b) = (&panel[wo..wo + k * PACK_MR], &b[bo..]);
        if cols == NC {
            for (kk, w) in panel.chunks_exact(PACK_MR).enumerate() {
                step(&mut acc, w, b[kk * ldb..kk * ldb + NC].try_into().unwrap());
            }
        } else {
            for (kk, w) in panel.chunks_exact(PACK_MR).enumerate() {
                let mut t = [0.0; NC];
                t[..cols].copy_from_slice(&b[kk * ldb..kk * ldb + cols]);
                step(&mut acc, w, &t);
            }
        }
    }
    acc
}

/// Portable packed-A tile: the 8-row panel times `NC` columns of `b` (rows placed by
/// `g.rows`, relative to `b[0]`), `cols <= NC` of them valid, stored into columns `j ..
/// j + cols` of `rows` rows of `c` from `row0` on, after the epilogue.
#[inline(always)]
fn tile_a<const NC: usize>(
    g: &GemmA,
    panel: &[f32],
    b: &[f32],
    init: &[f32; PACK_MR],
    c: &mut StridedMut<'_>,
    (row0, j, rows, cols): (usize, usize, usize, usize),
) {
    let acc = reduce_a::<NC>(g, panel, b, init, cols);
    let epilogue = g.epilogue;
    for r in 0..rows {
        for (dst, acc) in c.row(row0 + r)[j..j + cols].iter_mut().zip(&acc) {
            *dst = epilogue.map_or(acc[r], |e| e.apply(acc[r]));
        }
    }
}

/// The portable micro-kernels: packed B [`P_MR_B`] rows by one panel, packed A one panel
/// by [`P_NC_A`] columns, GEMV one panel at a time.
pub(super) struct PortableKernel;

impl KernelB for PortableKernel {
    const MR: usize = P_MR_B;
    #[inline(always)]
    unsafe fn tile(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
        let (g, init) = (&op.g, op.init.first_chunk::<PACK_NR>().unwrap());
        let panel = &op.b[t.col0 * g.k..(t.col0 + PACK_NR) * g.k];
        let (a, at) = (&op.a[t.i * g.lda..], (t.i, t.col0, t.cols));
        match t.rows {
            4 => tile_b::<4>(g, a, panel, init, c, at),
            3 => tile_b::<3>(g, a, panel, init, c, at),
            2 => tile_b::<2>(g, a, panel, init, c, at),
            _ => tile_b::<1>(g, a, panel, init, c, at),
        }
    }

    #[inline(always)]
    unsafe fn gemv(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize) {
        let k = x.len();
        let mut acc = *init.first_chunk::<PACK_NR>().unwrap();
        let panel = &b[col0 * k..(col0 + PACK_NR) * k];
        for (&xv, brow) in x.iter().zip(panel.chunks_exact(PACK_NR)) {
            for (acc, &bv) in acc.iter_mut().zip(brow) {
                *acc += xv * bv;
            }
        }
        let len = y.len();
        y.copy_from_slice(&acc[..len]);
    }
}

impl KernelA for PortableKernel {
    const NR: usize = P_NC_A;
    const COLUMNS_OUTER: bool = false;
    type Ctx = ();

    #[inline(always)]
    unsafe fn tile(
        g: &GemmA,
        _: &(),
        a: &[f32],
        b: &[f32],
        init: &[f32; PACK_MR],
        c: &mut StridedMut<'_>,
        t: ATile,
    ) {
        let k = g.rows.rows * g.rows.segments;
        let panel = &a[t.row0 * k..(t.row0 + PACK_MR) * k];
        let at = (t.row0, t.j, t.rows, t.cols);
        tile_a::<P_NC_A>(g, panel, &b[t.j..], init, c, at);
    }
}
