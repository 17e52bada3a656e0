//! The portable int8 kernels: the default bodies of every [`QuantKernels`](super::QuantKernels)
//! hook, plain Rust on every target.
//!
//! Plain Rust over fixed-size arrays: the GEMV keeps 16 x 4 accumulators per panel (one
//! per output and position in the group, so a group's 64 weights are used contiguously
//! and LLVM vectorises them; on aarch64 it even finds the `tbl` widening) and reduces the
//! 4 at the end; the GEMM converts into the same stack buffer ([`convert`]) and calls the
//! backend's f32 GEMM ([`gemm_converted`](super::gemm_converted)). Portable code is
//! compiled without FMA contraction.
//!
//! On x86-64 it is far slower than the AVX-512 and AVX2 GEMVs of
//! [`X86`](crate::kernels::X86) (it is SSE2 with no FMA, below the memory bandwidth;
//! measured: see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
//!
//! The int8-activation GEMV ([`gemv_dot`]) is the same arithmetic as the NEON `sdot` path
//! (`dot.rs`) in plain Rust: exact i32 block sums, one f32 rounding per block and output.

use super::{
    finish, k_padded, Dequant, Gemv, QuantFormat, QuantGemm, QuantWeights, BLOCK_K, DOT_KC, GROUP,
    PACK_NR, QUANT_KR,
};
use crate::kernels::StridedMut;

