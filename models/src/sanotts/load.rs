//! A checked [`Voice`] → the decoder's prepared operators ([`VoiceWeights`]), with the one
//! fold of `sanotts.md` done once, at load time, in f64: the speaker embedding `s` `[128]`
//! into the input conv's bias, `b'[d] = b[d] + s[d]` (it is added to every frame right after
//! the conv).
//!
//! The acoustic model's bias-free projection `P` `[80, 192]` stays a step of its own (an
//! `[80, 192, 1]` conv, the same values in the same order), run before the input conv
//! `[128, 80, 7]`: folding it in (`W'[d, h, t] = sum_m W[d, m, t] P[m, h]`, a `[128, 192, 7]`
//! conv) would be exact up to rounding but cost 172,032 multiply-adds per frame where the
//! two steps cost 87,040 (see [`super::decoder`]).
//!
//! The residual block and the four ConvNeXt blocks are the runtime's blocks
//! ([`ResidualConv`], [`ConvNeXt`]), built from the file's unfolded tensors (the pointwise
//! layers' `[out, in]` is the layout the block takes); the head is a linear layer `[out, in]`
//! in the file and an `[out, in, 1]` conv in the plan (the same values in the same order).

use alloc::vec::Vec;

use neon_runtime::blocks::{ConvNeXt, ConvNeXtWeights, ResidualConv, ResidualConvWeights};
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};

use super::decoder::{DecoderNet, DecoderNetWeights};
use super::names::index;
use super::voice::Voice;
use super::{EXPANDED, HIDDEN, KERNEL, MEL, WIDTH};
use crate::error::Error;
use crate::weights::TensorFile;

/// The prepared (speaker folded, packed) weights of one voice: immutable; share them through an
/// `Arc` among every [`super::utterance::Decoder`] and [`super::vocoder::Vocoder`] of the
/// voice.
pub struct VoiceWeights {
    /// The plan's operators.
    pub net: DecoderNetWeights<Vec<f32>>,
}

/// The folded bias `b + s` (each sum in f64, rounded once).
pub fn fold_speaker(bias: &[f32], speaker: &[f32]) -> Vec<f32> {
    bias.iter().zip(speaker).map(|(&b, &s)| (f64::from(b) + f64::from(s)) as f32).collect()
}

fn conv(g: Conv1dGeometry, w: &[f32], b: &[f32]) -> Result<Conv1d<Vec<f32>>, Error> {
    Ok(Conv1d::new(g, w.to_vec(), Some(b.to_vec()))?)
}

fn norm(g: LayerNormGeometry, w: &[f32], b: &[f32]) -> Result<LayerNorm<Vec<f32>>, Error> {
    Ok(LayerNorm::new(g, w.to_vec(), Some(b.to_vec()))?)
}

/// ConvNeXt block `i` of `voice`, prepared with the plan's geometry `g`.
fn convnext(
    voice: &Voice,
    i: usize,
    g: neon_runtime::blocks::ConvNeXtGeometry,
) -> Result<ConvNeXt<Vec<f32>>, Error> {
    let t = |k: usize| voice.tensor(index::convnext(i) + k).to_vec();
    let weights = ConvNeXtWeights {
        dw_weight: t(0),
        dw_bias: t(1),
        norm_weight: t(2),
        norm_bias: t(3),
        pw1_weight: t(4),
        pw1_bias: t(5),
        pw2_weight: t(6),
        pw2_bias: t(7),
        gamma: t(8),
    };
    Ok(ConvNeXt::new(g, weights)?)
}

impl VoiceWeights {
    /// Folds and packs `voice` for the plan ([`DecoderNet`]).
    ///
    /// # Errors
    /// [`Error::Runtime`] if an operator refuses its weights (not expected for a checked
    /// voice: the shapes are the plan's).
    pub fn prepare(voice: &Voice) -> Result<Self, Error> {
        type P = DecoderNet;
        let t = |i: usize| voice.tensor(i);
        let embed_b = fold_speaker(t(index::EMBED_BIAS), t(index::SPEAKER));
        let res = ResidualConvWeights {
            conv1_weight: t(index::RES_CONV1).to_vec(),
            conv1_bias: t(index::RES_CONV1_BIAS).to_vec(),
            conv2_weight: t(index::RES_CONV2).to_vec(),
            conv2_bias: t(index::RES_CONV2_BIAS).to_vec(),
        };
        let net = DecoderNetWeights {
            proj: Conv1d::new(P::PROJ, t(index::PROJ).to_vec(), None)?,
            embed: Conv1d::new(P::EMBED, t(index::EMBED).to_vec(), Some(embed_b))?,
            res: ResidualConv::new(P::RES, res)?,
            norm0: norm(P::NORM0, t(index::NORM0), t(index::NORM0_BIAS))?,
            cn0: convnext(voice, 0, P::CN0)?,
            cn1: convnext(voice, 1, P::CN1)?,
            cn2: convnext(voice, 2, P::CN2)?,
            cn3: convnext(voice, 3, P::CN3)?,
            norm1: norm(P::NORM1, t(index::NORM1), t(index::NORM1_BIAS))?,
            head: conv(P::HEAD, t(index::HEAD), t(index::HEAD_BIAS))?,
        };
        Ok(Self { net })
    }

    /// Reads, checks ([`Voice::load`]), folds and packs a voice file.
    ///
    /// # Errors
    /// As [`Voice::load`] and [`VoiceWeights::prepare`].
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        Self::prepare(&Voice::load(file)?)
    }
}

// The plan's geometry is the architecture of `sanotts.md`.
const _: () = {
    assert!(DecoderNet::PROJ.in_channels == HIDDEN);
    assert!(DecoderNet::PROJ.out_channels == MEL);
    assert!(DecoderNet::PROJ.kernel == 1);
    assert!(DecoderNet::EMBED.in_channels == MEL);
    assert!(DecoderNet::EMBED.out_channels == WIDTH);
    assert!(DecoderNet::EMBED.kernel == KERNEL);
    assert!(DecoderNet::CN0.hidden == EXPANDED);
};
