//! Packed f32 GEMM and GEMV.
//!
//! Two packed forms, both packed once when an operator is prepared:
//! - **packed B** (`Linear`, frame-major conv output): weights `W[n, k]` (`[out, in]`,
//!   PyTorch's layout) packed into column panels of [`PACK_NR`] outputs: panel `p` holds,
//!   for each `k`, the `PACK_NR` values `W[p*NR + j, k]` (zero padded past `n`).
//!   `C[m, n] = A[m, k] · W^T + bias[n]` with `A` row-major (activations, frame-major).
//! - **packed A** (channel-first conv): weights `W[m, k]` packed into row panels of
//!   [`PACK_MR`] outputs: panel `p` holds, for each `k`, the `PACK_MR` values
//!   `W[p*MR + i, k]` (zero padded past `m`). `C[m, n] = W · B[k, n] + bias[m]` with `B`
//!   row-major (channel-first activations `[channels, frames]`).
//!
//! Files: this one holds the packing, the geometry ([`GemmB`], [`GemmA`], [`BRows`],
//! [`Epilogue`]), the trait with its contract checks, team splits and the shared pieces
//! (bias-only results, padded bias); `driver.rs` the blocking (row blocks, panel groups,
//! tiles and tails) written once over the backends' micro-kernels, zero-sized types with
//! their tile shapes as constants; `portable.rs` the plain-Rust micro-kernels, `neon.rs`
//! the NEON ones, `x86/` the AVX2 and AVX-512 ones (`x86/avx2.rs`, `x86/avx512.rs`).
//!
//! # Micro-kernels
//!
//! Every backend blocks the output in registers and stream the packed weights once per
//! tile; only the activations are read unpacked, straight from the caller's rows.
//!
//! **NEON, packed B: 5x16.** One tile is 5 rows of `C` by one 16-wide panel: 20
//! `float32x4_t` accumulators. Per step of 4 `k` values the kernel loads one 4-value vector
//! from each of the 5 `A` rows (`A[i, k..k+4]`, unpacked frame-major activations) and, for
//! each of the 4 `k`, the panel's 16 weights with one `ld1 {4 regs}`; the 80 multiply-adds
//! are `fmla v.4s, v.4s, v.s[lane]` taking `A[i, k+l]` from lane `l`. Registers: 20
//! accumulators + 5 `A` vectors + 4 `B` vectors = 29 of 32, no spills. The 8x12 shape (the
//! usual choice when `A` is packed too) needs 24 + 8 + 3 = 35 registers here, because each
//! unpacked `A` row occupies a whole register for the 4 `k` values it supplies; 8x12 with
//! the `B` rows loaded twice fits but executes more instructions per FLOP. Ideal count per
//! 4 `k`: 80 `fmla`, 5 + 4 loads and 2 loop instructions, 91 for 640 FLOPs, i.e. 7.03 FLOPs
//! per instruction. The inner loop is `asm!`: written with intrinsics, LLVM spends 5 more
//! integer instructions per step on the 6 pointers and the counter, and a `vst1q_f32_x4` of
//! the accumulators makes it allocate each row as a register tuple and spill. Rows that do
//! not fill a tile (`m % 5`) run the same steps in intrinsics with 1..=4 rows; a partial
//! last panel (`n % 16`) is computed whole (its padding is zero) and only its valid columns
//! are stored; `k % 4` trailing values use `fmla` by a broadcast scalar.
//!
//! **NEON, packed A: 8x12.** One tile is an 8-row weight panel by 12 columns of `B`:
//! 24 accumulators. Per `k` the kernel loads the panel's 8 weights (2 vectors, the lane
//! sources, one `ld1`) and 12 values of row `k` of `B` (3 vectors, one `ld1`
//! post-incremented by `ldb`): 24 `fmla` by element; 29 registers. The whole tile is one
//! `asm!` block: accumulators set from the bias (`dup` by lane), the pairs of `k` of each
//! `B` segment ([`BRows`]) in a loop, the odd step, the optional [`Epilogue`] (3
//! instructions per accumulator) and 8 `st1` of 3 registers. Written with intrinsics
//! around an assembly loop, LLVM moved the 24 accumulators into the loop's registers,
//! spilled loop invariants around the epilogue and stored row by row with bounds checks:
//! far more instructions of set-up, epilogue and stores per tile than the one block.
//! Columns are covered by 12-wide tiles, then 8- and 4-wide tiles in intrinsics, and a
//! column-wise tail for the last 1..=3 columns (per column two accumulators and a `B`
//! value broadcast with `ld1r`: `B` rows are not padded, so nothing is read past them);
//! rows past `m` in the last panel are computed on zero weights and not stored (a 12-wide
//! tile then goes through an 8x12 buffer).
//!
//! [`GemmKernels::gemm_packed_a`] is also the general form behind conv2d: [`GemmA`] places
//! the `B` rows by a [`BRows`] map (several segments let a `kh x 1` conv read its input
//! directly) and carries a fused [`Epilogue`] `max(x, slope x, min)` (leaky ReLU then
//! clamp) applied to the accumulators before they are stored.
//!
//! **NEON, GEMV (packed B, `m = 1`).** Two panels (32 outputs) at a time: 8 accumulators,
//! one `x` vector of 4 `k` values as the lane source and 8 `ld1 {4 regs}` per 4 `k`
//! (`asm!` inner loop; 43 instructions per 256 FLOPs).
//!
//! The NEON shapes, and `asm!` over intrinsics, were chosen by instruction counts
//! (measured: see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
//!
//! **Portable.** The same idea in plain Rust over fixed-size accumulator arrays that LLVM
//! keeps in vector registers: packed B uses 2 rows x 16 columns on x86-64 (its baseline
//! SSE2 has 16 vector registers; 4 x 16 spills there) and 4 x 16 on aarch64; packed A
//! uses 8 rows x 4 columns, vectorised along the packed weights with `B[k, j]` broadcast.
//! Portable code is compiled without FMA contraction (a multiply-add is two
//! instructions), so the backends differ by rounding. It is the same code on every target
//! (the reference path, "baseline" in the host tables of BENCHMARKS.md).
//!
//! # x86-64: AVX-512F and AVX2 + FMA
//!
//! The [`X86`](crate::X86) backend's micro-kernels, their tile shapes and register
//! budgets: [`x86`].

