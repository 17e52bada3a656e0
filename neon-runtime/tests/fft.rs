//! Real FFT kernels against f64 oracles: a radix-2 f64 FFT (`common::fft64`) for every
//! length 16..=4096 (and larger on the host), a direct f64 DFT for the small lengths, exact
//! cases, the power spectrum over every vector tail, the twiddle tables and their `const fn`
//! trigonometry, every backend vs portable (generic bodies, `backend_tests!`).
//!
//! The measured errors per length, next to `rustfft`'s own f32 FFT, are printed by the
//! separate `fft_accuracy` target (not built by `cargo test`: `rustfft`'s generic code is
//! the slowest thing in the test build): `cargo test -p neon-runtime --test fft_accuracy --
//! --ignored --nocapture`.

mod common;

use common::fft64::C64;
use common::rfft::{
    bound, each_plan, errors, lengths, max_tested, oracle, rfft, table, with_plan, U,
};
use common::{each_tail_spectrum, rng, uniform};
use neon_runtime::kernels::fft::{sin_cos_turns, twiddle_len, twiddles, RealFft, MAX_LEN, MIN_LEN};
use neon_runtime::kernels::FftKernels;
use neon_runtime::{Backend, Error, Portable, ShapeError};

/// Direct f64 DFT, `X[k] = sum_j x[j] exp(-2 pi i j k / n)`, the angle reduced exactly
/// (`j k mod n`) so the reference itself is accurate to a few f64 ulps times `sqrt n`.
fn direct_dft(x: &[f32]) -> Vec<C64> {
    let n = x.len();
    (0..=n / 2)
        .map(|k| {
            let mut acc = C64::new(0.0, 0.0);
            for (j, &v) in x.iter().enumerate() {
                let a = 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                acc += C64::new(a.cos(), -a.sin()) * v as f64;
            }
            acc
        })
        .collect()
}

/// Random inputs of several scales for every length: norm-wise error against the f64 FFT
/// within [`bound`], `Im X[0] = Im X[n/2] = 0` exactly.
fn against_f64_fft<B: Backend>() {
    let mut r = rng(41);
    each_plan(lengths(max_tested()), |n, fft| {
        for (lo, hi) in [(-1.0f32, 1.0f32), (-32768.0, 32767.0), (0.0, 1.0)] {
            let x = uniform(&mut r, n, lo, hi);
            let got = rfft::<B>(fft, &x);
            let (e2, emax, norm) = errors(&got, &oracle(&x));
            let b = bound(n);
            assert!(e2 <= b * norm, "{} n={n} [{lo},{hi}): {:e} > {b:e}", B::NAME, e2 / norm);
            assert!(emax <= e2 + 1e-30);
            assert_eq!(got[n / 2 + 1], 0.0, "Im X[0]");
            assert_eq!(got[n + 1], 0.0, "Im X[n/2]");
        }
    });
}

/// Small lengths against a direct f64 DFT; the oracle agrees with it to f64 precision.
fn against_dft<B: Backend>() {
    let mut r = rng(42);
    each_plan(lengths(512), |n, fft| {
        let x = uniform(&mut r, n, -1.0, 1.0);
        let dft = direct_dft(&x);
        let o = oracle(&x);
        let norm = dft.iter().map(|v| v.norm_sqr()).sum::<f64>().sqrt();
        for (a, b) in dft.iter().zip(&o) {
            // Both are f64 computations: 1e-13 relative to the norm is ~500 f64 ulps.
            assert!((*a - *b).norm() <= 1e-13 * norm, "oracle vs DFT at n={n}");
        }
        let got = rfft::<B>(fft, &x);
        let (e2, _, norm) = errors(&got, &dft);
        assert!(e2 <= bound(n) * norm, "{} n={n}: {:e}", B::NAME, e2 / norm);
    });
}

