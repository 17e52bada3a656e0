//! Int8-weight GEMV and GEMM with f32 activations.
//!
//! Two weight formats, both `W[n, k]` (`[out_features, in_features]`):
//! - **per-tensor** (Moonshine's shipped format): `W[j, k] = f32(q[j, k]) * scale + offset`
//!   with `q` in `[-128, 127]` and one `scale`, one `offset` per tensor. The kernels
//!   compute the rewrite of the model card,
//!   `y[j] = scale * (x · q_j) + offset * sum(x) + bias[j]`: the int8 values are used as
//!   shipped (never requantised), `x · q_j` is accumulated from exactly converted weights,
//!   `sum(x)` once per row.
//! - **block-int8** (for models we convert): symmetric, one f32 scale per 32 consecutive
//!   weights of a row, `W[j, k] = f32(q[j, k]) * scale[j, k / 32]`, no offset;
//!   `k` must be a multiple of [`BLOCK_K`] (the kernels assert it, the operator returns an
//!   error: padding would silently change the meaning of a converter's output).
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
//! # NEON: the widening path (every ARMv8-A core)
//!
//! One `tbl` with a constant index vector picks, from 16 packed bytes (4 outputs x 4 `k`),
//! the 4 weights of one `k` and puts each in the top byte of a 32-bit lane (the other
//! bytes come out zero: out-of-range indices), so the lane holds `q * 2^24`;
//! `scvtf v.4s, v.4s, #24` (fixed-point conversion) then yields `f32(q)` exactly. Two
//! instructions per 4 weights, where `sxtl`/`sxtl2` to i16, again to i32, then `scvtf`
//! take 10 per 16. The converted weights meet `x[k]` from a lane of the activation vector
//! (`fmla v.4s, v.4s, v.s[lane]`), accumulating `x · q` in f32.
//!
//! - **GEMV** (`m = 1`, the decoder step): two panels (32 outputs) at a time; per group of
//!   4 `k`: one `ldr` of `x`, two 64-byte `ld1`, 32 `tbl`, 32 `scvtf`, 32 `fmla`. The
//!   inner loop is `asm!` (LLVM's version keeps 8 accumulators, 4 indices and 8 packed
//!   vectors live and spills every group: 0.84 instead of 0.79 instructions per
//!   multiply-add). Three instructions per 4 multiply-adds is more than the f32 GEMV's one
//!   (plus loads), but a quarter of the bytes: a decoder step is bound by memory
//!   bandwidth on real cores, and there int8 wins.
//! - **GEMM** (`m > 1`, the encoder): each panel is converted once, [`KC`] = 256 `k` values
//!   at a time, into an f32 buffer on the stack in the f32 packed-B layout (0.6
//!   instructions per weight), and the f32 packed GEMM
//!   ([`GemmKernels::gemm_packed_b`](super::gemm::GemmKernels::gemm_packed_b),
//!   the NEON 5x16 micro-kernel) runs on it for every row, [`MC`] = 80 rows per call.
//!   Partial sums of later `k` blocks are added into the output; a final pass applies
//!   `scale`, `offset * sum(x)` and the bias. Stack: 16 KiB (buffer) + 5 KiB (partial
//!   products). The int8 GEMM costs 5% more instructions than the f32 one.
//!
//! Block-int8 uses the same steps: the GEMV keeps per-block accumulators and adds them
//! times the 16 block scales (`fmla` by vector) every 32 `k`; the GEMM multiplies the
//! converted weights by their block scale while converting (one rounding per weight, as
//! dequantising to f32 would) and passes the bias to the f32 GEMM.
//!
//! # NEON: the `sdot` path (cores with the dot-product extension)
//!
//! The GEMVs have a second path, `dot`, opt-in (the backend's default is the widening
//! path, so results do not depend on the CPU), for CPUs where `dotprod_available()` (the
//! build targets dotprod, or feature `std` detects it at run time): the activations are
//! quantised to int8 per block of 32 and `sdot` multiplies 16 weights by 4 activations
//! per instruction, exactly in i32; per block the sums are converted and scaled into f32
//! accumulators. This trades accuracy for instructions: the result moves by up to
//! `max|x_block| / 254` per activation (see `dot`; measured rms error / rms output
//! 0.35-0.42% on the Moonshine shapes with uniform activations, against ~1e-7 for the
//! widening path). `sdot` has no stable intrinsic in Rust 1.95, so it is `asm!` inside
//! `#[target_feature(enable = "dotprod")]` functions. The GEMMs always use the widening
//! conversion and the f32 micro-kernel.
//!
//! # Measured
//!
//! Instructions executed per call (qemu instruction counter, `--cpu neoverse-n1`, weights
//! packed beforehand, bias on; `benches/src/bin/insn_quant.rs`), and per multiply-add:
//!
//! | workload | f32 (`gemm` module) | int8 per-tensor | block-int8 |
//! |---|---:|---:|---:|
//! | GEMV 416 -> 1664, widening | 239,579 (0.346) | 552,570 (0.798) | 566,280 (0.818) |
//! | GEMV 416 -> 1664, `sdot` | | 84,583 (0.122) | 90,269 (0.130) |
//! | GEMV 1664 -> 416, widening | 234,392 (0.339) | 545,394 (0.788) | 560,001 (0.809) |
//! | GEMV 1664 -> 416, `sdot` | | 84,583 (0.122) | 89,567 (0.129) |
//! | GEMM 413 x 416 -> 1664 | 82.22 M (0.288) | 86.14 M (0.301) | 85.08 M (0.298) |
//! | GEMM 413 x 1664 -> 416 | 81.59 M (0.285) | 86.01 M (0.301) | 85.28 M (0.298) |
//! | Portable GEMV 416 -> 1664 | 571,146 (0.825) | 1,131,553 (1.635) | 1,732,446 (2.50) |
//! | Portable GEMM 413 x 416 -> 1664 | 279.25 M (0.977) | 286.23 M (1.001) | |
//!
//! Bytes of weights read per GEMV: 692 KB (f32) against 173 KB (int8).
//!
//! # Portable
//!
//! Plain Rust over fixed-size arrays: the GEMV keeps 16 x 4 accumulators per panel (one
//! per output and position in the group, so a group's 64 weights are used contiguously
//! and LLVM vectorises them; on aarch64 it even finds the `tbl` widening) and reduces the
//! 4 at the end; the GEMM converts into the same stack buffer and calls the portable f32
//! GEMM. Portable code is compiled without FMA contraction.
//!
//! On x86-64 (hard-float, not under Miri) the portable backend runs AVX-512F or AVX2 + FMA
//! kernels instead, at the f32 GEMM's level (module `x86`, file `quant_x86.rs`: run-time
//! detection with feature `std`): a widening GEMV (`vpmovsxbd`, `vcvtdq2ps`, FMA) and the
//! GEMM with a vectorised conversion and the level's f32 micro-kernel, two panels and
//! `2 * KC` values of `k` per conversion on AVX-512 (stack 64 KiB + 10 KiB). On one core of the AMD EPYC (Zen 5) host
//! a whole Moonshine decoder step's GEMVs (38.5 MB of int8 weights) take 1.0 ms with
//! AVX-512, at the core's memory read bandwidth, against 12.3 ms for the plain-Rust GEMV
//! (SSE2, no FMA) and 3.9 ms for the f32 GEMV on f32 weights; see `quant_x86.rs`.
//!
//! # Accuracy
//!
//! `f32(q)` is exact and `x · q_j` is accumulated in f32, so the dot product has the
//! error of an f32 dot product, at most about `k * eps * sum |x q|`; `sum(x)` is summed in
//! 16 lanes (at most `(k / 16 + 4) * eps * sum |x|`). Multiplying by `offset` carries that
//! error over: when `offset * sum(x)` and `scale * (x · q)` nearly cancel, the result's
//! relative error grows, but its absolute error stays within
//! `~(k + 3) * eps * (|scale| sum |x q| + |offset| sum |x| + |bias|)`, the bound the
//! tests check against an f64 reference on the dequantised weights (measured errors stay
//! below 0.16 of it). The `sdot` path adds the activation quantisation error above.

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
use super::gemm::GemmKernels;
use super::gemm::{GemmB, PACK_NR};
use super::{BackendType, Portable, X86Isa, X86};

/// Consecutive `k` values of one output stored together in the packed layout (a group).
pub const QUANT_KR: usize = 4;
/// Weights per scale in block-int8.
pub const BLOCK_K: usize = 32;
/// `k` values converted to f32 at a time by the GEMM (its stack buffer holds
/// `KC * PACK_NR` f32: 16 KiB). A multiple of [`BLOCK_K`]. (The x86-64 AVX-512 GEMM of the
/// portable backend converts `2 * KC` values of two panels at a time: 64 KiB.)
pub const KC: usize = 256;
/// Rows per call of the f32 GEMM on a converted block (partial products: `MC * PACK_NR`
/// f32 on the stack, 5 KiB).
pub const MC: usize = 80;

/// Bytes of a group of one panel: 16 outputs x 4 `k`.
const GROUP: usize = PACK_NR * QUANT_KR;

/// `k` rounded up to a whole group.
const fn k_padded(k: usize) -> usize {
    k.div_ceil(QUANT_KR) * QUANT_KR
}

/// Bytes of the packed int8 weights for `n` outputs and `k` inputs.
pub const fn packed_i8_len(n: usize, k: usize) -> usize {
    n.div_ceil(PACK_NR) * PACK_NR * k_padded(k)
}

/// Values of the packed block scales for `n` outputs and `k` inputs (`k` a multiple of
/// [`BLOCK_K`]).
pub const fn packed_block_scales_len(n: usize, k: usize) -> usize {
    n.div_ceil(PACK_NR) * PACK_NR * (k / BLOCK_K)
}

