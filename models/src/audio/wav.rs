//! WAV decoding with `hound`, down-mixed to mono `f32` at the file's own rate.
//!
//! The file is read in two passes over the same seekable source: the first parses the header
//! with a `hound::WavReader` and finds where the data chunk starts and how long it claims to
//! be, so that this can be checked against the file length before anything is allocated or
//! decoded (a data chunk shorter than declared is [`AudioError::TruncatedData`], never a
//! silently short clip); the second decodes the samples with a fresh `hound::WavReader`.

use std::io::{Read, Seek, SeekFrom};
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use super::{AudioError, SampleFormat, WavInfo};

/// Lowest sample rate read, in Hz.
pub(super) const MIN_RATE: u32 = 1_000;
/// Highest sample rate read, in Hz (keeps the resampler's FFT sizes bounded, about 1.5 M
/// points at most).
pub(super) const MAX_RATE: u32 = 768_000;

/// Reads a whole WAV file from `r` (from its start) and returns the channel average of every
/// frame, full scale `[-1, 1)` for integer files (`v / 2^(bits-1)`; 8-bit files are unsigned
/// with offset 128), as stored for float files; and what the file held.
pub(super) fn read_mono<R: Read + Seek>(
    name: &str,
    mut r: R,
) -> Result<(Vec<f32>, WavInfo), AudioError> {
    let io = |e| AudioError::io(name, e);
    let total = r.seek(SeekFrom::End(0)).map_err(io)?;
    r.seek(SeekFrom::Start(0)).map_err(io)?;
    check_signature(name, &mut r, total)?;

    // Pass 1: the header, up to the first byte of the data chunk (hound reads through `r`
    // without buffering, so `r` is left at the data chunk's first byte).
    r.seek(SeekFrom::Start(0)).map_err(io)?;
    let (spec, len) = match hound::WavReader::new(&mut r) {
        Ok(w) => (w.spec(), w.len()),
        Err(e) => return Err(header_error(name, &mut r, total, e)),
    };
    let data_start = r.stream_position().map_err(io)?;
    // The data chunk's declared length, from its 8-byte header just before the data.
    let mut head = [0u8; 8];
    r.seek(SeekFrom::Start(data_start.saturating_sub(8))).map_err(io)?;
    r.read_exact(&mut head).map_err(io)?;
    if &head[..4] != b"data" {
        return Err(malformed(name, "the data chunk header is not where hound left off"));
    }
    let data_len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len == 0 {
        return Err(AudioError::NoSamples { name: name.into() });
    }
    // hound checked that the data length is a whole number of samples.
    let bytes_per_sample = data_len / len;
    let format = sample_format(name, spec, bytes_per_sample)?;
    if spec.sample_rate == 0 {
        return Err(malformed(name, "the sample rate is 0 Hz"));
    }
    if !(MIN_RATE..=MAX_RATE).contains(&spec.sample_rate) {
        return Err(AudioError::Unsupported {
            name: name.into(),
            format: format!(
                "a sample rate of {} Hz (supported: {MIN_RATE} to {MAX_RATE} Hz)",
                spec.sample_rate
            ),
        });
    }
    let available = total.saturating_sub(data_start);
    if u64::from(data_len) > available {
        return Err(AudioError::TruncatedData {
            name: name.into(),
            declared: data_len.into(),
            available,
        });
    }

    // Pass 2: the samples.
    r.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut reader = hound::WavReader::new(&mut r).map_err(|e| sample_error(name, e))?;
    let channels = spec.channels;
    let frames = reader.duration();
    let info =
        WavInfo { sample_rate: spec.sample_rate, channels, format, frames: u64::from(frames) };
    // Bounded by the file length, checked above.
    let mut mono = Vec::with_capacity(frames as usize);
    let mut frame = vec![0.0f64; usize::from(channels)];
    let mut fill = 0usize;
    let mut push = |x: f64, mono: &mut Vec<f32>| {
        frame[fill] = x;
        fill += 1;
        if fill == frame.len() {
            fill = 0;
            // Sum in f64 (exact for integer samples: at most 32 + 16 significant bits), one
            // rounding to f32 after the division.
            mono.push((frame.iter().sum::<f64>() / frame.len() as f64) as f32);
        }
    };
    match format {
        SampleFormat::F32 => {
            for (i, s) in reader.samples::<f32>().enumerate() {
                let x = s.map_err(|e| sample_error(name, e))?;
                if !x.is_finite() {
                    let (frame, channel) = (i / usize::from(channels), i % usize::from(channels));
                    return Err(AudioError::NonFinite {
                        name: name.into(),
                        frame: frame as u64,
                        channel: channel as u16,
                    });
                }
                push(f64::from(x), &mut mono);
            }
        }
        _ => {
            let scale = 1.0 / f64::from(1u32 << (format.bits() - 1));
            for s in reader.samples::<i32>() {
                let v = s.map_err(|e| sample_error(name, e))?;
                push(f64::from(v) * scale, &mut mono);
            }
        }
    }
    if mono.len() != frames as usize {
        // hound yields exactly `len()` samples or an error; kept as a guard against a silently
        // short clip.
        return Err(AudioError::TruncatedData {
            name: name.into(),
            declared: data_len.into(),
            available: mono.len() as u64 * u64::from(bytes_per_sample) * u64::from(channels),
        });
    }
    Ok((mono, info))
}

