//! openWakeWord: the mel frontend, the speech-embedding CNN and the wake-word heads.
//!
//! Facts about the official models (layer shapes, streaming semantics) are checked against
//! the official runtime by the converter in `tools/openwakeword/`.

pub mod mel;
