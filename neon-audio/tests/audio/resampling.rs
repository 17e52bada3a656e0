//! Resampling: accuracy against the analytic signal, the passband, time alignment, the ringing
//! of abrupt edges, the output length of short clips.

use std::f64::consts::PI;

use neon_audio::{resample, Audio};

use super::{clip_len, mono_frames, signal, spec, write_wav, Dir};

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
