//! The openWakeWord mel frontend against an independent f64 implementation written here
//! (direct DFT, the filterbank coded from the Slaney formulas in Hz, f64 logarithm): a chirp
//! plus noise at int16 scale, silence (the -100 dB floor), a loud burst in silence (the
//! 80 dB floor), frame counts, errors, and NEON vs portable, on every backend
//! (`backend_tests!`). Zero allocation: `tests/tests/oww_alloc.rs`.

use std::f64::consts::PI;

use neon_models::openwakeword::mel::{to_features, MelFrontend, FRONTEND, N_BINS, N_MELS};
use neon_runtime::{Backend, Error, Portable};

// ---------------------------------------------------------------------------------------
// Independent f64 reference
// ---------------------------------------------------------------------------------------

/// Slaney's mel scale in Hz, written piecewise from its definition: 3 bands per 200 Hz
/// below 1 kHz, and 27 bands per factor 6.4 above.
fn slaney_mel(f: f64) -> f64 {
    if f < 1000.0 {
        3.0 * f / 200.0
    } else {
        15.0 + 27.0 * (f / 1000.0).ln() / 6.4f64.ln()
    }
}
fn slaney_hz(m: f64) -> f64 {
    if m < 15.0 {
        200.0 * m / 3.0
    } else {
        1000.0 * 6.4f64.powf((m - 15.0) / 27.0)
    }
}

/// Filterbank `[32][257]` in f64: triangles interpolated in Hz between the edges, rising
/// from `f_lo` to `f_c` and falling to `f_hi`, scaled by `2 / (f_hi - f_lo)`.
fn reference_filterbank() -> Vec<[f64; N_BINS]> {
    let (m0, m1) = (slaney_mel(60.0), slaney_mel(3800.0));
    let edges: Vec<f64> = (0..34).map(|i| slaney_hz(m0 + (m1 - m0) * i as f64 / 33.0)).collect();
    (0..N_MELS)
        .map(|j| {
            let (lo, c, hi) = (edges[j], edges[j + 1], edges[j + 2]);
            let mut row = [0.0; N_BINS];
            for (k, w) in row.iter_mut().enumerate() {
                let f = k as f64 * 8000.0 / 256.0;
                let tri = if f <= lo || f >= hi {
                    0.0
                } else if f <= c {
                    (f - lo) / (c - lo)
                } else {
                    (hi - f) / (hi - c)
                };
                *w = tri * 2.0 / (hi - lo);
            }
            row
        })
        .collect()
}

/// The frontend in f64: Hann window, direct DFT (angles reduced exactly mod 512), power,
/// mel, dB, floor. Returns `[frames][32]` flattened.
fn reference(samples: &[f32]) -> Vec<f64> {
    reference_with_sensitivity(samples).0
}

/// [`reference`], plus for each output the sensitivity of its relative power error to a
/// norm-wise relative FFT error `e`: a perturbation `dX` with `||dX|| <= e ||X||` changes
/// band `j` by `|dM_j| <= 2 sqrt(sum_k F_jk^2 |X_k|^2) e ||X||` (first order), so the
/// relative change is at most `e * S_j`, `S_j = 2 ||X|| sqrt(sum_k F_jk^2 |X_k|^2) / M_j`
/// (`||X||` over the bins 0..=256).
fn reference_with_sensitivity(samples: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let fb = reference_filterbank();
    let (cos, sin): (Vec<f64>, Vec<f64>) =
        (0..512).map(|i| 2.0 * PI * i as f64 / 512.0).map(|a| (a.cos(), a.sin())).unzip();
    let frames = (samples.len() - 512) / 160 + 1;
    let mut out = Vec::with_capacity(frames * N_MELS);
    let mut sens = Vec::with_capacity(frames * N_MELS);
    for t in 0..frames {
        let x: Vec<f64> = (0..512)
            .map(|i| {
                let w = if (56..456).contains(&i) {
                    0.5 - 0.5 * (2.0 * PI * (i - 56) as f64 / 400.0).cos()
                } else {
                    0.0
                };
                samples[t * 160 + i] as f64 * w
            })
            .collect();
        let power: Vec<f64> = (0..N_BINS)
            .map(|k| {
                let (mut re, mut im) = (0.0, 0.0);
                for (j, &v) in x.iter().enumerate().take(456).skip(56) {
                    re += v * cos[(j * k) % 512];
                    im -= v * sin[(j * k) % 512];
                }
                re * re + im * im
            })
            .collect();
        let norm = power.iter().sum::<f64>().sqrt();
        for row in &fb {
            let m: f64 = row.iter().zip(&power).map(|(w, p)| w * p).sum();
            out.push(10.0 * m.max(1e-10).log10());
            let s2: f64 = row.iter().zip(&power).map(|(w, p)| w * w * p).sum();
            sens.push(2.0 * norm * s2.sqrt() / m.max(1e-10));
        }
    }
    let top = out.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (out.iter().map(|&d| d.max(top - 80.0)).collect(), sens)
}

