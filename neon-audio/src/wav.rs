//! Streaming WAV (RIFF/WAVE) parsing and PCM decoding, down-mixed to mono `f32` at the file's
//! own rate, from any byte source read front to back (no seeking).
//!
//! The header is walked chunk by chunk up to the `data` chunk: unknown chunks (`LIST`, `JUNK`,
//! `fact`, ...) are skipped, an odd-sized chunk's pad byte is skipped (or, if the writer left it
//! out, not: chunk ids never start with a zero byte). Integer samples of any valid-bit count in
//! any container of 1 to 4 bytes decode as the container's value over its full scale: the WAV
//! format stores the valid bits as the top bits, and the unused low bits, which should be zero,
//! are cleared. 8-bit containers are unsigned (offset 128).
//!
//! A data chunk size of `0xFFFFFFFF`, of 0 in a file whose RIFF size does not cover any data,
//! or sox's placeholder (`0x7FFFF000` rounded down to whole frames) is what programs write when
//! their output is a pipe: the data then runs to the end of the input. Any other size is the
//! exact length: a shorter data chunk is [`AudioError::TruncatedData`] (found before decoding
//! when the input's length is known, else when it ends), and whatever follows it is ignored.

use std::io::Read;
use std::string::String;
use std::vec::Vec;
use std::{format, vec};

use super::decode::{Decode, StreamInfo};
use super::AudioError;

/// Lowest sample rate read, in Hz (below it the resampler's FFT sizes per sample grow
/// without bound).
pub const MIN_RATE: u32 = 1_000;
/// Highest sample rate read, in Hz (keeps the resampler's FFT sizes bounded, about 1.5 M
/// points at most).
pub(super) const MAX_RATE: u32 = 768_000;

/// Bytes of sample data decoded per [`Decode::next`] call, at most (at least one frame).
const BYTES_PER_READ: usize = 64 * 1024;
/// The data size sox writes when it cannot seek back, before rounding down to whole frames.
const SOX_UNKNOWN_LEN: u32 = 0x7FFF_F000;

/// How samples are stored.
#[derive(Clone, Copy, Debug)]
struct Layout {
    channels: u16,
    /// Bytes per sample (1 to 4).
    container: usize,
    /// Bits of each sample that carry the value (the top bits of the container).
    valid_bits: u16,
    /// 32-bit IEEE float (else integer).
    float: bool,
}

impl Layout {
    fn frame_bytes(&self) -> usize {
        self.container * usize::from(self.channels)
    }

    /// For example `24-bit integer PCM in 32-bit containers`.
    fn describe(&self) -> String {
        let container_bits = 8 * self.container as u16;
        if self.float {
            return "32-bit float PCM".into();
        }
        let kind = if self.container == 1 { "unsigned integer" } else { "integer" };
        if self.valid_bits == container_bits {
            format!("{}-bit {kind} PCM", self.valid_bits)
        } else {
            format!("{}-bit {kind} PCM in {container_bits}-bit containers", self.valid_bits)
        }
    }
}

/// A byte source that counts what it has read and can put one byte back.
struct Counted<R> {
    inner: R,
    pos: u64,
    back: Option<u8>,
}

impl<R: Read> Counted<R> {
    /// Reads until `buf` is full or the source ends; returns the number of bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        if let (Some(b), Some(first)) = (self.back, buf.first_mut()) {
            *first = b;
            self.back = None;
            n = 1;
        }
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.pos += n as u64;
        Ok(n)
    }

    fn unread(&mut self, b: u8) {
        self.back = Some(b);
        self.pos -= 1;
    }
}

/// The header reader: maps running out of bytes to [`AudioError::TruncatedHeader`].
struct Header<'a, R> {
    name: &'a str,
    r: Counted<R>,
    /// The input's length in bytes, if known (else the bytes read when it ended).
    total: Option<u64>,
}

impl<R: Read> Header<'_, R> {
    fn exact(&mut self, buf: &mut [u8]) -> Result<(), AudioError> {
        let n = self.r.read_up_to(buf).map_err(|e| AudioError::io(self.name, e))?;
        if n < buf.len() {
            return Err(self.truncated());
        }
        Ok(())
    }

    fn skip(&mut self, mut len: u64) -> Result<(), AudioError> {
        let mut scratch = [0u8; 4096];
        while len > 0 {
            let k = len.min(scratch.len() as u64) as usize;
            self.exact(&mut scratch[..k])?;
            len -= k as u64;
        }
        Ok(())
    }

    fn truncated(&self) -> AudioError {
        AudioError::TruncatedHeader {
            name: self.name.into(),
            len: self.total.unwrap_or(self.r.pos),
        }
    }
}

