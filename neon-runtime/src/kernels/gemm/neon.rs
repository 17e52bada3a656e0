//! The NEON micro-kernels (tile shapes and register budgets in the module docs of
//! [`gemm`](super); measured counts in BENCHMARKS.md, "Kernel design measurements") and the
//! `Neon` overrides of the [`GemmKernels`] hooks, which run them under the shared drivers
//! (`driver.rs`).

use super::driver::{self, ATile, BOperands, BTile, KernelA, KernelB};
use super::{BRows, Epilogue, GemmA, GemmB, GemmKernels, Operands, PACK_MR, PACK_NR};
use crate::kernels::StridedMut;
use core::arch::aarch64::*;

/// Rows of the NEON packed-B tile.
const MR_B: usize = 5;

/// One `k` step of a packed-B tile: `acc[r] += A[r, k + L] * b` for every row `r`,
/// `A[r, k + L]` being lane `L` of `av[r]`.
#[inline(always)]
fn step_b<const L: i32, const R: usize>(
    acc: &mut [[float32x4_t; 4]; R],
    av: &[float32x4_t; R],
    b: &[float32x4_t; 4],
) {
    for (acc, &av) in acc.iter_mut().zip(av) {
        for (acc, &b) in acc.iter_mut().zip(b) {
            // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
            *acc = unsafe { vfmaq_laneq_f32::<L>(*acc, b, av) };
        }
    }
}

/// 16 values as 4 independent vectors.
///
/// # Safety
/// `p` must be readable for 16 values.
#[inline(always)]
unsafe fn ld4(p: *const f32) -> [float32x4_t; 4] {
    [vld1q_f32(p), vld1q_f32(p.add(4)), vld1q_f32(p.add(8)), vld1q_f32(p.add(12))]
}

/// Stores 4 vectors (16 values) at `p`.
///
/// # Safety
/// `p` must be writable for 16 values.
#[inline(always)]
unsafe fn st4(p: *mut f32, v: &[float32x4_t; 4]) {
    vst1q_f32(p, v[0]);
    vst1q_f32(p.add(4), v[1]);
    vst1q_f32(p.add(8), v[2]);
    vst1q_f32(p.add(12), v[3]);
}

/// Lines of the 5x16 inner loop for lane `$l`: load the panel row (16 weights) into
/// v25..v28, then `acc[r][j] += B[j] * A[r].s[$l]` with `acc[r][j]` in `v(4r+j)` and
/// `A[r]` in `v(20+r)`.
macro_rules! asm_k_step {
    ($l:literal) => {
        concat!(
            "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{b}], #64\n",
            asm_k_step!(@row $l, "v0", "v1", "v2", "v3", "v20"),
            asm_k_step!(@row $l, "v4", "v5", "v6", "v7", "v21"),
            asm_k_step!(@row $l, "v8", "v9", "v10", "v11", "v22"),
            asm_k_step!(@row $l, "v12", "v13", "v14", "v15", "v23"),
            asm_k_step!(@row $l, "v16", "v17", "v18", "v19", "v24"),
        )
    };
    (@row $l:literal, $c0:literal, $c1:literal, $c2:literal, $c3:literal, $a:literal) => {
        concat!(
            "fmla ", $c0, ".4s, v25.4s, ", $a, ".s[", $l, "]\n",
            "fmla ", $c1, ".4s, v26.4s, ", $a, ".s[", $l, "]\n",
            "fmla ", $c2, ".4s, v27.4s, ", $a, ".s[", $l, "]\n",
            "fmla ", $c3, ".4s, v28.4s, ", $a, ".s[", $l, "]\n",
        )
    };
}