/// Position of `q[j, kk]` in the packed layout.
#[inline(always)]
const fn packed_index(j: usize, kk: usize, k: usize) -> usize {
    (j / PACK_NR) * PACK_NR * k_padded(k)
        + (kk / QUANT_KR) * GROUP
        + (j % PACK_NR) * QUANT_KR
        + kk % QUANT_KR
}

/// Packs `q` (`[n, k]` row-major, `[out_features, in_features]`) into the packed layout.
///
/// # Panics
/// When `q.len() != n * k` or `out.len() != packed_i8_len(n, k)`.
pub fn pack_i8(q: &[i8], n: usize, k: usize, out: &mut [i8]) {
    assert_eq!(q.len(), n * k, "pack_i8: weight length");
    assert_eq!(out.len(), packed_i8_len(n, k), "pack_i8: output length");
    out.fill(0);
    if k == 0 {
        return;
    }
    for (j, row) in q.chunks_exact(k).enumerate() {
        for (kk, &v) in row.iter().enumerate() {
            out[packed_index(j, kk, k)] = v;
        }
    }
}

/// Packs `q` given as `[k, n]` row-major (`[in_features, out_features]`, the `y = x · W`
/// convention of ONNX / TFLite exports such as Moonshine's) into the same layout as
/// [`pack_i8`] of its transpose.
///
/// # Panics
/// When `q.len() != n * k` or `out.len() != packed_i8_len(n, k)`.
pub fn pack_i8_transposed(q: &[i8], n: usize, k: usize, out: &mut [i8]) {
    assert_eq!(q.len(), n * k, "pack_i8_transposed: weight length");
    assert_eq!(out.len(), packed_i8_len(n, k), "pack_i8_transposed: output length");
    out.fill(0);
    if n == 0 {
        return;
    }
    for (kk, row) in q.chunks_exact(n).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            out[packed_index(j, kk, k)] = v;
        }
    }
}

/// Packs block scales `scales` (`[n, k / 32]` row-major: row `j` holds the scales of
/// output `j`'s blocks) into the packed layout (zero for outputs past `n`).
///
/// # Panics
/// When `k % 32 != 0`, `scales.len() != n * k / 32` or
/// `out.len() != packed_block_scales_len(n, k)`.
pub fn pack_block_scales(scales: &[f32], n: usize, k: usize, out: &mut [f32]) {
    assert!(k.is_multiple_of(BLOCK_K), "pack_block_scales: k not a multiple of 32");
    let nb = k / BLOCK_K;
    assert_eq!(scales.len(), n * nb, "pack_block_scales: scales length");
    assert_eq!(out.len(), packed_block_scales_len(n, k), "pack_block_scales: output length");
    out.fill(0.0);
    for j in 0..n {
        for b in 0..nb {
            out[((j / PACK_NR) * nb + b) * PACK_NR + j % PACK_NR] = scales[j * nb + b];
        }
    }
}

/// As [`pack_block_scales`], from scales given as `[k / 32, n]` (row `b` holds block `b`
/// of every output: the transposed convention of [`pack_i8_transposed`]).
///
/// # Panics
/// As [`pack_block_scales`].
pub fn pack_block_scales_transposed(scales: &[f32], n: usize, k: usize, out: &mut [f32]) {
    assert!(k.is_multiple_of(BLOCK_K), "pack_block_scales_transposed: k not a multiple of 32");
    let nb = k / BLOCK_K;
    assert_eq!(scales.len(), n * nb, "pack_block_scales_transposed: scales length");
    assert_eq!(
        out.len(),
        packed_block_scales_len(n, k),
        "pack_block_scales_transposed: output length"
    );
    out.fill(0.0);
    for b in 0..nb {
        for j in 0..n {
            out[((j / PACK_NR) * nb + b) * PACK_NR + j % PACK_NR] = scales[b * n + j];
        }
    }
}

/// Row `j` of the packed weights `b` ([`pack_i8`] of `q[n, k]`) dequantised:
/// `out[kk] = f32(q[j, kk]) * scale + offset` (two roundings, the usual evaluation of a
/// per-tensor dequantisation). This is the tied-embedding lookup: the rows of an LM head's
/// `[vocab, dim]` weights are the token embeddings. Portable for every backend: it moves `k`
/// values per token, nothing worth vectorising.
///
/// # Panics
/// When `j >= n`, `b.len() != packed_i8_len(n, k)` or `out.len() != k`.
pub fn dequantize_row(
    b: &[i8],
    n: usize,
    k: usize,
    j: usize,
    scale: f32,
    offset: f32,
    out: &mut [f32],
) {
    assert!(j < n, "dequantize_row: row {j} of {n}");
    assert_eq!(b.len(), packed_i8_len(n, k), "dequantize_row: packed length");
    assert_eq!(out.len(), k, "dequantize_row: output length");
    for (kk, o) in out.iter_mut().enumerate() {
        *o = f32::from(b[packed_index(j, kk, k)]) * scale + offset;
    }
}

/// Int8-weight GEMV and GEMM. All products overwrite `c` / `y` (no accumulation).
///
/// `b` is [`pack_i8`] of `q[n, k]`; activations and results are f32. Non-finite scales,
/// offsets or activations propagate as IEEE arithmetic does (the operators reject
/// non-finite scales and offsets).
pub trait QuantKernels: BackendType {
    /// Per-tensor GEMV: `y[j] = scale * sum_k x[k] q[j, k] + offset * sum_k x[k] + bias[j]`.
    ///
    /// `x`: `k` values; `y`: `n` values; `bias`: `n` values or `None`. With `k = 0` the
    /// result is the bias (or 0).
    ///
    /// # Panics
    /// When `x.len() != k`, `y.len() != n`, `bias.len() != n`, or `b` is shorter than
    /// [`packed_i8_len`].
    fn gemv_i8(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Tensor { scale, offset };
        check_gemv("gemv_i8", n, k, x, b, scales, bias, y);
        p_gemv_at(n, k, x, b, scales, bias, y);
    }

    /// Per-tensor GEMM:
    /// `C[i, j] = scale * sum_k A[i, k] q[j, k] + offset * sum_k A[i, k] + bias[j]` for
    /// `i < m`, `j < n`.
    ///
    /// `a`: row `i` at `a[i*lda .. i*lda + k]`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`
    /// (columns `n..ldc` untouched). With `k = 0` the result is the bias (or 0).
    ///
    /// # Panics
    /// When `lda < k`, `ldc < n`, or a slice is too short for the geometry (`a` shorter
    /// than `(m-1)*lda + k`, `b` than [`packed_i8_len`], `bias` than `n`, `c` than
    /// `(m-1)*ldc + n`).
    fn gemm_i8(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let scales = Scales::Tensor { scale, offset };
        check_gemm("gemm_i8", m, n, k, a, lda, b, scales, bias, c, ldc);
        p_gemm_at(m, n, k, a, lda, b, scales, bias, c, ldc);
    }

    /// Block-int8 GEMV: `y[j] = sum_k x[k] q[j, k] scale[j, k / 32] + bias[j]`, with
    /// `scales` = [`pack_block_scales`] of `scale[n, k / 32]`.
    ///
    /// # Panics
    /// As [`QuantKernels::gemv_i8`], and when `k % 32 != 0` or `scales` is shorter than
    /// [`packed_block_scales_len`].
    fn gemv_i8_block(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Block(scales);
        check_gemv("gemv_i8_block", n, k, x, b, scales, bias, y);
        p_gemv_at(n, k, x, b, scales, bias, y);
    }

    /// Block-int8 GEMM: `C[i, j] = sum_k A[i, k] q[j, k] scale[j, k / 32] + bias[j]`.
    ///
    /// # Panics
    /// As [`QuantKernels::gemm_i8`], and when `k % 32 != 0` or `scales` is shorter than
    /// [`packed_block_scales_len`].
    fn gemm_i8_block(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let scales = Scales::Block(scales);
        check_gemm("gemm_i8_block", m, n, k, a, lda, b, scales, bias, c, ldc);
        p_gemm_at(m, n, k, a, lda, b, scales, bias, c, ldc);
    }

    /// Per-tensor GEMV on the int8-activation (`dot`) path: the contract of
    /// [`QuantKernels::gemv_i8`], with the activations quantised to int8 per block of 32
    /// (`d = max|x| / 127`, codes `round(x / d)` ties to even) and `x . q` computed as
    /// `sum_b d_b * (xq_b . q_b)` with exact i32 block sums; `offset * sum(x)` uses the f32
    /// activations. Error bound and cost: [`dot`](crate::kernels::quant) (module docs).
    ///
    /// The default is the portable evaluation of that arithmetic ([`gemv_i8_dot_portable`]);
    /// NEON runs `sdot` when the CPU has the dot-product extension and falls back to the
    /// portable evaluation otherwise, so the results are the same formula on every CPU.
    ///
    /// # Panics
    /// As [`QuantKernels::gemv_i8`].
    #[allow(clippy::too_many_arguments)]
    fn gemv_i8_dot(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        gemv_i8_dot_portable(n, k, x, b, scale, offset, bias, y);
    }
}

/// Activations quantised per call of the portable `dot` GEMV, at most (stack: 2 KiB of codes
/// and 256 B of block scales).
const DOT_CHUNK: usize = 2048;

