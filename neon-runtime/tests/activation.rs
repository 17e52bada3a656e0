//! Activation kernels against f64 references: a dense sweep (every 1e-3 on [-20, 20] plus
//! extremes), every vector tail, special values, and every backend vs portable (one generic
//! body per check, instantiated for every backend by `backend_tests!`).
//!
//! `cargo test --test activation -- --ignored --nocapture` prints the measured maximum errors
//! (the figures documented in `kernels/activation/mod.rs`) for every backend over a denser sweep.

mod common;

use common::{assert_close, assert_lanes_and_to, rng, tail_sizes, uniform};
use neon_runtime::kernels::activation::Activation;
use neon_runtime::kernels::ActivationKernels;
use neon_runtime::{Backend, Portable};

const EPS: f64 = f32::EPSILON as f64; // 2^-23
/// Absolute floor of every bound: results below the smallest normal f32 may be flushed to 0.
const TINY: f64 = f32::MIN_POSITIVE as f64;

// ---------------------------------------------------------------------------------------
// f64 references
// ---------------------------------------------------------------------------------------

/// `erfc(x)` for `x >= 2.5`: the continued fraction
/// `erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))`,
/// evaluated backwards from a fixed depth (converged to f64 precision for x >= 2.5).
fn erfc_cf(x: f64) -> f64 {
    let mut k = x;
    for n in (1..=300).rev() {
        k = x + (n as f64 / 2.0) / k;
    }
    (-x * x).exp() / core::f64::consts::PI.sqrt() / k
}

/// `erf(x)` for `0 <= x < 2.5`: `2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1 3 5 ... (2n+1))`
/// (all terms positive: no cancellation).
fn erf_series(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    let x2 = x * x;
    for n in 0..200 {
        term *= 2.0 * x2 / (2 * n + 3) as f64;
        sum += term;
        if term < sum * 1e-18 {
            break;
        }
    }
    2.0 / core::f64::consts::PI.sqrt() * (-x2).exp() * sum
}

fn ref_erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let e = if a < 2.5 { erf_series(a) } else { 1.0 - erfc_cf(a) };
    e.copysign(x)
}

/// `erfc(x)` with full relative accuracy for large positive `x`.
fn ref_erfc(x: f64) -> f64 {
    if x >= 2.5 {
        erfc_cf(x)
    } else if x > -2.5 {
        1.0 - erf_series(x.abs()).copysign(x)
    } else {
        2.0 - erfc_cf(-x)
    }
}

fn ref_exp(x: f64) -> f64 {
    x.exp()
}
fn ref_tanh(x: f64) -> f64 {
    x.tanh()
}
fn ref_sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
fn ref_silu(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    x * ref_sigmoid(x)
}
/// `0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2)`, the latter without cancellation.
fn ref_gelu_erf(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    0.5 * x * ref_erfc(-x * core::f64::consts::FRAC_1_SQRT_2)
}
/// `0.5 x (1 + tanh(u))`, `u = sqrt(2/pi) (x + 0.044715 x^3)`, written as
/// `x / (1 + exp(-2u))` (the same function; avoids the f64 cancellation of `1 + tanh(u)`).
fn ref_gelu_tanh(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    let u = (2.0 / core::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x / (1.0 + (-2.0 * u).exp())
}
fn ref_relu(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        x.max(0.0)
    }
}

// ---------------------------------------------------------------------------------------
// The table of functions and their asserted bounds
// ---------------------------------------------------------------------------------------

