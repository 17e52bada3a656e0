//! Inverse real FFT against f64 oracles: a direct f64 inverse DFT (every length
//! 16..=4096, several input scales), the exact round trip properties (`irfft(rfft(x)) ~= x`
//! for every length), the ignored imaginary parts of DC and Nyquist, exact cases, every
//! backend vs portable (generic bodies, `backend_tests!`).
//!
//! `cargo test --test irfft -- --ignored --nocapture` prints the measured errors per
//! length (the inverse table of the `kernels::fft` docs).

mod common;

use common::rfft::{bound, each_plan, lengths, rfft, with_plan, U};
use common::{rng, uniform};
use neon_runtime::kernels::fft::RealFft;
use neon_runtime::kernels::FftKernels;
use neon_runtime::{Backend, Portable};
use rand::Rng;

/// Largest length tested against the O(n^2) direct inverse DFT on this target.
fn max_direct() -> usize {
    if cfg!(target_arch = "aarch64") {
        1024
    } else {
        4096
    }
}

/// Direct f64 inverse DFT of a split half-spectrum (`[2, n/2 + 1]`), numpy `irfft`'s
/// definition: `x[j] = (1/n) (X0 + (-1)^j Xm + 2 sum_{0<k<m} Re(X[k] e^{2 pi i j k / n}))`
/// with only the real parts of `X[0]` and `X[m]` read. The angle is reduced exactly
/// (`j k mod n`).
fn direct_idft(spec: &[f32], n: usize) -> Vec<f64> {
    let m = n / 2;
    let (re, im) = spec.split_at(m + 1);
    (0..n)
        .map(|j| {
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            let mut acc = re[0] as f64 + sign * re[m] as f64;
            for k in 1..m {
                let a = 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                acc += 2.0 * (re[k] as f64 * a.cos() - im[k] as f64 * a.sin());
            }
            acc / n as f64
        })
        .collect()
}

/// `(||got - want||_2, ||want||_2)`.
fn errors(got: &[f32], want: &[f64]) -> (f64, f64) {
    assert_eq!(got.len(), want.len());
    let (e2, w2) = got
        .iter()
        .zip(want)
        .fold((0.0f64, 0.0f64), |(e, w), (&g, &v)| (e + (g as f64 - v).powi(2), w + v * v));
    (e2.sqrt(), w2.sqrt())
}

fn inverse<B: Backend>(fft: &RealFft<'_>, spec: &[f32]) -> Vec<f32> {
    let mut work = spec.to_vec();
    let mut x = vec![f32::NAN; fft.len()];
    B::irfft(fft, &mut work, &mut x);
    x
}

/// Random split spectra (every bin random, including `Im X[0]`, `Im X[m]`, which must be
/// ignored) of several scales: within [`bound`] of the direct inverse DFT, norm-wise.
fn against_direct<B: Backend>() {
    let mut r = rng(61);
    each_plan(lengths(max_direct()), |n, fft| {
        for (lo, hi) in [(-1.0f32, 1.0f32), (-1e4, 1e4), (0.0, 1.0)] {
            let spec = uniform(&mut r, n + 2, lo, hi);
            let got = inverse::<B>(fft, &spec);
            let (e2, norm) = errors(&got, &direct_idft(&spec, n));
            let b = bound(n);
            assert!(e2 <= b * norm, "{} n={n} [{lo},{hi}): {:e} > {b:e}", B::NAME, e2 / norm);
        }
    });
}

/// `irfft(rfft(x)) ~= x` for every length up to 2^16 (host) / 2^14 (qemu): within the
/// sum of both bounds (the spectrum's error relative to `||X|| = sqrt(n) ||x||` maps to the
/// same relative error of `x`).
fn round_trip<B: Backend>() {
    let mut r = rng(62);
    let max = if cfg!(target_arch = "aarch64") { 1 << 14 } else { 1 << 16 };
    each_plan(lengths(max), |n, fft| {
        let x = uniform(&mut r, n, -1.0, 1.0);
        let y = inverse::<B>(fft, &rfft::<B>(fft, &x));
        let want: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let (e2, norm) = errors(&y, &want);
        assert!(e2 <= 2.0 * bound(n) * norm, "{} n={n}: {:e}", B::NAME, e2 / norm);
    });
}