/// Cases with exact answers: an impulse (every bin exactly 1), a constant (X[0] = sum,
/// exact for small integers), a cosine on bin k0 (n/2 there, ~0 elsewhere).
fn exact_cases<B: Backend>() {
    each_plan(lengths(4096), |n, fft| {
        let mut x = vec![0.0f32; n];
        x[0] = 1.0;
        let s = rfft::<B>(fft, &x);
        let k = n / 2 + 1;
        assert!(s[..k].iter().all(|&v| v == 1.0), "{} impulse n={n}", B::NAME);
        assert!(s[k..].iter().all(|&v| v == 0.0), "{} impulse n={n}", B::NAME);

        let s = rfft::<B>(fft, &vec![3.0f32; n]);
        assert_eq!(s[0], 3.0 * n as f32, "constant n={n}");
        let norm = 3.0 * n as f64;
        assert!(s[1..].iter().all(|&v| (v as f64).abs() <= bound(n) * norm));

        let k0 = n / 8 + 1;
        let x: Vec<f32> =
            (0..n).map(|j| sin_cos_turns((j * k0) as u64, n as u64).1 as f32).collect();
        let s = rfft::<B>(fft, &x);
        let norm = (n / 2) as f64;
        for i in 0..k {
            let want = if i == k0 { norm } else { 0.0 };
            assert!((s[i] as f64 - want).abs() <= bound(n) * norm, "cos re n={n} k={i}");
            assert!((s[k + i] as f64).abs() <= bound(n) * norm, "cos im n={n} k={i}");
        }
    });
}

/// Power spectrum for every tail length: each element is `re^2 + im^2` with at most two
/// roundings (portable: two products and a sum; NEON: one product and one fused
/// multiply-add), so within `2u (re^2 + im^2)` of the exact value (both terms >= 0: no
/// cancellation). `rfft_power` = `rfft` then `power_spectrum`, bitwise.
fn power<B: Backend>() {
    let mut r = rng(43);
    each_tail_spectrum(&mut r, B::power_spectrum, |k, s, p| {
        for i in 0..k {
            let (a, b) = (s[i] as f64, s[k + i] as f64);
            let want = a * a + b * b;
            assert!((p[i] as f64 - want).abs() <= 2.0 * U * want, "{} k={k} i={i}", B::NAME);
        }
    });
    each_plan([16, 64, 512], |n, fft| {
        let x = uniform(&mut r, n, -1.0, 1.0);
        let s = rfft::<B>(fft, &x);
        let mut p1 = vec![0.0; n / 2 + 1];
        B::power_spectrum(&s, &mut p1);
        let mut p2 = vec![0.0; n / 2 + 1];
        let mut scratch = vec![0.0; n + 2];
        B::rfft_power(fft, &x, &mut scratch, &mut p2);
        assert_eq!(p1, p2);
        assert_eq!(scratch, s);
    });
}

neon_runtime::backend_tests!(against_f64_fft, against_dft, exact_cases, power, matches_portable);

#[test]
fn trig_matches_std() {
    // Exact quadrant logic and the octant polynomial: the same reduced argument through
    // std's sin / cos (the reference and ours then differ only by the polynomials, each
    // within an ulp or two of f64).
    for den in (1u64..=80).chain([100, 257, 400, 512, 1000, 4096, 65536, 1 << 20, 999_983]) {
        let step = (den / 4000).max(1);
        let mut num = 0;
        while num < 2 * den + 3 {
            let (s, c) = sin_cos_turns(num, den);
            let t = num % den;
            let q = 4 * t / den;
            let r4 = 4 * t - q * den;
            let (r, swap) = if 2 * r4 > den { (den - r4, true) } else { (r4, false) };
            let x = std::f64::consts::FRAC_PI_2 * (r as f64 / den as f64);
            let (xs, xc) = if swap { (x.cos(), x.sin()) } else { (x.sin(), x.cos()) };
            let (ws, wc) = match q {
                0 => (xs, xc),
                1 => (xc, -xs),
                2 => (-xs, -xc),
                _ => (-xc, xs),
            };
            assert!((s - ws).abs() <= 4e-16 && (c - wc).abs() <= 4e-16, "{num}/{den}");
            // Independently: std on the unreduced angle (whose rounding, up to an ulp of
            // 2 pi, costs up to 9e-16 on its own).
            let a = 2.0 * std::f64::consts::PI * (t as f64 / den as f64);
            assert!((s - a.sin()).abs() <= 2e-15 && (c - a.cos()).abs() <= 2e-15, "{num}/{den}");
            num += step;
        }
    }
    // Exact on the axes and symmetric.
    assert_eq!(sin_cos_turns(0, 7), (0.0, 1.0));
    assert_eq!(sin_cos_turns(1, 4), (1.0, 0.0));
    assert_eq!(sin_cos_turns(2, 4), (0.0, -1.0));
    assert_eq!(sin_cos_turns(3, 4), (-1.0, 0.0));
    assert_eq!(sin_cos_turns(5, 4), (1.0, 0.0));
    let (s, c) = sin_cos_turns(1, 8);
    assert!((s - c).abs() <= 2.3e-16 && (s - std::f64::consts::FRAC_1_SQRT_2).abs() <= 2.3e-16);
}

