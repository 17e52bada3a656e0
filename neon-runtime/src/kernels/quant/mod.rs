//! Int8-weight GEMV and GEMM with f32 activations.
//!
//! Two weight formats, both `W[n, k]` (`[out_features, in_features]`), passed to the
//! kernels as a [`QuantFormat`] value:
//! - **per-tensor** (Moonshine's shipped format, [`QuantFormat::PerTensor`]):
//!   `W[j, k] = f32(q[j, k]) * scale + offset` with `q` in `[-128, 127]` and one `scale`,
//!   one `offset` per tensor. The int8 values are used as shipped (never requantised). The
//!   GEMVs compute the rewrite of the model card,
//!   `y[j] = scale * (x · q_j) + offset * sum(x) + bias[j]`: `x · q_j` is accumulated from
//!   exactly converted weights, `sum(x)` once per row. The GEMM converts each weight to
//!   `f32(q) * scale + offset` once per call (amortised over the rows) and multiplies by
//!   those, which needs no pass over the output after the product.
//! - **block-int8** (for models we convert, [`QuantFormat::Block`]): symmetric, one f32
//!   scale per 32 consecutive weights of a row, `W[j, k] = f32(q[j, k]) * scale[j, k / 32]`,
//!   no offset; `k` must be a multiple of [`BLOCK_K`] (the kernels assert it, the operator
//!   returns an error: padding would silently change the meaning of a converter's output).
//!
//! # Packed layout
//!
//! Weights are packed once ([`pack_i8`], or [`pack_i8_transposed`] from `[k, n]`) into
//! panels of [`PACK_NR`] = 16 outputs. Within a panel, `k` runs in groups of
//! [`QUANT_KR`] = 4: group `g` is 64 bytes, output `j`'s four weights
//! `q[j, 4g..4g + 4]` at bytes `4j..4j + 4`. Outputs past `n` and `k` values past `k` (up
//! to the next multiple of 4) are zero. This is the layout `sdot` reads (four consecutive
//! `k` per 32-bit lane), and one byte permutation (`tbl`) gives the widening path what it
//! wants at no extra cost, so both paths share one packed form (and `from_packed` data).
//! Block scales are packed alongside ([`pack_block_scales`]): for panel `p` and block
//! `b`, the 16 scales of the panel's outputs, contiguous.
//!
//! # Structure
//!
//! [`QuantKernels`] has three entry points, [`gemv_i8`](QuantKernels::gemv_i8) (`m = 1`),
//! [`gemm_i8`](QuantKernels::gemm_i8) (geometry [`QuantGemm`]) and
//! [`gemv_i8_dot`](QuantKernels::gemv_i8_dot) (int8 activations), each of both formats:
//! the weights travel as one value, [`QuantWeights`] (packed codes, [`QuantFormat`], bias).
//! They check the contract and handle empty shapes here, once, then call a backend's hook.
//! Every GEMM is the same driver (`converted.rs`): weight panels converted to f32, a block
//! of `k` at a time, by the backend's conversion, then the same backend's packed f32 GEMM
//! ([`GemmKernels::gemm_packed_b`]) on the converted block. `pack.rs` writes the packed
//! layout ([`pack_i8`], [`pack_block_scales`] and their transposed forms). The implementations:
//! - `portable.rs`: plain Rust, the default of every hook;
//! - `neon.rs`: the NEON widening GEMV and conversion (every ARMv8-A core);
//! - `dot.rs`: the NEON `sdot` GEMV (cores with the dot-product extension);
//! - `dot_gemm.rs`: the NEON `sdot` GEMM ([`gemm_i8_dot`](QuantKernels::gemm_i8_dot));
//! - `mmla_gemm.rs`: the NEON `smmla` GEMM of the same arithmetic ([`QuantPath::Mmla`]);
//! - `dot_widen.rs`: the same int8-activation GEMV and GEMM on cores without dotprod
//!   (`smull`, `smlal`, `sadalp`), with the `sdot` path's bits;
//! - `x86/`: the AVX2 + FMA and AVX-512F GEMV and conversion of [`X86`](super::X86).
//!
//! On a worker team ([`gemm_i8_in`](QuantKernels::gemm_i8_in)) the GEMM splits its output
//! by columns, in units of the panels converted together
//! ([`QUANT_GEMM_COL_TILE`](QuantKernels::QUANT_GEMM_COL_TILE)): each task converts the
//! weights of its outputs once and multiplies every row by them, so the team converts each
//! weight once, as a serial call does (a split into blocks of rows would convert every
//! weight once per block; measured: see BENCHMARKS.md, "Kernel design measurements (GEMM
//! and int8)"). Rows are split as well only when there are too few column units for the
//! threads to balance.
//!
//! # Measured
//!
//! Instructions per call and per multiply-add of every path on aarch64, against the f32
//! GEMV and GEMM, and the host timings of the x86 kernels: see
//! BENCHMARKS.md, "Kernel design measurements (GEMM and int8)".
//!
//! # Accuracy
//!
//! GEMV: `f32(q)` is exact and `x · q_j` is accumulated in f32, so the dot product has the
//! error of an f32 dot product, at most about `k * eps * sum |x q|`; `sum(x)` is summed in
//! 16 lanes (at most `(k / 16 + 4) * eps * sum |x|`). Multiplying by `offset` carries that
//! error over: when `offset * sum(x)` and `scale * (x · q)` nearly cancel, the result's
//! relative error grows, but its absolute error stays within
//! `~(k + 3) * eps * (|scale| sum |x q| + |offset| sum |x| + |bias|)`, the bound the tests
//! check against an f64 reference on the dequantised weights. GEMM per tensor: each
//! converted weight `w` is within `eps * (|scale q| + |offset|)` of `scale * q + offset`
//! (one rounding with a fused multiply-add, two otherwise), and the f32 product adds at
//! most about `k * eps * sum |x w|`: within the same bound, as `sum |x w|` is at most
//! `|scale| sum |x q| + |offset| sum |x|`. The `sdot` path (and
//! [`gemv_i8_dot`](QuantKernels::gemv_i8_dot) on every backend) adds the activation
//! quantisation error (`dot.rs`).

