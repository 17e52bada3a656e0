//! Wyoming audio chunks to 16 kHz mono int16: [`ChunkConverter`].
//!
//! Every `audio-chunk` states its own `rate` (Hz), `width` (bytes per sample) and
//! `channels`; the payload is interleaved little-endian signed PCM. Conversion follows the
//! `wyoming` package's `AudioChunkConverter` (Python's `audioop`) where it is defined: width
//! 1, 3 and 4 are signed integers shifted to 16 bits (`lin2lin`: `v << 8`, `v >> 8`,
//! `v >> 16`, truncating); two channels become one as their clipped sum (`tomono` with
//! factors 1.0, 1.0). More channels, which `audioop` cannot convert, are averaged. Rates
//! other than 16 kHz go through the streaming resampler of `neon transcribe` and `neon wake`
//! ([`neon_audio::resample::Streaming`], an FFT resampler) instead of `audioop.ratecv`'s
//! linear interpolation: better filtering, and one FFT block of latency, flushed by
//! [`ChunkConverter::finish`].
//!
//! Memory is bounded whatever the client sends: a chunk is converted [`PIECE_FRAMES`] frames
//! at a time, each piece handed to a [`Sink`] (the wake-word scorer, the speech cutter)
//! before the next is made; a chunk may not expand past [`MAX_CHUNK_SAMPLES`]; a rate whose
//! resampler would be large is refused ([`MAX_RESAMPLER_BLOCKS`]); and a converter keeps at
//! most two resamplers (the current rate's and the one before, so that a client switching
//! back and forth builds each once).
//!
//! A chunk need not hold whole frames: the bytes of a frame it leaves incomplete are kept
//! and completed by the next chunk of the same width and channel count (Home Assistant's
//! satellites send whole frames; a client that cuts its stream at arbitrary bytes still
//! gives the same samples). A frame still incomplete at the end of the stream is dropped.

use neon_audio::resample::Streaming;

/// Largest rate accepted (Hz).
pub const MAX_RATE: u32 = 192_000;
/// Smallest rate accepted (Hz): the audio readers' floor ([`neon_audio::MIN_RATE`]).
pub const MIN_RATE: u32 = neon_audio::MIN_RATE;
/// Most 16 kHz samples one chunk may convert to (2^21, 131 s: what the largest payload
/// the event reader takes, 4 MiB, holds at 16 kHz 16-bit mono). A chunk at a low rate
/// expands: 4 MiB of 8-bit audio at 1 kHz would be 67 M samples; such a chunk is refused.
pub const MAX_CHUNK_SAMPLES: u64 = 1 << 21;
/// Most samples (input and output together) in one FFT block of a client's resampler.
/// The blocks of [`neon_audio::resample::block_sizes`] grow as the rate shares fewer
/// factors with 16 kHz (8000 Hz: 3072, 44100 Hz: 4808, 192000 Hz: 13312; 44101 Hz:
/// 120202; 191999 Hz: 415998, a resampler of about 32 MB built in 70 ms), and a resampler
/// holds about 76 bytes per block sample, so this bounds one at about 5 MB: every rate
/// below 16769 Hz and every common rate is accepted.
pub const MAX_RESAMPLER_BLOCKS: usize = 1 << 16;
/// Largest frame: [`MAX_CHANNELS`] samples of 4 bytes.
const MAX_FRAME: usize = 4 * MAX_CHANNELS as usize;
/// Largest channel count accepted.
pub const MAX_CHANNELS: u32 = 32;

/// Frames converted at a time: a chunk is converted in pieces of this many frames, so what
/// a converter holds does not grow with the chunk (at most 16 × this many 16 kHz samples
/// for one piece at 1 kHz, 256 KiB as f32).
pub const PIECE_FRAMES: usize = 4096;

/// Where converted samples go, piece by piece (at most [`PIECE_FRAMES`] frames' worth at
/// a time); an error stops the conversion and is returned.
pub type Sink<'a> = dyn FnMut(&[i16]) -> Result<(), String> + 'a;

