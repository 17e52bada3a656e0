//! Trigonometric kernels against f64 references: `sin_cos` over a dense sweep of its
//! accurate range (every k-th f32 bit pattern of `[-2 pi, 2 pi]` and a uniform grid over
//! `[-SIN_COS_MAX, SIN_COS_MAX]`), every vector tail (bitwise equal to the element-by-element
//! results), special values, and `from_log_polar` (clamp, NaN, tails) on every backend.
//!
//! `cargo test --test trig -- --ignored --nocapture` prints the measured errors (the
//! figures of the `kernels::trig` docs), with a denser sweep.

mod common;

use common::{rng, tail_sizes, uniform};
use neon_runtime::kernels::trig::SIN_COS_MAX;
use neon_runtime::kernels::TrigKernels;
use neon_runtime::Backend;

/// Asserted absolute error bound of `sin` and `cos` for `|x| <= SIN_COS_MAX` (measured
/// worst 8.7e-8: see the module docs; the bound leaves about 35% on top).
const SIN_COS_BOUND: f64 = 1.2e-7;

/// `ln 100` in f32, the sanoTTS clamp.
const LN_100: f32 = 4.605_170_2;

/// Worst absolute errors `(sin, cos)` and the arguments where they occur.
#[derive(Default, Debug)]
struct Worst {
    sin: (f64, f32),
    cos: (f64, f32),
}

impl Worst {
    fn add<B: Backend>(&mut self, xs: &[f32]) {
        let mut s = vec![f32::NAN; xs.len()];
        let mut c = vec![f32::NAN; xs.len()];
        B::sin_cos(xs, &mut s, &mut c);
        for ((&x, &sv), &cv) in xs.iter().zip(&s).zip(&c) {
            let (ws, wc) = (x as f64).sin_cos();
            let (es, ec) = ((sv as f64 - ws).abs(), (cv as f64 - wc).abs());
            if es.is_nan() || es > self.sin.0 {
                self.sin = (es, x);
            }
            if ec.is_nan() || ec > self.cos.0 {
                self.cos = (ec, x);
            }
        }
    }
}

/// The sweep: every `stride`-th f32 bit pattern in `[0, 2 pi]` with both signs, then the
/// grid `k * step` over `[-SIN_COS_MAX, SIN_COS_MAX]`; worst errors of each part.
fn sweep<B: Backend>(stride: u32, step: f64) -> (Worst, Worst) {
    let mut small = Worst::default();
    let top = (2.0 * std::f32::consts::PI).to_bits();
    let mut buf = Vec::with_capacity(8192);
    let mut bits = 0u32;
    while bits <= top {
        let x = f32::from_bits(bits);
        buf.push(x);
        buf.push(-x);
        if buf.len() >= 8192 {
            small.add::<B>(&buf);
            buf.clear();
        }
        bits += stride;
    }
    small.add::<B>(&buf);
    buf.clear();
    let mut grid = Worst::default();
    let steps = (SIN_COS_MAX as f64 / step) as i64;
    for k in -steps..=steps {
        buf.push((k as f64 * step) as f32);
        if buf.len() >= 8192 {
            grid.add::<B>(&buf);
            buf.clear();
        }
    }
    grid.add::<B>(&buf);
    (small, grid)
}

fn sin_cos_accuracy<B: Backend>() {
    let (stride, step) = if cfg!(target_arch = "aarch64") { (4001, 0.05) } else { (61, 1e-3) };
    let (small, grid) = sweep::<B>(stride, step);
    for (what, w) in [("[-2pi, 2pi]", &small), ("grid", &grid)] {
        assert!(w.sin.0 <= SIN_COS_BOUND, "{} {what}: sin {:?}", B::NAME, w.sin);
        assert!(w.cos.0 <= SIN_COS_BOUND, "{} {what}: cos {:?}", B::NAME, w.cos);
    }
}

/// Every tail length: the slice results equal the one-element results bit for bit (the
/// partial vector runs the same lane code).
fn sin_cos_tails<B: Backend>() {
    let mut r = rng(71);
    for n in tail_sizes() {
        let x = uniform(&mut r, n, -100.0, 100.0);
        let (mut s, mut c) = (vec![f32::NAN; n], vec![f32::NAN; n]);
        B::sin_cos(&x, &mut s, &mut c);
        for i in 0..n {
            let (mut s1, mut c1) = ([f32::NAN], [f32::NAN]);
            B::sin_cos(&x[i..=i], &mut s1, &mut c1);
            assert_eq!((s[i].to_bits(), c[i].to_bits()), (s1[0].to_bits(), c1[0].to_bits()));
        }
    }
    B::sin_cos(&[], &mut [], &mut []);
}

