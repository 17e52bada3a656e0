//! conv1d operators: [`Conv1d`] (stride, dilation, groups, left/right zero padding, on the
//! packed GEMM) and [`DepthwiseConv1d`] (one filter per channel, a direct kernel).
//!
//! ## Window
//! Both follow PyTorch's `Conv1d` (the `torch.nn.Conv1d` documentation): output frame `n`
//! of output channel `o` is
//! `bias[o] + sum_{c, t} w[o, c, t] * x[g * C_g + c, n * stride + t * dilation - pad_left]`,
//! over the `C_g = in_channels / groups` channels of `o`'s group `g` and the taps `t <
//! kernel`, with zeros outside the input. The output length is
//! `floor((frames + pad_left + pad_right - dilation * (kernel - 1) - 1) / stride) + 1`,
//! and the input must be long enough for it to be at least 1 (a causal conv pads only
//! on the left: `pad_left = dilation * (kernel - 1)`, `pad_right = 0`).
//!
//! ## Conv1d strategy
//! One GEMM per group over im2col'd input, with the weights packed once in the
//! constructor:
//! - channel-first output `[out_channels, out_frames]`: `C = W · col`, `W` packed by
//!   [`pack_a`] per group, `col = [C_g * kernel, out_frames]`
//!   ([`ConvKernels::im2col_channel_first`]), [`GemmKernels::gemm_packed_a`].
//!   When `kernel == 1`, `stride == 1` and there is no padding, the input rows themselves
//!   are the GEMM operand and no scratch is needed.
//! - frame-major output `[out_frames, out_channels]`: `C = col · W^T`, `W` packed by
//!   [`pack_b`] per group, `col = [out_frames, C_g * kernel]`
//!   ([`ConvKernels::im2col_frame_major`]), [`GemmKernels::gemm_packed_b`] writing the
//!   group's column block of the output (`ldc = out_channels`). The GEMM reads its
//!   activations row-major `[frames, k]`, so even a pointwise conv needs this im2col (for
//!   `kernel == 1` it is a transpose of the input).
//!
//! The im2col runs in tiles of at most [`IM2COL_TILE_FRAMES`] output frames (one group,
//! one tile at a time), so the scratch ([`Conv1d::scratch_len`]) is bounded by
//! `in_channels / groups * kernel * IM2COL_TILE_FRAMES` values however long the input.
//!
//! A depthwise conv (`groups == in_channels == out_channels`) also runs here, as
//! `channels` one-row GEMMs; [`DepthwiseConv1d`] is the direct, much faster route.
//!
//! [`ConvKernels::im2col_channel_first`]: crate::kernels::ConvKernels::im2col_channel_first
//! [`ConvKernels::im2col_frame_major`]: crate::kernels::ConvKernels::im2col_frame_major
//! [`GemmKernels::gemm_packed_a`]: crate::kernels::GemmKernels::gemm_packed_a
//! [`GemmKernels::gemm_packed_b`]: crate::kernels::GemmKernels::gemm_packed_b

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::conv::Window1d;
use crate::kernels::gemm::{pack_a, pack_b, packed_a_len, packed_b_len, GemmA, GemmB};
use crate::kernels::Backend;
use crate::ops::{
    check_bias_len, check_input_layout, check_len, check_scratch, expect_dim, expect_named_shape,
    first_input, RunOptions, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// Output frames per im2col tile of [`Conv1d::run`]: the scratch holds at most
/// `in_channels / groups * kernel * IM2COL_TILE_FRAMES` values however long the input, and
/// each GEMM call still sees a wide `n`.
pub const IM2COL_TILE_FRAMES: usize = 256;

const CONV1D: &str = "conv1d";
const DEPTHWISE: &str = "depthwise_conv1d";

/// The sliding window shared by both operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    pad_right: usize,
}

