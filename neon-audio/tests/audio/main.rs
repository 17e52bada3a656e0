//! Audio input: every WAV encoding and down-mixing (here), resampling accuracy against the
//! analytic signal (`resampling`), the error for every kind of bad file (`errors`), a small fuzz
//! (`fuzz`: no input may panic), the committed WAV/FLAC/Ogg files (`files`), streaming
//! (`stream`).

mod errors;
mod files;
mod fuzz;
mod resampling;
mod stream;

use std::f64::consts::PI;
use std::path::{Path, PathBuf};

use neon_audio::{Audio, MAX_BELOW_ONE, SAMPLE_RATE};

/// A WAV format: `bits`-bit integer or (with `float`) 32-bit float samples.
fn spec(rate: u32, channels: u16, bits: u16, float: bool) -> hound::WavSpec {
    let sample_format = if float { hound::SampleFormat::Float } else { hound::SampleFormat::Int };
    hound::WavSpec { channels, sample_rate: rate, bits_per_sample: bits, sample_format }
}

/// Length of the test clips, in seconds.
const SECS: f64 = 1.5;
/// Length of the raised-cosine fade at each end, in seconds.
const FADE: f64 = 0.025;

/// The test signal at time `t` (s): a 440 Hz sine (amplitude 0.4) plus a linear chirp from
/// 100 Hz to 3 kHz over the clip (amplitude 0.4), peak 0.8.
fn tone_plus_chirp(t: f64) -> f64 {
    let chirp_phase = 100.0 * t + (3000.0 - 100.0) * t * t / (2.0 * SECS);
    0.4 * (2.0 * PI * 440.0 * t).sin() + 0.4 * (2.0 * PI * chirp_phase).sin()
}

/// Raised-cosine fade-in and fade-out over [`FADE`] at both ends of `[0, end]`, zero outside:
/// makes the clip smooth at its edges, so its zero-extension (what the resampler sees) is
/// band-limited to well inside the passband and the whole output can be checked.
fn fade(t: f64, end: f64) -> f64 {
    if !(0.0..=end).contains(&t) {
        return 0.0;
    }
    let ramp = |d: f64| if d < FADE { 0.5 - 0.5 * (PI * d / FADE).cos() } else { 1.0 };
    ramp(t) * ramp(end - t)
}

/// The faded test signal of a clip of `n` samples at `rate` Hz, at time `t` (s).
fn signal(t: f64, n: usize, rate: u32) -> f64 {
    tone_plus_chirp(t) * fade(t, (n - 1) as f64 / f64::from(rate))
}

/// Full-scale value `x` quantised to a `bits`-bit integer: `round(x * 2^(bits-1))`, saturated.
fn quantise(x: f64, bits: u16) -> i32 {
    let full = f64::from(1u32 << (bits - 1));
    (x * full).round().clamp(-full, full - 1.0) as i32
}

/// Writes `frames[i][c]` (full scale) as a WAV file with `spec`, integer formats quantised with
/// [`quantise`]; returns the values as decoded (`q / 2^(bits-1)`, or the `f32` value).
fn write_wav(path: &Path, spec: hound::WavSpec, frames: &[Vec<f64>]) -> Vec<Vec<f64>> {
    write_wav_ex(
        path,
        hound::WavSpecEx { spec, bytes_per_sample: spec.bits_per_sample / 8 },
        frames,
    )
}

fn write_wav_ex(path: &Path, spec_ex: hound::WavSpecEx, frames: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let spec = spec_ex.spec;
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = hound::WavWriter::new_with_spec_ex(file, spec_ex).unwrap();
    let mut decoded = Vec::new();
    for frame in frames {
        assert_eq!(frame.len(), usize::from(spec.channels));
        let mut out = Vec::new();
        for &x in frame {
            match spec.sample_format {
                hound::SampleFormat::Float => {
                    w.write_sample(x as f32).unwrap();
                    out.push(f64::from(x as f32));
                }
                hound::SampleFormat::Int => {
                    let q = quantise(x, spec.bits_per_sample);
                    match spec.bits_per_sample {
                        8 => w.write_sample(q as i8).unwrap(),
                        16 => w.write_sample(q as i16).unwrap(),
                        _ => w.write_sample(q).unwrap(),
                    }
                    out.push(f64::from(q) / f64::from(1u32 << (spec.bits_per_sample - 1)));
                }
            }
        }
        decoded.push(out);
    }
    w.finalize().unwrap();
    decoded
}