use super::gemm::{GemmKernels, PACK_NR};
use super::parallel::{grid_blocks, row_blocks, Grid, Parallel, Rows};
use super::strided::StridedMut;
use super::BackendType;
use crate::error::Error;

mod converted;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod dot;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod dot_gemm;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod dot_widen;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod mmla_gemm;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod pack;
mod portable;
mod x86;

use converted::gemm_converted;
use pack::k_padded;
pub use pack::{
    dequantize_row, pack_block_scales, pack_block_scales_transposed, pack_i8, pack_i8_transposed,
    packed_block_scales_len, packed_i8_len,
};

/// Consecutive `k` values of one output stored together in the packed layout (a group).
pub const QUANT_KR: usize = 4;
/// Weights per scale in block-int8.
pub const BLOCK_K: usize = 32;
/// `k` values converted to f32 at a time by the GEMM (its stack buffer holds
/// `KC * PACK_NR` f32: 16 KiB). A multiple of [`BLOCK_K`]. (The GEMM of
/// [`X86<I>`](super::X86), both levels, converts `2 * KC` values of two panels at a time:
/// 64 KiB.)
pub const KC: usize = 256;
/// Rows per call of the f32 GEMM on a converted block (partial products: `MC * PACK_NR`
/// f32 on the stack, 5 KiB).
pub const MC: usize = 80;

/// What converting a weight to f32 costs, in rows of multiply-adds on it (the GEMM's
/// conversion per weight against its f32 GEMM per multiply-add, in instructions: about 2
/// with NEON, about 4 with AVX2; measured: see BENCHMARKS.md, "Kernel design measurements
/// (GEMM and int8)"): how [`QuantKernels::gemm_i8_in`] weighs a split of rows, whose blocks
/// each convert the weights of their columns, against a split of columns, which converts
/// every weight once.
const CONVERT_ROWS: usize = 4;

/// Bytes of a group of one panel: 16 outputs x 4 `k`.
const GROUP: usize = PACK_NR * QUANT_KR;

/// Activations quantised at a time by [`QuantKernels::gemv_i8_dot`] (a multiple of
/// [`BLOCK_K`]): longer rows run in chunks, the partial sums accumulating in the output.
/// Stack: 2 KiB of codes and 256 B of block scales.
pub const DOT_KC: usize = 2048;

/// How the int8 weights are scaled: the weight format, as a value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QuantFormat<'a> {
    /// Per tensor: `W = f32(q) * scale + offset`.
    PerTensor {
        /// The tensor's scale.
        scale: f32,
        /// The tensor's offset.
        offset: f32,
    },
    /// Block-int8: `W[j, k] = f32(q[j, k]) * scale[j, k / 32]`, the scales in the layout
    /// of [`pack_block_scales`].
    Block(&'a [f32]),
}