/// Quantises `x` (at most [`DOT_CHUNK`] values) per block of 32: `xd[b] = max|x| / 127`,
/// `xq = round(x / d)` ties to even (zero past `x.len()` to the block end). A block of zeros
/// gets `d = 0` and zero codes; a block holding a NaN or infinity gets `d` NaN or infinity
/// and zero codes, so the outputs become NaN as the f32 path's would.
fn quantize_blocks(x: &[f32], xq: &mut [i8; DOT_CHUNK], xd: &mut [f32; DOT_CHUNK / BLOCK_K]) {
    // 1.5 * 2^23: adding and subtracting it rounds |v| < 2^22 to an integer, ties to even.
    const ROUND: f32 = 12_582_912.0;
    for (blk, xb) in x.chunks(BLOCK_K).enumerate() {
        let amax =
            xb.iter().fold(0.0f32, |m, v| if v.abs() > m || v.is_nan() { v.abs() } else { m });
        let live = amax > 0.0 && amax.is_finite();
        let d = if live { amax / 127.0 } else { amax };
        xd[blk] = d;
        let codes = &mut xq[blk * BLOCK_K..(blk + 1) * BLOCK_K];
        codes.fill(0);
        if live {
            for (c, &v) in codes.iter_mut().zip(xb) {
                *c = ((v / d + ROUND) - ROUND) as i8;
            }
        }
    }
}

/// The portable evaluation of [`QuantKernels::gemv_i8_dot`] (the default of every backend,
/// and NEON's fallback on CPUs without dotprod).
///
/// # Panics
/// As [`QuantKernels::gemv_i8`].
#[allow(clippy::too_many_arguments)]
pub fn gemv_i8_dot_portable(
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scale: f32,
    offset: f32,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    let scales = Scales::Tensor { scale, offset };
    check_gemv("gemv_i8_dot", n, k, x, b, scales, bias, y);
    y.fill(0.0);
    let mut xq = [0i8; DOT_CHUNK];
    let mut xd = [0.0f32; DOT_CHUNK / BLOCK_K];
    let kp = k_padded(k);
    for (c, xc) in x.chunks(DOT_CHUNK).enumerate() {
        quantize_blocks(xc, &mut xq, &mut xd);
        let k0 = c * DOT_CHUNK;
        for (panel, yp) in y.chunks_mut(PACK_NR).enumerate() {
            let wp = &b[panel * PACK_NR * kp..];
            for (blk, &d) in xd.iter().enumerate().take(xc.len().div_ceil(BLOCK_K)) {
                let mut acc = [0i32; PACK_NR];
                let kk0 = k0 + blk * BLOCK_K;
                for g in (kk0..(kk0 + BLOCK_K).min(k)).step_by(QUANT_KR) {
                    let w = &wp[(g / QUANT_KR) * GROUP..(g / QUANT_KR + 1) * GROUP];
                    let xg = &xq[g - k0..g - k0 + QUANT_KR];
                    for (a, wj) in acc.iter_mut().zip(w.chunks_exact(QUANT_KR)) {
                        *a += wj
                            .iter()
                            .zip(xg)
                            .map(|(&w, &x)| i32::from(w) * i32::from(x))
                            .sum::<i32>();
                    }
                }
                for (yj, &a) in yp.iter_mut().zip(&acc) {
                    *yj += a as f32 * d;
                }
            }
        }
    }
    finish_row(y, scale, offset * sum_f32(x), bias);
}

/// How the weights are scaled.
#[derive(Clone, Copy)]
enum Scales<'a> {
    /// `W = q * scale + offset`.
    Tensor { scale: f32, offset: f32 },
    /// `W = q * scale[j, k / 32]`, packed.
    Block(&'a [f32]),
}

/// Minimum length of a strided matrix with `rows` rows of `cols` values, `ld` apart.
const fn strided_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// The geometry contract of the GEMV kernels.
fn check_gemv(
    name: &str,
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    y: &[f32],
) {
    assert!(x.len() == k, "{name}: x length");
    assert!(y.len() == n, "{name}: y length");
    assert!(b.len() >= packed_i8_len(n, k), "{name}: packed b too short");
    if let Some(bias) = bias {
        assert!(bias.len() == n, "{name}: bias length");
    }
    check_scales(name, n, k, scales);
}

/// The geometry contract of the GEMM kernels.
#[allow(clippy::too_many_arguments)]
fn check_gemm(
    name: &str,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    c: &[f32],
    ldc: usize,
) {
    assert!(lda >= k, "{name}: lda < k");
    assert!(ldc >= n, "{name}: ldc < n");
    assert!(a.len() >= strided_len(m, k, lda), "{name}: a too short");
    assert!(b.len() >= packed_i8_len(n, k), "{name}: packed b too short");
    assert!(c.len() >= strided_len(m, n, ldc), "{name}: c too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= n, "{name}: bias too short");
    }
    check_scales(name, n, k, scales);
}

fn check_scales(name: &str, n: usize, k: usize, scales: Scales<'_>) {
    if let Scales::Block(s) = scales {
        assert!(k.is_multiple_of(BLOCK_K), "{name}: k not a multiple of 32");
        assert!(s.len() >= packed_block_scales_len(n, k), "{name}: packed scales too short");
    }
}

/// `sum(x)` in 16 independent lanes (LLVM vectorises the lanes; a single running sum
/// would stay scalar, as reassociation is not allowed): error at most about
/// `(len / 16 + 4) * eps * sum |x|`. Shared by both backends, the NEON code LLVM emits for
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

/// `C[i, j] = bias[j]` (or 0): the product when `k = 0`.
fn bias_only(m: usize, n: usize, bias: Option<&[f32]>, c: &mut [f32], ldc: usize) {
    for i in 0..m {
        let row = &mut c[i * ldc..i * ldc + n];
        match bias {
            Some(bias) => row.copy_from_slice(&bias[..n]),
            None => row.fill(0.0),
        }
    }
}

/// Converts `rows` consecutive `k` values of one panel (`src`: their groups, starting at
/// a group boundary) into the f32 packed-B layout: `dst[r * 16 + j] = f32(q[j, r])`, times
/// the block scale when `scales` holds the panel's scales from the first row's block on.
type Convert = fn(src: &[i8], rows: usize, scales: Option<&[f32]>, dst: &mut [f32]);

/// A packed-B f32 GEMM with the contract of
/// [`GemmKernels::gemm_packed_b`](super::gemm::GemmKernels::gemm_packed_b)
/// (`g, a, b, bias, c`).
type PackedGemm = fn(GemmB, &[f32], &[f32], Option<&[f32]>, &mut [f32]);

/// The GEMM of every backend: converts `NP` panels at a time (`16 * NP` outputs), `KB`
/// values of `k` at a time ([`KC`] or a multiple), into an f32 buffer in the packed-B
/// layout and runs the packed f32 GEMM `gemm` on it for every row, [`MC`] rows per call.
/// The partial products of later `k` blocks are added into `c`. For [`Scales::Tensor`]
/// the final pass applies the scale, `offset * sum(row)` and the bias; for blocks the
/// bias goes into the first GEMM call. `NP = 2` suits f32 tiles two panels wide (x86
/// AVX-512: 8x32); the stack holds `NP * (KB + MC) * 16` f32.
#[allow(clippy::too_many_arguments)]
fn gemm_converted<const NP: usize, const KB: usize>(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
    convert: Convert,
    gemm: PackedGemm,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        return bias_only(m, n, bias, c, ldc);
    }
    let panel_len = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    const { assert!(KB.is_multiple_of(BLOCK_K) && KB > 0) };
    let mut buf = [[[0.0f32; PACK_NR]; KB]; NP];
    let buf = buf.as_flattened_mut().as_flattened_mut();
    let mut part = [[0.0f32; MC * PACK_NR]; NP];
    let part = part.as_flattened_mut();
    let ld_part = NP * PACK_NR;
    let panels = n.div_ceil(PACK_NR);
    for p0 in (0..panels).step_by(NP) {
        let np = (panels - p0).min(NP);
        let col0 = p0 * PACK_NR;
        let cols = (n - col0).min(np * PACK_NR);
        let first_bias = match scales {
            Scales::Block(_) => bias.map(|b| &b[col0..col0 + cols]),
            Scales::Tensor { .. } => None,
        };
        for k0 in (0..k).step_by(KB) {
            let kc = (k - k0).min(KB);
            let buf = &mut buf[..np * kc * PACK_NR];
            for (q, buf) in buf.chunks_exact_mut(kc * PACK_NR).enumerate() {
                let p = p0 + q;
                let panel = &b[p * panel_len..(p + 1) * panel_len];
                let src = &panel[k0 * PACK_NR..(k0 + k_padded(kc)) * PACK_NR];
                let block_scales = match scales {
                    Scales::Block(s) => {
                        Some(&s[(p * nb + k0 / BLOCK_K) * PACK_NR..(p + 1) * nb * PACK_NR])
                    }
                    Scales::Tensor { .. } => None,
                };
                convert(src, kc, block_scales, buf);
            }
            for i0 in (0..m).step_by(MC) {
                let mc = (m - i0).min(MC);
                let a = &a[i0 * lda + k0..];
                if k0 == 0 {
                    let g = GemmB { m: mc, n: cols, k: kc, lda, ldc };
                    gemm(g, a, buf, first_bias, &mut c[i0 * ldc + col0..]);
                } else {
                    let part = &mut part[..mc * ld_part];
                    let g = GemmB { m: mc, n: cols, k: kc, lda, ldc: ld_part };
                    gemm(g, a, buf, None, part);
                    for (r, part) in part.chunks_exact(ld_part).enumerate() {
                        let row = &mut c[(i0 + r) * ldc + col0..][..cols];
                        if let Ok(row) = <&mut [f32; PACK_NR]>::try_from(&mut *row) {
                            // A full panel: fixed-size arrays, 4 vector adds.
                            for (c, &v) in row.iter_mut().zip(part) {
                                *c += v;
                            }
                        } else {
                            for (c, &v) in row.iter_mut().zip(part) {
                                *c += v;
                            }
                        }
                    }
                }
            }
        }
    }
    if let Scales::Tensor { scale, offset } = scales {
        for i in 0..m {
            let shift = offset * sum_f32(&a[i * lda..i * lda + k]);
            finish_row(&mut c[i * ldc..i * ldc + n], scale, shift, bias);
        }
    }
}