fn malformed(name: &str, reason: &str) -> AudioError {
    AudioError::Malformed { name: name.into(), reason: reason.into() }
}

/// Checks the 12-byte RIFF/WAVE signature so that non-WAV files, empty files and files cut
/// inside the signature get precise errors.
fn check_signature<R: Read>(name: &str, r: &mut R, total: u64) -> Result<(), AudioError> {
    let mut sig = [0u8; 12];
    let n = read_up_to(r, &mut sig).map_err(|e| AudioError::io(name, e))?;
    let sig = &sig[..n];
    let not_wav = |reason: String| AudioError::NotWav { name: name.into(), reason };
    if n == 0 {
        return Err(not_wav("the file is empty".into()));
    }
    let riff = &sig[..n.min(4)];
    for (magic, what) in [
        (&b"RF64"[..], "RF64 (64-bit RIFF) files"),
        (b"BW64", "BW64 (broadcast 64-bit) files"),
        (b"RIFX", "big-endian RIFX files"),
    ] {
        if n >= 4 && riff == magic {
            return Err(AudioError::Unsupported { name: name.into(), format: what.into() });
        }
    }
    if riff != &b"RIFF"[..riff.len()] {
        return Err(not_wav(format!("it starts with {}, not RIFF", printable(riff))));
    }
    if n > 8 {
        let kind = &sig[8..];
        if kind != &b"WAVE"[..kind.len()] {
            return Err(not_wav(format!("a RIFF file of type {}, not WAVE", printable(kind))));
        }
    }
    if n < 12 {
        return Err(AudioError::TruncatedHeader { name: name.into(), len: total });
    }
    Ok(())
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

/// Bytes as a quoted string with non-printable bytes escaped, e.g. `"hell"` or `"\x00\x01"`.
fn printable(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        s.extend(core::ascii::escape_default(b).map(char::from));
    }
    s.push('"');
    s
}

/// The supported (container bytes, valid bits) combinations, as hound decodes them.
fn sample_format(name: &str, spec: hound::WavSpec, bytes: u32) -> Result<SampleFormat, AudioError> {
    let bits = spec.bits_per_sample;
    let format = match (spec.sample_format, bytes, bits) {
        (hound::SampleFormat::Int, 1, 8) => SampleFormat::U8,
        (hound::SampleFormat::Int, 2, 16) => SampleFormat::I16,
        (hound::SampleFormat::Int, 3, 24) => SampleFormat::I24 { container_bytes: 3 },
        (hound::SampleFormat::Int, 4, 24) => SampleFormat::I24 { container_bytes: 4 },
        (hound::SampleFormat::Int, 4, 32) => SampleFormat::I32,
        (hound::SampleFormat::Float, 4, 32) => SampleFormat::F32,
        (hound::SampleFormat::Int, _, _) => {
            return Err(AudioError::Unsupported {
                name: name.into(),
                format: format!("{bits}-bit integers in {bytes}-byte containers"),
            })
        }
        (hound::SampleFormat::Float, _, _) => {
            return Err(AudioError::Unsupported {
                name: name.into(),
                format: format!("{bits}-bit floats in {bytes}-byte containers"),
            })
        }
    };
    Ok(format)
}