mod driver;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
pub mod x86;

use super::parallel::{grid_blocks, row_blocks, Grid, Parallel, Rows};
use super::strided::StridedMut;
use super::{BackendType, Portable};
use crate::error::Error;

/// Width (outputs) of a packed-B column panel.
pub const PACK_NR: usize = 16;
/// Height (outputs) of a packed-A row panel.
pub const PACK_MR: usize = 8;

/// Elements of the packed-B buffer for `n` outputs and `k` inputs.
pub const fn packed_b_len(n: usize, k: usize) -> usize {
    n.div_ceil(PACK_NR) * PACK_NR * k
}

/// Elements of the packed-A buffer for `m` outputs and `k` inputs.
pub const fn packed_a_len(m: usize, k: usize) -> usize {
    m.div_ceil(PACK_MR) * PACK_MR * k
}

/// Packs `w` (`[n, k]` row-major) into the packed-B layout.
///
/// # Panics
/// When `w.len() != n * k` or `out.len() != packed_b_len(n, k)`.
pub fn pack_b(w: &[f32], n: usize, k: usize, out: &mut [f32]) {
    assert_eq!(w.len(), n * k, "pack_b: weight length");
    assert_eq!(out.len(), packed_b_len(n, k), "pack_b: output length");
    if k == 0 {
        return;
    }
    for (p, panel) in out.chunks_exact_mut(PACK_NR * k).enumerate() {
        if (p + 1) * PACK_NR <= n {
            // Full panel: write each packed row of 16 contiguously (a transpose).
            let rows = &w[p * PACK_NR * k..(p + 1) * PACK_NR * k];
            for (kk, dst) in panel.chunks_exact_mut(PACK_NR).enumerate() {
                for (j, d) in dst.iter_mut().enumerate() {
                    *d = rows[j * k + kk];
                }
            }
            continue;
        }
        for j in 0..PACK_NR {
            let col = p * PACK_NR + j;
            if col < n {
                let row = &w[col * k..col * k + k];
                for (dst, &v) in panel.iter_mut().skip(j).step_by(PACK_NR).zip(row) {
                    *dst = v;
                }
            } else {
                panel.iter_mut().skip(j).step_by(PACK_NR).for_each(|d| *d = 0.0);
            }
        }
    }
}