fn sin_cos_special<B: Backend>() {
    let x = [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-30, -1e-30];
    let (mut s, mut c) = ([0.0f32; 7], [0.0f32; 7]);
    B::sin_cos(&x, &mut s, &mut c);
    assert_eq!((s[0].to_bits(), c[0]), (0.0f32.to_bits(), 1.0));
    // The sign of a zero is not kept (r + r^3 S with S(0) < 0 adds +0 to -0).
    assert_eq!((s[1], c[1]), (0.0, 1.0));
    for i in 2..5 {
        assert!(s[i].is_nan() && c[i].is_nan(), "{} x={}", B::NAME, x[i]);
    }
    assert_eq!((s[5], c[5]), (1e-30, 1.0));
    assert_eq!((s[6], c[6]), (-1e-30, 1.0));
}

/// `from_log_polar` against f64 (every tail; log-magnitudes on both sides of the clamp,
/// phases over `[-50, 50]`): per component within `m (SIN_COS_BOUND + 3e-7)`, the sin/cos
/// bound plus exp's and the product's roundings.
fn log_polar<B: Backend>() {
    let mut r = rng(72);
    for n in tail_sizes() {
        let l = uniform(&mut r, n, -12.0, 8.0);
        let p = uniform(&mut r, n, -50.0, 50.0);
        let (mut a, mut b) = (l.clone(), p.clone());
        B::from_log_polar(LN_100, &mut a, &mut b);
        let (mut pa, mut pb) = (l.clone(), p.clone());
        neon_runtime::Portable::from_log_polar(LN_100, &mut pa, &mut pb);
        common::assert_x86_bits::<B>(&format!("log_polar re n={n}"), &a, &pa);
        common::assert_x86_bits::<B>(&format!("log_polar im n={n}"), &b, &pb);
        for i in 0..n {
            let m = (l[i] as f64).min(100f64.ln()).exp();
            let (ws, wc) = (p[i] as f64).sin_cos();
            let tol = m * (SIN_COS_BOUND + 3e-7);
            assert!((a[i] as f64 - m * wc).abs() <= tol, "{} n={n} i={i} re", B::NAME);
            assert!((b[i] as f64 - m * ws).abs() <= tol, "{} n={n} i={i} im", B::NAME);
        }
    }
    let mut a = [f32::NAN, f32::NEG_INFINITY, f32::INFINITY, 1e3, 0.0];
    let mut b = [0.0, 1.0, 0.0, std::f32::consts::FRAC_PI_2, 0.0];
    B::from_log_polar(LN_100, &mut a, &mut b);
    assert!(a[0].is_nan() && b[0].is_nan(), "NaN log-magnitude propagates");
    assert_eq!((a[1], b[1]), (0.0, 0.0), "exp(-inf) = 0");
    assert!((a[2] - 100.0).abs() <= 2e-5 && b[2] == 0.0, "clamped at 100: {}", a[2]);
    assert!(a[3].abs() <= 1e-4 && (b[3] - 100.0).abs() <= 2e-5, "clamped at 100");
    assert_eq!((a[4], b[4]), (1.0, 0.0));
}

#[test]
#[should_panic(expected = "lengths differ")]
fn sin_cos_length_mismatch_panics() {
    neon_runtime::Portable::sin_cos(&[1.0, 2.0], &mut [0.0; 2], &mut [0.0; 1]);
}

#[test]
#[should_panic(expected = "lengths differ")]
fn log_polar_length_mismatch_panics() {
    neon_runtime::Portable::from_log_polar(LN_100, &mut [1.0, 2.0], &mut [0.0; 1]);
}

neon_runtime::backend_tests!(sin_cos_accuracy, sin_cos_tails, sin_cos_special, log_polar);

fn measure<B: Backend>() {
    let (stride, step) = if cfg!(target_arch = "aarch64") { (97, 1e-2) } else { (7, 1e-4) };
    let (small, grid) = sweep::<B>(stride, step);
    println!("backend {}: sin_cos max abs error vs f64 (worst, at x)", B::NAME);
    println!(
        "  [-2pi, 2pi] every {stride}th f32: sin {:.3e} at {:e}, cos {:.3e} at {:e}",
        small.sin.0, small.sin.1, small.cos.0, small.cos.1
    );
    println!(
        "  grid step {step:e} on +-{SIN_COS_MAX}: sin {:.3e} at {}, cos {:.3e} at {}",
        grid.sin.0, grid.sin.1, grid.cos.0, grid.cos.1
    );
    // Beyond the stated range: growth of the error.
    for top in [12_867.0f32, 1e5, 1e6] {
        let xs: Vec<f32> = (0..100_000).map(|k| top * (k as f32 / 100_000.0)).collect();
        let mut w = Worst::default();
        w.add::<B>(&xs);
        println!("  grid on [0, {top:e}]: sin {:.3e}, cos {:.3e}", w.sin.0, w.cos.0);
    }
}

common::measurement_test!(measure_sin_cos_accuracy, measure);
