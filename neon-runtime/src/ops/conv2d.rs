//! The conv2d operator: [`Conv2d`] (small kernels, stride, zero padding per side, an
//! optional fused leaky ReLU / clamp output stage) on the packed GEMM.
//!
//! ## Window
//! PyTorch's `Conv2d` (the `torch.nn.Conv2d` documentation) without dilation or groups, on
//! channel-first images `[channels, height, width]`: output pixel `(oh, ow)` of output
//! channel `o` is `bias[o] + sum_{c, i, j} w[o, c, i, j] * x[c, ih, iw]` with
//! `ih = oh * stride_h + i - pad_top` and `iw = ow * stride_w + j - pad_left`, zeros outside
//! the image, and
//! `out_height = floor((height + pad_top + pad_bottom - kernel_h) / stride_h) + 1` and
//! likewise `out_width`. The weight is PyTorch's `[out_channels, in_channels, kernel_h,
//! kernel_w]` (OIHW; a TFLite OHWI weight must be transposed by the converter).
//! TensorFlow's "SAME" padding at stride 1 is `kernel - 1` zeros per axis, the odd one at the
//! bottom/right ([`Conv2dGeometry::same`]); "VALID" is no padding.
//!
//! ## Output stage
//! With [`Conv2dGeometry::leaky_relu`] and/or [`Conv2dGeometry::clamp_min`] every output is
//! stored as `max(leaky_relu(y), min)`, applied by the GEMM to each register tile before it
//! is stored ([`Epilogue`]); this is exactly the separate [`Activation::LeakyRelu`] followed
//! by [`Activation::ClampMin`] (bit for bit), minus two passes over the output. The fused
//! leaky ReLU takes slopes in `[0, 1]` (where it equals `max(y, slope * y)`).
//! openWakeWord's embedding needs `leaky_relu(0.2)` and `clamp_min(-0.4)` after every conv
//! but the last.
//!
//! ## Strategy
//! `C[o, p] = W · B` over the output pixels `p = oh * out_width + ow`, with the weights
//! packed once by [`pack_a`] (reduction `k = in_channels * kernel_h * kernel_w`) and
//! [`GemmKernels::gemm_packed_a`] writing the channel-first output. The pixels run in
//! blocks of [`Conv2dGeometry::tile_pixels`] (about [`CONV2D_BLOCK_VALUES`] values of `B`,
//! a multiple of the GEMM's 12-column tile) so that each block of `B` stays in cache while
//! every 8-row weight panel passes over it, and the scratch is bounded:
//! - **Direct** (`kernel_w == 1`, strides 1, no padding: openWakeWord's 3x1 "valid" convs,
//!   and 1x1 convs): no im2col and no scratch. Tap row `i` of channel `c` for pixel `p` is
//!   `x[c, oh + i, ow] = x[c * height * width + i * width + p]`, so `B` is the input itself
//!   read as `kernel_h` segments of `in_channels` rows ([`BRows`]: rows `height * width`
//!   apart, segments `width` apart), and the weights are packed in the matching `(i, c)`
//!   reduction order.
//! - **Rows** (strides 1, no top or bottom padding, `pad_left + pad_right = kernel_w - 1`:
//!   openWakeWord's 1x3 "same" convs and its first 3x3 conv), where the backend has the
//!   kernel ([`Conv2dKernels::conv_rows`]; the x86-64 backend at the AVX-512F
//!   level): the GEMM reads tap `(i, j)` of channel `c` for pixel `p` as `x[c * height *
//!   width + i * width + p + j - pad_left]` with masked loads that give zero where the
//!   column leaves the image row. Same weights and bits as im2col; the scratch goes unused.
//! - **im2col** otherwise: each block of `B` is built by [`Conv2dKernels::im2col_2d`] into
//!   the caller's scratch ([`Conv2d::scratch_len`]), then multiplied.
//!
//!
//! ## Cost
//! The fused output stage costs fewer instructions than separate activation passes, and the
//! direct path fewer than im2col on the same conv; instruction counts per layer and for
//! openWakeWord's whole embedding: `BENCHMARKS.md`, "conv2d and openWakeWord's embedding".
//!
//! [`pack_a`]: crate::kernels::gemm::pack_a
//! [`GemmKernels::gemm_packed_a`]: crate::kernels::GemmKernels::gemm_packed_a
//! [`Conv2dKernels::im2col_2d`]: crate::kernels::Conv2dKernels::im2col_2d
//! [`Conv2dKernels::conv_rows`]: crate::kernels::Conv2dKernels::conv_rows
//! [`Activation::LeakyRelu`]: crate::ops::activation::Activation::LeakyRelu
//! [`Activation::ClampMin`]: crate::ops::activation::Activation::ClampMin

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::conv2d::{im2col_gemm_in, PackedConv, RowConv, Window2d};
use crate::kernels::gemm::{pack_a, packed_a_len, BRows, Epilogue, GemmA, PACK_MR};
use crate::kernels::Backend;
use crate::ops::{
    check_channel_first, check_len, check_scratch, expect_dim, first_input, image_shape,
    window_output, RunOptions, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// Target number of values in one block of the GEMM's `B` operand (the im2col scratch,
/// or the part of the input one block reads): 32768 values = 128 KiB, well inside the L2
/// cache of a Cortex-A53 .. A76 / Neoverse-N1 (>= 256 KiB), which serves the block to
/// every 8-row weight panel while the panel (`8 x k` values, <= 9 KiB for openWakeWord) and
/// the current 12-column slice of the block stay in L1. Smaller blocks cost instructions:
/// one GEMM call and one im2col setup per block and reduction row (`BENCHMARKS.md`, "conv2d
/// and openWakeWord's embedding").
pub const CONV2D_BLOCK_VALUES: usize = 32 * 1024;

/// Columns of the NEON packed-A micro-kernel: pixel blocks are a multiple of it.
const GEMM_TILE_COLS: usize = 12;

const CONV2D: &str = "conv2d";

/// Geometry of a [`Conv2d`]: sizes and the fused output stage, without weights.
/// Implements [`ShapeRule`].
///
/// Input: channel-first `[in_channels, height, width]`. Output: `[out_channels,
/// out_height, out_width]`. Weight: `[out_channels, in_channels, kernel_h, kernel_w]`
/// (PyTorch's layout); bias: `[out_channels]`. See the [module docs](self) for the window,
/// the output size and the output stage.
///
/// Build it with [`Conv2dGeometry::new`] and the builder methods, or fill the fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2dGeometry {
    /// Input channels (`>= 1`).
    pub in_channels: usize,
    /// Output channels (`>= 1`).
    pub out_channels: usize,
    /// Kernel rows (`>= 1`).
    pub kernel_h: usize,
    /// Kernel columns (`>= 1`).
    pub kernel_w: usize,
    /// Step between output rows, in input rows (`>= 1`).
    pub stride_h: usize,
    /// Step between output columns, in input columns (`>= 1`).
    pub stride_w: usize,
    /// Zero rows above the image.
    pub pad_top: usize,
    /// Zero rows below the image.
    pub pad_bottom: usize,
    /// Zero columns left of the image.
    pub pad_left: usize,
    /// Zero columns right of the image.
    pub pad_right: usize,
    /// Fused leaky ReLU on the output with this slope (in `[0, 1]`), or none.
    pub leaky_slope: Option<f32>,
    /// Fused clamp from below on the output (after the leaky ReLU), or none; not NaN.
    pub clamp_min: Option<f32>,
}