impl<'a> QuantFormat<'a> {
    /// How the GEMM converts panel `panel`'s codes from block `from` on (`blocks` blocks
    /// per panel): per tensor the affine map, in blocks the panel's scales from `from` on.
    fn dequant(self, panel: usize, blocks: usize, from: usize) -> Dequant<'a> {
        match self {
            QuantFormat::Block(s) => Dequant::Block(
                &s[(panel * blocks + from) * PACK_NR..(panel + 1) * blocks * PACK_NR],
            ),
            QuantFormat::PerTensor { scale, offset } => Dequant::Affine { scale, offset },
        }
    }

    /// `(scale, offset * sum(x))` per tensor, `(1, 0)` in blocks: the epilogue
    /// `y = scale * dot + (shift + bias)` of both formats.
    fn scale_shift(self, x: &[f32]) -> (f32, f32) {
        match self {
            QuantFormat::PerTensor { scale, offset } => (scale, offset * sum_f32(x)),
            QuantFormat::Block(_) => (1.0, 0.0),
        }
    }
}

/// How the GEMM's conversion turns a panel's codes `q` into f32 weights.
#[derive(Clone, Copy, Debug)]
enum Dequant<'a> {
    /// Per tensor: `w = f32(q) * scale + offset`, one rounding where the backend fuses the
    /// multiply-add (x86 FMA, NEON `fmla`), two in portable code.
    Affine {
        /// The tensor's scale.
        scale: f32,
        /// The tensor's offset.
        offset: f32,
    },
    /// Block-int8: `w[j, r] = f32(q[j, r]) * s[(r / 32) * 16 + j]`, `s` the panel's packed
    /// block scales from the block of the first converted row on.
    Block(&'a [f32]),
}

/// A layer's int8 weights as the kernels take them: the packed codes of `q[n, k]`
/// ([`pack_i8`]), their format and the bias (`n` values, or `None`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantWeights<'a> {
    /// [`pack_i8`] of `q[n, k]` (at least [`packed_i8_len`] bytes).
    pub packed: &'a [i8],
    /// Per-tensor scale and offset, or the packed block scales.
    pub format: QuantFormat<'a>,
    /// `bias[j]` added to output `j`.
    pub bias: Option<&'a [f32]>,
}

impl<'a> QuantWeights<'a> {
    /// The weights of outputs `cols` (`cols.start` a multiple of [`PACK_NR`]) of a layer
    /// with `k` inputs: whole panels of the packed codes and block scales, and the bias.
    fn outputs(self, cols: core::ops::Range<usize>, k: usize) -> Self {
        let p0 = cols.start / PACK_NR;
        let format = match self.format {
            QuantFormat::Block(s) => QuantFormat::Block(&s[p0 * (k / BLOCK_K) * PACK_NR..]),
            f => f,
        };
        QuantWeights {
            packed: &self.packed[p0 * PACK_NR * k_padded(k)..],
            format,
            bias: self.bias.map(|b| &b[cols]),
        }
    }
}

/// A GEMV kernel's operands: the hook's `x` and `w` with the geometry spelled out, `n`
/// outputs (`y.len()`) and `k` inputs (`x.len()`), so every backend's kernel takes one value
/// and the output, `(g, y)`.
#[derive(Clone, Copy, Debug)]
struct Gemv<'a> {
    n: usize,
    k: usize,
    x: &'a [f32],
    w: QuantWeights<'a>,
}

impl<'a> Gemv<'a> {
    /// The operands of a GEMV of `x` into `y`.
    #[inline(always)]
    fn new(x: &'a [f32], w: QuantWeights<'a>, y: &[f32]) -> Self {
        Gemv { n: y.len(), k: x.len(), x, w }
    }
}

/// The geometry of an int8 GEMM `C = A · W^T` ([`QuantKernels::gemm_i8`]): `m` rows,
/// `n` outputs, `k` inputs; row `i` of `A` at `a[i * lda..i * lda + k]`, of `C` at
/// `c[i * ldc..i * ldc + n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantGemm {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Outputs (rows of `W`, columns of `C`).
    pub n: usize,
    /// Inputs (columns of `A` and `W`).
    pub k: usize,
    /// Distance between rows of `A` (`>= k`).
    pub lda: usize,
    /// Distance between rows of `C` (`>= n`).
    pub ldc: usize,
}

impl QuantGemm {
    /// Contiguous rows: `lda = k`, `ldc = n`.
    pub const fn contiguous(m: usize, n: usize, k: usize) -> Self {
        Self { m, n, k, lda: k, ldc: n }
    }
}

