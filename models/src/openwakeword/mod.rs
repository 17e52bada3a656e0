//! openWakeWord: the mel frontend, the speech-embedding CNN and the wake-word heads.
//!
//! - [`mel`]: 16 kHz int16-scale audio -> `[frames, 32]` log-mel spectrogram in dB
//!   (built at compile time, no allocation), and openWakeWord's feature scaling.
//!
//! Facts about the official models (layer shapes, streaming semantics) are checked against
//! the official runtime by the converter in `tools/openwakeword/`.

#[cfg(feature = "std")]
pub mod builtin;
#[cfg(feature = "alloc")]
pub mod detector;
pub mod embedding;
pub mod head;
pub mod mel;
pub mod stream;
pub mod trigger;
