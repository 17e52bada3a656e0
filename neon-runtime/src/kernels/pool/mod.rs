//! Pooling kernels: 2-D max pooling over channel-first images, 1-D average and max pooling
//! along frames, and global (whole-sequence) average and max pooling.
//!
//! `max_pool2d`: `x[channels, height, width]` -> `y[channels, out_height, out_width]`,
//! PyTorch's `MaxPool2d` without padding or dilation (`ceil_mode = False`): `y[c, oh, ow] =
//! max over i < kernel_h, j < kernel_w of x[c, oh * stride_h + i, ow * stride_w + j]`, with
//! `out_height = floor((height - kernel_h) / stride_h) + 1` (likewise the width), so rows
//! and columns that do not fill a window are dropped.
//!
//! `pool1d`: PyTorch's `AvgPool1d` / `MaxPool1d` along the frames of a `[channels, frames]`
//! (channel-first) or `[frames, channels]` (frame-major) sequence, with padding `(left,
//! right)`, `ceil_mode` and `count_include_pad` ([`Pool1dGeometry`]). `global_pool`: the
//! mean or maximum over all frames, `[channels, frames]` -> `[channels, 1]` (PyTorch
//! `x.mean(-1, keepdim=True)`, `AdaptiveAvgPool1d(1)`, `x.amax(-1, keepdim=True)`).
//!
//! The maximum is IEEE `maximum`, as NEON's `fmax`: a NaN anywhere in the window gives NaN
//! (as PyTorch), and `max(-0, +0) = +0`; every backend agrees bit for bit (the x86 kernels
//! may return another of a window's NaNs). Max pooling pads with `-inf`.
//!
//! Backends (each overrides the hook [`PoolKernels::max_pool2d_unchecked`]):
//! - `Portable` (`pool/portable.rs`): one scalar window maximum per output;
//! - `Neon` (`pool/neon.rs`): blocks of 4 outputs in registers, whole-tensor passes for
//!   openWakeWord's 2x2/2 and 1x2/(1,2) pools;
//! - `X86<I>` (`pool/x86.rs`): `kernel_w = stride_w = 2` windows in AVX-512F (16 outputs
//!   per step) or AVX2 (8) vectors with a masked tail; other windows run the portable
//!   kernel.
//!
//! The 1-D and global pools have no backend kernels of their own: they are portable
//! (frame-major reductions are column loops over contiguous channels, which LLVM
//! vectorises) and reuse SIMD kernels where it is simple: an unpadded `max_pool1d` is
//! `max_pool2d` on a `[channels, 1, frames]` view (frame-major: `[1, frames, channels]`),
//! and a channel-first global mean sums rows with [`NormKernels::sum_shifted`] (blocks of
//! 4096 added in f64). A pool costs O(C·T·k) against O(C²·T·k) for the convolutions
//! around it in a model, so more SIMD would not show; measure with
//! `benches/insn-count.sh` before adding any.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod x86;

use super::norm::sum_shifted_blocks;
use super::{BackendType, NormKernels};
use crate::kernels::gemm::fmax;
use crate::tensor::Layout;

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

/// Pooling kernels.
///
/// Callers use the entry points [`max_pool2d`](PoolKernels::max_pool2d),
/// [`pool1d`](PoolKernels::pool1d) and [`global_pool`](PoolKernels::global_pool); backends
/// override only the hook [`max_pool2d_unchecked`](PoolKernels::max_pool2d_unchecked), never
/// an entry point.
pub trait PoolKernels: BackendType + NormKernels {
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

    /// 1-D average or max pooling along frames (PyTorch's `AvgPool1d` / `MaxPool1d`, see
    /// [`Pool1dGeometry`]): `x` is `[channels, frames]` (or `[frames, channels]` in
    /// frame-major), `y` is `[channels, out_frames]` (or `[out_frames, channels]`) with
    /// `out_frames` = [`Pool1dGeometry::out_frames`]. An unpadded max pool runs
    /// [`max_pool2d`](PoolKernels::max_pool2d).
    ///
    /// # Panics
    /// When the geometry breaks a rule of [`Pool1dGeometry::check`] or a slice length does
    /// not match (`x`: `channels * frames`, `y`: `channels * out_frames`).
    fn pool1d(x: &[f32], g: Pool1dGeometry, y: &mut [f32]) {
        g.check();
        let x_want = g.channels.checked_mul(g.frames);
        assert_eq!(Some(x.len()), x_want, "pool1d: x length");
        let out = g.out_frames();
        assert_eq!(y.len(), g.channels * out, "pool1d: y length");
        if g.channels == 0 {
            return;
        }
        let unpadded = g.pad == (0, 0) && out == (g.frames - g.kernel) / g.stride + 1;
        if g.kind == PoolKind::Max && unpadded {
            // The same windows as a 2-D pool of height 1 (channel-first) or width 1 per
            // channel column (frame-major).
            let image = match g.layout {
                Layout::ChannelFirst => PoolGeometry {
                    channels: g.channels,
                    height: 1,
                    width: g.frames,
                    kernel: (1, g.kernel),
                    stride: (1, g.stride),
                },
                Layout::FrameMajor => PoolGeometry {
                    channels: 1,
                    height: g.frames,
                    width: g.channels,
                    kernel: (g.kernel, 1),
                    stride: (g.stride, 1),
                },
            };
            Self::max_pool2d(x, image, y);
        } else {
            portable::pool1d(x, &g, y);
        }
    }

