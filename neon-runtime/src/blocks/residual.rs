//! [`ResidualConv`]: `y = x + conv2(act(conv1(act(x))))` over channel-first `[channels,
//! frames]`, both convs `[channels, channels, kernel]` with bias, stride 1, "same" padding
//! ([`same_padding`]), each with its own kernel size and dilation.
//!
//! This is one step of HiFi-GAN's residual unit (Kong et al. 2020, "HiFi-GAN: Generative
//! Adversarial Networks for Efficient and High Fidelity Speech Synthesis", `ResBlock1`: a
//! dilated conv and a dilation-1 conv, each after a leaky ReLU of slope 0.1, padding
//! `dilation * (kernel - 1) / 2`, one skip around the pair). sanoTTS uses one with kernel 3
//! and dilations 1 then 3.
//! Any pointwise [`Activation`] may stand for `act` (leaky ReLU, ReLU, ...).

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

#[cfg(feature = "alloc")]
use super::check_weight;
use super::{block_runs, part_error, same_padding, take_view, Composed};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::activation::Activation;
use crate::ops::conv::{Conv1d, Conv1dGeometry};
use crate::ops::elementwise::Add;
use crate::ops::{RunOptions, ShapeRule};
use crate::tensor::{Shape, TensorView, TensorViewMut};

const NAME: &str = "residual_conv";

/// Geometry of a [`ResidualConv`]: sizes and the activation, without weights. Implements
/// [`ShapeRule`]: `[channels, frames]` -> `[channels, frames]`, channel-first in and out,
/// never in place.
///
/// Weights (PyTorch's `Conv1d` layout): conv `i` (`i = 0, 1`) has weight `[channels,
/// channels, kernels[i]]` and bias `[channels]`, dilation `dilations[i]`, stride 1 and
/// [`same_padding`]`(kernels[i], dilations[i])`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidualConvGeometry {
    /// Channels in, between the convs and out (`>= 1`).
    pub channels: usize,
    /// Taps of the first and the second conv (`>= 1`).
    pub kernels: [usize; 2],
    /// Dilations of the first and the second conv (`>= 1`).
    pub dilations: [usize; 2],
    /// The activation before each conv (HiFi-GAN, sanoTTS: `LeakyRelu { slope: 0.1 }`).
    pub activation: Activation,
}

impl ResidualConvGeometry {
    /// `channels` channels, both convs of `kernel` taps with dilation 1, `activation`
    /// before each.
    pub const fn new(channels: usize, kernel: usize, activation: Activation) -> Self {
        Self { channels, kernels: [kernel, kernel], dilations: [1, 1], activation }
    }

    /// With kernel sizes `first` and `second`.
    pub const fn kernels(mut self, first: usize, second: usize) -> Self {
        self.kernels = [first, second];
        self
    }

    /// With dilations `first` and `second`.
    pub const fn dilations(mut self, first: usize, second: usize) -> Self {
        self.dilations = [first, second];
        self
    }

    /// The geometry of conv `i` (0 or 1; 1 for any other value).
    const fn conv(&self, i: usize) -> Conv1dGeometry {
        let i = if i == 0 { 0 } else { 1 };
        let (k, d) = (self.kernels[i], self.dilations[i]);
        let (left, right) = same_padding(k, d);
        Conv1dGeometry::new(self.channels, self.channels, k).dilation(d).padding(left, right)
    }

    /// The geometry of the first conv (what [`ResidualConv::from_parts`] expects).
    pub const fn conv1(&self) -> Conv1dGeometry {
        self.conv(0)
    }

    /// The geometry of the second conv.
    pub const fn conv2(&self) -> Conv1dGeometry {
        self.conv(1)
    }

    /// Checks the geometry itself: the parts' own rules, run on a one-frame input.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] (named `residual_conv`) for zero channels, a zero kernel or
    /// dilation, sizes that overflow `usize`, or an invalid activation (a non-finite leaky
    /// ReLU slope, a NaN clamp bound).
    pub fn validate<D: Dim>(&self) -> Result<(), ShapeError<D>> {
        super::validate(self)
    }

    /// Scratch elements [`ResidualConv::run`] needs for `frames` frames: the activated
    /// first conv's output (`channels * frames`), then the larger of the two convs' im2col
    /// scratch ([`Conv1dGeometry::scratch_len`]).
    pub fn scratch_len(&self, frames: usize) -> usize {
        let im2col = self.conv1().scratch_len(frames).max(self.conv2().scratch_len(frames));
        self.channels.saturating_mul(frames).saturating_add(im2col)
    }
}

impl Composed for ResidualConvGeometry {
    const NAME: &'static str = NAME;
    const MISSING: &'static str = "residual_conv takes one input";
    fn channels(&self) -> usize {
        self.channels
    }
    /// The parts' shape rules in the order `run` calls them: `act`, `conv1`, `act`,
    /// `conv2`, then the skip `add` with the input.
    fn compose<D: Dim>(&self, x: &Shape<D>) -> Result<Shape<D>, ShapeError<D>> {
        let a = self.activation.output_shape(core::slice::from_ref(x))?;
        let h = self.conv1().output_shape(&[a])?;
        let h = self.activation.output_shape(&[h])?;
        let y = self.conv2().output_shape(&[h])?;
        Add.output_shape(&[y, x.clone()])
    }
}

