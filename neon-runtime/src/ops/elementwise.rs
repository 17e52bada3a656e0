//! Elementwise operators: [`Add`] and [`Mul`] of equal shapes (residuals, gating), scalar
//! [`Scale`] and [`ScaleShift`], and per-channel broadcasts with weights: [`BiasAdd`],
//! [`ChannelScaleShift`] (a folded BatchNorm) and [`LayerScale`] (also fused with a residual
//! add, as in ConvNeXt's `x + gamma * f(x)`).
//!
//! None of these change the shape. Operators without weights are their own geometry (they
//! implement [`ShapeRule`] directly). Every `run*` method validates shapes and layouts first
//! and returns an [`Error`] without touching the output when something does not match.
//!
//! Layouts: inputs and outputs of one call must carry the same [`Layout`] tag; the
//! per-channel operators additionally require the layout they were built for (the channel
//! axis is axis 0 channel-first, the last axis frame-major).

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::{
    expect_arity, expect_dim, expect_layout, expect_rank, expect_shape, RunOptions, ShapeRule,
    SAME_LAYOUT,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// Validates a binary, shape-preserving call `(a, b) -> out`; `out` is argument 2.
fn check_binary<R: ShapeRule>(
    rule: &R,
    a: &TensorView<'_>,
    b: &TensorView<'_>,
    out: Option<&TensorViewMut<'_>>,
) -> Result<(), Error> {
    let shape = rule.output_shape(&[*a.shape(), *b.shape()])?;
    expect_layout(rule.name(), b.layout(), a.layout(), SAME_LAYOUT)?;
    if let Some(out) = out {
        expect_shape(rule.name(), 2, out.shape(), &shape)?;
        expect_layout(rule.name(), out.layout(), a.layout(), SAME_LAYOUT)?;
    }
    Ok(())
}

/// The shape rule of equal-shape binary operators: both inputs have the same shape, which is
/// the output shape.
fn equal_shapes<D: Dim>(op: &'static str, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
    expect_arity(op, inputs, 2)?;
    expect_shape(op, 1, &inputs[1], &inputs[0])?;
    Ok(inputs[0].clone())
}

/// Elementwise sum of two tensors of the same shape and layout (residual connection).
///
/// Inputs `a`, `b` and the output: any shape (rank 1..=4), all equal. No broadcasting (use
/// [`BiasAdd`] for a per-channel vector).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Add;

/// Elementwise product of two tensors of the same shape and layout (gating).
///
/// Inputs `a`, `b` and the output: any shape (rank 1..=4), all equal. No broadcasting (use
/// [`LayerScale`] for a per-channel vector).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mul;

/// The shape rule and the `run` / `run_in_place` methods of an equal-shape binary operator
/// (`$op` is `+` or `*`; `$kernel_in` / `$assign_in` the backend's out-of-place and
/// in-place kernels on an execution context).
macro_rules! equal_shape_binary {
    ($ty:ident, $name:literal, $op:literal, $kernel_in:ident, $assign_in:ident) => {
        impl ShapeRule for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn arity(&self) -> usize {
                2
            }
            fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
                equal_shapes(self.name(), inputs)
            }
            layout_facts!(any, in_place);
        }

        impl $ty {
            with_run_options! {
                self;
                #[doc = concat!("`out = a ", $op, " b`.")]
                ///
                /// # Errors
                /// [`Error::Shape`] when the shapes of `a`, `b` and `out` differ (argument 0, 1,
                /// 2); [`Error::Layout`] when their layouts differ.
                run(a: &TensorView<'_>, b: &TensorView<'_>, out: &mut TensorViewMut<'_>);
                #[doc = concat!("[`", stringify!($ty), "::run`] with `options`: blocks of")]
                /// elements on `options.parallel()` (each element alone: the same bits for any
                /// context).
                ///
                /// # Errors
                #[doc = concat!("As [`", stringify!($ty), "::run`], and the context's error")]
                /// ([`Error::Team`]) after the checks.
                run_with(options) => {
                    check_binary(self, a, b, Some(out))?;
                    B::$kernel_in(options.parallel(), a.data(), b.data(), out.data_mut())
                }
            }

            with_run_options! {
                self;
                #[doc = concat!("`acc ", $op, "= b` in place (`acc` is argument 0).")]
                ///
                /// # Errors
                /// [`Error::Shape`] when the shapes differ; [`Error::Layout`] when the layouts
                /// differ.
                run_in_place(acc: &mut TensorViewMut<'_>, b: &TensorView<'_>);
                #[doc = concat!("[`", stringify!($ty), "::run_in_place`] with `options`, split as")]
                #[doc = concat!("[`", stringify!($ty), "::run_with`].")]
                ///
                /// # Errors
                #[doc = concat!("As [`", stringify!($ty), "::run_in_place`], and the context's")]
                /// error ([`Error::Team`]) after the checks.
                run_in_place_with(options) => {
                    check_binary(self, &acc.as_view(), b, None)?;
                    B::$assign_in(options.parallel(), acc.data_mut(), b.data())
                }
            }
        }
    };
}

