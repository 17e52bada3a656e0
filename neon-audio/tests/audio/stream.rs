//! [`AudioStream`] as a stream: non-seekable sources (a reader, a FIFO), output bitwise the
//! whole-clip resampling, memory bounded whatever the length, errors found at the end.

use std::io::{Cursor, Read};

use neon_audio::{resample, AudioError, AudioStream, SAMPLE_RATE};

use super::errors::{fmt16, raw_wav};
use super::files::data;
use super::fuzz::Rng;

/// A non-seekable reader that returns at most `max` bytes per call (1 to `max`, varying).
struct Trickle {
    bytes: Cursor<Vec<u8>>,
    rng: Rng,
    max: usize,
}

impl Trickle {
    fn new(bytes: Vec<u8>, max: usize) -> Trickle {
        Trickle { bytes: Cursor::new(bytes), rng: Rng(0x1234_5678_9ABC_DEF1), max }
    }
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = (1 + self.rng.below(self.max)).min(buf.len());
        self.bytes.read(&mut buf[..k])
    }
}

/// Reads `s` to the end; returns the samples.
fn read_all(mut s: AudioStream) -> Result<Vec<f32>, AudioError> {
    let mut out = Vec::new();
    while s.read(&mut out)? > 0 {}
    assert_eq!(s.read(&mut out).unwrap(), 0, "{}: the end stays the end", s.name());
    assert_eq!(s.samples_out(), out.len() as u64);
    Ok(out)
}

#[test]
fn streamed_output_is_bitwise_the_whole_clip_resampling() {
    for rate in [8_000u32, 16_000, 22_050, 44_100, 48_000] {
        for n in [1usize, 1023, 4097, 12_345, 30_001] {
            // A float WAV: the decoded mono samples are exactly these values.
            let x: Vec<f32> = (0..n).map(|i| 0.6 * ((i as f32) * 0.0123).sin()).collect();
            let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let bytes = raw_wav(&fmt16(3, 1, rate, 4, 32), &data);
            let s = AudioStream::from_read("pipe", Trickle::new(bytes, 5000)).unwrap();
            assert_eq!(s.info().frames, Some(n as u64));
            let got = read_all(s).unwrap();
            let want = resample::to_16k(&x, rate).unwrap();
            assert_eq!(got.len(), resample::output_len(n, rate), "{rate} Hz, {n}");
            let same = got.len() == want.len()
                && got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{rate} Hz, {n} frames: streamed differs from to_16k");
        }
    }
}

#[test]
fn non_seekable_readers_give_what_files_give() {
    for file in ["ref16k.wav", "stereo44k.wav", "ref16k.flac", "stereo44k.flac", "ref16k.ogg"] {
        let whole = read_all(AudioStream::open(data(file)).unwrap()).unwrap();
        let bytes = std::fs::read(data(file)).unwrap();
        for max in [1, 7, 4096] {
            let s = AudioStream::from_read(file, Trickle::new(bytes.clone(), max)).unwrap();
            assert!(read_all(s).unwrap() == whole, "{file}, reads of up to {max} bytes");
        }
        let s = AudioStream::from_seekable(file, Cursor::new(bytes)).unwrap();
        assert!(read_all(s).unwrap() == whole, "{file} from a cursor");
    }
}

#[test]
fn a_fifo_is_read_by_open() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["ref16k.wav", "pipe_ffff.wav", "ref16k.flac"] {
        let fifo = dir.path().join(format!("{file}.fifo"));
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let bytes = std::fs::read(data(file)).unwrap();
        let path = fifo.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            for piece in bytes.chunks(1000) {
                std::io::Write::write_all(&mut f, piece).unwrap();
            }
        });
        let s = AudioStream::open(&fifo).unwrap();
        let got = read_all(s).unwrap();
        writer.join().unwrap();
        let want = read_all(AudioStream::open(data(file)).unwrap()).unwrap();
        assert!(got == want, "{file} through a FIFO");
    }
}

