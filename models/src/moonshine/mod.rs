//! Moonshine base-en speech recognition (Useful Sensors, 2024): encoder, decoder, tokenizer
//! and greedy transcription.
//!
//! - [`encoder`]: the plans of the stem (raw 16 kHz audio → `[frames, 416]`, one frame per
//!   384 samples), of one encoder layer and of the final norm.
//! - [`decoder`]: the plans of one decoder layer (one token, KV caches owned by the caller),
//!   of the cross-attention keys and values (once per utterance) and of the LM head.
//! - `load` (feature `alloc`): the converted weights file → prepared operators (int8 kept).
//! - `tokenizer`, `transcriber` (greedy decoding, no allocation per step), `segment`
//!   (long audio cut at quiet points), `files` (feature `std`: opening `models/moonshine`),
//!   `reference` (the benchmarks' workloads: beckett.wav's tokens, the step measured).
//!
//! Facts about the official model (shapes, quantisation, tokenizer) are checked against ONNX
//! Runtime by the converter in `tools/moonshine/`; the weights file is not in the repository
//! (`tools/moonshine/fetch.sh` downloads and converts it).

pub mod decoder;
pub mod encoder;
#[cfg(feature = "std")]
pub mod files;
#[cfg(feature = "alloc")]
pub mod load;
#[cfg(feature = "alloc")]
mod names;
#[cfg(feature = "alloc")]
pub mod reference;
#[cfg(feature = "alloc")]
pub mod segment;
#[cfg(feature = "alloc")]
pub mod tokenizer;
#[cfg(feature = "alloc")]
pub mod transcriber;

/// Model width (channels of every activation).
pub const D_MODEL: usize = 416;
/// Attention heads.
pub const HEADS: usize = 8;
/// Dims per head: `D_MODEL / HEADS`.
pub const HEAD_DIM: usize = D_MODEL / HEADS;
/// Encoder layers; the decoder has as many.
pub const LAYERS: usize = 8;
/// Hidden width of the MLPs (the decoder's up-projection produces twice this: value, gate).
pub const MLP_HIDDEN: usize = 1664;
/// Vocabulary of the LM head (ids >= 32000 are special and never decoded).
pub const VOCAB: usize = 32768;
/// Token that starts decoding.
pub const BOS: u32 = 1;
/// Token that ends decoding.
pub const EOS: u32 = 2;
/// Audio sample rate in Hz.
pub const SAMPLE_RATE: usize = 16_000;
/// Fewest samples the encoder accepts (one output frame).
pub const MIN_SAMPLES: usize = 895;
/// Most samples one encoder run accepts (30 s); longer audio is split into segments.
pub const MAX_SAMPLES: usize = 480_000;
/// Encoder frames of `samples` samples (no padding anywhere in the stem); 0 below
/// [`MIN_SAMPLES`].
pub const fn encoder_frames(samples: usize) -> usize {
    if samples < MIN_SAMPLES {
        return 0;
    }
    (((samples - 127) / 64 + 1 - 7) / 3 + 1 - 3) / 2 + 1
}
/// Most encoder frames (of [`MAX_SAMPLES`]).
pub const MAX_FRAMES: usize = encoder_frames(MAX_SAMPLES);
/// Rows of each decoder self-attention KV cache: the most tokens fed in one utterance.
pub const CACHE: usize = 256;
