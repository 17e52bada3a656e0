//! [`AudioStream`]: any supported audio input decoded packet by packet and resampled to 16 kHz
//! mono as it is read, in memory independent of its length.

use std::boxed::Box;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::string::String;
use std::vec::Vec;

use symphonia::core::io::{MediaSource, ReadOnlySource};

use super::codec::{self, Container};
use super::decode::{Decode, StreamInfo};
use super::resample::Streaming;
use super::{clamp_full_scale, wav, AudioError, SAMPLE_RATE};

/// Largest magnitude passed to the resampler: decoded values beyond it (a float input far
/// beyond full scale, up to `f32::MAX`) are limited to it first, so that the resampler's FFTs
/// cannot overflow into infinities and NaNs. The output clips such samples to full scale
/// anyway.
const MAX_DECODED: f32 = 1_048_576.0;

/// Whether `prefix`, the first bytes of a stream, starts a container [`AudioStream`] reads:
/// `RIFF....WAVE` (12 bytes; also `RIFX` and `RF64`, which are then refused by name), `fLaC`
/// or `OggS` (4 bytes). A shorter prefix is `false`.
pub fn is_container(prefix: &[u8]) -> bool {
    // RIFX (big-endian) and RF64 are recognised so that they get their "unsupported" error
    // rather than being taken for raw samples.
    let riff = prefix.len() >= 12
        && matches!(&prefix[..4], b"RIFF" | b"RIFX" | b"RF64")
        && &prefix[8..12] == b"WAVE";
    riff || prefix.starts_with(b"fLaC") || prefix.starts_with(b"OggS")
}

/// An audio input (WAV, FLAC or Ogg/Vorbis, see the [module documentation](super)) decoded as
/// it is read: [`AudioStream::read`] appends the next 16 kHz mono samples, full scale
/// `[-1, 1)`. It holds one packet of the input and one FFT block of the resampler, whatever
/// the input's length. A non-seekable source is read front to back and never sought; of a
/// seekable one the length is taken first, and symphonia may seek in a FLAC or Ogg file (the
/// Ogg reader looks for the last page to learn the length).
pub struct AudioStream {
    name: String,
    info: StreamInfo,
    decoder: Box<dyn Decode>,
    /// `None` for a 16 kHz input (passed through).
    resampler: Option<Streaming>,
    /// Mono samples of the current packet, at the input's rate.
    mono: Vec<f32>,
    /// Whether [`AudioStream::read`] checks the decoded length against `info.frames` at the
    /// end (codec streams; a WAV decoder checks its data length itself).
    check_frames: bool,
    clipped: usize,
    source_peak: f32,
    frames_decoded: u64,
    samples_out: u64,
    ended: bool,
}

/// A seekable byte source of known length, for symphonia.
struct Seekable<R> {
    inner: R,
    len: u64,
}

impl<R: Read> Read for Seekable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: Seek> Seek for Seekable<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl<R: Read + Seek + Send + Sync> MediaSource for Seekable<R> {
    fn is_seekable(&self) -> bool {
        true
    }
    fn byte_len(&self) -> Option<u64> {
        Some(self.len)
    }
}

