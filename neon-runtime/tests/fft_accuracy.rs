//! Measurement of the real FFT's accuracy per length, ours next to `rustfft`'s own f32 FFT,
//! both against the f64 radix-2 FFT of the tests (`common::fft64`): the figures in the
//! docs of `kernels::fft`. Not built by `cargo test` (`test = false` in Cargo.toml:
//! `rustfft`'s generic planner is the slowest code to compile in the whole test build);
//! run it with
//!
//! ```text
//! cargo test -p neon-runtime --test fft_accuracy -- --ignored --nocapture
//! ```

mod common;

use common::fft64::C64;
use common::rfft::{bound, each_plan, errors, lengths, max_tested, oracle, rfft, U};
use common::{rng, uniform};
use neon_runtime::Backend;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// `||got - want||_2 / ||want||_2` and `max_k |got_k - want_k| / ||want||_2` of a split
/// spectrum (real parts, then imaginary parts).
fn relative_errors(got: &[f32], want: &[C64]) -> (f64, f64) {
    let (e2, emax, norm) = errors(got, want);
    (e2 / norm, emax / norm)
}

fn measure<B: Backend>() {
    println!("backend {}: error vs an f64 FFT, relative to ||X||_2, worst of 20 inputs", B::NAME);
    println!(
        "{:>6} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "n", "ours norm", "ours max", "rustfft32", "bound", "ours/u"
    );
    let mut r = rng(45);
    each_plan(lengths(max_tested()), |n, fft| {
        let plan32 = FftPlanner::<f32>::new().plan_fft_forward(n);
        let (mut worst2, mut worstmax, mut worst32) = (0.0f64, 0.0f64, 0.0f64);
        for _ in 0..20 {
            let x = uniform(&mut r, n, -1.0, 1.0);
            let want = oracle(&x);
            let got = rfft::<B>(fft, &x);
            let (e2, emax) = relative_errors(&got, &want);
            worst2 = worst2.max(e2);
            worstmax = worstmax.max(emax);
            let mut buf: Vec<Complex<f32>> = x.iter().map(|&v| Complex::new(v, 0.0)).collect();
            plan32.process(&mut buf);
            let k = n / 2 + 1;
            let split: Vec<f32> =
                buf[..k].iter().map(|c| c.re).chain(buf[..k].iter().map(|c| c.im)).collect();
            worst32 = worst32.max(relative_errors(&split, &want).0);
        }
        println!(
            "{n:>6} {worst2:>12.3e} {worstmax:>12.3e} {worst32:>12.3e} {:>12.3e} {:>8.2}",
            bound(n),
            worst2 / U
        );
    });
}

common::measurement_test!(measure_fft_accuracy, measure);
