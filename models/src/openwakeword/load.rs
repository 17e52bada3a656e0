//! Loading the converted openWakeWord files (`tools/openwakeword/convert.py` writes them)
//! into the plans' prepared operators: `embedding.safetensors` into [`EmbeddingNetWeights`],
//! a wake-word head into a [`HeadNet`] of the architecture its tensors describe.
//!
//! Tensor names are in [`names`](super::names); every tensor is f32 and checked for
//! presence, dtype, exact shape and finite values before packing.

use alloc::vec::Vec;

use neon_runtime::ops::conv2d::{Conv2d, Conv2dGeometry};
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};

use super::embedding::{EmbeddingNet, EmbeddingNetWeights};
use super::head::{
    HeadNet, LayerNormHead128, LayerNormHead128Weights, LayerNormHead32, LayerNormHead32Weights,
    LayerNormHead64, LayerNormHead64Weights, ReluHead128, ReluHead128Weights, HEAD_INPUT,
};
use super::names::{HeadNames, EMBEDDING_CONVS};
use crate::error::{Error, WeightsReason};
use crate::weights::TensorFile;

/// Conv `i` of the speech-embedding CNN with the plan's geometry `g`.
fn conv(file: &TensorFile<'_>, i: usize, g: Conv2dGeometry) -> Result<Conv2d<Vec<f32>>, Error> {
    let (w, b) = EMBEDDING_CONVS[i];
    let weight = file.f32(w, &[g.out_channels, g.in_channels, g.kernel_h, g.kernel_w])?;
    let bias = file.f32(b, &[g.out_channels])?;
    Ok(Conv2d::new(g, weight, Some(bias))?)
}

impl EmbeddingNetWeights<Vec<f32>> {
    /// Loads and packs the 20 convs of `embedding.safetensors` (`conv{i}.weight`
    /// `[out, in, kernel_h, kernel_w]`, `conv{i}.bias` `[out]`).
    ///
    /// # Errors
    /// [`Error::Weights`] for a missing tensor, a wrong shape or dtype, or non-finite
    /// values.
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        type P = EmbeddingNet;
        Ok(Self {
            conv0: conv(file, 0, P::CONV0)?,
            conv1: conv(file, 1, P::CONV1)?,
            conv2: conv(file, 2, P::CONV2)?,
            conv3: conv(file, 3, P::CONV3)?,
            conv4: conv(file, 4, P::CONV4)?,
            conv5: conv(file, 5, P::CONV5)?,
            conv6: conv(file, 6, P::CONV6)?,
            conv7: conv(file, 7, P::CONV7)?,
            conv8: conv(file, 8, P::CONV8)?,
            conv9: conv(file, 9, P::CONV9)?,
            conv10: conv(file, 10, P::CONV10)?,
            conv11: conv(file, 11, P::CONV11)?,
            conv12: conv(file, 12, P::CONV12)?,
            conv13: conv(file, 13, P::CONV13)?,
            conv14: conv(file, 14, P::CONV14)?,
            conv15: conv(file, 15, P::CONV15)?,
            conv16: conv(file, 16, P::CONV16)?,
            conv17: conv(file, 17, P::CONV17)?,
            conv18: conv(file, 18, P::CONV18)?,
            conv19: conv(file, 19, P::CONV19)?,
        })
    }
}

/// Dense layer `i` of a head with the plan's geometry `g` (`[out, in]` weight and `[out]`
/// bias).
fn dense(
    f: &TensorFile<'_>,
    n: &HeadNames,
    i: usize,
    g: LinearGeometry,
) -> Result<Linear<Vec<f32>>, Error> {
    let w = f.f32(n.dense[i], &[g.out_features, g.in_features])?;
    let b = f.f32(n.dense_bias[i], &[g.out_features])?;
    Ok(Linear::new(g, w, Some(b))?)
}

/// LayerNorm `i` of a head with the plan's geometry `g` (`[H]` weight and bias).
fn norm(
    f: &TensorFile<'_>,
    n: &HeadNames,
    i: usize,
    g: LayerNormGeometry,
) -> Result<LayerNorm<Vec<f32>>, Error> {
    let w = f.f32(n.norm[i], &[g.channels])?;
    let b = f.f32(n.norm_bias[i], &[g.channels])?;
    Ok(LayerNorm::new(g, w, Some(b))?)
}

/// The [`HeadNet`] variant `$variant` of LayerNorm plan `$plan`.
macro_rules! layer_norm_head {
    ($plan:ident, $weights:ident, $variant:ident, $file:expr, $n:expr) => {{
        let (f, n) = ($file, $n);
        HeadNet::$variant($weights {
            dense0: dense(f, n, 0, $plan::DENSE0)?,
            norm0: norm(f, n, 0, $plan::NORM0)?,
            dense1: dense(f, n, 1, $plan::DENSE1)?,
            norm1: norm(f, n, 1, $plan::NORM1)?,
            dense2: dense(f, n, 2, $plan::DENSE2)?,
        })
    }};
}

impl HeadNet<Vec<f32>> {
    /// Loads the head whose tensors are named by `names` from `file`: a LayerNorm head
    /// when `norm0.weight` is present (H from `dense0.weight`'s shape: 128, 64 or 32),
    /// else a ReLU head with H = 128.
    ///
    /// # Errors
    /// [`Error::Weights`] for a missing tensor, a wrong shape or dtype, non-finite
    /// values, or an unsupported H.
    pub fn load(file: &TensorFile<'_>, names: &HeadNames) -> Result<Self, Error> {
        let arch = || Error::Weights {
            source: file.source().clone(),
            tensor: names.dense[0],
            reason: WeightsReason::Architecture,
        };
        let h = match file.shape(names.dense[0]) {
            Some(s) if s.len() == 2 && s[1] == HEAD_INPUT => s[0],
            Some(_) => return Err(arch()),
            None => {
                return Err(Error::Weights {
                    source: file.source().clone(),
                    tensor: names.dense[0],
                    reason: WeightsReason::Missing,
                })
            }
        };
        if !file.contains(names.norm[0]) {
            if h != 128 {
                return Err(arch());
            }
            return Ok(HeadNet::Relu128(ReluHead128Weights {
                dense0: dense(file, names, 0, ReluHead128::DENSE0)?,
                dense1: dense(file, names, 1, ReluHead128::DENSE1)?,
                dense2: dense(file, names, 2, ReluHead128::DENSE2)?,
            }));
        }
        Ok(match h {
            128 => layer_norm_head!(
                LayerNormHead128,
                LayerNormHead128Weights,
                LayerNorm128,
                file,
                names
            ),
            64 => {
                layer_norm_head!(LayerNormHead64, LayerNormHead64Weights, LayerNorm64, file, names)
            }
            32 => {
                layer_norm_head!(LayerNormHead32, LayerNormHead32Weights, LayerNorm32, file, names)
            }
            _ => return Err(arch()),
        })
    }
}
