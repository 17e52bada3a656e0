//! [`AudioError`]: everything that can go wrong reading audio input.

use core::fmt;
use std::string::String;

/// Why audio input could not be read. `Display` is one line naming the file (`name`, the path
/// as given, or `<stdin>`) and the problem.
#[derive(Debug)]
#[non_exhaustive]
pub enum AudioError {
    /// The file could not be opened or read (missing, permissions, I/O error).
    Io {
        /// The file.
        name: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The bytes are neither a RIFF/WAVE, a FLAC nor an Ogg file (e.g. a text file, an empty
    /// file, an AVI).
    NotWav {
        /// The file.
        name: String,
        /// What was found instead.
        reason: String,
    },
    /// The file ends inside the WAV header, before the first sample.
    TruncatedHeader {
        /// The file.
        name: String,
        /// File length in bytes.
        len: u64,
    },
    /// The data chunk is shorter than its header declares (or a raw stream ended inside a
    /// sample).
    TruncatedData {
        /// The file.
        name: String,
        /// Bytes of sample data the header declares.
        declared: u64,
        /// Bytes of sample data present.
        available: u64,
    },
    /// The header is present but inconsistent (e.g. a data length that is not a whole number
    /// of frames, a zero sample rate).
    Malformed {
        /// The file.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A well-formed file in an encoding that is not read (e.g. ADPCM, A-law, 64-bit float,
    /// RF64, Opus in Ogg, a sample rate outside 1 to 768 kHz).
    Unsupported {
        /// The file.
        name: String,
        /// The encoding found.
        format: String,
    },
    /// The file has a valid header but no samples.
    NoSamples {
        /// The file.
        name: String,
    },
    /// A float sample is NaN or infinite.
    NonFinite {
        /// The file.
        name: String,
        /// Index of the frame (sample per channel) holding it.
        frame: u64,
        /// Channel holding it.
        channel: u16,
    },
    /// A FLAC or Ogg/Vorbis stream could not be decoded (a corrupt packet, a stream shorter
    /// than its header declares).
    Decode {
        /// The file.
        name: String,
        /// The decoder's message.
        reason: String,
    },
    /// The clip has fewer 16 kHz samples than a consumer needs (see
    /// [`Audio::require_min_samples`](super::Audio::require_min_samples)).
    TooShort {
        /// The file.
        name: String,
        /// The consumer that needs more samples.
        what: String,
        /// Samples available, at 16 kHz.
        samples: usize,
        /// Samples needed, at 16 kHz.
        min: usize,
    },
    /// The resampler rejected its configuration (not expected for any rate accepted by the
    /// reader).
    Resample {
        /// The file.
        name: String,
        /// The resampler's message.
        reason: String,
    },
}

impl AudioError {
    pub(crate) fn io(name: &str, source: std::io::Error) -> AudioError {
        AudioError::Io { name: name.into(), source }
    }

    /// The file (or `<stdin>`) the error is about.
    pub fn name(&self) -> &str {
        match self {
            AudioError::Io { name, .. }
            | AudioError::NotWav { name, .. }
            | AudioError::TruncatedHeader { name, .. }
            | AudioError::TruncatedData { name, .. }
            | AudioError::Malformed { name, .. }
            | AudioError::Unsupported { name, .. }
            | AudioError::NoSamples { name }
            | AudioError::NonFinite { name, .. }
            | AudioError::Decode { name, .. }
            | AudioError::TooShort { name, .. }
            | AudioError::Resample { name, .. } => name,
        }
    }
}

/// Milliseconds of `n` samples at 16 kHz.
fn ms(n: usize) -> f64 {
    n as f64 / 16.0
}

impl fmt::Display for AudioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AudioError::Io { name, source } => write!(f, "cannot read {name}: {source}"),
            AudioError::NotWav { name, reason } => {
                write!(f, "{name}: not a WAV, FLAC or Ogg file ({reason})")
            }
            AudioError::TruncatedHeader { name, len } => {
                write!(f, "{name}: truncated WAV header (the file ends after {len} bytes)")
            }
            AudioError::TruncatedData { name, declared, available } => {
                write!(f, "{name}: truncated sample data ({available} of {declared} bytes present)")
            }
            AudioError::Malformed { name, reason } => write!(f, "{name}: malformed WAV: {reason}"),
            AudioError::Unsupported { name, format } => {
                write!(f, "{name}: unsupported encoding: {format}")
            }
            AudioError::NoSamples { name } => write!(f, "{name}: the file has no samples"),
            AudioError::NonFinite { name, frame, channel } => {
                write!(f, "{name}: float sample at frame {frame}, channel {channel} is not finite")
            }
            AudioError::Decode { name, reason } => write!(f, "{name}: cannot decode: {reason}"),
            AudioError::TooShort { name, what, samples, min } => write!(
                f,
                "{name}: too short for {what}: {samples} samples at 16 kHz ({:.1} ms), \
                 need at least {min} ({:.1} ms)",
                ms(*samples),
                ms(*min)
            ),
            AudioError::Resample { name, reason } => {
                write!(f, "{name}: resampling to 16 kHz failed: {reason}")
            }
        }
    }
}

impl std::error::Error for AudioError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AudioError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