equal_shape_binary!(Add, "add", "+", add_in, add_assign_in);
equal_shape_binary!(Mul, "mul", "*", mul_in, mul_assign_in);

/// Multiplication by a scalar: `y = x * scale` (any shape, shape preserved).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// The factor; must be finite.
    pub scale: f32,
}

/// Scale and shift by scalars: `y = x * scale + shift` (any shape, shape preserved; the NEON
/// backend fuses the multiply-add).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleShift {
    /// The factor; must be finite.
    pub scale: f32,
    /// The offset; must be finite.
    pub shift: f32,
}

impl ShapeRule for Scale {
    fn name(&self) -> &'static str {
        "scale"
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        expect_arity(self.name(), inputs, 1)?;
        if !self.scale.is_finite() {
            return Err(ShapeError::Geometry { op: self.name(), reason: "scale must be finite" });
        }
        Ok(inputs[0].clone())
    }
    layout_facts!(any, in_place);
}

impl ShapeRule for ScaleShift {
    fn name(&self) -> &'static str {
        "scale_shift"
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        expect_arity(self.name(), inputs, 1)?;
        if !self.scale.is_finite() || !self.shift.is_finite() {
            let reason = "scale and shift must be finite";
            return Err(ShapeError::Geometry { op: self.name(), reason });
        }
        Ok(inputs[0].clone())
    }
    layout_facts!(any, in_place);
}

impl Scale {
    unary_runs! {
        self;
        /// `output = input * scale`.
        ///
        /// # Errors
        /// [`Error::Shape`] for a non-finite scale (geometry) or an output shape that differs
        /// from the input's; [`Error::Layout`] when the layouts differ.
        run(input, output) => B::scale_to(input.data(), output.data_mut(), self.scale);
        /// `x *= scale` in place.
        ///
        /// # Errors
        /// [`Error::Shape`] for a non-finite scale.
        run_in_place(x) => B::scale(x.data_mut(), self.scale);
    }
}

impl ScaleShift {
    unary_runs! {
        self;
        /// `output = input * scale + shift`.
        ///
        /// # Errors
        /// [`Error::Shape`] for a non-finite scale or shift (geometry) or an output shape that
        /// differs from the input's; [`Error::Layout`] when the layouts differ.
        run(input, output) =>
            B::scale_shift_to(input.data(), output.data_mut(), self.scale, self.shift);
        /// `x = x * scale + shift` in place.
        ///
        /// # Errors
        /// [`Error::Shape`] for a non-finite scale or shift.
        run_in_place(x) => B::scale_shift(x.data_mut(), self.scale, self.shift);
    }
}

/// What a per-channel operator does with its vector `v` (`channels` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerChannelOp {
    /// `y = x + v[c]` ([`BiasAdd`]); one input.
    AddBias,
    /// `y = x * v[c]` ([`LayerScale`]); one input.
    Scale,
    /// `acc = acc + v[c] * x` ([`LayerScale::run_residual`]); two inputs `(acc, x)`.
    AddScaled,
    /// `y = x * v[c] + w[c]` ([`ChannelScaleShift`], two vectors); one input.
    ScaleShift,
}

/// Geometry of a per-channel broadcast: the number of channels, the layout that says which
/// axis holds them, and the operation.
///
/// Shape rule: every input has rank 1..=4, its channel axis (axis 0 for
/// [`Layout::ChannelFirst`]: `[channels, frames]`, `[channels, height, width]`; the last
/// axis for [`Layout::FrameMajor`]: `[frames, channels]`) has `channels` elements, the
/// second input of [`PerChannelOp::AddScaled`] has the shape of the first; the output has
/// the shape of the first input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerChannel {
    /// Number of channels (length of the per-channel vector), >= 1.
    pub channels: usize,
    /// Where the channel axis is.
    pub layout: Layout,
    /// The operation.
    pub op: PerChannelOp,
}

impl PerChannel {
    /// The geometry of a [`BiasAdd`] over `channels` in `layout`.
    pub const fn bias_add(channels: usize, layout: Layout) -> Self {
        PerChannel { channels, layout, op: PerChannelOp::AddBias }
    }

