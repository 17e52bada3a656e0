//! NEON transpose tile: each 4 x 4 block with `TRN1`/`TRN2` on 32-bit lanes, then on 64-bit
//! lanes.

use super::{LayoutKernels, Tile};
use crate::kernels::Neon;
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

/// Transposes the 4 x 4 blocks of `t` (all bounds multiples of 4) of the `[rows, cols]`
/// matrix `x` into `y` (`[cols, rows]`).
#[target_feature(enable = "neon")]
fn tile(t: Tile, x: &[f32], y: &mut [f32]) {
    let (rows, cols) = (t.rows, t.cols);
    // The blocks touch x[i * cols + j] and y[j * rows + i] for i < r1, j < c1 only.
    assert!(t.r1 <= rows && t.c1 <= cols && x.len() == rows * cols && y.len() == rows * cols);
    let quad = |v: usize| v.is_multiple_of(4);
    assert!(quad(t.r0) && quad(t.r1) && quad(t.c0) && quad(t.c1));
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    for i in (t.r0..t.r1).step_by(4) {
        for j in (t.c0..t.c1).step_by(4) {
            // SAFETY: i + 3 < r1 <= rows and j + 3 < c1 <= cols, so the block reads
            // x[(i + r) * cols + j + 0..4] and writes y[(j + c) * rows + i + 0..4]
            // in bounds; `x` and `y` are distinct borrows.
            unsafe { block4(px.add(i * cols + j), cols, py.add(j * rows + i), rows) }
        }
    }
}

impl LayoutKernels for Neon {
    #[inline]
    fn transpose_tile(t: Tile, x: &[f32], y: &mut [f32]) {
        // SAFETY: `tile` only requires NEON, part of the ARMv8-A baseline the `Neon`
        // backend is built for; it checks its own bounds.
        unsafe { tile(t, x, y) }
    }
}