// ------------------------------------------------------------------------------------
// Portable
// ------------------------------------------------------------------------------------

/// Portable [`Convert`].
fn p_convert(src: &[i8], rows: usize, scales: Option<&[f32]>, dst: &mut [f32]) {
    for (g, (src, dst)) in src.chunks_exact(GROUP).zip(dst.chunks_mut(GROUP)).enumerate() {
        let src: &[i8; GROUP] = src.try_into().unwrap();
        let mut t = [0.0f32; GROUP];
        match scales {
            Some(s) => {
                let s: &[f32; PACK_NR] =
                    s[(g * QUANT_KR / BLOCK_K) * PACK_NR..][..PACK_NR].try_into().unwrap();
                for kk in 0..QUANT_KR {
                    for j in 0..PACK_NR {
                        t[kk * PACK_NR + j] = f32::from(src[j * QUANT_KR + kk]) * s[j];
                    }
                }
            }
            None => {
                for kk in 0..QUANT_KR {
                    for j in 0..PACK_NR {
                        t[kk * PACK_NR + j] = f32::from(src[j * QUANT_KR + kk]);
                    }
                }
            }
        }
        let len = dst.len();
        dst.copy_from_slice(&t[..len]);
    }
    debug_assert_eq!(dst.len(), rows * PACK_NR);
}

/// `acc[j][kk] += x[kk] * q[j, kk]` over one group of one panel.
#[inline(always)]
fn p_group(acc: &mut [[f32; QUANT_KR]; PACK_NR], x: &[f32; QUANT_KR], w: &[i8]) {
    let w: &[i8; GROUP] = w.try_into().unwrap();
    for (j, acc) in acc.iter_mut().enumerate() {
        for kk in 0..QUANT_KR {
            acc[kk] += x[kk] * f32::from(w[j * QUANT_KR + kk]);
        }
    }
}

/// `sum_kk acc[j][kk]` per output.
#[inline(always)]
fn p_reduce(acc: &[[f32; QUANT_KR]; PACK_NR]) -> [f32; PACK_NR] {
    core::array::from_fn(|j| (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]))
}

/// The portable GEMV of both formats.
fn p_gemv(k: usize, x: &[f32], b: &[i8], scales: Scales<'_>, bias: Option<&[f32]>, y: &mut [f32]) {
    let panel_len = PACK_NR * k_padded(k);
    let full = k / QUANT_KR;
    let mut x_tail = [0.0f32; QUANT_KR];
    x_tail[..k % QUANT_KR].copy_from_slice(&x[full * QUANT_KR..]);
    let nb = k / BLOCK_K;
    let shift = match scales {
        Scales::Tensor { offset, .. } => offset * sum_f32(x),
        Scales::Block(_) => 0.0,
    };
    for (p, y) in y.chunks_mut(PACK_NR).enumerate() {
        let panel = &b[p * panel_len..(p + 1) * panel_len];
        let dot = match scales {
            Scales::Tensor { .. } => {
                let mut acc = [[0.0f32; QUANT_KR]; PACK_NR];
                for (x, w) in x.chunks_exact(QUANT_KR).zip(panel.chunks_exact(GROUP)) {
                    p_group(&mut acc, x.try_into().unwrap(), w);
                }
                if !k.is_multiple_of(QUANT_KR) {
                    p_group(&mut acc, &x_tail, &panel[full * GROUP..]);
                }
                p_reduce(&acc)
            }
            Scales::Block(s) => {
                let mut dot = [0.0f32; PACK_NR];
                let groups = BLOCK_K / QUANT_KR;
                for blk in 0..nb {
                    let mut acc = [[0.0f32; QUANT_KR]; PACK_NR];
                    let xb = &x[blk * BLOCK_K..(blk + 1) * BLOCK_K];
                    let wb = &panel[blk * groups * GROUP..(blk + 1) * groups * GROUP];
                    for (x, w) in xb.chunks_exact(QUANT_KR).zip(wb.chunks_exact(GROUP)) {
                        p_group(&mut acc, x.try_into().unwrap(), w);
                    }
                    let part = p_reduce(&acc);
                    let s = &s[(p * nb + blk) * PACK_NR..(p * nb + blk + 1) * PACK_NR];
                    for ((d, &v), &s) in dot.iter_mut().zip(&part).zip(s) {
                        *d += v * s;
                    }
                }
                dot
            }
        };
        let len = y.len();
        y.copy_from_slice(&dot[..len]);
        let bias = bias.map(|b| &b[p * PACK_NR..p * PACK_NR + len]);
        match scales {
            Scales::Tensor { scale, .. } => finish_row(y, scale, shift, bias),
            Scales::Block(_) => {
                if let Some(bias) = bias {
                    for (y, &b) in y.iter_mut().zip(bias) {
                        *y += b;
                    }
                }
            }
        }
    }
}

impl QuantKernels for Portable {}

impl<I: X86Isa> QuantKernels for X86<I> {}