/// Packs `w` (`[m, k]` row-major) into the packed-A layout.
///
/// # Panics
/// When `w.len() != m * k` or `out.len() != packed_a_len(m, k)`.
pub fn pack_a(w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    assert_eq!(w.len(), m * k, "pack_a: weight length");
    assert_eq!(out.len(), packed_a_len(m, k), "pack_a: output length");
    if k == 0 {
        return;
    }
    for (p, panel) in out.chunks_exact_mut(PACK_MR * k).enumerate() {
        for i in 0..PACK_MR {
            let row = p * PACK_MR + i;
            if row < m {
                let src = &w[row * k..row * k + k];
                for (dst, &v) in panel.iter_mut().skip(i).step_by(PACK_MR).zip(src) {
                    *dst = v;
                }
            } else {
                panel.iter_mut().skip(i).step_by(PACK_MR).for_each(|d| *d = 0.0);
            }
        }
    }
}

/// Where the rows of the `B` operand of [`GemmKernels::gemm_packed_a`] are: the
/// reduction runs over `segments` blocks of `rows` rows, and row `r = s * rows + q`
/// (segment `s`, row `q` of it) starts at `s * segment_stride + q * ldb`.
///
/// One segment (`BRows::contiguous`) is an ordinary row-major `B` with leading dimension
/// `ldb`. Several segments let a convolution read its input directly, without im2col: a
/// `kh x 1` conv2d (stride 1, no padding) over `x[c, h, w]` (`[channels, height, width]`)
/// has, for output pixel `p = h * width + w` and tap `i`, `B[(i, c), p] = x[c * height *
/// width + i * width + p]`: segment `i` is the input shifted by `i` image rows
/// (`segment_stride = width`), its rows are the channels (`ldb = height * width`).
/// Rows may overlap: the GEMM only reads `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BRows {
    /// Rows per segment.
    pub rows: usize,
    /// Distance (elements) between consecutive rows of a segment.
    pub ldb: usize,
    /// Number of segments (`>= 1`).
    pub segments: usize,
    /// Distance (elements) between the first rows of consecutive segments.
    pub segment_stride: usize,
}

impl BRows {
    /// An ordinary `[k, n]` operand, rows `ldb` apart.
    pub const fn contiguous(k: usize, ldb: usize) -> Self {
        Self { rows: k, ldb, segments: 1, segment_stride: 0 }
    }

    /// The reduction length `rows * segments`, `None` on overflow.
    pub const fn k(&self) -> Option<usize> {
        self.rows.checked_mul(self.segments)
    }

    /// Where each segment starts, in reduction order: the offsets of its first step in a
    /// packed-A panel (`s * rows * PACK_MR`) and of its first row in `B` (`s *
    /// segment_stride`).
    #[inline(always)]
    pub(crate) fn segment_starts(self) -> impl Iterator<Item = (usize, usize)> {
        (0..self.segments).map(move |s| (s * self.rows * PACK_MR, s * self.segment_stride))
    }

    /// Elements of `B` that `n` columns reach: `(segments - 1) * segment_stride + (rows - 1)
    /// * ldb + n` (0 when there is nothing to read), `None` on overflow.
    pub fn span(&self, n: usize) -> Option<usize> {
        if self.rows == 0 || self.segments == 0 || n == 0 {
            return Some(0);
        }
        (self.segments - 1)
            .checked_mul(self.segment_stride)?
            .checked_add((self.rows - 1).checked_mul(self.ldb)?)?
            .checked_add(n)
    }
}

/// An output stage fused into [`GemmKernels::gemm_packed_a`] ([`GemmA::epilogue`]): every
/// result `x` is stored as `max(x, slope * x, min)`, while it is still in registers.
///
/// With `0 <= slope <= 1` this is a leaky ReLU (`x` for `x >= 0`, `slope * x` below; PyTorch's
/// `LeakyReLU(negative_slope)`) followed by a clamp from below at `min`; `slope = 1` leaves
/// `x` as is, `min = -inf` clamps nothing. openWakeWord's embedding applies
/// `Epilogue { slope: 0.2, min: -0.4 }` after every conv but the last. The maximum is IEEE
/// `maximum` (NEON `fmax`): a NaN propagates, `max(-0, +0) = +0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epilogue {
    /// Multiplier of the second candidate (`slope * x`).
    pub slope: f32,
    /// Lower bound of the result.
    pub min: f32,
}