/// The 5x16 inner loop over `blocks` steps of 4 `k` values (`blocks >= 1`), written in
/// assembly because LLVM spends 5 extra integer instructions per step on the 6
/// pointers and the counter; here each load post-increments its own pointer.
///
/// # Safety
/// `a[r]` readable for `4 * blocks` values, `panel` for `64 * blocks` values.
#[inline(always)]
unsafe fn kernel_5x16(
    acc: &mut [[float32x4_t; 4]; 5],
    a: [*const f32; 5],
    panel: *const f32,
    blocks: usize,
) {
    let [r0, r1, r2, r3, r4] = acc;
    core::arch::asm!(
        "2:",
        "ldr q20, [{a0}], #16",
        "ldr q21, [{a1}], #16",
        "ldr q22, [{a2}], #16",
        "ldr q23, [{a3}], #16",
        "ldr q24, [{a4}], #16",
        asm_k_step!(0),
        asm_k_step!(1),
        asm_k_step!(2),
        asm_k_step!(3),
        "subs {n}, {n}, #1",
        "b.ne 2b",
        a0 = inout(reg) a[0] => _,
        a1 = inout(reg) a[1] => _,
        a2 = inout(reg) a[2] => _,
        a3 = inout(reg) a[3] => _,
        a4 = inout(reg) a[4] => _,
        b = inout(reg) panel => _,
        n = inout(reg) blocks => _,
        inout("v0") r0[0], inout("v1") r0[1], inout("v2") r0[2], inout("v3") r0[3],
        inout("v4") r1[0], inout("v5") r1[1], inout("v6") r1[2], inout("v7") r1[3],
        inout("v8") r2[0], inout("v9") r2[1], inout("v10") r2[2], inout("v11") r2[3],
        inout("v12") r3[0], inout("v13") r3[1], inout("v14") r3[2], inout("v15") r3[3],
        inout("v16") r4[0], inout("v17") r4[1], inout("v18") r4[2], inout("v19") r4[3],
        out("v20") _, out("v21") _, out("v22") _, out("v23") _, out("v24") _,
        out("v25") _, out("v26") _, out("v27") _, out("v28") _,
        options(nostack, readonly),
    );
}

/// An assembly inner loop for `R` rows: `(accumulators, row pointers, panel, k / 4)`.
type AsmKernel<const R: usize> =
    unsafe fn(&mut [[float32x4_t; 4]; R], [*const f32; R], *const f32, usize);

/// A packed-B tile: `R` rows of `A` (row `r` at `a[r]`) times one 16-wide panel; the
/// first `cols` columns are stored to `c` (rows `g.ldc` apart). `R = 5` runs the
/// assembly inner loop, `R < 5` (the `m % 5` tail rows) the same steps in intrinsics.
///
/// # Safety
/// `a[r].add(kk)` must be readable for `r < R`, `kk < g.k`; `panel` must hold `16 * g.k`
/// values; `c.add(r * g.ldc + j)` writable for `r < R`, `j < cols <= 16`.
#[inline(always)]
unsafe fn tile_b<const R: usize>(
    g: &GemmB,
    a: [*const f32; R],
    panel: *const f32,
    init: &[float32x4_t; 4],
    c: *mut f32,
    cols: usize,
    asm_rows: Option<AsmKernel<R>>,
) {
    let (k, ldc) = (g.k, g.ldc);
    let mut acc = [*init; R];
    let blocks = k / 4;
    if let (Some(kernel), true) = (asm_rows, blocks > 0) {
        kernel(&mut acc, a, panel, blocks);
    } else {
        for blk in 0..blocks {
            let (kk, bp) = (4 * blk, panel.add(64 * blk));
            let av: [float32x4_t; R] = core::array::from_fn(|r| vld1q_f32(a[r].add(kk)));
            step_b::<0, R>(&mut acc, &av, &ld4(bp));
            step_b::<1, R>(&mut acc, &av, &ld4(bp.add(16)));
            step_b::<2, R>(&mut acc, &av, &ld4(bp.add(32)));
            step_b::<3, R>(&mut acc, &av, &ld4(bp.add(48)));
        }
    }
    for kk in 4 * blocks..k {
        let av: [float32x4_t; R] = core::array::from_fn(|r| vld1q_dup_f32(a[r].add(kk)));
        step_b::<0, R>(&mut acc, &av, &ld4(panel.add(16 * kk)));
    }
    // Plain 1-register stores: `vst1q_f32_x4` would make each accumulator row a
    // consecutive register tuple, which the register allocator then spills whole.
    for (r, acc) in acc.iter().enumerate() {
        let dst = c.add(r * ldc);
        if cols == PACK_NR {
            st4(dst, acc);
        } else {
            let mut t = [0.0f32; PACK_NR];
            st4(t.as_mut_ptr(), acc);
            core::ptr::copy_nonoverlapping(t.as_ptr(), dst, cols);
        }
    }
}

/// Pointers to rows `0..R` of `a` (rows `lda` apart).
///
/// # Safety
/// Rows `0..R` must lie inside `a`'s allocation.
#[inline(always)]
unsafe fn row_ptrs<const R: usize>(a: *const f32, lda: usize) -> [*const f32; R] {
    core::array::from_fn(|r| a.add(r * lda))
}