#[test]
fn twiddle_tables() {
    // A table built at compile time.
    static TW512: [f32; twiddle_len(512)] = twiddles(512);
    assert_eq!(TW512.len(), 766);
    assert_eq!(&TW512[..], &table(512)[..]);
    const TW16: [f32; 22] = twiddles(16);
    assert_eq!(&TW16[..], &table(16)[..]);
    // Every entry is the f32 rounding of the f64 value (half an ulp, plus the f64 error).
    for n in lengths(4096) {
        let t = table(n);
        let m = n / 2;
        let check = |i: usize, want: f64| {
            let err = (t[i] as f64 - want).abs();
            assert!(err <= U * want.abs() + 1e-15, "n={n} entry {i}: {} vs {want}", t[i]);
        };
        let mut h = 1;
        while h < m {
            for j in 0..h {
                let a = std::f64::consts::PI * j as f64 / h as f64;
                check(2 * h - 2 + j, a.cos());
                check(3 * h - 2 + j, a.sin());
            }
            h *= 2;
        }
        for k in 0..m / 2 {
            let a = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            check(2 * m - 2 + k, a.cos());
            check(2 * m - 2 + m / 2 + k, a.sin());
        }
    }
}

#[test]
fn constructor_errors() {
    let t = table(64);
    for n in [0, 1, 8, 48, 100, MAX_LEN * 2] {
        assert_eq!(
            RealFft::new(n, &t),
            Err(Error::Shape(ShapeError::Geometry {
                op: "rfft",
                reason: "length must be a power of two in 16..=65536",
            })),
            "n={n}"
        );
    }
    assert_eq!(
        RealFft::new(32, &t),
        Err(Error::Length { what: "rfft twiddles", expected: 46, got: 94 })
    );
    let f = RealFft::new(64, &t).unwrap();
    assert_eq!((f.len(), f.bins(), f.spectrum_len()), (64, 33, 66));
    assert!(!f.is_empty());
    assert_eq!(MIN_LEN, 16);
    fn assert_send_sync<T: Send + Sync + Copy>() {}
    assert_send_sync::<RealFft<'static>>();
}

#[test]
#[should_panic(expected = "spectrum length")]
fn wrong_spectrum_length_panics() {
    with_plan(32, |f| Portable::rfft(f, &[0.0; 32], &mut [0.0; 33]));
}

#[test]
#[should_panic(expected = "input length")]
fn wrong_input_length_panics() {
    with_plan(32, |f| Portable::rfft(f, &[0.0; 31], &mut [0.0; 34]));
}

/// Same inputs through `B` and Portable: each is within [`bound`] of the truth, so they are
/// within twice that of each other (norm-wise); in practice a few u.
fn matches_portable<B: Backend>() {
    let mut r = rng(44);
    each_plan(lengths(4096), |n, fft| {
        let x = uniform(&mut r, n, -1.0, 1.0);
        let a = rfft::<Portable>(fft, &x);
        let b = rfft::<B>(fft, &x);
        let (d2, n2) = a.iter().zip(&b).fold((0.0f64, 0.0f64), |(d, s), (&u, &v)| {
            (d + ((u - v) as f64).powi(2), s + (v as f64).powi(2))
        });
        assert!(d2.sqrt() <= 2.0 * bound(n) * n2.sqrt(), "{} n={n}", B::NAME);
        // x86's SSE step 1 does the portable sums (no FMA): the same bits.
        common::assert_x86_bits::<B>(&format!("rfft n={n}"), &b, &a);
        if n == 16 {
            assert_eq!(a, b, "n = 16 runs the portable code on every backend");
        }
    });
}