/// How a GEMV or GEMM with int8 weights runs ([`QuantKernels::gemv_i8_in`],
/// [`QuantKernels::gemm_i8_in`]); for a [`QuantLinear`], per-call choices given in
/// [`RunOptions`] (one for single rows, one for the GEMM; [`QuantLinear::run_with`]),
/// re-exported as `ops::quant::QuantPath`.
///
/// [`QuantLinear`]: crate::ops::quant::QuantLinear
/// [`QuantLinear::run_with`]: crate::ops::quant::QuantLinear::run_with
/// [`RunOptions`]: crate::ops::RunOptions
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuantPath {
    /// int8 weights widened to f32, f32 products ([`QuantKernels::gemv_i8`],
    /// [`QuantKernels::gemm_i8`]): exact products, the default.
    #[default]
    Widening,
    /// Activations quantised to int8 per block of 32, integer dot products (`sdot` on
    /// aarch64 CPUs with the dot-product extension; [`QuantKernels::gemv_i8_dot`],
    /// [`QuantKernels::gemm_i8_dot`]): several times fewer instructions than
    /// [`Widening`](Self::Widening) (`BENCHMARKS.md`, "Results", the int8 rows), at the
    /// cost of the activations' quantisation error.
    Dot,
    /// [`Dot`](Self::Dot) with the GEMM's integer products on `smmla` (aarch64 CPUs with
    /// the int8 matrix-multiply extension, FEAT_I8MM: [`cpu::aarch64_i8mm`]; `mmla_gemm.rs`)
    /// and its GEMV on `sdot`: the bits of [`Dot`](Self::Dot) on every CPU (elsewhere it
    /// runs [`Dot`](Self::Dot)'s kernels). Fewer instructions than the `sdot` GEMM:
    /// `BENCHMARKS.md`, "Moonshine encoder on the int8-activation path".
    ///
    /// [`cpu::aarch64_i8mm`]: super::cpu::aarch64_i8mm
    Mmla,
}

/// Int8-weight GEMV and GEMM of both formats ([`QuantWeights`], [`QuantFormat`]). All
/// products overwrite `c` / `y` (no accumulation).
///
/// Activations and results are f32. Non-finite scales, offsets or activations propagate as
/// IEEE arithmetic does (the operators reject non-finite scales and offsets); per tensor
/// the GEMV's rewrite and the GEMM's dequantised weights may then differ (an infinite
/// `scale` times a zero code is NaN in the GEMM's weight).
///
/// The entry points ([`gemv_i8`](Self::gemv_i8), [`gemm_i8`](Self::gemm_i8),
/// [`gemv_i8_dot`](Self::gemv_i8_dot)) check the contract and handle empty shapes, then
/// call their hook (`*_unchecked`). The hooks' default bodies are the portable
/// implementation; a backend overrides hooks only, never the entry points.
pub trait QuantKernels: BackendType + GemmKernels {
    /// Rows of `A` per block of [`gemm_i8_in`](Self::gemm_i8_in): the f32 GEMM's row
    /// tile when it divides [`MC`] (the rows of each call of the f32 GEMM, so a block
    /// boundary is a tile boundary of the serial call), else `MC` itself.
    const QUANT_GEMM_ROW_TILE: usize =
        if MC.is_multiple_of(Self::GEMM_B_ROW_TILE) { Self::GEMM_B_ROW_TILE } else { MC };

    /// Outputs (columns of `C`) per unit of the column blocks of
    /// [`gemm_i8_in`](Self::gemm_i8_in) (a multiple of [`PACK_NR`]): each block converts
    /// its own panels, and a column's bits must not depend on which panels are converted or
    /// multiplied together with it.
    const QUANT_GEMM_COL_TILE: usize = PACK_NR;

    /// GEMV: per tensor `y[j] = scale * sum_k x[k] q[j, k] + offset * sum_k x[k] + bias[j]`,
    /// in blocks `y[j] = sum_k x[k] q[j, k] scale[j, k / 32] + bias[j]`.
    ///
    /// `x`: `k` values; `y`: `n` values. With `k = 0` the result is the bias (or 0). Exact
    /// products (every backend's default: the result does not depend on the CPU).
    ///
    /// # Panics
    /// When `x.len() != k`, `y.len() != n`, `bias.len() != n`, or the packed weights are
    /// shorter than [`packed_i8_len`]; for blocks, when `k % 32 != 0` or the scales are
    /// shorter than [`packed_block_scales_len`].
    fn gemv_i8(n: usize, k: usize, x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        if gemv_needs_kernel("gemv_i8", n, k, x, w, y) {
            // SAFETY: the contract was checked; n, k >= 1.
            unsafe { Self::gemv_i8_unchecked(x, w, y) }
        }
    }

