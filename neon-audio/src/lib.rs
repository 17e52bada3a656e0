//! `neon-audio`: audio input for neon's programs and servers: WAV, FLAC and Ogg/Vorbis files
//! and streams as 16 kHz mono, raw s16le 16 kHz mono from a pipe, and the streaming resampler.
//! Depends on symphonia (FLAC, Ogg/Vorbis) and rubato (resampling); not on the models.
//!
//! The model APIs take 16 kHz mono samples. [`AudioStream`] decodes an input packet by packet
//! and resamples it as it is read (memory independent of the input's length; regular files,
//! FIFOs, `/dev/fd/N` and stdin alike); [`Audio::open`] collects a whole clip. Formats:
//! - WAV (parsed here, see `wav.rs`): integer PCM of any valid-bit count in 1- to 4-byte
//!   containers (8-bit unsigned; the valid bits are the top bits, as the format defines),
//!   32-bit IEEE float, plain or WAVE_FORMAT_EXTENSIBLE; any chunks before the data; the
//!   unknown sizes programs write to a pipe (the data then runs to the end of the input).
//! - FLAC and Ogg/Vorbis, decoded with symphonia.
//!
//! Any channel count (down-mixed by averaging) and any sample rate from 1 to 768 kHz
//! (resampled to 16 kHz, see [`resample`] for the resampler, its delay handling and its
//! passband). [`RawPcmReader`] reads headerless signed 16-bit little-endian mono samples, as
//! written by `arecord -f S16_LE -r 16000 -c 1`, in chunks as they arrive.
//!
//! Scales: [`Audio::samples`] holds full-scale `f32` values in `[-1, 1)`, i.e. an integer
//! sample `v` in a `b`-bit container maps to `v / 2^(b-1)`. openWakeWord wants int16 sample
//! values (as `f32`, not divided by 32768): use [`Audio::to_i16`] / [`Audio::to_i16_scale`] or
//! [`f32_to_i16`].
//!
//! Errors are [`AudioError`]s whose one-line `Display` names the file and the problem; no input
//! makes this crate panic.

mod codec;
mod decode;
mod error;
mod raw;
pub mod resample;
mod stream;
mod wav;

pub use decode::StreamInfo;
pub use error::AudioError;
pub use raw::RawPcmReader;
pub use stream::{is_container, AudioStream};
pub use wav::MIN_RATE;

use core::fmt;
use std::string::String;
use std::vec::Vec;

/// The sample rate of every [`Audio`], in Hz: the rate the models are trained on.
pub const SAMPLE_RATE: u32 = 16_000;

/// Largest `f32` below 1.0 (`1 - 2^-24`): the top of the `[-1, 1)` sample range.
pub const MAX_BELOW_ONE: f32 = 1.0 - f32::EPSILON / 2.0;

/// What a clip held before down-mixing and resampling (for reporting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipInfo {
    /// Original sample rate, in Hz.
    pub sample_rate: u32,
    /// Original channel count (down-mixed by averaging).
    pub channels: u16,
    /// Original encoding (see [`StreamInfo::format`]).
    pub format: String,
    /// Original length in frames (samples per channel), as decoded.
    pub frames: u64,
}

impl ClipInfo {
    /// Original duration in seconds: `frames / sample_rate`.
    pub fn duration_seconds(&self) -> f64 {
        self.frames as f64 / f64::from(self.sample_rate)
    }
}

impl fmt::Display for ClipInfo {
    /// For example `44100 Hz, 2 channels, 16-bit integer PCM, 3.250 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.channels == 1 { "" } else { "s" };
        write!(
            f,
            "{} Hz, {} channel{s}, {}, {:.3} s",
            self.sample_rate,
            self.channels,
            self.format,
            self.duration_seconds()
        )
    }
}

/// A clip as the models take it: 16 kHz mono `f32` samples in `[-1, 1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Audio {
    /// Where the clip came from (the path as given), for messages.
    pub name: String,
    /// The clip at [`SAMPLE_RATE`] (16 kHz), mono, full scale `[-1, 1)`. Its length is
    /// `round(frames * 16000 / sample_rate)` samples of the original file (see [`ClipInfo`]).
    pub samples: Vec<f32>,
    /// The original rate, channels, encoding and length.
    pub info: ClipInfo,
    /// Number of samples that fell outside `[-1, 1]` (from a float file or from resampling
    /// overshoot near full scale) and were clamped into `[-1, 1)`.
    pub clipped: usize,
    /// Largest magnitude of the (down-mixed) samples as decoded, before resampling and
    /// clamping, full scale 1. Above 1 only for a float file: with [`Audio::clipped`] it
    /// tells the cause of clipping (a float file beyond full scale, e.g. stored at int16
    /// scale, when above 1; resampling overshoot of a file near full scale otherwise).
    pub source_peak: f32,
}

impl Audio {
    /// Reads a whole file of any supported format, encoding, channel count and sample rate,
    /// and returns it as 16 kHz mono (see the [module documentation](self)), collected from an
    /// [`AudioStream`] (which see for the kinds of file read).
    ///
    /// # Errors
    /// As [`AudioStream::open`] and [`AudioStream::read`].
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Audio, AudioError> {
        Audio::collect(AudioStream::open(path)?)
    }

