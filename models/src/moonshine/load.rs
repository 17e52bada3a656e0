//! Loading the converted weights file (`base-en.safetensors`, written by
//! `tools/moonshine/convert.py`) into the plans' prepared operators.
//!
//! Linear weights arrive int8 `[in, out]` (the shipped `y = x W` orientation) with a
//! per-tensor scale and offset and stay int8 (packed once, never requantised). The three
//! stem convolutions are dequantised to f32 at load (`f32(q) * scale + offset`, as ONNX
//! Runtime evaluates the shipped graph), since conv1d takes f32 weights. The decoder's
//! up-projection `[416, 3328]` is split into its value and gate halves (same scale and
//! offset, so the split is exact). The embedding `[32768, 416]` is also the LM head.

use alloc::vec::Vec;

use neon_runtime::ops::conv::Conv1d;
use neon_runtime::ops::norm::{GroupNorm, LayerNorm};
use neon_runtime::ops::quant::{QuantLinear, QuantLinearGeometry};

use super::decoder::{CrossKv, DecoderLayer};
use super::decoder::{CrossKvWeights, DecoderHead, DecoderHeadWeights, DecoderLayerWeights};
use super::encoder::{EncoderLayer, EncoderLayerWeights, EncoderNorm, EncoderNormWeights};
use super::encoder::{EncoderStem, EncoderStemWeights};
use super::names::{self, dec, enc, Quant};
use super::{D_MODEL, LAYERS, MLP_HIDDEN, VOCAB};
use crate::error::Error;
use crate::weights::{QuantTensor, TensorFile};

/// f32 storage of the prepared operators.
pub type F32 = Vec<f32>;
/// int8 storage of the prepared operators.
pub type I8 = Vec<i8>;

/// Every prepared operator of Moonshine base-en.
pub struct MoonshineWeights {
    /// The convolutional stem.
    pub stem: EncoderStemWeights<F32>,
    /// The eight encoder layers.
    pub encoder: Vec<EncoderLayerWeights<F32, I8>>,
    /// The encoder's final LayerNorm.
    pub encoder_norm: EncoderNormWeights<F32>,
    /// Each decoder layer's cross-attention key and value projections.
    pub cross_kv: Vec<CrossKvWeights<F32, I8>>,
    /// The eight decoder layers (without their cross key / value projections).
    pub decoder: Vec<DecoderLayerWeights<F32, I8>>,
    /// The final LayerNorm and the LM head, whose int8 weights are also the token embedding.
    pub head: DecoderHeadWeights<F32, I8>,
}

fn norm(file: &TensorFile<'_>, name: &'static str) -> Result<LayerNorm<F32>, Error> {
    let g = EncoderNorm::NORM;
    Ok(LayerNorm::new(g, file.f32(name, &[g.channels])?, None)?)
}

/// A linear layer of the plan's geometry `g` from an int8 `[in, out]` tensor (and the
/// bias `bias` names when `g.bias`).
fn linear(
    file: &TensorFile<'_>,
    names: Quant,
    bias: Option<&'static str>,
    g: QuantLinearGeometry,
) -> Result<QuantLinear<I8, F32>, Error> {
    let w = file.quant(names, &[g.in_features, g.out_features])?;
    let bias = bias.map(|b| file.f32(b, &[g.out_features])).transpose()?;
    Ok(QuantLinear::from_in_out(g, &w.q, w.scale, w.offset, bias.as_deref())?)
}

/// Columns `cols` of an `[rows, width]` row-major matrix.
fn columns<T: Copy>(m: &[T], width: usize, cols: core::ops::Range<usize>) -> Vec<T> {
    m.chunks_exact(width).flat_map(|row| row[cols.clone()].iter().copied()).collect()
}

fn conv(
    file: &TensorFile<'_>,
    names: Quant,
    bias: Option<&'static str>,
    g: neon_runtime::ops::conv::Conv1dGeometry,
) -> Result<Conv1d<F32>, Error> {
    let shape = [g.out_channels, g.in_channels / g.groups, g.kernel];
    let w = file.quant(names, &shape)?.dequantize();
    let bias = bias.map(|b| file.f32(b, &[g.out_channels])).transpose()?;
    Ok(Conv1d::new(g, w, bias)?)
}

fn encoder_layer(file: &TensorFile<'_>, i: usize) -> Result<EncoderLayerWeights<F32, I8>, Error> {
    Ok(EncoderLayerWeights {
        attn_norm: norm(file, enc::ATTN_NORM[i])?,
        q: linear(file, enc::Q[i], None, EncoderLayer::Q)?,
        k: linear(file, enc::K[i], None, EncoderLayer::K)?,
        v: linear(file, enc::V[i], None, EncoderLayer::V)?,
        o: linear(file, enc::O[i], None, EncoderLayer::O)?,
        mlp_norm: norm(file, enc::MLP_NORM[i])?,
        fc1: linear(file, enc::FC1[i], Some(enc::FC1_BIAS[i]), EncoderLayer::FC1)?,
        fc2: linear(file, enc::FC2[i], Some(enc::FC2_BIAS[i]), EncoderLayer::FC2)?,
    })
}