/// The portable conversion of [`gemm_converted`](super::gemm_converted): per group, 64
/// weights to f32 in the packed-B layout, dequantised ([`Dequant`]; per tensor a multiply
/// and an add, two roundings).
pub(super) fn convert(src: &[i8], rows: usize, dequant: Dequant<'_>, dst: &mut [f32]) {
    for (g, (src, dst)) in src.chunks_exact(GROUP).zip(dst.chunks_mut(GROUP)).enumerate() {
        let src: &[i8; GROUP] = src.try_into().unwrap();
        let mut t = [0.0f32; GROUP];
        match dequant {
            Dequant::Block(s) => {
                let s: &[f32; PACK_NR] =
                    s[(g * QUANT_KR / BLOCK_K) * PACK_NR..][..PACK_NR].try_into().unwrap();
                for kk in 0..QUANT_KR {
                    for j in 0..PACK_NR {
                        t[kk * PACK_NR + j] = f32::from(src[j * QUANT_KR + kk]) * s[j];
                    }
                }
            }
            Dequant::Affine { scale, offset } => {
                for kk in 0..QUANT_KR {
                    for j in 0..PACK_NR {
                        t[kk * PACK_NR + j] = f32::from(src[j * QUANT_KR + kk]) * scale + offset;
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
fn group(acc: &mut [[f32; QUANT_KR]; PACK_NR], x: &[f32; QUANT_KR], w: &[i8]) {
    let w: &[i8; GROUP] = w.try_into().unwrap();
    for (j, acc) in acc.iter_mut().enumerate() {
        for kk in 0..QUANT_KR {
            acc[kk] += x[kk] * f32::from(w[j * QUANT_KR + kk]);
        }
    }
}

/// `sum_kk acc[j][kk]` per output.
#[inline(always)]
fn reduce(acc: &[[f32; QUANT_KR]; PACK_NR]) -> [f32; PACK_NR] {
    core::array::from_fn(|j| (acc[j][0] + acc[j][1]) + (acc[j][2] + acc[j][3]))
}

/// The portable GEMV of both formats (contract checked, `k >= 1`). Unlike the other
/// backends' GEMV kernels (one [`Gemv`] value), this one takes the geometry
/// and the weights' fields as separate arguments: passed as one value (a `Gemv`, a
/// [`QuantWeights`]) or with `n`, `k` taken from the slices' lengths,
/// LLVM compiled it to more instructions on aarch64 (measured: see BENCHMARKS.md,
/// "Kernel design measurements (GEMM and int8)").
pub(super) fn gemv(
    k: usize,
    x: &[f32],
    b: &[i8],
    format: QuantFormat<'_>,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    let panel_len = PACK_NR * k_padded(k);
    let full = k / QUANT_KR;
    let mut x_tail = [0.0f32; QUANT_KR];
    x_tail[..k % QUANT_KR].copy_from_slice(&x[full * QUANT_KR..]);
    let nb = k / BLOCK_K;
    let shift = format.scale_shift(x).1;
    for (p, y) in y.chunks_mut(PACK_NR).enumerate() {
        let panel = &b[p * panel_len..(p + 1) * panel_len];
        let dot = match format {
            QuantFormat::PerTensor { .. } => {
                let mut acc = [[0.0f32; QUANT_KR]; PACK_NR];
                for (x, w) in x.chunks_exact(QUANT_KR).zip(panel.chunks_exact(GROUP)) {
                    group(&mut acc, x.try_into().unwrap(), w);
                }
                if !k.is_multiple_of(QUANT_KR) {
                    group(&mut acc, &x_tail, &panel[full * GROUP..]);
                }
                reduce(&acc)
            }
            QuantFormat::Block(s) => {
                let mut dot = [0.0f32; PACK_NR];
                let groups = BLOCK_K / QUANT_KR;
                for blk in 0..nb {
                    let mut acc = [[0.0f32; QUANT_KR]; PACK_NR];
                    let xb = &x[blk * BLOCK_K..(blk + 1) * BLOCK_K];
                    let wb = &panel[blk * groups * GROUP..(blk + 1) * groups * GROUP];
                    for (x, w) in xb.chunks_exact(QUANT_KR).zip(wb.chunks_exact(GROUP)) {
                        group(&mut acc, x.try_into().unwrap(), w);
                    }
                    let part = reduce(&acc);
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
        finish(y, format, shift, bias.map(|b| &b[p * PACK_NR..p * PACK_NR + len]));
    }
}

/// Quantises `x` (at most [`DOT_KC`] values) per block of 32: `xd[b] = max|x| / 127`,
/// `xq = round(x / d)` ties to even (zero past `x.len()` to the block end). A block of zeros
/// gets `d = 0` and zero codes; a block holding a NaN or infinity gets `d` NaN or infinity
/// and zero codes, so the outputs become NaN as the f32 path's would.
fn quantize_blocks(x: &[f32], xq: &mut [i8; DOT_KC], xd: &mut [f32; DOT_KC / BLOCK_K]) {
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

/// The portable evaluation of [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot)
/// (the default of every backend, and NEON's fallback on CPUs without dotprod), both
/// formats (contract checked, `n, k >= 1`): per block of 32 and output, the exact i32 sum
/// `xq_b · q_b` is added to the output as `f32(sum) * d` (per tensor) or
/// `f32(sum) * (scale[j, b] * d)` (blocks); then the epilogue.
pub(super) fn gemv_dot(g: Gemv<'_>, y: &mut [f32]) {
    let Gemv { n, k, x, w: QuantWeights { packed: b, format, bias } } = g;
    debug_assert_eq!(y.len(), n);
    y.fill(0.0);
    let mut xq = [0i8; DOT_KC];
    let mut xd = [0.0f32; DOT_KC / BLOCK_K];
    let kp = k_padded(k);
    let nb = k / BLOCK_K;
    for (c, xc) in x.chunks(DOT_KC).enumerate() {
        quantize_blocks(xc, &mut xq, &mut xd);
        let k0 = c * DOT_KC;
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
                match format {
                    QuantFormat::PerTensor { .. } => {
                        for (yj, &a) in yp.iter_mut().zip(&acc) {
                            *yj += a as f32 * d;
                        }
                    }
                    QuantFormat::Block(s) => {
                        let s = &s[(panel * nb + kk0 / BLOCK_K) * PACK_NR..][..PACK_NR];
                        for ((yj, &a), &s) in yp.iter_mut().zip(&acc).zip(s) {
                            *yj += a as f32 * (s * d);
                        }
                    }
                }
            }
        }
    }
    finish(y, format, format.scale_shift(x).1, bias);
}

/// The portable evaluation of [`QuantKernels::gemm_i8_dot`](super::QuantKernels::gemm_i8_dot)
/// (contract checked, `m, n, k >= 1`): [`gemv_dot`] on every row, so each row is quantised
/// once and has the GEMV's bits.
pub(super) fn gemm_dot(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, mut c: StridedMut<'_>) {
    for i in 0..g.m {
        let x = &a[i * g.lda..i * g.lda + g.k];
        let y = c.row(i);
        gemv_dot(Gemv::new(x, w, y), y);
    }
}
