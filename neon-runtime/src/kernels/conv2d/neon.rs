//! The NEON im2col primitives: a bulk copy for the row runs and conv1d's NEON strided
//! gather, under the driver of [`conv2d`](super).

use super::{im2col_2d_with, Conv2dKernels, Im2colOps, Window2d};
use core::arch::aarch64::*;
use core::ops::Range;

/// `dst = src` (equal lengths), without a call or a loop LLVM would turn into one:
/// 16 values per `ld1`/`st1` of 4 registers in an assembly loop, then one overlapping
/// block for the remainder (lengths >= 16), 4-value blocks and an overlapping last one
/// (4..16), or single values (< 4). Explicit so that bare-metal builds do not depend
/// on the platform's `memcpy`, and short runs cost no call.
#[inline(always)]
fn copy(src: &[f32], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "copy: lengths differ");
    let n = dst.len();
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    // SAFETY: every access below is inside `0..n` of both slices (which do not overlap:
    // one is shared, the other exclusive): the loop copies `16 * (n / 16)` values,
    // the overlapping blocks start at `n - 16` / `n - 4` >= 0, and the small cases
    // check `n` first.
    unsafe {
        if n >= 16 {
            core::arch::asm!(
                "2:",
                "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{s}], #64",
                "st1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{d}], #64",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                s = inout(reg) s => _,
                d = inout(reg) d => _,
                n = inout(reg) n / 16 => _,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                options(nostack),
            );
            if !n.is_multiple_of(16) {
                vst1q_f32_x4(d.add(n - 16), vld1q_f32_x4(s.add(n - 16)));
            }
        } else if n >= 4 {
            vst1q_f32(d, vld1q_f32(s));
            if n >= 8 {
                vst1q_f32(d.add(4), vld1q_f32(s.add(4)));
            }
            if n >= 12 {
                vst1q_f32(d.add(8), vld1q_f32(s.add(8)));
            }
            vst1q_f32(d.add(n - 4), vld1q_f32(s.add(n - 4)));
        } else {
            if n > 0 {
                *d = *s;
            }
            if n > 1 {
                *d.add(1) = *s.add(1);
            }
            if n > 2 {
                *d.add(2) = *s.add(2);
            }
        }
    }
}

impl Conv2dKernels for crate::kernels::Neon {
    unsafe fn im2col_2d_unchecked(
        x: &[f32],
        window: Window2d,
        pixels: Range<usize>,
        col: &mut [f32],
    ) {
        let ops = Im2colOps { copy, gather: crate::kernels::conv::neon::gather };
        im2col_2d_with(x, window, (pixels.start, pixels.len()), col, ops);
    }
}