    /// The geometry of a [`LayerScale`] over `channels` in `layout`.
    pub const fn layer_scale(channels: usize, layout: Layout) -> Self {
        PerChannel { channels, layout, op: PerChannelOp::Scale }
    }

    /// The geometry of a [`ChannelScaleShift`] over `channels` in `layout`.
    pub const fn scale_shift(channels: usize, layout: Layout) -> Self {
        PerChannel { channels, layout, op: PerChannelOp::ScaleShift }
    }

    /// The channel axis of a tensor of rank `rank` in this geometry's layout.
    pub fn channel_axis(&self, rank: usize) -> usize {
        match self.layout {
            Layout::ChannelFirst => 0,
            Layout::FrameMajor => rank - 1,
        }
    }

    /// `(outer, inner)` sizes of a tensor: the kernel geometry. Channel first:
    /// `(channels, product of the other axes)`; frame major: `(product of the other axes,
    /// channels)`.
    fn split(&self, shape: &Shape) -> (usize, usize) {
        let n = shape.dims().iter().product::<usize>();
        match self.layout {
            Layout::ChannelFirst => (self.channels, n / self.channels),
            Layout::FrameMajor => (n / self.channels, self.channels),
        }
    }

    fn layout_text(&self) -> &'static str {
        match self.layout {
            Layout::ChannelFirst => "channel-first tensor (the layout the operator was built for)",
            Layout::FrameMajor => "frame-major tensor (the layout the operator was built for)",
        }
    }
}

impl ShapeRule for PerChannel {
    fn name(&self) -> &'static str {
        match self.op {
            PerChannelOp::AddBias => "bias_add",
            PerChannelOp::Scale => "layer_scale",
            PerChannelOp::AddScaled => "layer_scale_residual",
            PerChannelOp::ScaleShift => "scale_shift",
        }
    }
    fn arity(&self) -> usize {
        match self.op {
            PerChannelOp::AddScaled => 2,
            _ => 1,
        }
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        expect_arity(op, inputs, self.arity())?;
        if self.channels == 0 {
            return Err(ShapeError::Geometry { op, reason: "channels must be >= 1" });
        }
        let x = &inputs[0];
        expect_rank(op, 0, x, &[1, 2, 3, 4], "1 to 4")?;
        let axis = self.channel_axis(x.rank());
        expect_dim(op, 0, x, axis, "channels", &D::constant(self.channels))?;
        if self.op == PerChannelOp::AddScaled {
            expect_shape(op, 1, &inputs[1], x)?;
        }
        Ok(x.clone())
    }
    layout_facts!(self.layout, in_place);
}

/// Validates a per-channel call on `x` (argument 0), with an optional second input `b`
/// (argument 1) and an optional separate output (argument `1 + b.is_some()`).
fn check_per_channel(
    geo: &PerChannel,
    x: &TensorView<'_>,
    b: Option<&TensorView<'_>>,
    out: Option<&TensorViewMut<'_>>,
) -> Result<(), Error> {
    let shape = match b {
        Some(b) => geo.output_shape(&[*x.shape(), *b.shape()])?,
        None => geo.output_shape(&[*x.shape()])?,
    };
    expect_layout(geo.name(), x.layout(), geo.layout, geo.layout_text())?;
    if let Some(b) = b {
        expect_layout(geo.name(), b.layout(), geo.layout, geo.layout_text())?;
    }
    if let Some(out) = out {
        expect_shape(geo.name(), 1 + b.is_some() as usize, out.shape(), &shape)?;
        expect_layout(geo.name(), out.layout(), geo.layout, geo.layout_text())?;
    }
    Ok(())
}

/// Per-channel bias add: `y[.., c, ..] = x[.., c, ..] + bias[c]`, channel axis given by the
/// layout (see [`PerChannel`]).
///
/// Storage `S` holds the `channels` bias values (`Vec<f32>`, `&'static [f32]`, ...); they are
/// used as given (no packing).
#[derive(Clone, Debug)]
pub struct BiasAdd<S> {
    bias: S,
    layout: Layout,
}

/// Per-channel scale and shift, a BatchNorm folded for inference:
/// `y[.., c, ..] = x[.., c, ..] * scale[c] + shift[c]`, channel axis given by the layout
/// (see [`PerChannel`]); fused multiply-add on NEON.
///
/// Folding (PyTorch `BatchNorm1d` / `BatchNorm2d` in eval mode, `y = (x - mean) /
/// sqrt(var + eps) * weight + bias`): `scale = weight / sqrt(running_var + eps)`,
/// `shift = bias - running_mean * scale`. Storage `S` holds the two vectors of `channels`
/// values each ([`packed_weight`](Self::packed_weight) is `scale`, [`bias`](Self::bias) is
/// `shift`). For one scalar pair over the whole tensor use [`ScaleShift`].
#[derive(Clone, Debug)]
pub struct ChannelScaleShift<S> {
    scale: S,
    shift: S,
    layout: Layout,
}

