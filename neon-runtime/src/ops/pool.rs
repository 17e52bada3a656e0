//! Pooling operators: [`MaxPool2d`], [`Pool1d`] (`avg_pool1d`, `max_pool1d`) and
//! [`GlobalPool`] (`global_avg_pool`, `global_max_pool`).
//!
//! [`MaxPool2d`]: PyTorch's `MaxPool2d` without padding or dilation (`ceil_mode = False`)
//! on channel-first images: `[channels, height, width]` -> `[channels, out_height,
//! out_width]`, `out_height = floor((height - kernel_h) / stride_h) + 1` (likewise the
//! width), so the last rows or columns that do not fill a window are dropped. NaN
//! propagates (see [`crate::kernels::pool`]). openWakeWord's embedding pools 2x2 with
//! stride 2 and 1x2 with stride (1, 2) (height = time, width = mel bins).
//!
//! [`Pool1d`]: PyTorch's `AvgPool1d` / `MaxPool1d` along the frames of a sequence,
//! `[channels, frames]` -> `[channels, out_frames]` (frame-major `[frames, channels]` ->
//! `[out_frames, channels]`), `out_frames = floor((frames + left + right - kernel) /
//! stride) + 1`; with `ceil_mode` the division rounds up. Two limits keep that rule one
//! expression for every length: each pad is at most `kernel / 2` (PyTorch's own rule), and
//! `ceil_mode` needs `stride <= kernel - right`: PyTorch then drops a last window that would
//! start in the right padding, which never happens under that limit. Max pooling pads with
//! `-inf`; the mean counts the padding (`count_include_pad`, PyTorch's default) or not.
//!
//! [`GlobalPool`]: the mean or maximum over all frames, `[channels, frames]` ->
//! `[channels, 1]` (frame-major `[frames, channels]` -> `[1, channels]`): PyTorch's
//! `x.mean(-1, keepdim=True)` / `AdaptiveAvgPool1d(1)` and `x.amax(-1, keepdim=True)`.
//!
//! Pools have no weights: each operator is its own geometry ([`ShapeRule`]).

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::pool::{GlobalPoolGeometry, Pool1dGeometry, PoolGeometry};
use crate::kernels::Backend;
use crate::ops::sequence::{make, seq};
use crate::ops::{
    check_channel_first, expect_layout, expect_shape, first_input, image_shape, layout_name,
    window_output, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

pub use crate::kernels::pool::PoolKind;

const MAX_POOL2D: &str = "max_pool2d";

/// 2-D max pooling: window `kernel_h x kernel_w`, strides `stride_h, stride_w`, no padding.
/// See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2d {
    /// Window rows (`>= 1`).
    pub kernel_h: usize,
    /// Window columns (`>= 1`).
    pub kernel_w: usize,
    /// Step between output rows (`>= 1`).
    pub stride_h: usize,
    /// Step between output columns (`>= 1`).
    pub stride_w: usize,
}

impl ShapeRule for MaxPool2d {
    fn name(&self) -> &'static str {
        MAX_POOL2D
    }

    /// `[channels, height, width]` -> `[channels, out_height, out_width]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero kernel size or stride, [`ShapeError::Rank`]
    /// unless one rank-3 input, [`ShapeError::TooSmall`] when the input can be smaller than
    /// the window.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = first_input(MAX_POOL2D, self.validate(), inputs, "max_pool2d takes one input", 3)?;
        let [c, h, w] = [&x.dims()[0], &x.dims()[1], &x.dims()[2]];
        let oh = window_output(MAX_POOL2D, "input height", h, 0, self.kernel_h, self.stride_h)?;
        let ow = window_output(MAX_POOL2D, "input width", w, 0, self.kernel_w, self.stride_w)?;
        image_shape(MAX_POOL2D, c.clone(), oh, ow)
    }
    layout_facts!(Layout::ChannelFirst);
}

impl MaxPool2d {
    /// A `kernel = (kernel_h, kernel_w)` window with the stride equal to the kernel
    /// (PyTorch's default: non-overlapping windows).
    pub const fn new(kernel: (usize, usize)) -> Self {
        Self { kernel_h: kernel.0, kernel_w: kernel.1, stride_h: kernel.0, stride_w: kernel.1 }
    }

    /// With strides `(stride_h, stride_w)`.
    pub const fn stride(mut self, stride_h: usize, stride_w: usize) -> Self {
        self.stride_h = stride_h;
        self.stride_w = stride_w;
        self
    }

    /// Runs the pool: `input` channel-first `[channels, height, width]`, `output`
    /// `[channels, out_height, out_width]` (overwritten).
    ///
    /// # Errors
    /// Before any computation: [`Error::Layout`] for a frame-major input or output,
    /// [`Error::Shape`] for a zero kernel size or stride, an input that is not rank 3 or
    /// smaller than the window, or an output of the wrong shape (argument 1).
    pub fn run<B: Backend>(
        &self,
        input: &TensorView<'_>,
        output: &mut TensorViewMut<'_>,
    ) -> Result<(), Error> {
        check_channel_first(self, input, output, &["channels", "output height", "output width"])?;
        let [c, h, w] = [input.dims()[0], input.dims()[1], input.dims()[2]];
        let (kernel, stride) = ((self.kernel_h, self.kernel_w), (self.stride_h, self.stride_w));
        let g = PoolGeometry { channels: c, height: h, width: w, kernel, stride };
        B::max_pool2d(input.data(), g, output.data_mut());
        Ok(())
    }

    fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        if self.kernel_h == 0 || self.kernel_w == 0 {
            return Err(ShapeError::Geometry {
                op: MAX_POOL2D,
                reason: "kernel sizes must be >= 1",
            });
        }
        if self.stride_h == 0 || self.stride_w == 0 {
            return Err(ShapeError::Geometry { op: MAX_POOL2D, reason: "strides must be >= 1" });
        }
        Ok(())
    }
}

/// 1-D average or max pooling along frames (PyTorch's `AvgPool1d` / `MaxPool1d`): see the
/// [module docs](self) for the output length and the limits, and
/// [`Pool1dGeometry`] for the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool1d {
    /// Mean (`"avg_pool1d"`) or maximum (`"max_pool1d"`).
    pub kind: PoolKind,
    /// Window length in frames (`>= 1`).
    pub kernel: usize,
    /// Step between windows in frames (`>= 1`; [`Pool1d::new`] sets the kernel).
    pub stride: usize,
    /// Padding frames before the input (`<= kernel / 2`).
    pub pad_left: usize,
    /// Padding frames after the input (`<= kernel / 2`).
    pub pad_right: usize,
    /// Rounds the output length up (needs `stride <= kernel - pad_right`).
    pub ceil_mode: bool,
    /// The mean divides by the window length, padding included (PyTorch's default `true`).
    pub count_include_pad: bool,
    /// Layout of the input and the output.
    pub layout: Layout,
}

impl Pool1d {
    /// A `kind` pool of `kernel` frames at stride `kernel`, unpadded, `ceil_mode = false`,
    /// `count_include_pad = true`, channel-first (PyTorch's defaults).
    pub const fn new(kind: PoolKind, kernel: usize) -> Self {
        Self {
            kind,
            kernel,
            stride: kernel,
            pad_left: 0,
            pad_right: 0,
            ceil_mode: false,
            count_include_pad: true,
            layout: Layout::ChannelFirst,
        }
    }

    /// With padding `(left, right)` frames.
    pub const fn padding(mut self, left: usize, right: usize) -> Self {
        self.pad_left = left;
        self.pad_right = right;
        self
    }

    field_setters! {
        /// With stride `stride` frames.
        stride: usize;
        /// With `ceil_mode` (see the [module docs](self) for its limit).
        ceil_mode: bool;
        /// Whether the mean counts padding frames.
        count_include_pad: bool;
        /// In layout `layout`.
        layout: Layout;
    }

    /// Runs the pool: `input` `[channels, frames]` (frame-major `[frames, channels]`),
    /// `output` `[channels, out_frames]` (frame-major `[out_frames, channels]`),
    /// overwritten.
    ///
    /// # Errors
    /// Before any computation: [`Error::Layout`] when a view is not in `self.layout`,
    /// [`Error::Shape`] for a geometry [`Pool1d::output_shape`](ShapeRule::output_shape)
    /// rejects, an input that is not rank 2 or shorter than the window, or an output of
    /// the wrong shape (argument 1).
    pub fn run<B: Backend>(
        &self,
        input: &TensorView<'_>,
        output: &mut TensorViewMut<'_>,
    ) -> Result<(), Error> {
        let (channels, frames) = check_sequence(self, self.layout, input, output)?;
        let g = Pool1dGeometry {
            kind: self.kind,
            channels,
            frames,
            kernel: self.kernel,
            stride: self.stride,
            pad: (self.pad_left, self.pad_right),
            ceil_mode: self.ceil_mode,
            count_include_pad: self.count_include_pad,
            layout: self.layout,
        };
        B::pool1d(input.data(), g, output.data_mut());
        Ok(())
    }

    /// The first geometry rule this pool breaks, if any (what
    /// [`output_shape`](ShapeRule::output_shape) reports as [`ShapeError::Geometry`]):
    /// `neon_plan!` asks it to point at the option that breaks the rule.
    pub const fn broken_rule(&self) -> Option<Pool1dRule> {
        let (k, s) = (self.kernel, self.stride);
        if k == 0 {
            Some(Pool1dRule::Kernel)
        } else if s == 0 {
            Some(Pool1dRule::Stride)
        } else if self.pad_left > k / 2 || self.pad_right > k / 2 {
            Some(Pool1dRule::Padding)
        } else if self.ceil_mode && s > k - self.pad_right {
            Some(Pool1dRule::CeilMode)
        } else {
            None
        }
    }

    fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        match self.broken_rule() {
            None => Ok(()),
            Some(rule) => Err(ShapeError::Geometry { op: self.name(), reason: rule.reason() }),
        }
    }
}