impl Window {
    fn validate<D>(&self, op: &'static str) -> Result<(), ShapeError<D>> {
        let geometry = |reason| Err(ShapeError::Geometry { op, reason });
        if self.kernel == 0 {
            return geometry("kernel must be >= 1");
        }
        if self.stride == 0 {
            return geometry("stride must be >= 1");
        }
        if self.dilation == 0 {
            return geometry("dilation must be >= 1");
        }
        if self.span().is_none() {
            return geometry("dilation * (kernel - 1) + 1 overflows usize");
        }
        if self.pad_left.checked_add(self.pad_right).is_none() {
            return geometry("pad_left + pad_right overflows usize");
        }
        Ok(())
    }

    /// Receptive field of one output frame: `dilation * (kernel - 1) + 1`.
    fn span(&self) -> Option<usize> {
        (self.kernel.checked_sub(1)?).checked_mul(self.dilation)?.checked_add(1)
    }

    /// Output frames for `frames` input frames (PyTorch's formula), generic over [`Dim`].
    /// Requires a validated window.
    fn output_frames<D: Dim>(&self, op: &'static str, frames: &D) -> Result<D, ShapeError<D>> {
        let span = self.span().unwrap_or(usize::MAX);
        let padded = frames.add_const(self.pad_left.saturating_add(self.pad_right));
        let Some(rest) = padded.checked_sub_const(span) else {
            return Err(ShapeError::TooSmall {
                op,
                what: "padded input frames (frames + pad_left + pad_right)",
                value: padded,
                min: span,
            });
        };
        Ok(rest.div_floor_const(self.stride).add_const(1))
    }

    /// The kernels' window over `channels` rows of `frames` input frames.
    fn rows(&self, channels: usize, frames: usize) -> Window1d {
        let (kernel, stride, dilation, pad_left) =
            (self.kernel, self.stride, self.dilation, self.pad_left);
        Window1d { channels, frames, kernel, stride, dilation, pad_left }
    }

    /// [`Window::output_frames`] on a concrete length, `None` when too short.
    fn output_frames_usize(&self, frames: usize) -> Option<usize> {
        let span = self.span()?;
        let padded = frames.checked_add(self.pad_left)?.checked_add(self.pad_right)?;
        Some(padded.checked_sub(span)? / self.stride.max(1) + 1)
    }
}

/// The window builders of both geometries (fields `kernel`, `stride`, `dilation`,
/// `pad_left`, `pad_right`): `stride`, `dilation`, `padding`, `causal`, and the private
/// [`Window`] they describe.
macro_rules! window_builders {
    () => {
        field_setters! {
            /// With `stride`.
            stride: usize;
            /// With `dilation`.
            dilation: usize;
        }

        /// With `pad_left` zeros before and `pad_right` zeros after the input.
        pub const fn padding(mut self, pad_left: usize, pad_right: usize) -> Self {
            self.pad_left = pad_left;
            self.pad_right = pad_right;
            self
        }

        /// Causal padding: `dilation * (kernel - 1)` zeros on the left only, so that output
        /// frame `n` sees input frames `<= n` (set `dilation` and `kernel` first).
        pub const fn causal(mut self) -> Self {
            self.pad_left = self.dilation.saturating_mul(self.kernel.saturating_sub(1));
            self.pad_right = 0;
            self
        }

        fn window(&self) -> Window {
            Window {
                kernel: self.kernel,
                stride: self.stride,
                dilation: self.dilation,
                pad_left: self.pad_left,
                pad_right: self.pad_right,
            }
        }
    };
}

/// A rank-2 shape from two dims, as a shape rule result.
fn shape2<D: Dim>(op: &'static str, a: D, b: D) -> Result<Shape<D>, ShapeError<D>> {
    Shape::new(&[a.clone(), b.clone()]).map_err(|_| {
        let value = if a.at_least(1) { b } else { a };
        ShapeError::TooSmall { op, what: "output dimension", value, min: 1 }
    })
}

