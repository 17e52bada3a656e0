//! Layout kernels: out-of-place transpose of a row-major `[rows, cols]` matrix, which
//! converts between channel-first `[channels, frames]` and frame-major
//! `[frames, channels]` sequences.
//!
//! The matrix is walked in 32 x 32 tiles, so a tile's reads and writes both cover whole
//! 64-byte cache lines (32 f32 = 2 lines per tile row) and stay in L1, instead of striding
//! through the whole output for every input row. Inside a tile, 4 x 4 blocks are
//! transposed in registers (NEON: `TRN1`/`TRN2` on 32-bit lanes, then on 64-bit lanes).
//! The last `rows % 4` rows and `cols % 4` columns are copied element by element.

// Explicit lane indexing over fixed-size blocks mirrors the registers it compiles to.
#![allow(clippy::needless_range_loop)]

use super::{BackendType, Portable, X86Isa, X86};

/// Side of the cache tiles (elements).
const TILE: usize = 32;

/// Layout kernels.
pub trait LayoutKernels: BackendType {
    /// `y[j, i] = x[i, j]`: transposes the row-major `[rows, cols]` matrix `x` into the
    /// row-major `[cols, rows]` matrix `y` (channel-first `[channels, frames]` to frame-major
    /// `[frames, channels]` with `rows = channels`, or back with `rows = frames`).
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * cols`.
    fn transpose(rows: usize, cols: usize, x: &[f32], y: &mut [f32]) {
        tiled(rows, cols, x, y, |(ib, ie), (jb, je), x, y| {
            for i in (ib..ie).step_by(4) {
                for j in (jb..je).step_by(4) {
                    let mut b = [[0.0f32; 4]; 4];
                    for r in 0..4 {
                        b[r].copy_from_slice(&x[(i + r) * cols + j..][..4]);
                    }
                    for c in 0..4 {
                        let o = &mut y[(j + c) * rows + i..][..4];
                        for r in 0..4 {
                            o[r] = b[r][c];
                        }
                    }
                }
            }
        })
    }
}

fn check(rows: usize, cols: usize, x: &[f32], y: &[f32]) {
    let len = rows.checked_mul(cols).expect("transpose: rows * cols overflows");
    assert_eq!(x.len(), len, "transpose: x length");
    assert_eq!(y.len(), len, "transpose: y length");
}

/// Element-by-element transpose of the sub-block `rows r0..r1`, `cols c0..c1`.
fn transpose_scalar(
    rows: usize,
    cols: usize,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    x: &[f32],
    y: &mut [f32],
) {
    for i in r0..r1 {
        for j in c0..c1 {
            y[j * rows + i] = x[i * cols + j];
        }
    }
}

/// Drives the tiling: `tile((ib, ie), (jb, je), x, y)` transposes the 4 x 4 blocks of rows
/// `ib..ie` and columns `jb..je` (multiples of 4, at most [`TILE`] apart); the edges go
/// through [`transpose_scalar`].
#[inline(always)]
fn tiled(
    rows: usize,
    cols: usize,
    x: &[f32],
    y: &mut [f32],
    mut tile: impl FnMut((usize, usize), (usize, usize), &[f32], &mut [f32]),
) {
    check(rows, cols, x, y);
    if rows == 1 || cols == 1 {
        // A vector: the transpose is a copy.
        y.copy_from_slice(x);
        return;
    }
    let (r4, c4) = (rows - rows % 4, cols - cols % 4);
    for ib in (0..r4).step_by(TILE) {
        let ie = (ib + TILE).min(r4);
        for jb in (0..c4).step_by(TILE) {
            tile((ib, ie), (jb, (jb + TILE).min(c4)), x, y);
        }
        // Columns past the last multiple of 4, for these rows.
        transpose_scalar(rows, cols, (ib, ie), (c4, cols), x, y);
    }
    // Rows past the last multiple of 4.
    transpose_scalar(rows, cols, (r4, rows), (0, cols), x, y);
}

impl LayoutKernels for Portable {}

impl<I: X86Isa> LayoutKernels for X86<I> {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use core::arch::aarch64::*;

    /// Transposes the 4 x 4 block whose top-left element is `*p` (row stride `ps`) into
    /// the block at `*q` (row stride `qs`).
    ///
    /// # Safety
    /// `p + r * ps + 0..4` must be readable and `q + c * qs + 0..4` writable for r, c < 4,
    /// and the two blocks must not overlap.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn block4(p: *const f32, ps: usize, q: *mut f32, qs: usize) {
        let r0 = vld1q_f32(p);
        let r1 = vld1q_f32(p.add(ps));
        let r2 = vld1q_f32(p.add(2 * ps));
        let r3 = vld1q_f32(p.add(3 * ps));
        // r0 = a0 a1 a2 a3, r1 = b0.., r2 = c0.., r3 = d0..
        let t0 = vreinterpretq_f64_f32(vtrn1q_f32(r0, r1)); // a0 b0 a2 b2
        let t1 = vreinterpretq_f64_f32(vtrn2q_f32(r0, r1)); // a1 b1 a3 b3
        let t2 = vreinterpretq_f64_f32(vtrn1q_f32(r2, r3)); // c0 d0 c2 d2
        let t3 = vreinterpretq_f64_f32(vtrn2q_f32(r2, r3)); // c1 d1 c3 d3
        vst1q_f32(q, vreinterpretq_f32_f64(vtrn1q_f64(t0, t2))); // a0 b0 c0 d0
        vst1q_f32(q.add(qs), vreinterpretq_f32_f64(vtrn1q_f64(t1, t3))); // a1 b1 c1 d1
        vst1q_f32(q.add(2 * qs), vreinterpretq_f32_f64(vtrn2q_f64(t0, t2))); // a2 b2 c2 d2
        vst1q_f32(q.add(3 * qs), vreinterpretq_f32_f64(vtrn2q_f64(t1, t3))); // a3 b3 c3 d3
    }

    /// Transposes the 4 x 4 blocks of rows `ib..ie` and columns `jb..je` (all multiples
    /// of 4) of the `[rows, cols]` matrix `x` into `y` (`[cols, rows]`).
    #[target_feature(enable = "neon")]
    pub(super) fn tile(
        rows: usize,
        cols: usize,
        (ib, ie): (usize, usize),
        (jb, je): (usize, usize),
        x: &[f32],
        y: &mut [f32],
    ) {
        // The blocks touch x[i * cols + j] and y[j * rows + i] for i < ie, j < je only.
        assert!(ie <= rows && je <= cols && x.len() == rows * cols && y.len() == rows * cols);
        assert!(ib % 4 == 0 && ie % 4 == 0 && jb % 4 == 0 && je % 4 == 0);
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        for i in (ib..ie).step_by(4) {
            for j in (jb..je).step_by(4) {
                // SAFETY: i + 3 < ie <= rows and j + 3 < je <= cols, so the block reads
                // x[(i + r) * cols + j + 0..4] and writes y[(j + c) * rows + i + 0..4]
                // in bounds; `x` and `y` are distinct borrows.
                unsafe { block4(px.add(i * cols + j), cols, py.add(j * rows + i), rows) }
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl LayoutKernels for super::Neon {
    fn transpose(rows: usize, cols: usize, x: &[f32], y: &mut [f32]) {
        tiled(rows, cols, x, y, |ir, jr, x, y| {
            // SAFETY: `tile` only requires NEON, part of the ARMv8-A baseline the `Neon`
            // backend is built for; it checks its own bounds.
            unsafe { neon::tile(rows, cols, ir, jr, x, y) }
        })
    }
}