/// The NEON micro-kernels: packed B 5 rows by one panel (the 5x16 assembly loop), packed A
/// one panel by 12 columns (the 8x12 assembly tile, narrower tiles at the end of a row),
/// GEMV two panels at a time.
struct NeonKernel;

impl KernelB for NeonKernel {
    const MR: usize = MR_B;
    const GEMV_NP: usize = 2;

    /// A tile of 5 rows runs the assembly inner loop, one of the last 1..=4 rows the same
    /// steps in intrinsics.
    #[inline(always)]
    unsafe fn tile(op: &BOperands<'_>, c: &mut StridedMut<'_>, t: BTile) {
        let (g, cols) = (&op.g, t.cols);
        // SAFETY: every pointer stays inside the operands the contract gives: rows
        // i..i + rows < m of `a` hold k values from i*lda, panel col0 / 16 holds 16*k
        // values from col0*k, and the block `c` owns n >= col0 + cols values from i*ldc
        // in each row i < m (`c.ld() == ldc`); `init` holds 32 values.
        unsafe {
            let (ap, lda, init) = (op.a.as_ptr().add(t.i * g.lda), g.lda, &ld4(op.init.as_ptr()));
            let panel = op.b.as_ptr().add(t.col0 * g.k);
            let c = c.as_mut_ptr().add(t.i * g.ldc + t.col0);
            match t.rows {
                5 => tile_b::<5>(g, row_ptrs(ap, lda), panel, init, c, cols, Some(kernel_5x16)),
                4 => tile_b::<4>(g, row_ptrs(ap, lda), panel, init, c, cols, None),
                3 => tile_b::<3>(g, row_ptrs(ap, lda), panel, init, c, cols, None),
                2 => tile_b::<2>(g, row_ptrs(ap, lda), panel, init, c, cols, None),
                _ => tile_b::<1>(g, row_ptrs(ap, lda), panel, init, c, cols, None),
            }
        }
    }

    #[inline(always)]
    unsafe fn gemv(x: &[f32], b: &[f32], init: &[f32; 2 * PACK_NR], y: &mut [f32], col0: usize) {
        let k = x.len();
        // SAFETY: x holds k values, y the group's outputs, and b the panels of 16*k
        // values, of which col0 / 16 and (when y.len() > 16) the next exist.
        unsafe {
            let (xp, panel, yp) = (x.as_ptr(), b.as_ptr().add(col0 * k), y.as_mut_ptr());
            if y.len() > PACK_NR {
                gemv_panels::<2>(k, xp, panel, init, yp, y.len());
            } else {
                gemv_panels::<1>(k, xp, panel, init, yp, y.len());
            }
        }
    }
}

/// One `k` step of the packed-A tile: `acc[i] += W[i, k] * B[k, ..]`, `W[i, k]` being
/// lane `i % 4` of `w.(i / 4)`.
#[inline(always)]
fn step_a<const NV: usize>(
    acc: &mut [[float32x4_t; NV]; PACK_MR],
    w: float32x4x2_t,
    bv: &[float32x4_t; NV],
) {
    for v in 0..NV {
        // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
        unsafe {
            acc[0][v] = vfmaq_laneq_f32::<0>(acc[0][v], bv[v], w.0);
            acc[1][v] = vfmaq_laneq_f32::<1>(acc[1][v], bv[v], w.0);
            acc[2][v] = vfmaq_laneq_f32::<2>(acc[2][v], bv[v], w.0);
            acc[3][v] = vfmaq_laneq_f32::<3>(acc[3][v], bv[v], w.0);
            acc[4][v] = vfmaq_laneq_f32::<0>(acc[4][v], bv[v], w.1);
            acc[5][v] = vfmaq_laneq_f32::<1>(acc[5][v], bv[v], w.1);
            acc[6][v] = vfmaq_laneq_f32::<2>(acc[6][v], bv[v], w.1);
            acc[7][v] = vfmaq_laneq_f32::<3>(acc[7][v], bv[v], w.1);
        }
    }
}

/// Stores the first `rows` rows of a packed-A tile (`4 * NV` columns) to `c`.
///
/// # Safety
/// `c.add(r * ldc + j)` writable for `r < rows`, `j < 4 * NV`.
#[inline(always)]
unsafe fn store_a<const NV: usize>(
    acc: &[[float32x4_t; NV]; PACK_MR],
    rows: usize,
    c: *mut f32,
    ldc: usize,
) {
    for (r, acc) in acc.iter().enumerate().take(rows) {
        for (v, &acc) in acc.iter().enumerate() {
            vst1q_f32(c.add(r * ldc + 4 * v), acc);
        }
    }
}