/// One activation: kernels, reference, and the asserted error bound
/// `|got - want| <= 2 TINY max(1, |x|) + abs (|x| or 1) + rel cond(x) |want|` (see
/// [`Func::allowed`]). The `TINY max(1, |x|)` floor covers flushed subnormal intermediates
/// (e.g. `silu(-90)`: `sigmoid(-90)` is subnormal, flushed to 0, while the true product is
/// `-7e-38`); doubled so that the boundary case (an intermediate just below TINY) is not
/// decided by the rounding of the f64 reference.
struct Func {
    name: &'static str,
    f: Activation,
    reference: fn(f64) -> f64,
    /// Absolute part of the bound, multiplied by `|x|` when `abs_scales_with_x`.
    abs: f64,
    abs_scales_with_x: bool,
    /// Relative part of the bound.
    rel: f64,
    /// Amplification of the relative part at `x`: 1, except where the result is `e^-w`-small
    /// and `w` itself carries f32 rounding (see `gelu_tanh_cond`, `gelu_erf_cond`).
    cond: fn(f64) -> f64,
    /// Sweep range for the measurement.
    range: (f64, f64),
    /// Relative errors are reported for `x >= rel_from` only (gelu_erf returns 0 below
    /// -5.54, where its absolute bound applies).
    rel_from: f64,
}

impl Func {
    fn allowed(&self, x: f64, want: f64) -> f64 {
        let a = if self.abs_scales_with_x { self.abs * x.abs() } else { self.abs };
        2.0 * TINY * x.abs().max(1.0) + a + self.rel * want.abs() * (self.cond)(x)
    }
}

fn no_cond(_: f64) -> f64 {
    1.0
}

/// `gelu_tanh(x) = x sigmoid(w)`, `w = x (1.596 + 0.0714 x^2)`: for `w < 0` the result is
/// about `x e^w`, and the f32 rounding of `w` (a few ulps: `|dw| <~ 2 eps |w|`) changes it by
/// the factor `e^dw`: the relative error grows like `|w| eps`. Inherent to computing `w` in
/// f32; the absolute error there is tiny (`|x| e^w |w| eps`).
fn gelu_tanh_cond(x: f64) -> f64 {
    let w = x * (1.5957691216057308 + 0.07135481627260025 * x * x);
    1.0 + (-w).max(0.0)
}

/// `gelu_erf(x) = (x/2) e^-h` for `x < 0`, `h = -ln(erfc(|x| / sqrt 2))` computed in f32:
/// the same amplification as [`gelu_tanh_cond`], by `h`.
fn gelu_erf_cond(x: f64) -> f64 {
    if x >= 0.0 {
        return 1.0;
    }
    1.0 - ref_erfc(-x * core::f64::consts::FRAC_1_SQRT_2).ln()
}

