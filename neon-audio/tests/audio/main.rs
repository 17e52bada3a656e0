//! Audio input: every WAV encoding, down-mixing, resampling accuracy against the analytic
//! signal, the error for every kind of bad file, and a small fuzz (no input may panic); the
//! committed WAV/FLAC/Ogg files (`files`); streaming (`stream`).

mod files;
mod stream;

use std::f64::consts::PI;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use neon_audio::{resample, Audio, AudioError, MAX_BELOW_ONE, SAMPLE_RATE};

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

// ---------------------------------------------------------------------------------------------
// Resampling
// ---------------------------------------------------------------------------------------------

/// Writes the faded test signal at `rate`, reads it back at 16 kHz and returns the maximum and
/// RMS error against the analytic signal sampled at 16 kHz, over the whole clip.
fn resampled_error(dir: &Dir, rate: u32, bits: u16, float: bool) -> (f64, f64, Audio) {
    let n = clip_len(rate);
    let path = dir.path(&format!("r{rate}_{bits}.wav"));
    write_wav(&path, spec(rate, 1, bits, float), &mono_frames(n, rate));
    let audio = Audio::open(&path).unwrap();
    assert_eq!(audio.info.sample_rate, rate);
    assert_eq!(audio.len(), resample::output_len(n, rate), "{rate}");
    assert_eq!(audio.len(), (n as f64 * 16_000.0 / f64::from(rate)).round() as usize);
    let mut max = 0f64;
    let mut sq = 0f64;
    for (i, &got) in audio.samples.iter().enumerate() {
        let e = (f64::from(got) - signal(i as f64 / 16_000.0, n, rate)).abs();
        max = max.max(e);
        sq += e * e;
    }
    (max, (sq / audio.len() as f64).sqrt(), audio)
}

/// Tolerances for the resampled faded signal (whole clip, edges included).
///
/// The signal's band (100 Hz to 3 kHz, plus the fades' sidebands, which fall off as f^-3) lies
/// far inside the resampler's passband (flat to 3e-6 up to 0.97 x the lower Nyquist frequency,
/// i.e. 3.88 kHz from 8 kHz, 7.76 kHz otherwise; measured by
/// `resampler_passband_is_flat_to_0_97_nyquist`), so the output should equal the analytic
/// signal up to rounding: f32 arithmetic in FFTs of at most 4096 points gives errors of the
/// order of 1e-6 of the signal level (measured: max 1.0e-5, RMS 3.5e-7 at 8 kHz, below
/// 2.2e-6 / 8.8e-7 elsewhere). Float files: max 5e-5 (5x the worst measured).
const FLOAT_MAX: f64 = 5e-5;
/// RMS bound for float files (6x the worst measured, 8.8e-7).
const FLOAT_RMS: f64 = 5e-6;
/// 16-bit files add the quantisation error, uniform in +-0.5 LSB: standard deviation
/// `sigma = 2^-15 / sqrt(12) = 8.8e-6` per input sample. The resampler's gain is 1 in the
/// passband and below 1e-4 outside, so the resampled error has at most this RMS (downsampling
/// keeps only 16000/rate of the white noise power). RMS bound: sigma + the float RMS bound.
const INT16_RMS: f64 = 8.81e-6 + FLOAT_RMS;
/// Max bound for 16-bit files: 6 sigma (Gaussian-like filtered noise over 24000 samples stays
/// below about 4.5 sigma; the measured max is 2.8e-5 = 3.2 sigma) plus the float max bound.
const INT16_MAX: f64 = 6.0 * 8.81e-6 + FLOAT_MAX;

#[test]
fn resampled_signal_matches_the_analytic_16_khz_signal() {
    let dir = Dir::new();
    for rate in [8_000, 11_025, 22_050, 32_000, 44_100, 48_000, 96_000] {
        let (max, rms, audio) = resampled_error(&dir, rate, 32, true);
        assert!(max < FLOAT_MAX && rms < FLOAT_RMS, "{rate} Hz float: max {max:e} rms {rms:e}");
        assert_eq!(audio.clipped, 0);
        let (max, rms, _) = resampled_error(&dir, rate, 16, false);
        assert!(max < INT16_MAX && rms < INT16_RMS, "{rate} Hz 16-bit: max {max:e} rms {rms:e}");
    }
}

