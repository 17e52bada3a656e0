//! Moonshine base-en for the benchmarks: the converted model and `beckett.wav` from
//! `models/moonshine/` (written by `tools/moonshine/fetch.sh`, not in the repository), the
//! decoder position every benchmark measures (`neon_models::moonshine::reference`, shared
//! with `neon bench`, re-exported here), and the workloads' FLOPs.
//!
//! Used by the criterion bench `benches/moonshine.rs`, the host timing binary
//! `time_moonshine` and the aarch64 instruction-count binary `insn_moonshine`. It reads the
//! files with the benches' own `std`, so `neon-models` needs only `alloc` (aarch64 builds stay
//! without `std` in the runtime).

use std::path::PathBuf;

use neon_models::error::WeightsSource;
use neon_models::moonshine::load::MoonshineWeights;
use neon_models::moonshine::tokenizer::Tokenizer;
use neon_models::moonshine::transcriber::{MoonshineModel, Transcriber};
use neon_models::moonshine::{encoder_frames, D_MODEL, LAYERS, MIN_SAMPLES, MLP_HIDDEN, VOCAB};
use neon_models::weights::TensorFile;
use neon_runtime::Backend;

/// The command that fetches and converts the model.
pub const FETCH_COMMAND: &str = "tools/moonshine/fetch.sh";

pub use neon_models::moonshine::reference::{
    prefill, prefill_in, BECKETT_FRAMES, BECKETT_TOKENS, SHORT_SAMPLES, STEP_POSITION,
};

/// A file of `models/moonshine/`.
pub fn model_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/moonshine").join(name)
}

fn read(name: &str) -> Result<Vec<u8>, String> {
    let path = model_path(name);
    std::fs::read(&path).map_err(|e| {
        format!(
            "{}: {e}; run {FETCH_COMMAND} (downloads and converts the official model)",
            path.display()
        )
    })
}

/// The converted model on backend `B` (weights prepared, every buffer allocated), or a
/// message naming the missing file and the command that creates it.
pub fn open<B: Backend>() -> Result<Transcriber, String> {
    let bytes = read("base-en.safetensors")?;
    let source = WeightsSource::Embedded("models/moonshine/base-en.safetensors");
    let file = TensorFile::parse(&bytes, source).map_err(|e| e.to_string())?;
    let weights = MoonshineWeights::load(&file).map_err(|e| e.to_string())?;
    let tokenizer = Tokenizer::parse(&read("tokenizer.bin")?).map_err(|e| e.to_string())?;
    Transcriber::on::<B>(MoonshineModel::new(weights, tokenizer)).map_err(|e| e.to_string())
}

/// beckett.wav (9.96 s, 16 kHz mono int16) as the model takes it: `int16 / 32768`, the
/// samples `tools/moonshine` feeds ONNX Runtime.
pub fn beckett() -> Result<Vec<f32>, String> {
    let pcm = crate::wav_i16(&read("beckett.wav")?);
    Ok(pcm.iter().map(|&v| f32::from(v) / 32768.0).collect())
}

/// Multiply-adds of `Transcriber::encode` on `samples` samples, by part: `(stem, layers,
/// cross_kv)`.
///
/// With `T1`, `T2`, `T` the frames after each stem conv (fewer than [`MIN_SAMPLES`] samples
/// are padded to it, as `encode` does), the counts are the products' sizes:
/// - stem: conv1 `T1 · 416 · 127` + conv2 `T2 · 832 · 416 · 7` + conv3 `T · 416 · 832 · 3`;
/// - per encoder layer (8): the q, k, v, o projections `4 · T · 416²`, attention
///   `2 · T² · 416` (`q · k` and `p · v` over all heads) and the MLP `2 · T · 416 · 1664`;
/// - cross-attention keys and values of the 8 decoder layers (`encode` computes them):
///   `2 · 8 · T · 416²`.
///
/// Bias additions, norms, activations, rotary and the softmax count none.
pub fn encoder_macs(samples: usize) -> (u64, u64, u64) {
    let n = samples.max(MIN_SAMPLES);
    let t1 = (n - 127) / 64 + 1;
    let t2 = (t1 - 7) / 3 + 1;
    let t = encoder_frames(n);
    let (t1, t2, t, d, h) = (t1 as u64, t2 as u64, t as u64, D_MODEL as u64, MLP_HIDDEN as u64);
    let stem = t1 * d * 127 + t2 * 2 * d * d * 7 + t * d * 2 * d * 3;
    let layer = 4 * t * d * d + 2 * t * t * d + 2 * t * d * h;
    let cross_kv = 2 * LAYERS as u64 * t * d * d;
    (stem, LAYERS as u64 * layer, cross_kv)
}

/// Multiply-adds of one decoder step at `position` (tokens already cached) over `frames`
/// encoder frames: per layer (8) the self-attention q, k, v, o and cross-attention q, o
/// projections `6 · 416²`, the MLP `416 · 3328 + 1664 · 416`, self-attention over
/// `position + 1` keys and cross-attention over `frames` keys, `2 · keys · 416` each; then the
/// tied LM head `416 · 32768`. The embedding lookup, norms, rotary and activations count none.
pub fn step_macs(position: usize, frames: usize) -> u64 {
    let (d, h) = (D_MODEL as u64, MLP_HIDDEN as u64);
    let keys = (position + 1 + frames) as u64;
    let layer = 6 * d * d + d * 2 * h + h * d + 2 * keys * d;
    LAYERS as u64 * layer + d * VOCAB as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_macs() {
        assert_eq!(encoder_frames(159_414), BECKETT_FRAMES);
        assert_eq!(encoder_frames(SHORT_SAMPLES), 82);
        // beckett: T1 = 2489, T2 = 828, T = 413 (moonshine.md).
        let (stem, layers, cross) = encoder_macs(159_414);
        assert_eq!(stem, 2489 * 416 * 127 + 828 * 832 * 416 * 7 + 413 * 416 * 832 * 3);
        assert_eq!(layers, 8 * (4 * 413 * 416 * 416 + 2 * 413 * 413 * 416 + 2 * 413 * 416 * 1664));
        assert_eq!(cross, 16 * 413 * 416 * 416);
        // The step's weights are 38.5 M int8 values (one multiply-add each).
        let weights = 8 * (6 * 416 * 416 + 416 * 3328 + 1664 * 416) + 416 * 32768;
        assert_eq!(weights, 38_551_552);
        assert_eq!(step_macs(7, 413), weights + 8 * 2 * (8 + 413) * 416);
    }
}
