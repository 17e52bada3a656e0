//! The error for every kind of bad file: missing, not a WAV, empty, truncated, hand-written
//! headers, unsupported encodings, malformed headers, non-finite samples, too short.

use std::io::Cursor;

use neon_audio::{Audio, AudioError};

use super::{quantise, spec, write_wav, Dir};

/// A valid 16-bit mono 44.1 kHz file of `n` samples, as bytes.
pub(crate) fn valid_wav_bytes(n: usize, spec: hound::WavSpec) -> Vec<u8> {
    let mut cursor = Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
    for i in 0..n * usize::from(spec.channels) {
        let x = 0.5 * (i as f64 * 0.05).sin();
        match (spec.sample_format, spec.bits_per_sample) {
            (hound::SampleFormat::Float, _) => w.write_sample(x as f32).unwrap(),
            (_, 8) => w.write_sample(quantise(x, 8) as i8).unwrap(),
            (_, 16) => w.write_sample(quantise(x, 16) as i16).unwrap(),
            (_, bits) => w.write_sample(quantise(x, bits)).unwrap(),
        }
    }
    w.finalize().unwrap();
    cursor.into_inner()
}

/// Offset of the first sample byte of a hound-written file (after "data" and its length).
pub(crate) fn data_start(bytes: &[u8]) -> usize {
    bytes.windows(4).position(|w| w == b"data").unwrap() + 8
}

pub(crate) fn read_bytes(name: &str, bytes: &[u8]) -> Result<Audio, AudioError> {
    Audio::from_reader(name, Cursor::new(bytes.to_vec()))
}

/// Checks that `e` displays as one line starting with the file name.
pub(crate) fn one_line_naming(e: &AudioError, name: &str) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "{s:?}");
    assert!(s.contains(name), "{s:?}");
    assert_eq!(e.name(), name);
    s
}