/// Checks that `output` has shape `expected` (argument `arg`) and layout `layout`.
fn check_output(
    op: &'static str,
    arg: usize,
    output: &TensorViewMut<'_>,
    expected: &Shape,
    layout: Layout,
    what: [&'static str; 2],
) -> Result<(), Error> {
    if output.layout() != layout {
        let expected = match layout {
            Layout::ChannelFirst => "channel-first output",
            Layout::FrameMajor => "frame-major output",
        };
        return Err(Error::Layout { op, expected });
    }
    Ok(expect_named_shape(op, arg, output.shape(), expected, &what)?)
}

/// Geometry of a [`Conv1d`]: sizes without weights. Implements [`ShapeRule`].
///
/// Input: channel-first `[in_channels, frames]`. Output: `[out_channels, out_frames]` when
/// `writes_layout` is [`Layout::ChannelFirst`], `[out_frames, out_channels]` when it is
/// [`Layout::FrameMajor`]. Weight: `[out_channels, in_channels / groups, kernel]`
/// (PyTorch's `Conv1d` layout); bias: `[out_channels]`. See the [module docs](self) for the
/// window and the output length.
///
/// Build it with [`Conv1dGeometry::new`] and the builder methods, or fill the fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1dGeometry {
    /// Input channels (`>= 1`, divisible by `groups`).
    pub in_channels: usize,
    /// Output channels (`>= 1`, divisible by `groups`).
    pub out_channels: usize,
    /// Taps per filter (`>= 1`).
    pub kernel: usize,
    /// Step between output frames, in input frames (`>= 1`).
    pub stride: usize,
    /// Step between taps, in input frames (`>= 1`).
    pub dilation: usize,
    /// Groups: channels are split into `groups` independent convolutions (`>= 1`).
    pub groups: usize,
    /// Zero frames before the input.
    pub pad_left: usize,
    /// Zero frames after the input.
    pub pad_right: usize,
    /// Layout of the output (the input is always channel-first).
    pub output_layout: Layout,
}

impl Conv1dGeometry {
    /// `in_channels -> out_channels` with `kernel` taps: stride 1, dilation 1, one group,
    /// no padding, channel-first output.
    pub const fn new(in_channels: usize, out_channels: usize, kernel: usize) -> Self {
        Self {
            in_channels,
            out_channels,
            kernel,
            stride: 1,
            dilation: 1,
            groups: 1,
            pad_left: 0,
            pad_right: 0,
            output_layout: Layout::ChannelFirst,
        }
    }

    window_builders!();

    field_setters! {
        /// With `groups`.
        groups: usize;
        /// With the output in `output_layout`.
        output_layout: Layout;
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero channel count, kernel, stride, dilation or group
    /// count, groups not dividing both channel counts, or sizes that overflow `usize`.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        let geometry = |reason| Err(ShapeError::Geometry { op: CONV1D, reason });
        if self.in_channels == 0 || self.out_channels == 0 {
            return geometry("channel counts must be >= 1");
        }
        if self.groups == 0 {
            return geometry("groups must be >= 1");
        }
        if !self.in_channels.is_multiple_of(self.groups) {
            return geometry("groups must divide in_channels");
        }
        if !self.out_channels.is_multiple_of(self.groups) {
            return geometry("groups must divide out_channels");
        }
        self.window().validate(CONV1D)?;
        if self.weight_len().is_none() || self.packed_len().is_none() {
            return geometry("weight size overflows usize");
        }
        Ok(())
    }

    /// Input channels per group (`in_channels / groups`).
    pub fn group_in_channels(&self) -> usize {
        self.in_channels / self.groups.max(1)
    }

    /// Output channels per group (`out_channels / groups`).
    pub fn group_out_channels(&self) -> usize {
        self.out_channels / self.groups.max(1)
    }

    /// GEMM reduction length per group: `in_channels / groups * kernel`.
    fn reduction(&self) -> usize {
        self.group_in_channels().saturating_mul(self.kernel)
    }

    /// Elements of the PyTorch-layout weight `[out_channels, in_channels / groups, kernel]`.
    pub fn weight_len(&self) -> Option<usize> {
        self.out_channels.checked_mul(self.group_in_channels())?.checked_mul(self.kernel)
    }

