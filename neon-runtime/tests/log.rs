//! Logarithm kernels (`ln`, `log10`, activation family) against f64 `std`: a sweep over
//! every k-th positive f32 bit pattern (subnormals to `f32::MAX`), every f32 in
//! `[0.9, 1.1]` (near 1, where `ln` is small), every vector tail, special values, the dB
//! use of the mel frontend, and every backend vs portable (generic bodies, `backend_tests!`).
//!
//! `cargo test --test log -- --ignored --nocapture` prints the measured maximum errors (the
//! figures documented in `kernels/activation/mod.rs`) for every backend.

mod common;

use common::{assert_lanes_and_to, rng, tail_sizes};
use neon_runtime::kernels::activation::Activation;
use neon_runtime::kernels::ActivationKernels;
use neon_runtime::{Backend, Portable};
use rand::Rng;

/// The f32 ulp at `|w|`: `2^(floor(log2 |w|) - 23)` (normal range), `2^-149` below.
fn ulp(w: f64) -> f64 {
    let a = w.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return f64::from_bits(((1023 - 149) as u64) << 52);
    }
    let e = ((a.to_bits() >> 52) as i64) - 1023;
    2f64.powi(e as i32 - 23)
}

struct LogFn {
    name: &'static str,
    f: Activation,
    reference: fn(f64) -> f64,
    /// Asserted bound in ulps of the result.
    ulps: f64,
}

// Bounds asserted by the tests: the largest error measured by `measure_log_accuracy` (both
// backends; host: every 97th positive f32 plus every f32 in [0.9, 1.1]) rounded up by about
// 15-25% to a multiple of 0.25 ulp, because the sweeps are dense but not exhaustive.
// Measured: ln 0.88 ulp, log10 2.39 ulp (see the module docs of kernels/activation/mod.rs).
fn funcs() -> [LogFn; 2] {
    [
        LogFn { name: "ln", f: Activation::Ln, reference: f64::ln, ulps: 1.0 },
        LogFn { name: "log10", f: Activation::Log10, reference: f64::log10, ulps: 2.75 },
    ]
}

/// Every `stride`-th positive finite f32 (subnormals included), and every f32 in
/// [0.9, 1.1] taking every `near_stride`-th.
fn sweep_inputs(stride: u32, near_stride: u32) -> Vec<f32> {
    let mut xs = Vec::new();
    let mut b = 1u32;
    while b < f32::MAX.to_bits() {
        xs.push(f32::from_bits(b));
        b += stride;
    }
    let mut b = 0.9f32.to_bits();
    while b <= 1.1f32.to_bits() {
        xs.push(f32::from_bits(b));
        b += near_stride;
    }
    xs.extend([
        f32::MIN_POSITIVE,
        f32::MAX,
        1.0,
        2.0,
        0.5,
        10.0,
        1e-10,
        1e10,
        2.0 / 3.0,
        4.0 / 3.0,
    ]);
    xs
}

fn strides() -> (u32, u32) {
    if cfg!(target_arch = "aarch64") {
        (997, 7)
    } else {
        (97, 1)
    }
}

/// Worst error in ulps over `xs` (and where), and the worst absolute error for x in
/// [0.5, 2].
fn worst(f: &LogFn, xs: &[f32], got: &[f32]) -> ((f64, f32), (f64, f32)) {
    let mut w = ((0.0f64, 0.0f32), (0.0f64, 0.0f32));
    for (&x, &g) in xs.iter().zip(got) {
        let want = (f.reference)(x as f64);
        let err = (g as f64 - want).abs();
        let u = err / ulp(want);
        if u > w.0 .0 {
            w.0 = (u, x);
        }
        if (0.5..=2.0).contains(&x) && err > w.1 .0 {
            w.1 = (err, x);
        }
    }
    w
}

fn sweep<B: Backend>() {
    let (s, ns) = strides();
    let xs = sweep_inputs(s, ns);
    for f in funcs() {
        let mut got = xs.clone();
        B::activate(f.f, &mut got);
        let ((u, at), _) = worst(&f, &xs, &got);
        assert!(u <= f.ulps, "{} {}: {u} ulp at x = {at:e}", B::NAME, f.name);
        let mut y = vec![0.0f32; xs.len()];
        B::activate_to(f.f, &xs, &mut y);
        assert!(got.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()), "in place vs _to");
    }
}

/// Every length: random positive data (log-uniform over 1e-30..1e30) within the bound, and
/// each element computed alone (the partial-vector path) bitwise equal to the long call.
fn tails<B: Backend>() {
    let mut r = rng(21);
    for f in funcs() {
        for n in tail_sizes() {
            let xs: Vec<f32> = (0..n).map(|_| 10f32.powf(r.gen_range(-30.0..30.0))).collect();
            let mut got = xs.clone();
            B::activate(f.f, &mut got);
            let ((u, at), _) = worst(&f, &xs, &got);
            assert!(u <= f.ulps, "{} {} n={n}: {u} ulp at {at:e}", B::NAME, f.name);
            assert_lanes_and_to::<B>(f.name, f.f, &xs, &got);
        }
    }
}

