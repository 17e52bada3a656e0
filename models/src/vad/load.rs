//! Loading the converted Silero VAD weights (`models/vad/silero_vad.safetensors`, written
//! by `tools/silero_vad/convert.py`) into [`SileroVadWeights`].
//!
//! Every tensor is f32 and checked for presence, dtype, exact shape and finite values
//! ([`TensorFile::f32`]). Two folds happen here, once: the LSTM's input and recurrent
//! weights are placed side by side, `[W_ih | W_hh]` `[512, 256]`, and its two biases added
//! (`b_ih + b_hh` in f32, as ONNX Runtime's LSTM adds them before the gates), the form
//! [`LstmCell`] takes; the output conv's `[1, 128, 1]` weight is read as a linear layer
//! `[1, 128]` (the same values: a 1x1 conv over one frame).
//!
//! The STFT basis `[258, 1, 256]` becomes the window of [`StftMagnitude`]: its row 0 (bin
//! 0's real part, `w[j] cos 0 = w[j]`). The plan computes the STFT by FFT, which is that
//! basis only when the basis is `w[j] cos(2 pi j k / 256)` (rows `k = 0..=128`) and then
//! `-w[j] sin(2 pi j k / 256)`: every entry is checked against that form built from row 0
//! ([`window_from_basis`]), so a model with another basis is refused, not misread.

use alloc::vec::Vec;

use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::linear::Linear;
use neon_runtime::ops::lstm::LstmCell;
use neon_runtime::ops::stft::StftMagnitude;

use super::names;
use super::network::{SileroVad, SileroVadWeights};
use crate::error::{Error, WeightsReason};
use crate::weights::TensorFile;

/// Encoder conv `i` with the plan's geometry `g`.
fn conv(file: &TensorFile<'_>, i: usize, g: Conv1dGeometry) -> Result<Conv1d<Vec<f32>>, Error> {
    let (w, b) = names::ENCODER[i];
    let weight = file.f32(w, &[g.out_channels, g.in_channels / g.groups, g.kernel])?;
    let bias = file.f32(b, &[g.out_channels])?;
    Ok(Conv1d::new(g, weight, Some(bias))?)
}

/// Largest difference allowed between an entry of the STFT basis and `w[j] cos(2 pi j k /
/// n)` (or `-w[j] sin`) from its row 0 `w`, computed in f64 from the exact `cos` and `sin`
/// of `j k mod n` turns / n.
///
/// Silero VAD's basis is within 7.7e-8 of it (`tools/silero_vad/README.md`: the rounding of
/// entries below 1 to f32, `2^-25 = 3.0e-8`, and of the converter's f32 cos and sin). 1e-6
/// allows 13 times that, while another window (Hamming against Hann differs by up to 0.08),
/// another scale, sign or bin order differs by far more. A basis within it gives bins within
/// `256 * 1e-6 = 2.6e-4` of the FFT's for samples in `[-1, 1]` (the per-entry difference
/// times the frame's sum of `|x|`); the real one's 7.7e-8 gives 2e-5.
pub const BASIS_TOLERANCE: f32 = 1e-6;

/// The analysis window of an STFT basis `[n + 2, 1, n]` (rows `k = 0..=n/2`: `w[j] cos(2 pi
/// j k / n)`, then `-w[j] sin(2 pi j k / n)`): row 0, once every entry is checked within
/// [`BASIS_TOLERANCE`] of that form.
///
/// # Errors
/// [`Error::Weights`] naming [`names::STFT`]: a basis of another length than `(n + 2) n`,
/// or the first entry that differs.
pub fn window_from_basis(
    file: &TensorFile<'_>,
    basis: &[f32],
    n: usize,
) -> Result<Vec<f32>, Error> {
    let bins = n / 2 + 1;
    if n == 0 || basis.len() != 2 * bins * n {
        return Err(Error::Weights {
            source: file.source().clone(),
            tensor: names::STFT,
            reason: WeightsReason::Shape { expected: [2 * bins, 1, n, 0], rank: 3 },
        });
    }
    let window = basis[..n].to_vec();
    // cos and sin of `i / n` turns, `i < n`: the angle of `j k` is `j k mod n`.
    let (cos, sin): (Vec<f64>, Vec<f64>) = (0..n as u64)
        .map(|i| {
            let (s, c) = neon_runtime::kernels::fft::sin_cos_turns(i, n as u64);
            (c, s)
        })
        .unzip();
    for (r, row) in basis.chunks_exact(n).enumerate() {
        let (k, imaginary) = if r < bins { (r, false) } else { (r - bins, true) };
        for (j, (&b, &w)) in row.iter().zip(&window).enumerate() {
            let i = (j * k) % n;
            let want = if imaginary { -(w as f64) * sin[i] } else { w as f64 * cos[i] };
            if (b as f64 - want).abs() > BASIS_TOLERANCE as f64 {
                let part = if imaginary { "-w sin" } else { "w cos" };
                return Err(Error::Weights {
                    source: file.source().clone(),
                    tensor: names::STFT,
                    reason: WeightsReason::Invalid(alloc::format!(
                        "not a windowed DFT basis: row {r} (bin {k}, {part}), column {j} is {b}, \
                         row 0's window gives {want} (tolerance {BASIS_TOLERANCE:e})"
                    )),
                });
            }
        }
    }
    Ok(window)
}

impl SileroVadWeights<Vec<f32>> {
    /// Loads and packs every tensor of a converted Silero VAD file ([`names`]).
    ///
    /// # Errors
    /// [`Error::Weights`] for a missing tensor, a wrong shape or dtype, or non-finite
    /// values.
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        type P = SileroVad;
        let g = P::STFT_WINDOW;
        let basis = file.f32(names::STFT, &[2 * g.bins(), 1, g.n_fft])?;
        let stft_window = StftMagnitude::new(g, window_from_basis(file, &basis, g.n_fft)?)?;
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
            stft_window,
            conv0: conv(file, 0, P::CONV0)?,
            conv1: conv(file, 1, P::CONV1)?,
            conv2: conv(file, 2, P::CONV2)?,
            conv3: conv(file, 3, P::CONV3)?,
            lstm: LstmCell::new(l, weight, Some(bias))?,
            decoder: Linear::new(d, decoder, Some(decoder_b))?,
        })
    }
}