// Bounds asserted by the tests. Each relative bound is the largest error measured by
// `measure_accuracy` (both backends; host: every 7th f32 bit pattern of the range, qemu:
// every 211th, plus the 1e-3 sweep) rounded up by 25-45% to a multiple of 0.5 eps: the
// sweeps are dense but not exhaustive, so the random tests may land on slightly worse
// points. Measured (in eps = 2^-23): exp 0.70, tanh 1.54, sigmoid 1.50, silu 1.87,
// gelu_tanh 1.48 (times cond), erf 1.84, gelu_erf 1.92 (times cond). gelu_erf's absolute
// part: for x < -5.54 it returns 0, off by |x|/2 erfc(3.92) < 1.5e-8 |x| (bound 2e-8 |x|).
fn funcs() -> Vec<Func> {
    vec![
        Func {
            name: "exp",
            f: Activation::Exp,
            reference: ref_exp,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 1.0 * EPS,
            cond: no_cond,
            range: (-90.0, 90.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "tanh",
            f: Activation::Tanh,
            reference: ref_tanh,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 2.0 * EPS,
            cond: no_cond,
            range: (-20.0, 20.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "sigmoid",
            f: Activation::Sigmoid,
            reference: ref_sigmoid,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 2.0 * EPS,
            cond: no_cond,
            range: (-90.0, 90.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "silu",
            f: Activation::Silu,
            reference: ref_silu,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 2.5 * EPS,
            cond: no_cond,
            range: (-90.0, 90.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "gelu_tanh",
            f: Activation::GeluTanh,
            reference: ref_gelu_tanh,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 2.0 * EPS,
            cond: gelu_tanh_cond,
            range: (-20.0, 20.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "erf",
            f: Activation::Erf,
            reference: ref_erf,
            abs: 0.0,
            abs_scales_with_x: false,
            rel: 2.5 * EPS,
            cond: no_cond,
            range: (-6.0, 6.0),
            rel_from: f64::NEG_INFINITY,
        },
        Func {
            name: "gelu_erf",
            f: Activation::GeluErf,
            reference: ref_gelu_erf,
            abs: 2.0e-8,
            abs_scales_with_x: true,
            rel: 2.5 * EPS,
            cond: gelu_erf_cond,
            range: (-20.0, 20.0),
            rel_from: -5.54,
        },
    ]
}

/// Inputs of the documented sweep: every 1e-3 on [-20, 20], the function's own range at
/// 1e-2, and extremes.
fn sweep_inputs(range: (f64, f64)) -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=40_000).map(|i| (i as f64 * 1e-3 - 20.0) as f32).collect();
    let steps = ((range.1 - range.0) / 1e-2) as usize;
    xs.extend((0..=steps).map(|i| (range.0 + i as f64 * 1e-2) as f32));
    for m in [
        0.0f32,
        1e-38,
        1e-30,
        1e-10,
        1e-6,
        1e-3,
        0.5,
        3.9192,
        3.92,
        5.55,
        9.01,
        10.0,
        87.33654,
        87.5,
        88.3,
        88.72283,
        88.72284,
        89.0,
        100.0,
        1e4,
        1e10,
        1e20,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-40, // subnormal
    ] {
        xs.push(m);
        xs.push(-m);
    }
    xs
}

fn check_bound(f: &Func, xs: &[f32], got: &[f32], backend: &str) {
    for (&x, &g) in xs.iter().zip(got) {
        let want = (f.reference)(x as f64);
        // Results beyond f32::MAX overflow to inf, as they should.
        let want = if want.abs() > f32::MAX as f64 { want * f64::INFINITY } else { want };
        let err = (g as f64 - want).abs();
        let ok = err <= f.allowed(x as f64, want) || (g as f64 == want);
        assert!(
            ok,
            "{backend} {}: x = {x:e} ({:#010x}): got {g:e}, want {want:e}, err {err:e}, allowed {:e}",
            f.name,
            x.to_bits(),
            f.allowed(x as f64, want)
        );
    }
}

fn sweep<B: Backend>() {
    for f in funcs() {
        let xs = sweep_inputs(f.range);
        let mut got = xs.clone();
        B::activate(f.f, &mut got);
        check_bound(&f, &xs, &got, B::NAME);
        // Out of place gives bitwise the same results.
        let mut y = vec![0.0f32; xs.len()];
        B::activate_to(f.f, &xs, &mut y);
        for (a, b) in got.iter().zip(&y) {
            assert_eq!(a.to_bits(), b.to_bits(), "{}: in place vs out of place", f.name);
        }
    }
}

/// Every length: random data vs the reference, and each element computed alone (a length-1
/// call goes through the partial-vector path) gives bitwise the result of the long call.
fn tails<B: Backend>() {
    let mut r = rng(11);
    for f in funcs() {
        for n in tail_sizes() {
            let xs = uniform(&mut r, n, f.range.0.max(-30.0) as f32, f.range.1.min(30.0) as f32);
            let mut got = xs.clone();
            B::activate(f.f, &mut got);
            check_bound(&f, &xs, &got, B::NAME);
            assert_lanes_and_to::<B>(f.name, f.f, &xs, &got);
        }
    }
}

fn relu_exact<B: Backend>() {
    let mut r = rng(12);
    for n in tail_sizes() {
        let xs = uniform(&mut r, n, -3.0, 3.0);
        let want: Vec<f64> = xs.iter().map(|&x| ref_relu(x as f64)).collect();
        let mut got = xs.clone();
        B::activate(Activation::Relu, &mut got);
        assert_close("relu", &got, &want, 0.0, 0.0);
        let mut y = vec![0.0; n];
        B::activate_to(Activation::Relu, &xs, &mut y);
        assert_close("relu_to", &y, &want, 0.0, 0.0);

        for slope in [0.01f32, 0.2, -0.5, 1.5] {
            // `slope * x` is one f32 product: the only rounding is that of the product,
            // which the f64 reference of the f32 product reproduces exactly.
            let want: Vec<f64> =
                xs.iter().map(|&x| if x < 0.0 { (x * slope) as f64 } else { x as f64 }).collect();
            let mut got = xs.clone();
            B::activate(Activation::LeakyRelu { slope }, &mut got);
            assert_close("leaky_relu", &got, &want, 0.0, 0.0);
            let mut y = vec![0.0; n];
            B::activate_to(Activation::LeakyRelu { slope }, &xs, &mut y);
            assert_close("leaky_relu_to", &y, &want, 0.0, 0.0);
        }
    }
    let mut s = [f32::NAN, -0.0, f32::INFINITY, f32::NEG_INFINITY, 0.0, -1.0, 2.0];
    B::activate(Activation::Relu, &mut s);
    assert!(s[0].is_nan());
    assert_eq!(s[1].to_bits(), 0.0f32.to_bits(), "relu(-0) = +0");
    assert_eq!(&s[2..], &[f32::INFINITY, 0.0, 0.0, 0.0, 2.0]);
    let mut s = [f32::NAN, f32::NEG_INFINITY, -2.0, 3.0];
    B::activate(Activation::LeakyRelu { slope: 0.1 }, &mut s);
    assert!(s[0].is_nan());
    assert_eq!(&s[1..], &[f32::NEG_INFINITY, -2.0 * 0.1, 3.0]);
}

/// `clamp_min` is exact (a comparison): every tail, several bounds, special values.
fn clamp_min_exact<B: Backend>() {
    let mut r = rng(15);
    for n in tail_sizes() {
        let xs = uniform(&mut r, n, -3.0, 3.0);
        for min in [-0.4f32, 0.0, 1.5, f32::NEG_INFINITY] {
            let want: Vec<f64> = xs.iter().map(|&x| (x as f64).max(min as f64)).collect();
            let mut got = xs.clone();
            B::activate(Activation::ClampMin { min }, &mut got);
            assert_close("clamp_min", &got, &want, 0.0, 0.0);
            let mut y = vec![f32::NAN; n];
            B::activate_to(Activation::ClampMin { min }, &xs, &mut y);
            assert_close("clamp_min_to", &y, &want, 0.0, 0.0);
        }
    }
    let mut s = [f32::NAN, -0.0, 0.0, f32::NEG_INFINITY, f32::INFINITY, -0.5];
    B::activate(Activation::ClampMin { min: -0.4 }, &mut s);
    assert!(s[0].is_nan(), "NaN stays NaN");
    assert_eq!(s[1].to_bits(), (-0.0f32).to_bits());
    assert_eq!(&s[2..], &[0.0, -0.4, f32::INFINITY, -0.4]);
    // fmax on signed zeros: +0 wins whichever side it is on.
    let mut s = [-0.0f32, 0.0];
    B::activate(Activation::ClampMin { min: 0.0 }, &mut s);
    assert_eq!(s.map(f32::to_bits), [0, 0]);
    let mut s = [0.0f32];
    B::activate(Activation::ClampMin { min: -0.0 }, &mut s);
    assert_eq!(s[0].to_bits(), 0);
}

fn apply<B: Backend>(f: Activation, xs: &[f32]) -> Vec<f32> {
    let mut v = xs.to_vec();
    B::activate(f, &mut v);
    v
}

fn special_values<B: Backend>() {
    let inf = f32::INFINITY;
    // NaN in, NaN out, for every function (payload and sign irrelevant); a vector of NaNs
    // mixed with ordinary values checks every lane.
    let nan_bits = [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0x7fff_ffff, 0xff80_1234];
    for f in funcs() {
        let mut xs: Vec<f32> = Vec::new();
        for (i, b) in nan_bits.iter().enumerate() {
            xs.push(f32::from_bits(*b));
            xs.push(i as f32 - 2.0);
        }
        let got = apply::<B>(f.f, &xs);
        for (i, (&x, &g)) in xs.iter().zip(&got).enumerate() {
            assert_eq!(x.is_nan(), g.is_nan(), "{}: lane {i}: x = {x}, got {g}", f.name);
        }
    }
    let x = [0.0, -0.0, inf, -inf, 88.72283, 88.72284, -87.33654, -87.33655, -1e30];
    let e = apply::<B>(Activation::Exp, &x);
    assert_eq!(e[0], 1.0, "exp(0) is exactly 1");
    assert_eq!(e[1], 1.0, "exp(-0) is exactly 1");
    assert_eq!(e[2], inf);
    assert_eq!(e[3], 0.0);
    assert!(e[4].is_finite() && e[4] > 3.4e38, "exp(88.72283) = {}", e[4]);
    assert_eq!(e[5], inf, "exp overflows like f32");
    assert!(e[6] >= f32::MIN_POSITIVE, "exp(-87.33654) = {:e} is normal", e[6]);
    assert_eq!(e[7], 0.0, "exp flushes subnormal results");
    assert_eq!(e[8], 0.0);

    let t = apply::<B>(Activation::Tanh, &[0.0, -0.0, inf, -inf, 10.0, -10.0, 1e-30, -1e-30]);
    assert_eq!(t[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(t[1].to_bits(), (-0.0f32).to_bits(), "tanh(-0) = -0");
    assert_eq!(&t[2..6], &[1.0, -1.0, 1.0, -1.0]);
    assert_eq!(&t[6..], &[1e-30, -1e-30], "tanh(x) = x for tiny x");

    let s = apply::<B>(Activation::Sigmoid, &[0.0, -0.0, inf, -inf, 100.0, -200.0]);
    assert_eq!(s, [0.5, 0.5, 1.0, 0.0, 1.0, 0.0]);

    let e = apply::<B>(Activation::Erf, &[0.0, -0.0, inf, -inf, 3.92, -3.92, 1e-30]);
    assert_eq!(e[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(e[1].to_bits(), (-0.0f32).to_bits(), "erf(-0) = -0");
    assert_eq!(&e[2..6], &[1.0, -1.0, 1.0, -1.0]);
    assert!((e[6] as f64 - 1e-30 * 2.0 / core::f64::consts::PI.sqrt()).abs() < 1e-36);

    for (name, f) in [
        ("silu", Activation::Silu),
        ("gelu_tanh", Activation::GeluTanh),
        ("gelu_erf", Activation::GeluErf),
    ] {
        let g = apply::<B>(f, &[inf, -inf, 0.0, -0.0, 1e30, -1e30, f32::MAX, f32::MIN]);
        assert_eq!(g[0], inf, "{name}(+inf)");
        assert_eq!(g[1], 0.0, "{name}(-inf)");
        assert_eq!(g[2], 0.0, "{name}(0)");
        assert_eq!(g[3], 0.0, "{name}(-0)");
        assert_eq!(g[4], 1e30, "{name}(1e30)");
        assert_eq!(g[5], 0.0, "{name}(-1e30)");
        assert_eq!(g[6], f32::MAX, "{name}(MAX)");
        assert_eq!(g[7], 0.0, "{name}(MIN)");
    }
}

#[test]
#[should_panic(expected = "lengths differ")]
fn to_length_mismatch_panics() {
    Portable::activate_to(Activation::GeluErf, &[1.0, 2.0], &mut [0.0; 3]);
}

/// The f64 references themselves, at points with known values (erf/erfc from tables,
/// 17 significant digits).
#[test]
fn references_are_right() {
    let cases = [
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (2.5, 0.999_593_047_982_555),
        (3.0, 0.999_977_909_503_001_4),
    ];
    for (x, want) in cases {
        assert!((ref_erf(x) - want).abs() < 1e-15, "erf({x}) = {}", ref_erf(x));
        assert!((ref_erf(-x) + want).abs() < 1e-15);
    }
    // erfc(5) = 1.537459794428035e-12, erfc(10) = 2.0884875837625447e-45.
    assert!((ref_erfc(5.0) / 1.537_459_794_428_035e-12 - 1.0).abs() < 1e-13);
    assert!((ref_erfc(10.0) / 2.088_487_583_762_544_7e-45 - 1.0).abs() < 1e-13);
    assert!((ref_erfc(2.4) / (1.0 - ref_erf(2.4)) - 1.0).abs() < 1e-12);
    assert!((ref_erfc(2.6) / (1.0 - ref_erf(2.6)) - 1.0).abs() < 1e-10);
}

/// Same inputs through `B` and Portable. Same algorithm and coefficients; NEON fuses the
/// multiply-adds, so the results differ by a few roundings of intermediates: allow 4 eps
/// relative (plus TINY for flushed results); relu / leaky ReLU / the clamp are bitwise equal.
fn matches_portable<B: Backend>() {
    let mut r = rng(13);
    for f in funcs() {
        for n in [1, 3, 4, 7, 16, 33, 1000] {
            let xs = uniform(&mut r, n, f.range.0 as f32, f.range.1 as f32);
            let a = apply::<Portable>(f.f, &xs);
            let b = apply::<B>(f.f, &xs);
            // gelu_erf: h + h erf, the erf difference is absolute, scaled by |x|/2.
            for ((&x, &u), &v) in xs.iter().zip(&a).zip(&b) {
                let tol = 1e-37 + 4.0 * EPS * (v.abs() as f64) + 2.0 * EPS * x.abs() as f64;
                let same = u == v || (u.is_nan() && v.is_nan());
                assert!(
                    same || ((u - v).abs() as f64) <= tol,
                    "{} {}: x = {x}: {u} vs {v}",
                    B::NAME,
                    f.name
                );
            }
        }
    }
    let xs = uniform(&mut r, 1001, -5.0, 5.0);
    for f in
        [Activation::Relu, Activation::LeakyRelu { slope: 0.1 }, Activation::ClampMin { min: -0.4 }]
    {
        assert_eq!(apply::<Portable>(f, &xs), apply::<B>(f, &xs), "{} {f:?}", B::NAME);
    }
}

/// The x86 levels run the same operations in every lane, so GELU and tanh give the same
/// bits at AVX2 (8 lanes) and AVX-512 (16) where the CPU has both: lengths around both
/// widths and their 4-vector steps, with NaN, -0 and values past the clamps.
#[test]
fn x86_levels_same_bits() {
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::{Avx2, Avx512, X86};
    if !(X86Level::Avx2.supported() && X86Level::Avx512.supported()) {
        return;
    }
    let mut r = rng(17);
    for n in [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000] {
        let mut xs = uniform(&mut r, n, -12.0, 12.0);
        for (i, v) in [f32::NAN, -0.0, 0.0, 1e30, -1e30, f32::INFINITY].into_iter().enumerate() {
            if i < n {
                xs[(i * 5) % n] = v;
            }
        }
        for f in [Activation::GeluErf, Activation::Tanh] {
            let a = apply::<X86<Avx2>>(f, &xs);
            let b = apply::<X86<Avx512>>(f, &xs);
            for (i, (u, v)) in a.iter().zip(&b).enumerate() {
                let same = u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan());
                assert!(same, "{f:?} n={n} x[{i}] = {}: avx2 {u} vs avx512 {v}", xs[i]);
            }
        }
    }
}

/// The x86 hook is a safe method: called directly with output and input of different
/// lengths it panics before any vector code writes (the entry points check this first).
#[test]
fn x86_hook_rejects_mismatched_lengths() {
    use neon_runtime::kernels::activation::MapArgs;
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::{Avx2, Avx512, X86};
    for f in [Activation::GeluErf, Activation::Tanh] {
        let x = [0.5f32; 16];
        let mut y = [7.0f32; 16];
        if X86Level::Avx2.supported() {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                X86::<Avx2>::activate_unchecked(f, MapArgs::To(&x, &mut y[..4]))
            }));
            assert!(r.is_err(), "{f:?}: avx2 accepted a shorter output");
        }
        if X86Level::Avx512.supported() {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                X86::<Avx512>::activate_unchecked(f, MapArgs::To(&x, &mut y[..4]))
            }));
            assert!(r.is_err(), "{f:?}: avx512 accepted a shorter output");
        }
        assert!(y[4..].iter().all(|&v| v == 7.0), "{f:?}: wrote past the output");
    }
}