/// A geometry rule of [`Pool1d`] (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool1dRule {
    /// `kernel >= 1`.
    Kernel,
    /// `stride >= 1`.
    Stride,
    /// Each pad at most `kernel / 2` (PyTorch's rule).
    Padding,
    /// `ceil_mode` only with `stride <= kernel - pad_right`, where PyTorch never drops a
    /// last window, so the output length stays one expression.
    CeilMode,
}

impl Pool1dRule {
    /// The rule as an error's reason.
    pub const fn reason(self) -> &'static str {
        match self {
            Pool1dRule::Kernel => "kernel must be >= 1",
            Pool1dRule::Stride => "stride must be >= 1",
            Pool1dRule::Padding => "padding must be at most kernel / 2 on each side (PyTorch)",
            Pool1dRule::CeilMode => "ceil_mode needs stride <= kernel - right padding",
        }
    }
}

impl ShapeRule for Pool1d {
    fn name(&self) -> &'static str {
        kind_name(self.kind, ["avg_pool1d", "max_pool1d"])
    }

    /// `[channels, frames]` -> `[channels, out_frames]` (frame-major: `[frames, channels]`
    /// -> `[out_frames, channels]`).
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero kernel or stride, a pad above `kernel / 2`, or
    /// `ceil_mode` with `stride > kernel - pad_right`; [`ShapeError::Rank`] unless one
    /// rank-2 input; [`ShapeError::TooSmall`] when the padded input can be shorter than the
    /// window.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let x = first_input(op, self.validate(), inputs, "a pool takes one input", 2)?;
        let (_, t) = seq(self.layout, x);
        let (k, s, pad) = (self.kernel, self.stride, self.pad_left + self.pad_right);
        let what = if pad == 0 { "input frames" } else { "padded input frames" };
        let mut out = window_output(op, what, &t, pad, k, s)?;
        if self.ceil_mode {
            // floor((T + pad - k + s - 1) / s) + 1; cannot fail after the floor rule.
            out = window_output(op, what, &t, pad + s - 1, k, s)?;
        }
        make(op, self.layout, x, out)
    }
    layout_facts!(self.layout);
}

/// Global average or max pooling over all frames: `[channels, frames]` -> `[channels, 1]`
/// (frame-major: `[frames, channels]` -> `[1, channels]`). See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPool {
    /// Mean (`"global_avg_pool"`) or maximum (`"global_max_pool"`).
    pub kind: PoolKind,
    /// Layout of the input and the output.
    pub layout: Layout,
}

impl ShapeRule for GlobalPool {
    fn name(&self) -> &'static str {
        kind_name(self.kind, ["global_avg_pool", "global_max_pool"])
    }

    /// `[channels, frames]` -> `[channels, 1]` (frame-major: `[frames, channels]` -> `[1,
    /// channels]`).
    ///
    /// # Errors
    /// [`ShapeError::Rank`] unless one rank-2 input.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let x = first_input(op, Ok(()), inputs, "a pool takes one input", 2)?;
        make(op, self.layout, x, D::constant(1))
    }
    layout_facts!(self.layout);
}

impl GlobalPool {
    /// Runs the pool: `input` `[channels, frames]` (frame-major `[frames, channels]`),
    /// `output` `[channels, 1]` (frame-major `[1, channels]`), overwritten.
    ///
    /// # Errors
    /// Before any computation: [`Error::Layout`] when a view is not in `self.layout`,
    /// [`Error::Shape`] for an input that is not rank 2 or an output of the wrong shape
    /// (argument 1).
    pub fn run<B: Backend>(
        &self,
        input: &TensorView<'_>,
        output: &mut TensorViewMut<'_>,
    ) -> Result<(), Error> {
        let (channels, frames) = check_sequence(self, self.layout, input, output)?;
        let g = GlobalPoolGeometry { kind: self.kind, channels, frames, layout: self.layout };
        B::global_pool(input.data(), g, output.data_mut());
        Ok(())
    }
}

/// The name of a pool of `kind`: `names[0]` for the mean, `names[1]` for the maximum.
const fn kind_name(kind: PoolKind, names: [&'static str; 2]) -> &'static str {
    match kind {
        PoolKind::Avg => names[0],
        PoolKind::Max => names[1],
    }
}

/// Validates a call of a pool over a sequence in `layout`: the input's layout, `rule` on
/// its shape, the output's layout and shape (argument 1). Returns the input's `(channels,
/// frames)`.
fn check_sequence<R: ShapeRule>(
    rule: &R,
    layout: Layout,
    input: &TensorView<'_>,
    output: &TensorViewMut<'_>,
) -> Result<(usize, usize), Error> {
    let op = rule.name();
    expect_layout(op, input.layout(), layout, layout_name(layout))?;
    let want = rule.output_shape(&[*input.shape()])?;
    expect_layout(op, output.layout(), layout, layout_name(layout))?;
    expect_shape(op, 1, output.shape(), &want)?;
    Ok(seq(layout, input.shape()))
}