impl Conv2dGeometry {
    /// `in_channels -> out_channels` with a `kernel = (kernel_h, kernel_w)` window: strides
    /// 1, no padding ("valid"), no output stage.
    pub const fn new(in_channels: usize, out_channels: usize, kernel: (usize, usize)) -> Self {
        Self {
            in_channels,
            out_channels,
            kernel_h: kernel.0,
            kernel_w: kernel.1,
            stride_h: 1,
            stride_w: 1,
            pad_top: 0,
            pad_bottom: 0,
            pad_left: 0,
            pad_right: 0,
            leaky_slope: None,
            clamp_min: None,
        }
    }

    /// With strides `(stride_h, stride_w)`.
    pub const fn stride(mut self, stride_h: usize, stride_w: usize) -> Self {
        self.stride_h = stride_h;
        self.stride_w = stride_w;
        self
    }

    /// With zero padding per side.
    pub const fn padding(mut self, top: usize, bottom: usize, left: usize, right: usize) -> Self {
        self.pad_top = top;
        self.pad_bottom = bottom;
        self.pad_left = left;
        self.pad_right = right;
        self
    }

    /// "Same" padding for stride 1 (set the kernel first): `kernel - 1` zeros per axis,
    /// `(kernel - 1) / 2` above / left and the rest below / right (TensorFlow's "SAME",
    /// PyTorch's `padding="same"`), so the output has the input's height and width.
    pub const fn same(mut self) -> Self {
        let (th, tw) = (self.kernel_h.saturating_sub(1), self.kernel_w.saturating_sub(1));
        self.pad_top = th / 2;
        self.pad_bottom = th - th / 2;
        self.pad_left = tw / 2;
        self.pad_right = tw - tw / 2;
        self
    }