#[test]
fn missing_file() {
    let dir = Dir::new();
    let path = dir.path("missing.wav");
    let e = Audio::open(&path).unwrap_err();
    let AudioError::Io { source, .. } = &e else { panic!("{e:?}") };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let s = one_line_naming(&e, &path.display().to_string());
    assert!(s.starts_with("cannot read "), "{s}");
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn a_directory_is_unreadable() {
    let dir = Dir::new();
    let e = Audio::open(dir.0.path()).unwrap_err();
    assert!(matches!(e, AudioError::Io { .. }), "{e:?}");
}

#[test]
fn text_and_other_riff_files_are_not_wav() {
    let dir = Dir::new();
    let path = dir.path("notes.wav");
    std::fs::write(&path, "hello, this is a text file\n").unwrap();
    let e = Audio::open(&path).unwrap_err();
    assert!(matches!(e, AudioError::NotWav { .. }), "{e:?}");
    let s = one_line_naming(&e, &path.display().to_string());
    assert!(s.contains("not a WAV, FLAC or Ogg file") && s.contains("\"hell\""), "{s}");

    let e = read_bytes("movie.avi", b"RIFF\x10\0\0\0AVI LIST\x04\0\0\0abcd").unwrap_err();
    assert!(matches!(e, AudioError::NotWav { .. }), "{e:?}");
    assert!(e.to_string().contains("\"AVI \""), "{e}");

    let e = read_bytes("empty.wav", b"").unwrap_err();
    assert!(matches!(e, AudioError::NotWav { .. }), "{e:?}");
    assert!(e.to_string().contains("empty"), "{e}");

    let e = read_bytes("short.txt", b"ab").unwrap_err();
    assert!(matches!(e, AudioError::NotWav { .. }), "{e:?}");
}

#[test]
fn zero_samples() {
    let dir = Dir::new();
    let path = dir.path("empty.wav");
    write_wav(&path, spec(16_000, 1, 16, false), &[]);
    let e = Audio::open(&path).unwrap_err();
    assert!(matches!(e, AudioError::NoSamples { .. }), "{e:?}");
    let s = one_line_naming(&e, &path.display().to_string());
    assert!(s.ends_with("has no samples"), "{s}");
    // Also at another rate and width (the resampler is never reached).
    let bytes = valid_wav_bytes(0, spec(44_100, 2, 24, false));
    assert!(matches!(read_bytes("x", &bytes), Err(AudioError::NoSamples { .. })));
}

#[test]
fn truncated_header() {
    let dir = Dir::new();
    let bytes = valid_wav_bytes(1000, spec(44_100, 1, 16, false));
    let path = dir.path("cut.wav");
    std::fs::write(&path, &bytes[..30]).unwrap();
    let e = Audio::open(&path).unwrap_err();
    assert!(matches!(e, AudioError::TruncatedHeader { len: 30, .. }), "{e:?}");
    let s = one_line_naming(&e, &path.display().to_string());
    assert!(s.contains("truncated WAV header"), "{s}");
}

#[test]
fn truncated_data() {
    let dir = Dir::new();
    let bytes = valid_wav_bytes(1000, spec(44_100, 1, 16, false));
    let start = data_start(&bytes);
    let path = dir.path("cut.wav");
    std::fs::write(&path, &bytes[..bytes.len() - 101]).unwrap();
    let e = Audio::open(&path).unwrap_err();
    let AudioError::TruncatedData { declared, available, .. } = e else { panic!("{e:?}") };
    assert_eq!((declared, available), (2000, (2000 - 101) as u64));
    assert_eq!(start + 2000, bytes.len());
    let s = one_line_naming(&e, &path.display().to_string());
    assert!(s.contains("truncated sample data (1899 of 2000 bytes present)"), "{s}");
}

#[test]
fn every_prefix_of_a_valid_file_is_an_error_of_the_right_kind() {
    for spec in [spec(44_100, 1, 16, false), spec(48_000, 3, 24, false), spec(8_000, 2, 32, true)] {
        let bytes = valid_wav_bytes(50, spec);
        let start = data_start(&bytes);
        assert!(read_bytes("ok", &bytes).is_ok());
        for cut in 0..bytes.len() {
            let e = read_bytes("cut", &bytes[..cut]).unwrap_err();
            let ok = match cut {
                0 => matches!(e, AudioError::NotWav { .. }),
                c if c < start => {
                    matches!(e, AudioError::TruncatedHeader { len, .. } if len == c as u64)
                }
                c => matches!(e, AudioError::TruncatedData { available, .. }
                              if available == (c - start) as u64),
            };
            assert!(ok, "{spec:?} cut at {cut} (data at {start}): {e:?}");
        }
    }
}

/// A WAV file with a hand-written fmt chunk (`fmt` bytes) and `data` bytes.
pub(crate) fn raw_wav(fmt: &[u8], data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(b"RIFF");
    v.extend_from_slice(&((4 + 8 + fmt.len() + 8 + data.len()) as u32).to_le_bytes());
    v.extend_from_slice(b"WAVE");
    v.extend_from_slice(b"fmt ");
    v.extend_from_slice(&(fmt.len() as u32).to_le_bytes());
    v.extend_from_slice(fmt);
    v.extend_from_slice(b"data");
    v.extend_from_slice(&(data.len() as u32).to_le_bytes());
    v.extend_from_slice(data);
    v
}

/// A 16-byte PCMWAVEFORMAT / WAVEFORMAT body.
pub(crate) fn fmt16(tag: u16, channels: u16, rate: u32, block_align: u16, bits: u16) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&tag.to_le_bytes());
    v.extend_from_slice(&channels.to_le_bytes());
    v.extend_from_slice(&rate.to_le_bytes());
    v.extend_from_slice(&(rate * u32::from(block_align)).to_le_bytes());
    v.extend_from_slice(&block_align.to_le_bytes());
    v.extend_from_slice(&bits.to_le_bytes());
    v
}