    /// Elements of one group's packed weights.
    fn packed_group_len(&self) -> Option<usize> {
        let (m, k) = (self.group_out_channels(), self.group_in_channels());
        let k = k.checked_mul(self.kernel)?;
        // The packed lengths round m up to a panel: check that product before computing it.
        m.checked_add(16)?.checked_mul(k)?;
        Some(match self.output_layout {
            Layout::ChannelFirst => packed_a_len(m, k),
            Layout::FrameMajor => packed_b_len(m, k),
        })
    }

    /// Elements of the packed weights for all groups (what [`Conv1d::from_packed`] takes;
    /// it depends on `writes_layout`).
    pub fn packed_len(&self) -> Option<usize> {
        self.packed_group_len()?.checked_mul(self.groups)
    }

    /// Output frames for `frames` input frames, `None` when the input is too short (or the
    /// geometry invalid).
    pub fn output_frames(&self, frames: usize) -> Option<usize> {
        self.validate::<usize>().ok()?;
        self.window().output_frames_usize(frames)
    }

    /// `true` when the input itself is the GEMM operand (no im2col, no scratch): kernel 1,
    /// stride 1, no padding and channel-first output.
    pub fn is_pointwise_fast_path(&self) -> bool {
        self.kernel == 1
            && self.stride == 1
            && self.pad_left == 0
            && self.pad_right == 0
            && self.output_layout == Layout::ChannelFirst
    }

    /// Scratch elements [`Conv1d::run`] needs for `frames` input frames: one im2col tile,
    /// `in_channels / groups * kernel * min(out_frames, IM2COL_TILE_FRAMES)` (0 on the
    /// pointwise fast path). Returns 0 when the input would be too short (`run` then fails
    /// before using scratch).
    pub fn scratch_len(&self, frames: usize) -> usize {
        if self.is_pointwise_fast_path() {
            return 0;
        }
        self.output_frames(frames)
            .map_or(0, |n| n.min(IM2COL_TILE_FRAMES).saturating_mul(self.reduction()))
    }

    /// Packs PyTorch-layout weights `[out_channels, in_channels / groups, kernel]` into the
    /// layout [`Conv1d::from_packed`] takes (per group: [`pack_a`] for channel-first output,
    /// [`pack_b`] for frame-major output). Use it to pack into a static or stack buffer
    /// without `alloc`, or offline.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry; [`Error::Length`] when `weight` or `out`
    /// does not have [`Conv1dGeometry::weight_len`] / [`Conv1dGeometry::packed_len`]
    /// elements.
    pub fn pack_weights(&self, weight: &[f32], out: &mut [f32]) -> Result<(), Error> {
        self.validate::<usize>()?;
        let (wlen, plen) = (self.weight_len().unwrap_or(0), self.packed_len().unwrap_or(0));
        check_len("weight", wlen, weight.len())?;
        check_len("packed weight", plen, out.len())?;
        let (m, k) = (self.group_out_channels(), self.reduction());
        let group_len = plen / self.groups;
        for (w, p) in weight.chunks_exact(m * k).zip(out.chunks_exact_mut(group_len)) {
            match self.output_layout {
                Layout::ChannelFirst => pack_a(w, m, k, p),
                Layout::FrameMajor => pack_b(w, m, k, p),
            }
        }
        Ok(())
    }
}

