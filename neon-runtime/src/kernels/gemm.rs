//! Packed f32 GEMM and GEMV.
//!
//! STUB: naive reference loops that fix the API and the packed layouts; the gemm family
//! work replaces the bodies with register-blocked micro-kernels (portable and NEON).
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

use super::Portable;

/// Width (outputs) of a packed-B column panel.
pub const PACK_NR: usize = 12;
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
    for (p, panel) in out.chunks_exact_mut(PACK_NR * k.max(1)).enumerate() {
        for kk in 0..k {
            for j in 0..PACK_NR {
                let col = p * PACK_NR + j;
                panel[kk * PACK_NR + j] = if col < n { w[col * k + kk] } else { 0.0 };
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
    for (p, panel) in out.chunks_exact_mut(PACK_MR * k.max(1)).enumerate() {
        for kk in 0..k {
            for i in 0..PACK_MR {
                let row = p * PACK_MR + i;
                panel[kk * PACK_MR + i] = if row < m { w[row * k + kk] } else { 0.0 };
            }
        }
    }
}

/// GEMM and GEMV over packed weights. All products overwrite `c` / `y` (no accumulation).
pub trait GemmKernels {
    /// `C[i, j] = sum_k A[i, k] * W[j, k] + bias[j]` for `i < m`, `j < n`.
    ///
    /// `a`: row `i` at `a[i*lda .. i*lda + k]`; `b`: [`pack_b`] of `W[n, k]`;
    /// `bias`: `n` values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`.
    ///
    /// # Panics
    /// When a slice is too short for the geometry, or `lda < k`, `ldc < n`.
    fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    );

    /// `C[i, j] = sum_k W[i, k] * B[k, j] + bias[i]` for `i < m`, `j < n`.
    ///
    /// `a`: [`pack_a`] of `W[m, k]`; `b`: row `k` at `b[k*ldb .. k*ldb + n]`;
    /// `bias`: `m` values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`.
    ///
    /// # Panics
    /// When a slice is too short for the geometry, or `ldb < n`, `ldc < n`.
    fn gemm_packed_a(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        ldb: usize,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    );

    /// GEMV (M = 1): `y[j] = sum_k x[k] * W[j, k] + bias[j]` with `b` = [`pack_b`] of
    /// `W[n, k]`; `x`: `k` values, `y`: `n` values.
    ///
    /// # Panics
    /// When a slice length does not match the geometry.
    fn gemv_packed_b(n: usize, k: usize, x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]);
}

fn naive_packed_b(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    assert!(lda >= k && ldc >= n && b.len() >= packed_b_len(n, k));
    for i in 0..m {
        for j in 0..n {
            let (p, jj) = (j / PACK_NR, j % PACK_NR);
            let mut s = bias.map_or(0.0, |b| b[j]);
            for kk in 0..k {
                s += a[i * lda + kk] * b[p * PACK_NR * k + kk * PACK_NR + jj];
            }
            c[i * ldc + j] = s;
        }
    }
}

fn naive_packed_a(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    ldb: usize,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    assert!(ldb >= n && ldc >= n && a.len() >= packed_a_len(m, k));
    for i in 0..m {
        let (p, ii) = (i / PACK_MR, i % PACK_MR);
        for j in 0..n {
            let mut s = bias.map_or(0.0, |b| b[i]);
            for kk in 0..k {
                s += a[p * PACK_MR * k + kk * PACK_MR + ii] * b[kk * ldb + j];
            }
            c[i * ldc + j] = s;
        }
    }
}

impl GemmKernels for Portable {
    fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        naive_packed_b(m, n, k, a, lda, b, bias, c, ldc)
    }
    fn gemm_packed_a(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        ldb: usize,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        naive_packed_a(m, n, k, a, b, ldb, bias, c, ldc)
    }
    fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        naive_packed_b(1, n, k, x, k, b, bias, y, n)
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl GemmKernels for super::Neon {
    fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        naive_packed_b(m, n, k, a, lda, b, bias, c, ldc)
    }
    fn gemm_packed_a(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        ldb: usize,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        naive_packed_a(m, n, k, a, b, ldb, bias, c, ldc)
    }
    fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        naive_packed_b(1, n, k, x, k, b, bias, y, n)
    }
}