/// A 40-byte WAVEFORMATEXTENSIBLE body with `valid_bits` and the sub-format `sub_tag`.
fn fmt_extensible(
    channels: u16,
    rate: u32,
    block_align: u16,
    bits: u16,
    valid_bits: u16,
    sub_tag: u16,
) -> Vec<u8> {
    let mut v = fmt16(0xFFFE, channels, rate, block_align, bits);
    v.extend_from_slice(&22u16.to_le_bytes());
    v.extend_from_slice(&valid_bits.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    // KSDATAFORMAT_SUBTYPE_*: the tag, then 00000000-0010-8000-00AA00389B71.
    v.extend_from_slice(&sub_tag.to_le_bytes());
    v.extend_from_slice(&[
        0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71,
    ]);
    v
}

#[test]
fn hand_written_headers_are_read() {
    // A 16-byte PCMWAVEFORMAT header (hound writes 18 or 40): 16-bit, 2 channels.
    let data: Vec<u8> = [1000i16, -3000, 2000, 4000].iter().flat_map(|v| v.to_le_bytes()).collect();
    let audio = read_bytes("pcm16", &raw_wav(&fmt16(1, 2, 16_000, 4, 16), &data)).unwrap();
    assert_eq!(audio.samples, [-1000.0 / 32768.0, 3000.0 / 32768.0]);
}

#[test]
fn extensible_24_in_32_and_20_in_24() {
    // The valid bits are the top bits of the container (hound read the low 3 bytes of 4, so
    // these files were garbage); the unused low bits are cleared.
    let values = [0x12_3456i32, -0x10_0000, 0x7F_FFFF, -0x80_0000];
    let data: Vec<u8> = values.iter().flat_map(|v| ((v << 8) | 0x5A).to_le_bytes()).collect();
    let fmt = fmt_extensible(1, 16_000, 4, 32, 24, 1);
    let audio = read_bytes("ext24", &raw_wav(&fmt, &data)).unwrap();
    assert_eq!(audio.info.format, "24-bit integer PCM in 32-bit containers");
    let want: Vec<f32> = values.iter().map(|&v| v as f32 / 8_388_608.0).collect();
    assert_eq!(audio.samples, want);
    // 20 valid bits in 3-byte containers, stereo.
    let values = [0x1_2345i32, -0x8_0000, 0x7_FFFF, -1];
    let data: Vec<u8> =
        values.iter().flat_map(|v| (((v << 4) | 0xF) as u32).to_le_bytes()[..3].to_vec()).collect();
    let fmt = fmt_extensible(2, 16_000, 6, 24, 20, 1);
    let audio = read_bytes("ext20", &raw_wav(&fmt, &data)).unwrap();
    assert_eq!(audio.info.format, "20-bit integer PCM in 24-bit containers");
    let want: Vec<f32> = values
        .chunks(2)
        .map(|lr| ((f64::from(lr[0]) + f64::from(lr[1])) / 2.0 / 524_288.0) as f32)
        .collect();
    assert_eq!(audio.samples, want);
}

#[test]
fn unsupported_encodings() {
    let cases: [(&str, Vec<u8>, &str); 6] = [
        ("alaw", raw_wav(&fmt16(6, 1, 8_000, 1, 8), &[0; 8]), "format tag 0x0006 (A-law)"),
        ("adpcm", raw_wav(&fmt16(2, 1, 8_000, 256, 4), &[0; 8]), "(Microsoft ADPCM)"),
        ("f64", raw_wav(&fmt16(3, 1, 16_000, 8, 64), &[0; 16]), "64-bit IEEE float"),
        (
            "alaw-ext",
            raw_wav(&fmt_extensible(1, 16_000, 1, 8, 8, 6), &[0; 6]),
            "format tag 0x0006 (A-law)",
        ),
        (
            "rate",
            raw_wav(&fmt16(1, 1, 500, 2, 16), &[0; 4]),
            "500 Hz (supported: 1000 to 768000 Hz)",
        ),
        ("rf64", b"RF64\xff\xff\xff\xffWAVEds64".to_vec(), "RF64"),
    ];
    for (name, bytes, what) in cases {
        let e = read_bytes(name, &bytes).unwrap_err();
        assert!(matches!(e, AudioError::Unsupported { .. }), "{name}: {e:?}");
        let s = one_line_naming(&e, name);
        assert!(s.contains(what), "{name}: {s}");
    }
}

#[test]
fn malformed_headers() {
    // Zero sample rate (hound's byte-rate check passes: 0 = 2 * 0).
    let e = read_bytes("rate0", &raw_wav(&fmt16(1, 1, 0, 2, 16), &[0; 4])).unwrap_err();
    assert!(matches!(e, AudioError::Malformed { .. }), "{e:?}");
    assert!(e.to_string().contains("0 Hz"), "{e}");
    // A data length that is not a whole number of samples.
    let e = read_bytes("odd", &raw_wav(&fmt16(1, 1, 16_000, 2, 16), &[0; 5])).unwrap_err();
    assert!(matches!(e, AudioError::Malformed { .. }), "{e:?}");
    // Zero channels.
    let e = read_bytes("ch0", &raw_wav(&fmt16(1, 0, 16_000, 2, 16), &[0; 4])).unwrap_err();
    assert!(matches!(e, AudioError::Malformed { .. }), "{e:?}");
}

#[test]
fn non_finite_float_samples() {
    let data: Vec<u8> =
        [0.5f32, 0.25, -0.5, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
    let e = read_bytes("nan", &raw_wav(&fmt16(3, 2, 16_000, 8, 32), &data)).unwrap_err();
    assert!(matches!(e, AudioError::NonFinite { frame: 1, channel: 1, .. }), "{e:?}");
    one_line_naming(&e, "nan");
}

#[test]
fn too_short_for_a_consumer() {
    let bytes = valid_wav_bytes(441, spec(44_100, 1, 16, false));
    let audio = read_bytes("blip.wav", &bytes).unwrap();
    assert_eq!(audio.len(), 160);
    assert!(audio.require_min_samples(160, "x").is_ok());
    let e = audio.require_min_samples(1280, "openWakeWord (one 80 ms frame)").unwrap_err();
    assert!(matches!(e, AudioError::TooShort { samples: 160, min: 1280, .. }), "{e:?}");
    let s = one_line_naming(&e, "blip.wav");
    assert_eq!(
        s,
        "blip.wav: too short for openWakeWord (one 80 ms frame): 160 samples at 16 kHz \
         (10.0 ms), need at least 1280 (80.0 ms)"
    );
}