/// The portable GEMV (contract checked): on x86-64 at the detected level.
fn p_gemv_at(
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
    // SAFETY: the geometry was checked by the caller; `detected()` only returns a level
    // whose extensions the CPU (or the build's target) has.
    unsafe {
        x86::gemv_at(super::gemm::x86::detected(), n, k, x, b, scales, bias, y)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
    {
        let _ = n;
        p_gemv(k, x, b, scales, bias, y)
    }
}

/// The portable GEMM (contract checked): on x86-64 with the detected level's conversion
/// and f32 GEMM.
#[allow(clippy::too_many_arguments)]
fn p_gemm_at(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
    // SAFETY: as in `p_gemv_at`.
    unsafe {
        x86::gemm_at(super::gemm::x86::detected(), m, n, k, a, lda, b, scales, bias, c, ldc)
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
    {
        let gemm = Portable::gemm_packed_b;
        gemm_converted::<1, KC>(m, n, k, a, lda, b, scales, bias, c, ldc, p_convert, gemm);
    }
}

// ------------------------------------------------------------------------------------
// x86-64: AVX-512F and AVX2 + FMA
// ------------------------------------------------------------------------------------

// Hard-float targets only (as the f32 GEMM's x86 module); Miri cannot run the intrinsics.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
#[path = "quant_x86.rs"]
pub mod x86;

// ------------------------------------------------------------------------------------
// NEON
// ------------------------------------------------------------------------------------

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use super::{finish_row, k_padded, sum_f32, Scales, BLOCK_K, GROUP, PACK_NR, QUANT_KR};
    use core::arch::aarch64::*;

    /// `tbl` indices taking byte `kk` of each 4-byte lane into that lane's top byte (the
    /// three other bytes get index 0xFF, out of range, hence zero): `q[4w + kk] << 24` in
    /// lane `w`.
    const fn widen_index(kk: u8) -> [u8; 16] {
        let mut t = [0xFF; 16];
        let mut w = 0;
        while w < 4 {
            t[4 * w + 3] = 4 * w as u8 + kk;
            w += 1;
        }
        t
    }

    const WIDEN: [[u8; 16]; 4] = [widen_index(0), widen_index(1), widen_index(2), widen_index(3)];

    /// The 4 `tbl` index vectors.
    #[inline(always)]
    fn widen_indices() -> [uint8x16_t; 4] {
        // SAFETY: each `WIDEN` row is 16 readable bytes.
        core::array::from_fn(|kk| unsafe { vld1q_u8(WIDEN[kk].as_ptr()) })
    }

    /// `f32(q)` of the 4 weights selected by `idx` from `r` (exact: `scvtf` of `q * 2^24`
    /// with 24 fraction bits).
    #[inline(always)]
    fn widen(r: int8x16_t, idx: uint8x16_t) -> float32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
        unsafe { vcvtq_n_f32_s32::<24>(vreinterpretq_s32_s8(vqtbl1q_s8(r, idx))) }
    }

    /// One group (4 `k`) of `P` panels: `acc[q][i] += f32(q[4i..4i+4, k + l]) * x[l]` for
    /// `l < 4`, `x` holding the group's 4 activations.
    ///
    /// # Safety
    /// `w.add(q * stride)` readable for 64 bytes for `q < P`.
    #[inline(always)]
    unsafe fn group<const P: usize>(
        acc: &mut [[float32x4_t; 4]; P],
        x: float32x4_t,
        w: *const i8,
        stride: usize,
        idx: &[uint8x16_t; 4],
    ) {
        for (q, acc) in acc.iter_mut().enumerate() {
            let r = vld1q_s8_x4(w.add(q * stride));
            let r = [r.0, r.1, r.2, r.3];
            macro_rules! lane {
                ($l:literal) => {
                    for i in 0..4 {
                        acc[i] = vfmaq_laneq_f32::<$l>(acc[i], widen(r[i], idx[$l]), x);
                    }
                };
            }
            lane!(0);
            lane!(1);
            lane!(2);
            lane!(3);
        }
    }

    /// Lines converting and accumulating one chunk of weight vectors for lane `$l` of the
    /// activations (v16), the `tbl` index of that lane being `$idx`: for each
    /// `(accumulator, packed bytes, temporary)`, `tbl` (the lane's byte of each output
    /// into the top byte of a 32-bit lane), `scvtf #24` (exact `f32(q)`), `fmla` by lane.
    /// All `tbl` first, then all `scvtf`, then all `fmla`, so dependent instructions are
    /// four apart (in-order cores such as the Cortex-A53 stall otherwise).
    macro_rules! widen_chunk {
        ($l:literal, $idx:literal; $(($acc:literal, $raw:literal, $t:literal)),*) => {
            concat!(
                $("tbl ", $t, ".16b, {{", $raw, ".16b}}, ", $idx, ".16b\n",)*
                $("scvtf ", $t, ".4s, ", $t, ".4s, #24\n",)*
                $("fmla ", $acc, ".4s, ", $t, ".4s, v16.s[", $l, "]\n",)*
            )
        };
    }

    /// Lines of one group (4 `k`) of the two-panel GEMV: the 4 activations into v16
    /// (`{x}` post-incremented), 64 bytes of each panel into v21..v24 and v25..v28, then
    /// for each lane 8 `tbl` / `scvtf` / `fmla` into the accumulators v0..v7 (`tbl`
    /// indices in v17..v20, temporaries v8..v15).
    macro_rules! gemv_group {
        () => {
            concat!(
                "ldr q16, [{x}], #16\n",
                "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
                "ld1 {{v25.16b, v26.16b, v27.16b, v28.16b}}, [{p1}], #64\n",
                gemv_group!(@lane "0", "v17"),
                gemv_group!(@lane "1", "v18"),
                gemv_group!(@lane "2", "v19"),
                gemv_group!(@lane "3", "v20"),
            )
        };
        (@lane $l:literal, $idx:literal) => {
            concat!(
                widen_chunk!($l, $idx;
                    ("v0", "v21", "v8"), ("v1", "v22", "v9"),
                    ("v2", "v23", "v10"), ("v3", "v24", "v11")),
                widen_chunk!($l, $idx;
                    ("v4", "v25", "v12"), ("v5", "v26", "v13"),
                    ("v6", "v27", "v14"), ("v7", "v28", "v15")),
            )
        };
    }

    /// The two-panel per-tensor GEMV inner loop over `pairs` pairs of groups
    /// (`pairs >= 1`): `acc[4q + i]` accumulates outputs `4i..4i + 4` of panel `q`. In
    /// assembly because LLVM's version of the same loop keeps too many values live
    /// (accumulators, indices, 8 packed vectors) and spills and reloads every group.
    ///
    /// # Safety
    /// `x` readable for `8 * pairs` values, `p0` and `p1` for `128 * pairs` bytes.
    #[inline(always)]
    unsafe fn gemv_2x16(
        acc: &mut [float32x4_t; 8],
        x: *const f32,
        p0: *const i8,
        p1: *const i8,
        pairs: usize,
        idx: &[uint8x16_t; 4],
    ) {
        core::arch::asm!(
            "2:",
            gemv_group!(),
            gemv_group!(),
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) x => _,
            p0 = inout(reg) p0 => _,
            p1 = inout(reg) p1 => _,
            n = inout(reg) pairs => _,
            inout("v0") acc[0], inout("v1") acc[1], inout("v2") acc[2], inout("v3") acc[3],
            inout("v4") acc[4], inout("v5") acc[5], inout("v6") acc[6], inout("v7") acc[7],
            in("v17") idx[0], in("v18") idx[1], in("v19") idx[2], in("v20") idx[3],
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _,
            out("v21") _, out("v22") _, out("v23") _, out("v24") _,
            out("v25") _, out("v26") _, out("v27") _, out("v28") _,
            options(nostack, readonly),
        );
    }

    /// The two-panel block-int8 GEMV over `blocks` blocks of 32 `k` (`blocks >= 1`): per
    /// block, the partial sums in v0..v7 start at zero, run 8 groups, then
    /// `acc += part * scales` with the block's 16 scales of each panel (`{s0}`, `{s1}`,
    /// post-incremented). `acc` (32 values: panel 0 then panel 1) stays in memory, as the
    /// group steps use every other register; that costs 6 loads and stores per block of
    /// ~800 instructions.
    ///
    /// # Safety
    /// `x` readable for `32 * blocks` values, `p0` and `p1` for `512 * blocks` bytes,
    /// `s0` and `s1` for `16 * blocks` values; `acc` points to 32 writable values.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemv_block_2x16(
        acc: *mut f32,
        x: *const f32,
        p0: *const i8,
        p1: *const i8,
        s0: *const f32,
        s1: *const f32,
        blocks: usize,
        idx: &[uint8x16_t; 4],
    ) {
        core::arch::asm!(
            "2:",
            "movi v0.4s, #0",
            "movi v1.4s, #0",
            "movi v2.4s, #0",
            "movi v3.4s, #0",
            "movi v4.4s, #0",
            "movi v5.4s, #0",
            "movi v6.4s, #0",
            "movi v7.4s, #0",
            "mov {g}, #4",
            "3:",
            gemv_group!(),
            gemv_group!(),
            "subs {g}, {g}, #1",
            "b.ne 3b",
            "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64",
            "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{s1}], #64",
            "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{a0}]",
            "ld1 {{v12.4s, v13.4s, v14.4s, v15.4s}}, [{a1}]",
            "fmla v8.4s, v0.4s, v21.4s",
            "fmla v9.4s, v1.4s, v22.4s",
            "fmla v10.4s, v2.4s, v23.4s",
            "fmla v11.4s, v3.4s, v24.4s",
            "fmla v12.4s, v4.4s, v25.4s",
            "fmla v13.4s, v5.4s, v26.4s",
            "fmla v14.4s, v6.4s, v27.4s",
            "fmla v15.4s, v7.4s, v28.4s",
            "st1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{a0}]",
            "st1 {{v12.4s, v13.4s, v14.4s, v15.4s}}, [{a1}]",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) x => _,
            p0 = inout(reg) p0 => _,
            p1 = inout(reg) p1 => _,
            s0 = inout(reg) s0 => _,
            s1 = inout(reg) s1 => _,
            a0 = in(reg) acc,
            a1 = in(reg) acc.add(PACK_NR),
            n = inout(reg) blocks => _,
            g = out(reg) _,
            in("v17") idx[0], in("v18") idx[1], in("v19") idx[2], in("v20") idx[3],
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _,
            out("v21") _, out("v22") _, out("v23") _, out("v24") _,
            out("v25") _, out("v26") _, out("v27") _, out("v28") _,
            options(nostack),
        );
    }

    /// `x · q_j` for the `16 * P` outputs of `P` consecutive panels (per-tensor format),
    /// stored to `out[..16 * P]`. Two panels run the assembly loop over pairs of groups;
    /// an odd last group, the `k % 4` tail (activations zero padded; the packed weights are
    /// zero there) and a single panel run the same steps in intrinsics.
    ///
    /// # Safety
    /// `x` readable for `k` values; `panels` for `P * stride` bytes, `stride` being the
    /// packed panel length `16 * k_padded(k)`.
    #[inline(always)]
    unsafe fn dot_tensor<const P: usize>(
        k: usize,
        x: *const f32,
        panels: *const i8,
        stride: usize,
        out: &mut [f32; 32],
    ) {
        let idx = widen_indices();
        let mut acc = [[vdupq_n_f32(0.0); 4]; P];
        let full = k / QUANT_KR;
        let mut g = 0;
        if P == 2 && full >= 2 {
            let mut a = [vdupq_n_f32(0.0); 8];
            gemv_2x16(&mut a, x, panels, panels.add(stride), full / 2, &idx);
            acc[0] = [a[0], a[1], a[2], a[3]];
            acc[P - 1] = [a[4], a[5], a[6], a[7]];
            g = full / 2 * 2;
        }
        while g < full {
            let xv = vld1q_f32(x.add(QUANT_KR * g));
            group::<P>(&mut acc, xv, panels.add(GROUP * g), stride, &idx);
            g += 1;
        }
        if !k.is_multiple_of(QUANT_KR) {
            let mut t = [0.0f32; QUANT_KR];
            core::ptr::copy_nonoverlapping(x.add(QUANT_KR * full), t.as_mut_ptr(), k % QUANT_KR);
            group::<P>(&mut acc, vld1q_f32(t.as_ptr()), panels.add(GROUP * full), stride, &idx);
        }
        for (q, acc) in acc.iter().enumerate() {
            vst1q_f32_x4(
                out.as_mut_ptr().add(q * PACK_NR),
                float32x4x4_t(acc[0], acc[1], acc[2], acc[3]),
            );
        }
    }

    /// `sum_k x[k] q[j, k] scale[j, k / 32]` for the outputs of `P` consecutive panels
    /// (block format; `k` a multiple of 32), stored to `out[..16 * P]`.
    ///
    /// # Safety
    /// As [`dot_tensor`]; `scales` readable for the `P` panels' packed scales
    /// (`16 * k / 32` values each).
    #[inline(always)]
    unsafe fn dot_block<const P: usize>(
        k: usize,
        x: *const f32,
        panels: *const i8,
        stride: usize,
        scales: *const f32,
        out: &mut [f32; 32],
    ) {
        let idx = widen_indices();
        let nb = k / BLOCK_K;
        *out = [0.0; 32];
        if P == 2 && nb > 0 {
            let (p1, s1) = (panels.add(stride), scales.add(nb * PACK_NR));
            return gemv_block_2x16(out.as_mut_ptr(), x, panels, p1, scales, s1, nb, &idx);
        }
        let mut acc = [[vdupq_n_f32(0.0); 4]; P];
        for blk in 0..nb {
            let mut part = [[vdupq_n_f32(0.0); 4]; P];
            for g in 0..BLOCK_K / QUANT_KR {
                let kk = blk * BLOCK_K + g * QUANT_KR;
                group::<P>(&mut part, vld1q_f32(x.add(kk)), panels.add(kk * PACK_NR), stride, &idx);
            }
            for q in 0..P {
                let s = vld1q_f32_x4(scales.add((q * nb + blk) * PACK_NR));
                acc[q][0] = vfmaq_f32(acc[q][0], part[q][0], s.0);
                acc[q][1] = vfmaq_f32(acc[q][1], part[q][1], s.1);
                acc[q][2] = vfmaq_f32(acc[q][2], part[q][2], s.2);
                acc[q][3] = vfmaq_f32(acc[q][3], part[q][3], s.3);
            }
        }
        for (q, acc) in acc.iter().enumerate() {
            vst1q_f32_x4(
                out.as_mut_ptr().add(q * PACK_NR),
                float32x4x4_t(acc[0], acc[1], acc[2], acc[3]),
            );
        }
    }

    /// The NEON GEMV of both formats (contract checked by the caller).
    pub(super) fn gemv(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: Scales<'_>,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let stride = PACK_NR * k_padded(k);
        let panels = n.div_ceil(PACK_NR);
        let nb = k / BLOCK_K;
        let shift = match scales {
            Scales::Tensor { offset, .. } => offset * sum_f32(x),
            Scales::Block(_) => 0.0,
        };
        let mut p = 0;
        while p < panels {
            let col0 = p * PACK_NR;
            let two = p + 2 <= panels;
            let cols = (n - col0).min(2 * PACK_NR);
            let mut t = [0.0f32; 2 * PACK_NR];
            // SAFETY: check_gemv: x holds k values, b the
            // packed panels (stride bytes each) of which p and, when `two`, p + 1 exist; for
            // blocks, the scales of those panels (16 * nb each) follow from p * nb * 16.
            unsafe {
                let (xp, w) = (x.as_ptr(), b.as_ptr().add(p * stride));
                match (scales, two) {
                    (Scales::Tensor { .. }, true) => dot_tensor::<2>(k, xp, w, stride, &mut t),
                    (Scales::Tensor { .. }, false) => dot_tensor::<1>(k, xp, w, stride, &mut t),
                    (Scales::Block(s), true) => {
                        let s = s.as_ptr().add(p * nb * PACK_NR);
                        dot_block::<2>(k, xp, w, stride, s, &mut t)
                    }
                    (Scales::Block(s), false) => {
                        let s = s.as_ptr().add(p * nb * PACK_NR);
                        dot_block::<1>(k, xp, w, stride, s, &mut t)
                    }
                }
            }
            let y = &mut y[col0..col0 + cols];
            y.copy_from_slice(&t[..cols]);
            let bias = bias.map(|b| &b[col0..col0 + cols]);
            match scales {
                Scales::Tensor { scale, .. } => finish_row(y, scale, shift, bias),
                Scales::Block(_) => {
                    if let Some(bias) = bias {
                        for (y, &b) in y.iter_mut().zip(bias) {
                            *y += b;
                        }
                    }
                }
            }
            p += 2;
        }
    }

    /// NEON [`super::Convert`]: per group, one 64-byte load, 16 `tbl` + 16 `scvtf`
    /// (+ 16 `fmul` by the block scales), 4 stores of 16 values.
    pub(super) fn convert(src: &[i8], rows: usize, scales: Option<&[f32]>, dst: &mut [f32]) {
        assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
        if let Some(s) = scales {
            assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
        }
        let idx = widen_indices();
        let groups = rows.div_ceil(QUANT_KR);
        for g in 0..groups {
            // SAFETY: group g < k_padded(rows) / 4 lies inside `src` (64 bytes); the
            // scales of block g * 4 / 32 < rows.div_ceil(32) inside `s` (asserted above).
            let f: [float32x4x4_t; QUANT_KR] = unsafe {
                let r = vld1q_s8_x4(src.as_ptr().add(g * GROUP));
                let r = [r.0, r.1, r.2, r.3];
                let mut f: [float32x4x4_t; QUANT_KR] = core::array::from_fn(|kk| {
                    float32x4x4_t(
                        widen(r[0], idx[kk]),
                        widen(r[1], idx[kk]),
                        widen(r[2], idx[kk]),
                        widen(r[3], idx[kk]),
                    )
                });
                if let Some(s) = scales {
                    let s = vld1q_f32_x4(s.as_ptr().add((g * QUANT_KR / BLOCK_K) * PACK_NR));
                    for f in &mut f {
                        *f = float32x4x4_t(
                            vmulq_f32(f.0, s.0),
                            vmulq_f32(f.1, s.1),
                            vmulq_f32(f.2, s.2),
                            vmulq_f32(f.3, s.3),
                        );
                    }
                }
                f
            };
            let valid = (rows - g * QUANT_KR).min(QUANT_KR);
            for (kk, f) in f.iter().enumerate().take(valid) {
                // SAFETY: row g * 4 + kk < rows: 16 values inside `dst` (asserted above).
                unsafe { vst1q_f32_x4(dst.as_mut_ptr().add((g * QUANT_KR + kk) * PACK_NR), *f) };
            }
        }
    }
}

