//! Wyoming audio chunks to 16 kHz mono int16: [`ChunkConverter`].
//!
//! Every `audio-chunk` states its own `rate` (Hz), `width` (bytes per sample) and
//! `channels`; the payload is interleaved little-endian signed PCM. Conversion follows the
//! `wyoming` package's `AudioChunkConverter` (Python's `audioop`) where it is defined: width
//! 1, 3 and 4 are signed integers shifted to 16 bits (`lin2lin`: `v << 8`, `v >> 8`,
//! `v >> 16`, truncating); two channels become one as their clipped sum (`tomono` with
//! factors 1.0, 1.0). More channels, which `audioop` cannot convert, are averaged. Rates
//! other than 16 kHz go through the streaming resampler of `neon transcribe` and `neon wake`
//! ([`crate::audio::resample::Streaming`], an FFT resampler) instead of `audioop.ratecv`'s
//! linear interpolation: better filtering, and one FFT block of latency, flushed by
//! [`ChunkConverter::finish`].
//!
//! A chunk need not hold whole frames: the bytes of a frame it leaves incomplete are kept
//! and completed by the next chunk of the same width and channel count (Home Assistant's
//! satellites send whole frames; a client that cuts its stream at arbitrary bytes still
//! gives the same samples). A frame still incomplete at the end of the stream is dropped.

use crate::audio::resample::Streaming;
use std::format;
use std::prelude::rust_2021::*;

/// Largest rate accepted (Hz).
pub const MAX_RATE: u32 = 192_000;
/// Smallest rate accepted (Hz): the audio readers' floor ([`crate::audio::MIN_RATE`]).
pub const MIN_RATE: u32 = crate::audio::MIN_RATE;
/// Most 16 kHz samples one chunk may convert to (2^21, 131 s: what the largest payload
/// the event reader takes, 4 MiB, holds at 16 kHz 16-bit mono). A chunk at a low rate
/// expands: 4 MiB of 8-bit audio at 1 kHz would be 67 M samples; such a chunk is refused.
pub const MAX_CHUNK_SAMPLES: u64 = 1 << 21;
/// Largest frame: [`MAX_CHANNELS`] samples of 4 bytes.
const MAX_FRAME: usize = 4 * MAX_CHANNELS as usize;
/// Largest channel count accepted.
pub const MAX_CHANNELS: u32 = 32;

/// The converter of one client's audio: the resampler of the current rate.
#[derive(Default)]
pub struct ChunkConverter {
    resampler: Option<(u32, Streaming)>,
    /// The first bytes of a frame the last chunk left incomplete, and that chunk's frame
    /// size in bytes.
    partial: Vec<u8>,
    partial_frame: usize,
    mono: Vec<f32>,
    out: Vec<f32>,
}

/// The sample format of one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// Samples per second per channel ([`MIN_RATE`]..=[`MAX_RATE`]).
    pub rate: u32,
    /// Bytes per sample: 1, 2, 3 or 4.
    pub width: u32,
    /// Interleaved channels (1..=[`MAX_CHANNELS`]).
    pub channels: u32,
}

impl Format {
    /// Checks the format; the error is one line.
    ///
    /// # Errors
    /// A rate, width or channel count outside the accepted ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_RATE..=MAX_RATE).contains(&self.rate) {
            return Err(format!(
                "rate {} Hz is not supported ({MIN_RATE} to {MAX_RATE})",
                self.rate
            ));
        }
        if !(1..=4).contains(&self.width) {
            return Err(format!("width {} is not supported (1 to 4 bytes)", self.width));
        }
        if self.channels == 0 || self.channels > MAX_CHANNELS {
            return Err(format!(
                "{} channels are not supported (1 to {MAX_CHANNELS})",
                self.channels
            ));
        }
        Ok(())
    }
}

/// One sample of `width` bytes (little endian, signed) as 16 bits, as `audioop.lin2lin`.
fn to_i16(b: &[u8], width: u32) -> i32 {
    match width {
        1 => i32::from(b[0] as i8) << 8,
        2 => i32::from(i16::from_le_bytes([b[0], b[1]])),
        3 => (i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) >> 8,
        _ => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) >> 16,
    }
}