/// The weights of a [`ResidualConv`] in PyTorch's layouts, for `ResidualConv::new` (feature
/// `alloc`).
///
/// Field names follow a `Conv1d` pair `conv1`, `conv2` as a training framework exports it
/// (`res.conv1.weight` -> `conv1_weight`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResidualConvWeights<S> {
    /// First conv, `[channels, channels, kernels[0]]`.
    pub conv1_weight: S,
    /// First conv's bias, `[channels]`.
    pub conv1_bias: S,
    /// Second conv, `[channels, channels, kernels[1]]`.
    pub conv2_weight: S,
    /// Second conv's bias, `[channels]`.
    pub conv2_bias: S,
}

/// A prepared residual conv block: two [`Conv1d`]s (weights packed once) and the
/// activation, run as `y = x + conv2(act(conv1(act(x))))`. See the [module docs](self) and
/// [`ResidualConvGeometry`] for the shapes.
#[derive(Clone, Debug)]
pub struct ResidualConv<S> {
    geometry: ResidualConvGeometry,
    conv1: Conv1d<S>,
    conv2: Conv1d<S>,
}

#[cfg(feature = "alloc")]
impl ResidualConv<Vec<f32>> {
    /// Takes `weights` (PyTorch's layouts) by value and packs both convs.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry ([`ResidualConvGeometry::validate`]);
    /// [`Error::Length`] naming the first field of `weights` (`"conv1_weight"`,
    /// `"conv1_bias"`, ...) that does not have its length.
    pub fn new(
        geometry: ResidualConvGeometry,
        weights: ResidualConvWeights<Vec<f32>>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        let (g1, g2, c) = (geometry.conv1(), geometry.conv2(), geometry.channels);
        let w = &weights;
        check_weight("conv1_weight", g1.weight_len().unwrap_or(0), w.conv1_weight.len())?;
        check_weight("conv1_bias", c, w.conv1_bias.len())?;
        check_weight("conv2_weight", g2.weight_len().unwrap_or(0), w.conv2_weight.len())?;
        check_weight("conv2_bias", c, w.conv2_bias.len())?;
        let ResidualConvWeights { conv1_weight, conv1_bias, conv2_weight, conv2_bias } = weights;
        let conv1 = Conv1d::new(g1, conv1_weight, Some(conv1_bias))?;
        let conv2 = Conv1d::new(g2, conv2_weight, Some(conv2_bias))?;
        Self::from_parts(geometry, conv1, conv2)
    }
}

impl<S: AsRef<[f32]>> ResidualConv<S> {
    /// From prepared convs (any storage, e.g. [`Conv1d::from_packed`] over `&'static`
    /// data): no packing, no copy.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, or ([`ShapeError::Geometry`] named
    /// `residual_conv`) when a conv does not have [`ResidualConvGeometry::conv1`] /
    /// [`conv2`](ResidualConvGeometry::conv2) or has no bias.
    pub fn from_parts(
        geometry: ResidualConvGeometry,
        conv1: Conv1d<S>,
        conv2: Conv1d<S>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        if conv1.geometry() != geometry.conv1() {
            return Err(part_error(NAME, "conv1 does not have the block's geometry"));
        }
        if conv2.geometry() != geometry.conv2() {
            return Err(part_error(NAME, "conv2 does not have the block's geometry"));
        }
        if conv1.bias().is_none() || conv2.bias().is_none() {
            return Err(part_error(NAME, "both convs of the block need a bias"));
        }
        Ok(Self { geometry, conv1, conv2 })
    }

    /// The geometry.
    pub fn geometry(&self) -> ResidualConvGeometry {
        self.geometry
    }

    /// The first conv.
    pub fn conv1(&self) -> &Conv1d<S> {
        &self.conv1
    }

    /// The second conv.
    pub fn conv2(&self) -> &Conv1d<S> {
        &self.conv2
    }

    block_runs! {
        self, ResidualConv, ResidualConvGeometry;
        /// `output = input + conv2(act(conv1(act(input))))`: `input` and `output` channel-first
        /// `[channels, frames]` (the output is overwritten), `scratch` at least
        /// [`ResidualConv::scratch_len`] elements (contents ignored). The steps, in order:
        /// `output = act(input)`; `scratch[..channels * frames] = conv1(output)` (the rest of
        /// the scratch is the convs' im2col tile); `act` in place on it; `output =
        /// conv2(it)`; `output += input`. The activation and both convs run on
        /// `options.parallel()` (the same bits for any context); the add runs on the calling
        /// thread.
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a frame-major input or output,
        /// [`Error::Shape`] from the shape rule (rank, channels) or for an output of another
        /// shape (argument 1), [`Error::Length`] for short scratch. Afterwards only the
        /// context's error ([`Error::Team`]).
        run_with(g, frames, input, output, scratch, options) => {
            let (mut hidden, im2col) = take_view(scratch, g.channels, frames)?;
            g.activation.run_with::<B>(input, output, options)?;
            self.conv1.run_with::<B>(&output.as_view(), &mut hidden, im2col, options)?;
            g.activation.run_in_place_with::<B>(&mut hidden, options)?;
            self.conv2.run_with::<B>(&hidden.as_view(), output, im2col, options)?;
            Add.run_in_place_with::<B>(output, input, options)
        }
    }
}