impl Epilogue {
    /// Leaky ReLU with `slope` (in `[0, 1]`), no clamp.
    pub const fn leaky_relu(slope: f32) -> Self {
        Self { slope, min: f32::NEG_INFINITY }
    }

    /// Clamp from below at `min` only.
    pub const fn clamp_min(min: f32) -> Self {
        Self { slope: 1.0, min }
    }

    /// The stage on one value (what both backends compute, bit for bit).
    #[inline(always)]
    pub fn apply(&self, x: f32) -> f32 {
        fmax(fmax(x, self.slope * x), self.min)
    }
}

/// IEEE `maximum` as NEON's `fmax` computes it: a NaN operand gives NaN, and of two equal
/// values (`-0` and `+0`) the positive one (the AND of the sign bits).
#[inline(always)]
pub(crate) fn fmax(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() {
        a
    } else if b > a || b.is_nan() {
        b
    } else {
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// The inputs of the GEMM hooks ([`GemmKernels::gemm_packed_b_unchecked`],
/// [`GemmKernels::gemm_packed_a_unchecked`]): `(a, b, bias)`, each as the entry point
/// takes it.
pub type Operands<'a> = (&'a [f32], &'a [f32], Option<&'a [f32]>);

/// The geometry of [`GemmKernels::gemm_packed_b`]: `C[m, n] = A[m, k] · W^T + bias`, rows
/// of `A` `lda` apart, rows of `C` `ldc` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmB {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Outputs: columns of `C`, rows of `W`.
    pub n: usize,
    /// Reduction length: columns of `A` and `W`.
    pub k: usize,
    /// Distance (elements) between rows of `A` (`>= k`).
    pub lda: usize,
    /// Distance (elements) between rows of `C` (`>= n`).
    pub ldc: usize,
}

impl GemmB {
    /// Tight rows: `lda = k`, `ldc = n`.
    pub const fn contiguous(m: usize, n: usize, k: usize) -> Self {
        Self { m, n, k, lda: k, ldc: n }
    }
}

/// The geometry of [`GemmKernels::gemm_packed_a`]: `C[m, n] = e(W[m, k] · B[k, n] + bias)`
/// with the rows of `B` placed by `rows` ([`BRows`]; `k = rows.rows * rows.segments`), `e`
/// the `epilogue` (identity when `None`) and rows of `C` `ldc` apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmA {
    /// Outputs: rows of `W` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// Where the `k` rows of `B` are.
    pub rows: BRows,
    /// The output stage fused into the product, if any.
    pub epilogue: Option<Epilogue>,
    /// Distance (elements) between rows of `C` (`>= n`).
    pub ldc: usize,
}

impl GemmA {
    /// An ordinary row-major `B[k, n]` (rows `ldb` apart) and no epilogue.
    pub const fn contiguous(m: usize, n: usize, k: usize, ldb: usize, ldc: usize) -> Self {
        Self { m, n, rows: BRows::contiguous(k, ldb), epilogue: None, ldc }
    }

    /// The same product with `epilogue` as its output stage.
    pub const fn with_epilogue(self, epilogue: Option<Epilogue>) -> Self {
        Self { epilogue, ..self }
    }
}

/// GEMM and GEMV over packed weights. All products overwrite `c` / `y` (no accumulation).
///
/// The entry points ([`gemm_packed_b`](Self::gemm_packed_b),
/// [`gemm_packed_a`](Self::gemm_packed_a), [`gemv_packed_b`](Self::gemv_packed_b)) check
/// the contract and answer empty shapes (`m`, `n` or `k` zero) themselves, then call the
/// matching hook (`*_unchecked`). The hooks' provided bodies are the portable kernels
/// (`portable.rs`); a backend overrides hooks only, never entry points. A hook works on any
/// block of rows (packed-A: of row panels) and columns of a problem, so a caller may split
/// one product into tile-aligned blocks.
///
/// The `_in` entry points ([`gemm_packed_b_in`](Self::gemm_packed_b_in),
/// [`gemm_packed_a_in`](Self::gemm_packed_a_in), [`gemv_packed_b_in`](Self::gemv_packed_b_in))
/// do the same on an execution context ([`Parallel`]): blocks of whole tiles of the serial
/// tiling run as its tasks, so every context gives the bits of the serial call (see
/// [`parallel`](super::parallel)).
pub trait GemmKernels: BackendType {
    /// Rows of this backend's packed-B micro-kernel: the unit of the row blocks of
    /// [`gemm_packed_b_in`](Self::gemm_packed_b_in) (a row tail runs a shorter tile whose
    /// accumulation order may differ, so a block starts on a whole tile).
    const GEMM_B_ROW_TILE: usize = portable::P_MR_B;