    /// GEMM: per tensor
    /// `C[i, j] = scale * sum_k A[i, k] q[j, k] + offset * sum_k A[i, k] + bias[j]`, in
    /// blocks `C[i, j] = sum_k A[i, k] q[j, k] scale[j, k / 32] + bias[j]`, for `i < m`,
    /// `j < n` ([`QuantGemm`]: rows of `A` `lda` apart, of `C` `ldc` apart; columns
    /// `n..ldc` untouched). With `k = 0` the result is the bias (or 0).
    ///
    /// # Panics
    /// When `lda < k`, `ldc < n`, or a slice is too short for the geometry (`a` shorter
    /// than `(m-1)*lda + k`, the packed weights than [`packed_i8_len`], `bias` than `n`,
    /// `c` than `(m-1)*ldc + n`); for blocks, when `k % 32 != 0` or the scales are shorter
    /// than [`packed_block_scales_len`].
    fn gemm_i8(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: &mut [f32]) {
        gemm_entry("gemm_i8", g, (a, w), c, Self::gemm_i8_unchecked)
    }

    /// GEMV on the int8-activation (`dot`) path: the contract of
    /// [`gemv_i8`](Self::gemv_i8), with the activations quantised to int8 per block of 32
    /// (`d = max|x| / 127`, codes `round(x / d)` ties to even) and `x · q` computed as
    /// `sum_b d_b * (xq_b · q_b)` with exact i32 block sums (times the weight block scales
    /// in block-int8); `offset * sum(x)` uses the f32 activations. Error bound and cost:
    /// `dot.rs`, the NEON `sdot` implementation.
    ///
    /// The default is the portable evaluation of that arithmetic; NEON runs `sdot` when
    /// the CPU has the dot-product extension and `smull` / `sadalp` (`dot_widen.rs`, the
    /// same bits) otherwise, so the results are the same formula on every CPU (the portable
    /// evaluation rounds `f32(sum) * d` before adding it, NEON fuses the two).
    ///
    /// # Panics
    /// As [`gemv_i8`](Self::gemv_i8).
    fn gemv_i8_dot(n: usize, k: usize, x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        if gemv_needs_kernel("gemv_i8_dot", n, k, x, w, y) {
            // SAFETY: the contract was checked; n, k >= 1.
            unsafe { Self::gemv_i8_dot_unchecked(x, w, y) }
        }
    }

    /// GEMM on the int8-activation (`dot`) path: the contract of
    /// [`gemm_i8`](Self::gemm_i8), each row of `A` computed as
    /// [`gemv_i8_dot`](Self::gemv_i8_dot) computes it (activations quantised per block of
    /// 32, exact i32 block sums, `offset * sum(row)` from the f32 row). Row `i` of the
    /// result has the bits of `gemv_i8_dot` on row `i` on the same backend and CPU.
    ///
    /// The default is the portable evaluation (row by row); NEON runs an `sdot`
    /// micro-kernel (4 rows x 8 outputs, `dot_gemm.rs`) when the CPU has the dot-product
    /// extension and its plain NEON GEMV row by row otherwise (`dot_widen.rs`); x86
    /// backends use the portable one.
    ///
    /// # Panics
    /// As [`gemm_i8`](Self::gemm_i8).
    fn gemm_i8_dot(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: &mut [f32]) {
        gemm_entry("gemm_i8_dot", g, (a, w), c, Self::gemm_i8_dot_unchecked)
    }

    /// The GEMV on `par` by `path`: [`gemv_i8`](Self::gemv_i8) ([`QuantPath::Widening`])
    /// or [`gemv_i8_dot`](Self::gemv_i8_dot) ([`QuantPath::Dot`]; each block quantises
    /// `x` itself: the same codes), in blocks of whole pairs of panels (`2 * PACK_NR`
    /// outputs, the unit of every backend's GEMV; the same bits for any context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`gemv_i8`](Self::gemv_i8), before any task runs.
    fn gemv_i8_in(
        par: &dyn Parallel,
        path: QuantPath,
        (n, k): (usize, usize),
        x: &[f32],
        w: QuantWeights<'_>,
        y: &mut [f32],
    ) -> Result<(), Error> {
        match path {
            QuantPath::Widening => {
                gemv_blocks(par, "gemv_i8", (n, k), (x, w), y, Self::gemv_i8_unchecked)
            }
            QuantPath::Dot | QuantPath::Mmla => {
                gemv_blocks(par, "gemv_i8_dot", (n, k), (x, w), y, Self::gemv_i8_dot_unchecked)
            }
        }
    }

