//! [`ConvNeXt`]: the ConvNeXt block over channel-first `[channels, frames]`:
//!
//! ```text
//! h = depthwise_conv(x)          kernel k, "same" padding, with bias
//! h = layer_norm(h)              over the channels of each frame, eps, affine
//! h = pointwise_up(h)            channels -> hidden, with bias
//! h = gelu(h)                    exact (erf) form
//! h = pointwise_down(h)          hidden -> channels, with bias
//! y = x + gamma * h              layer scale, then the skip
//! ```
//!
//! Liu et al. 2022, "A ConvNet for the 2020s" (kernel 7, hidden = 4 x channels, LayerNorm eps
//! 1e-6, layer scale `gamma` per channel), in the 1-D form audio models use (e.g. Vocos,
//! Siuzdak 2023); sanoTTS: 128 channels, hidden 384 (x3), kernel 7. The pointwise layers are
//! the original's `nn.Linear`s, here kernel-1 [`Conv1d`]s over channel-first data (the same
//! weights in the same order).

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

#[cfg(feature = "alloc")]
use super::check_weight;
use super::{block_runs, part_error, same_padding, take_view, Composed};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::activation::Activation;
use crate::ops::conv::{Conv1d, Conv1dGeometry, DepthwiseConv1d, DepthwiseConv1dGeometry};
use crate::ops::elementwise::{Add, LayerScale, PerChannel};
use crate::ops::norm::{LayerNorm, LayerNormGeometry};
use crate::ops::{field_setters, RunOptions, ShapeRule};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const NAME: &str = "convnext";

/// Geometry of a [`ConvNeXt`] block: sizes and the LayerNorm's eps, without weights.
/// Implements [`ShapeRule`]: `[channels, frames]` -> `[channels, frames]`, channel-first in
/// and out, never in place.
///
/// Weights (PyTorch's layouts): depthwise conv `[channels, 1, kernel]` and bias
/// `[channels]` (stride 1, [`same_padding`]`(kernel, 1)`); LayerNorm weight and bias
/// `[channels]`; pointwise up `[hidden, channels]` and bias `[hidden]`; pointwise down
/// `[channels, hidden]` and bias `[channels]`; layer scale `gamma` `[channels]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvNeXtGeometry {
    /// Channels in and out (`>= 1`).
    pub channels: usize,
    /// Channels of the pointwise expansion (`>= 1`; 4 x `channels` in the original, 3 x in
    /// sanoTTS).
    pub hidden: usize,
    /// Taps of the depthwise conv (`>= 1`; 7 in the original and in sanoTTS).
    pub kernel: usize,
    /// The LayerNorm's eps, added to the variance (`> 0`, finite; 1e-6 in the original).
    pub eps: f32,
}

impl ConvNeXtGeometry {
    /// `channels` -> `hidden` -> `channels` with a depthwise conv of `kernel` taps and the
    /// original's LayerNorm eps, 1e-6.
    pub const fn new(channels: usize, hidden: usize, kernel: usize) -> Self {
        Self { channels, hidden, kernel, eps: 1e-6 }
    }

    field_setters! {
        /// With LayerNorm eps `eps`.
        eps: f32;
    }

    /// The depthwise conv's geometry (what [`ConvNeXt::from_parts`] expects).
    pub const fn depthwise(&self) -> DepthwiseConv1dGeometry {
        let (left, right) = same_padding(self.kernel, 1);
        DepthwiseConv1dGeometry::new(self.channels, self.kernel).padding(left, right)
    }

    /// The LayerNorm's geometry: over the channels of each frame, with a bias.
    pub const fn norm(&self) -> LayerNormGeometry {
        LayerNormGeometry {
            channels: self.channels,
            eps: self.eps,
            bias: true,
            layout: Layout::ChannelFirst,
        }
    }

    /// The pointwise up-projection's geometry (`channels -> hidden`, kernel 1).
    pub const fn pw1(&self) -> Conv1dGeometry {
        Conv1dGeometry::new(self.channels, self.hidden, 1)
    }

    /// The pointwise down-projection's geometry (`hidden -> channels`, kernel 1).
    pub const fn pw2(&self) -> Conv1dGeometry {
        Conv1dGeometry::new(self.hidden, self.channels, 1)
    }

    /// The layer scale's geometry (`channels`, channel-first).
    pub const fn layer_scale(&self) -> PerChannel {
        PerChannel::layer_scale(self.channels, Layout::ChannelFirst)
    }

    /// Checks the geometry itself: the parts' own rules, run on a one-frame input.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] (named `convnext`) for a zero channel count, hidden size or
    /// kernel, a non-positive or non-finite eps, or sizes that overflow `usize`.
    pub fn validate<D: Dim>(&self) -> Result<(), ShapeError<D>> {
        super::validate(self)
    }