#[test]
fn resampled_stereo_and_8_bit_files() {
    // Down-mixing happens before resampling; 8-bit quantisation (half step 2^-8 = 3.9e-3)
    // dominates the error: RMS at most 2^-7 / sqrt(12) = 2.3e-3.
    let dir = Dir::new();
    let rate = 44_100;
    let n = clip_len(rate);
    let frames: Vec<Vec<f64>> =
        mono_frames(n, rate).into_iter().map(|f| vec![f[0], f[0]]).collect();
    let path = dir.path("stereo8.wav");
    write_wav(&path, spec(rate, 2, 8, false), &frames);
    let audio = Audio::open(&path).unwrap();
    assert_eq!(
        (audio.info.channels, audio.info.format.as_str()),
        (2, "8-bit unsigned integer PCM")
    );
    let mut sq = 0f64;
    for (i, &got) in audio.samples.iter().enumerate() {
        let e = f64::from(got) - signal(i as f64 / 16_000.0, n, rate);
        sq += e * e;
        // 6 sigma of the quantisation noise.
        assert!(e.abs() < 6.0 * 2.26e-3, "sample {i}: {e}");
    }
    let rms = (sq / audio.len() as f64).sqrt();
    assert!(rms < 2.26e-3, "{rms}");
}

#[test]
fn resampler_passband_is_flat_to_0_97_nyquist() {
    // A sine at 0.97 x the lower Nyquist frequency comes out with the same amplitude and
    // phase (time alignment) to within 1e-5 of its amplitude (measured: 2.5e-6) away from the
    // clip edges (the sine starts abruptly; 2000 samples skipped at each end).
    let dir = Dir::new();
    for rate in [8_000u32, 11_025, 22_050, 44_100, 48_000] {
        let f = 0.97 * f64::from(rate.min(16_000)) / 2.0;
        assert!(f < resample::cutoff_hz(rate));
        let n = rate as usize;
        let frames: Vec<Vec<f64>> =
            (0..n).map(|i| vec![0.5 * (2.0 * PI * f * i as f64 / f64::from(rate)).sin()]).collect();
        let path = dir.path("sine.wav");
        write_wav(&path, spec(rate, 1, 32, true), &frames);
        let audio = Audio::open(&path).unwrap();
        let mut max = 0f64;
        for i in 2000..audio.len() - 2000 {
            let want = 0.5 * (2.0 * PI * f * i as f64 / 16_000.0).sin();
            max = max.max((f64::from(audio.samples[i]) - want).abs() / 0.5);
        }
        assert!(max < 1e-5, "{rate} Hz, {f} Hz: {max:e}");
    }
}

#[test]
fn resampler_output_is_time_aligned() {
    // An impulse at input sample k (time k / rate) comes out centred at 16 kHz sample
    // k * 16000 / rate: the output's centroid, over the main lobe, is within 0.01 samples.
    let dir = Dir::new();
    for (rate, k) in [(44_100u32, 22_050usize), (48_000, 24_000), (8_000, 4_000), (22_050, 11_025)]
    {
        let mut frames = vec![vec![0.0]; 2 * k];
        frames[k][0] = 0.5;
        let path = dir.path("impulse.wav");
        write_wav(&path, spec(rate, 1, 32, true), &frames);
        let audio = Audio::open(&path).unwrap();
        let centre = k as f64 * 16_000.0 / f64::from(rate);
        let peak = audio
            .samples
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
            .unwrap();
        assert_eq!(peak, centre.round() as usize, "{rate}");
        // The band-limited impulse is symmetric about its centre: compare mirrored samples.
        for d in 1..200 {
            let (a, b) = (audio.samples[peak - d], audio.samples[peak + d]);
            assert!((a - b).abs() < 1e-6, "{rate} Hz: asymmetric at +-{d}: {a} {b}");
        }
    }
}