/// The converter of one client's audio: the resampler of the current rate, and the one of
/// the rate before it, kept for a client that switches back (building a resampler for a
/// rate prime to 16 kHz, such as 44101 Hz, takes tens of milliseconds).
#[derive(Default)]
pub struct ChunkConverter {
    resampler: Option<(u32, Streaming)>,
    /// The last resampler switched away from, flushed and reset.
    spare: Option<(u32, Streaming)>,
    /// The first bytes of a frame the last chunk left incomplete, and that chunk's frame
    /// size in bytes.
    partial: Vec<u8>,
    partial_frame: usize,
    /// One piece: mono f32 (input of the resampler), its output, and the 16-bit samples.
    mono: Vec<f32>,
    out: Vec<f32>,
    ints: Vec<i16>,
    /// Resamplers built (for the tests).
    built: usize,
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
        let (n_in, n_out) = neon_audio::resample::block_sizes(self.rate);
        if n_in + n_out > MAX_RESAMPLER_BLOCKS && self.rate != 16_000 {
            return Err(format!(
                "rate {} Hz is not supported: it shares too few factors with 16000 Hz (its \
                 resampler would need FFT blocks of {} samples, more than {MAX_RESAMPLER_BLOCKS}); \
                 use a common rate such as 8000, 11025, 22050, 44100 or 48000 Hz",
                self.rate,
                n_in + n_out
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
    /// Converts one chunk's `payload` of `format` to 16 kHz mono samples given to `sink` in
    /// pieces ([`PIECE_FRAMES`]). A trailing partial frame (fewer bytes than
    /// `width * channels`) is kept for the next chunk (module docs).
    ///
    /// # Errors
    /// An invalid format ([`Format::validate`]) or a chunk that would convert to more than
    /// [`MAX_CHUNK_SAMPLES`] (nothing of the chunk is converted), the resampler's failure,
    /// or the sink's error (the rest of the chunk is dropped).
    pub fn push(&mut self, format: Format, payload: &[u8], sink: &mut Sink) -> Result<(), String> {
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
        let mut frames = head.into_iter().chain(payload[..whole].chunks_exact(frame).map(mix));
        self.select(format.rate, sink)?;
        loop {
            self.ints.clear();
            match self.resampler.as_mut() {
                None => self.ints.extend(frames.by_ref().take(PIECE_FRAMES).map(|v| v as i16)),
                Some((_, r)) => {
                    self.mono.clear();
                    self.mono
                        .extend(frames.by_ref().take(PIECE_FRAMES).map(|v| v as f32 / 32768.0));
                    if self.mono.is_empty() {
                        break;
                    }
                    self.out.clear();
                    r.push(&self.mono, &mut self.out)?;
                    self.ints.extend(self.out.iter().map(|&v| quantise(v)));
                }
            }
            if self.ints.is_empty() {
                if self.resampler.is_none() {
                    break;
                }
                continue;
            }
            sink(&self.ints)?;
        }
        Ok(())
    }

    /// Makes the resampler of `rate` current (none at 16 kHz): the current one of another
    /// rate is flushed to `sink` and kept as the spare; the spare is reused when it has the
    /// rate.
    fn select(&mut self, rate: u32, sink: &mut Sink) -> Result<(), String> {
        if self.resampler.as_ref().is_some_and(|(r, _)| *r == rate) {
            return Ok(());
        }
        let next = match self.spare.take() {
            Some((r, s)) if r == rate => Some((r, s)),
            spare => {
                self.spare = spare;
                None
            }
        };
        if let Some((old, r)) = self.resampler.take() {
            self.retire(old, r, sink)?;
        }
        self.resampler = match next {
            Some(reused) => Some(reused),
            None if rate == 16_000 => None,
            None => {
                self.built += 1;
                Some((rate, Streaming::new(rate)?))
            }
        };
        Ok(())
    }

    /// Ends the stream of `r` (resampling from `rate`), its last samples given to `sink`,
    /// and keeps it as the spare.
    fn retire(&mut self, rate: u32, mut r: Streaming, sink: &mut Sink) -> Result<(), String> {
        let flushed = self.flush(&mut r, sink);
        r.reset();
        self.spare = Some((rate, r));
        flushed
    }

    /// The end of `r`'s stream, given to `sink`.
    fn flush(&mut self, r: &mut Streaming, sink: &mut Sink) -> Result<(), String> {
        self.out.clear();
        r.finish(&mut self.out)?;
        for piece in self.out.chunks(PIECE_FRAMES) {
            self.ints.clear();
            self.ints.extend(piece.iter().map(|&v| quantise(v)));
            sink(&self.ints)?;
        }
        Ok(())
    }

    /// Ends the stream: gives `sink` what the resampler still holds (nothing at 16 kHz).
    ///
    /// # Errors
    /// The resampler's failure or the sink's error.
    pub fn finish(&mut self, sink: &mut Sink) -> Result<(), String> {
        self.partial.clear();
        match self.resampler.take() {
            Some((rate, r)) => self.retire(rate, r, sink),
            None => Ok(()),
        }
    }

    /// Forgets any pending audio (a new `audio-start`).
    pub fn reset(&mut self) {
        if let Some((rate, mut r)) = self.resampler.take() {
            r.reset();
            self.spare = Some((rate, r));
        }
        self.partial.clear();
    }
}

fn quantise(v: f32) -> i16 {
    (v * 32768.0).round().clamp(-32768.0, 32767.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink appending to `out`.
    fn into(out: &mut Vec<i16>) -> impl FnMut(&[i16]) -> Result<(), String> + '_ {
        |piece| {
            out.extend_from_slice(piece);
            Ok(())
        }
    }

    fn conv(format: Format, payload: &[u8]) -> Vec<i16> {
        let mut c = ChunkConverter::default();
        let mut out = Vec::new();
        c.push(format, payload, &mut into(&mut out)).unwrap();
        c.finish(&mut into(&mut out)).unwrap();
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
            c.push(format, piece, &mut into(&mut out)).unwrap();
        }
        c.finish(&mut into(&mut out)).unwrap();
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
                    c.push(format, &bytes[at..end], &mut into(&mut got)).unwrap();
                    at = end;
                }
                c.finish(&mut into(&mut got)).unwrap();
                assert_eq!(got, want, "{format:?} in pieces of {sizes:?}");
            }
        }
        // A new layout does not complete another layout's frame; reset forgets it.
        let mut c = ChunkConverter::default();
        let mut got = Vec::new();
        let mono = Format { rate: 16_000, width: 2, channels: 1 };
        c.push(Format { channels: 2, ..mono }, &[1, 0, 2], &mut into(&mut got)).unwrap();
        c.push(mono, &[4, 0], &mut into(&mut got)).unwrap();
        c.push(mono, &[9], &mut into(&mut got)).unwrap();
        c.reset();
        c.push(mono, &[5, 0], &mut into(&mut got)).unwrap();
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
            // Rates that share too few factors with 16 kHz: a resampler of 8 and 32 MB.
            (44_101, 2, 1),
            (191_999, 2, 1),
        ] {
            let mut out = Vec::new();
            assert!(ChunkConverter::default()
                .push(Format { rate, width, channels }, &[0; 8], &mut into(&mut out))
                .is_err());
        }
        // A chunk that expands past 131 s of 16 kHz audio: an error, nothing converted.
        let mut c = ChunkConverter::default();
        let mut out = Vec::new();
        let low = Format { rate: 1_000, width: 1, channels: 1 };
        let e = c.push(low, &vec![0; 200_000], &mut into(&mut out)).unwrap_err();
        assert!(e.contains("200000 frames at 1000 Hz is 200 s"), "{e}");
        assert!(out.is_empty());
        // At 16 kHz the largest payload the reader takes fits.
        let top = Format { rate: 16_000, width: 2, channels: 1 };
        let mut largest = 0;
        let mut sink = |piece: &[i16]| {
            largest = largest.max(piece.len());
            out.extend_from_slice(piece);
            Ok(())
        };
        c.push(top, &vec![0; crate::event::MAX_PAYLOAD_BYTES], &mut sink).unwrap();
        assert_eq!(out.len() as u64, MAX_CHUNK_SAMPLES);
        assert_eq!(largest, PIECE_FRAMES, "converted piece by piece");
    }

    /// A large chunk at a low rate is converted piece by piece: the sink never gets more
    /// than one piece's worth, and the pieces are the whole conversion.
    #[test]
    fn large_chunks_are_converted_in_bounded_pieces() {
        let format = Format { rate: 1_000, width: 2, channels: 1 };
        let bytes: Vec<u8> =
            (0..100_000u32).flat_map(|i| ((i * 37 % 4001) as i16).to_le_bytes()).collect();
        let mut c = ChunkConverter::default();
        let (mut got, mut largest) = (Vec::new(), 0);
        let mut sink = |piece: &[i16]| {
            largest = largest.max(piece.len());
            got.extend_from_slice(piece);
            Ok(())
        };
        c.push(format, &bytes, &mut sink).unwrap();
        c.finish(&mut sink).unwrap();
        assert_eq!(got.len(), 1_600_000);
        assert!(largest <= 16 * PIECE_FRAMES + 32_768, "{largest}");
        let mono: Vec<f32> = bytes
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect();
        let whole: Vec<i16> =
            neon_audio::resample::to_16k(&mono, 1_000).unwrap().into_iter().map(quantise).collect();
        assert!(got == whole, "the same samples as the whole clip resampled");
        // A sink's error stops the conversion and is returned.
        let e = c.push(format, &bytes, &mut |_| Err("full".to_string())).unwrap_err();
        assert_eq!(e, "full");
    }

    /// A client switching between two rates reuses the resampler of each (one built per
    /// rate, not per switch), with the same samples as fresh ones.
    #[test]
    fn switching_rates_back_and_forth_reuses_the_resampler() {
        let tone = |rate: u32| -> Vec<u8> {
            (0..rate / 10)
                .flat_map(|i| (((i as f32 * 0.07).sin() * 9000.0) as i16).to_le_bytes())
                .collect()
        };
        let odd = Format { rate: 11_021, width: 2, channels: 1 };
        let base = Format { rate: 16_000, ..odd };
        let mut c = ChunkConverter::default();
        let mut got = Vec::new();
        for _ in 0..20 {
            c.push(odd, &tone(odd.rate), &mut into(&mut got)).unwrap();
            c.push(base, &tone(base.rate), &mut into(&mut got)).unwrap();
        }
        c.finish(&mut into(&mut got)).unwrap();
        assert_eq!(c.built, 1, "one resampler for 11021 Hz");
        let mut want = Vec::new();
        for _ in 0..20 {
            want.extend(conv(odd, &tone(odd.rate)));
            want.extend(conv(base, &tone(base.rate)));
        }
        assert!(got == want, "as fresh converters");
        // Two odd rates alternating: each kept (the current one and the spare).
        let other = Format { rate: 12_011, ..odd };
        for _ in 0..5 {
            c.push(odd, &tone(odd.rate), &mut into(&mut got)).unwrap();
            c.push(other, &tone(other.rate), &mut into(&mut got)).unwrap();
        }
        assert_eq!(c.built, 2);
    }
}