neon_runtime::backend_tests!(
    sweep,
    tails,
    relu_exact,
    clamp_min_exact,
    special_values,
    matches_portable
);

// ---------------------------------------------------------------------------------------
// Measurement (ignored by default): prints max abs / rel error per function and backend.
// ---------------------------------------------------------------------------------------

fn measure<B: Backend>(bit_stride: u32) {
    println!("backend {} (every {bit_stride}th f32 bit pattern, plus the sweep)", B::NAME);
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  bound use",
        "function", "max abs", "at x", "max rel", "at x", "rel/cond", "at x"
    );
    for f in funcs() {
        let mut xs = sweep_inputs(f.range);
        // Every `bit_stride`-th f32 bit pattern of both signs with |x| <= range.
        let hi = f.range.1.max(-f.range.0) as f32;
        let mut b = 0u32;
        while b < hi.to_bits() {
            let x = f32::from_bits(b);
            if (x as f64) <= f.range.1 {
                xs.push(x);
            }
            if (-(x as f64)) >= f.range.0 {
                xs.push(-x);
            }
            b += bit_stride;
        }
        let mut got = xs.clone();
        B::activate(f.f, &mut got);
        let mut worst = [(0.0f64, 0.0f32); 4]; // abs, rel, rel/cond, share of the bound
        for (&x, &g) in xs.iter().zip(&got) {
            let want = (f.reference)(x as f64);
            if !want.is_finite() || want.abs() < TINY || want.abs() > f32::MAX as f64 {
                continue;
            }
            let err = (g as f64 - want).abs();
            let rel = err / want.abs();
            // Relative errors are reported where |want| > 1e-30 (below, flushed subnormal
            // intermediates dominate: covered by the TINY floor of the bound) and x >= rel_from.
            let big = want.abs() > 1e-30 && x as f64 >= f.rel_from;
            let cand = [
                err,
                if big { rel } else { 0.0 },
                if big { rel / (f.cond)(x as f64) } else { 0.0 },
                err / f.allowed(x as f64, want),
            ];
            for (w, c) in worst.iter_mut().zip(cand) {
                if c > w.0 {
                    *w = (c, x);
                }
            }
        }
        println!(
            "{:<10} {:>10.3e} {:>10.4} {:>10.3e} {:>10.4} {:>10.3e} {:>10.4}  {:.0}% at {}   (rel/cond = {:.2} eps)",
            f.name,
            worst[0].0,
            worst[0].1,
            worst[1].0,
            worst[1].1,
            worst[2].0,
            worst[2].1,
            worst[3].0 * 100.0,
            worst[3].1,
            worst[2].0 / EPS,
        );
    }
}

