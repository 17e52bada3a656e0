//! Normalisation operators: [`LayerNorm`], [`RmsNorm`], [`GroupNorm`].
//!
//! Each has a `Copy` geometry implementing [`ShapeRule`] (the output has the input's shape)
//! and holds its per-channel parameters as given, `S: AsRef<[f32]>`: the scale `gamma`
//! (`channels` values, the operator's weight) and, when the geometry has a bias, `beta`
//! (`channels` values). That is what the kernels read, so `from_packed` accepts static
//! data as is. Formulas, sources and accuracy: [`crate::kernels::norm`].
//!
//! Argument numbering in [`ShapeError`]s: argument 0 is the input, argument 1 the output.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::{
    check_input_layout, check_output, expect_dim, expect_rank, only_input, RunOptions, ShapeRule,
};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::norm::NormParams;
use crate::kernels::Backend;
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// Shared geometry checks: `channels >= 1`, `eps` positive and finite.
fn check_common<D>(op: &'static str, channels: usize, eps: f32) -> Result<(), ShapeError<D>> {
    if channels == 0 {
        return Err(ShapeError::Geometry { op, reason: "channels must be >= 1" });
    }
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(ShapeError::Geometry { op, reason: "eps must be positive and finite" });
    }
    Ok(())
}

/// Shape rule of a norm over `channels`: frame-major inputs of rank 1..=4 whose last axis
/// is `channels`; channel-first inputs `[channels, frames]`. The output has the input's
/// shape.
fn channel_norm_shape<D: Dim>(
    op: &'static str,
    channels: usize,
    layout: Layout,
    x: &Shape<D>,
) -> Result<Shape<D>, ShapeError<D>> {
    let c = D::constant(channels);
    match layout {
        Layout::FrameMajor => {
            expect_rank(op, 0, x, &[1, 2, 3, 4], "1 to 4")?;
            expect_dim(op, 0, x, x.rank() - 1, "channels", &c)?;
        }
        Layout::ChannelFirst => {
            expect_rank(op, 0, x, &[2], "2")?;
            expect_dim(op, 0, x, 0, "channels", &c)?;
        }
    }
    Ok(x.clone())
}

