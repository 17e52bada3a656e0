//! Packing int8 weights into the packed layout (module docs of [`super`], "Packed layout":
//! panels of 16 outputs, groups of 4 `k` per output) and reading a row back.

use super::{BLOCK_K, GROUP, PACK_NR, QUANT_KR};

/// `k` rounded up to a whole group.
pub(super) const fn k_padded(k: usize) -> usize {
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
    pack_codes("pack_i8", q, [n, k], false, out);
}

/// Packs `q` given as `[k, n]` row-major (`[in_features, out_features]`, the `y = x · W`
/// convention of ONNX / TFLite exports such as Moonshine's) into the same layout as
/// [`pack_i8`] of its transpose.
///
/// # Panics
/// When `q.len() != n * k` or `out.len() != packed_i8_len(n, k)`.
pub fn pack_i8_transposed(q: &[i8], n: usize, k: usize, out: &mut [i8]) {
    pack_codes("pack_i8_transposed", q, [n, k], true, out);
}

/// [`pack_i8`] (`q[j * k + kk]`) or, `transposed`, [`pack_i8_transposed`]
/// (`q[kk * n + j]`), reading `q` in its row order.
fn pack_codes(name: &str, q: &[i8], [n, k]: [usize; 2], transposed: bool, out: &mut [i8]) {
    assert_eq!(q.len(), n * k, "{name}: weight length");
    assert_eq!(out.len(), packed_i8_len(n, k), "{name}: output length");
    out.fill(0);
    if n == 0 || k == 0 {
        return;
    }
    for (r, row) in q.chunks_exact(if transposed { n } else { k }).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            let (j, kk) = if transposed { (c, r) } else { (r, c) };
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
    pack_scales("pack_block_scales", scales, [n, k], false, out);
}

/// As [`pack_block_scales`], from scales given as `[k / 32, n]` (row `b` holds block `b`
/// of every output: the transposed convention of [`pack_i8_transposed`]).
///
/// # Panics
/// As [`pack_block_scales`].
pub fn pack_block_scales_transposed(scales: &[f32], n: usize, k: usize, out: &mut [f32]) {
    pack_scales("pack_block_scales_transposed", scales, [n, k], true, out);
}

/// [`pack_block_scales`] (`scales[j * nb + b]`) or, `transposed`,
/// [`pack_block_scales_transposed`] (`scales[b * n + j]`).
fn pack_scales(name: &str, scales: &[f32], [n, k]: [usize; 2], transposed: bool, out: &mut [f32]) {
    assert!(k.is_multiple_of(BLOCK_K), "{name}: k not a multiple of 32");
    let nb = k / BLOCK_K;
    assert_eq!(scales.len(), n * nb, "{name}: scales length");
    assert_eq!(out.len(), packed_block_scales_len(n, k), "{name}: output length");
    out.fill(0.0);
    for j in 0..n {
        for b in 0..nb {
            let s = if transposed { scales[b * n + j] } else { scales[j * nb + b] };
            out[((j / PACK_NR) * nb + b) * PACK_NR + j % PACK_NR] = s;
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