impl ShapeRule for Conv1dGeometry {
    fn name(&self) -> &'static str {
        CONV1D
    }

    /// `[in_channels, frames]` -> `[out_channels, out_frames]` (channel-first output) or
    /// `[out_frames, out_channels]` (frame-major output).
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an invalid geometry, [`ShapeError::Rank`] unless one
    /// rank-2 input, [`ShapeError::Dim`] for the wrong channel count,
    /// [`ShapeError::TooSmall`] when the input can be shorter than one window.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = first_input(CONV1D, self.validate(), inputs, "conv1d takes one input", 2)?;
        expect_dim(CONV1D, 0, x, 0, "input channels", &D::constant(self.in_channels))?;
        let frames = self.window().output_frames(CONV1D, &x.dims()[1])?;
        let channels = D::constant(self.out_channels);
        match self.output_layout {
            Layout::ChannelFirst => shape2(CONV1D, channels, frames),
            Layout::FrameMajor => shape2(CONV1D, frames, channels),
        }
    }
    fn reads_layout(&self, _arg: usize) -> Option<Layout> {
        Some(Layout::ChannelFirst)
    }
    fn writes_layout(&self) -> Option<Layout> {
        Some(self.output_layout)
    }
}

packed_conv!(Conv1d, "conv1d", Conv1dGeometry, "[out_channels, in_channels / groups, kernel]");

impl<S: AsRef<[f32]>> Conv1d<S> {
    /// Scratch elements [`Conv1d::run`] needs for `frames` input frames
    /// ([`Conv1dGeometry::scratch_len`]).
    pub fn scratch_len(&self, frames: usize) -> usize {
        self.geometry.scratch_len(frames)
    }