    /// Scratch elements [`ConvNeXt::run`] needs for `frames` frames: one region that holds
    /// the depthwise output `[channels, frames]` and, once that is normalised into the
    /// output, the expanded `[hidden, frames]` (so `max(channels, hidden) * frames`; the
    /// pointwise convs need no im2col scratch, their [`Conv1dGeometry::scratch_len`] is
    /// added all the same). With the input and the output, the block then holds
    /// `(2 channels + hidden) * frames` values at its peak, as the same operators written
    /// one by one in a plan do.
    pub fn scratch_len(&self, frames: usize) -> usize {
        let im2col = self.pw1().scratch_len(frames).max(self.pw2().scratch_len(frames));
        self.channels.max(self.hidden).saturating_mul(frames).saturating_add(im2col)
    }
}

impl Composed for ConvNeXtGeometry {
    const NAME: &'static str = NAME;
    const MISSING: &'static str = "convnext takes one input";
    fn channels(&self) -> usize {
        self.channels
    }
    /// The parts' shape rules in the order `run` calls them.
    fn compose<D: Dim>(&self, x: &Shape<D>) -> Result<Shape<D>, ShapeError<D>> {
        let h = self.depthwise().output_shape(core::slice::from_ref(x))?;
        let h = self.norm().output_shape(&[h])?;
        let h = self.pw1().output_shape(&[h])?;
        let h = Activation::GeluErf.output_shape(&[h])?;
        let y = self.pw2().output_shape(&[h])?;
        let y = self.layer_scale().output_shape(&[y])?;
        Add.output_shape(&[y, x.clone()])
    }
}

/// The weights of a [`ConvNeXt`] block in PyTorch's layouts, for `ConvNeXt::new` (feature
/// `alloc`).
///
/// Field names follow the modules of the block as a training framework exports them
/// (`convnext.0.pw1.weight` -> `pw1_weight`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvNeXtWeights<S> {
    /// Depthwise conv, `[channels, 1, kernel]`.
    pub dw_weight: S,
    /// Depthwise conv's bias, `[channels]`.
    pub dw_bias: S,
    /// LayerNorm scale, `[channels]`.
    pub norm_weight: S,
    /// LayerNorm bias, `[channels]`.
    pub norm_bias: S,
    /// Pointwise up-projection, `[hidden, channels]` (a `Linear`'s layout; a kernel-1
    /// `Conv1d`'s `[hidden, channels, 1]` holds the same values in the same order).
    pub pw1_weight: S,
    /// Up-projection bias, `[hidden]`.
    pub pw1_bias: S,
    /// Pointwise down-projection, `[channels, hidden]`.
    pub pw2_weight: S,
    /// Down-projection bias, `[channels]`.
    pub pw2_bias: S,
    /// Layer scale, `[channels]`.
    pub gamma: S,
}

/// A prepared ConvNeXt block: a [`DepthwiseConv1d`], a [`LayerNorm`], two pointwise
/// [`Conv1d`]s (weights packed once) and a [`LayerScale`]. See the [module docs](self) for
/// the computation and [`ConvNeXtGeometry`] for the shapes.
#[derive(Clone, Debug)]
pub struct ConvNeXt<S> {
    geometry: ConvNeXtGeometry,
    dw: DepthwiseConv1d<S>,
    norm: LayerNorm<S>,
    pw1: Conv1d<S>,
    pw2: Conv1d<S>,
    gamma: LayerScale<S>,
}

#[cfg(feature = "alloc")]
impl ConvNeXt<Vec<f32>> {
    /// Takes `weights` (PyTorch's layouts) by value and packs the pointwise convs.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry ([`ConvNeXtGeometry::validate`]);
    /// [`Error::Length`] naming the first field of `weights` (`"dw_weight"`, `"dw_bias"`,
    /// ...) that does not have its length.
    pub fn new(
        geometry: ConvNeXtGeometry,
        weights: ConvNeXtWeights<Vec<f32>>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        let (c, e) = (geometry.channels, geometry.hidden);
        let w = &weights;
        let dw_len = geometry.depthwise().weight_len().unwrap_or(0);
        check_weight("dw_weight", dw_len, w.dw_weight.len())?;
        check_weight("dw_bias", c, w.dw_bias.len())?;
        check_weight("norm_weight", c, w.norm_weight.len())?;
        check_weight("norm_bias", c, w.norm_bias.len())?;
        check_weight("pw1_weight", geometry.pw1().weight_len().unwrap_or(0), w.pw1_weight.len())?;
        check_weight("pw1_bias", e, w.pw1_bias.len())?;
        check_weight("pw2_weight", geometry.pw2().weight_len().unwrap_or(0), w.pw2_weight.len())?;
        check_weight("pw2_bias", c, w.pw2_bias.len())?;
        check_weight("gamma", c, w.gamma.len())?;
        let ConvNeXtWeights {
            dw_weight,
            dw_bias,
            norm_weight,
            norm_bias,
            pw1_weight,
            pw1_bias,
            pw2_weight,
            pw2_bias,
            gamma,
        } = weights;
        Self::from_parts(
            geometry,
            DepthwiseConv1d::new(geometry.depthwise(), dw_weight, Some(dw_bias))?,
            LayerNorm::new(geometry.norm(), norm_weight, Some(norm_bias))?,
            Conv1d::new(geometry.pw1(), pw1_weight, Some(pw1_bias))?,
            Conv1d::new(geometry.pw2(), pw2_weight, Some(pw2_bias))?,
            LayerScale::new(geometry.layer_scale(), gamma)?,
        )
    }
}