/// The geometry check (`check`) and the [`ShapeRule`] of a norm over the `channels` of each
/// frame in `layout` (fields `channels`, `eps`, `layout`; [`channel_norm_shape`]), under
/// operator name `$name`, with the rule's doc.
macro_rules! channel_norm_rule {
    ($geometry:ident, $name:literal, $(#[$doc:meta])*) => {
        impl $geometry {
            /// The geometry rules alone (no input).
            fn check<D>(&self) -> Result<(), ShapeError<D>> {
                check_common($name, self.channels, self.eps)
            }
        }

        impl ShapeRule for $geometry {
            fn name(&self) -> &'static str {
                $name
            }
            $(#[$doc])*
            fn output_shape<D: Dim>(
                &self,
                inputs: &[Shape<D>],
            ) -> Result<Shape<D>, ShapeError<D>> {
                self.check()?;
                let x = $crate::ops::only_input($name, inputs, "expects exactly one input")?;
                channel_norm_shape($name, self.channels, self.layout, x)
            }
            layout_facts!(self.layout);
        }
    };
}

/// Checks `gamma` (`channels` values) and `beta` (`channels` values, given exactly when
/// `bias`).
fn check_params(
    channels: usize,
    bias: bool,
    gamma: &[f32],
    beta: Option<&[f32]>,
) -> Result<(), Error> {
    if gamma.len() != channels {
        return Err(Error::Length { what: "gamma", expected: channels, got: gamma.len() });
    }
    match (bias, beta) {
        (true, Some(b)) if b.len() == channels => Ok(()),
        (false, None) => Ok(()),
        (true, b) => {
            let got = b.map_or(0, <[f32]>::len);
            Err(Error::Length { what: "beta", expected: channels, got })
        }
        (false, Some(b)) => Err(Error::Length { what: "beta", expected: 0, got: b.len() }),
    }
}

/// Validates a run of norm `rule` (the input's shape, then its layout, then the output's
/// shape and layout; both tensors in `layout`) and returns the number of frames, `input
/// elements / channels`.
fn check_call<R: ShapeRule>(
    rule: &R,
    channels: usize,
    layout: Layout,
    input: &TensorView,
    output: &TensorViewMut,
) -> Result<usize, Error> {
    let op = rule.name();
    let shape = rule.output_shape(&[*input.shape()])?;
    check_input_layout(op, input, layout)?;
    check_output(op, &shape, layout, output)?;
    Ok(input.data().len() / channels)
}

/// A norm `$ty` with a scale `gamma` and an optional bias `beta` (fields `geometry`,
/// `gamma`, `beta`; the geometry has `channels`, `bias`, `eps` and its `check`): the struct,
/// `new`, `from_slice` (feature `alloc`), `from_packed`, the accessors and `params` (what
/// the kernels read).
macro_rules! affine_norm {
    ($(#[$doc:meta])* $ty:ident, $geometry:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $ty<S> {
            geometry: $geometry,
            gamma: S,
            beta: Option<S>,
        }

        impl<S: AsRef<[f32]>> $ty<S> {
            /// From `gamma` (`channels` values) and `beta` (`channels` values, given exactly when
            /// `geometry.bias`) as stored (the kernel's layout). No copy.
            ///
            /// # Errors
            /// [`Error::Shape`] for invalid geometry; [`Error::Length`] when `gamma` or `beta` does
            /// not hold `channels` values, or `beta` is given without `bias` (or missing with it).
            pub fn from_packed(geometry: $geometry, gamma: S, beta: Option<S>) -> Result<Self, Error> {
                geometry.check::<usize>()?;
                let b = beta.as_ref().map(AsRef::as_ref);
                check_params(geometry.channels, geometry.bias, gamma.as_ref(), b)?;
                Ok(Self { geometry, gamma, beta })
            }

            weight_accessors!(
                $geometry,
                gamma: [f32], "The scale `gamma` (`channels` values).",
                beta, "The bias `beta` (`channels` values), if any."
            );

            /// The kernels' parameters: `gamma`, `beta` and the geometry's `eps`.
            fn params(&self) -> NormParams<'_> {
                NormParams { gamma: self.packed_weight(), beta: self.bias(), eps: self.geometry.eps }
            }

            /// Checks a run with both tensors in `layout` ([`check_call`]) and returns the
            /// number of frames, the kernels' parameters ([`Self::params`]) and the data of
            /// `input` and `output`.
            fn check_run<'a>(
                &'a self,
                layout: Layout,
                input: &'a TensorView,
                output: &'a mut TensorViewMut,
            ) -> Result<(usize, NormParams<'a>, &'a [f32], &'a mut [f32]), Error> {
                let g = &self.geometry;
                let frames = check_call(g, g.channels, layout, input, output)?;
                Ok((frames, self.params(), input.data(), output.data_mut()))
            }
        }

        #[cfg(feature = "alloc")]
        impl $ty<Vec<f32>> {
            /// Takes `gamma` (and `beta` when `geometry.bias`) by value (their layout is the
            /// kernel's: nothing to pack).
            ///
            /// # Errors
            /// As [`Self::from_packed`].
            pub fn new(
                geometry: $geometry,
                gamma: Vec<f32>,
                beta: Option<Vec<f32>>,
            ) -> Result<Self, Error> {
                Self::from_packed(geometry, gamma, beta)
            }

            /// Copies borrowed `gamma` and `beta`.
            ///
            /// # Errors
            /// As [`Self::from_packed`].
            pub fn from_slice(
                geometry: $geometry,
                gamma: &[f32],
                beta: Option<&[f32]>,
            ) -> Result<Self, Error> {
                geometry.check::<usize>()?;
                check_params(geometry.channels, geometry.bias, gamma, beta)?;
                Self::from_packed(geometry, gamma.to_vec(), beta.map(<[f32]>::to_vec))
            }
        }
    };
}

// ---------------------------------------------------------------------------------------
// LayerNorm
// ---------------------------------------------------------------------------------------

/// Geometry of a [`LayerNorm`] (Ba, Kiros & Hinton 2016): normalises each frame over its
/// `channels` values, then applies per-channel `gamma` and (when `bias`) `beta`.
///
/// - `layout == FrameMajor`: input `[.., channels]` (rank 1..=4, the last axis is
///   normalised; `[frames, channels]` is the transformer case).
/// - `layout == ChannelFirst`: input `[channels, frames]`, each column normalised across
///   the channels.
///
/// The output has the input's shape and layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNormGeometry {
    /// Channels normalised together (>= 1).
    pub channels: usize,
    /// Added to the variance inside the square root (> 0, finite; PyTorch default 1e-5).
    pub eps: f32,
    /// Whether a per-channel bias `beta` follows the scale `gamma`.
    pub bias: bool,
    /// Which axis holds the channels.
    pub layout: Layout,
}