/// Maps a hound error from the header pass. An I/O error at the end of the file means the
/// header is cut short (hound reports running out of bytes as an I/O error). Any other error
/// in a file whose fmt chunk names an encoding other than 8/16/24/32-bit integer PCM or
/// 32-bit float is reported as that encoding being unsupported (hound rejects, e.g., 4-bit
/// ADPCM for its bit depth before looking at its format tag).
fn header_error<R: Read + Seek>(name: &str, r: &mut R, total: u64, e: hound::Error) -> AudioError {
    if let hound::Error::IoError(source) = e {
        return match r.stream_position() {
            Ok(pos) if pos >= total => {
                AudioError::TruncatedHeader { name: name.into(), len: total }
            }
            _ => AudioError::io(name, source),
        };
    }
    let unsupported = |format: String| AudioError::Unsupported { name: name.into(), format };
    let fmt = find_fmt(r, total);
    if let Some(Fmt { tag, bits }) = fmt {
        let readable = matches!((tag, bits), (1, 8 | 16 | 24 | 32) | (3, 32));
        if !readable {
            return unsupported(describe(tag, bits));
        }
    }
    match e {
        hound::Error::Unsupported => {
            unsupported(fmt.map_or("an unknown encoding".into(), |f| describe(f.tag, f.bits)))
        }
        hound::Error::FormatError(msg) => malformed(name, msg),
        other => malformed(name, &other.to_string()),
    }
}

/// Maps a hound error from the sample pass (the header is known to be complete and the data
/// chunk to be as long as declared, so an I/O error here is a real I/O error).
fn sample_error(name: &str, e: hound::Error) -> AudioError {
    match e {
        hound::Error::IoError(source) => AudioError::io(name, source),
        hound::Error::FormatError(msg) => malformed(name, msg),
        other => malformed(name, &other.to_string()),
    }
}

/// The encoding fields of a fmt chunk.
#[derive(Clone, Copy)]
struct Fmt {
    /// Format tag (for WAVE_FORMAT_EXTENSIBLE, the one in the sub-format GUID).
    tag: u16,
    /// Bits per sample (container bits; for WAVE_FORMAT_EXTENSIBLE, the valid bits if set).
    bits: u16,
}

/// Names an encoding, e.g. `format tag 0x0006 (A-law)` or `64-bit IEEE float`.
fn describe(tag: u16, bits: u16) -> String {
    let known = match tag {
        0x0001 => return format!("{bits}-bit integer PCM"),
        0x0003 => return format!("{bits}-bit IEEE float"),
        0x0002 => "Microsoft ADPCM",
        0x0006 => "A-law",
        0x0007 => "mu-law",
        0x0011 => "IMA ADPCM",
        0x0031 => "GSM 6.10",
        0x0050 => "MPEG audio",
        0x0055 => "MP3",
        _ => "unknown",
    };
    format!("format tag 0x{tag:04X} ({known})")
}

/// Finds the first `fmt ` chunk (walking chunks as hound does, from byte 12) and reads its
/// encoding fields; `None` if there is none or it is cut short. Best effort, for messages.
fn find_fmt<R: Read + Seek>(r: &mut R, total: u64) -> Option<Fmt> {
    let mut pos = 12u64;
    // Every chunk advances `pos` by at least 8 bytes, so this ends; the count bounds it anyway.
    for _ in 0..10_000 {
        if pos.checked_add(8)? > total {
            return None;
        }
        r.seek(SeekFrom::Start(pos)).ok()?;
        let mut head = [0u8; 8];
        r.read_exact(&mut head).ok()?;
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if &head[..4] == b"fmt " {
            let mut fmt = [0u8; 26];
            let n = read_up_to(r, &mut fmt[..(len as usize).min(26)]).ok()?;
            if n < 16 {
                return None;
            }
            let mut tag = u16::from_le_bytes([fmt[0], fmt[1]]);
            let mut bits = u16::from_le_bytes([fmt[14], fmt[15]]);
            // WAVE_FORMAT_EXTENSIBLE: the valid bits, and the real tag in the first two bytes of
            // the sub-format GUID.
            if tag == 0xFFFE && n >= 26 {
                let valid = u16::from_le_bytes([fmt[18], fmt[19]]);
                if valid > 0 {
                    bits = valid;
                }
                tag = u16::from_le_bytes([fmt[24], fmt[25]]);
            }
            return Some(Fmt { tag, bits });
        }
        pos = pos.checked_add(8 + u64::from(len))?;
    }
    None
}