    /// [`gemm_i8`](Self::gemm_i8) ([`QuantPath::Widening`]) or
    /// [`gemm_i8_dot`](Self::gemm_i8_dot) ([`QuantPath::Dot`]) on `par`: a grid of blocks
    /// of whole tiles,
    /// [`QUANT_GEMM_ROW_TILE`](Self::QUANT_GEMM_ROW_TILE) rows by
    /// [`QUANT_GEMM_COL_TILE`](Self::QUANT_GEMM_COL_TILE) outputs (the same bits for any
    /// context). Each block converts the weights of its columns once for all its rows, so
    /// blocks of columns convert every weight once in all; the grid splits rows as well
    /// only where that balances the blocks better than the repeated conversions cost
    /// (few column tiles for the threads). On the dot path every block quantises its rows
    /// itself (the same codes: each output's bits do not depend on the split either).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `c` is then partly written.
    ///
    /// # Panics
    /// As [`gemm_i8`](Self::gemm_i8), before any task runs.
    fn gemm_i8_in(
        par: &dyn Parallel,
        path: QuantPath,
        g: QuantGemm,
        a: &[f32],
        w: QuantWeights<'_>,
        c: &mut [f32],
    ) -> Result<(), Error> {
        let (name, hook): (_, QuantGemmHook) = match path {
            QuantPath::Widening => ("gemm_i8", Self::gemm_i8_unchecked),
            QuantPath::Dot => ("gemm_i8_dot", Self::gemm_i8_dot_unchecked),
            QuantPath::Mmla => ("gemm_i8_dot", Self::gemm_i8_mmla_unchecked),
        };
        check_gemm(name, g, a, w, c);
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        if g.k == 0 {
            bias_only(g, w.bias, c);
            return Ok(());
        }
        let grid = Grid {
            shape: (g.m, g.n, g.ldc),
            tile: (Self::QUANT_GEMM_ROW_TILE, Self::QUANT_GEMM_COL_TILE),
            work_per_value: g.k,
            fixed_rows: CONVERT_ROWS,
            join_tail: false,
        };
        grid_blocks(par, grid, c, |rows, cols, c| {
            let gs = QuantGemm { m: rows.len(), n: cols.len(), ..g };
            let (a, w) = (&a[rows.start * g.lda..], w.outputs(cols, g.k));
            // SAFETY: the contract was checked for the whole product; rows `rows` of `A`
            // times the weights of outputs `cols` (whole panels from `cols.start`, a
            // multiple of PACK_NR) into the block `c` are a product of the same contract,
            // with m, n, k >= 1: what `hook` (the entry point's hook) requires.
            unsafe { hook(gs, a, w, c) }
        })
    }

    /// The hook of [`gemv_i8`](Self::gemv_i8) (`k = x.len()`, `n = y.len()`); default: the
    /// portable GEMV.
    ///
    /// # Safety
    /// Called only by the entry point: contract checked, `n, k >= 1`.
    unsafe fn gemv_i8_unchecked(x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        portable::gemv(x.len(), x, w.packed, w.format, w.bias, y)
    }

    /// The hook of [`gemm_i8`](Self::gemm_i8) (and of the blocks of
    /// [`gemm_i8_in`](Self::gemm_i8_in)), writing the `m x n` block `c` (`c.ld() ==
    /// g.ldc`); default: the shared GEMM driver (weights converted to f32 a block at a
    /// time, see the module docs) with the portable conversion and this backend's f32 GEMM.
    ///
    /// # Safety
    /// Called only by the entry points: contract checked, `m, n, k >= 1`.
    unsafe fn gemm_i8_unchecked(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: StridedMut<'_>) {
        gemm_converted::<Self, 1, KC>(g, a, w, c, portable::convert)
    }