    /// With a fused leaky ReLU of `slope` (in `[0, 1]`) on the output.
    pub const fn leaky_relu(mut self, slope: f32) -> Self {
        self.leaky_slope = Some(slope);
        self
    }

    /// With a fused clamp from below at `min` on the output (after the leaky ReLU, if any).
    pub const fn clamp_min(mut self, min: f32) -> Self {
        self.clamp_min = Some(min);
        self
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero channel count, kernel size or stride, a padding
    /// or weight size that overflows `usize`, a fused leaky ReLU slope outside `[0, 1]`, or
    /// a NaN clamp bound.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        let geometry = |reason| Err(ShapeError::Geometry { op: CONV2D, reason });
        if self.in_channels == 0 || self.out_channels == 0 {
            return geometry("channel counts must be >= 1");
        }
        if self.kernel_h == 0 || self.kernel_w == 0 {
            return geometry("kernel sizes must be >= 1");
        }
        if self.stride_h == 0 || self.stride_w == 0 {
            return geometry("strides must be >= 1");
        }
        if self.pad_top.checked_add(self.pad_bottom).is_none()
            || self.pad_left.checked_add(self.pad_right).is_none()
        {
            return geometry("padding overflows usize");
        }
        if self.weight_len().is_none() || self.packed_len().is_none() {
            return geometry("weight size overflows usize");
        }
        if self.leaky_slope.is_some_and(|s| !(0.0..=1.0).contains(&s)) {
            return geometry("the fused leaky ReLU slope must be in [0, 1]");
        }
        if self.clamp_min.is_some_and(f32::is_nan) {
            return geometry("the clamp_min bound must not be NaN");
        }
        Ok(())
    }

    /// GEMM reduction length `in_channels * kernel_h * kernel_w`.
    pub fn reduction(&self) -> usize {
        self.in_channels.saturating_mul(self.kernel_h).saturating_mul(self.kernel_w)
    }

    /// Elements of the PyTorch-layout weight `[out_channels, in_channels, kernel_h,
    /// kernel_w]`.
    pub fn weight_len(&self) -> Option<usize> {
        self.out_channels
            .checked_mul(self.in_channels)?
            .checked_mul(self.kernel_h)?
            .checked_mul(self.kernel_w)
    }

    /// Elements of the packed weights (what [`Conv2d::from_packed`] takes).
    pub fn packed_len(&self) -> Option<usize> {
        let k = self.in_channels.checked_mul(self.kernel_h)?.checked_mul(self.kernel_w)?;
        // The packed length rounds out_channels up to a panel: check that product first.
        self.out_channels.checked_add(PACK_MR)?.checked_mul(k)?;
        Some(packed_a_len(self.out_channels, k))
    }

    /// The fused output stage, if any, as the GEMM applies it.
    pub fn epilogue(&self) -> Option<Epilogue> {
        match (self.leaky_slope, self.clamp_min) {
            (None, None) => None,
            (slope, min) => Some(Epilogue {
                slope: slope.unwrap_or(1.0),
                min: min.unwrap_or(f32::NEG_INFINITY),
            }),
        }
    }

    /// `(out_height, out_width)` for a `height x width` input, `None` when the input is
    /// smaller than one window (or the geometry invalid).
    pub fn output_size(&self, height: usize, width: usize) -> Option<(usize, usize)> {
        self.validate::<usize>().ok()?;
        let h =
            window_output::<usize>(CONV2D, "", &height, self.pad_h(), self.kernel_h, self.stride_h);
        let w =
            window_output::<usize>(CONV2D, "", &width, self.pad_w(), self.kernel_w, self.stride_w);
        Some((h.ok()?, w.ok()?))
    }

    fn pad_h(&self) -> usize {
        self.pad_top.saturating_add(self.pad_bottom)
    }

    fn pad_w(&self) -> usize {
        self.pad_left.saturating_add(self.pad_right)
    }