// ---------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------

/// A deterministic uniform generator in [0, 1) (64-bit LCG, top 53 bits).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A linear chirp from 100 Hz to 7 kHz at amplitude 8000 plus uniform noise of +-1000,
/// rounded to int16 values.
fn chirp(n: usize, seed: u64) -> Vec<f32> {
    chirp_with_noise(n, seed, 1000.0)
}

/// The chirp with uniform noise of `+-noise`.
fn chirp_with_noise(n: usize, seed: u64, noise: f64) -> Vec<f32> {
    let mut r = Lcg(seed);
    let dur = n as f64 / 16000.0;
    (0..n)
        .map(|i| {
            let t = i as f64 / 16000.0;
            let phase = 2.0 * PI * (100.0 * t + 0.5 * (6900.0 / dur) * t * t);
            let v = 8000.0 * phase.sin() + 2.0 * noise * (r.next() - 0.5);
            v.round().clamp(-32768.0, 32767.0) as f32
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------

/// Tolerance in dB against the f64 reference: 3e-4, the mel tolerance the facts file
/// suggests against the official runtime. Budget: the f32 FFT's error is norm-wise
/// (measured 1.2e-7 relative at n = 512, bound 3.8e-6), so a band `r` times quieter in
/// amplitude than the frame's norm gets a relative power error of about `2 * 1.2e-7 * r`,
/// i.e. `4.3 * 2.4e-7 * r` dB: 3e-4 dB at r ~ 300 (50 dB below the frame's loudest
/// content); the chirp + noise signal stays well inside that (the noise fills every band
/// to within ~40 dB of the chirp). log10 adds < 9e-6 dB, the f32 filterbank < 1e-6 dB.
const TOL_DB: f64 = 3e-4;

fn max_err(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

fn chirp_and_noise<B: Backend>() {
    for (n, seed) in [(16000, 1), (1760, 2), (1280, 3), (512, 4), (671, 5)] {
        let x = chirp(n, seed);
        let frames = MelFrontend::frames(n);
        let mut out = vec![f32::NAN; frames * N_MELS];
        let got = FRONTEND.run::<B>(&x, &mut out).unwrap();
        assert_eq!(got, frames);
        let want = reference(&x);
        let e = max_err(&out, &want);
        println!("{} chirp n={n}: max error {e:.3e} dB", B::NAME);
        assert!(e <= TOL_DB, "{} n={n}: {e:e} dB", B::NAME);
    }
}

/// Quiet bands: the chirp with little noise (+-100), so that bands far from the chirp are up
/// to ~60 dB below the frame's norm. The error then follows the norm-wise FFT error model:
/// each output within `1e-5 + 4.343 e S_j` dB (`S_j` from [`reference_with_sensitivity`],
/// `e = 4e-7`: 3x the worst norm-wise error measured at n = 512, a tenth of the a-priori
/// bound; `1e-5` dB covers log10, the f32 mel sums and the filterbank). Quieter bands (or
/// louder out-of-band content) push the error past a flat 3e-4 dB: that is the f32 limit of
/// any FFT-based (or DFT-as-convolution) frontend, not a defect of this one.
fn quiet_bands<B: Backend>() {
    let x = chirp_with_noise(8000, 22, 100.0);
    let frames = MelFrontend::frames(x.len());
    let mut out = vec![0.0; frames * N_MELS];
    FRONTEND.run::<B>(&x, &mut out).unwrap();
    let (want, sens) = reference_with_sensitivity(&x);
    let (mut worst, mut share) = (0.0f64, 0.0f64);
    for ((&g, &w), &s) in out.iter().zip(&want).zip(&sens) {
        let err = (g as f64 - w).abs();
        let tol = 1e-5 + 4.343 * 4e-7 * s;
        assert!(err <= tol, "{}: err {err:e} dB > {tol:e} (S = {s:e})", B::NAME);
        worst = worst.max(err);
        share = share.max(err / tol);
    }
    println!(
        "{} quiet bands: max error {worst:.3e} dB, {:.0}% of the bound",
        B::NAME,
        100.0 * share
    );
}

fn silence<B: Backend>() {
    // All zero: every band is clamped to 1e-10 = -100 dB (within log10's error of
    // f32(1e-10)); the floor (-180) changes nothing.
    let x = vec![0.0f32; 2000];
    let mut out = vec![0.0; MelFrontend::output_len(2000)];
    FRONTEND.run::<B>(&x, &mut out).unwrap();
    assert!(out.iter().all(|&v| (v as f64 + 100.0).abs() <= 1e-5), "{:?}", &out[..4]);

    // A loud burst in silence: the silent frames sit at the call's max - 80 dB.
    let mut x = vec![0.0f32; 4000];
    let burst = chirp(1200, 9);
    x[2000..3200].copy_from_slice(&burst);
    let frames = MelFrontend::frames(x.len());
    let mut out = vec![0.0; frames * N_MELS];
    FRONTEND.run::<B>(&x, &mut out).unwrap();
    let top = out.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    assert!(top > 80.0, "top {top}");
    let first = &out[..N_MELS];
    assert!(first.iter().all(|&v| v == top - 80.0), "silent frame is floored");
    let want = reference(&x);
    let e = max_err(&out, &want);
    println!("{} burst: max error {e:.3e} dB", B::NAME);
    assert!(e <= TOL_DB, "{} burst: {e:e} dB", B::NAME);
}

neon_runtime::backend_tests!(chirp_and_noise, quiet_bands, silence);

#[test]
fn frames() {
    for (n, f) in
        [(0, 0), (511, 0), (512, 1), (671, 1), (672, 2), (1280, 5), (1760, 8), (16000, 97)]
    {
        assert_eq!(MelFrontend::frames(n), f, "n={n}");
        assert_eq!(MelFrontend::output_len(n), 32 * f);
    }
}

#[test]
fn errors() {
    let mut out = [7.0f32; 64];
    assert_eq!(
        FRONTEND.run::<Portable>(&[0.0; 511], &mut out[..0]),
        Err(Error::Length { what: "mel input samples (at least 512)", expected: 512, got: 511 })
    );
    assert_eq!(
        FRONTEND.run::<Portable>(&[0.0; 512], &mut out[..]),
        Err(Error::Length { what: "mel output [frames, 32]", expected: 32, got: 64 })
    );
    assert!(out.iter().all(|&v| v == 7.0), "output untouched on error");
    assert_eq!(FRONTEND.run::<Portable>(&[0.0; 700], &mut out[..]), Ok(2));
    let msg = FRONTEND.run::<Portable>(&[0.0; 10], &mut out).unwrap_err().to_string();
    assert!(msg.contains("at least 512"), "{msg}");
}

/// The filterbank matches the reference coded in Hz: the library computes librosa's mel
/// formulas in f64 (own const ln / exp, a few f64 ulps) and rounds twice like librosa (the
/// triangle to f32, then the normalised value to f32): at most 2^-24 + 2^-24 relative, plus
/// the f64 differences (~1e-15 relative, where the triangle's foot lands exactly between
/// bins it could be a tiny value against 0: not the case on this grid).
#[test]
fn filterbank() {
    let fb = FRONTEND.filterbank();
    assert_eq!(fb.len(), N_MELS * N_BINS);
    let want = reference_filterbank();
    for (j, row) in want.iter().enumerate() {
        for (k, &w) in row.iter().enumerate() {
            let g = fb[j * N_BINS + k] as f64;
            assert!((g - w).abs() <= 2.0 * 2f64.powi(-24) * w + 1e-13, "F[{j}, {k}]: {g} vs {w}");
        }
        let (a, b) = FRONTEND.filter_ranges()[j];
        assert!(a < b, "row {j} is empty");
        for k in (0..N_BINS).filter(|k| !(a as usize..b as usize).contains(k)) {
            assert_eq!(fb[j * N_BINS + k], 0.0, "F[{j}, {k}] outside its range");
        }
    }
    // Known landmarks: the first filter starts above 60 Hz (bin 2 at 62.5 Hz is its first
    // non-zero bin) and the last ends below 3800 Hz (bin 121 at 3781.25 Hz).
    assert_eq!(FRONTEND.filter_ranges()[0].0, 2);
    assert_eq!(FRONTEND.filter_ranges()[N_MELS - 1].1, 122);
    // The window: periodic Hann of 400 centred in 512.
    let w = FRONTEND.window();
    assert_eq!(w[56], 0.0);
    assert_eq!(w[256], 1.0);
    assert!(w[..56].iter().chain(&w[456..]).all(|&v| v == 0.0));
    assert!((w[156] as f64 - 0.5).abs() < 1e-7);
    // A run-time constructed frontend is the same as the static one.
    let f = MelFrontend::new();
    assert_eq!(f.filterbank(), fb);
}

#[test]
fn features() {
    let mut x = [-100.0f32, 0.0, 23.5, -37.0];
    to_features(&mut x);
    assert_eq!(x, [-8.0, 2.0, 4.35, -1.7]);
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_vs_portable {
    use super::*;
    use neon_runtime::Neon;

    /// Both backends are within TOL_DB of the reference, so within 2 TOL_DB of each other;
    /// in practice ~1e-5.
    #[test]
    fn neon_matches_portable() {
        let x = chirp(8000, 11);
        let n = MelFrontend::output_len(x.len());
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        FRONTEND.run::<Portable>(&x, &mut a).unwrap();
        FRONTEND.run::<Neon>(&x, &mut b).unwrap();
        let d = a.iter().zip(&b).map(|(u, v)| (u - v).abs()).fold(0.0f32, f32::max);
        println!("neon vs portable: max {d:e} dB");
        assert!((d as f64) <= 2.0 * TOL_DB);
    }
}