    /// Global average or max pooling over all frames: `x` `[channels, frames]` -> `y`
    /// `[channels, 1]` (frame-major: `[frames, channels]` -> `[1, channels]`), `y[c] =
    /// sum_t x[c, t] / frames` or `max_t x[c, t]`. A channel-first mean sums each row with
    /// [`NormKernels::sum_shifted`] on blocks of 4096 values added in f64.
    ///
    /// # Panics
    /// When `frames` is 0 or a slice length does not match (`x`: `channels * frames`, `y`:
    /// `channels`).
    fn global_pool(x: &[f32], g: GlobalPoolGeometry, y: &mut [f32]) {
        assert!(g.frames >= 1, "global_pool: frames must be >= 1");
        assert_eq!(Some(x.len()), g.channels.checked_mul(g.frames), "global_pool: x length");
        assert_eq!(y.len(), g.channels, "global_pool: y length");
        match (g.kind, g.layout) {
            (PoolKind::Avg, Layout::ChannelFirst) => {
                for (v, row) in y.iter_mut().zip(x.chunks_exact(g.frames)) {
                    *v = (sum_shifted_blocks::<Self>(row, 0.0) / g.frames as f64) as f32;
                }
            }
            (PoolKind::Max, Layout::ChannelFirst) => {
                for (v, row) in y.iter_mut().zip(x.chunks_exact(g.frames)) {
                    *v = row.iter().fold(f32::NEG_INFINITY, |m, &s| fmax(m, s));
                }
            }
            (kind, Layout::FrameMajor) => portable::global_pool_frames(x, kind, y),
        }
    }
}

/// Which reduction a pool takes over its window: the mean or the maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The mean of the window (PyTorch `AvgPool1d`, `mean`).
    Avg,
    /// The IEEE maximum of the window (PyTorch `MaxPool1d`, `amax`); NaN propagates.
    Max,
}

/// The geometry of a 1-D pool along frames, PyTorch's `AvgPool1d` / `MaxPool1d`
/// (`torch.nn.functional.avg_pool1d`): windows of `kernel` frames every `stride` frames over
/// the sequence padded with `pad = (left, right)` frames (zeros for the mean, `-inf` for the
/// maximum).
///
/// Output `t'` covers input frames `start = t' * stride - left` to `start + kernel`. The
/// mean divides by `min(start + kernel, frames + right) - start` with `count_include_pad`
/// (PyTorch's default: the kernel size except in a `ceil_mode` last window), else by the
/// number of real frames in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool1dGeometry {
    /// Mean or maximum.
    pub kind: PoolKind,
    /// Channels of the sequence.
    pub channels: usize,
    /// Frames of the input sequence.
    pub frames: usize,
    /// Window length in frames (`>= 1`).
    pub kernel: usize,
    /// Step between windows in frames (`>= 1`).
    pub stride: usize,
    /// `(left, right)` padding frames, each at most `kernel / 2`.
    pub pad: (usize, usize),
    /// Rounds the output length up: a last window that starts inside the input but runs
    /// past the right padding is kept (only with `stride <= kernel - right`).
    pub ceil_mode: bool,
    /// The mean divides by the window length, padding included (see above).
    pub count_include_pad: bool,
    /// `ChannelFirst`: `[channels, frames]`; `FrameMajor`: `[frames, channels]`.
    pub layout: Layout,
}

impl Pool1dGeometry {
    /// Output frames: `floor((frames + left + right - kernel) / stride) + 1`, with
    /// `ceil_mode` `floor((frames + left + right - kernel + stride - 1) / stride) + 1`
    /// (PyTorch's `pooling_output_shape`), for a geometry [`check`](Self::check) accepts.
    #[inline]
    pub const fn out_frames(&self) -> usize {
        let span = self.frames + self.pad.0 + self.pad.1 - self.kernel;
        let round_up = if self.ceil_mode { self.stride - 1 } else { 0 };
        (span + round_up) / self.stride + 1
    }

    /// The kernel contract: `kernel` and `stride` >= 1, each pad at most `kernel / 2`
    /// (PyTorch: "pad should be at most half of effective kernel size"), `frames + left +
    /// right >= kernel`, and with `ceil_mode` `stride <= kernel - right` (then PyTorch
    /// never drops a last window that starts in the right padding, and every window holds
    /// a real frame).
    ///
    /// # Panics
    /// With the broken rule's message.
    pub fn check(&self) {
        let (k, s, (l, r)) = (self.kernel, self.stride, self.pad);
        assert!(k >= 1 && s >= 1, "pool1d: kernel/stride 0");
        assert!(l <= k / 2 && r <= k / 2, "pool1d: pad larger than half the kernel");
        assert!(self.frames + l + r >= k, "pool1d: kernel larger than the padded input");
        assert!(
            !self.ceil_mode || s <= k - r,
            "pool1d: ceil_mode needs stride <= kernel - right pad"
        );
    }
}

/// The geometry of a global pool: the mean or maximum over all `frames` of each channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPoolGeometry {
    /// Mean or maximum.
    pub kind: PoolKind,
    /// Channels of the sequence.
    pub channels: usize,
    /// Frames of the input sequence (`>= 1`).
    pub frames: usize,
    /// `ChannelFirst`: `[channels, frames]` -> `[channels, 1]`; `FrameMajor`: `[frames,
    /// channels]` -> `[1, channels]`.
    pub layout: Layout,
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