    /// Like [`Audio::open`], from any seekable byte source (a file, an in-memory
    /// `std::io::Cursor`); `name` is used in messages. The source is read from its start.
    ///
    /// # Errors
    /// As [`AudioStream::from_seekable`] and [`AudioStream::read`].
    pub fn from_reader<R: std::io::Read + std::io::Seek + Send + Sync + 'static>(
        name: impl Into<String>,
        reader: R,
    ) -> Result<Audio, AudioError> {
        Audio::collect(AudioStream::from_seekable(name, reader)?)
    }

    /// Reads `stream` to its end.
    fn collect(mut stream: AudioStream) -> Result<Audio, AudioError> {
        let mut samples = Vec::new();
        while stream.read(&mut samples)? > 0 {}
        let info = stream.info();
        let info = ClipInfo {
            sample_rate: info.sample_rate,
            channels: info.channels,
            format: info.format.clone(),
            frames: stream.frames_decoded(),
        };
        Ok(Audio {
            name: stream.name().into(),
            samples,
            info,
            clipped: stream.clipped(),
            source_peak: stream.source_peak(),
        })
    }

    /// Number of 16 kHz samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are no samples (never true for an [`Audio`] read from a file).
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Duration of the original file in seconds (`frames / sample_rate`); the 16 kHz samples
    /// span the same time to within half a 16 kHz sample.
    pub fn duration_seconds(&self) -> f64 {
        self.info.duration_seconds()
    }

    /// The samples as int16 values: `round(x * 32768)` saturated to `[-32768, 32767]`
    /// (see [`f32_to_i16`]).
    pub fn to_i16(&self) -> Vec<i16> {
        self.samples.iter().map(|&x| f32_to_i16(x)).collect()
    }

    /// The samples as int16 values stored in `f32` (what openWakeWord's frontend takes:
    /// raw int16 sample values, not divided by 32768).
    pub fn to_i16_scale(&self) -> Vec<f32> {
        self.samples.iter().map(|&x| f32::from(f32_to_i16(x))).collect()
    }

    /// Checks that the clip has at least `min` samples at 16 kHz; `what` names the consumer
    /// in the message (e.g. `"openWakeWord (one 80 ms frame)"`).
    ///
    /// # Errors
    /// [`AudioError::TooShort`] if `self.len() < min`.
    pub fn require_min_samples(&self, min: usize, what: &str) -> Result<(), AudioError> {
        if self.samples.len() < min {
            return Err(AudioError::TooShort {
                name: self.name.clone(),
                what: what.into(),
                samples: self.samples.len(),
                min,
            });
        }
        Ok(())
    }
}

/// Full-scale `f32` to int16: `round(x * 32768)` (half away from zero), saturated to
/// `[-32768, 32767]`; NaN maps to 0.
pub fn f32_to_i16(x: f32) -> i16 {
    // `as` saturates out-of-range floats and maps NaN to 0.
    (x * 32768.0).round() as i16
}

/// int16 to full-scale `f32`: `v / 32768`, in `[-1, 1)` (exact).
pub fn i16_to_f32(v: i16) -> f32 {
    f32::from(v) / 32768.0
}

/// Clamps every sample into `[-1, MAX_BELOW_ONE]` and returns how many were outside `[-1, 1]`
/// (a value of exactly 1.0, e.g. a full-scale 32-bit integer rounded to `f32`, is clamped
/// without being counted).
fn clamp_full_scale(samples: &mut [f32]) -> usize {
    let mut clipped = 0;
    for x in samples {
        if !(-1.0..=1.0).contains(x) {
            clipped += 1;
        }
        *x = x.clamp(-1.0, MAX_BELOW_ONE);
    }
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i16_conversions_round_trip_and_saturate() {
        for v in [i16::MIN, -12345, -1, 0, 1, 12345, i16::MAX] {
            assert_eq!(f32_to_i16(i16_to_f32(v)), v);
        }
        assert_eq!(f32_to_i16(MAX_BELOW_ONE), i16::MAX);
        assert_eq!(f32_to_i16(1.5), i16::MAX);
        assert_eq!(f32_to_i16(-1.5), i16::MIN);
        assert_eq!(f32_to_i16(f32::NAN), 0);
        // Rounding, half away from zero: 0.5 / 32768 -> 1, -1.5 / 32768 -> -2.
        assert_eq!(f32_to_i16(0.5 / 32768.0), 1);
        assert_eq!(f32_to_i16(-1.5 / 32768.0), -2);
        assert_eq!(f32_to_i16(0.49 / 32768.0), 0);
    }

    /// A WAV of `samples` at 16 kHz mono, float or 16-bit, in memory.
    fn wav(samples: &[f32], float: bool) -> std::io::Cursor<Vec<u8>> {
        let (bits, format) =
            if float { (32, hound::SampleFormat::Float) } else { (16, hound::SampleFormat::Int) };
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: bits,
            sample_format: format,
        };
        let mut cursor = std::io::Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
        for &x in samples {
            if float {
                w.write_sample(x).unwrap();
            } else {
                w.write_sample((x * 32767.0) as i16).unwrap();
            }
        }
        w.finalize().unwrap();
        cursor.set_position(0);
        cursor
    }

    #[test]
    fn the_source_peak_tells_the_cause_of_clipping() {
        let a = Audio::from_reader("f.wav", wav(&[2.0, -3.0, 0.5], true)).unwrap();
        assert_eq!((a.clipped, a.source_peak), (2, 3.0));
        let a = Audio::from_reader("i.wav", wav(&[1.0, -1.0, 0.5], false)).unwrap();
        assert!(a.source_peak <= 1.0 && a.source_peak > 0.99, "{}", a.source_peak);
    }

    #[test]
    fn clamping_counts_only_values_beyond_full_scale() {
        let mut x = [-1.25, -1.0, 0.0, 1.0, 1.5, 0.5];
        assert_eq!(clamp_full_scale(&mut x), 2);
        assert_eq!(x, [-1.0, -1.0, 0.0, MAX_BELOW_ONE, MAX_BELOW_ONE, 0.5]);
    }
}