/// Lines of the 8x12 inner loop for one `k`: the panel's 8 weights into v24, v25 and
/// 12 values of row `k` of `B` into v26..v28 (post-incremented by `ldb`), then
/// `acc[i][v] += B[v] * W[i]` with `acc[i][v]` in `v(3i+v)`.
macro_rules! asm_a_step {
    () => {
        concat!(
            "ld1 {{v24.4s, v25.4s}}, [{w}], #32\n",
            "ld1 {{v26.4s, v27.4s, v28.4s}}, [{b}], {ldb}\n",
            asm_a_step!(@row "v0", "v1", "v2", "v24", "0"),
            asm_a_step!(@row "v3", "v4", "v5", "v24", "1"),
            asm_a_step!(@row "v6", "v7", "v8", "v24", "2"),
            asm_a_step!(@row "v9", "v10", "v11", "v24", "3"),
            asm_a_step!(@row "v12", "v13", "v14", "v25", "0"),
            asm_a_step!(@row "v15", "v16", "v17", "v25", "1"),
            asm_a_step!(@row "v18", "v19", "v20", "v25", "2"),
            asm_a_step!(@row "v21", "v22", "v23", "v25", "3"),
        )
    };
    (@row $c0:literal, $c1:literal, $c2:literal, $w:literal, $l:literal) => {
        concat!(
            "fmla ", $c0, ".4s, v26.4s, ", $w, ".s[", $l, "]\n",
            "fmla ", $c1, ".4s, v27.4s, ", $w, ".s[", $l, "]\n",
            "fmla ", $c2, ".4s, v28.4s, ", $w, ".s[", $l, "]\n",
        )
    };
}

/// Lines of the 8x12 epilogue for one row of accumulators: `v = max(max(v, v * s), lo)`
/// with `s` in v24 and `lo` in v25 (v26 a temporary).
macro_rules! asm_epilogue_row {
    ($c0:literal, $c1:literal, $c2:literal) => {
        concat!(
            asm_epilogue_row!(@v $c0),
            asm_epilogue_row!(@v $c1),
            asm_epilogue_row!(@v $c2),
        )
    };
    (@v $c:literal) => {
        concat!(
            "fmul v26.4s, ", $c, ".4s, v24.4s\n",
            "fmax ", $c, ".4s, ", $c, ".4s, v26.4s\n",
            "fmax ", $c, ".4s, ", $c, ".4s, v25.4s\n",
        )
    };
}