channel_norm_rule!(
    LayerNormGeometry,
    "layer_norm",
    /// # Errors
    /// [`ShapeError::Geometry`] for `channels == 0`, a non-positive or non-finite `eps`, or
    /// not exactly one input; [`ShapeError::Rank`] / [`ShapeError::Dim`] when the input is
    /// not `[.., channels]` (frame-major) or `[channels, frames]` (channel-first).
);

affine_norm!(
    /// Prepared LayerNorm: geometry plus `gamma` and `beta` (see [`LayerNormGeometry`]).
    LayerNorm,
    LayerNormGeometry
);

impl<S: AsRef<[f32]>> LayerNorm<S> {
    with_run_options! {
        self;
        /// Normalises `input` into `output` (same shape and layout).
        ///
        /// # Errors
        /// [`Error::Shape`] when the input does not match the geometry or the output shape
        /// differs from the input's; [`Error::Layout`] when the input's layout is not
        /// `geometry.layout` or the output's differs from it. Nothing is written on error.
        run(input: &TensorView, output: &mut TensorViewMut);
        /// [`LayerNorm::run`] with `options`: frame-major rows run in blocks on
        /// `options.parallel()` (each row alone: the same bits for any context); channel-first
        /// input runs on the calling thread.
        ///
        /// # Errors
        /// As [`LayerNorm::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let g = &self.geometry;
            let (frames, p, x, y) = self.check_run(g.layout, input, output)?;
            match g.layout {
                Layout::FrameMajor => {
                    B::layer_norm_rows_in(options.parallel(), (frames, g.channels), x, p, y)?
                }
                Layout::ChannelFirst => B::layer_norm_channels(g.channels, frames, x, p, y),
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------
// RmsNorm
// ---------------------------------------------------------------------------------------

/// Geometry of an [`RmsNorm`] (Zhang & Sennrich 2019):
/// `y = x / sqrt(mean(x^2) + eps) * gamma`, the mean over the `channels` of each frame.
///
/// Layouts as [`LayerNormGeometry`]: frame-major `[.., channels]` (rank 1..=4) or
/// channel-first `[channels, frames]`. The output has the input's shape and layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmsNormGeometry {
    /// Channels normalised together (>= 1).
    pub channels: usize,
    /// Added to the mean square inside the square root (> 0, finite).
    pub eps: f32,
    /// Which axis holds the channels.
    pub layout: Layout,
}

channel_norm_rule!(
    RmsNormGeometry,
    "rms_norm",
    /// # Errors
    /// As [`LayerNormGeometry`]'s rule.
);

/// Prepared RMSNorm: geometry plus `gamma` (`channels` values).
#[derive(Clone, Debug)]
pub struct RmsNorm<S> {
    geometry: RmsNormGeometry,
    gamma: S,
}

impl<S: AsRef<[f32]>> RmsNorm<S> {
    /// From `gamma` as stored (`channels` values). No copy.
    ///
    /// # Errors
    /// [`Error::Shape`] for invalid geometry; [`Error::Length`] for a wrong length.
    pub fn from_packed(geometry: RmsNormGeometry, gamma: S) -> Result<Self, Error> {
        geometry.check::<usize>()?;
        check_params(geometry.channels, false, gamma.as_ref(), None)?;
        Ok(Self { geometry, gamma })
    }

    weight_accessors!(
        RmsNormGeometry,
        gamma: [f32], "The scale `gamma` (`channels` values)."
    );

    with_run_options! {
        self;
        /// Normalises `input` into `output` (same shape and layout).
        ///
        /// # Errors
        /// As [`LayerNorm::run`].
        run(input: &TensorView, output: &mut TensorViewMut);
        /// [`RmsNorm::run`] with `options`, split as [`LayerNorm::run_with`].
        ///
        /// # Errors
        /// As [`LayerNorm::run_with`].
        run_with(options) => {
            let g = &self.geometry;
            let frames = check_call(g, g.channels, g.layout, input, output)?;
            let gamma = self.gamma.as_ref();
            let (x, y) = (input.data(), output.data_mut());
            let par = options.parallel();
            match g.layout {
                Layout::FrameMajor => {
                    B::rms_norm_rows_in(par, (frames, g.channels), x, (gamma, g.eps), y)?
                }
                Layout::ChannelFirst => {
                    B::rms_norm_channels(g.channels, frames, x, gamma, g.eps, y)
                }
            }
            Ok(())
        }
    }
}

#[cfg(feature = "alloc")]
impl RmsNorm<Vec<f32>> {
    /// Takes `gamma` by value.
    ///
    /// # Errors
    /// [`Error::Shape`] for invalid geometry; [`Error::Length`] when `gamma` does not hold
    /// `channels` values.
    pub fn new(geometry: RmsNormGeometry, gamma: Vec<f32>) -> Result<Self, Error> {
        Self::from_packed(geometry, gamma)
    }

    /// Copies a borrowed `gamma`.
    ///
    /// # Errors
    /// As [`RmsNorm::new`].
    pub fn from_slice(geometry: RmsNormGeometry, gamma: &[f32]) -> Result<Self, Error> {
        Self::new(geometry, gamma.to_vec())
    }
}

// ---------------------------------------------------------------------------------------
// GroupNorm
// ---------------------------------------------------------------------------------------

/// Geometry of a [`GroupNorm`] (Wu & He 2018): the `channels` are split into `groups`
/// equal groups of consecutive channels; each group is normalised over all its values
/// (channels in the group x frames), then per-channel `gamma` and (when `bias`) `beta`
/// are applied. `groups == 1` normalises the whole tensor (the "global layer norm" of
/// Conv-TasNet), `groups == channels` is instance norm.
///
/// Input: channel-first `[channels, frames]`, or `[channels, height, width]` (rank 2..=4,
/// axis 0 = channels, the other axes are flattened). The output has the input's shape and
/// layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupNormGeometry {
    /// Channels (>= 1, a multiple of `groups`).
    pub channels: usize,
    /// Number of groups (>= 1, divides `channels`).
    pub groups: usize,
    /// Added to the variance inside the square root (> 0, finite; PyTorch default 1e-5).
    pub eps: f32,
    /// Whether a per-channel bias `beta` follows the scale `gamma`.
    pub bias: bool,
}

impl GroupNormGeometry {
    /// The geometry rules alone (no input).
    fn check<D>(&self) -> Result<(), ShapeError<D>> {
        let op = "group_norm";
        check_common(op, self.channels, self.eps)?;
        if self.groups == 0 || !self.channels.is_multiple_of(self.groups) {
            return Err(ShapeError::Geometry { op, reason: "groups must divide channels" });
        }
        Ok(())
    }
}

impl ShapeRule for GroupNormGeometry {
    fn name(&self) -> &'static str {
        "group_norm"
    }
    /// # Errors
    /// [`ShapeError::Geometry`] for `channels == 0`, `groups` zero or not dividing
    /// `channels`, a non-positive or non-finite `eps`, or not exactly one input;
    /// [`ShapeError::Rank`] / [`ShapeError::Dim`] when the input is not
    /// `[channels, ..]` of rank 2..=4.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        self.check()?;
        let x = only_input(op, inputs, "expects exactly one input")?;
        expect_rank(op, 0, x, &[2, 3, 4], "2 to 4")?;
        expect_dim(op, 0, x, 0, "channels", &D::constant(self.channels))?;
        Ok(x.clone())
    }
    layout_facts!(Layout::ChannelFirst);
}

affine_norm!(
    /// Prepared GroupNorm: geometry plus `gamma` and `beta` (see [`GroupNormGeometry`]).
    GroupNorm,
    GroupNormGeometry
);

impl<S: AsRef<[f32]>> GroupNorm<S> {
    with_run_options! {
        self;
        /// Normalises `input` into `output` (same shape, both channel-first).
        ///
        /// # Errors
        /// [`Error::Shape`] when the input does not match the geometry or the output shape
        /// differs from the input's; [`Error::Layout`] when the input or the output is not
        /// channel-first. Nothing is written on error.
        run(input: &TensorView, output: &mut TensorViewMut);
        /// [`GroupNorm::run`] with `options`: each group's statistics on the calling thread,
        /// its channels normalised in blocks on `options.parallel()` (the same bits for any
        /// context).
        ///
        /// # Errors
        /// As [`GroupNorm::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let (frames, p, x, y) = self.check_run(Layout::ChannelFirst, input, output)?;
            let g = &self.geometry;
            B::group_norm_in(options.parallel(), (g.channels, frames, g.groups), x, p, y)
        }
    }
}