/// Reads until `buf` is full or the source ends; returns the number of bytes read.
fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The container that `prefix` starts, if a codec one (else the input is read as WAV, which
/// reports what it is not).
fn codec_container(prefix: &[u8]) -> Option<Container> {
    if prefix.starts_with(b"fLaC") {
        Some(Container::Flac)
    } else if prefix.starts_with(b"OggS") {
        Some(Container::Ogg)
    } else {
        None
    }
}

impl AudioStream {
    /// Opens the file at `path`: a regular file is read as a seekable source, anything else
    /// that can be read (a FIFO, `/dev/fd/N`, a character device) as a non-seekable one. The
    /// name in messages is the path as given.
    ///
    /// # Errors
    /// [`AudioError::Io`] if the path cannot be opened or is a directory; otherwise as
    /// [`AudioStream::from_seekable`].
    pub fn open(path: impl AsRef<Path>) -> Result<AudioStream, AudioError> {
        let path = path.as_ref();
        let name = std::format!("{}", path.display());
        let file = std::fs::File::open(path).map_err(|e| AudioError::io(&name, e))?;
        let meta = file.metadata().map_err(|e| AudioError::io(&name, e))?;
        if meta.is_dir() {
            return Err(AudioError::io(&name, std::io::ErrorKind::IsADirectory.into()));
        }
        if meta.is_file() {
            AudioStream::from_seekable(name, file)
        } else {
            AudioStream::from_read(name, file)
        }
    }

    /// Reads a non-seekable source front to back (e.g. stdin, with a prefix already read for
    /// sniffing chained back in front); `name` is used in messages.
    ///
    /// # Errors
    /// As [`AudioStream::from_seekable`], except that a data chunk shorter than declared is
    /// reported by [`AudioStream::read`] when the data ends.
    pub fn from_read(
        name: impl Into<String>,
        mut r: impl Read + Send + Sync + 'static,
    ) -> Result<AudioStream, AudioError> {
        let name = name.into();
        let mut prefix = [0u8; 12];
        let n = read_up_to(&mut r, &mut prefix).map_err(|e| AudioError::io(&name, e))?;
        let r = std::io::Cursor::new(prefix[..n].to_vec()).chain(r);
        match codec_container(&prefix[..n]) {
            Some(c) => {
                let (d, info) = codec::open(&name, Box::new(ReadOnlySource::new(r)), c)?;
                AudioStream::new(name, info, Box::new(d), true)
            }
            None => {
                let (d, info) = wav::open(&name, std::io::BufReader::new(r), None)?;
                AudioStream::new(name, info, Box::new(d), false)
            }
        }
    }

    /// Reads a seekable source (a file, an in-memory `std::io::Cursor`) from its start; `name`
    /// is used in messages. Its length is known, so a WAV data chunk shorter than declared is
    /// found here, before decoding.
    ///
    /// # Errors
    /// [`AudioError::Io`], [`AudioError::NotWav`] (neither WAV, FLAC nor Ogg),
    /// [`AudioError::TruncatedHeader`], [`AudioError::TruncatedData`],
    /// [`AudioError::Malformed`], [`AudioError::Unsupported`] (e.g. ADPCM, A-law, 64-bit float,
    /// a rate outside 1 to 768 kHz, Opus), [`AudioError::NoSamples`] (a declared empty data
    /// chunk), [`AudioError::Decode`], [`AudioError::Resample`].
    pub fn from_seekable(
        name: impl Into<String>,
        mut r: impl Read + Seek + Send + Sync + 'static,
    ) -> Result<AudioStream, AudioError> {
        let name = name.into();
        let io = |e| AudioError::io(&name, e);
        let len = r.seek(SeekFrom::End(0)).map_err(io)?;
        r.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut prefix = [0u8; 12];
        let n = read_up_to(&mut r, &mut prefix).map_err(io)?;
        r.seek(SeekFrom::Start(0)).map_err(io)?;
        match codec_container(&prefix[..n]) {
            Some(c) => {
                let (d, info) = codec::open(&name, Box::new(Seekable { inner: r, len }), c)?;
                AudioStream::new(name, info, Box::new(d), true)
            }
            None => {
                let (d, info) = wav::open(&name, std::io::BufReader::new(r), Some(len))?;
                AudioStream::new(name, info, Box::new(d), false)
            }
        }
    }

    fn new(
        name: String,
        info: StreamInfo,
        decoder: Box<dyn Decode>,
        check_frames: bool,
    ) -> Result<AudioStream, AudioError> {
        let resampler = if info.sample_rate == SAMPLE_RATE {
            None
        } else {
            let r = Streaming::new(info.sample_rate)
                .map_err(|reason| AudioError::Resample { name: name.clone(), reason })?;
            Some(r)
        };
        Ok(AudioStream {
            name,
            info,
            decoder,
            resampler,
            mono: Vec::new(),
            check_frames,
            clipped: 0,
            source_peak: 0.0,
            frames_decoded: 0,
            samples_out: 0,
            ended: false,
        })
    }

    /// The name used in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the input holds, from its header.
    pub fn info(&self) -> &StreamInfo {
        &self.info
    }

    /// Appends the next 16 kHz mono samples (the channel average, limited to `+-2^20`,
    /// resampled, clamped into `[-1, 1)`) to `out` and returns how many; 0 means the end, and every later call returns
    /// 0 too. Each call decodes at least one packet (a WAV block of at most 64 KiB, a FLAC
    /// frame, a Vorbis packet) and appends what the resampler has ready; at the end the
    /// resampler is flushed, and the whole output has `round(frames_decoded * 16000 / rate)`
    /// samples, bitwise the samples [`resample::to_16k`](super::resample::to_16k) gives on the
    /// whole down-mixed clip.
    ///
    /// # Errors
    /// [`AudioError::TruncatedData`] (a non-seekable WAV whose data chunk ends early),
    /// [`AudioError::NonFinite`] (a NaN or infinite sample), [`AudioError::NoSamples`] (the
    /// input ends before its first sample), [`AudioError::Decode`], [`AudioError::Io`],
    /// [`AudioError::Malformed`], [`AudioError::Resample`]. After an error the stream is
    /// ended: later calls return 0.
    pub fn read(&mut self, out: &mut Vec<f32>) -> Result<usize, AudioError> {
        let result = self.read_inner(out);
        if result.is_err() {
            self.ended = true;
        }
        result
    }

    fn read_inner(&mut self, out: &mut Vec<f32>) -> Result<usize, AudioError> {
        let start = out.len();
        while !self.ended && out.len() == start {
            self.mono.clear();
            let n = self.decoder.next(&mut self.mono)?;
            if n == 0 {
                self.ended = true;
                self.check_end()?;
                if let Some(r) = &mut self.resampler {
                    r.finish(out).map_err(|reason| self.resample_error(reason))?;
                }
                break;
            }
            self.frames_decoded += n as u64;
            for x in &mut self.mono {
                self.source_peak = self.source_peak.max(x.abs());
                // Only float input gets here beyond full scale; the output clips it anyway.
                *x = x.clamp(-MAX_DECODED, MAX_DECODED);
            }
            match &mut self.resampler {
                Some(r) => r.push(&self.mono, out).map_err(|reason| self.resample_error(reason))?,
                None => out.extend_from_slice(&self.mono),
            }
        }
        self.clipped += clamp_full_scale(&mut out[start..]);
        let n = out.len() - start;
        self.samples_out += n as u64;
        Ok(n)
    }

    fn resample_error(&self, reason: String) -> AudioError {
        AudioError::Resample { name: self.name.clone(), reason }
    }

    /// The checks at the end of the input: some samples, and as many frames as declared.
    fn check_end(&self) -> Result<(), AudioError> {
        match self.info.frames {
            Some(declared) if self.check_frames && self.frames_decoded < declared => {
                Err(AudioError::Decode {
                    name: self.name.clone(),
                    reason: std::format!(
                        "the stream ends (or a corrupt frame stops it) after {} of the {declared} frames its header declares",
                        self.frames_decoded
                    ),
                })
            }
            _ if self.frames_decoded == 0 => Err(AudioError::NoSamples { name: self.name.clone() }),
            _ => Ok(()),
        }
    }

    /// Number of output samples that fell outside `[-1, 1]` (from a float input or from
    /// resampling overshoot near full scale) and were clamped into `[-1, 1)`, so far.
    pub fn clipped(&self) -> usize {
        self.clipped
    }

    /// Largest magnitude of the down-mixed samples as decoded (before resampling and
    /// clamping), full scale 1, so far. Above 1 only for float input.
    pub fn source_peak(&self) -> f32 {
        self.source_peak
    }

    /// Input frames (samples per channel) decoded so far.
    pub fn frames_decoded(&self) -> u64 {
        self.frames_decoded
    }

    /// 16 kHz samples returned by [`AudioStream::read`] so far.
    pub fn samples_out(&self) -> u64 {
        self.samples_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_send() {
        fn send<T: Send>() {}
        send::<AudioStream>();
    }

    #[test]
    fn containers_are_recognised_from_their_first_bytes() {
        assert!(is_container(b"RIFF\x24\0\0\0WAVEfmt "));
        assert!(is_container(b"fLaC\0\0\0\x22"));
        assert!(is_container(b"OggS\0\x02"));
        assert!(!is_container(b"RIFF\x24\0\0\0AVI "));
        assert!(is_container(b"RIFX\0\0\0\x24WAVE"));
        assert!(is_container(b"RF64\xff\xff\xff\xffWAVE"));
        assert!(!is_container(b"RIFF"));
        assert!(!is_container(&[0x12, 0x34, 0x56, 0x78]));
        assert!(!is_container(b""));
    }
}
