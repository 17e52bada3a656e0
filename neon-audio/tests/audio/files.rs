//! The committed files in `neon-audio/tests/data/audio` (made by its `make.sh`): every WAV variant,
//! FLAC and Ogg/Vorbis decode to the 440 Hz sine they carry.

use std::f64::consts::PI;
use std::path::PathBuf;

use neon_audio::{Audio, AudioStream};

pub(crate) fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/audio").join(name)
}

/// Frames in every 16 kHz file (0.25 s).
const FRAMES: usize = 4000;

/// The 16-bit values `make.sh` writes: `round(gain * 0.5 * 32767 * sin(2 pi 440 i / rate))`.
fn sine(rate: u32, gain: f64) -> Vec<f64> {
    let n = (0.25 * f64::from(rate)).round() as usize;
    (0..n)
        .map(|i| {
            (gain * 0.5 * 32767.0 * (2.0 * PI * 440.0 * i as f64 / f64::from(rate)).sin()).round()
        })
        .collect()
}

fn reference() -> Audio {
    Audio::open(data("ref16k.wav")).unwrap()
}

#[test]
fn the_reference_is_the_440_hz_sine() {
    let a = reference();
    assert_eq!((a.info.sample_rate, a.info.channels, a.len()), (16_000, 1, FRAMES));
    assert_eq!(a.info.format, "16-bit integer PCM");
    for (i, (&got, want)) in a.samples.iter().zip(sine(16_000, 1.0)).enumerate() {
        // Python's and Rust's sin may round differently near a half: at most 1 LSB apart.
        assert!((f64::from(got) * 32768.0 - want).abs() <= 1.0, "sample {i}");
    }
}

#[test]
fn wav_variants_decode_to_the_reference() {
    let want = reference().samples;
    for (file, format, declared) in [
        ("ext24in32.wav", "24-bit integer PCM in 32-bit containers", true),
        ("ext20in24.wav", "20-bit integer PCM in 24-bit containers", true),
        ("oddchunks.wav", "16-bit integer PCM", true),
        ("pipe_ffff.wav", "16-bit integer PCM", false),
        ("pipe_zero.wav", "16-bit integer PCM", false),
        ("pipe_sox.wav", "16-bit integer PCM", false),
    ] {
        let s = AudioStream::open(data(file)).unwrap();
        assert_eq!(s.info().format, format, "{file}");
        assert_eq!(s.info().frames, declared.then_some(FRAMES as u64), "{file}");
        let a = Audio::open(data(file)).unwrap();
        assert_eq!(a.info.frames, FRAMES as u64, "{file}");
        assert!(a.samples == want, "{file}");
    }
}

#[test]
fn eight_bit_is_the_reference_within_half_an_8_bit_step() {
    let want = reference().samples;
    let a = Audio::open(data("u8.wav")).unwrap();
    assert_eq!(a.info.format, "8-bit unsigned integer PCM");
    for (i, (&got, &want)) in a.samples.iter().zip(&want).enumerate() {
        // make.sh writes round(v / 256): within half a step of 1/128, plus v's own rounding.
        assert!((got - want).abs() <= 0.5 / 128.0 + 1.0 / 32768.0, "sample {i}");
    }
}

#[test]
fn flac_is_lossless() {
    let a = Audio::open(data("ref16k.flac")).unwrap();
    assert_eq!(a.info.format, "FLAC, 16-bit");
    assert_eq!(a.info.frames, FRAMES as u64);
    assert!(a.samples == reference().samples);
    let s = AudioStream::open(data("ref16k.flac")).unwrap();
    assert_eq!(s.info().frames, Some(FRAMES as u64));
    // Stereo at 44.1 kHz: the same down-mix and resampling as the WAV it was made from.
    let flac = Audio::open(data("stereo44k.flac")).unwrap();
    let wav = Audio::open(data("stereo44k.wav")).unwrap();
    assert_eq!((flac.info.sample_rate, flac.info.channels), (44_100, 2));
    assert_eq!(flac.info.frames, wav.info.frames);
    assert!(flac.samples == wav.samples);
}

#[test]
fn stereo_44k_is_the_resampled_channel_average() {
    // Left the sine, right -0.5 x the sine: the average is 0.25 x the sine's 0.5 amplitude.
    let a = Audio::open(data("stereo44k.wav")).unwrap();
    assert_eq!(a.len(), FRAMES);
    let mut max = 0f64;
    // The clip starts and stops abruptly (a sine cut at 0.25 s): skip the edges' ringing.
    for i in 200..FRAMES - 200 {
        let t = i as f64 / 16_000.0;
        let want = 0.25 * 0.5 * 32767.0 / 32768.0 * (2.0 * PI * 440.0 * t).sin();
        max = max.max((f64::from(a.samples[i]) - want).abs());
    }
    // 16-bit quantisation of both channels (half a step each, averaged: 1.5e-5) plus the
    // resampler's error on a 440 Hz tone (below 1e-5, see `resampled_signal_matches_...`);
    // measured 1.4e-5.
    assert!(max < 5e-5, "{max:e}");
}

#[test]
fn vorbis_is_close_to_the_reference() {
    let a = Audio::open(data("ref16k.ogg")).unwrap();
    assert_eq!((a.info.format.as_str(), a.info.sample_rate), ("Vorbis", 16_000));
    let want = reference().samples;
    // The decoder trims the encoder's delay and padding: the same length, time-aligned.
    assert_eq!(a.len(), want.len());
    let (mut err, mut power, mut dot, mut got_power) = (0f64, 0f64, 0f64, 0f64);
    for (&x, &y) in a.samples.iter().zip(&want) {
        let (x, y) = (f64::from(x), f64::from(y));
        err += (x - y) * (x - y);
        power += y * y;
        dot += x * y;
        got_power += x * x;
    }
    let snr_db = 10.0 * (power / err).log10();
    let correlation = dot / (power * got_power).sqrt();
    // Vorbis at quality 6 on a pure tone: measured SNR 41.7 dB, correlation 0.99997. Bounds
    // with margin for another encoder build: 30 dB (error 3% of the signal's RMS), 0.999.
    assert!(snr_db > 30.0 && correlation > 0.999, "SNR {snr_db:.1} dB, correlation {correlation}");
}

#[test]
fn flac_rates_outside_the_range_are_unsupported() {
    let e = AudioStream::open(data("rate500.flac")).err().unwrap();
    assert!(matches!(e, neon_audio::AudioError::Unsupported { .. }), "{e:?}");
    assert!(e.to_string().contains("500 Hz (supported: 1000 to 768000 Hz)"), "{e}");
}

#[test]
fn a_flac_header_without_frames_is_a_decode_error() {
    // STREAMINFO and the other metadata blocks, then nothing: not an I/O error.
    let bytes = std::fs::read(data("ref16k.flac")).unwrap();
    let frame = bytes.windows(2).position(|w| w[0] == 0xFF && w[1] & 0xFE == 0xF8).unwrap();
    let e = AudioStream::from_seekable("head.flac", std::io::Cursor::new(bytes[..frame].to_vec()))
        .err()
        .unwrap();
    assert!(matches!(e, neon_audio::AudioError::Decode { .. }), "{e:?}");
}
