//! Resolving the blocks and the spectrogram (`residual_conv`, `convnext`,
//! `stft_magnitude`) into their geometry.

use neon_runtime::blocks::{ConvNeXtGeometry, ResidualConvGeometry};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::stft::StftMagnitudeGeometry;

use super::{block_sizes, weight_rank};
use super::{Call, Resolved};
use crate::ir::{BlockKind, Op};
use crate::options::Options;

/// The blocks and the spectrogram: `residual_conv`, `convnext`, `stft_magnitude`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, w, .. } = call;
    Ok(Some(match op {
        "residual_conv" => {
            let w = w.expect("signature has a weight");
            let (channels, k1, k2) = match *w.shape {
                [c, k] => (c, k, k),
                [c, k1, k2] => (c, k1, k2),
                _ => return Err(block_sizes(w, BlockKind::ResidualConv)),
            };
            let d = opts.tuple("dilations", 2, "`n` or `(first, second)`");
            let d = d.unwrap_or_else(|| vec![1, 1]);
            let relu = opts.flag("relu");
            let slope = opts.given_float("slope");
            let activation = match (slope, relu) {
                (Some(slope), false) => Activation::LeakyRelu { slope },
                (None, true) => Activation::Relu,
                (Some(_), true) => return Err(syn::Error::new(
                    callee.span(),
                    "residual_conv: give one activation, `slope = <number>` (leaky ReLU) or `relu`",
                )),
                (None, false) => return Err(syn::Error::new(
                    callee.span(),
                    "residual_conv needs its activation: `slope = <number>` (leaky ReLU) or `relu`",
                )),
            };
            Op::ResidualConv(
                ResidualConvGeometry::new(channels, k1, activation)
                    .kernels(k1, k2)
                    .dilations(d[0], d[1]),
            )
        }
        "convnext" => {
            let w = w.expect("signature has a weight");
            let &[channels, hidden, kernel] = w.shape else {
                return Err(block_sizes(w, BlockKind::ConvNeXt));
            };
            let eps = opts.float("eps", 1e-6);
            Op::ConvNeXt(ConvNeXtGeometry::new(channels, hidden, kernel).eps(eps))
        }
        "stft_magnitude" => {
            let w = w.expect("signature has a weight");
            let hop = opts.required_usize("hop", callee);
            weight_rank(op, Some(w), 1, "a window [n_fft]")?;
            // Rule: the window's length is a size of the runtime's real FFT.
            if !neon_runtime::kernels::fft::is_valid_len(w.shape[0]) {
                return Err(syn::Error::new(
                    w.name.span(),
                    format!(
                        "stft_magnitude expects a window of a power-of-two length in 16..=65536 (the real FFT's sizes), `{}` has shape {:?}",
                        w.name, w.shape
                    ),
                ));
            }
            let Some(hop) = hop else {
                return Ok(None);
            };
            Op::StftMagnitude(StftMagnitudeGeometry::new(w.shape[0], hop))
        }
        _ => unreachable!("dispatched by operator group"),
    }))
}