#[test]
fn abrupt_edges_ring_as_documented() {
    // A constant 0.5 (a jump from the implicit zeros before the clip): the ringing after the
    // start stays below 1% of the jump from 1.6 ms on (26 samples) and below 0.1% from 11.2 ms
    // on (180 samples) for every rate; measured 26 / 178 samples at 8 kHz, at most 11 / 63
    // at 22.05 kHz and above.
    let dir = Dir::new();
    for rate in [8_000u32, 22_050, 44_100, 48_000] {
        let frames = vec![vec![0.5]; rate as usize];
        let path = dir.path("dc.wav");
        write_wav(&path, spec(rate, 1, 32, true), &frames);
        let audio = Audio::open(&path).unwrap();
        let mid = audio.len() / 2;
        for (i, &x) in audio.samples[..mid].iter().enumerate() {
            let rel = (f64::from(x) - 0.5).abs() / 0.5;
            if i >= 26 {
                assert!(rel < 1e-2, "{rate} Hz sample {i}: {rel}");
            }
            if i >= 180 {
                assert!(rel < 1e-3, "{rate} Hz sample {i}: {rel}");
            }
        }
    }
}

#[test]
fn short_clips_resample_to_the_rounded_length() {
    let dir = Dir::new();
    for rate in [8_000u32, 44_100, 48_000, 12_345] {
        for n in [1usize, 2, 3, 5, 100] {
            let path = dir.path("short.wav");
            write_wav(&path, spec(rate, 1, 16, false), &vec![vec![0.5]; n]);
            let audio = Audio::open(&path).unwrap();
            assert_eq!(audio.len(), resample::output_len(n, rate), "{rate} Hz, {n} samples");
            assert!(audio.samples.iter().all(|x| (-1.0..1.0).contains(x)));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A valid 16-bit mono 44.1 kHz file of `n` samples, as bytes.
fn valid_wav_bytes(n: usize, spec: hound::WavSpec) -> Vec<u8> {
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
fn data_start(bytes: &[u8]) -> usize {
    bytes.windows(4).position(|w| w == b"data").unwrap() + 8
}

fn read_bytes(name: &str, bytes: &[u8]) -> Result<Audio, AudioError> {
    Audio::from_reader(name, Cursor::new(bytes.to_vec()))
}

/// Checks that `e` displays as one line starting with the file name.
fn one_line_naming(e: &AudioError, name: &str) -> String {
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
fn raw_wav(fmt: &[u8], data: &[u8]) -> Vec<u8> {
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
fn fmt16(tag: u16, channels: u16, rate: u32, block_align: u16, bits: u16) -> Vec<u8> {
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

// ---------------------------------------------------------------------------------------------
// Fuzz: no input panics
// ---------------------------------------------------------------------------------------------

/// xorshift64*: a small deterministic generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Reads `bytes`; on success checks the result's invariants, on error its message.
fn read_any(bytes: &[u8]) {
    match read_bytes("fuzz", bytes) {
        Ok(a) => {
            assert_eq!(a.len(), resample::output_len(a.info.frames as usize, a.info.sample_rate));
            assert!(a.samples.iter().all(|x| (-1.0..1.0).contains(x)));
        }
        Err(e) => {
            one_line_naming(&e, "fuzz");
        }
    }
}

#[test]
fn fuzz_random_bytes_and_headers() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let len = rng.below(200);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Half the cases get a valid signature so the header parser is exercised too.
        if case % 2 == 0 && len >= 12 {
            bytes[..4].copy_from_slice(b"RIFF");
            bytes[8..12].copy_from_slice(b"WAVE");
        }
        if case % 4 == 0 && len >= 24 {
            bytes[12..16].copy_from_slice(b"fmt ");
            bytes[16..20].copy_from_slice(&[16, 0, 0, 0]);
        }
        read_any(&bytes);
    }
}

#[test]
fn fuzz_mutated_and_truncated_valid_files() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let specs = [
        spec(44_100, 1, 16, false),
        spec(16_000, 2, 8, false),
        spec(48_000, 3, 24, false),
        spec(22_050, 1, 32, true),
        spec(8_000, 1, 32, false),
    ];
    for case in 0..2000 {
        let mut bytes = valid_wav_bytes(1 + rng.below(300), specs[case % specs.len()]);
        let start = data_start(&bytes);
        // Flip 1 to 4 bytes, mostly in the header.
        for _ in 0..1 + rng.below(4) {
            let at = if rng.below(4) == 0 { rng.below(bytes.len()) } else { rng.below(start) };
            bytes[at] = rng.next() as u8;
        }
        // And cut it short every other time.
        if case % 2 == 1 {
            bytes.truncate(rng.below(bytes.len() + 1));
        }
        read_any(&bytes);
    }
}
