//! The network's weights as PyTorch stores them, the BatchNorm fold, and the packed weights
//! the plan runs on.

use neon_runtime::ops::conv::{Conv1d, DepthwiseConv1d};
use neon_runtime::ops::elementwise::ChannelScaleShift;
use neon_runtime::ops::linear::Linear;
use neon_runtime::Error;

use crate::model::{Kws, KwsWeights};

/// Channels after the first conv.
pub const CHANNELS: usize = 64;
/// Input log-mel bands.
pub const BANDS: usize = 40;
/// Output classes.
pub const CLASSES: usize = 12;
/// PyTorch's `BatchNorm1d` default `eps`.
pub const BN_EPS: f32 = 1e-5;

/// The weights in PyTorch's layouts (`Conv1d.weight` `[out, in / groups, kernel]`,
/// `Linear.weight` `[out, in]`), with the BatchNorm's running statistics unfolded.
#[derive(Clone, Debug)]
pub struct RawWeights {
    /// First conv, `[64, 40, 3]`, no bias (a BatchNorm follows).
    pub conv_w: Vec<f32>,
    /// BatchNorm1d `weight` (gamma), `[64]`.
    pub bn_gamma: Vec<f32>,
    /// BatchNorm1d `bias` (beta), `[64]`.
    pub bn_beta: Vec<f32>,
    /// BatchNorm1d `running_mean`, `[64]`.
    pub bn_mean: Vec<f32>,
    /// BatchNorm1d `running_var`, `[64]` (> 0).
    pub bn_var: Vec<f32>,
    /// Depthwise conv, `[64, 1, 3]`, and its bias `[64]`.
    pub dw_w: Vec<f32>,
    /// Depthwise conv bias, `[64]`.
    pub dw_b: Vec<f32>,
    /// Pointwise conv, `[64, 64, 1]`.
    pub pw_w: Vec<f32>,
    /// Pointwise conv bias, `[64]`.
    pub pw_b: Vec<f32>,
    /// Classifier, `[12, 64]`.
    pub fc_w: Vec<f32>,
    /// Classifier bias, `[12]`.
    pub fc_b: Vec<f32>,
}

/// `n` deterministic values in `[-scale, scale]` that look random enough for an example
/// (`sin` of a stride by the golden ratio, offset by `seed`).
pub fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (i as f32 * 0.618_034 + seed as f32 * 1.7).sin() * scale).collect()
}

impl RawWeights {
    /// Deterministic weights of the right shapes and sensible scales (an untrained network).
    pub fn example() -> Self {
        let c = CHANNELS;
        Self {
            conv_w: values(c * BANDS * 3, 1, 0.1),
            bn_gamma: values(c, 2, 0.5).iter().map(|g| 1.0 + g).collect(),
            bn_beta: values(c, 3, 0.1),
            bn_mean: values(c, 4, 0.2),
            bn_var: values(c, 5, 0.5).iter().map(|v| 1.0 + v).collect(),
            dw_w: values(c * 3, 6, 0.5),
            dw_b: values(c, 7, 0.1),
            pw_w: values(c * c, 8, 0.15),
            pw_b: values(c, 9, 0.1),
            fc_w: values(CLASSES * c, 10, 0.2),
            fc_b: values(CLASSES, 11, 0.1),
        }
    }

    /// The BatchNorm (inference mode) folded into one multiply-add per channel:
    /// `y = (x - mean) / sqrt(var + eps) * gamma + beta = x * scale + shift` with
    /// `scale = gamma / sqrt(var + eps)` and `shift = beta - mean * scale` (PyTorch's
    /// `BatchNorm1d`, `eps` = [`BN_EPS`]). Returns `(scale, shift)`, `[64]` each.
    pub fn folded_batch_norm(&self) -> (Vec<f32>, Vec<f32>) {
        let scale: Vec<f32> = (self.bn_gamma.iter().zip(&self.bn_var))
            .map(|(g, v)| g / (v + BN_EPS).sqrt())
            .collect();
        let shift = (self.bn_beta.iter().zip(&self.bn_mean).zip(&scale))
            .map(|((b, m), s)| b - m * s)
            .collect();
        (scale, shift)
    }

    /// Packs the weights for [`Kws`]: one prepared operator per weighted statement, built
    /// with the geometry constant the plan was compiled for.
    ///
    /// # Errors
    /// [`Error::Shape`] when a vector's length does not match its declared shape.
    pub fn prepare(&self) -> Result<KwsWeights<Vec<f32>>, Error> {
        let (scale, shift) = self.folded_batch_norm();
        Ok(KwsWeights {
            conv_w: Conv1d::from_slice(Kws::CONV_W, &self.conv_w, None)?,
            bn_scale: ChannelScaleShift::new(Kws::BN_SCALE, scale, shift)?,
            dw_w: DepthwiseConv1d::from_slice(Kws::DW_W, &self.dw_w, Some(&self.dw_b))?,
            pw_w: Conv1d::from_slice(Kws::PW_W, &self.pw_w, Some(&self.pw_b))?,
            fc_w: Linear::from_slice(Kws::FC_W, &self.fc_w, Some(&self.fc_b))?,
        })
    }
}

/// Deterministic input features `[40, frames]` (channel-first, as the plan takes them).
pub fn example_features(frames: usize) -> Vec<f32> {
    values(BANDS * frames, 12, 1.0)
}