    /// Columns of this backend's packed-B tiling (a multiple of [`PACK_NR`]: the panels a
    /// tile spans): the unit of the column blocks of
    /// [`gemm_packed_b_in`](Self::gemm_packed_b_in).
    const GEMM_B_COL_TILE: usize = PACK_NR;

    /// Columns of this backend's widest packed-A tile, which covers the columns from the
    /// first on (narrower tiles only at the end): the unit of the column blocks of
    /// [`gemm_packed_a_in`](Self::gemm_packed_a_in), so a block's tiles are the serial
    /// call's.
    const GEMM_A_COL_TILE: usize = portable::P_NC_A;

    /// `C[i, j] = sum_k A[i, k] * W[j, k] + bias[j]` for `i < m`, `j < n` (geometry `g`).
    ///
    /// `a`: row `i` at `a[i*lda .. i*lda + k]`; `b`: [`pack_b`] of `W[n, k]`;
    /// `bias`: `n` values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`. Columns
    /// `n..ldc` of `c` are left untouched. With `k = 0` the result is the bias (or 0).
    ///
    /// # Panics
    /// When a slice is too short for the geometry (`a` shorter than `(m-1)*lda + k`,
    /// `b` than [`packed_b_len`], `bias` than `n`, `c` than `(m-1)*ldc + n`), or
    /// `lda < k`, `ldc < n`.
    fn gemm_packed_b(g: GemmB, a: &[f32], b: &[f32], bias: Option<&[f32]>, c: &mut [f32]) {
        check_packed_b(g, a, b, bias, c);
        Self::gemm_packed_b_to(g, a, b, bias, StridedMut::new(c, g.m, g.n, g.ldc))
    }

    /// [`gemm_packed_b`](Self::gemm_packed_b) into a [`StridedMut`] block `c` of `g.m`
    /// rows of `g.n` values, `g.ldc` apart (e.g. a block of columns of a wider output).
    ///
    /// # Panics
    /// As [`gemm_packed_b`](Self::gemm_packed_b) for `a`, `b` and `bias`, and when `c` is
    /// not `g.m x g.n` with `ld = g.ldc`.
    fn gemm_packed_b_to(
        g: GemmB,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        mut c: StridedMut<'_>,
    ) {
        check_packed_b_operands(g, a, b, bias);
        check_block("gemm_packed_b", (g.m, g.n, g.ldc), &c);
        if g.m == 0 || g.n == 0 || g.k == 0 {
            return bias_only_b(bias, &mut c);
        }
        // SAFETY: the contract was checked above and every size is at least 1.
        unsafe { Self::gemm_packed_b_unchecked(g, (a, b, bias), c) }
    }

    /// `C[i, j] = e(sum_r W[i, r] * B[r, j] + bias[i])` for `i < m`, `j < n` (geometry `g`),
    /// the reduction `r < k = g.rows.rows * g.rows.segments` running over the rows of `B`
    /// that `g.rows` places ([`BRows`]: row `r` at `b[offset(r) .. offset(r) + n]`), `e`
    /// the epilogue (identity when `None`).
    ///
    /// `a`: [`pack_a`] of `W[m, k]` (its reduction order is `B`'s row order); `bias`: `m`
    /// values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`, columns `n..ldc`
    /// untouched. With `k = 0` the result is `e(bias)` (or `e(0)`). An ordinary row-major
    /// `B` is [`GemmA::contiguous`]; a segmented one gives the same bits as its rows
    /// gathered into a contiguous `B`, on every backend.
    ///
    /// # Panics
    /// When a slice is too short for the geometry (`a` shorter than [`packed_a_len`]`(m,
    /// k)`, `b` than [`BRows::span`]`(n)`, `bias` than `m`, `c` than `(m-1)*ldc + n`),
    /// `ldc < n`, or `k` or the span overflows `usize`.
    fn gemm_packed_a(g: GemmA, a: &[f32], b: &[f32], bias: Option<&[f32]>, c: &mut [f32]) {
        check_packed_a(&g, a, b, bias, c);
        Self::gemm_packed_a_to(g, a, b, bias, StridedMut::new(c, g.m, g.n, g.ldc))
    }