/// A whole 8x12 tile in assembly: accumulators set to the bias, every segment of `br`
/// (pairs of `k` in a loop of two steps, then the odd step), the epilogue, and 8 rows
/// of 12 results stored with one `st1` of 3 registers each.
///
/// Everything between the loads of the bias and the stores stays in v0..v28, so LLVM
/// neither moves the 24 accumulators into place nor spills loop invariants around the
/// loop (as an intrinsics tile around an assembly loop does, at a cost of far more
/// set-up, epilogue and store instructions per tile; measured: see BENCHMARKS.md, Kernel
/// design measurements).
///
/// # Safety
/// `panel` readable for `8 * k` values (`k = br.rows * br.segments >= 1`), every row of
/// `B` under `br` readable for 12 values from `b`, `bias` for 8 values, `epilogue` (if
/// not null) for 2 values (`slope`, `min`), and `c.add(r * ldc + j)` writable for
/// `r < 8`, `j < 12`.
#[inline(always)]
unsafe fn asm_tile_8x12(
    panel: *const f32,
    b: *const f32,
    br: BRows,
    bias: *const f32,
    epilogue: *const f32,
    c: *mut f32,
    ldc: usize,
) {
    // SAFETY: reads exactly the panel, the rows of B (12 values each), the bias and
    // the epilogue constants, and writes 8 rows of 12 values of `c`, all covered by this
    // function's contract; only the declared registers are written.
    unsafe {
        core::arch::asm!(
            "ld1 {{v24.4s, v25.4s}}, [{bias}]",
            "dup v0.4s, v24.s[0]", "dup v1.4s, v24.s[0]", "dup v2.4s, v24.s[0]",
            "dup v3.4s, v24.s[1]", "dup v4.4s, v24.s[1]", "dup v5.4s, v24.s[1]",
            "dup v6.4s, v24.s[2]", "dup v7.4s, v24.s[2]", "dup v8.4s, v24.s[2]",
            "dup v9.4s, v24.s[3]", "dup v10.4s, v24.s[3]", "dup v11.4s, v24.s[3]",
            "dup v12.4s, v25.s[0]", "dup v13.4s, v25.s[0]", "dup v14.4s, v25.s[0]",
            "dup v15.4s, v25.s[1]", "dup v16.4s, v25.s[1]", "dup v17.4s, v25.s[1]",
            "dup v18.4s, v25.s[2]", "dup v19.4s, v25.s[2]", "dup v20.4s, v25.s[2]",
            "dup v21.4s, v25.s[3]", "dup v22.4s, v25.s[3]", "dup v23.4s, v25.s[3]",
            // Segments: rows / 2 pairs of steps, then the odd step.
            "3:",
            "mov {b}, {bseg}",
            "lsr {n}, {rows}, #1",
            "cbz {n}, 5f",
            "2:",
            asm_a_step!(),
            asm_a_step!(),
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "5:",
            "tbz {rows}, #0, 6f",
            asm_a_step!(),
            "6:",
            "add {bseg}, {bseg}, {sstride}",
            "subs {segs}, {segs}, #1",
            "b.ne 3b",
            // Epilogue.
            "cbz {ep}, 7f",
            "ld1r {{v24.4s}}, [{ep}], #4",
            "ld1r {{v25.4s}}, [{ep}]",
            asm_epilogue_row!("v0", "v1", "v2"),
            asm_epilogue_row!("v3", "v4", "v5"),
            asm_epilogue_row!("v6", "v7", "v8"),
            asm_epilogue_row!("v9", "v10", "v11"),
            asm_epilogue_row!("v12", "v13", "v14"),
            asm_epilogue_row!("v15", "v16", "v17"),
            asm_epilogue_row!("v18", "v19", "v20"),
            asm_epilogue_row!("v21", "v22", "v23"),
            "7:",
            "st1 {{v0.4s, v1.4s, v2.4s}}, [{c}], {ldc}",
            "st1 {{v3.4s, v4.4s, v5.4s}}, [{c}], {ldc}",
            "st1 {{v6.4s, v7.4s, v8.4s}}, [{c}], {ldc}",
            "st1 {{v9.4s, v10.4s, v11.4s}}, [{c}], {ldc}",
            "st1 {{v12.4s, v13.4s, v14.4s}}, [{c}], {ldc}",
            "st1 {{v15.4s, v16.4s, v17.4s}}, [{c}], {ldc}",
            "st1 {{v18.4s, v19.4s, v20.4s}}, [{c}], {ldc}",
            "st1 {{v21.4s, v22.4s, v23.4s}}, [{c}], {ldc}",
            bias = in(reg) bias,
            w = inout(reg) panel => _,
            b = out(reg) _,
            bseg = inout(reg) b => _,
            ldb = in(reg) br.ldb * 4,
            rows = in(reg) br.rows,
            segs = inout(reg) br.segments => _,
            sstride = in(reg) br.segment_stride * 4,
            n = out(reg) _,
            ep = inout(reg) epilogue => _,
            c = inout(reg) c => _,
            ldc = in(reg) ldc * 4,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _,
            out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _,
            out("v10") _, out("v11") _, out("v12") _, out("v13") _, out("v14") _,
            out("v15") _, out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _, out("v24") _,
            out("v25") _, out("v26") _, out("v27") _, out("v28") _,
            options(nostack),
        );
    }
}

/// Applies the epilogue to every accumulator: `max(max(x, slope * x), min)` (`fmax`).
#[inline(always)]
fn apply_epilogue(acc: &mut [float32x4_t], e: Epilogue) {
    // SAFETY: register-only NEON arithmetic (NEON is part of the aarch64 baseline).
    unsafe {
        let lo = vdupq_n_f32(e.min);
        for v in acc.iter_mut() {
            let t = vmulq_n_f32(*v, e.slope);
            *v = vmaxq_f32(vmaxq_f32(*v, t), lo);
        }
    }
}

/// `k` steps of the packed-A micro-kernel over one segment: `acc += W[.., ..k] · B`,
/// `B` row `kk` at `b + kk * ldb`.
///
/// # Safety
/// `panel` readable for `8 * k` values, `b.add(kk * ldb + j)` for `kk < k`, `j < 4 * NV`.
#[inline(always)]
unsafe fn segment_a<const NV: usize>(
    acc: &mut [[float32x4_t; NV]; PACK_MR],
    panel: *const f32,
    b: *const f32,
    k: usize,
    ldb: usize,
) {
    let mut kk = 0;
    while kk + 2 <= k {
        let (w, row) = (panel.add(kk * PACK_MR), b.add(kk * ldb));
        let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
        step_a::<NV>(acc, vld1q_f32_x2(w), &bv);
        let row = row.add(ldb);
        let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
        step_a::<NV>(acc, vld1q_f32_x2(w.add(PACK_MR)), &bv);
        kk += 2;
    }
    if kk < k {
        let (w, row) = (panel.add(kk * PACK_MR), b.add(kk * ldb));
        let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
        step_a::<NV>(acc, vld1q_f32_x2(w), &bv);
    }
}

