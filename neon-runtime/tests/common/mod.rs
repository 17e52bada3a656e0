//! Shared helpers for the kernel tests: seeded random data and f64 comparison.
#![allow(dead_code)]

pub mod fft64;
pub mod recording;
pub mod rfft;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A deterministic RNG for a test (seed per test so failures reproduce).
pub fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

/// The im2col window of a `ch x h x w` image (`(height, width)`), kernel `(kh, kw)`, strides
/// `(sh, sw)`, top and left padding `(pt, pl)` and output `(out_height, out_width)` as given
/// (no check that they agree).
pub fn window2d(
    ch: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (pt, pl): (usize, usize),
    (oh, ow): (usize, usize),
) -> neon_runtime::kernels::conv2d::Window2d {
    neon_runtime::kernels::conv2d::Window2d {
        channels: ch,
        height: h,
        width: w,
        kernel_h: kh,
        kernel_w: kw,
        stride_h: sh,
        stride_w: sw,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: pt,
        pad_left: pl,
        out_height: oh,
        out_width: ow,
    }
}

/// `n` values uniform in `[lo, hi)`.
pub fn uniform(rng: &mut SmallRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

/// Asserts `|got - want| <= abs + rel * |want|` elementwise, naming the first bad index.
pub fn assert_close(what: &str, got: &[f32], want: &[f64], abs: f64, rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(
            err <= abs + rel * w.abs(),
            "{what}: index {i}: got {g}, want {w} (err {err:e}, allowed {:e})",
            abs + rel * w.abs()
        );
    }
}

/// Asserts two f32 slices agree within `abs + rel * |b|` (backend-vs-backend comparisons).
pub fn assert_close_f32(what: &str, a: &[f32], b: &[f32], abs: f32, rel: f32) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let err = (x - y).abs();
        assert!(err <= abs + rel * y.abs(), "{what}: index {i}: {x} vs {y} (err {err:e})");
    }
}

/// For the kernels whose x86 levels run the portable code compiled for their vectors (the
/// same bits): on `X86<_>`, asserts that `got` equals `portable` bit for bit; a no-op on
/// other backends (their tests bound the difference instead).
pub fn assert_x86_bits<B: neon_runtime::Backend>(what: &str, got: &[f32], portable: &[f32]) {
    if matches!(B::KIND, neon_runtime::BackendKind::X86(_)) {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(got), bits(portable), "{what}: {} vs portable", B::NAME);
    }
}

/// Every vector tail: sizes 1..=33, then a few larger odd sizes.
pub fn tail_sizes() -> impl Iterator<Item = usize> {
    (1..=33).chain([47, 63, 64, 65, 127, 255, 257, 1000, 1023])
}

/// For every tail size `k` of [`tail_sizes`]: a random split spectrum of `k` bins (real
/// parts, then imaginary parts, uniform in [-100, 100) from `r`), what the per-bin kernel
/// `f` writes for it into `k` values (NaN before the call), and `check(k, spectrum, out)`.
pub fn each_tail_spectrum(
    r: &mut SmallRng,
    f: fn(&[f32], &mut [f32]),
    mut check: impl FnMut(usize, &[f32], &[f32]),
) {
    for k in tail_sizes() {
        let spectrum = uniform(r, 2 * k, -100.0, 100.0);
        let mut out = vec![f32::NAN; k];
        f(&spectrum, &mut out);
        check(k, &spectrum, &out);
    }
}

/// Sampled (m, n, k) covering every size 1..=33 of each dimension: each dimension sweeps
/// 1..=33 while the other two cycle through sizes that hit other tails; with `diagonal`,
/// each step also adds the cube diagonal `(t, t, t)`.
pub fn tail_shapes(diagonal: bool) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for t in 1..=33 {
        let (u, w) = ((t * 7) % 33 + 1, (t * 13) % 33 + 1);
        v.extend([(t, u, w), (u, t, w), (w, u, t)]);
        if diagonal {
            v.push((t, t, t));
        }
    }
    v
}

/// Fully connected layer shapes `(rows, in_features, out_features, bias)`: one row (the
/// GEMV) and several, tails, a 416 -> 1664 MLP block.
pub const LINEAR_SHAPES: [(usize, usize, usize, bool); 6] = [
    (1, 13, 7, true),
    (1, 416, 1664, false),
    (2, 33, 17, false),
    (7, 5, 13, true),
    (37, 64, 48, true),
    (6, 416, 100, false),
];

/// Asserts that `packed` holds `src` (`[rows, k]` row-major) in the packing routines' panel
/// layout: `panels` panels of `width` rows, each `k` steps of `width` values,
/// `packed[(panel * k + kk) * width + r] = src[(panel * width + r) * k + kk]`, zero past
/// `rows`.
pub fn assert_panels(
    packed: &[f32],
    src: &[f32],
    rows: usize,
    k: usize,
    width: usize,
    panels: usize,
) {
    assert_eq!(packed.len(), panels * width * k);
    for panel in 0..panels {
        for kk in 0..k {
            for r in 0..width {
                let row = panel * width + r;
                let want = if row < rows { src[row * k + kk] } else { 0.0 };
                assert_eq!(
                    packed[(panel * k + kk) * width + r],
                    want,
                    "panel {panel} step {kk} row {r}"
                );
            }
        }
    }
}

