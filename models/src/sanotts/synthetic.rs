//! The seeded synthetic voice and hidden states of `sanotts.md` (feature `synthetic`, part
//! of `std`: the generator uses `std`'s `f64::ln`, `cos` and `sqrt`).
//!
//! Generator: SplitMix64 (Steele, Lea and Flood 2014; the `splitmix64` of Vigna's
//! reference code: add `0x9E3779B97F4A7C15` to the state, then mix it) seeded with the
//! voice's seed. Each standard normal value is one Box-Muller draw from two consecutive
//! outputs `x1`, `x2`: `u1 = (x1 >> 11) 2^-53 + 2^-54` (in `(0, 1)`, so `ln u1` is finite),
//! `u2 = (x2 >> 11) 2^-53`, `z = sqrt(-2 ln u1) cos(2 pi u2)` (the sine half is discarded).
//!
//! The voice ([`voice`], seed [`VOICE_SEED`]) draws its tensors in the order of
//! [`TENSORS`], each row-major, scaled by kind ([`Kind`]): conv and linear weights
//! `z / sqrt(fan_in)`, biases and the speaker embedding `0.1 z`, norm weights `1 + 0.1 z`,
//! norm biases `0.1 z`; the layer scales are exactly 0.1 and take no draw. Values are
//! computed in f64 and rounded once to f32.
//!
//! Test inputs ([`hidden_states`], seed [`HIDDEN_SEED`]): `[192, frames]` of standard
//! normal values drawn row-major (channel 0's frames first). The Python / ONNX peer in
//! `tools/` uses the same conventions; keep them exactly.

use std::sync::Arc;
use std::vec::Vec;

use super::load::VoiceWeights;
use super::names::{Kind, TENSORS};
use super::voice::Voice;
use super::HIDDEN;
use crate::error::{Error, WeightsSource};

/// Seed of the built-in synthetic voice.
pub const VOICE_SEED: u64 = 0x5A70;
/// Seed of a second voice the tests use ("other random weights").
pub const SECOND_VOICE_SEED: u64 = 0x5A71;
/// Seed of the test hidden states.
pub const HIDDEN_SEED: u64 = 0xB1D0;

/// SplitMix64: a 64-bit state advanced by a constant, each output a mix of the state.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose state starts at `seed`.
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next standard normal value: one Box-Muller draw from the next two outputs
    /// (module docs).
    pub fn next_normal(&mut self) -> f64 {
        let (x1, x2) = (self.next_u64(), self.next_u64());
        let u1 = (x1 >> 11) as f64 * (-53f64).exp2() + (-54f64).exp2();
        let u2 = (x2 >> 11) as f64 * (-53f64).exp2();
        (-2.0 * u1.ln()).sqrt() * (2.0 * core::f64::consts::PI * u2).cos()
    }
}

/// The tensors of the synthetic voice of `seed`, in [`TENSORS`] order (module docs).
pub fn voice_tensors(seed: u64) -> Vec<Vec<f32>> {
    let mut rng = SplitMix64::new(seed);
    TENSORS
        .iter()
        .map(|spec| {
            let n = spec.len();
            let scale = 1.0 / (spec.fan_in() as f64).sqrt();
            (0..n)
                .map(|_| {
                    let v = match spec.kind {
                        Kind::Weight => rng.next_normal() * scale,
                        Kind::Bias | Kind::NormBias => 0.1 * rng.next_normal(),
                        Kind::NormWeight => 1.0 + 0.1 * rng.next_normal(),
                        Kind::LayerScale => 0.1,
                    };
                    v as f32
                })
                .collect()
        })
        .collect()
}

/// The synthetic voice of `seed` ([`VOICE_SEED`] is the built-in one).
///
/// # Errors
/// None in practice (every value is finite); [`Error::Weights`] if a tensor were not.
pub fn voice(seed: u64) -> Result<Voice, Error> {
    Voice::from_tensors(voice_tensors(seed), WeightsSource::Embedded("synthetic voice"))
}

/// The built-in synthetic voice ([`VOICE_SEED`]) folded and packed for the decoders: what
/// `neon vocode` runs without `--voice`, and the voice of the benchmarks (`neon bench`,
/// `benches/`).
///
/// # Errors
/// As [`voice`] and [`VoiceWeights::prepare`] (none in practice).
pub fn prepared_voice() -> Result<Arc<VoiceWeights>, Error> {
    Ok(Arc::new(VoiceWeights::prepare(&voice(VOICE_SEED)?)?))
}

/// Frames of one second of audio: 16,000 samples at [`super::HOP`] (128) samples per frame,
/// 125 (the benchmarks' sanoTTS workload).
pub const SECOND_FRAMES: usize = super::SAMPLE_RATE / super::HOP;

/// The metadata entries `neon vocode --save-voice` writes besides `architecture`.
pub fn voice_metadata(seed: u64) -> [(&'static str, std::string::String); 2] {
    [
        ("voice", std::format!("synthetic, SplitMix64 seed {seed:#X}")),
        ("generator", "sanotts.md: Box-Muller per two outputs, tensors in file order".into()),
    ]
}

/// Test hidden states `[192, frames]`, row-major, standard normal from [`HIDDEN_SEED`].
pub fn hidden_states(frames: usize) -> Vec<f32> {
    hidden_states_seeded(HIDDEN_SEED, frames)
}

/// Hidden states `[192, frames]`, row-major, standard normal from `seed`.
pub fn hidden_states_seeded(seed: u64, frames: usize) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..HIDDEN * frames).map(|_| rng.next_normal() as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vigna's reference `splitmix64` from state 0 (first outputs as its C code gives them).
    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn normals_have_unit_variance() {
        let mut r = SplitMix64::new(HIDDEN_SEED);
        let n = 100_000;
        let v: Vec<f64> = (0..n).map(|_| r.next_normal()).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.02 && (var - 1.0).abs() < 0.02, "{mean} {var}");
    }

    #[test]
    fn layer_scales_are_exactly_a_tenth_and_take_no_draw() {
        let t = voice_tensors(VOICE_SEED);
        for (spec, values) in TENSORS.iter().zip(&t) {
            assert_eq!(values.len(), spec.len());
            if spec.kind == Kind::LayerScale {
                assert!(values.iter().all(|&v| v == 0.1f32), "{}", spec.name);
            }
        }
    }
}