impl<S: AsRef<[f32]>> ConvNeXt<S> {
    /// From prepared parts (any storage, e.g. their `from_packed` over `&'static` data): no
    /// packing, no copy.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, or ([`ShapeError::Geometry`] named
    /// `convnext`) when a part does not have the geometry [`ConvNeXtGeometry`] gives it
    /// (`depthwise`, `norm`, `pw1`, `pw2`, `layer_scale`) or a conv has no bias.
    pub fn from_parts(
        geometry: ConvNeXtGeometry,
        dw: DepthwiseConv1d<S>,
        norm: LayerNorm<S>,
        pw1: Conv1d<S>,
        pw2: Conv1d<S>,
        gamma: LayerScale<S>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        let checks = [
            (
                dw.geometry() == geometry.depthwise(),
                "the depthwise conv does not have the block's geometry",
            ),
            (
                norm.geometry() == geometry.norm(),
                "the layer norm does not have the block's geometry",
            ),
            (pw1.geometry() == geometry.pw1(), "pw1 does not have the block's geometry"),
            (pw2.geometry() == geometry.pw2(), "pw2 does not have the block's geometry"),
            (
                gamma.geometry() == geometry.layer_scale(),
                "gamma does not have the block's geometry",
            ),
            (
                dw.bias().is_some() && pw1.bias().is_some() && pw2.bias().is_some(),
                "every conv of the block needs a bias",
            ),
        ];
        if let Some(&(_, reason)) = checks.iter().find(|(ok, _)| !ok) {
            return Err(part_error(NAME, reason));
        }
        Ok(Self { geometry, dw, norm, pw1, pw2, gamma })
    }

    /// The geometry.
    pub fn geometry(&self) -> ConvNeXtGeometry {
        self.geometry
    }

    /// The depthwise conv.
    pub fn depthwise(&self) -> &DepthwiseConv1d<S> {
        &self.dw
    }

    /// The LayerNorm.
    pub fn norm(&self) -> &LayerNorm<S> {
        &self.norm
    }

    /// The pointwise up-projection.
    pub fn pw1(&self) -> &Conv1d<S> {
        &self.pw1
    }

    /// The pointwise down-projection.
    pub fn pw2(&self) -> &Conv1d<S> {
        &self.pw2
    }

    /// The layer scale.
    pub fn layer_scale(&self) -> &LayerScale<S> {
        &self.gamma
    }

    block_runs! {
        self, ConvNeXt, ConvNeXtGeometry;
        /// Runs the block: `input` and `output` channel-first `[channels, frames]` (the output
        /// is overwritten), `scratch` at least [`ConvNeXt::scratch_len`] elements (contents
        /// ignored). The steps, in order: `d = depthwise(input)` (`scratch[..channels *
        /// frames]`); `output = layer_norm(d)`; `hidden = pw1(output)` (`scratch[..hidden *
        /// frames]`, over `d`, which is dead by then); GELU in place on `hidden`; `output =
        /// pw2(hidden)`; `output *= gamma` in place; `output += input`. The convs and the GELU
        /// run on `options.parallel()` (the same bits for any context); the norm, the layer
        /// scale and the add on the calling thread.
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a frame-major input or output,
        /// [`Error::Shape`] from the shape rule (rank, channels) or for an output of another
        /// shape (argument 1), [`Error::Length`] for short scratch. Afterwards only the
        /// context's error ([`Error::Team`]).
        run_with(g, frames, input, output, scratch, options) => {
            let (region, im2col) = scratch.split_at_mut(g.channels.max(g.hidden) * frames);
            {
                let (mut depthwise, _) = take_view(region, g.channels, frames)?;
                self.dw.run_with::<B>(input, &mut depthwise, options)?;
                self.norm.run_with::<B>(&depthwise.as_view(), output, options)?;
            }
            let (mut hidden, _) = take_view(region, g.hidden, frames)?;
            self.pw1.run_with::<B>(&output.as_view(), &mut hidden, im2col, options)?;
            Activation::GeluErf.run_in_place_with::<B>(&mut hidden, options)?;
            self.pw2.run_with::<B>(&hidden.as_view(), output, im2col, options)?;
            self.gamma.run_in_place::<B>(output)?;
            Add.run_in_place_with::<B>(output, input, options)
        }
    }
}