    /// The hook of [`gemm_i8_dot`](Self::gemm_i8_dot) (and of the dot path's blocks of
    /// [`gemm_i8_in`](Self::gemm_i8_in)), writing the `m x n` block `c`; default: the
    /// portable evaluation, row by row.
    ///
    /// # Safety
    /// Called only by the entry points: contract checked, `m, n, k >= 1`.
    unsafe fn gemm_i8_dot_unchecked(
        g: QuantGemm,
        a: &[f32],
        w: QuantWeights<'_>,
        c: StridedMut<'_>,
    ) {
        portable::gemm_dot(g, a, w, c)
    }

    /// The hook of the [`QuantPath::Mmla`] GEMM blocks of [`gemm_i8_in`](Self::gemm_i8_in):
    /// the contract and the bits of [`gemm_i8_dot_unchecked`](Self::gemm_i8_dot_unchecked),
    /// which is the default.
    ///
    /// # Safety
    /// As [`gemm_i8_dot_unchecked`](Self::gemm_i8_dot_unchecked).
    unsafe fn gemm_i8_mmla_unchecked(
        g: QuantGemm,
        a: &[f32],
        w: QuantWeights<'_>,
        c: StridedMut<'_>,
    ) {
        // SAFETY: forwarded contract.
        unsafe { Self::gemm_i8_dot_unchecked(g, a, w, c) }
    }

    /// The hook of [`gemv_i8_dot`](Self::gemv_i8_dot) (`k = x.len()`, `n = y.len()`);
    /// default: the portable evaluation.
    ///
    /// # Safety
    /// Called only by the entry point: contract checked, `n, k >= 1`.
    unsafe fn gemv_i8_dot_unchecked(x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        portable::gemv_dot(Gemv::new(x, w, y), y)
    }
}

impl QuantKernels for super::Portable {}

/// A GEMM hook of [`QuantKernels`] (`gemm_i8_unchecked`, `gemm_i8_dot_unchecked`).
type QuantGemmHook = unsafe fn(QuantGemm, &[f32], QuantWeights<'_>, StridedMut<'_>);