    with_run_options! {
        self;
        /// Runs the conv: `input` channel-first `[in_channels, frames]`, `output` `[out_channels,
        /// out_frames]` or `[out_frames, out_channels]` per the geometry's `writes_layout` (it is
        /// overwritten), `scratch` at least [`Conv1d::scratch_len`] elements (contents ignored).
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a frame-major input or an output in the
        /// other layout, [`Error::Shape`] from the shape rule (rank, channels, too-short input)
        /// or for an output of the wrong shape (argument 1), [`Error::Length`] for short scratch.
        run(input: &TensorView<'_>, output: &mut TensorViewMut<'_>, scratch: &mut [f32]);
        /// [`Conv1d::run`] with `options`: each im2col copy (blocks of channels or frames) and
        /// each GEMM (per group, per im2col tile: blocks of output rows) runs on
        /// `options.parallel()`; the scratch is the same for any context, and so are the bits.
        ///
        /// # Errors
        /// As [`Conv1d::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let par = options.parallel();
            let g = &self.geometry;
            check_input_layout(CONV1D, input, Layout::ChannelFirst)?;
            let out_shape = g.output_shape(&[*input.shape()])?;
            let what = match g.output_layout {
                Layout::ChannelFirst => ["output channels", "output frames"],
                Layout::FrameMajor => ["output frames", "output channels"],
            };
            check_output(CONV1D, 1, output, &out_shape, g.output_layout, what)?;
            let frames = input.dims()[1];
            check_scratch(g.scratch_len(frames), scratch.len())?;
            let out_frames = match g.output_layout {
                Layout::ChannelFirst => out_shape.dims()[1],
                Layout::FrameMajor => out_shape.dims()[0],
            };

            let (cin, cout, k) = (g.group_in_channels(), g.group_out_channels(), g.reduction());
            let tile = out_frames.min(IM2COL_TILE_FRAMES);
            let group_len = self.packed.as_ref().len() / g.groups;
            let x = input.data();
            let y = output.data_mut();
            let window = g.window().rows(cin, frames);
            for grp in 0..g.groups {
                let xg = &x[grp * cin * frames..][..cin * frames];
                let wg = &self.packed.as_ref()[grp * group_len..][..group_len];
                let bias = self.bias().map(|b| &b[grp * cout..][..cout]);
                if g.is_pointwise_fast_path() {
                    // The input rows are the GEMM's B operand `[cin, frames]` (ldb = frames).
                    let yg = &mut y[grp * cout * out_frames..][..cout * out_frames];
                    let ga = GemmA::contiguous(cout, out_frames, k, frames, out_frames);
                    B::gemm_packed_a_in(par, ga, wg, xg, bias, yg)?;
                    continue;
                }
                for n0 in (0..out_frames).step_by(tile) {
                    let nt = tile.min(out_frames - n0);
                    let col = &mut scratch[..k * nt];
                    B::im2col_in(par, g.output_layout, (xg, window), n0, nt, col)?;
                    match g.output_layout {
                        Layout::ChannelFirst => {
                            // Columns n0..n0 + nt of the group's rows: C[i, j] at
                            // y[(grp * cout + i) * out_frames + n0 + j].
                            let yg = &mut y[grp * cout * out_frames + n0..];
                            let ga = GemmA::contiguous(cout, nt, k, nt, out_frames);
                            B::gemm_packed_a_in(par, ga, wg, col, bias, yg)?;
                        }
                        Layout::FrameMajor => {
                            // Rows n0..n0 + nt, the group's column block: C[i, j] at
                            // y[(n0 + i) * out_channels + grp * cout + j].
                            let yg = &mut y[n0 * g.out_channels + grp * cout..];
                            let gb = GemmB { m: nt, n: cout, k, lda: k, ldc: g.out_channels };
                            B::gemm_packed_b_in(par, gb, col, wg, bias, yg)?;
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

/// Geometry of a [`DepthwiseConv1d`]: sizes without weights. Implements [`ShapeRule`].
///
/// Input and output are channel-first: `[channels, frames]` -> `[channels, out_frames]`.
/// Weight: `[channels, 1, kernel]` (PyTorch's `Conv1d` with `groups = channels`); bias:
/// `[channels]`. The window and output length are those of the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepthwiseConv1dGeometry {
    /// Channels (`>= 1`), in and out.
    pub channels: usize,
    /// Taps per filter (`>= 1`).
    pub kernel: usize,
    /// Step between output frames, in input frames (`>= 1`).
    pub stride: usize,
    /// Step between taps, in input frames (`>= 1`).
    pub dilation: usize,
    /// Zero frames before the input.
    pub pad_left: usize,
    /// Zero frames after the input.
    pub pad_right: usize,
}

impl DepthwiseConv1dGeometry {
    /// `channels` filters of `kernel` taps: stride 1, dilation 1, no padding.
    pub const fn new(channels: usize, kernel: usize) -> Self {
        Self { channels, kernel, stride: 1, dilation: 1, pad_left: 0, pad_right: 0 }
    }

    window_builders!();

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for zero channels, kernel, stride or dilation, or sizes
    /// that overflow `usize`.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        if self.channels == 0 {
            return Err(ShapeError::Geometry { op: DEPTHWISE, reason: "channels must be >= 1" });
        }
        self.window().validate(DEPTHWISE)?;
        if self.weight_len().is_none() {
            return Err(ShapeError::Geometry {
                op: DEPTHWISE,
                reason: "weight size overflows usize",
            });
        }
        Ok(())
    }

    /// Elements of the weight `[channels, 1, kernel]`.
    pub fn weight_len(&self) -> Option<usize> {
        self.channels.checked_mul(self.kernel)
    }

    /// Output frames for `frames` input frames, `None` when the input is too short (or the
    /// geometry invalid).
    pub fn output_frames(&self, frames: usize) -> Option<usize> {
        self.validate::<usize>().ok()?;
        self.window().output_frames_usize(frames)
    }
}

impl ShapeRule for DepthwiseConv1dGeometry {
    fn name(&self) -> &'static str {
        DEPTHWISE
    }

    /// `[channels, frames]` -> `[channels, out_frames]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an invalid geometry, [`ShapeError::Rank`] unless one
    /// rank-2 input, [`ShapeError::Dim`] for the wrong channel count,
    /// [`ShapeError::TooSmall`] when the input can be shorter than one window.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let missing = "depthwise_conv1d takes one input";
        let x = first_input(DEPTHWISE, self.validate(), inputs, missing, 2)?;
        expect_dim(DEPTHWISE, 0, x, 0, "input channels", &D::constant(self.channels))?;
        let frames = self.window().output_frames(DEPTHWISE, &x.dims()[1])?;
        shape2(DEPTHWISE, D::constant(self.channels), frames)
    }
    layout_facts!(Layout::ChannelFirst);
}

/// A prepared depthwise conv1d (`groups == channels`, one filter per channel), computed by
/// the direct [`ConvKernels::depthwise_conv1d`] kernel, no GEMM and no scratch. Used for
/// ConvNeXt's k=7 depthwise conv.
///
/// The PyTorch weight layout `[channels, 1, kernel]` is already the kernel's layout, so
/// every constructor stores the weights as given.
///
/// [`ConvKernels::depthwise_conv1d`]: crate::kernels::ConvKernels::depthwise_conv1d
#[derive(Clone, Debug)]
pub struct DepthwiseConv1d<S> {
    geometry: DepthwiseConv1dGeometry,
    weight: S,
    bias: Option<S>,
}

#[cfg(feature = "alloc")]
impl DepthwiseConv1d<Vec<f32>> {
    /// Takes `weight` (`[channels, 1, kernel]`) and `bias` (`[channels]`) by value.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] for a weight or bias of
    /// the wrong length.
    pub fn new(
        geometry: DepthwiseConv1dGeometry,
        weight: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Result<Self, Error> {
        Self::from_packed(geometry, weight, bias)
    }

    /// As [`DepthwiseConv1d::new`], copying the borrowed slices.
    ///
    /// # Errors
    /// As [`DepthwiseConv1d::new`].
    pub fn from_slice(
        geometry: DepthwiseConv1dGeometry,
        weight: &[f32],
        bias: Option<&[f32]>,
    ) -> Result<Self, Error> {
        Self::from_packed(geometry, weight.to_vec(), bias.map(<[f32]>::to_vec))
    }
}

impl<S: AsRef<[f32]>> DepthwiseConv1d<S> {
    /// Wraps `weight` (`[channels, 1, kernel]`, the kernel's layout) and `bias`
    /// (`[channels]`) without copying, e.g. `&'static` data.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] for a weight or bias of
    /// the wrong length.
    pub fn from_packed(
        geometry: DepthwiseConv1dGeometry,
        weight: S,
        bias: Option<S>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        check_len("weight", geometry.weight_len().unwrap_or(0), weight.as_ref().len())?;
        check_bias_len(bias.as_ref(), geometry.channels)?;
        Ok(Self { geometry, weight, bias })
    }

