//! The portable pooling: one scalar window maximum per output of `max_pool2d` (the IEEE
//! `maximum` of the GEMM's epilogue, [`fmax`]), the only kernel off aarch64 and x86-64 and
//! the x86 backend's for windows its vector kernels do not take; the padded 1-D pools; the
//! frame-major global pools.

use super::{Pool1dGeometry, PoolGeometry, PoolKind};
use crate::kernels::gemm::fmax;
use crate::tensor::Layout;

/// The window maximum of output `(oh, ow)` of one channel plane `xc`.
#[inline(always)]
fn window_max(xc: &[f32], g: &PoolGeometry, oh: usize, ow: usize) -> f32 {
    let ((kh, kw), (sh, sw)) = (g.kernel, g.stride);
    let base = oh * sh * g.width + ow * sw;
    let mut m = xc[base];
    for i in 0..kh {
        for &v in &xc[base + i * g.width..][..kw] {
            m = fmax(m, v);
        }
    }
    m
}

/// Every output of every channel plane, over a geometry the entry point accepted.
pub(crate) fn max_pool2d(x: &[f32], g: PoolGeometry, y: &mut [f32]) {
    let (oh_n, ow_n) = g.out_dims();
    for (xc, yc) in x.chunks_exact(g.height * g.width).zip(y.chunks_exact_mut(oh_n * ow_n)) {
        for (oh, yr) in yc.chunks_exact_mut(ow_n).enumerate() {
            for (ow, v) in yr.iter_mut().enumerate() {
                *v = window_max(xc, &g, oh, ow);
            }
        }
    }
}

/// One output window of a 1-D pool: `(first, end)` real frames (`first < end`), and the
/// divisor of the mean.
#[inline(always)]
fn window(g: &Pool1dGeometry, out: usize) -> (usize, usize, f32) {
    let (left, right) = g.pad;
    // Window `[start, start + kernel)` in padded coordinates (shifted by `left`).
    let start = out * g.stride;
    let first = start.saturating_sub(left);
    let end = (start + g.kernel).min(g.frames + left) - left;
    let count = if g.count_include_pad {
        (start + g.kernel).min(g.frames + left + right) - start
    } else {
        end - first
    };
    (first, end, count as f32)
}

/// Every output of a 1-D pool (see [`Pool1dGeometry`]) over a geometry the entry point
/// accepted: per output window, a sum or an IEEE maximum of its real frames (a padded frame
/// is 0 for the sum and `-inf` for the maximum, so it changes neither when the window holds
/// a real frame, which the geometry's rules ensure).
pub(crate) fn pool1d(x: &[f32], g: &Pool1dGeometry, y: &mut [f32]) {
    let (frames, out_frames, c) = (g.frames, g.out_frames(), g.channels);
    let reduce = |taps: &[f32], count: f32| match g.kind {
        PoolKind::Avg => taps.iter().sum::<f32>() / count,
        PoolKind::Max => taps.iter().fold(f32::NEG_INFINITY, |m, &v| fmax(m, v)),
    };
    match g.layout {
        Layout::ChannelFirst => {
            for (xr, yr) in x.chunks_exact(frames).zip(y.chunks_exact_mut(out_frames)) {
                for (o, v) in yr.iter_mut().enumerate() {
                    let (first, end, count) = window(g, o);
                    *v = reduce(&xr[first..end], count);
                }
            }
        }
        Layout::FrameMajor => {
            // Column loops over the channels of each frame (contiguous, vectorised).
            for (o, yr) in y.chunks_exact_mut(c).enumerate() {
                let (first, end, count) = window(g, o);
                let mut rows = x[first * c..end * c].chunks_exact(c);
                yr.copy_from_slice(rows.next().expect("a window holds a real frame"));
                for xr in rows {
                    for (v, &s) in yr.iter_mut().zip(xr) {
                        *v = match g.kind {
                            PoolKind::Avg => *v + s,
                            PoolKind::Max => fmax(*v, s),
                        };
                    }
                }
                if g.kind == PoolKind::Avg {
                    yr.iter_mut().for_each(|v| *v /= count);
                }
            }
        }
    }
}

/// Global pooling of a frame-major `[frames, channels]` sequence (`frames >= 1`) into `y`
/// `[1, channels]`: column sums (divided by `frames`) or IEEE maxima, frame by frame.
pub(crate) fn global_pool_frames(x: &[f32], kind: PoolKind, y: &mut [f32]) {
    let c = y.len();
    let frames = x.len() / c.max(1);
    let g = Pool1dGeometry {
        kind,
        channels: c,
        frames,
        kernel: frames,
        stride: frames,
        pad: (0, 0),
        ceil_mode: false,
        count_include_pad: true,
        layout: Layout::FrameMajor,
    };
    if c > 0 {
        pool1d(x, &g, y);
    }
}