    /// [`gemm_packed_a`](Self::gemm_packed_a) into a [`StridedMut`] block `c` of `g.m`
    /// rows of `g.n` values, `g.ldc` apart (e.g. a block of columns of a wider output).
    ///
    /// # Panics
    /// As [`gemm_packed_a`](Self::gemm_packed_a) for `a`, `b` and `bias`, and when `c` is
    /// not `g.m x g.n` with `ld = g.ldc`.
    fn gemm_packed_a_to(
        g: GemmA,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        mut c: StridedMut<'_>,
    ) {
        let k = check_packed_a_operands(&g, a, b, bias);
        check_block("gemm_packed_a", (g.m, g.n, g.ldc), &c);
        if g.m == 0 || g.n == 0 || k == 0 {
            return bias_only_a(bias, g.epilogue, &mut c);
        }
        // SAFETY: the contract was checked above and every size is at least 1.
        unsafe { Self::gemm_packed_a_unchecked(g, (a, b, bias), c) }
    }

    /// GEMV (M = 1): `y[j] = sum_k x[k] * W[j, k] + bias[j]` with `b` = [`pack_b`] of
    /// `W[n, k]`; `x`: `k` values, `y`: `n` values. With `k = 0` the result is the bias
    /// (or 0).
    ///
    /// # Panics
    /// When a slice length does not match the geometry: `x.len() != k`, `y.len() != n`,
    /// `bias.len() != n`, or `b` shorter than [`packed_b_len`].
    fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        check_gemv(n, k, x, b, bias, y);
        if n == 0 || k == 0 {
            return bias_only_b(bias, &mut StridedMut::new(y, 1, n, n));
        }
        // SAFETY: the contract was checked above and every size is at least 1.
        unsafe { Self::gemv_packed_b_unchecked(x, b, bias, y) }
    }

    /// [`gemm_packed_b`](Self::gemm_packed_b) on `par`: a grid of blocks of whole tiles,
    /// [`GEMM_B_ROW_TILE`](Self::GEMM_B_ROW_TILE) rows by
    /// [`GEMM_B_COL_TILE`](Self::GEMM_B_COL_TILE) columns of `C` (the same bits for any
    /// context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `c` is then partly written.
    ///
    /// # Panics
    /// As [`gemm_packed_b`](Self::gemm_packed_b), before any task runs.
    fn gemm_packed_b_in(
        par: &dyn Parallel,
        g: GemmB,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
    ) -> Result<(), Error> {
        check_packed_b(g, a, b, bias, c);
        if g.m == 0 || g.n == 0 || g.k == 0 {
            bias_only_b(bias, &mut StridedMut::new(c, g.m, g.n, g.ldc));
            return Ok(());
        }
        let grid = Grid {
            shape: (g.m, g.n, g.ldc),
            tile: (Self::GEMM_B_ROW_TILE, Self::GEMM_B_COL_TILE),
            work_per_value: g.k,
            fixed_rows: 0,
            join_tail: false,
        };
        grid_blocks(par, grid, c, |rows, cols, c| {
            let gs = GemmB { m: rows.len(), n: cols.len(), ..g };
            let a = &a[rows.start * g.lda..];
            let (b, bias) = (&b[cols.start * g.k..], bias.map(|b| &b[cols.start..]));
            // SAFETY: the contract was checked for the whole product and every size is at
            // least 1; rows `rows` of `A` times the panels from `cols.start / PACK_NR` on
            // (starting at `cols.start * k` of the packed `b`) into the block `c` are a
            // product of the same contract.
            unsafe { Self::gemm_packed_b_unchecked(gs, (a, b, bias), c) }
        })
    }

    /// [`gemm_packed_a`](Self::gemm_packed_a) on `par`: a grid of blocks of whole tiles,
    /// row panels ([`PACK_MR`] rows of `C`) by
    /// [`GEMM_A_COL_TILE`](Self::GEMM_A_COL_TILE) columns (the same bits for any context).
    /// Splitting columns as well as rows keeps outputs with few row panels (a conv with
    /// 24 output channels has 3) balanced on 2-4 threads.
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `c` is then partly written.
    ///
    /// # Panics
    /// As [`gemm_packed_a`](Self::gemm_packed_a), before any task runs.
    fn gemm_packed_a_in(
        par: &dyn Parallel,
        g: GemmA,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
    ) -> Result<(), Error> {
        let k = check_packed_a(&g, a, b, bias, c);
        if g.m == 0 || g.n == 0 || k == 0 {
            bias_only_a(bias, g.epilogue, &mut StridedMut::new(c, g.m, g.n, g.ldc));
            return Ok(());
        }
        let grid = Grid {
            shape: (g.m, g.n, g.ldc),
            tile: (PACK_MR, Self::GEMM_A_COL_TILE),
            work_per_value: k,
            fixed_rows: 0,
            join_tail: false,
        };
        grid_blocks(par, grid, c, |rows, cols, c| {
            let gs = GemmA { m: rows.len(), n: cols.len(), ..g };
            let (a, bias) = (&a[rows.start * k..], bias.map(|b| &b[rows.start..]));
            // SAFETY: the contract was checked for the whole product and every size is at
            // least 1; panel `rows.start / PACK_MR` starts at `rows.start * k` of the
            // packed `a`, and columns `cols` of `B` are `cols.len()` columns from
            // `b[cols.start]` under the same row map (its span shrinks by `cols.start`).
            unsafe { Self::gemm_packed_a_unchecked(gs, (a, &b[cols.start..], bias), c) }
        })
    }

    /// [`gemv_packed_b`](Self::gemv_packed_b) on `par`: blocks of whole pairs of panels
    /// (`2 * PACK_NR` outputs; the same bits for any context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`gemv_packed_b`](Self::gemv_packed_b), before any task runs.
    fn gemv_packed_b_in(
        par: &dyn Parallel,
        (n, k): (usize, usize),
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<(), Error> {
        check_gemv(n, k, x, b, bias, y);
        if n == 0 || k == 0 {
            bias_only_b(bias, &mut StridedMut::new(y, 1, n, n));
            return Ok(());
        }
        let split = Rows { shape: (n, 1, 1), tile: 2 * PACK_NR, join_tail: false, work_per_row: k };
        row_blocks(par, split, y, |cols, y| {
            let bias = bias.map(|b| &b[cols.clone()]);
            // SAFETY: as in `gemm_packed_b_in`; panel `cols.start / PACK_NR` starts at
            // `cols.start * k` of the packed `b`.
            unsafe { Self::gemv_packed_b_unchecked(x, &b[cols.start * k..], bias, y) }
        })
    }

    /// Hook of [`gemm_packed_b`](Self::gemm_packed_b), called only by it and by the
    /// blocks of [`gemm_packed_b_in`](Self::gemm_packed_b_in): writes the `m x n` block
    /// `c` (`c.ld() == g.ldc`) and nothing else.
    ///
    /// # Safety
    /// The contract of `gemm_packed_b` holds (checked) and `m, n, k >= 1`.
    unsafe fn gemm_packed_b_unchecked(g: GemmB, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        // SAFETY: forwarded contract.
        unsafe { driver::packed_b::<portable::PortableKernel>(g, a, b, bias, &mut c) }
    }

    /// Hook of [`gemm_packed_a`](Self::gemm_packed_a), called only by it and by the
    /// blocks of [`gemm_packed_a_in`](Self::gemm_packed_a_in): writes the `m x n` block
    /// `c` (`c.ld() == g.ldc`) and nothing else.
    ///
    /// # Safety
    /// The contract of `gemm_packed_a` holds (checked) and `m, n, k >= 1`.
    unsafe fn gemm_packed_a_unchecked(g: GemmA, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        // SAFETY: forwarded contract.
        unsafe { driver::packed_a::<portable::PortableKernel>(g, (), a, b, bias, &mut c) }
    }

    /// Hook of [`gemv_packed_b`](Self::gemv_packed_b), called only by it: `k = x.len()`,
    /// `n = y.len()`.
    ///
    /// # Safety
    /// The contract of `gemv_packed_b` holds (checked) and `n, k >= 1`.
    unsafe fn gemv_packed_b_unchecked(x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
        // SAFETY: forwarded contract.
        unsafe { driver::gemv::<portable::PortableKernel>(x, b, bias, y) }
    }
}

