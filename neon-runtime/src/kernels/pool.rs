//! Pooling kernels: 2-D max pooling over channel-first images.
//!
//! `x[channels, height, width]` -> `y[channels, out_height, out_width]`, PyTorch's
//! `MaxPool2d` without padding or dilation (`ceil_mode = False`): `y[c, oh, ow] = max over
//! i < kernel_h, j < kernel_w of x[c, oh * stride_h + i, ow * stride_w + j]`, with
//! `out_height = floor((height - kernel_h) / stride_h) + 1` (likewise the width), so rows
//! and columns that do not fill a window are dropped.
//!
//! The maximum is IEEE `maximum`, as NEON's `fmax`: a NaN anywhere in the window gives NaN
//! (as PyTorch), and `max(-0, +0) = +0`; both backends agree bit for bit.
//!
//! NEON: blocks of 4 outputs in registers. `kernel_w = stride_w = 2` (openWakeWord's 2x2/2
//! and 1x2/(1,2) pools) loads each input row with one de-interleaving `ld2` (the even and
//! odd columns, the two taps of 4 windows) and needs `kernel_h` loads and `2 * kernel_h - 1`
//! `fmax` per 4 outputs; `stride_w = 1` loads each tap with `ld1`; other strides and the
//! last `out_width % 4` outputs of each row are scalar.

use super::gemm::fmax;
use super::Portable;

/// Max pooling kernels.
pub trait PoolKernels {
    /// 2-D max pooling: `y[c, oh, ow] = max_{i < kh, j < kw} x[c, oh * sh + i, ow * sw + j]`
    /// with `(kh, kw) = kernel`, `(sh, sw) = stride`; `x`: `[channels, height, width]`, `y`:
    /// `[channels, (height - kh) / sh + 1, (width - kw) / sw + 1]` (floor division).
    ///
    /// # Panics
    /// When a kernel size or stride is 0, the kernel is larger than the image, or a slice
    /// length does not match (`x`: `channels * height * width`, `y`: `channels *
    /// out_height * out_width`).
    fn max_pool2d(
        x: &[f32],
        channels: usize,
        height: usize,
        width: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        y: &mut [f32],
    );
}

/// Checks the kernel contract and returns `(out_height, out_width)`.
fn check_pool(
    x_len: usize,
    channels: usize,
    (height, width): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    y_len: usize,
) -> (usize, usize) {
    assert!(kh >= 1 && kw >= 1 && sh >= 1 && sw >= 1, "max_pool2d: kernel/stride 0");
    assert!(kh <= height && kw <= width, "max_pool2d: kernel larger than the image");
    let plane = height.checked_mul(width);
    assert_eq!(Some(x_len), plane.and_then(|p| p.checked_mul(channels)), "max_pool2d: x length");
    let (oh, ow) = ((height - kh) / sh + 1, (width - kw) / sw + 1);
    assert_eq!(y_len, channels * oh * ow, "max_pool2d: y length");
    (oh, ow)
}

/// The window maximum of output `(oh, ow)` of one channel plane, scalar.
#[inline(always)]
fn window_max(
    xc: &[f32],
    width: usize,
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    oh: usize,
    ow: usize,
) -> f32 {
    let base = oh * sh * width + ow * sw;
    let mut m = xc[base];
    for i in 0..kh {
        for &v in &xc[base + i * width..][..kw] {
            m = fmax(m, v);
        }
    }
    m
}

impl PoolKernels for Portable {
    fn max_pool2d(
        x: &[f32],
        channels: usize,
        height: usize,
        width: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        y: &mut [f32],
    ) {
        let (oh_n, ow_n) = check_pool(x.len(), channels, (height, width), kernel, stride, y.len());
        for (xc, yc) in x.chunks_exact(height * width).zip(y.chunks_exact_mut(oh_n * ow_n)) {
            for (oh, yr) in yc.chunks_exact_mut(ow_n).enumerate() {
                for (ow, v) in yr.iter_mut().enumerate() {
                    *v = window_max(xc, width, kernel, stride, oh, ow);
                }
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use super::window_max;
    use core::arch::aarch64::*;

    /// One output row of one channel: blocks of 4 outputs in registers (`kw = sw = 2`:
    /// `ld2` per input row; `sw = 1`: `ld1` per tap), the rest scalar.
    pub(super) fn pool_row(
        xc: &[f32],
        width: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        oh: usize,
        yr: &mut [f32],
    ) {
        let ((kh, kw), (sh, sw)) = (kernel, stride);
        let ow_n = yr.len();
        let top = oh * sh * width;
        let mut ow = 0;
        if (kw, sw) == (2, 2) {
            while ow + 4 <= ow_n {
                // Rows top + i * width, columns 2 ow .. 2 ow + 8: 2 ow + 8 <= 2 ow_n <=
                // width (ow_n = floor(width / 2) here) and the rows are inside the plane.
                debug_assert!(2 * ow + 8 <= width && top + (kh - 1) * width + width <= xc.len());
                // SAFETY: as above: every `ld2` reads 8 values inside row `oh * sh + i` of
                // the plane `xc`, and the store writes yr[ow..ow + 4], ow + 4 <= yr.len().
                unsafe {
                    let p = xc.as_ptr().add(top + 2 * ow);
                    let v = vld2q_f32(p);
                    let mut m = vmaxq_f32(v.0, v.1);
                    for i in 1..kh {
                        let v = vld2q_f32(p.add(i * width));
                        m = vmaxq_f32(m, vmaxq_f32(v.0, v.1));
                    }
                    vst1q_f32(yr.as_mut_ptr().add(ow), m);
                }
                ow += 4;
            }
        } else if sw == 1 {
            while ow + 4 <= ow_n {
                // Columns ow + j .. ow + j + 4 <= ow_n + kw - 1 = width.
                debug_assert!(ow + kw + 3 <= width && top + (kh - 1) * width + width <= xc.len());
                // SAFETY: as above: every load reads 4 values inside row `oh * sh + i` of
                // the plane, and the store writes yr[ow..ow + 4], ow + 4 <= yr.len().
                unsafe {
                    let p = xc.as_ptr().add(top + ow);
                    let mut m = vld1q_f32(p);
                    for i in 0..kh {
                        for j in 0..kw {
                            m = vmaxq_f32(m, vld1q_f32(p.add(i * width + j)));
                        }
                    }
                    vst1q_f32(yr.as_mut_ptr().add(ow), m);
                }
                ow += 4;
            }
        }
        for (o, v) in yr.iter_mut().enumerate().skip(ow) {
            *v = window_max(xc, width, kernel, stride, oh, o);
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl PoolKernels for super::Neon {
    fn max_pool2d(
        x: &[f32],
        channels: usize,
        height: usize,
        width: usize,
        kernel: (usize, usize),
        stride: (usize, usize),
        y: &mut [f32],
    ) {
        let (oh_n, ow_n) = check_pool(x.len(), channels, (height, width), kernel, stride, y.len());
        for (xc, yc) in x.chunks_exact(height * width).zip(y.chunks_exact_mut(oh_n * ow_n)) {
            for (oh, yr) in yc.chunks_exact_mut(ow_n).enumerate() {
                neon::pool_row(xc, width, kernel, stride, oh, yr);
            }
        }
    }
}
