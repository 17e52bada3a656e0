//! Portable conv hooks: the frame-major im2col blocks as scalar 4 x 4 transposes, and the
//! depthwise rows in fixed-width blocks that LLVM vectorises.

use super::{depthwise_scalar_at, im2col_fm_with, interior_blocks, Win, Window1d};

/// Frame-major im2col through the shared block driver, each block a scalar 4x4 transpose.
pub(super) fn im2col_fm(x: &[f32], w: Win, col: &mut [f32]) {
    let (rows, stride) = (w.channels * w.kernel, w.stride);
    im2col_fm_with(x, w, col, |offs, base, out| {
        // A scalar 4x4 block transpose: one bounds check per reduction row.
        let (o0, rest) = out.split_at_mut(rows);
        let (o1, rest) = rest.split_at_mut(rows);
        let (o2, o3) = rest.split_at_mut(rows);
        let dst = o0.iter_mut().zip(o1).zip(o2).zip(o3);
        for (&o, (((d0, d1), d2), d3)) in offs.iter().zip(dst) {
            let src = &x[base + o..][..3 * stride + 1];
            (*d0, *d1, *d2, *d3) = (src[0], src[stride], src[2 * stride], src[3 * stride]);
        }
    });
}

/// Portable depthwise over one channel, the stride a constant for 1 and 2.
pub(super) fn depthwise_row(w: &Window1d, xr: &[f32], wr: &[f32], b: f32, yr: &mut [f32]) {
    let (d, pl) = (w.dilation, w.pad_left);
    match w.stride {
        1 => depthwise_row_strided::<1>(xr, wr, b, 1, d, pl, yr),
        2 => depthwise_row_strided::<2>(xr, wr, b, 2, d, pl, yr),
        s => depthwise_row_strided::<0>(xr, wr, b, s, d, pl, yr),
    }
}

/// `W` portable depthwise outputs of one channel from `xr[base..]`: every tap accumulated
/// in a fixed-width array (LLVM vectorises the inner loop and keeps it in registers).
#[inline(always)]
fn depthwise_block_portable<const S: usize, const W: usize>(
    xr: &[f32],
    base: usize,
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    out: &mut [f32],
) {
    let stride = if S == 0 { stride } else { S };
    let mut acc = [b; W];
    for (t, &wt) in wr.iter().enumerate() {
        let src = &xr[base + t * dilation..][..W * stride];
        for (a, &v) in acc.iter_mut().zip(src.iter().step_by(stride)) {
            *a += wt * v;
        }
    }
    out[..W].copy_from_slice(&acc);
}

/// Portable depthwise over one channel: blocks of 32 and then 8 outputs in the interior,
/// scalar edges and tail (`S` is the stride when known, 0 = run time).
#[inline(always)]
fn depthwise_row_strided<const S: usize>(
    xr: &[f32],
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    yr: &mut [f32],
) {
    let stride = if S == 0 { stride } else { S };
    let (frames, kernel, out_frames) = (xr.len(), wr.len(), yr.len());
    let blocks = |w| interior_blocks(w, kernel, stride, dilation, pad_left, frames, out_frames);
    let ((lo, hi32), (_, hi8)) = (blocks(32), blocks(8));
    let mut n = 0;
    while n < out_frames {
        if n >= lo && n < hi32 {
            let (base, out) = (n * stride - pad_left, &mut yr[n..n + 32]);
            depthwise_block_portable::<S, 32>(xr, base, wr, b, stride, dilation, out);
            n += 32;
        } else if n >= lo && n < hi8 {
            let (base, out) = (n * stride - pad_left, &mut yr[n..n + 8]);
            depthwise_block_portable::<S, 8>(xr, base, wr, b, stride, dilation, out);
            n += 8;
        } else {
            yr[n] = depthwise_scalar_at(xr, wr, b, stride, dilation, pad_left, n);
            n += 1;
        }
    }
}