/// Per-channel multiply (layer scale, as in ConvNeXt / CaiT): `y[.., c, ..] = x[.., c, ..] *
/// gamma[c]`, channel axis given by the layout (see [`PerChannel`]); also fused with a
/// residual add ([`LayerScale::run_residual`]).
#[derive(Clone, Debug)]
pub struct LayerScale<S> {
    gamma: S,
    layout: Layout,
}

/// Checks a per-channel operator's geometry (`op` is the operator's own, `channels >= 1`)
/// against its vector of `len` values.
fn check_vector(geometry: &PerChannel, op: PerChannelOp, len: usize) -> Result<(), Error> {
    if geometry.op != op {
        let reason = "the geometry's op is not this operator's";
        return Err(ShapeError::Geometry { op: geometry.name(), reason }.into());
    }
    if geometry.channels == 0 {
        let reason = "channels must be >= 1";
        return Err(ShapeError::Geometry { op: geometry.name(), reason }.into());
    }
    if len != geometry.channels {
        return Err(Error::Length {
            what: "per-channel vector",
            expected: geometry.channels,
            got: len,
        });
    }
    Ok(())
}

/// Constructors, accessors, `geometry`, `run` and `run_in_place` of a per-channel operator
/// (`[$first, $rest..]`: its vectors, each of `channels` values, in constructor order and in
/// the order the kernels take them; `$op`: its [`PerChannelOp`]; `$cf` / `$fm`: the
/// backend's kernels for the channel-first and frame-major layouts; the doc texts given).
macro_rules! per_channel_operator {
    (
        $ty:ident, [$first:ident $(, $rest:ident)*], $op:ident, $what:literal,
        geometry: $geometry_doc:literal,
        run: $run_doc:literal,
        in_place: $in_place_doc:literal,
        kernels: $cf:ident, $fm:ident
    ) => {
        #[cfg(feature = "alloc")]
        impl $ty<Vec<f32>> {
            #[doc = concat!("Takes the ", $what, " (`geometry.channels` values each) by value.")]
            ///
            /// # Errors
            /// As [`Self::from_packed`].
            pub fn new(
                geometry: PerChannel,
                $first: Vec<f32>,
                $($rest: Vec<f32>,)*
            ) -> Result<Self, Error> {
                Self::from_packed(geometry, $first, $($rest,)*)
            }

            #[doc = concat!("Copies the ", $what, " (`geometry.channels` values each).")]
            ///
            /// # Errors
            /// As [`Self::from_packed`].
            pub fn from_slice(
                geometry: PerChannel,
                $first: &[f32],
                $($rest: &[f32],)*
            ) -> Result<Self, Error> {
                check_vector(&geometry, PerChannelOp::$op, $first.len())?;
                $(check_vector(&geometry, PerChannelOp::$op, $rest.len())?;)*
                Self::from_packed(geometry, $first.to_vec(), $($rest.to_vec(),)*)
            }
        }

        impl<S: AsRef<[f32]>> $ty<S> {
            #[doc = concat!("Uses the ", $what, " (`geometry.channels` values each) as stored: ")]
            /// the kernel layout of a per-channel vector is the plain vector, so this is the
            /// zero-copy constructor for `&'static` or shared storage.
            ///
            /// # Errors
            #[doc = concat!("[`Error::Shape`] when `geometry.op` is not [`PerChannelOp::", stringify!($op), "`]")]
            /// or `channels` is 0; [`Error::Length`] when a vector does not hold `channels`
            /// values.
            pub fn from_packed(geometry: PerChannel, $first: S, $($rest: S,)*) -> Result<Self, Error> {
                check_vector(&geometry, PerChannelOp::$op, $first.as_ref().len())?;
                $(check_vector(&geometry, PerChannelOp::$op, $rest.as_ref().len())?;)*
                Ok(Self { $first, $($rest,)* layout: geometry.layout })
            }

            #[doc = concat!("The `", stringify!($first), "` vector (`channels` values, as stored).")]
            pub fn packed_weight(&self) -> &[f32] {
                self.$first.as_ref()
            }

            #[doc = $geometry_doc]
            pub fn geometry(&self) -> PerChannel {
                PerChannel {
                    channels: self.$first.as_ref().len(),
                    layout: self.layout,
                    op: PerChannelOp::$op,
                }
            }

            #[doc = $run_doc]
            ///
            /// # Errors
            /// [`Error::Shape`] when the input's channel axis does not have `channels` elements or
            /// the output shape differs; [`Error::Layout`] when a tensor is not in the operator's
            /// layout.
            pub fn run<B: Backend>(
                &self,
                input: &TensorView<'_>,
                output: &mut TensorViewMut<'_>,
            ) -> Result<(), Error> {
                let geo = self.geometry();
                check_per_channel(&geo, input, None, Some(output))?;
                output.data_mut().copy_from_slice(input.data());
                self.apply::<B>(&geo, output);
                Ok(())
            }

            #[doc = $in_place_doc]
            ///
            /// # Errors
            #[doc = concat!("As [`", stringify!($ty), "::run`].")]
            pub fn run_in_place<B: Backend>(&self, x: &mut TensorViewMut<'_>) -> Result<(), Error> {
                let geo = self.geometry();
                check_per_channel(&geo, &x.as_view(), None, None)?;
                self.apply::<B>(&geo, x);
                Ok(())
            }

            /// The kernel of the layout; one vector is passed as a slice, several as a tuple.
            fn apply<B: Backend>(&self, geo: &PerChannel, x: &mut TensorViewMut<'_>) {
                let (outer, inner) = geo.split(x.shape());
                let v = (self.$first.as_ref() $(, self.$rest.as_ref())*);
                match geo.layout {
                    Layout::ChannelFirst => B::$cf(x.data_mut(), v, outer, inner),
                    Layout::FrameMajor => B::$fm(x.data_mut(), v, outer, inner),
                }
            }
        }
    };
}