/// The operands of one packed-A tile narrower than 12 columns: the 8-row weight panel
/// (`8 * k` values, `k = g.rows.rows * g.rows.segments`), `B` and `C` at the tile's first
/// column, the panel's bias and how many of its rows are stored.
#[derive(Clone, Copy)]
struct NarrowTile<'a> {
    g: &'a GemmA,
    panel: *const f32,
    b: *const f32,
    bias: &'a [f32; PACK_MR],
    c: *mut f32,
    rows: usize,
}

impl NarrowTile<'_> {
    /// The same tile `j` columns further right.
    ///
    /// # Safety
    /// `b.add(j)` and `c.add(j)` stay inside their operands.
    #[inline(always)]
    unsafe fn right(self, j: usize) -> Self {
        Self { b: self.b.add(j), c: self.c.add(j), ..self }
    }
}

/// The packed-A micro-kernel in intrinsics for 8 or 4 columns (`NV = 2, 1`): the
/// 8-row weight panel times `4 * NV` columns of `B` (rows placed by `g.rows` from `b`),
/// then the epilogue, then `rows` rows stored. (12 columns: [`asm_tile_8x12`].)
///
/// # Safety
/// `panel` must hold `8 * k` values; `b.add(offset(r) + j)` readable for every row
/// `r < k` and `j < 4 * NV`; `c.add(r * g.ldc + j)` writable for `r < rows`,
/// `j < 4 * NV`.
#[inline(always)]
unsafe fn tile_a<const NV: usize>(t: NarrowTile<'_>) {
    let (br, epilogue) = (t.g.rows, t.g.epilogue);
    let mut acc: [[float32x4_t; NV]; PACK_MR] =
        core::array::from_fn(|i| [vdupq_n_f32(t.bias[i]); NV]);
    for (wo, bo) in br.segment_starts() {
        segment_a(&mut acc, t.panel.add(wo), t.b.add(bo), br.rows, br.ldb);
    }
    if let Some(e) = epilogue {
        apply_epilogue(acc.as_flattened_mut(), e);
    }
    store_a(&acc, t.rows, t.c, t.g.ldc);
}

/// The packed-A tail for the last `cols < 4` columns, one column at a time: the 8
/// rows of column `j` are two vectors, updated per `k` by the panel's 8 weights times
/// `B[k, j]` broadcast (`ld1r`), so nothing past a row's end is read and no lane is
/// wasted (`n = 1` is a GEMV: 1 load of weights, 1 broadcast, 2 `fmla` per `k`).
///
/// # Safety
/// As [`tile_a`] with `cols` in place of `4 * NV`.
#[inline(never)]
unsafe fn tile_a_tail(t: NarrowTile<'_>, cols: usize) {
    match cols {
        1 => tail_cols::<1>(t),
        2 => tail_cols::<2>(t),
        _ => tail_cols::<3>(t),
    }
}

/// [`tile_a_tail`] for `C` columns.
///
/// # Safety
/// As [`tile_a`] with `C` in place of `4 * NV`.
#[inline(always)]
unsafe fn tail_cols<const C: usize>(t: NarrowTile<'_>) {
    let (br, epilogue, ldc) = (t.g.rows, t.g.epilogue, t.g.ldc);
    let init = vld1q_f32_x2(t.bias.as_ptr());
    // acc[j] = rows 0..4 and 4..8 of column j.
    let mut acc = [[init.0, init.1]; C];
    for (wo, bo) in br.segment_starts() {
        let (panel, b) = (t.panel.add(wo), t.b.add(bo));
        for kk in 0..br.rows {
            let w = vld1q_f32_x2(panel.add(kk * PACK_MR));
            let row = b.add(kk * br.ldb);
            for (j, acc) in acc.iter_mut().enumerate() {
                let v = vld1q_dup_f32(row.add(j));
                acc[0] = vfmaq_f32(acc[0], w.0, v);
                acc[1] = vfmaq_f32(acc[1], w.1, v);
            }
        }
    }
    if let Some(e) = epilogue {
        apply_epilogue(acc.as_flattened_mut(), e);
    }
    for (j, acc) in acc.iter().enumerate() {
        let mut tmp = [0.0f32; PACK_MR];
        vst1q_f32_x2(tmp.as_mut_ptr(), float32x4x2_t(acc[0], acc[1]));
        for (r, &v) in tmp.iter().enumerate().take(t.rows) {
            *t.c.add(r * ldc + j) = v;
        }
    }
}