/// The bit-pattern stride of the measurement: `ACT_MEASURE_STRIDE`, else 97 on the host
/// and 997 under qemu (emulation is ~50x slower).
fn measure_stride() -> u32 {
    let default = if cfg!(target_arch = "aarch64") { 997 } else { 97 };
    let stride = std::env::var("ACT_MEASURE_STRIDE").ok().and_then(|s| s.parse().ok());
    stride.unwrap_or(default)
}

common::measurement_test!(measure_accuracy, measure, measure_stride());

// ---------------------------------------------------------------------------------------
// Operator
// ---------------------------------------------------------------------------------------

mod op {
    use super::*;
    use neon_runtime::ops::ShapeRule;
    use neon_runtime::{Error, Layout, Shape, ShapeError, TensorView, TensorViewMut};

    const ALL: [Activation; 9] = [
        Activation::Relu,
        Activation::LeakyRelu { slope: 0.1 },
        Activation::ClampMin { min: -0.4 },
        Activation::GeluErf,
        Activation::GeluTanh,
        Activation::Silu,
        Activation::Tanh,
        Activation::Sigmoid,
        Activation::Exp,
    ];

    /// The operator runs the kernel: same bits in place, out of place and through the kernel.
    #[test]
    fn runs_the_kernels() {
        fn assert_send_sync<T: Send + Sync + Copy>() {}
        assert_send_sync::<Activation>();
        let mut r = rng(14);
        let x = uniform(&mut r, 6 * 7, -4.0, 4.0);
        for act in ALL {
            let vx = TensorView::new(&x, &[6, 7], Layout::FrameMajor).unwrap();
            let mut o = vec![0.0; x.len()];
            let mut out = TensorViewMut::new(&mut o, &[6, 7], Layout::FrameMajor).unwrap();
            act.run::<Portable>(&vx, &mut out).unwrap();
            let mut y = x.clone();
            let mut vy = TensorViewMut::new(&mut y, &[2, 3, 7], Layout::ChannelFirst).unwrap();
            act.run_in_place::<Portable>(&mut vy).unwrap();
            assert_eq!(o, y, "{act:?}");
            let mut k = x.clone();
            act.apply::<Portable>(&mut k).unwrap();
            assert_eq!(k, y, "{act:?}");
            let s = Shape::new(&[6usize, 7]).unwrap();
            assert_eq!(act.output_shape(&[s]), Ok(s));
            assert_eq!(act.arity(), 1);
        }
        assert_eq!(Activation::GeluErf.name(), "gelu");
    }

