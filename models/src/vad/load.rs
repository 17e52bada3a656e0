//! Loading the converted Silero VAD weights (`models/vad/silero_vad.safetensors`, written
//! by `tools/silero_vad/convert.py`) into [`SileroVadWeights`].
//!
//! Every tensor is f32 and checked for presence, dtype, exact shape and finite values
//! ([`TensorFile::f32`]). Two folds happen here, once: the LSTM's input and recurrent
//! weights are placed side by side, `[W_ih | W_hh]` `[512, 256]`, and its two biases added
//! (`b_ih + b_hh` in f32, as ONNX Runtime's LSTM adds them before the gates), the form
//! [`LstmCell`] takes; the output conv's `[1, 128, 1]` weight is read as a linear layer
//! `[1, 128]` (the same values: a 1x1 conv over one frame).

use alloc::vec::Vec;

use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::linear::Linear;
use neon_runtime::ops::lstm::LstmCell;

use super::names;
use super::network::{SileroVad, SileroVadWeights};
use crate::error::Error;
use crate::weights::TensorFile;

/// Encoder conv `i` with the plan's geometry `g`.
fn conv(file: &TensorFile<'_>, i: usize, g: Conv1dGeometry) -> Result<Conv1d<Vec<f32>>, Error> {
    let (w, b) = names::ENCODER[i];
    let weight = file.f32(w, &[g.out_channels, g.in_channels / g.groups, g.kernel])?;
    let bias = file.f32(b, &[g.out_channels])?;
    Ok(Conv1d::new(g, weight, Some(bias))?)
}

impl SileroVadWeights<Vec<f32>> {
    /// Loads and packs every tensor of a converted Silero VAD file ([`names`]).
    ///
    /// # Errors
    /// [`Error::Weights`] for a missing tensor, a wrong shape or dtype, or non-finite
    /// values.
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        type P = SileroVad;
        let g = P::STFT;
        let stft = Conv1d::new(g, file.f32(names::STFT, &[g.out_channels, 1, g.kernel])?, None)?;
        let l = P::LSTM;
        let (input, hidden) = (l.input, l.hidden);
        let w_ih = file.f32(names::LSTM_WEIGHT_IH, &[4 * hidden, input])?;
        let w_hh = file.f32(names::LSTM_WEIGHT_HH, &[4 * hidden, hidden])?;
        let b_ih = file.f32(names::LSTM_BIAS_IH, &[4 * hidden])?;
        let b_hh = file.f32(names::LSTM_BIAS_HH, &[4 * hidden])?;
        let weight: Vec<f32> = w_ih
            .chunks_exact(input)
            .zip(w_hh.chunks_exact(hidden))
            .flat_map(|(x, h)| x.iter().chain(h).copied())
            .collect();
        let bias = b_ih.iter().zip(&b_hh).map(|(a, b)| a + b).collect();
        let d = P::DECODER;
        let decoder = file.f32(names::DECODER, &[d.out_features, d.in_features, 1])?;
        let decoder_b = file.f32(names::DECODER_BIAS, &[d.out_features])?;
        Ok(Self {
            stft,
            conv0: conv(file, 0, P::CONV0)?,
            conv1: conv(file, 1, P::CONV1)?,
            conv2: conv(file, 2, P::CONV2)?,
            conv3: conv(file, 3, P::CONV3)?,
            lstm: LstmCell::new(l, weight, Some(bias))?,
            decoder: Linear::new(d, decoder, Some(decoder_b))?,
        })
    }
}
