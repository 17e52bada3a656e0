//! The x86-64 transpose tile (`X86<I>`): each 4 x 4 block in four SSE registers, transposed
//! by `unpcklps`/`unpckhps` and `movlhps`/`movhlps` (SSE, part of every x86-64 target, so
//! one form for both levels): a copy, the same bits as the portable blocks, whose
//! fixed-size arrays LLVM moves element by element (the sanoTTS decoder's head, `[514,
//! frames]` to frame-major, `BENCHMARKS.md`, "Host: sanoTTS decoder (x86-64)").

use super::Tile;
use core::arch::x86_64::{
    _mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_storeu_ps, _mm_unpackhi_ps, _mm_unpacklo_ps,
};

/// [`super::LayoutKernels::transpose_tile`] with SSE.
pub(super) fn transpose_tile(t: Tile, x: &[f32], y: &mut [f32]) {
    let (rows, cols) = (t.rows, t.cols);
    // The unsafe loads and stores below rely on the tile lying inside both matrices.
    assert!(t.r1 <= rows && t.c1 <= cols && x.len() >= rows * cols && y.len() >= rows * cols);
    assert!([t.r0, t.r1, t.c0, t.c1].iter().all(|v| v.is_multiple_of(4)));
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    for i in (t.r0..t.r1).step_by(4) {
        for j in (t.c0..t.c1).step_by(4) {
            // SAFETY: rows i..i + 4 < rows and columns j..j + 4 <= cols (asserted: the tile
            // is whole 4 x 4 blocks inside x), so each load reads 4 values of row i + r of
            // x, each store writes 4 values of row j + c of y (`[cols, rows]`); SSE is part
            // of every x86-64 target.
            unsafe {
                let [a, b, c, d] = [0, 1, 2, 3].map(|r| _mm_loadu_ps(xp.add((i + r) * cols + j)));
                let (ab_lo, ab_hi) = (_mm_unpacklo_ps(a, b), _mm_unpackhi_ps(a, b));
                let (cd_lo, cd_hi) = (_mm_unpacklo_ps(c, d), _mm_unpackhi_ps(c, d));
                let out = [
                    _mm_movelh_ps(ab_lo, cd_lo),
                    _mm_movehl_ps(cd_lo, ab_lo),
                    _mm_movelh_ps(ab_hi, cd_hi),
                    _mm_movehl_ps(cd_hi, ab_hi),
                ];
                for (col, v) in out.into_iter().enumerate() {
                    _mm_storeu_ps(yp.add((j + col) * rows + i), v);
                }
            }
        }
    }
}