fn special<B: Backend>() {
    let inf = f32::INFINITY;
    for f in funcs() {
        let xs = [0.0f32, -0.0, inf, -inf, -1.0, f32::NAN, -f32::NAN, -1e-40, 1.0, 1e-45];
        let mut y = xs;
        B::activate(f.f, &mut y);
        assert_eq!(y[0], -inf, "{}(0)", f.name);
        assert_eq!(y[1], -inf, "{}(-0)", f.name);
        assert_eq!(y[2], inf, "{}(inf)", f.name);
        assert!(y[3..8].iter().all(|v| v.is_nan()), "{}: {:?}", f.name, &y[3..8]);
        assert_eq!(y[8].to_bits(), 0.0f32.to_bits(), "{}(1) = +0 exactly", f.name);
        let want = (f.reference)(1e-45f32 as f64);
        assert!(
            (y[9] as f64 - want).abs() <= f.ulps * ulp(want),
            "{} of the least subnormal",
            f.name
        );
    }
    // Exact powers of two: ln(2^k) = k ln2 with n * LN2_HI exact.
    let xs: Vec<f32> = (-149..128).map(|k| 2f64.powi(k) as f32).collect();
    let mut y = xs.clone();
    B::activate(Activation::Log10, &mut y);
    for (k, v) in (-149..128).zip(&y) {
        let want = k as f64 * 2f64.log10();
        assert!((*v as f64 - want).abs() <= 0.5 * ulp(want) + 1e-12, "log10(2^{k})");
    }
}

/// The mel frontend's use: `10 log10(max(p, 1e-10))` computed as the frontend does (clamp,
/// `log10` kernel, times 10 in f32) is within 3e-5 dB of f64 for p in 1e-10..1e12 (the
/// tolerance the frontend needs). Error budget: log10 within 2.75 ulp of |log10 p| <= 12
/// (ulp 9.5e-7: 2.6e-6, times 10 = 2.6e-5 dB) plus the rounding of the product (half an ulp
/// of 120: 3.8e-6): 3.0e-5.
fn decibels<B: Backend>() {
    let n = 200_001;
    let ps: Vec<f32> =
        (0..n).map(|i| 10f64.powf(-11.0 + 23.0 * i as f64 / (n - 1) as f64) as f32).collect();
    let mut db: Vec<f32> = ps.iter().map(|&p| if p > 1e-10 { p } else { 1e-10 }).collect();
    B::activate(Activation::Log10, &mut db);
    let mut worst = 0.0f64;
    for (&p, d) in ps.iter().zip(&mut db) {
        *d *= 10.0;
        let want = 10.0 * (p as f64).max(1e-10f32 as f64).log10();
        worst = worst.max((*d as f64 - want).abs());
    }
    assert!(worst <= 3.0e-5, "{}: dB error {worst:e}", B::NAME);
    if worst > 0.0 {
        println!("{}: max dB error {worst:.3e}", B::NAME);
    }
}

/// Same algorithm and coefficients as Portable; NEON fuses the multiply-adds, so results
/// differ by roundings of intermediates: within the sum of both bounds (in practice 1-2 ulp).
fn matches_portable<B: Backend>() {
    let xs = sweep_inputs(4999, 101);
    for f in funcs() {
        let mut a = xs.clone();
        Portable::activate(f.f, &mut a);
        let mut b = xs.clone();
        B::activate(f.f, &mut b);
        for ((&x, &u), &v) in xs.iter().zip(&a).zip(&b) {
            let d = (u as f64 - v as f64).abs();
            assert!(
                d <= 2.0 * f.ulps * ulp(v as f64),
                "{} {}: x = {x:e}: {u} vs {v}",
                B::NAME,
                f.name
            );
        }
    }
}

neon_runtime::backend_tests!(sweep, tails, special, decibels, matches_portable);

fn measure<B: Backend>() {
    let (s, ns) = strides();
    let xs = sweep_inputs(s, ns);
    println!(
        "backend {} ({} inputs: every {s}th positive f32, every {ns}th in [0.9, 1.1])",
        B::NAME,
        xs.len()
    );
    for f in funcs() {
        let mut got = xs.clone();
        B::activate(f.f, &mut got);
        let ((u, at), (a, at1)) = worst(&f, &xs, &got);
        println!(
            "{:<6} max {u:.3} ulp at x = {at:e}; max abs error on [0.5, 2]: {a:.3e} at {at1}",
            f.name
        );
    }
}

common::measurement_test!(measure_log_accuracy, measure);
