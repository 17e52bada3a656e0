//! Portable transpose tile: each 4 x 4 block through a fixed-size array (LLVM keeps it in
//! registers).

// Explicit lane indexing over fixed-size blocks mirrors the registers it compiles to.
#![allow(clippy::needless_range_loop)]

use super::Tile;

/// The 4 x 4 blocks of `t` (see [`Tile`]).
#[inline(always)]
pub(super) fn transpose_tile(t: Tile, x: &[f32], y: &mut [f32]) {
    let (rows, cols) = (t.rows, t.cols);
    for i in (t.r0..t.r1).step_by(4) {
        for j in (t.c0..t.c1).step_by(4) {
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
}