/// `n` mono frames of the faded test signal at `rate`.
fn mono_frames(n: usize, rate: u32) -> Vec<Vec<f64>> {
    (0..n).map(|i| vec![signal(i as f64 / f64::from(rate), n, rate)]).collect()
}

fn clip_len(rate: u32) -> usize {
    (SECS * f64::from(rate)).round() as usize
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

// ---------------------------------------------------------------------------------------------
// Encodings at 16 kHz (no resampling: the decoded values are exact)
// ---------------------------------------------------------------------------------------------

#[test]
fn every_encoding_decodes_exactly_at_16_khz() {
    let dir = Dir::new();
    let n = clip_len(SAMPLE_RATE);
    let frames = mono_frames(n, SAMPLE_RATE);
    // hound's 24-bit samples in 4-byte containers hold the value in the low bits, against the
    // WAV format (valid bits are the top bits): that case is `extensible_24_in_32_and_20_in_24`.
    let cases: [(hound::WavSpecEx, &str); 5] = [
        (ex(spec(16_000, 1, 8, false), 1), "8-bit unsigned integer PCM"),
        (ex(spec(16_000, 1, 16, false), 2), "16-bit integer PCM"),
        (ex(spec(16_000, 1, 24, false), 3), "24-bit integer PCM"),
        (ex(spec(16_000, 1, 32, false), 4), "32-bit integer PCM"),
        (ex(spec(16_000, 1, 32, true), 4), "32-bit float PCM"),
    ];
    for (spec_ex, format) in cases {
        let bits = spec_ex.spec.bits_per_sample;
        let path = dir.path(&format!(
            "{bits}-{}.wav",
            spec_ex.spec.sample_format == hound::SampleFormat::Float
        ));
        let decoded = write_wav_ex(&path, spec_ex, &frames);
        let audio = Audio::open(&path).unwrap();
        assert_eq!(audio.info.format, format);
        assert_eq!((audio.info.sample_rate, audio.info.channels), (16_000, 1));
        assert_eq!(audio.info.frames, n as u64);
        assert_eq!(audio.len(), n);
        assert!((audio.duration_seconds() - n as f64 / 16_000.0).abs() < 1e-12);
        assert_eq!(audio.clipped, 0);
        assert_eq!(audio.name, path.display().to_string());
        // Decoding is `q / 2^(bits-1)` rounded once to f32: exact for 8 to 24 bits, within
        // f32 rounding for 32-bit integers.
        for (i, (&got, want)) in audio.samples.iter().zip(&decoded).enumerate() {
            assert_eq!(got, want[0] as f32, "{format} sample {i}");
        }
        // ... and within half a quantisation step of the analytic signal (an f32 step for
        // float, i.e. 2^-25 relative to the peak 0.8 < 1).
        let half_step = match spec_ex.spec.sample_format {
            hound::SampleFormat::Float => 2f64.powi(-25),
            hound::SampleFormat::Int => 0.5 / f64::from(1u32 << (bits - 1)),
        };
        for (i, &got) in audio.samples.iter().enumerate() {
            let want = signal(i as f64 / 16_000.0, n, 16_000);
            // f32 rounding of the decoded value adds at most 2^-25 (values below 1).
            let tol = half_step + 2f64.powi(-25);
            assert!((f64::from(got) - want).abs() <= tol, "{format} sample {i}");
        }
    }
}

fn ex(spec: hound::WavSpec, bytes_per_sample: u16) -> hound::WavSpecEx {
    hound::WavSpecEx { spec, bytes_per_sample }
}

#[test]
fn int16_values_round_trip_exactly() {
    let dir = Dir::new();
    let path = dir.path("i16.wav");
    let values: Vec<i16> = (0..4000).map(|i| ((i * 7919) % 65536 - 32768) as i16).collect();
    let mut w = hound::WavWriter::create(&path, spec(16_000, 1, 16, false)).unwrap();
    for &v in &values {
        w.write_sample(v).unwrap();
    }
    w.finalize().unwrap();
    let audio = Audio::open(&path).unwrap();
    assert_eq!(audio.to_i16(), values);
    let scaled: Vec<f32> = values.iter().map(|&v| f32::from(v)).collect();
    assert_eq!(audio.to_i16_scale(), scaled);
    assert!(audio.samples.iter().all(|&x| (-1.0..1.0).contains(&x)));
}

#[test]
fn full_scale_32_bit_and_float_overs_are_clamped_into_range() {
    let dir = Dir::new();
    // i32::MAX / 2^31 rounds to 1.0 in f32: clamped to the largest value below 1, not counted.
    let path = dir.path("i32.wav");
    let mut w = hound::WavWriter::create(&path, spec(16_000, 1, 32, false)).unwrap();
    for v in [i32::MAX, i32::MIN, 0] {
        w.write_sample(v).unwrap();
    }
    w.finalize().unwrap();
    let audio = Audio::open(&path).unwrap();
    assert_eq!(audio.samples, [MAX_BELOW_ONE, -1.0, 0.0]);
    assert_eq!(audio.clipped, 0);
    assert_eq!(audio.to_i16(), [i16::MAX, i16::MIN, 0]);
    // Float files may exceed full scale: clamped and counted.
    let path = dir.path("over.wav");
    let mut w = hound::WavWriter::create(&path, spec(16_000, 1, 32, true)).unwrap();
    for v in [1.5f32, -2.0, 0.25, 1.0] {
        w.write_sample(v).unwrap();
    }
    w.finalize().unwrap();
    let audio = Audio::open(&path).unwrap();
    assert_eq!(audio.samples, [MAX_BELOW_ONE, -1.0, 0.25, MAX_BELOW_ONE]);
    assert_eq!(audio.clipped, 2);
}

// ---------------------------------------------------------------------------------------------
// Down-mixing
// ---------------------------------------------------------------------------------------------

#[test]
fn stereo_is_the_average_of_two_different_channels() {
    let dir = Dir::new();
    let n = clip_len(16_000);
    // Left: the 440 Hz tone; right: a 1 kHz tone at another level (different channels).
    let frames: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let t = i as f64 / 16_000.0;
            vec![0.6 * (2.0 * PI * 440.0 * t).sin(), -0.3 * (2.0 * PI * 1000.0 * t).cos()]
        })
        .collect();
    for (bits, float) in [(16, false), (24, false), (32, true), (8, false)] {
        let path = dir.path(&format!("stereo{bits}.wav"));
        let decoded = write_wav(&path, spec(16_000, 2, bits, float), &frames);
        let audio = Audio::open(&path).unwrap();
        assert_eq!(audio.info.channels, 2);
        assert_eq!(audio.len(), n);
        for (i, (&got, lr)) in audio.samples.iter().zip(&decoded).enumerate() {
            // The average of two decoded values, rounded once to f32.
            assert_eq!(got, ((lr[0] + lr[1]) / 2.0) as f32, "{bits}-bit frame {i}");
        }
        // Not just one channel: both differ from the average.
        let differs =
            |c: usize| audio.samples.iter().zip(&decoded).any(|(&m, lr)| m != lr[c] as f32);
        assert!(differs(0) && differs(1));
    }
}

#[test]
fn many_channels_are_averaged() {
    // More than two channels makes hound write WAVE_FORMAT_EXTENSIBLE.
    let dir = Dir::new();
    for channels in [3u16, 6] {
        let frames: Vec<Vec<f64>> = (0..3000)
            .map(|i| {
                (0..channels)
                    .map(|c| {
                        0.1 * f64::from(c) - 0.2 + 0.3 * (i as f64 * 0.01 * f64::from(c + 1)).sin()
                    })
                    .collect()
            })
            .collect();
        let path = dir.path(&format!("ch{channels}.wav"));
        let decoded = write_wav(&path, spec(16_000, channels, 16, false), &frames);
        let audio = Audio::open(&path).unwrap();
        assert_eq!(audio.info.channels, channels);
        for (&got, frame) in audio.samples.iter().zip(&decoded) {
            let mean = frame.iter().sum::<f64>() / f64::from(channels);
            assert_eq!(got, mean as f32);
        }
    }
}