    #[test]
    fn errors() {
        let x = [1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
        let vx = TensorView::new(&x, &[2, 3], Layout::ChannelFirst).unwrap();
        let act = Activation::Silu;
        let mut o = [7.0f32; 6];
        // Output of another rank / size / layout: Err, output untouched.
        let mut out = TensorViewMut::new(&mut o, &[6], Layout::ChannelFirst).unwrap();
        let err = act.run::<Portable>(&vx, &mut out).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Shape(ShapeError::Rank { op: "silu", arg: 1, expected: "2", got: 1 })
            ),
            "{err:?}"
        );
        let mut out = TensorViewMut::new(&mut o, &[3, 2], Layout::ChannelFirst).unwrap();
        let err = act.run::<Portable>(&vx, &mut out).unwrap_err();
        assert!(matches!(
            err,
            Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 2, got: 3, .. })
        ));
        let mut out = TensorViewMut::new(&mut o, &[2, 3], Layout::FrameMajor).unwrap();
        assert!(matches!(
            act.run::<Portable>(&vx, &mut out),
            Err(Error::Layout { op: "silu", .. })
        ));
        assert_eq!(o, [7.0; 6]);
        // Bad slope.
        let bad = Activation::LeakyRelu { slope: f32::NAN };
        let mut y = x;
        let err = bad.apply::<Portable>(&mut y).unwrap_err();
        assert!(matches!(err, Error::Shape(ShapeError::Geometry { op: "leaky_relu", .. })));
        assert_eq!(y, x);
        let s = Shape::new(&[2usize, 3]).unwrap();
        assert!(bad.output_shape(&[s]).is_err());
        let mut vy = TensorViewMut::new(&mut y, &[2, 3], Layout::ChannelFirst).unwrap();
        assert!(bad.run_in_place::<Portable>(&mut vy).is_err());
        let bad = Activation::ClampMin { min: f32::NAN };
        let err = bad.apply::<Portable>(&mut y).unwrap_err();
        assert!(matches!(err, Error::Shape(ShapeError::Geometry { op: "clamp_min", .. })));
        assert!(bad.output_shape(&[s]).is_err());
        assert_eq!(y, x);
        // Wrong arity and slice lengths.
        assert!(matches!(act.output_shape(&[s, s]), Err(ShapeError::Geometry { .. })));
        assert!(matches!(act.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
        let err = act.apply_to::<Portable>(&x, &mut [0.0; 5]).unwrap_err();
        assert_eq!(err, Error::Length { what: "activation output", expected: 6, got: 5 });
        // Still usable.
        let mut out = TensorViewMut::new(&mut o, &[2, 3], Layout::ChannelFirst).unwrap();
        act.run::<Portable>(&vx, &mut out).unwrap();
        assert!((o[0] as f64 - ref_silu(1.0)).abs() < 1e-7);
    }
}