// ------------------------------------------------------------------------------------
// NEON: the dot-product (`sdot`) GEMV
// ------------------------------------------------------------------------------------

/// Whether the `sdot` GEMVs (`dot`) may run on this CPU: when the build targets the
/// dotprod extension (`target_feature = "dotprod"`), or, with feature `std`, when the CPU
/// reports it at run time. The NEON backend itself always takes the widening path.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub fn dotprod_available() -> bool {
    if cfg!(target_feature = "dotprod") {
        return true;
    }
    #[cfg(feature = "std")]
    {
        std::arch::is_aarch64_feature_detected!("dotprod")
    }
    #[cfg(not(feature = "std"))]
    {
        false
    }
}

/// The `sdot` GEMVs, called explicitly (check [`dotprod_available`] first); the NEON
/// backend's default is the widening path.
///
/// The activations are quantised to int8 in blocks of 32 (`d = max|x| / 127` per block,
/// `x_i = round(x / d)`, ties to even; the last block zero padded), then
/// `sdot v.4s, w.16b, x.4b[lane]` multiplies 4 weights of 4 outputs by 4 activations
/// and accumulates in i32, exactly. Per block, the i32 sums are converted (`scvtf`) and
/// added times `d` (times the 16 weight block scales in block-int8) to f32 accumulators.
/// Two panels per pass: per block of 32 `k`, 16 64-byte loads, 64 `sdot`, 8 `scvtf`, 8
/// `fmla` and 12 other instructions, ~0.11 instructions per multiply-add (the widening
/// path needs 0.79, the f32 GEMV 0.34).
///
/// Accuracy: quantising the activations changes the result by at most
/// `|scale| * sum_b d_b / 2 * sum_{k in b} |q[j, k]|` (per-tensor; block-int8: times the
/// block scale), about `max|x| / 254` per activation: the usual cost of int8 activations
/// (the same scheme as the `Q8_0` activations of llama.cpp; ONNX Runtime's dynamic
/// quantisation uses one scale per tensor). `offset * sum(x)` uses the f32 activations,
/// so Moonshine's large offsets (`|offset / scale|` up to 65) add no quantisation error.
/// Quantised activations are held on the stack, [`DOT_KC`](crate::kernels::quant::dot::DOT_KC) at a time (2 KiB +
/// 256 B).
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub mod dot {
    use super::{check_gemv, Scales};

    /// Per-tensor GEMV on the `sdot` path; the contract of
    /// [`QuantKernels::gemv_i8`](super::QuantKernels::gemv_i8).
    ///
    /// # Safety
    /// The CPU must implement the dot-product extension (FEAT_DotProd, `sdot`): check
    /// [`super::dotprod_available`] or `is_aarch64_feature_detected!("dotprod")`.
    ///
    /// # Panics
    /// As [`QuantKernels::gemv_i8`](super::QuantKernels::gemv_i8).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemv_i8(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Tensor { scale, offset };
        check_gemv("gemv_i8", n, k, x, b, scales, bias, y);
        // SAFETY: the caller guarantees dotprod; the contract was checked above.
        unsafe { super::neon_dot::gemv(n, k, x, b, scales, bias, y) }
    }

    /// Block-int8 GEMV on the `sdot` path; the contract of
    /// [`QuantKernels::gemv_i8_block`](super::QuantKernels::gemv_i8_block).
    ///
    /// # Safety
    /// As [`gemv_i8`].
    ///
    /// # Panics
    /// As [`QuantKernels::gemv_i8_block`](super::QuantKernels::gemv_i8_block).
    pub unsafe fn gemv_i8_block(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Block(scales);
        check_gemv("gemv_i8_block", n, k, x, b, scales, bias, y);
        // SAFETY: the caller guarantees dotprod; the contract was checked above.
        unsafe { super::neon_dot::gemv(n, k, x, b, scales, bias, y) }
    }

    /// Activations quantised at a time by the `sdot` GEMV (a multiple of 32): longer rows
    /// run in chunks, the partial sums accumulating in the output.
    pub const DOT_KC: usize = 2048;
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_dot {
    use super::dot::DOT_KC;
    use super::{finish_row, k_padded, sum_f32, Scales, BLOCK_K, PACK_NR};
    use core::arch::aarch64::*;

    /// Quantises `x` (at most [`DOT_KC`] values) in blocks of 32: `xq` gets
    /// `round(x / d)` (ties to even; zero past `x.len()` up to the block end), `xd[b]` the
    /// block's `d = max|x| / 127`. An all-zero block has `d = 0`; a block holding a NaN or
    /// an infinity gets `d = NaN` or `inf` and zero codes, so its outputs become NaN.
    fn quantize(x: &[f32], xq: &mut [i8; DOT_KC], xd: &mut [f32; DOT_KC / BLOCK_K]) {
        for (blk, xb) in x.chunks(BLOCK_K).enumerate() {
            let mut t = [0.0f32; BLOCK_K];
            t[..xb.len()].copy_from_slice(xb);
            // SAFETY: `t` holds 32 values; block `blk` < DOT_KC / 32 of `xq` 32 bytes.
            unsafe {
                let v: [float32x4_t; 8] =
                    core::array::from_fn(|i| vld1q_f32(t.as_ptr().add(4 * i)));
                let m = v.iter().fold(vdupq_n_f32(0.0), |m, &v| vmaxq_f32(m, vabsq_f32(v)));
                let amax = vmaxvq_f32(m);
                // x / d, not x * (127 / amax): no overflow for tiny blocks, |x / d| <= 127.
                let (d, live) = if amax > 0.0 && amax.is_finite() {
                    (amax / 127.0, true)
                } else {
                    (amax, false)
                };
                xd[blk] = d;
                let dv = vdupq_n_f32(d);
                let i: [int32x4_t; 8] = core::array::from_fn(|j| {
                    if live {
                        vcvtnq_s32_f32(vdivq_f32(v[j], dv))
                    } else {
                        vdupq_n_s32(0)
                    }
                });
                let h: [int16x8_t; 4] = core::array::from_fn(|j| {
                    vcombine_s16(vqmovn_s32(i[2 * j]), vqmovn_s32(i[2 * j + 1]))
                });
                let dst = xq.as_mut_ptr().add(blk * BLOCK_K);
                vst1q_s8(dst, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
                vst1q_s8(dst.add(16), vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
            }
        }
    }

    /// Lines of one group (4 `k`) on the `sdot` path: 64 bytes of each panel (`$p` = 2:
    /// v21..v28, 1: v21..v24), then one `sdot` per 4 outputs by lane `$l` of `$x` (the 4
    /// quantised activations of the group) into the i32 accumulators v0..v7 (v0..v3).
    macro_rules! sdot_group {
        (2, $x:literal, $l:literal) => {
            concat!(
                "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
                "ld1 {{v25.16b, v26.16b, v27.16b, v28.16b}}, [{p1}], #64\n",
                sdot_group!(@sdot "v0", "v21", $x, $l),
                sdot_group!(@sdot "v1", "v22", $x, $l),
                sdot_group!(@sdot "v2", "v23", $x, $l),
                sdot_group!(@sdot "v3", "v24", $x, $l),
                sdot_group!(@sdot "v4", "v25", $x, $l),
                sdot_group!(@sdot "v5", "v26", $x, $l),
                sdot_group!(@sdot "v6", "v27", $x, $l),
                sdot_group!(@sdot "v7", "v28", $x, $l),
            )
        };
        (1, $x:literal, $l:literal) => {
            concat!(
                "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
                sdot_group!(@sdot "v0", "v21", $x, $l),
                sdot_group!(@sdot "v1", "v22", $x, $l),
                sdot_group!(@sdot "v2", "v23", $x, $l),
                sdot_group!(@sdot "v3", "v24", $x, $l),
            )
        };
        (@sdot $acc:literal, $w:literal, $x:literal, $l:literal) => {
            concat!("sdot ", $acc, ".4s, ", $w, ".16b, ", $x, ".4b[", $l, "]\n")
        };
    }

    /// Lines of the 8 groups of one block of 32 `k`: the block's 32 codes into v16, v17
    /// (`{xq}` post-incremented), its `d` broadcast into v18 (`{xd}`), the i32
    /// accumulators zeroed, 8 groups of `sdot`, and the accumulators converted to f32.
    macro_rules! sdot_block {
        ($p:tt, $($acc:literal),*) => {
            concat!(
                "ld1 {{v16.16b, v17.16b}}, [{xq}], #32\n",
                "ld1r {{v18.4s}}, [{xd}], #4\n",
                $("movi ", $acc, ".4s, #0\n",)*
                sdot_group!($p, "v16", "0"),
                sdot_group!($p, "v16", "1"),
                sdot_group!($p, "v16", "2"),
                sdot_group!($p, "v16", "3"),
                sdot_group!($p, "v17", "0"),
                sdot_group!($p, "v17", "1"),
                sdot_group!($p, "v17", "2"),
                sdot_group!($p, "v17", "3"),
                $("scvtf ", $acc, ".4s, ", $acc, ".4s\n",)*
            )
        };
    }

    /// `acc += f32(i32 sums) * d` (per-tensor): `fmla` by the broadcast `d` (v18).
    macro_rules! scale_tensor {
        ($(($f:literal, $acc:literal)),*) => {
            concat!($("fmla ", $acc, ".4s, ", $f, ".4s, v18.4s\n",)*)
        };
    }

    /// `acc += f32(i32 sums) * (weight block scales * d)` (block-int8): the 16 scales of
    /// each panel's block into v21.. (`{s0}`, `{s1}` post-incremented), times `d`, then
    /// `fmla` by vector.
    macro_rules! scale_block {
        (2) => {
            concat!(
                "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64\n",
                "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{s1}], #64\n",
                scale_block!(@one "v0", "v21", "v8"),
                scale_block!(@one "v1", "v22", "v9"),
                scale_block!(@one "v2", "v23", "v10"),
                scale_block!(@one "v3", "v24", "v11"),
                scale_block!(@one "v4", "v25", "v12"),
                scale_block!(@one "v5", "v26", "v13"),
                scale_block!(@one "v6", "v27", "v14"),
                scale_block!(@one "v7", "v28", "v15"),
            )
        };
        (1) => {
            concat!(
                "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64\n",
                scale_block!(@one "v0", "v21", "v8"),
                scale_block!(@one "v1", "v22", "v9"),
                scale_block!(@one "v2", "v23", "v10"),
                scale_block!(@one "v3", "v24", "v11"),
            )
        };
        (@one $f:literal, $s:literal, $acc:literal) => {
            concat!(
                "fmul ", $s, ".4s, ", $s, ".4s, v18.4s\n",
                "fmla ", $acc, ".4s, ", $f, ".4s, ", $s, ".4s\n",
            )
        };
    }

    /// Two panels (32 outputs) over `blocks` blocks of 32 `k` (`blocks >= 1`): `acc[4q + i]`
    /// accumulates outputs `4i..4i + 4` of panel `q` in f32. `ws`: the block-int8 weight
    /// scales of the two panels from the first block on, `None` per tensor.
    ///
    /// # Safety
    /// The CPU implements dotprod; `xq` readable for `32 * blocks` bytes, `xd` for
    /// `blocks` values, `p0` and `p1` for `512 * blocks` bytes, `ws` pointers for
    /// `16 * blocks` values each.
    #[target_feature(enable = "dotprod")]
    unsafe fn sdot_2x16(
        acc: &mut [float32x4_t; 8],
        xq: *const i8,
        xd: *const f32,
        [p0, p1]: [*const i8; 2],
        ws: Option<[*const f32; 2]>,
        blocks: usize,
    ) {
        // SAFETY: reads stay within the extents of this function's contract; only the
        // declared registers are written.
        unsafe {
            match ws {
                None => core::arch::asm!(
                    "2:",
                    sdot_block!(2, "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"),
                    scale_tensor!(("v0", "v8"), ("v1", "v9"), ("v2", "v10"), ("v3", "v11"),
                        ("v4", "v12"), ("v5", "v13"), ("v6", "v14"), ("v7", "v15")),
                    "subs {n}, {n}, #1",
                    "b.ne 2b",
                    xq = inout(reg) xq => _,
                    xd = inout(reg) xd => _,
                    p0 = inout(reg) p0 => _,
                    p1 = inout(reg) p1 => _,
                    n = inout(reg) blocks => _,
                    inout("v8") acc[0], inout("v9") acc[1], inout("v10") acc[2], inout("v11") acc[3],
                    inout("v12") acc[4], inout("v13") acc[5], inout("v14") acc[6], inout("v15") acc[7],
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    out("v16") _, out("v17") _, out("v18") _,
                    out("v21") _, out("v22") _, out("v23") _, out("v24") _,
                    out("v25") _, out("v26") _, out("v27") _, out("v28") _,
                    options(nostack, readonly),
                ),
                Some([s0, s1]) => core::arch::asm!(
                    "2:",
                    sdot_block!(2, "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"),
                    scale_block!(2),
                    "subs {n}, {n}, #1",
                    "b.ne 2b",
                    xq = inout(reg) xq => _,
                    xd = inout(reg) xd => _,
                    p0 = inout(reg) p0 => _,
                    p1 = inout(reg) p1 => _,
                    s0 = inout(reg) s0 => _,
                    s1 = inout(reg) s1 => _,
                    n = inout(reg) blocks => _,
                    inout("v8") acc[0], inout("v9") acc[1], inout("v10") acc[2], inout("v11") acc[3],
                    inout("v12") acc[4], inout("v13") acc[5], inout("v14") acc[6], inout("v15") acc[7],
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    out("v16") _, out("v17") _, out("v18") _,
                    out("v21") _, out("v22") _, out("v23") _, out("v24") _,
                    out("v25") _, out("v26") _, out("v27") _, out("v28") _,
                    options(nostack, readonly),
                ),
            }
        }
    }

    /// One panel (16 outputs): as [`sdot_2x16`] with `acc[i]` for outputs `4i..4i + 4`.
    ///
    /// # Safety
    /// As [`sdot_2x16`] for one panel.
    #[target_feature(enable = "dotprod")]
    unsafe fn sdot_1x16(
        acc: &mut [float32x4_t; 4],
        xq: *const i8,
        xd: *const f32,
        [p0]: [*const i8; 1],
        ws: Option<[*const f32; 1]>,
        blocks: usize,
    ) {
        // SAFETY: as in `sdot_2x16`.
        unsafe {
            match ws {
                None => core::arch::asm!(
                    "2:",
                    sdot_block!(1, "v0", "v1", "v2", "v3"),
                    scale_tensor!(("v0", "v8"), ("v1", "v9"), ("v2", "v10"), ("v3", "v11")),
                    "subs {n}, {n}, #1",
                    "b.ne 2b",
                    xq = inout(reg) xq => _,
                    xd = inout(reg) xd => _,
                    p0 = inout(reg) p0 => _,
                    n = inout(reg) blocks => _,
                    inout("v8") acc[0], inout("v9") acc[1], inout("v10") acc[2], inout("v11") acc[3],
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v16") _, out("v17") _, out("v18") _,
                    out("v21") _, out("v22") _, out("v23") _, out("v24") _,
                    options(nostack, readonly),
                ),
                Some([s0]) => core::arch::asm!(
                    "2:",
                    sdot_block!(1, "v0", "v1", "v2", "v3"),
                    scale_block!(1),
                    "subs {n}, {n}, #1",
                    "b.ne 2b",
                    xq = inout(reg) xq => _,
                    xd = inout(reg) xd => _,
                    p0 = inout(reg) p0 => _,
                    s0 = inout(reg) s0 => _,
                    n = inout(reg) blocks => _,
                    inout("v8") acc[0], inout("v9") acc[1], inout("v10") acc[2], inout("v11") acc[3],
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v16") _, out("v17") _, out("v18") _,
                    out("v21") _, out("v22") _, out("v23") _, out("v24") _,
                    options(nostack, readonly),
                ),
            }
        }
    }

    /// An `sdot` inner loop over `P` panels: `(accumulators, codes, block scales of the
    /// activations, panels, weight block scales, blocks)`.
    type DotKernel<const P: usize> = unsafe fn(
        &mut [[float32x4_t; 4]; P],
        *const i8,
        *const f32,
        [*const i8; P],
        Option<[*const f32; P]>,
        usize,
    );

    /// `P` panels (`16 * P` outputs) over the quantised chunk: the full blocks straight
    /// from the packed weights, a partial last block (the packed panels end at the next
    /// group, not the next block) from a zero-padded copy of its groups.
    ///
    /// # Safety
    /// The CPU implements dotprod; `panels[q]` readable for the chunk's packed groups
    /// (`16 * k_padded(kc)` bytes), `ws[q]` for its `16 * kc.div_ceil(32)` scales;
    /// `xq` / `xd` hold the chunk's `kc.div_ceil(32)` blocks.
    #[target_feature(enable = "dotprod")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn dot_panels<const P: usize>(
        kc: usize,
        xq: &[i8; DOT_KC],
        xd: &[f32; DOT_KC / BLOCK_K],
        panels: [*const i8; P],
        ws: Option<[*const f32; P]>,
        acc: &mut [[float32x4_t; 4]; P],
        kernel: DotKernel<P>,
    ) {
        let full = kc / BLOCK_K;
        // SAFETY: per this function's contract.
        unsafe {
            if full > 0 {
                kernel(acc, xq.as_ptr(), xd.as_ptr(), panels, ws, full);
            }
            if !kc.is_multiple_of(BLOCK_K) {
                let bytes = (k_padded(kc) - full * BLOCK_K) * PACK_NR;
                let mut tail = [[0i8; BLOCK_K * PACK_NR]; P];
                for (t, &p) in tail.iter_mut().zip(&panels) {
                    core::ptr::copy_nonoverlapping(
                        p.add(full * BLOCK_K * PACK_NR),
                        t.as_mut_ptr(),
                        bytes,
                    );
                }
                let tp: [*const i8; P] = core::array::from_fn(|q| tail[q].as_ptr());
                let ws = ws.map(|w| w.map(|w| w.add(full * PACK_NR)));
                let (xq, xd) = (xq.as_ptr().add(full * BLOCK_K), xd.as_ptr().add(full));
                kernel(acc, xq, xd, tp, ws, 1);
            }
        }
    }

    /// [`sdot_2x16`] with the accumulators as two panels of 4 vectors.
    ///
    /// # Safety
    /// As [`sdot_2x16`].
    #[target_feature(enable = "dotprod")]
    unsafe fn kernel2(
        acc: &mut [[float32x4_t; 4]; 2],
        xq: *const i8,
        xd: *const f32,
        p: [*const i8; 2],
        ws: Option<[*const f32; 2]>,
        blocks: usize,
    ) {
        let [a, b] = *acc;
        let mut v = [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]];
        // SAFETY: forwarded contract.
        unsafe { sdot_2x16(&mut v, xq, xd, p, ws, blocks) };
        *acc = [[v[0], v[1], v[2], v[3]], [v[4], v[5], v[6], v[7]]];
    }

    /// [`sdot_1x16`] with the accumulators as one panel.
    ///
    /// # Safety
    /// As [`sdot_1x16`].
    #[target_feature(enable = "dotprod")]
    unsafe fn kernel1(
        acc: &mut [[float32x4_t; 4]; 1],
        xq: *const i8,
        xd: *const f32,
        p: [*const i8; 1],
        ws: Option<[*const f32; 1]>,
        blocks: usize,
    ) {
        // SAFETY: forwarded contract.
        unsafe { sdot_1x16(&mut acc[0], xq, xd, p, ws, blocks) };
    }

    /// The `sdot` GEMV of both formats (contract checked by the caller).
    ///
    /// # Safety
    /// The CPU implements dotprod.
    #[target_feature(enable = "dotprod")]
    pub(super) unsafe fn gemv(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: Scales<'_>,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let stride = PACK_NR * k_padded(k);
        let panels = n.div_ceil(PACK_NR);
        let nb = k.div_ceil(BLOCK_K);
        let mut xq = [0i8; DOT_KC];
        let mut xd = [0.0f32; DOT_KC / BLOCK_K];
        y.fill(0.0);
        for c0 in (0..k).step_by(DOT_KC) {
            let kc = (k - c0).min(DOT_KC);
            quantize(&x[c0..c0 + kc], &mut xq, &mut xd);
            let mut p = 0;
            while p < panels {
                let col0 = p * PACK_NR;
                let two = p + 2 <= panels;
                let cols = (n - col0).min(2 * PACK_NR);
                // The partial sums of earlier chunks (y is zero before the first).
                let mut t = [0.0f32; 2 * PACK_NR];
                t[..cols].copy_from_slice(&y[col0..col0 + cols]);
                // SAFETY: check_gemv: b holds the packed panels (stride bytes each), of
                // which p and, when `two`, p + 1 exist; the chunk's groups start at byte
                // c0 * 16 of each (c0 is a multiple of 32) and end within it. For blocks
                // (k a multiple of 32, nb = k / 32), the panels' scales follow from
                // (p * nb + c0 / 32) * 16. `t` holds 32 values.
                unsafe {
                    let w = b.as_ptr().add(p * stride + c0 * PACK_NR);
                    let ws = match scales {
                        Scales::Block(s) => Some(s.as_ptr().add((p * nb + c0 / BLOCK_K) * PACK_NR)),
                        Scales::Tensor { .. } => None,
                    };
                    let tp = t.as_mut_ptr();
                    if two {
                        let mut acc: [[float32x4_t; 4]; 2] = core::array::from_fn(|q| {
                            let v = vld1q_f32_x4(tp.add(16 * q));
                            [v.0, v.1, v.2, v.3]
                        });
                        let ws = ws.map(|s| [s, s.add(nb * PACK_NR)]);
                        dot_panels::<2>(kc, &xq, &xd, [w, w.add(stride)], ws, &mut acc, kernel2);
                        for (q, a) in acc.iter().enumerate() {
                            vst1q_f32_x4(tp.add(16 * q), float32x4x4_t(a[0], a[1], a[2], a[3]));
                        }
                    } else {
                        let v = vld1q_f32_x4(tp);
                        let mut acc = [[v.0, v.1, v.2, v.3]];
                        dot_panels::<1>(kc, &xq, &xd, [w], ws.map(|s| [s]), &mut acc, kernel1);
                        let a = acc[0];
                        vst1q_f32_x4(tp, float32x4x4_t(a[0], a[1], a[2], a[3]));
                    }
                }
                y[col0..col0 + cols].copy_from_slice(&t[..cols]);
                p += 2;
            }
        }
        match scales {
            Scales::Tensor { scale, offset } => finish_row(y, scale, offset * sum_f32(x), bias),
            Scales::Block(_) => {
                if let Some(bias) = bias {
                    for (y, &b) in y.iter_mut().zip(bias) {
                        *y += b;
                    }
                }
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl QuantKernels for super::Neon {
    fn gemv_i8_dot(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        if dotprod_available() {
            // SAFETY: the CPU implements dotprod (checked just above).
            unsafe { dot::gemv_i8(n, k, x, b, scale, offset, bias, y) }
        } else {
            gemv_i8_dot_portable(n, k, x, b, scale, offset, bias, y);
        }
    }

    fn gemv_i8(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Tensor { scale, offset };
        check_gemv("gemv_i8", n, k, x, b, scales, bias, y);
        // The widening path is the default: exact products, results independent of the
        // CPU. The `sdot` path is opt-in (`dot`), since it quantises the activations.
        neon::gemv(n, k, x, b, scales, bias, y);
    }

    fn gemm_i8(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let scales = Scales::Tensor { scale, offset };
        check_gemm("gemm_i8", m, n, k, a, lda, b, scales, bias, c, ldc);
        let (convert, gemm) = (neon::convert, super::Neon::gemm_packed_b);
        gemm_converted::<1, KC>(m, n, k, a, lda, b, scales, bias, c, ldc, convert, gemm);
    }

    fn gemv_i8_block(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let scales = Scales::Block(scales);
        check_gemv("gemv_i8_block", n, k, x, b, scales, bias, y);
        // The widening path is the default: exact products, results independent of the
        // CPU. The `sdot` path is opt-in (`dot`), since it quantises the activations.
        neon::gemv(n, k, x, b, scales, bias, y);
    }

    fn gemm_i8_block(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let scales = Scales::Block(scales);
        check_gemm("gemm_i8_block", m, n, k, a, lda, b, scales, bias, c, ldc);
        let (convert, gemm) = (neon::convert, super::Neon::gemm_packed_b);
        gemm_converted::<1, KC>(m, n, k, a, lda, b, scales, bias, c, ldc, convert, gemm);
    }
}
