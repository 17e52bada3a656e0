//! The interface between the container readers (`wav`, `codec`) and the stream that
//! resamples them (`stream`): a decoder of down-mixed mono samples, and what its header says.

use core::fmt;
use std::string::String;
use std::vec::Vec;

use super::AudioError;

/// A source of down-mixed mono samples at the input's own rate, full scale.
pub(super) trait Decode: Send {
    /// Appends the next samples (one packet or block) to `mono` and returns how many; 0 at the
    /// end of the stream.
    fn next(&mut self, mono: &mut Vec<f32>) -> Result<usize, AudioError>;
}

/// What an input holds, from its header (before down-mixing and resampling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// Sample rate of the input, in Hz.
    pub sample_rate: u32,
    /// Channel count of the input (down-mixed by averaging).
    pub channels: u16,
    /// The encoding, e.g. `16-bit integer PCM`, `24-bit integer PCM in 32-bit containers`,
    /// `32-bit float PCM`, `FLAC, 16-bit`, `Vorbis`.
    pub format: String,
    /// Length in frames (samples per channel) as the header declares it; `None` when it does
    /// not (a WAV written to a pipe, an Ogg stream).
    pub frames: Option<u64>,
}

impl fmt::Display for StreamInfo {
    /// For example `44100 Hz, 2 channels, 16-bit integer PCM, 3.250 s` (the duration only
    /// when the header declares the length).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.channels == 1 { "" } else { "s" };
        write!(f, "{} Hz, {} channel{s}, {}", self.sample_rate, self.channels, self.format)?;
        if let Some(frames) = self.frames {
            write!(f, ", {:.3} s", frames as f64 / f64::from(self.sample_rate))?;
        }
        Ok(())
    }
}