impl KernelA for NeonKernel {
    const NR: usize = 12;
    const COLUMNS_OUTER: bool = false;
    /// The epilogue's constants `[slope, min]` for the assembly tile (null: none).
    type Ctx = *const f32;

    /// 12 columns run the assembly tile; the last 1..=11 columns of a row of tiles run
    /// 8- and 4-column tiles in intrinsics and the column-wise tail.
    #[inline(always)]
    unsafe fn tile(
        g: &GemmA,
        &ep: &*const f32,
        a: &[f32],
        b: &[f32],
        bias: &[f32; PACK_MR],
        c: &mut StridedMut<'_>,
        t: ATile,
    ) {
        let (br, ldc, rows) = (g.rows, g.ldc, t.rows);
        let k = br.rows * br.segments;
        // SAFETY: every pointer stays inside the operands the contract gives: panel
        // row0 / 8 holds 8*k values, every row r < k of `b` holds n values from its offset
        // (`BRows::span(n) <= b.len()`) and the tiles read columns j..j + cols <= n; the
        // block `c` owns n values from r*ldc in each row r < m, and the stores stop at row
        // m and column n.
        unsafe {
            let panel = a.as_ptr().add(t.row0 * k);
            let (b, c) = (b.as_ptr().add(t.j), c.as_mut_ptr().add(t.row0 * ldc + t.j));
            if t.cols == 12 {
                if rows == PACK_MR {
                    asm_tile_8x12(panel, b, br, bias.as_ptr(), ep, c, ldc);
                } else {
                    // A partial last panel: the tile goes to a buffer, `rows` rows out.
                    let mut t = [0.0f32; PACK_MR * 12];
                    let tp = t.as_mut_ptr();
                    asm_tile_8x12(panel, b, br, bias.as_ptr(), ep, tp, 12);
                    for r in 0..rows {
                        core::ptr::copy_nonoverlapping(tp.add(12 * r), c.add(r * ldc), 12);
                    }
                }
                return;
            }
            let narrow = NarrowTile { g, panel, b, bias, c, rows };
            let mut j = 0;
            if t.cols - j >= 8 {
                tile_a::<2>(narrow.right(j));
                j += 8;
            }
            if t.cols - j >= 4 {
                tile_a::<1>(narrow.right(j));
                j += 4;
            }
            if j < t.cols {
                tile_a_tail(narrow.right(j), t.cols - j);
            }
        }
    }
}

/// Lines of the GEMV inner loop for lane `$l`: 16 weights of each of the two panels
/// into v20..v23 and v24..v27, then 8 `fmla` by lane `$l` of `x` (v16).
macro_rules! asm_gemv_step {
    ($l:literal) => {
        concat!(
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{p0}], #64\n",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{p1}], #64\n",
            "fmla v0.4s, v20.4s, v16.s[",
            $l,
            "]\n",
            "fmla v1.4s, v21.4s, v16.s[",
            $l,
            "]\n",
            "fmla v2.4s, v22.4s, v16.s[",
            $l,
            "]\n",
            "fmla v3.4s, v23.4s, v16.s[",
            $l,
            "]\n",
            "fmla v4.4s, v24.4s, v16.s[",
            $l,
            "]\n",
            "fmla v5.4s, v25.4s, v16.s[",
            $l,
            "]\n",
            "fmla v6.4s, v26.4s, v16.s[",
            $l,
            "]\n",
            "fmla v7.4s, v27.4s, v16.s[",
            $l,
            "]\n",
        )
    };
}