/// A WAV file's sample data, decoded as it is read.
pub(super) struct WavDecoder<R> {
    name: String,
    r: Counted<R>,
    layout: Layout,
    /// Declared data length in bytes (`None`: to the end of the input).
    declared: Option<u64>,
    /// Sample bytes read so far.
    data_read: u64,
    buf: Vec<u8>,
    frame: Vec<f64>,
}

/// Parses the header of the WAV file `r` (read from its first byte up to the first sample
/// byte) whose total length is `total` bytes if known.
///
/// # Errors
/// [`AudioError::NotWav`], [`AudioError::TruncatedHeader`], [`AudioError::Malformed`],
/// [`AudioError::Unsupported`], [`AudioError::TruncatedData`] (known length only),
/// [`AudioError::NoSamples`] (a declared empty data chunk), [`AudioError::Io`].
pub(super) fn open<R: Read>(
    name: &str,
    r: R,
    total: Option<u64>,
) -> Result<(WavDecoder<R>, StreamInfo), AudioError> {
    let mut h = Header { name, r: Counted { inner: r, pos: 0, back: None }, total };
    let riff_len = check_signature(&mut h)?;
    let mut layout = None;
    loop {
        let mut head = [0u8; 8];
        h.exact(&mut head)?;
        let id = [head[0], head[1], head[2], head[3]];
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        match &id {
            b"fmt " if layout.is_none() => {
                let mut body = vec![0u8; (len as usize).min(64)];
                h.exact(&mut body)?;
                h.skip(u64::from(len) - body.len() as u64)?;
                layout = Some(parse_fmt(name, &body)?);
            }
            b"data" => {
                let Some((layout, rate)) = layout else {
                    return Err(malformed(name, "the data chunk comes before the fmt chunk"));
                };
                return start_data(h, layout, rate, len, riff_len);
            }
            _ => h.skip(u64::from(len))?,
        }
        if len % 2 == 1 {
            // The pad byte, unless the writer left it out (a chunk id never starts with 0).
            let mut pad = [0u8; 1];
            h.exact(&mut pad)?;
            if pad[0] != 0 {
                h.r.unread(pad[0]);
            }
        }
    }
}

/// Checks the 12-byte RIFF/WAVE signature so that non-WAV files, empty files and files cut
/// inside the signature get precise errors; returns the RIFF size field.
fn check_signature<R: Read>(h: &mut Header<'_, R>) -> Result<u32, AudioError> {
    let name = h.name;
    let mut sig = [0u8; 12];
    let n = h.r.read_up_to(&mut sig).map_err(|e| AudioError::io(name, e))?;
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
        return Err(not_wav(format!("it starts with {}", printable(riff))));
    }
    if n > 8 {
        let kind = &sig[8..];
        if kind != &b"WAVE"[..kind.len()] {
            return Err(not_wav(format!("a RIFF file of type {}, not WAVE", printable(kind))));
        }
    }
    if n < 12 {
        return Err(h.truncated());
    }
    Ok(u32::from_le_bytes([sig[4], sig[5], sig[6], sig[7]]))
}

/// Bytes as a quoted string with non-printable bytes escaped, e.g. `"hell"` or `"\x00\x01"`.
pub(super) fn printable(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        s.extend(core::ascii::escape_default(b).map(char::from));
    }
    s.push('"');
    s
}