impl ChunkConverter {
    /// Converts one chunk's `payload` of `format`, appending 16 kHz mono samples to `out`.
    /// A trailing partial frame (fewer bytes than `width * channels`) is kept for the next
    /// chunk (module docs).
    ///
    /// # Errors
    /// An invalid format ([`Format::validate`]) or a chunk that would convert to more than
    /// [`MAX_CHUNK_SAMPLES`] (nothing is kept of the chunk), or the resampler's failure.
    pub fn push(
        &mut self,
        format: Format,
        payload: &[u8],
        out: &mut Vec<i16>,
    ) -> Result<(), String> {
        format.validate()?;
        let (w, c) = (format.width as usize, format.channels as usize);
        let frame = w * c;
        let frames = (payload.len() + self.partial.len()) / frame;
        let converted = (frames as u64 * 16_000).div_ceil(u64::from(format.rate));
        if converted > MAX_CHUNK_SAMPLES {
            return Err(format!(
                "an audio chunk of {frames} frames at {} Hz is {:.0} s of audio, more than the \
                 {} s one chunk may hold",
                format.rate,
                frames as f64 / f64::from(format.rate),
                MAX_CHUNK_SAMPLES / 16_000
            ));
        }
        let mix = |frame: &[u8]| {
            let mut vals = frame.chunks_exact(w).map(|s| to_i16(s, format.width));
            match c {
                1 => vals.next().unwrap_or(0),
                2 => (vals.next().unwrap_or(0) + vals.next().unwrap_or(0)).clamp(-32768, 32767),
                _ => vals.sum::<i32>() / c as i32,
            }
        };
        // Complete the frame the last chunk began, if this chunk has its layout.
        let mut payload = payload;
        let mut first = [0u8; MAX_FRAME];
        let mut completed = false;
        if !self.partial.is_empty() && self.partial_frame == frame {
            let need = frame - self.partial.len();
            if payload.len() < need {
                self.partial.extend_from_slice(payload);
                return Ok(());
            }
            first[..self.partial.len()].copy_from_slice(&self.partial);
            first[self.partial.len()..frame].copy_from_slice(&payload[..need]);
            payload = &payload[need..];
            completed = true;
        }
        let whole = payload.len() / frame * frame;
        self.partial.clear();
        self.partial.extend_from_slice(&payload[whole..]);
        self.partial_frame = frame;
        let head = completed.then(|| mix(&first[..frame]));
        let frames = head.into_iter().chain(payload[..whole].chunks_exact(frame).map(mix));
        if format.rate == 16_000 {
            if let Some((_, r)) = self.resampler.take() {
                self.flush(r, out)?;
            }
            out.extend(frames.map(|v| v as i16));
            return Ok(());
        }
        if self.resampler.as_ref().is_some_and(|(rate, _)| *rate != format.rate) {
            if let Some((_, r)) = self.resampler.take() {
                self.flush(r, out)?;
            }
        }
        if self.resampler.is_none() {
            self.resampler = Some((format.rate, Streaming::new(format.rate)?));
        }
        self.mono.clear();
        self.mono.extend(frames.map(|v| v as f32 / 32768.0));
        self.out.clear();
        if let Some((_, r)) = self.resampler.as_mut() {
            r.push(&self.mono, &mut self.out)?;
        }
        out.extend(self.out.iter().map(|&v| quantise(v)));
        Ok(())
    }

    fn flush(&mut self, mut r: Streaming, out: &mut Vec<i16>) -> Result<(), String> {
        self.out.clear();
        r.finish(&mut self.out)?;
        out.extend(self.out.iter().map(|&v| quantise(v)));
        Ok(())
    }

    /// Ends the stream: appends what the resampler still holds (nothing at 16 kHz).
    ///
    /// # Errors
    /// The resampler's failure.
    pub fn finish(&mut self, out: &mut Vec<i16>) -> Result<(), String> {
        self.partial.clear();
        match self.resampler.take() {
            Some((_, r)) => self.flush(r, out),
            None => Ok(()),
        }
    }

    /// Forgets any pending audio (a new `audio-start`).
    pub fn reset(&mut self) {
        self.resampler = None;
        self.partial.clear();
    }
}