impl GemmKernels for Portable {}

/// Minimum length of a strided matrix with `rows` rows of `cols` values, `ld` apart.
const fn strided_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// The geometry contract of [`GemmKernels::gemm_packed_b`].
fn check_packed_b(g: GemmB, a: &[f32], b: &[f32], bias: Option<&[f32]>, c: &[f32]) {
    check_packed_b_operands(g, a, b, bias);
    assert!(c.len() >= strided_len(g.m, g.n, g.ldc), "gemm_packed_b: c too short");
}

/// The contract of [`GemmKernels::gemm_packed_b`] on everything but `c`.
fn check_packed_b_operands(g: GemmB, a: &[f32], b: &[f32], bias: Option<&[f32]>) {
    assert!(g.lda >= g.k, "gemm_packed_b: lda < k");
    assert!(g.ldc >= g.n, "gemm_packed_b: ldc < n");
    assert!(a.len() >= strided_len(g.m, g.k, g.lda), "gemm_packed_b: a too short");
    assert!(b.len() >= packed_b_len(g.n, g.k), "gemm_packed_b: packed b too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= g.n, "gemm_packed_b: bias too short");
    }
}

/// The geometry contract of [`GemmKernels::gemm_packed_a`]; returns `k`.
pub(crate) fn check_packed_a(
    g: &GemmA,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: &[f32],
) -> usize {
    let k = check_packed_a_operands(g, a, b, bias);
    assert!(c.len() >= strided_len(g.m, g.n, g.ldc), "gemm_packed_a: c too short");
    k
}