/// A buffer of NaNs: every element a kernel should write is checked to be written.
pub fn nan_vec(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

/// The values as f64 (exact).
pub fn f64s(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

/// Checks `got` against the f64 reference with the classical bound for a sum of `terms`
/// rounded products (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1):
/// `|err| <= gamma_terms * sum|terms|`, `gamma_n ~ n * u`, `u = eps / 2`. We allow
/// `(terms + 2) * eps * sum|terms|` (twice the bound, any summation order, FMA or not) plus
/// a tiny absolute floor for all-zero windows. Returns the largest observed error in units
/// of `eps * sum|terms|`.
pub fn check_sum(what: &str, got: &[f32], want: &[f64], mag: &[f64], terms: usize) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let eps = f32::EPSILON as f64;
    let mut worst = 0.0f64;
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(mag).enumerate() {
        let err = (g as f64 - w).abs();
        let allowed = (terms as f64 + 2.0) * eps * m + 1e-30;
        assert!(
            err <= allowed,
            "{what}: index {i}: got {g}, want {w} (err {err:e}, allowed {allowed:e})"
        );
        if m > 0.0 {
            worst = worst.max(err / (eps * m));
        }
    }
    worst
}

/// Transposes a row-major `[rows, cols]` matrix (a plain index-swapping reference).
pub fn transpose_ref<T: Copy>(a: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols * rows).map(|i| a[(i % rows) * cols + i / rows]).collect()
}

/// Runs `code` once for every backend this machine can run (Portable first): for the
/// measurements, which print figures per backend.
pub fn each_backend<W: neon_runtime::WithBackend<Output = ()> + Copy>(code: W) {
    for kind in neon_runtime::BackendKind::available() {
        kind.with(code).expect("available backend");
    }
}

/// An ignored test `$name` that runs `$measure::<B>($args)` (a function printing figures)
/// for every backend this machine can run: `cargo test -- --ignored --nocapture`.
#[allow(unused_macros)] // not every suite measures
macro_rules! measurement_test {
    ($name:ident, $measure:ident $(, $arg:expr)*) => {
        #[test]
        #[ignore = "measurement: run with --ignored --nocapture"]
        fn $name() {
            #[derive(Clone, Copy)]
            struct Measure;
            impl neon_runtime::WithBackend for Measure {
                type Output = ();
                fn run<B: neon_runtime::Backend>(self) {
                    $measure::<B>($($arg),*)
                }
            }
            crate::common::each_backend(Measure);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use measurement_test;

/// `$op::new($g, $w, Some($b))` (a conv op taking PyTorch-layout weights and a bias) and
/// `$w` packed by `$g.pack_weights` into a new buffer, checked to equal the op's packed
/// weights: `(op, packed)`, for the tests of `$op::from_packed`.
#[allow(unused_macros)] // the conv suites only
macro_rules! new_and_packed {
    ($op:ident, $g:expr, $w:expr, $b:expr) => {{
        let op = $op::new($g, $w.clone(), Some($b.clone())).unwrap();
        let mut packed = vec![0.0; $g.packed_len().unwrap()];
        $g.pack_weights(&$w, &mut packed).unwrap();
        assert_eq!(packed, op.packed_weight());
        (op, packed)
    }};
}
#[allow(unused_imports)]
pub(crate) use new_and_packed;

/// Compiles only when `T` is `Send` and `Sync` (the operators are shared between threads).
pub fn assert_send_sync<T: Send + Sync>() {}

/// Asserts (at compile time) that every operator `$op` is `Send` and `Sync` with owned
/// (`Vec<f32>`) and with borrowed (`&'static [f32]`) weights.
#[allow(unused_macros)] // not every suite tests operators
macro_rules! assert_ops_send_sync {
    ($($op:ident),+ $(,)?) => {
        $(
            crate::common::assert_send_sync::<$op<Vec<f32>>>();
            crate::common::assert_send_sync::<$op<&'static [f32]>>();
        )+
    };
}
#[allow(unused_imports)]
pub(crate) use assert_ops_send_sync;

/// Asserts that `f` out of place (`B::activate_to`) and on each element alone give the bits
/// of `got`, `B::activate(f)` in place over all of `xs` (no lane of a vector step differs
/// from the scalar tail).
pub fn assert_lanes_and_to<B: neon_runtime::kernels::ActivationKernels>(
    name: &str,
    f: neon_runtime::kernels::activation::Activation,
    xs: &[f32],
    got: &[f32],
) {
    let n = xs.len();
    let mut y = vec![f32::NAN; n];
    B::activate_to(f, xs, &mut y);
    for i in 0..n {
        let mut one = [xs[i]];
        B::activate(f, &mut one);
        assert_eq!(one[0].to_bits(), got[i].to_bits(), "{name} n={n} i={i}: lane");
        assert_eq!(y[i].to_bits(), got[i].to_bits(), "{name} n={n} i={i}: _to");
    }
}
