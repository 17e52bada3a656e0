//! Silero VAD (voice activity detection, 16 kHz): one speech probability per 512-sample
//! window (32 ms), speech segments by silero-vad's `get_speech_timestamps` rule, and what
//! the rest of the crate builds on them.
//!
//! - [`network`]: the network as a `neon_plan!` (one window, the LSTM state carried by the
//!   caller); `no_std`.
//! - [`detector`]: [`Vad`](detector::Vad), the stream: samples in pieces of any size,
//!   probabilities out, bit for bit as silero-vad's `OnnxWrapper` feeds the network
//!   (feature `alloc`); the weights are embedded ([`WEIGHTS`]).
//! - [`segments`]: speech segments from the probabilities, as they become final.
//! - [`windows`]: the spans Moonshine decodes: speech with 100 ms around it, segments less
//!   than 2 s apart together, silence left out (feature `alloc`).
//!
//! Weights: PyPI `silero-vad` 6.2.3 (MIT, `models/vad/LICENSE.md`), converted by
//! `tools/silero_vad/` from `data/silero_vad_16k_op15.onnx`; probabilities checked against
//! ONNX Runtime on `data/silero_vad.onnx` (`models/vad/goldens/`).

#[cfg(feature = "alloc")]
pub mod detector;
#[cfg(feature = "alloc")]
pub mod load;
pub mod names;
pub mod network;
pub mod segments;
#[cfg(feature = "alloc")]
pub mod windows;

/// Sample rate of everything here (Hz).
pub const SAMPLE_RATE: usize = 16_000;
/// Samples per window: one probability per 512 samples (32 ms).
pub const WINDOW: usize = 512;
/// Samples of the previous window the network sees before each window.
pub const CONTEXT: usize = 64;

/// The converted Silero VAD weights (safetensors, about 1.2 MB), embedded in the program.
pub const WEIGHTS: &[u8] = include_bytes!("../../vad/silero_vad.safetensors");
