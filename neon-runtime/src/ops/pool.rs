//! Pooling operators: [`MaxPool2d`].
//!
//! PyTorch's `MaxPool2d` without padding or dilation (`ceil_mode = False`) on channel-first
//! images: `[channels, height, width]` -> `[channels, out_height, out_width]`,
//! `out_height = floor((height - kernel_h) / stride_h) + 1` (likewise the width), so the
//! last rows or columns that do not fill a window are dropped. NaN propagates (see
//! [`crate::kernels::pool`]). openWakeWord's embedding pools 2x2 with stride 2 and 1x2 with
//! stride (1, 2) (height = time, width = mel bins).
//!
//! The pool has no weights: the operator is its own geometry ([`ShapeRule`]).

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::pool::PoolGeometry;
use crate::kernels::Backend;
use crate::ops::{check_channel_first, first_input, image_shape, window_output, ShapeRule};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

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