/// The GEMM entry points (named `name` in panics): checks the contract, handles the empty
/// shapes (`m = 0` or `n = 0`: nothing; `k = 0`: the bias, or zeros), then runs `hook` (the
/// entry point's hook) on the whole product.
fn gemm_entry(
    name: &str,
    g: QuantGemm,
    (a, w): (&[f32], QuantWeights<'_>),
    c: &mut [f32],
    hook: QuantGemmHook,
) {
    check_gemm(name, g, a, w, c);
    if g.m == 0 || g.n == 0 {
        return;
    }
    if g.k == 0 {
        return bias_only(g, w.bias, c);
    }
    let c = StridedMut::new(c, g.m, g.n, g.ldc);
    // SAFETY: the contract was checked above; m, n, k >= 1: what `hook` (the entry
    // point's hook) requires.
    unsafe { hook(g, a, w, c) }
}

/// Minimum length of a strided matrix with `rows` rows of `cols` values, `ld` apart.
const fn strided_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// The `_in` GEMVs: the entry point's checks ([`gemv_needs_kernel`]), then `hook` (the
/// entry point's hook) on blocks of whole pairs of panels on `par`.
fn gemv_blocks(
    par: &dyn Parallel,
    name: &str,
    (n, k): (usize, usize),
    (x, w): (&[f32], QuantWeights<'_>),
    y: &mut [f32],
    hook: unsafe fn(&[f32], QuantWeights<'_>, &mut [f32]),
) -> Result<(), Error> {
    if !gemv_needs_kernel(name, n, k, x, w, y) {
        return Ok(());
    }
    let split = Rows { shape: (n, 1, 1), tile: 2 * PACK_NR, join_tail: false, work_per_row: k };
    row_blocks(par, split, y, |cols, y| {
        // SAFETY: the contract was checked for all outputs; outputs `cols` (whole panels
        // from the first) with their weights are a GEMV of the same contract, which is what
        // `hook` (the entry point's hook) requires.
        unsafe { hook(x, w.outputs(cols, k), y) }
    })
}

/// The shared start of the GEMV entry points: checks the contract (panics), handles the
/// empty shapes (`n = 0`: nothing; `k = 0`: the bias, or zeros), and returns whether the
/// hook has to run (`n, k >= 1`).
#[inline(always)]
fn gemv_needs_kernel(
    name: &str,
    n: usize,
    k: usize,
    x: &[f32],
    w: QuantWeights<'_>,
    y: &mut [f32],
) -> bool {
    check_gemv(name, n, k, x, w, y);
    if n > 0 && k == 0 {
        bias_only(QuantGemm::contiguous(1, n, 0), w.bias, y);
    }
    n > 0 && k > 0
}

/// The contract of the GEMVs.
fn check_gemv(name: &str, n: usize, k: usize, x: &[f32], w: QuantWeights<'_>, y: &[f32]) {
    assert!(x.len() == k, "{name}: x length");
    assert!(y.len() == n, "{name}: y length");
    check_weights(name, n, k, w);
    if let Some(bias) = w.bias {
        assert!(bias.len() == n, "{name}: bias length");
    }
}

/// The contract of the GEMM.
fn check_gemm(name: &str, g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: &[f32]) {
    assert!(g.lda >= g.k, "{name}: lda < k");
    assert!(g.ldc >= g.n, "{name}: ldc < n");
    assert!(a.len() >= strided_len(g.m, g.k, g.lda), "{name}: a too short");
    check_weights(name, g.n, g.k, w);
    assert!(c.len() >= strided_len(g.m, g.n, g.ldc), "{name}: c too short");
    if let Some(bias) = w.bias {
        assert!(bias.len() >= g.n, "{name}: bias too short");
    }
}

/// The weights' contract: packed length, and for blocks `k` and the scales' length.
fn check_weights(name: &str, n: usize, k: usize, w: QuantWeights<'_>) {
    assert!(w.packed.len() >= packed_i8_len(n, k), "{name}: packed b too short");
    if let QuantFormat::Block(s) = w.format {
        assert!(k.is_multiple_of(BLOCK_K), "{name}: k not a multiple of 32");
        assert!(s.len() >= packed_block_scales_len(n, k), "{name}: packed scales too short");
    }
}

/// `sum(x)` in 16 independent lanes (LLVM vectorises the lanes; a single running sum
/// would stay scalar, as reassociation is not allowed): error at most about
/// `(len / 16 + 4) * eps * sum |x|`. Shared by every backend, the NEON code LLVM emits for
/// it being what intrinsics would spell out (4 `fadd` per 16 values).
fn sum_f32(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let mut chunks = x.chunks_exact(16);
    for chunk in &mut chunks {
        for (acc, &v) in acc.iter_mut().zip(chunk) {
            *acc += v;
        }
    }
    for (acc, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *acc += v;
    }
    let mut width = 16;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}

/// The NEON GEMVs' walk over their `n` outputs: pairs of panels (32 outputs), the last
/// panel alone when their count is odd. `f(p, cols, two)`: the pair from panel `p` on, its
/// `cols` outputs from `p * PACK_NR`, and whether panel `p + 1` is part of it.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[inline(always)]
fn panel_pairs(n: usize, mut f: impl FnMut(usize, usize, bool)) {
    let panels = n.div_ceil(PACK_NR);
    for p in (0..panels).step_by(2) {
        f(p, (n - p * PACK_NR).min(2 * PACK_NR), p + 2 <= panels);
    }
}

/// The per-tensor epilogue of a row: `y = scale * y + (offset * row_sum + bias)`.
#[inline(always)]
fn finish_row(y: &mut [f32], scale: f32, shift: f32, bias: Option<&[f32]>) {
    match bias {
        Some(bias) => {
            for (y, &b) in y.iter_mut().zip(bias) {
                *y = scale * *y + (shift + b);
            }
        }
        None => {
            for y in y.iter_mut() {
                *y = scale * *y + shift;
            }
        }
    }
}

/// The epilogue of GEMV outputs `y` holding dot products (`bias` and `y` alike long):
/// per tensor [`finish_row`] with `shift` = `offset * sum(x)`
/// ([`QuantFormat::scale_shift`]), in blocks `y += bias`.
#[inline(always)]
fn finish(y: &mut [f32], format: QuantFormat<'_>, shift: f32, bias: Option<&[f32]>) {
    match format {
        QuantFormat::PerTensor { scale, .. } => finish_row(y, scale, shift, bias),
        QuantFormat::Block(_) => {
            if let Some(bias) = bias {
                for (y, &b) in y.iter_mut().zip(bias) {
                    *y += b;
                }
            }
        }
    }
}

/// `C[i, j] = bias[j]` (or 0) for `i < m`, `j < n`: the product when `k = 0`.
fn bias_only(g: QuantGemm, bias: Option<&[f32]>, c: &mut [f32]) {
    for i in 0..g.m {
        let row = &mut c[i * g.ldc..i * g.ldc + g.n];
        match bias {
            Some(bias) => row.copy_from_slice(&bias[..g.n]),
            None => row.fill(0.0),
        }
    }
}