fn quantise(v: f32) -> i16 {
    (v * 32768.0).round().clamp(-32768.0, 32767.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(format: Format, payload: &[u8]) -> Vec<i16> {
        let mut c = ChunkConverter::default();
        let mut out = Vec::new();
        c.push(format, payload, &mut out).unwrap();
        c.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn widths_and_channels_as_audioop() {
        let f = |width, channels| Format { rate: 16_000, width, channels };
        // The trailing byte begins a frame no chunk completes: dropped at the end.
        assert_eq!(conv(f(2, 1), &[0x34, 0x12, 0xff, 0xff, 7]), [0x1234, -1]);
        assert_eq!(conv(f(1, 1), &[0x7f, 0x80]), [0x7f00, -32768]);
        assert_eq!(conv(f(3, 1), &[0x56, 0x34, 0x12]), [0x1234]);
        assert_eq!(conv(f(4, 1), &[0x78, 0x56, 0x34, 0x12]), [0x1234]);
        assert_eq!(conv(f(4, 1), &[0, 0, 0xff, 0xff]), [-1], "truncating shift");
        // Stereo: clipped sum.
        let s = [0x00, 0x40, 0x00, 0x40, 0x10, 0x00, 0x20, 0x00];
        assert_eq!(conv(f(2, 2), &s), [32767, 0x30]);
        // Three channels: mean.
        let t = [3, 0, 6, 0, 9, 0];
        assert_eq!(conv(f(2, 3), &t), [6]);
    }

    #[test]
    fn other_rates_are_resampled_to_16k() {
        let format = Format { rate: 48_000, width: 2, channels: 1 };
        let tone: Vec<u8> = (0..48_000)
            .flat_map(|i| (((i as f32 * 0.05).sin() * 8000.0) as i16).to_le_bytes())
            .collect();
        let mut c = ChunkConverter::default();
        let mut out = Vec::new();
        for piece in tone.chunks(2048) {
            c.push(format, piece, &mut out).unwrap();
        }
        c.finish(&mut out).unwrap();
        assert_eq!(out.len(), 16_000);
    }

    #[test]
    fn chunks_cut_inside_frames_give_the_same_samples() {
        // 16-bit mono and 24-bit stereo at 16 and 48 kHz, cut every 1, 3 and 1023 bytes, and
        // at irregular places.
        for (rate, width, channels) in [(16_000, 2, 1), (16_000, 3, 2), (48_000, 2, 1)] {
            let format = Format { rate, width, channels };
            let frame = (width * channels) as usize;
            let bytes: Vec<u8> = (0..4_800 * frame).map(|i| (i * 7 % 251) as u8).collect();
            let want = conv(format, &bytes);
            assert_eq!(want.len(), if rate == 16_000 { 4_800 } else { 1_600 });
            for sizes in [&[1][..], &[3], &[1023], &[5, 1, 2, 900, 7]] {
                let mut c = ChunkConverter::default();
                let mut got = Vec::new();
                let mut at = 0;
                for &n in sizes.iter().cycle() {
                    if at >= bytes.len() {
                        break;
                    }
                    let end = (at + n).min(bytes.len());
                    c.push(format, &bytes[at..end], &mut got).unwrap();
                    at = end;
                }
                c.finish(&mut got).unwrap();
                assert_eq!(got, want, "{format:?} in pieces of {sizes:?}");
            }
        }
        // A new layout does not complete another layout's frame; reset forgets it.
        let mut c = ChunkConverter::default();
        let mut got = Vec::new();
        let mono = Format { rate: 16_000, width: 2, channels: 1 };
        c.push(Format { channels: 2, ..mono }, &[1, 0, 2], &mut got).unwrap();
        c.push(mono, &[4, 0], &mut got).unwrap();
        c.push(mono, &[9], &mut got).unwrap();
        c.reset();
        c.push(mono, &[5, 0], &mut got).unwrap();
        assert_eq!(got, [4, 5]);
    }

    #[test]
    fn bad_formats_are_errors() {
        for (rate, width, channels) in [
            (0, 2, 1),
            (1, 2, 1),
            (999, 2, 1),
            (16_000, 0, 1),
            (16_000, 5, 1),
            (16_000, 2, 0),
            (999_999, 2, 1),
        ] {
            let mut out = Vec::new();
            assert!(ChunkConverter::default()
                .push(Format { rate, width, channels }, &[0; 8], &mut out)
                .is_err());
        }
        // A chunk that expands past 131 s of 16 kHz audio: an error, nothing converted.
        let mut c = ChunkConverter::default();
        let mut out = Vec::new();
        let low = Format { rate: 1_000, width: 1, channels: 1 };
        let e = c.push(low, &vec![0; 200_000], &mut out).unwrap_err();
        assert!(e.contains("200000 frames at 1000 Hz is 200 s"), "{e}");
        assert!(out.is_empty());
        // At 16 kHz the largest payload the reader takes fits.
        let top = Format { rate: 16_000, width: 2, channels: 1 };
        c.push(top, &vec![0; crate::wyoming::event::MAX_PAYLOAD_BYTES], &mut out).unwrap();
        assert_eq!(out.len() as u64, MAX_CHUNK_SAMPLES);
    }
}