per_channel_operator!(
    BiasAdd, [bias], AddBias, "bias vector",
    geometry: "The geometry (channels, layout, [`PerChannelOp::AddBias`]).",
    run: "`output = input + bias[c]`.",
    in_place: "`x += bias[c]` in place.",
    kernels: add_bias_channel_first, add_bias_frame_major
);
per_channel_operator!(
    LayerScale, [gamma], Scale, "layer scale vector",
    geometry: "The geometry of [`LayerScale::run`] (channels, layout, [`PerChannelOp::Scale`]).",
    run: "`output = input * gamma[c]`.",
    in_place: "`x *= gamma[c]` in place.",
    kernels: scale_channels_channel_first, scale_channels_frame_major
);
per_channel_operator!(
    ChannelScaleShift, [scale, shift], ScaleShift, "scale and shift vectors",
    geometry: "The geometry (channels, layout, [`PerChannelOp::ScaleShift`]).",
    run: "`output = input * scale[c] + shift[c]`.",
    in_place: "`x = x * scale[c] + shift[c]` in place.",
    kernels: scale_shift_channels_channel_first, scale_shift_channels_frame_major
);

impl<S: AsRef<[f32]>> ChannelScaleShift<S> {
    /// The `shift` vector (`channels` values, as stored): the operator's bias.
    pub fn bias(&self) -> &[f32] {
        self.shift.as_ref()
    }
}

impl<S: AsRef<[f32]>> LayerScale<S> {
    /// The geometry of [`LayerScale::run_residual`] ([`PerChannelOp::AddScaled`]).
    pub fn residual_geometry(&self) -> PerChannel {
        PerChannel { op: PerChannelOp::AddScaled, ..self.geometry() }
    }

    /// Residual with layer scale, in place: `acc += gamma[c] * x` (argument 0 `acc`, e.g. the
    /// skip branch; argument 1 `x`, the block output). Fused multiply-add on NEON.
    ///
    /// # Errors
    /// [`Error::Shape`] when `acc`'s channel axis does not have `channels` elements or `x`
    /// has another shape; [`Error::Layout`] when a tensor is not in the operator's layout.
    pub fn run_residual<B: Backend>(
        &self,
        acc: &mut TensorViewMut<'_>,
        x: &TensorView<'_>,
    ) -> Result<(), Error> {
        let geo = self.residual_geometry();
        check_per_channel(&geo, &acc.as_view(), Some(x), None)?;
        let (outer, inner) = geo.split(acc.shape());
        let g = self.gamma.as_ref();
        match geo.layout {
            Layout::ChannelFirst => {
                B::add_scaled_channels_channel_first(acc.data_mut(), x.data(), g, outer, inner)
            }
            Layout::FrameMajor => {
                B::add_scaled_channels_frame_major(acc.data_mut(), x.data(), g, outer, inner)
            }
        }
        Ok(())
    }
}
