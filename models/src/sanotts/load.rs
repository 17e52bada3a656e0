//! A checked [`Voice`] → the decoder's prepared operators ([`VoiceWeights`]), with the two
//! folds of `sanotts.md` done once, at load time, accumulating in f64:
//!
//! - the acoustic model's bias-free projection `P` `[80, 192]` into the input conv
//!   `W` `[128, 80, 7]`: `W'[d, h, t] = sum_m W[d, m, t] P[m, h]`, a conv `[128, 192, 7]`
//!   on the hidden states. Exact up to rounding, edges included: with no bias in `P`, the
//!   zero padding of the hidden states projects to the zero padding of the projected ones;
//! - the speaker embedding `s` `[128]` into the conv's bias: `b'[d] = b[d] + s[d]` (it is
//!   added to every frame right after the conv).
//!
//! The ConvNeXt pointwise layers and the head are linear layers `[out, in]` in the file
//! and `[out, in, 1]` convs in the plan (the same values in the same order).

use alloc::vec::Vec;

use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry, DepthwiseConv1d, DepthwiseConv1dGeometry};
use neon_runtime::ops::elementwise::{LayerScale, PerChannel};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};

use super::decoder::{DecoderNet, DecoderNetWeights};
use super::names::index;
use super::voice::Voice;
use super::{EXPANDED, HIDDEN, KERNEL, MEL, WIDTH};
use crate::error::Error;
use crate::weights::TensorFile;

/// The prepared (folded, packed) weights of one voice: immutable; share them through an
/// `Arc` among every [`super::utterance::Decoder`] and [`super::vocoder::Vocoder`] of the
/// voice.
pub struct VoiceWeights {
    /// The plan's operators.
    pub net: DecoderNetWeights<Vec<f32>>,
}

/// The folded input conv `[128, 192, 7]` (row-major) from `embed.weight` `[128, 80, 7]`
/// and `proj.weight` `[80, 192]`: `W'[d, h, t] = sum_m W[d, m, t] P[m, h]`, summed in f64
/// over `m` in order and rounded once.
pub fn fold_projection(embed: &[f32], proj: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(WIDTH * HIDDEN * KERNEL);
    for d in 0..WIDTH {
        for h in 0..HIDDEN {
            for t in 0..KERNEL {
                let mut acc = 0.0f64;
                for m in 0..MEL {
                    let w = f64::from(embed[(d * MEL + m) * KERNEL + t]);
                    acc += w * f64::from(proj[m * HIDDEN + h]);
                }
                out.push(acc as f32);
            }
        }
    }
    out
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

/// One ConvNeXt block's operators: (depthwise, norm, up, down, gamma).
type Block = (
    DepthwiseConv1d<Vec<f32>>,
    LayerNorm<Vec<f32>>,
    Conv1d<Vec<f32>>,
    Conv1d<Vec<f32>>,
    LayerScale<Vec<f32>>,
);

/// Block `i` of `voice` with the plan's geometries `g` (depthwise, norm, up, down, gamma).
fn block(
    voice: &Voice,
    i: usize,
    g: (DepthwiseConv1dGeometry, LayerNormGeometry, Conv1dGeometry, Conv1dGeometry, PerChannel),
) -> Result<Block, Error> {
    let t = |k: usize| voice.tensor(index::convnext(i) + k);
    Ok((
        DepthwiseConv1d::new(g.0, t(0).to_vec(), Some(t(1).to_vec()))?,
        norm(g.1, t(2), t(3))?,
        conv(g.2, t(4), t(5))?,
        conv(g.3, t(6), t(7))?,
        LayerScale::new(g.4, t(8).to_vec())?,
    ))
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
        let embed = fold_projection(t(index::EMBED), t(index::PROJ));
        let embed_b = fold_speaker(t(index::EMBED_BIAS), t(index::SPEAKER));
        let b0 = block(voice, 0, (P::DW0, P::NORM_0, P::UP0, P::DOWN0, P::GAMMA0))?;
        let b1 = block(voice, 1, (P::DW1, P::NORM_1, P::UP1, P::DOWN1, P::GAMMA1))?;
        let b2 = block(voice, 2, (P::DW2, P::NORM_2, P::UP2, P::DOWN2, P::GAMMA2))?;
        let b3 = block(voice, 3, (P::DW3, P::NORM_3, P::UP3, P::DOWN3, P::GAMMA3))?;
        let net = DecoderNetWeights {
            embed: Conv1d::new(P::EMBED, embed, Some(embed_b))?,
            res1: conv(P::RES1, t(index::RES_CONV1), t(index::RES_CONV1_BIAS))?,
            res2: conv(P::RES2, t(index::RES_CONV2), t(index::RES_CONV2_BIAS))?,
            norm0: norm(P::NORM0, t(index::NORM0), t(index::NORM0_BIAS))?,
            dw0: b0.0,
            norm_0: b0.1,
            up0: b0.2,
            down0: b0.3,
            gamma0: b0.4,
            dw1: b1.0,
            norm_1: b1.1,
            up1: b1.2,
            down1: b1.3,
            gamma1: b1.4,
            dw2: b2.0,
            norm_2: b2.1,
            up2: b2.2,
            down2: b2.3,
            gamma2: b2.4,
            dw3: b3.0,
            norm_3: b3.1,
            up3: b3.2,
            down3: b3.3,
            gamma3: b3.4,
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
    assert!(DecoderNet::EMBED.in_channels == HIDDEN);
    assert!(DecoderNet::EMBED.out_channels == WIDTH);
    assert!(DecoderNet::EMBED.kernel == KERNEL);
    assert!(DecoderNet::UP0.out_channels == EXPANDED);
};