/// Exact cases: `X[0] = n` alone gives exactly 1 everywhere (products by powers of two,
/// then butterflies adding exact zeros); `X[n/2] = n` alone gives `(-1)^j`; `Im X[0]` and
/// `Im X[n/2]` are ignored bit for bit (changing them, even to NaN, changes nothing).
fn exact_cases<B: Backend>() {
    let mut r = rng(63);
    each_plan(lengths(4096), |n, fft| {
        let mut spec = vec![0.0f32; n + 2];
        spec[0] = n as f32;
        let x = inverse::<B>(fft, &spec);
        assert!(x.iter().all(|&v| v == 1.0), "{} DC n={n}", B::NAME);
        // Nyquist alone: (-1)^j.
        let mut spec = vec![0.0f32; n + 2];
        spec[n / 2] = n as f32;
        let x = inverse::<B>(fft, &spec);
        for (j, &v) in x.iter().enumerate() {
            let want = if j % 2 == 0 { 1.0 } else { -1.0 };
            assert!((v as f64 - want).abs() <= bound(n), "{} Nyquist n={n} j={j}", B::NAME);
        }
        // Imaginary parts of DC and Nyquist are ignored, bit for bit.
        let mut spec = uniform(&mut r, n + 2, -1.0, 1.0);
        let a = inverse::<B>(fft, &spec);
        spec[n / 2 + 1] = r.gen_range(-1e6..1e6);
        spec[n + 1] = f32::NAN;
        let b = inverse::<B>(fft, &spec);
        assert_eq!(a, b, "{} n={n}: Im X[0] / Im X[n/2] read", B::NAME);
    });
}

/// Same inputs through `B` and Portable: each within [`bound`] of the truth; bit for bit on
/// x86.
fn matches_portable<B: Backend>() {
    let mut r = rng(64);
    each_plan(lengths(4096), |n, fft| {
        let spec = uniform(&mut r, n + 2, -1.0, 1.0);
        let a = inverse::<Portable>(fft, &spec);
        let b = inverse::<B>(fft, &spec);
        let want: Vec<f64> = a.iter().map(|&v| v as f64).collect();
        let (d2, n2) = errors(&b, &want);
        assert!(d2 <= 2.0 * bound(n) * n2, "{} n={n}", B::NAME);
        // x86's SSE steps do the portable operations in their order (no FMA): the same bits.
        common::assert_x86_bits::<B>(&format!("irfft n={n}"), &b, &a);
        if n == 16 {
            assert_eq!(a, b, "n = 16 runs the portable code on every backend");
        }
    });
}

neon_runtime::backend_tests!(against_direct, round_trip, exact_cases, matches_portable);

#[test]
#[should_panic(expected = "irfft: spectrum length")]
fn wrong_spectrum_length_panics() {
    with_plan(32, |f| Portable::irfft(f, &mut [0.0; 33], &mut [0.0; 32]));
}

#[test]
#[should_panic(expected = "irfft: output length")]
fn wrong_output_length_panics() {
    with_plan(32, |f| Portable::irfft(f, &mut [0.0; 34], &mut [0.0; 31]));
}

// ---------------------------------------------------------------------------------------
// Measurement (ignored by default): error per length against the direct inverse DFT.
// ---------------------------------------------------------------------------------------

fn measure<B: Backend>() {
    println!("backend {}: irfft error vs direct f64 inverse DFT, worst of 20", B::NAME);
    println!("{:>6} {:>12} {:>12} {:>8}", "n", "norm-wise", "bound", "ours/u");
    let mut r = rng(65);
    each_plan(lengths(max_direct()), |n, fft| {
        let mut worst = 0.0f64;
        for _ in 0..20 {
            let x = uniform(&mut r, n, -1.0, 1.0);
            // The spectrum of a real signal, rounded to f32: the inverse's input.
            let spec = rfft::<Portable>(fft, &x);
            let (e2, norm) = errors(&inverse::<B>(fft, &spec), &direct_idft(&spec, n));
            worst = worst.max(e2 / norm);
        }
        println!("{n:>6} {worst:>12.3e} {:>12.3e} {:>8.2}", bound(n), worst / U);
    });
}

common::measurement_test!(measure_irfft_accuracy, measure);