fn decoder_layer(file: &TensorFile<'_>, i: usize) -> Result<DecoderLayerWeights<F32, I8>, Error> {
    let up = file.quant(dec::UP[i], &[D_MODEL, 2 * MLP_HIDDEN])?;
    let up_bias = file.f32(dec::UP_BIAS[i], &[2 * MLP_HIDDEN])?;
    let half = |g: QuantLinearGeometry, cols: core::ops::Range<usize>| {
        let q = columns(&up.q, 2 * MLP_HIDDEN, cols.clone());
        let bias = &up_bias[cols];
        QuantLinear::from_in_out(g, &q, up.scale, up.offset, Some(bias))
    };
    Ok(DecoderLayerWeights {
        self_norm: norm(file, dec::SELF_NORM[i])?,
        self_q: linear(file, dec::SELF_Q[i], None, DecoderLayer::SELF_Q)?,
        self_k: linear(file, dec::SELF_K[i], None, DecoderLayer::SELF_K)?,
        self_v: linear(file, dec::SELF_V[i], None, DecoderLayer::SELF_V)?,
        self_o: linear(file, dec::SELF_O[i], None, DecoderLayer::SELF_O)?,
        cross_norm: norm(file, dec::CROSS_NORM[i])?,
        cross_q: linear(file, dec::CROSS_Q[i], None, DecoderLayer::CROSS_Q)?,
        cross_o: linear(file, dec::CROSS_O[i], None, DecoderLayer::CROSS_O)?,
        mlp_norm: norm(file, dec::MLP_NORM[i])?,
        up_value: half(DecoderLayer::UP_VALUE, 0..MLP_HIDDEN)?,
        up_gate: half(DecoderLayer::UP_GATE, MLP_HIDDEN..2 * MLP_HIDDEN)?,
        down: linear(file, dec::DOWN[i], Some(dec::DOWN_BIAS[i]), DecoderLayer::DOWN)?,
    })
}

impl MoonshineWeights {
    /// Loads and prepares every operator from a converted weights file.
    ///
    /// # Errors
    /// [`Error::Weights`] naming the first tensor that is missing, has another dtype or
    /// shape, or holds non-finite values; [`Error::Runtime`] if an operator rejects its
    /// parameters (e.g. a non-finite scale).
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        let stem = EncoderStemWeights {
            conv1: conv(file, names::CONV1, None, EncoderStem::CONV1)?,
            norm: {
                let g = EncoderStem::NORM;
                let gamma = file.f32(names::GROUPNORM, &[g.channels])?;
                let beta = file.f32(names::GROUPNORM_BIAS, &[g.channels])?;
                GroupNorm::new(g, gamma, Some(beta))?
            },
            conv2: conv(file, names::CONV2, Some(names::CONV2_BIAS), EncoderStem::CONV2)?,
            conv3: conv(file, names::CONV3, Some(names::CONV3_BIAS), EncoderStem::CONV3)?,
        };
        let encoder = (0..LAYERS).map(|i| encoder_layer(file, i)).collect::<Result<_, _>>()?;
        let encoder_norm = EncoderNormWeights { norm: norm(file, names::ENCODER_NORM)? };
        let cross_kv = (0..LAYERS)
            .map(|i| {
                Ok(CrossKvWeights {
                    k: linear(file, dec::CROSS_K[i], None, CrossKv::K)?,
                    v: linear(file, dec::CROSS_V[i], None, CrossKv::V)?,
                })
            })
            .collect::<Result<_, Error>>()?;
        let decoder = (0..LAYERS).map(|i| decoder_layer(file, i)).collect::<Result<_, _>>()?;
        let QuantTensor { q, scale, offset } = file.quant(names::EMBEDDING, &[VOCAB, D_MODEL])?;
        let head = DecoderHeadWeights {
            norm: norm(file, names::DECODER_NORM)?,
            embedding: QuantLinear::new(DecoderHead::EMBEDDING, q, scale, offset, None)?,
        };
        Ok(Self { stem, encoder, encoder_norm, cross_kv, decoder, head })
    }
}

// The plans' weight shapes are the architecture constants used above.
const _: () = {
    assert!(EncoderLayer::Q.in_features == D_MODEL);
    assert!(DecoderLayer::UP_VALUE.out_features == MLP_HIDDEN);
    assert!(CrossKv::K.in_features == D_MODEL);
    assert!(DecoderHead::EMBEDDING.out_features == VOCAB);
};