    /// `true` when the GEMM reads the input directly, without im2col or scratch:
    /// `kernel_w == 1`, strides 1 and no padding (see the [module docs](self)).
    pub fn is_direct(&self) -> bool {
        self.kernel_w == 1
            && self.stride_h == 1
            && self.stride_w == 1
            && self.pad_top == 0
            && self.pad_bottom == 0
            && self.pad_left == 0
            && self.pad_right == 0
    }

    /// Output pixels per GEMM block for `pixels` output pixels: `min(pixels, max(12,
    /// CONV2D_BLOCK_VALUES / reduction))` rounded down to a multiple of 12 (the GEMM's tile).
    pub fn tile_pixels(&self, pixels: usize) -> usize {
        let per_block = CONV2D_BLOCK_VALUES / self.reduction().max(1);
        let tile = (per_block / GEMM_TILE_COLS * GEMM_TILE_COLS).max(GEMM_TILE_COLS);
        pixels.min(tile)
    }

    /// Scratch elements [`Conv2d::run`] needs for a `height x width` input: one im2col
    /// block, `reduction * tile_pixels(out_height * out_width)` (0 on the direct path).
    /// Returns 0 when the input would be too small (`run` then fails before using scratch).
    pub fn scratch_len(&self, height: usize, width: usize) -> usize {
        if self.is_direct() {
            return 0;
        }
        self.output_size(height, width).map_or(0, |(h, w)| {
            self.tile_pixels(h.saturating_mul(w)).saturating_mul(self.reduction())
        })
    }

    /// Packs PyTorch-layout weights `[out_channels, in_channels, kernel_h, kernel_w]` into
    /// the layout [`Conv2d::from_packed`] takes: [`pack_a`] of the `[out_channels,
    /// reduction]` matrix, with the reduction in `(c, i, j)` order, or `(i, c)` order on the
    /// direct path (see the [module docs](self)). Use it to pack into a static or stack
    /// buffer without `alloc`, or offline.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry; [`Error::Length`] when `weight` or `out`
    /// does not have [`Conv2dGeometry::weight_len`] / [`Conv2dGeometry::packed_len`]
    /// elements.
    pub fn pack_weights(&self, weight: &[f32], out: &mut [f32]) -> Result<(), Error> {
        self.validate::<usize>()?;
        let (wlen, plen) = (self.weight_len().unwrap_or(0), self.packed_len().unwrap_or(0));
        check_len("weight", wlen, weight.len())?;
        check_len("packed weight", plen, out.len())?;
        let (m, k) = (self.out_channels, self.reduction());
        if !(self.is_direct() && self.kernel_h > 1) {
            pack_a(weight, m, k, out);
            return Ok(());
        }
        // Direct path: reduction index `i * in_channels + c` (tap row major), written
        // straight into the packed-A layout (panel p, step kk: the 8 weights W[p*8 + r, kk],
        // zero past out_channels). Here kernel_w == 1: w[o, c, i] = weight[(o*C + c)*kh + i].
        let (cin, kh) = (self.in_channels, self.kernel_h);
        for (p, panel) in out.chunks_exact_mut(PACK_MR * k).enumerate() {
            for (kk, dst) in panel.chunks_exact_mut(PACK_MR).enumerate() {
                let (i, c) = (kk / cin, kk % cin);
                for (r, d) in dst.iter_mut().enumerate() {
                    let o = p * PACK_MR + r;
                    *d = if o < m { weight[(o * cin + c) * kh + i] } else { 0.0 };
                }
            }
        }
        Ok(())
    }
}

impl ShapeRule for Conv2dGeometry {
    fn name(&self) -> &'static str {
        CONV2D
    }

    /// `[in_channels, height, width]` -> `[out_channels, out_height, out_width]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an invalid geometry, [`ShapeError::Rank`] unless one
    /// rank-3 input, [`ShapeError::Dim`] for the wrong channel count,
    /// [`ShapeError::TooSmall`] when the padded input can be smaller than the kernel.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = first_input(CONV2D, self.validate(), inputs, "conv2d takes one input", 3)?;
        expect_dim(CONV2D, 0, x, 0, "input channels", &D::constant(self.in_channels))?;
        let (h, w) = (&x.dims()[1], &x.dims()[2]);
        let what_h = "padded input height (height + pad_top + pad_bottom)";
        let what_w = "padded input width (width + pad_left + pad_right)";
        let oh = window_output(CONV2D, what_h, h, self.pad_h(), self.kernel_h, self.stride_h)?;
        let ow = window_output(CONV2D, what_w, w, self.pad_w(), self.kernel_w, self.stride_w)?;
        image_shape(CONV2D, D::constant(self.out_channels), oh, ow)
    }
    layout_facts!(Layout::ChannelFirst);
}

