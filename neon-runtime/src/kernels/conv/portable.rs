//! Portable conv hooks: the frame-major im2col blocks as scalar 4 x 4 transposes, and the
//! depthwise rows in fixed-width blocks that LLVM vectorises.

use super::{depthwise_row_with, im2col_fm_with, Win, Window1d};

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

/// Portable depthwise over one channel, the stride a constant for 1 and 2 (inlined into
/// the x86 levels' copies, `x86.rs`).
#[inline(always)]
pub(super) fn depthwise_row(w: &Window1d, xr: &[f32], wr: &[f32], b: f32, yr: &mut [f32]) {
    let taps = [w.stride, w.dilation, w.pad_left];
    match w.stride {
        1 => depthwise_row_strided::<1>(xr, wr, b, taps, yr),
        2 => depthwise_row_strided::<2>(xr, wr, b, taps, yr),
        _ => depthwise_row_strided::<0>(xr, wr, b, taps, yr),
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
    taps: [usize; 3],
    yr: &mut [f32],
) {
    let (stride, dilation) = (if S == 0 { taps[0] } else { S }, taps[1]);
    depthwise_row_with::<S, 32, 8>(xr, wr, b, taps, yr, |n, base, wide, yr| {
        if wide {
            depthwise_block_portable::<S, 32>(
                xr,
                base,
                wr,
                b,
                stride,
                dilation,
                &mut yr[n..n + 32],
            );
        } else {
            depthwise_block_portable::<S, 8>(xr, base, wr, b, stride, dilation, &mut yr[n..n + 8]);
        }
    });
}