/// The two-panel GEMV inner loop over `blocks` steps of 4 `k` (`blocks >= 1`), in
/// assembly for the post-incremented 4-register loads (LLVM splits them into `ldp`
/// pairs and adds pointer arithmetic; measured: see BENCHMARKS.md, Kernel design
/// measurements).
///
/// # Safety
/// `x` readable for `4 * blocks` values, `p0` and `p1` for `64 * blocks` each.
#[inline(always)]
unsafe fn gemv_asm_2x16(
    acc0: &mut float32x4x4_t,
    acc1: &mut float32x4x4_t,
    x: *const f32,
    p0: *const f32,
    p1: *const f32,
    blocks: usize,
) {
    core::arch::asm!(
        "2:",
        "ldr q16, [{x}], #16",
        asm_gemv_step!("0"),
        asm_gemv_step!("1"),
        asm_gemv_step!("2"),
        asm_gemv_step!("3"),
        "subs {n}, {n}, #1",
        "b.ne 2b",
        x = inout(reg) x => _,
        p0 = inout(reg) p0 => _,
        p1 = inout(reg) p1 => _,
        n = inout(reg) blocks => _,
        inout("v0") acc0.0, inout("v1") acc0.1, inout("v2") acc0.2, inout("v3") acc0.3,
        inout("v4") acc1.0, inout("v5") acc1.1, inout("v6") acc1.2, inout("v7") acc1.3,
        out("v16") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
        out("v24") _, out("v25") _, out("v26") _, out("v27") _,
        options(nostack, readonly),
    );
}

/// GEMV over `P` consecutive panels (`16 * P` outputs, `cols` of them valid).
///
/// # Safety
/// `panels` must hold `16 * P * k` values, `x` `k` values, `y` `cols` writable values.
#[inline(always)]
unsafe fn gemv_panels<const P: usize>(
    k: usize,
    x: *const f32,
    panels: *const f32,
    init: &[f32; 32],
    y: *mut f32,
    cols: usize,
) {
    let mut acc: [float32x4x4_t; P] =
        core::array::from_fn(|q| vld1q_f32_x4(init.as_ptr().add(16 * q)));
    let bp: [*const f32; P] = core::array::from_fn(|q| panels.add(q * PACK_NR * k));
    let mut kk = 0;
    macro_rules! lane_step {
        ($lane:literal, $xv:expr) => {
            for q in 0..P {
                let b = vld1q_f32_x4(bp[q].add(PACK_NR * (kk + $lane)));
                acc[q].0 = vfmaq_laneq_f32::<$lane>(acc[q].0, b.0, $xv);
                acc[q].1 = vfmaq_laneq_f32::<$lane>(acc[q].1, b.1, $xv);
                acc[q].2 = vfmaq_laneq_f32::<$lane>(acc[q].2, b.2, $xv);
                acc[q].3 = vfmaq_laneq_f32::<$lane>(acc[q].3, b.3, $xv);
            }
        };
    }
    if P == 2 && k >= 4 {
        let [p0, p1] = [bp[0], bp[P - 1]];
        let (a0, a1) = acc.split_at_mut(1);
        gemv_asm_2x16(&mut a0[0], &mut a1[0], x, p0, p1, k / 4);
        kk = k / 4 * 4;
    }
    while kk + 4 <= k {
        let xv = vld1q_f32(x.add(kk));
        lane_step!(0, xv);
        lane_step!(1, xv);
        lane_step!(2, xv);
        lane_step!(3, xv);
        kk += 4;
    }
    while kk < k {
        let xv = vld1q_dup_f32(x.add(kk));
        lane_step!(0, xv);
        kk += 1;
    }
    let mut t = [0.0f32; 32];
    for (q, acc) in acc.iter().enumerate() {
        vst1q_f32_x4(t.as_mut_ptr().add(16 * q), *acc);
    }
    core::ptr::copy_nonoverlapping(t.as_ptr(), y, cols);
}

impl GemmKernels for crate::kernels::Neon {
    const GEMM_B_ROW_TILE: usize = <NeonKernel as KernelB>::MR;
    const GEMM_A_COL_TILE: usize = <NeonKernel as KernelA>::NR;

    unsafe fn gemm_packed_b_unchecked(g: GemmB, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        // SAFETY: forwarded contract.
        unsafe { driver::packed_b::<NeonKernel>(g, a, b, bias, &mut c) }
    }

    unsafe fn gemm_packed_a_unchecked(g: GemmA, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        let consts = g.epilogue.map(|e| [e.slope, e.min]);
        let ep = consts.as_ref().map_or(core::ptr::null(), |e| e.as_ptr());
        // SAFETY: forwarded contract; `ep` points to the epilogue's constants (which
        // outlive the call) or is null.
        unsafe { driver::packed_a::<NeonKernel>(g, ep, a, b, bias, &mut c) }
    }

    unsafe fn gemv_packed_b_unchecked(x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
        // SAFETY: forwarded contract.
        unsafe { driver::gemv::<NeonKernel>(x, b, bias, y) }
    }
}
