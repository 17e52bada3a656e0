//! The int8 GEMM of every backend ([`gemm_converted`]): the weights converted to f32 a
//! block at a time by the backend's conversion, then the backend's packed f32 GEMM
//! ([`GemmKernels::gemm_packed_b_to`]) on each converted block.

use super::{k_padded, Dequant, QuantGemm, QuantWeights, BLOCK_K, MC, PACK_NR};
use crate::kernels::gemm::{GemmB, GemmKernels};
use crate::kernels::StridedMut;

/// `row[j] += part[j]` for `j < row.len()`.
#[inline(always)]
fn add_into(row: &mut [f32], part: &[f32]) {
    if let Ok(row) = <&mut [f32; PACK_NR]>::try_from(&mut *row) {
        // A full panel: fixed-size arrays, 4 vector adds. Both operands are loaded before
        // the sum is stored: LLVM cannot tell `row` (from a `StridedMut`'s pointer) from
        // the stack buffer `part`, and added one value at a time when stores and loads
        // alternated.
        let (mut sum, p) = (*row, <[f32; PACK_NR]>::try_from(&part[..PACK_NR]).unwrap());
        for (c, v) in sum.iter_mut().zip(p) {
            *c += v;
        }
        *row = sum;
    } else {
        for (c, &v) in row.iter_mut().zip(part) {
            *c += v;
        }
    }
}

/// Backend `B`'s packed f32 GEMM ([`GemmKernels::gemm_packed_b_to`]) on converted
/// weights `b` into the block `c` (`g.m x g.n`, `ld = g.ldc`): the one call of the f32
/// GEMM in this family.
#[inline(always)]
fn gemm_f32<B: GemmKernels>(
    g: QuantGemm,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    c: StridedMut<'_>,
) {
    let g = GemmB { m: g.m, n: g.n, k: g.k, lda: g.lda, ldc: g.ldc };
    B::gemm_packed_b_to(g, a, b, bias, c)
}

/// The GEMM of every backend: converts `NP` panels at a time (`16 * NP` outputs), `KB`
/// values of `k` at a time ([`KC`] or a multiple), into an f32 buffer in the packed-B
/// layout and runs backend `B`'s packed f32 GEMM on it for every row, [`MC`] rows per call.
/// The bias goes into the first GEMM call of a block of columns and the partial products of
/// later `k` blocks are added into `c`: no pass over `c` after its last product (per
/// tensor, a final pass applying the scale and `offset * sum(row)` to the whole output
/// would load the output again, missing the cache on large products; measured: see
/// BENCHMARKS.md, "Kernel design measurements (GEMM and int8)"). `NP = 2` suits f32 tiles
/// two panels wide (x86 AVX-512: 12x32); the stack holds `NP * (KB + MC) * 16` f32.
///
/// `convert(src, rows, dequant, dst)` converts `rows` consecutive `k` values of one panel
/// (`src`: their groups, starting at a group boundary) into dequantised f32 weights in
/// the packed-B layout: `dst[r * 16 + j] = w[j, r]` ([`Dequant`]).
///
/// The contract is checked and `m, n, k >= 1` (the entry point's); `c` is the `m x n`
/// output block (`ld = ldc`).
pub(super) fn gemm_converted<B: GemmKernels, const NP: usize, const KB: usize>(
    g: QuantGemm,
    a: &[f32],
    w: QuantWeights<'_>,
    mut c: StridedMut<'_>,
    convert: impl Fn(&[i8], usize, Dequant<'_>, &mut [f32]),
) {
    let QuantGemm { m, n, k, lda, ldc } = g;
    let QuantWeights { packed: b, format, bias } = w;
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
        let first_bias = bias.map(|b| &b[col0..col0 + cols]);
        for k0 in (0..k).step_by(KB) {
            let kc = (k - k0).min(KB);
            let buf = &mut buf[..np * kc * PACK_NR];
            for (q, buf) in buf.chunks_exact_mut(kc * PACK_NR).enumerate() {
                let p = p0 + q;
                let panel = &b[p * panel_len..(p + 1) * panel_len];
                let src = &panel[k0 * PACK_NR..(k0 + k_padded(kc)) * PACK_NR];
                convert(src, kc, format.dequant(p, nb, k0 / BLOCK_K), buf);
            }
            for i0 in (0..m).step_by(MC) {
                let mc = (m - i0).min(MC);
                let a = &a[i0 * lda + k0..];
                let block = QuantGemm { m: mc, n: cols, k: kc, lda, ldc };
                if k0 == 0 {
                    let out = c.block(i0..i0 + mc, col0..col0 + cols);
                    gemm_f32::<B>(block, a, buf, first_bias, out);
                } else {
                    let part = &mut part[..mc * ld_part];
                    let out = StridedMut::new(part, mc, cols, ld_part);
                    gemm_f32::<B>(QuantGemm { ldc: ld_part, ..block }, a, buf, None, out);
                    for (r, part) in part.chunks_exact(ld_part).enumerate() {
                        add_into(&mut c.row(i0 + r)[col0..col0 + cols], part);
                    }
                }
            }
        }
    }
}