    weight_accessors!(
        DepthwiseConv1dGeometry,
        weight: [f32], "The weights, `[channels, 1, kernel]` (the kernel's layout: stored as given).",
        bias, "The bias, `[channels]`."
    );

    with_run_options! {
        self;
        /// Runs the conv: `input` channel-first `[channels, frames]`, `output` channel-first
        /// `[channels, out_frames]` (overwritten).
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a frame-major input or output,
        /// [`Error::Shape`] from the shape rule (rank, channels, too-short input) or for an
        /// output of the wrong shape (argument 1).
        run(input: &TensorView<'_>, output: &mut TensorViewMut<'_>);
        /// [`DepthwiseConv1d::run`] with `options`: blocks of channels run on
        /// `options.parallel()` (the same bits for any context).
        ///
        /// # Errors
        /// As [`DepthwiseConv1d::run`], and the context's error ([`Error::Team`]) after the
        /// checks.
        run_with(options) => {
            let g = &self.geometry;
            check_input_layout(DEPTHWISE, input, Layout::ChannelFirst)?;
            let out_shape = g.output_shape(&[*input.shape()])?;
            let what = ["output channels", "output frames"];
            check_output(DEPTHWISE, 1, output, &out_shape, Layout::ChannelFirst, what)?;
            let (frames, out_frames) = (input.dims()[1], out_shape.dims()[1]);
            let window = g.window().rows(g.channels, frames);
            let (x, w, y) = (input.data(), self.weight.as_ref(), output.data_mut());
            let par = options.parallel();
            B::depthwise_conv1d_in(par, (x, window), (w, self.bias()), out_frames, y)
        }
    }
}