fn malformed(name: &str, reason: &str) -> AudioError {
    AudioError::Malformed { name: name.into(), reason: reason.into() }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The tail of every `KSDATAFORMAT_SUBTYPE_*` GUID after its 2-byte format tag.
const GUID_TAIL: [u8; 14] =
    [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71];

/// Reads a fmt chunk body (at most its first 64 bytes): the sample layout and rate.
fn parse_fmt(name: &str, b: &[u8]) -> Result<(Layout, u32), AudioError> {
    if b.len() < 16 {
        return Err(malformed(name, &format!("a fmt chunk of {} bytes (at least 16)", b.len())));
    }
    let mut tag = u16_at(b, 0);
    let channels = u16_at(b, 2);
    let rate = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let block_align = u16_at(b, 12);
    let bits = u16_at(b, 14);
    let mut valid_bits = bits;
    if tag == 0xFFFE {
        if b.len() < 40 || u16_at(b, 16) < 22 {
            return Err(malformed(
                name,
                "a WAVE_FORMAT_EXTENSIBLE fmt chunk shorter than 40 bytes",
            ));
        }
        if b[26..40] != GUID_TAIL {
            return Err(AudioError::Unsupported {
                name: name.into(),
                format: "an unknown WAVE_FORMAT_EXTENSIBLE sub-format".into(),
            });
        }
        tag = u16_at(b, 24);
        let valid = u16_at(b, 18);
        if valid > 0 {
            valid_bits = valid;
        }
        if !bits.is_multiple_of(8) {
            return Err(malformed(name, &format!("{bits}-bit containers (not whole bytes)")));
        }
    }
    if channels == 0 {
        return Err(malformed(name, "0 channels"));
    }
    if rate == 0 {
        return Err(malformed(name, "the sample rate is 0 Hz"));
    }
    let unsupported = |format: String| AudioError::Unsupported { name: name.into(), format };
    let float = match tag {
        1 => false,
        3 => true,
        _ => return Err(unsupported(describe(tag, valid_bits))),
    };
    if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(unsupported(format!(
            "a sample rate of {rate} Hz (supported: {MIN_RATE} to {MAX_RATE} Hz)"
        )));
    }
    if float && (valid_bits != 32 || bits != 32) {
        return Err(unsupported(describe(tag, valid_bits)));
    }
    if !float && !(1..=32).contains(&valid_bits) {
        return Err(unsupported(describe(tag, valid_bits)));
    }
    let container = usize::from(block_align) / usize::from(channels);
    let whole = usize::from(block_align) % usize::from(channels) == 0;
    // The sample field (the container of WAVE_FORMAT_EXTENSIBLE) fixes the container size:
    // `ceil(bits / 8)` bytes. A block align that disagrees (16-bit mono with 4-byte blocks)
    // has no one reading: sox takes the sample size, hound the block align.
    let expected = usize::from(bits).div_ceil(8);
    if whole && container != expected && bits != 0 {
        return Err(malformed(
            name,
            &format!(
                "a block align of {block_align} bytes for {channels} channel(s) of {bits}-bit \
                 samples ({} expected)",
                expected * usize::from(channels)
            ),
        ));
    }
    if !whole || !(1..=4).contains(&container) || container * 8 < usize::from(valid_bits) {
        return Err(malformed(
            name,
            &format!(
                "a block align of {block_align} bytes does not fit {channels} channel(s) of \
                 {valid_bits}-bit samples"
            ),
        ));
    }
    if bits != valid_bits && usize::from(bits) != 8 * container {
        return Err(malformed(
            name,
            &format!("{bits}-bit containers but a block align of {block_align} bytes"),
        ));
    }
    Ok((Layout { channels, container, valid_bits, float }, rate))
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

/// Checks the data chunk's size against the input and builds the decoder.
fn start_data<R: Read>(
    h: Header<'_, R>,
    layout: Layout,
    rate: u32,
    len: u32,
    riff_len: u32,
) -> Result<(WavDecoder<R>, StreamInfo), AudioError> {
    let name = h.name;
    let data_start = h.r.pos;
    let frame = layout.frame_bytes() as u64;
    let sox_unknown = len <= SOX_UNKNOWN_LEN
        && u64::from(SOX_UNKNOWN_LEN - len) < frame
        && u64::from(len) % frame == 0;
    let riff_covers_no_data = u64::from(riff_len) + 8 <= data_start || riff_len == u32::MAX;
    let streamed = len == u32::MAX || sox_unknown || (len == 0 && riff_covers_no_data);
    let declared = (!streamed).then_some(u64::from(len));
    if let Some(len) = declared {
        if len % frame != 0 {
            return Err(malformed(
                name,
                &format!(
                    "a data chunk of {len} bytes is not a whole number of {frame}-byte frames"
                ),
            ));
        }
        if let Some(total) = h.total {
            let available = total.saturating_sub(data_start);
            if len > available {
                return Err(AudioError::TruncatedData {
                    name: name.into(),
                    declared: len,
                    available,
                });
            }
        }
        if len == 0 {
            return Err(AudioError::NoSamples { name: name.into() });
        }
    }
    let info = StreamInfo {
        sample_rate: rate,
        channels: layout.channels,
        format: layout.describe(),
        frames: declared.map(|len| len / frame),
    };
    let per_read = (BYTES_PER_READ / layout.frame_bytes()).max(1) * layout.frame_bytes();
    let decoder = WavDecoder {
        name: name.into(),
        r: h.r,
        layout,
        declared,
        data_read: 0,
        buf: vec![0; per_read],
        frame: vec![0.0; usize::from(layout.channels)],
    };
    Ok((decoder, info))
}

impl<R: Read + Send> Decode for WavDecoder<R> {
    fn next(&mut self, mono: &mut Vec<f32>) -> Result<usize, AudioError> {
        let want = match self.declared {
            Some(len) => (len - self.data_read).min(self.buf.len() as u64) as usize,
            None => self.buf.len(),
        };
        let got =
            self.r.read_up_to(&mut self.buf[..want]).map_err(|e| AudioError::io(&self.name, e))?;
        let first_frame = self.data_read / self.layout.frame_bytes() as u64;
        self.data_read += got as u64;
        if got < want {
            if let Some(declared) = self.declared {
                return Err(AudioError::TruncatedData {
                    name: self.name.clone(),
                    declared,
                    available: self.data_read,
                });
            }
            if got % self.layout.frame_bytes() != 0 {
                return Err(malformed(
                    &self.name,
                    &format!(
                        "the data ends inside a frame ({} of {} bytes)",
                        got % self.layout.frame_bytes(),
                        self.layout.frame_bytes()
                    ),
                ));
            }
        }
        let frames = got / self.layout.frame_bytes();
        mono.reserve(frames);
        for (i, bytes) in self.buf[..got].chunks_exact(self.layout.frame_bytes()).enumerate() {
            for (c, s) in bytes.chunks_exact(self.layout.container).enumerate() {
                self.frame[c] = sample(self.layout, s).ok_or_else(|| AudioError::NonFinite {
                    name: self.name.clone(),
                    frame: first_frame + i as u64,
                    channel: c as u16,
                })?;
            }
            // Sum in f64 (exact for integer samples: at most 32 + 16 significant bits), one
            // rounding to f32 after the division.
            mono.push((self.frame.iter().sum::<f64>() / self.frame.len() as f64) as f32);
        }
        Ok(frames)
    }
}

/// One sample's full-scale value; `None` for a NaN or infinite float.
fn sample(layout: Layout, s: &[u8]) -> Option<f64> {
    if layout.float {
        let x = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        return x.is_finite().then_some(f64::from(x));
    }
    let mut u = 0u32;
    for (k, &b) in s.iter().enumerate() {
        u |= u32::from(b) << (8 * k);
    }
    let bits = 8 * s.len() as u32;
    // Clear the low bits that carry no value.
    let unused = bits - u32::from(layout.valid_bits);
    u &= !((1u32 << unused) - 1);
    let v = if s.len() == 1 {
        i64::from(u) - 128
    } else {
        // Sign-extend from `bits` bits.
        i64::from(((u << (32 - bits)) as i32) >> (32 - bits))
    };
    Some(v as f64 / f64::from(1u32 << (bits - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(container: usize, valid_bits: u16) -> Layout {
        Layout { channels: 1, container, valid_bits, float: false }
    }

    #[test]
    fn samples_scale_by_the_container() {
        assert_eq!(sample(layout(1, 8), &[0]), Some(-1.0));
        assert_eq!(sample(layout(1, 8), &[128]), Some(0.0));
        assert_eq!(sample(layout(2, 16), &[0x00, 0x80]), Some(-1.0));
        assert_eq!(sample(layout(3, 24), &[0xFF, 0xFF, 0x7F]), Some(8_388_607.0 / 8_388_608.0));
        // 24 valid bits in a 32-bit container: the top three bytes; the low byte is cleared.
        assert_eq!(sample(layout(4, 24), &[0x5A, 0x00, 0x00, 0x40]), Some(0.5));
        // 20 in 24: the low 4 bits are cleared.
        assert_eq!(sample(layout(3, 20), &[0x0F, 0x00, 0xC0]), Some(-0.5));
        assert_eq!(sample(Layout { float: true, ..layout(4, 32) }, &[0, 0, 0xC0, 0x7F]), None);
    }

    #[test]
    fn formats_are_described() {
        assert_eq!(layout(4, 24).describe(), "24-bit integer PCM in 32-bit containers");
        assert_eq!(layout(2, 16).describe(), "16-bit integer PCM");
        assert_eq!(layout(1, 8).describe(), "8-bit unsigned integer PCM");
        assert_eq!(Layout { float: true, ..layout(4, 32) }.describe(), "32-bit float PCM");
    }
}