/// The contract of [`GemmKernels::gemm_packed_a`] on everything but `c`; returns `k`.
fn check_packed_a_operands(g: &GemmA, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> usize {
    let k = g.rows.k().expect("gemm_packed_a: k overflows");
    let span = g.rows.span(g.n).expect("gemm_packed_a: b span overflows");
    assert!(g.ldc >= g.n, "gemm_packed_a: ldc < n");
    assert!(a.len() >= packed_a_len(g.m, k), "gemm_packed_a: packed a too short");
    assert!(b.len() >= span, "gemm_packed_a: b too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= g.m, "gemm_packed_a: bias too short");
    }
    k
}

/// The output block of a `_to` entry point is the geometry's `(m, n, ldc)`.
fn check_block(name: &str, (m, n, ldc): (usize, usize, usize), c: &StridedMut<'_>) {
    assert!(c.rows() == m && c.cols() == n, "{name}: c is not {m} x {n}");
    assert!(m <= 1 || c.ld() == ldc, "{name}: c.ld() != ldc");
}

/// The geometry contract of [`GemmKernels::gemv_packed_b`].
fn check_gemv(n: usize, k: usize, x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &[f32]) {
    assert_eq!(x.len(), k, "gemv_packed_b: x length");
    assert_eq!(y.len(), n, "gemv_packed_b: y length");
    assert!(b.len() >= packed_b_len(n, k), "gemv_packed_b: packed b too short");
    if let Some(bias) = bias {
        assert_eq!(bias.len(), n, "gemv_packed_b: bias length");
    }
}

/// `C[i, j] = bias[j]` (or 0) over the block `c`: the packed-B product when `k = 0` (or
/// nothing to do).
fn bias_only_b(bias: Option<&[f32]>, c: &mut StridedMut<'_>) {
    let n = c.cols();
    for i in 0..c.rows() {
        let row = c.row(i);
        match bias {
            Some(bias) => row.copy_from_slice(&bias[..n]),
            None => row.fill(0.0),
        }
    }
}

/// `C[i, j] = e(bias[i])` (or `e(0)`) over the block `c`: the packed-A product when `k = 0`
/// (or nothing to do). Also conv2d's direct kernels' answer when `k = 0`.
pub(crate) fn bias_only_a(
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    c: &mut StridedMut<'_>,
) {
    for i in 0..c.rows() {
        let v = bias.map_or(0.0, |b| b[i]);
        c.row(i).fill(epilogue.map_or(v, |e| e.apply(v)));
    }
}

/// `bias[from..from + len]` zero padded to `N` values (`0` everywhere without bias): the
/// accumulator start of a tile, shared by every backend.
#[inline(always)]
pub(crate) fn padded<const N: usize>(bias: Option<&[f32]>, from: usize, len: usize) -> [f32; N] {
    let mut out = [0.0; N];
    if let Some(bias) = bias {
        out[..len].copy_from_slice(&bias[from..from + len]);
    }
    out
}