#[test]
fn a_short_data_chunk_on_a_pipe_is_reported_when_it_ends() {
    let mut bytes = std::fs::read(data("ref16k.wav")).unwrap();
    bytes.truncate(bytes.len() - 1000);
    let mut s = AudioStream::from_read("cut", Trickle::new(bytes, 3000)).unwrap();
    let mut out = Vec::new();
    let e = loop {
        match s.read(&mut out) {
            Ok(0) => panic!("a truncated pipe ended cleanly"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    let AudioError::TruncatedData { declared, available, .. } = e else { panic!("{e:?}") };
    assert_eq!((declared, available), (8000, 7000));
    assert_eq!(s.read(&mut out).unwrap(), 0);
}

#[test]
fn streamed_errors_at_the_end() {
    // A pipe-written header and no data.
    let bytes = std::fs::read(data("pipe_zero.wav")).unwrap()[..44].to_vec();
    let e = read_all(AudioStream::from_read("empty", Cursor::new(bytes)).unwrap()).unwrap_err();
    assert!(matches!(e, AudioError::NoSamples { .. }), "{e:?}");
    // A pipe-written header whose data ends inside a frame.
    let mut bytes = std::fs::read(data("pipe_ffff.wav")).unwrap();
    bytes.pop();
    let e = read_all(AudioStream::from_read("odd", Cursor::new(bytes)).unwrap()).unwrap_err();
    assert!(matches!(e, AudioError::Malformed { .. }), "{e:?}");
    // A FLAC stream cut short.
    let bytes = std::fs::read(data("ref16k.flac")).unwrap();
    let cut = bytes[..bytes.len() - 500].to_vec();
    let e = read_all(AudioStream::from_read("cut.flac", Cursor::new(cut)).unwrap()).unwrap_err();
    // (Its only FLAC frame is cut: symphonia finds none.)
    assert!(matches!(e, AudioError::Decode { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "cut.flac: cannot decode: the stream ends (or a corrupt frame stops it) after 0 of the 4000 frames its header declares"
    );
}

/// A 16-bit stereo 48 kHz WAV with a pipe header (sizes 0xFFFFFFFF), generated as it is read:
/// `frames` frames of a 1 kHz tone (amplitude 0.3 left, 0.15 right), never held in memory.
struct Generated {
    header: Cursor<Vec<u8>>,
    frame: u64,
    frames: u64,
}

impl Generated {
    fn new(frames: u64) -> Generated {
        let mut h = raw_wav(&fmt16(1, 2, 48_000, 4, 16), &[]);
        h[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let n = h.len();
        h[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        Generated { header: Cursor::new(h), frame: 0, frames }
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.header.read(buf)?;
        if n > 0 {
            return Ok(n);
        }
        let mut k = 0;
        while k + 4 <= buf.len() && self.frame < self.frames {
            let v = (0.3 * 32767.0 * (self.frame as f64 * 2.0 * std::f64::consts::PI / 48.0).sin())
                as i16;
            buf[k..k + 2].copy_from_slice(&v.to_le_bytes());
            buf[k + 2..k + 4].copy_from_slice(&(v / 2).to_le_bytes());
            k += 4;
            self.frame += 1;
        }
        Ok(k)
    }
}

#[test]
fn memory_does_not_grow_with_the_length() {
    // Ten minutes at 48 kHz stereo (110 MiB of WAV; two minutes under qemu, where resampling
    // ten takes about a minute): each read appends at most one 64 KiB WAV block's worth of
    // 16 kHz samples (16384 frames -> 5462) plus one resampler block (1024), so a Vec cleared
    // between reads never needs more than 8192 samples.
    let minutes = if cfg!(target_arch = "aarch64") { 2 } else { 10 };
    let frames = minutes * 60 * 48_000u64;
    let mut s = AudioStream::from_read("generated", Generated::new(frames)).unwrap();
    assert_eq!(s.info().frames, None);
    let mut out = Vec::with_capacity(8192);
    let mut total = 0u64;
    let mut peak = 0f32;
    loop {
        out.clear();
        let n = s.read(&mut out).unwrap();
        assert!(out.capacity() <= 8192, "{} samples held", out.capacity());
        if n == 0 {
            break;
        }
        total += n as u64;
        peak = out.iter().fold(peak, |p, x| p.max(x.abs()));
    }
    assert_eq!(s.frames_decoded(), frames);
    assert_eq!(total, frames * u64::from(SAMPLE_RATE) / 48_000);
    // Left v, right v / 2: a 1 kHz tone of amplitude 0.225.
    assert!((peak - 0.225).abs() < 1e-3, "{peak}");
}

#[test]
fn huge_float_samples_clip_instead_of_overflowing() {
    // Found by fuzzing: float samples near f32::MAX overflowed the resampler's FFTs into NaN.
    let x = [f32::MAX, -f32::MAX, 1e30, 0.5, -3e38, 0.0];
    let data: Vec<u8> = x.iter().cycle().take(6000).flat_map(|v| v.to_le_bytes()).collect();
    for rate in [16_000, 44_100] {
        let bytes = raw_wav(&fmt16(3, 1, rate, 4, 32), &data);
        let mut s = AudioStream::from_read("huge", Cursor::new(bytes)).unwrap();
        let mut out = Vec::new();
        while s.read(&mut out).unwrap() > 0 {}
        assert!(out.iter().all(|x| (-1.0..1.0).contains(x)), "{rate} Hz");
        assert!(s.clipped() > 0 && s.source_peak() == f32::MAX, "{rate} Hz");
    }
}
