//! Pooling kernels: 2-D max pooling over channel-first images.
//!
//! `x[channels, height, width]` -> `y[channels, out_height, out_width]`, PyTorch's
//! `MaxPool2d` without padding or dilation (`ceil_mode = False`): `y[c, oh, ow] = max over
//! i < kernel_h, j < kernel_w of x[c, oh * stride_h + i, ow * stride_w + j]`, with
//! `out_height = floor((height - kernel_h) / stride_h) + 1` (likewise the width), so rows
//! and columns that do not fill a window are dropped.
//!
//! The maximum is IEEE `maximum`, as NEON's `fmax`: a NaN anywhere in the window gives NaN
//! (as PyTorch), and `max(-0, +0) = +0`; every backend agrees bit for bit (the x86 kernels
//! may return another of a window's NaNs).
//!
//! Backends (each overrides the hook [`PoolKernels::max_pool2d_unchecked`]):
//! - `Portable` (`pool/portable.rs`): one scalar window maximum per output;
//! - `Neon` (`pool/neon.rs`): blocks of 4 outputs in registers, whole-tensor passes for
//!   openWakeWord's 2x2/2 and 1x2/(1,2) pools;
//! - `X86<I>` (`pool/x86.rs`): `kernel_w = stride_w = 2` windows in AVX-512F (16 outputs
//!   per step) or AVX2 (8) vectors with a masked tail; other windows run the portable
//!   kernel.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod x86;

use super::BackendType;

/// The geometry of a 2-D max pooling: `x` is `[channels, height, width]`, the windows are
/// `kernel = (kernel_h, kernel_w)` at `stride = (stride_h, stride_w)`, and `y` is
/// `[channels, out_height, out_width]` ([`PoolGeometry::out_dims`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeometry {
    /// Channel planes.
    pub channels: usize,
    /// Rows of a plane.
    pub height: usize,
    /// Columns of a plane.
    pub width: usize,
    /// `(kernel_h, kernel_w)`: the window.
    pub kernel: (usize, usize),
    /// `(stride_h, stride_w)`: the window's step.
    pub stride: (usize, usize),
}

impl PoolGeometry {
    /// `(out_height, out_width)` = `((height - kernel_h) / stride_h + 1, (width - kernel_w)
    /// / stride_w + 1)` (floor division), for a geometry the kernel accepts.
    #[inline]
    pub const fn out_dims(&self) -> (usize, usize) {
        let ((kh, kw), (sh, sw)) = (self.kernel, self.stride);
        ((self.height - kh) / sh + 1, (self.width - kw) / sw + 1)
    }
}

/// Max pooling kernels.
///
/// Callers use the entry point [`max_pool2d`](PoolKernels::max_pool2d); backends override
/// only the hook [`max_pool2d_unchecked`](PoolKernels::max_pool2d_unchecked), never the
/// entry point.
pub trait PoolKernels: BackendType {
    /// 2-D max pooling: `y[c, oh, ow] = max_{i < kh, j < kw} x[c, oh * sh + i, ow * sw + j]`
    /// with `(kh, kw) = g.kernel`, `(sh, sw) = g.stride`; `x`: `[channels, height, width]`,
    /// `y`: `[channels, (height - kh) / sh + 1, (width - kw) / sw + 1]` (floor division).
    ///
    /// # Panics
    /// When a kernel size or stride is 0, the kernel is larger than the image, or a slice
    /// length does not match (`x`: `channels * height * width`, `y`: `channels *
    /// out_height * out_width`).
    fn max_pool2d(x: &[f32], g: PoolGeometry, y: &mut [f32]) {
        check(x.len(), &g, y.len());
        if g.channels == 0 {
            return;
        }
        // SAFETY: `check` accepted the geometry and the slice lengths; `channels >= 1`.
        unsafe { Self::max_pool2d_unchecked(x, g, y) }
    }

    /// The hook of [`max_pool2d`](PoolKernels::max_pool2d), called only by it: the contract
    /// is checked and every size is >= 1. The provided body is the portable kernel.
    ///
    /// # Safety
    /// `g` satisfies the entry point's contract with `channels >= 1`, `x.len() = channels *
    /// height * width` and `y.len() = channels * out_height * out_width`.
    unsafe fn max_pool2d_unchecked(x: &[f32], g: PoolGeometry, y: &mut [f32]) {
        portable::max_pool2d(x, g, y);
    }
}

/// Checks the kernel contract.
fn check(x_len: usize, g: &PoolGeometry, y_len: usize) {
    let ((kh, kw), (sh, sw)) = (g.kernel, g.stride);
    assert!(kh >= 1 && kw >= 1 && sh >= 1 && sw >= 1, "max_pool2d: kernel/stride 0");
    assert!(kh <= g.height && kw <= g.width, "max_pool2d: kernel larger than the image");
    let plane = g.height.checked_mul(g.width);
    let x_want = plane.and_then(|p| p.checked_mul(g.channels));
    assert_eq!(Some(x_len), x_want, "max_pool2d: x length");
    let (oh, ow) = g.out_dims();
    assert_eq!(y_len, g.channels * oh * ow, "max_pool2d: y length");
}

impl PoolKernels for super::Portable {}