packed_conv!(Conv2d, "conv2d", Conv2dGeometry, "[out_channels, in_channels, kernel_h, kernel_w]");

impl<S: AsRef<[f32]>> Conv2d<S> {
    /// Scratch elements [`Conv2d::run`] needs for a `height x width` input
    /// ([`Conv2dGeometry::scratch_len`]).
    pub fn scratch_len(&self, height: usize, width: usize) -> usize {
        self.geometry.scratch_len(height, width)
    }

    with_run_options! {
        self;
        /// Runs the conv: `input` channel-first `[in_channels, height, width]`, `output`
        /// channel-first `[out_channels, out_height, out_width]` (overwritten), `scratch` at
        /// least [`Conv2d::scratch_len`] elements (contents ignored).
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a frame-major input or output,
        /// [`Error::Shape`] from the shape rule (rank, channels, too-small input) or for an
        /// output of the wrong shape (argument 1), [`Error::Length`] for short scratch.
        run(input: &TensorView<'_>, output: &mut TensorViewMut<'_>, scratch: &mut [f32]);
        /// [`Conv2d::run`] with `options`: each GEMM (per tile of pixels) and the direct
        /// kernel run blocks of output channels and pixels on `options.parallel()`; on the
        /// im2col path each block of pixels is copied into its own part of the same scratch
        /// by the task that multiplies it ([`im2col_gemm_in`]), so the scratch is the same for
        /// any context, and so are the bits.
        ///
        /// # Errors
        /// As [`Conv2d::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let par = options.parallel();
            let g = &self.geometry;
            let what = ["output channels", "output height", "output width"];
            let out_shape = check_channel_first(g, input, output, &what)?;
            let (height, width) = (input.dims()[1], input.dims()[2]);
            check_scratch(g.scratch_len(height, width), scratch.len())?;

            let (out_h, out_w) = (out_shape.dims()[1], out_shape.dims()[2]);
            let pixels = out_h * out_w;
            let tile = g.tile_pixels(pixels);
            let m = g.out_channels;
            let (a, bias, epilogue) = (self.packed.as_ref(), self.bias(), g.epilogue());
            let x = input.data();
            let y = output.data_mut();
            if g.is_direct() {
                // B = the input: segment i (tap row) starts i image rows in, its rows are the
                // channels (see the module docs); columns p0.. of every row are block p0's.
                let rows = BRows {
                    rows: g.in_channels,
                    ldb: height * width,
                    segments: g.kernel_h,
                    segment_stride: width,
                };
                for p0 in (0..pixels).step_by(tile) {
                    let nt = tile.min(pixels - p0);
                    let ga = GemmA { m, n: nt, rows, epilogue, ldc: pixels };
                    B::gemm_packed_a_in(par, ga, a, &x[p0..], bias, &mut y[p0..])?;
                }
                return Ok(());
            }
            if (g.stride_h, g.stride_w) == (1, 1)
                && (g.pad_top, g.pad_bottom) == (0, 0)
                && g.pad_left.checked_add(g.pad_right) == Some(g.kernel_w - 1)
            {
                // "Valid" along the height, "same" along the width: the backend may read the
                // input directly.
                let rc = RowConv {
                    channels: g.in_channels,
                    out_channels: m,
                    height,
                    width,
                    kernel_h: g.kernel_h,
                    kernel_w: g.kernel_w,
                    pad_left: g.pad_left,
                };
                if B::conv_rows_in(par, (a, rc), x, (bias, epilogue), y)? {
                    return Ok(());
                }
            }
            let window = Window2d {
                channels: g.in_channels,
                height,
                width,
                kernel_h: g.kernel_h,
                kernel_w: g.kernel_w,
                stride_h: g.stride_h,
                stride_w: g.stride_w,
                dilation_h: 1,
                dilation_w: 1,
                pad_top: g.pad_top,
                pad_left: g.pad_left,
                out_height: out_h,
                out_width: out_w,
            };
            let w = PackedConv { packed: a, m, bias, epilogue };
            for p0 in (0..pixels).step_by(tile) {
                let nt = tile.min(pixels - p0);
                let out = (&mut y[p0..], pixels);
                im2col_gemm_in::<B>(par, (x, window), (p0, nt), w, scratch, out)?;
            }
            Ok(())
        }
    }
}
