//! sanoTTS nano: the decoder of a small neural TTS, acoustic hidden states → 16 kHz
//! waveform (`sanotts.md` in the project's model notes defines it).
//!
//! No trained sanoTTS voice exists in public: the decoder is exercised with a seeded
//! synthetic voice ([`synthetic`], feature `synthetic`, part of `std`) and checked against
//! an independent f64 implementation; its output for that voice is noise-like audio.
//!
//! - [`decoder`]: the network as a plan (`[192, frames]` → `[frames, 514]` iSTFT frames)
//!   and the iSTFT head's geometry.
//! - [`names`]: the voice file's tensors; [`voice`]: reading, checking and writing voice
//!   files; [`load`]: folding a voice into the plan's operators (feature `alloc`).
//! - [`utterance`]: whole-utterance decoding ([`utterance::Decoder`]: plan + iSTFT);
//!   [`vocoder`]: streaming ([`vocoder::Vocoder`], any length, bounded look-ahead).
//! - [`files`] (feature `std`): voice files on disk, session options.

pub mod decoder;
#[cfg(feature = "std")]
pub mod files;
#[cfg(feature = "alloc")]
pub mod load;
pub mod names;
#[cfg(feature = "synthetic")]
pub mod synthetic;
#[cfg(feature = "alloc")]
pub mod utterance;
#[cfg(feature = "alloc")]
pub mod vocoder;
#[cfg(feature = "alloc")]
pub mod voice;

/// Channels of the acoustic hidden states (the decoder's input).
pub const HIDDEN: usize = 192;
/// Channels of the acoustic model's projection (mel-like): the input conv's input.
pub const MEL: usize = 80;
/// Channels inside the decoder.
pub const WIDTH: usize = 128;
/// Kernel of the input conv.
pub const KERNEL: usize = 7;
/// Channels of the ConvNeXt blocks' expanded (pointwise) layer: 3 × [`WIDTH`].
pub const EXPANDED: usize = 384;
/// Values per iSTFT frame: 257 log-magnitudes, then 257 phases.
pub const FRAME_VALUES: usize = 514;
/// Samples per hidden frame.
pub const HOP: usize = 128;
/// Audio sample rate in Hz.
pub const SAMPLE_RATE: usize = 16_000;
/// Most frames one plan run takes (the plan's bound); the [`vocoder::Vocoder`] streams
/// longer utterances.
pub const MAX_FRAMES: usize = 2000;
