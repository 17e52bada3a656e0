//! Normalisation kernels and operators against f64 references.
//!
//! ## Tolerances
//! Outputs are `y = z * gamma + beta` with `z` the normalised value, so the natural error
//! scale of a set is `S = max|gamma| * max|z| + max|beta|` (the error does not shrink with
//! `|y|`: `z * gamma` and `beta` may cancel). The f32 error budget per element:
//! - the mean residual and the variance are sums of `n` terms; their relative errors grow
//!   like `sqrt(n) * eps` for random rounding (worst case `n * eps`), which reaches `y`
//!   through `z` (`|dz| ~ |z| * d(inv)/inv + inv * d(mean)`);
//! - the square root and division are correctly rounded (<= 1 ulp together), and forming
//!   `y` costs 4 more roundings.
//!
//! So the tests allow `K * eps * (8 + sqrt(n)) * S` with `K = 1`; the largest error
//! measured is 0.34 of that on every backend (printed by `cargo test -- --nocapture`),
//! while an unshifted two-pass scheme with an f32 mean already exceeds it 15 to 45 times
//! on the offset data. With a large
//! common offset (1000 + noise) the same tolerance must hold: the shifted two-pass scheme
//! makes the error independent of the offset (`E[x^2] - E[x]^2` would be off by ~0.06 in
//! the variance, ~1e5 times this budget).

mod common;

use common::{assert_close, assert_close_f32, rng, tail_sizes, uniform};
use neon_runtime::kernels::norm::{sqrt_f32, NormParams};
use neon_runtime::kernels::NormKernels;
use neon_runtime::ops::norm::{
    GroupNorm, GroupNormGeometry, LayerNorm, LayerNormGeometry, RmsNorm, RmsNormGeometry,
};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};
use rand::Rng;

const EPS: f32 = 1e-5;
const F32_EPS: f64 = f32::EPSILON as f64;
/// Safety factor of the tolerance (see the module docs).
const K: f64 = 1.0;

// ---------------------------------------------------------------------------------------
// f64 references
// ---------------------------------------------------------------------------------------

/// Mean and population variance, two passes in f64.
fn stats(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (mean, v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n)
}

/// Reference output and error scale of one normalised set: `idx` are the positions of the
/// set in `x`, `ch[k]` the channel of `idx[k]`; `rms` selects RMSNorm; the variance floor
/// is [`EPS`].
fn ref_set(
    x: &[f32],
    (idx, ch): (&[usize], &[usize]),
    gamma: &[f32],
    beta: Option<&[f32]>,
    rms: bool,
    want: &mut [f64],
) -> f64 {
    let eps = EPS;
    let v: Vec<f64> = idx.iter().map(|&i| x[i] as f64).collect();
    let (mean, var) =
        if rms { (0.0, v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64) } else { stats(&v) };
    let inv = 1.0 / (var + eps as f64).sqrt();
    let (mut zmax, mut gmax, mut bmax) = (0.0f64, 0.0f64, 0.0f64);
    for (k, &i) in idx.iter().enumerate() {
        let z = (v[k] - mean) * inv;
        let (g, b) = (gamma[ch[k]] as f64, beta.map_or(0.0, |b| b[ch[k]] as f64));
        want[i] = z * g + b;
        zmax = zmax.max(z.abs());
        gmax = gmax.max(g.abs());
        bmax = bmax.max(b.abs());
    }
    gmax * zmax + bmax
}

/// Checks `got` against `want` set by set with the tolerance of the module docs; returns
/// the largest error in units of `eps * (8 + sqrt(n)) * S`.
fn check_sets(what: &str, got: &[f32], want: &[f64], sets: &[(Vec<usize>, f64)]) -> f64 {
    let mut worst = 0.0f64;
    for (idx, scale) in sets {
        let unit = F32_EPS * (8.0 + (idx.len() as f64).sqrt()) * scale.max(1e-30);
        let g: Vec<f32> = idx.iter().map(|&i| got[i]).collect();
        let w: Vec<f64> = idx.iter().map(|&i| want[i]).collect();
        for (a, b) in g.iter().zip(&w) {
            worst = worst.max((*a as f64 - b).abs() / unit);
        }
        assert_close(what, &g, &w, K * unit, 0.0);
    }
    worst
}

/// The sets of a row-major `[rows, n]` row norm: (positions, channels).
fn row_sets(rows: usize, n: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    (0..rows).map(|r| ((r * n..(r + 1) * n).collect(), (0..n).collect())).collect()
}

/// The sets of a channel-first `[c, t]` column norm.
fn column_sets(c: usize, t: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    (0..t).map(|f| ((0..c).map(|ch| ch * t + f).collect(), (0..c).collect())).collect()
}

/// The sets of a GroupNorm over `[c, t]`.
fn group_sets(c: usize, t: usize, groups: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    let pg = c / groups;
    (0..groups)
        .map(|g| {
            let idx: Vec<usize> = (g * pg * t..(g + 1) * pg * t).collect();
            let ch = idx.iter().map(|i| i / t).collect();
            (idx, ch)
        })
        .collect()
}

/// Reference outputs and scales for `sets`.
fn reference(
    x: &[f32],
    sets: &[(Vec<usize>, Vec<usize>)],
    gamma: &[f32],
    beta: Option<&[f32]>,
    rms: bool,
) -> (Vec<f64>, Vec<(Vec<usize>, f64)>) {
    let mut want = vec![0.0; x.len()];
    let scales = sets
        .iter()
        .map(|(idx, ch)| (idx.clone(), ref_set(x, (idx, ch), gamma, beta, rms, &mut want)))
        .collect();
    (want, scales)
}

/// Input data: uniform noise in [-1, 1) plus `offset`.
fn data(r: &mut impl Rng, n: usize, offset: f32) -> Vec<f32> {
    (0..n).map(|_| offset + r.gen_range(-1.0f32..1.0)).collect()
}

/// The LayerNorm / GroupNorm parameters with the variance floor [`EPS`].
fn params<'a>(gamma: &'a [f32], beta: Option<&'a [f32]>) -> NormParams<'a> {
    NormParams { gamma, beta, eps: EPS }
}

/// Offsets every test runs with: centred data, and a large common offset.
const OFFSETS: [f32; 2] = [0.0, 1000.0];

// ---------------------------------------------------------------------------------------
// Kernel checks, generic over the backend
// ---------------------------------------------------------------------------------------

fn row_shapes() -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = tail_sizes().flat_map(|n| [(1, n), (3, n)]).collect();
    v.extend([(7, 13), (13, 7), (416, 1664), (2, 5000)]);
    v
}

fn channel_shapes() -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = (1..=33).flat_map(|c| (1..=33).map(move |t| (c, t))).collect();
    for c in [47, 64, 257, 1000] {
        v.extend([(c, 1), (c, 5), (c, 16), (c, 35)]);
    }
    v.extend([(7, 13), (13, 7), (416, 1664)]);
    v
}

/// A norm kernel's signature here: `(outer, inner, x, gamma, beta, y)` of a `[outer, inner]`
/// input.
type NormKernel = fn(usize, usize, &[f32], &[f32], Option<&[f32]>, &mut [f32]);

/// One LayerNorm / RMSNorm kernel against the reference: frame-major (`rows`: each row of
/// [`row_shapes`] is a set) or channel-first (each column of [`channel_shapes`]), every
/// offset, with and without bias for LayerNorm (`rms`: no bias, RMS statistics). Prints
/// the largest error.
fn check_channel_norm<B: Backend>(seed: u64, kernel: &str, rows: bool, rms: bool, run: NormKernel) {
    let mut r = rng(seed);
    let mut worst = 0.0f64;
    for (a, b) in if rows { row_shapes() } else { channel_shapes() } {
        let (channels, sets) = if rows { (b, row_sets(a, b)) } else { (a, column_sets(a, b)) };
        for offset in OFFSETS {
            let x = data(&mut r, a * b, offset);
            let gamma = uniform(&mut r, channels, -2.0, 2.0);
            let beta = (!rms).then(|| uniform(&mut r, channels, -1.0, 1.0));
            let biases = match &beta {
                Some(beta) => vec![Some(&beta[..]), None],
                None => vec![None],
            };
            for bias in biases {
                let (want, scaled) = reference(&x, &sets, &gamma, bias, rms);
                let mut y = vec![f32::NAN; x.len()];
                run(a, b, &x, &gamma, bias, &mut y);
                let what = format!("{} {kernel} {a}x{b} +{offset}", B::NAME);
                worst = worst.max(check_sets(&what, &y, &want, &scaled));
            }
        }
    }
    eprintln!("{} {kernel}: max error {worst:.3} units", B::NAME);
}

fn group_shapes() -> Vec<(usize, usize, usize)> {
    let cg = [(1, 1), (4, 1), (4, 2), (4, 4), (6, 3), (12, 4), (32, 8), (33, 11), (33, 3)];
    let mut v: Vec<(usize, usize, usize)> =
        cg.iter().flat_map(|&(c, g)| (1..=33).map(move |t| (c, t, g))).collect();
    v.extend([(64, 1000, 8), (8, 1664, 1), (416, 7, 13), (13, 416, 13)]);
    v
}

fn check_group_norm<B: Backend>() -> f64 {
    let mut r = rng(5);
    let mut worst = 0.0f64;
    for (c, t, groups) in group_shapes() {
        for offset in OFFSETS {
            let x = data(&mut r, c * t, offset);
            let gamma = uniform(&mut r, c, -2.0, 2.0);
            let beta = uniform(&mut r, c, -1.0, 1.0);
            for bias in [Some(&beta[..]), None] {
                let (want, sets) = reference(&x, &group_sets(c, t, groups), &gamma, bias, false);
                let mut y = vec![f32::NAN; x.len()];
                B::group_norm(c, t, groups, &x, params(&gamma, bias), &mut y);
                let what = format!("{} group_norm {c}x{t}/{groups} +{offset}", B::NAME);
                worst = worst.max(check_sets(&what, &y, &want, &sets));
            }
        }
    }
    worst
}

fn layer_norm_rows<B: Backend>() {
    let run: NormKernel = |m, n, x, g, b, y| B::layer_norm_rows(m, n, x, params(g, b), y);
    check_channel_norm::<B>(1, "layer_norm_rows", true, false, run);
}
fn layer_norm_channels<B: Backend>() {
    let run: NormKernel = |c, t, x, g, b, y| B::layer_norm_channels(c, t, x, params(g, b), y);
    check_channel_norm::<B>(2, "layer_norm_channels", false, false, run);
}
fn rms_norm_rows<B: Backend>() {
    let run: NormKernel = |m, n, x, g, _, y| B::rms_norm_rows(m, n, x, g, EPS, y);
    check_channel_norm::<B>(3, "rms_norm_rows", true, true, run);
}
fn rms_norm_channels<B: Backend>() {
    let run: NormKernel = |c, t, x, g, _, y| B::rms_norm_channels(c, t, x, g, EPS, y);
    check_channel_norm::<B>(4, "rms_norm_channels", false, true, run);
}
fn group_norm<B: Backend>() {
    let w = check_group_norm::<B>();
    eprintln!("{} group_norm: max error {w:.3} units", B::NAME);
}

/// `B` and Portable on the same inputs. Both are within the f64 tolerance above; they
/// differ only by summation order and fused multiply-adds, so they agree to a few ulp of
/// the error scale: `1e-5` absolute for outputs of scale <= 5 (about 20 ulp of 5).
fn matches_portable<B: Backend>() {
    let mut r = rng(6);
    for (c, t) in [(1, 1), (3, 17), (17, 3), (33, 33), (7, 13), (64, 35), (416, 1664)] {
        for offset in OFFSETS {
            let x = data(&mut r, c * t, offset);
            let gamma = uniform(&mut r, c.max(t), -2.0, 2.0);
            let beta = uniform(&mut r, c.max(t), -1.0, 1.0);
            let (mut a, mut b) = (vec![0.0; c * t], vec![0.0; c * t]);
            let (gc, bc, gt, bt) = (&gamma[..c], &beta[..c], &gamma[..t], &beta[..t]);
            let (pc, pt) = (params(gc, Some(bc)), params(gt, Some(bt)));
            Portable::layer_norm_channels(c, t, &x, pc, &mut a);
            B::layer_norm_channels(c, t, &x, pc, &mut b);
            assert_close_f32("layer_norm_channels", &b, &a, 1e-5, 0.0);
            common::assert_x86_bits::<B>(&format!("layer_norm_channels {c} x {t}"), &b, &a);
            Portable::layer_norm_rows(c, t, &x, pt, &mut a);
            B::layer_norm_rows(c, t, &x, pt, &mut b);
            assert_close_f32("layer_norm_rows", &b, &a, 1e-5, 0.0);
            Portable::rms_norm_channels(c, t, &x, gc, EPS, &mut a);
            B::rms_norm_channels(c, t, &x, gc, EPS, &mut b);
            assert_close_f32("rms_norm_channels", &b, &a, 1e-5, 1e-6);
            Portable::rms_norm_rows(c, t, &x, gt, EPS, &mut a);
            B::rms_norm_rows(c, t, &x, gt, EPS, &mut b);
            assert_close_f32("rms_norm_rows", &b, &a, 1e-5, 1e-6);
            Portable::group_norm(c, t, 1, &x, pc, &mut a);
            B::group_norm(c, t, 1, &x, pc, &mut b);
            assert_close_f32("group_norm", &b, &a, 1e-5, 0.0);
        }
    }
}

/// Constant sets: variance 0, so `y = beta` exactly (`z = 0 * 1/sqrt(eps)`).
fn constant_input_gives_beta<B: Backend>() {
    let (c, t) = (5, 19);
    let x = vec![3.25f32; c * t];
    let gamma = vec![1.5f32; c.max(t)];
    let beta: Vec<f32> = (0..c.max(t)).map(|i| i as f32 * 0.5 - 1.0).collect();
    let mut y = vec![0.0; c * t];
    B::layer_norm_channels(c, t, &x, params(&gamma[..c], Some(&beta[..c])), &mut y);
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, beta[i / t], "{} channels", B::NAME);
    }
    B::layer_norm_rows(c, t, &x, params(&gamma[..t], Some(&beta[..t])), &mut y);
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, beta[i % t], "{} rows", B::NAME);
    }
    B::group_norm(c, t, 5, &x, params(&gamma[..c], Some(&beta[..c])), &mut y);
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, beta[i / t], "{} group", B::NAME);
    }
}

neon_runtime::backend_tests!(
    layer_norm_rows,
    layer_norm_channels,
    rms_norm_rows,
    rms_norm_channels,
    group_norm,
    matches_portable,
    constant_input_gives_beta,
    layer_norm_op_matches_kernels,
);

// ---------------------------------------------------------------------------------------
// sqrt_f32
// ---------------------------------------------------------------------------------------

fn assert_sqrt(x: f32) {
    let (got, want) = (sqrt_f32(x), x.sqrt());
    assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "sqrt_f32({x:e} = {:#x}) = {got:e}, IEEE sqrt = {want:e}",
        x.to_bits()
    );
}

/// `sqrt_f32` is bit-identical to IEEE sqrt (std's `f32::sqrt`): special values, random
/// bit patterns over the whole range, a sweep over two binades, and perfect squares with
/// their neighbours (the cases closest to rounding boundaries).
#[test]
fn sqrt_f32_is_correctly_rounded() {
    for x in [
        0.0f32,
        -0.0,
        1.0,
        4.0,
        2.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::EPSILON,
    ] {
        assert_sqrt(x);
    }
    let mut r = rng(7);
    for _ in 0..1_000_000 {
        assert_sqrt(f32::from_bits(r.gen::<u32>()));
    }
    // [1, 4): two binades, every 5th pattern.
    for bits in (1.0f32.to_bits()..4.0f32.to_bits()).step_by(5) {
        assert_sqrt(f32::from_bits(bits));
    }
    for i in 1u32..200_000 {
        let sq = (i as f32) * (i as f32);
        for d in [-1i32, 0, 1] {
            assert_sqrt(f32::from_bits(sq.to_bits().wrapping_add_signed(d)));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------------------

#[test]
fn ops_are_send_sync() {
    common::assert_ops_send_sync!(LayerNorm, RmsNorm, GroupNorm);
}

fn ln_geom(channels: usize, bias: bool, layout: Layout) -> LayerNormGeometry {
    LayerNormGeometry { channels, eps: EPS, bias, layout }
}

fn layer_norm_op_matches_kernels<B: Backend>() {
    let mut r = rng(8);
    let (c, t) = (12, 37);
    let x = data(&mut r, c * t, 3.0);
    let gamma = uniform(&mut r, c, -2.0, 2.0);
    let beta = uniform(&mut r, c, -1.0, 1.0);
    let mut want = vec![0.0; c * t];
    let mut got = vec![0.0; c * t];

    // Frame-major [t, c], also as rank 3 [1, t, c] and rank 1 [c].
    let op =
        LayerNorm::new(ln_geom(c, true, Layout::FrameMajor), gamma.clone(), Some(beta.clone()))
            .unwrap();
    B::layer_norm_rows(t, c, &x, params(&gamma, Some(&beta)), &mut want);
    for dims in [&[t, c][..], &[1, t, c][..]] {
        let input = TensorView::new(&x, dims, Layout::FrameMajor).unwrap();
        let mut output = TensorViewMut::new(&mut got, dims, Layout::FrameMajor).unwrap();
        op.run::<B>(&input, &mut output).unwrap();
        assert_eq!(got, want);
    }
    let input = TensorView::new(&x[..c], &[c], Layout::FrameMajor).unwrap();
    let mut output = TensorViewMut::new(&mut got[..c], &[c], Layout::FrameMajor).unwrap();
    op.run::<B>(&input, &mut output).unwrap();
    assert_eq!(got[..c], want[..c]);

    // Channel-first [c, t], no bias, from a borrowed static-like slice.
    static GAMMA: [f32; 12] = [1.0, -1.0, 0.5, 2.0, 1.5, -0.25, 1.0, 1.0, 0.75, -2.0, 0.1, 3.0];
    let op =
        LayerNorm::from_packed(ln_geom(c, false, Layout::ChannelFirst), &GAMMA[..], None).unwrap();
    B::layer_norm_channels(c, t, &x, params(&GAMMA, None), &mut want);
    let input = TensorView::new(&x, &[c, t], Layout::ChannelFirst).unwrap();
    let mut output = TensorViewMut::new(&mut got, &[c, t], Layout::ChannelFirst).unwrap();
    op.run::<B>(&input, &mut output).unwrap();
    assert_eq!(got, want);
    let mut portable = vec![0.0; c * t];
    Portable::layer_norm_channels(c, t, &x, params(&GAMMA, None), &mut portable);
    assert_close_f32("op vs portable", &got, &portable, 1e-5, 0.0);

    // from_slice copies.
    let op2 =
        LayerNorm::from_slice(ln_geom(c, true, Layout::ChannelFirst), &gamma, Some(&beta)).unwrap();
    assert_eq!(op2.packed_weight(), &gamma[..]);
    assert_eq!(op2.bias(), Some(&beta[..]));
}

#[test]
fn layer_norm_op_errors() {
    let c = 8;
    let g = ln_geom(c, true, Layout::ChannelFirst);
    let gamma = vec![1.0f32; c];
    let beta = vec![0.0f32; c];

    // Constructors.
    assert!(matches!(
        LayerNorm::new(g, vec![1.0; c - 1], Some(beta.clone())),
        Err(Error::Length { what: "gamma", .. })
    ));
    assert!(matches!(
        LayerNorm::new(g, gamma.clone(), None),
        Err(Error::Length { what: "beta", .. })
    ));
    assert!(matches!(
        LayerNorm::new(ln_geom(c, false, Layout::ChannelFirst), gamma.clone(), Some(beta.clone())),
        Err(Error::Length { what: "beta", expected: 0, .. })
    ));
    assert!(matches!(
        LayerNorm::from_packed(g, &gamma[..], None),
        Err(Error::Length { what: "beta", expected: 8, got: 0 })
    ));
    for eps in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        let bad = LayerNormGeometry { eps, ..g };
        assert!(matches!(
            LayerNorm::new(bad, gamma.clone(), Some(beta.clone())),
            Err(Error::Shape(ShapeError::Geometry { .. }))
        ));
    }
    assert!(matches!(
        LayerNorm::new(ln_geom(0, false, Layout::FrameMajor), vec![], None),
        Err(Error::Shape(ShapeError::Geometry { .. }))
    ));

    // Run-time validation: nothing is written on error, the op stays usable.
    let op = LayerNorm::new(g, gamma.clone(), Some(beta.clone())).unwrap();
    const C: usize = 8;
    const T: usize = 5;
    let t = T;
    let x: Vec<f32> = (0..c * t).map(|i| i as f32).collect();
    let mut y = vec![7.0f32; c * t];
    let cf = Layout::ChannelFirst;
    let fm = Layout::FrameMajor;
    let cases: [(&[usize], Layout, &[usize], Layout); 6] = [
        (&[C, T], fm, &[C, T], cf),       // wrong input layout
        (&[T, C], cf, &[T, C], cf),       // channels on the wrong axis
        (&[1, C, T], cf, &[1, C, T], cf), // rank 3 channel-first
        (&[C, T], cf, &[T, C], cf),       // output shape differs
        (&[C, T], cf, &[C * T], cf),      // output rank differs
        (&[C, T], cf, &[C, T], fm),       // output layout differs
    ];
    for (idims, il, odims, ol) in cases {
        let input = TensorView::new(&x, idims, il).unwrap();
        let mut output = TensorViewMut::new(&mut y, odims, ol).unwrap();
        let e = op.run::<Portable>(&input, &mut output);
        assert!(e.is_err(), "{idims:?} {il:?} -> {odims:?} {ol:?} accepted");
        assert!(y.iter().all(|&v| v == 7.0), "output written on error");
    }
    let input = TensorView::new(&x, &[c, t], cf).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[c, t], cf).unwrap();
    op.run::<Portable>(&input, &mut output).unwrap();
    assert!(y.iter().all(|v| v.is_finite() && *v != 7.0));

    // Specific error values.
    let input = TensorView::new(&x, &[t, c], cf).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[t, c], cf).unwrap();
    assert_eq!(
        op.run::<Portable>(&input, &mut output),
        Err(Error::Shape(ShapeError::Dim {
            op: "layer_norm",
            arg: 0,
            axis: 0,
            what: "channels",
            expected: c,
            got: t
        }))
    );
    let input = TensorView::new(&x, &[c, t], fm).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[c, t], cf).unwrap();
    assert_eq!(
        op.run::<Portable>(&input, &mut output),
        Err(Error::Layout { op: "layer_norm", expected: "channel-first" })
    );
}

#[test]
fn shape_rules() {
    let g = ln_geom(16, true, Layout::FrameMajor);
    let s = |d: &[usize]| Shape::new(d).unwrap();
    assert_eq!(g.output_shape(&[s(&[2, 3, 16])]), Ok(s(&[2, 3, 16])));
    assert!(g.output_shape(&[s(&[16, 3])]).is_err());
    assert!(g.output_shape::<usize>(&[]).is_err());
    assert!(g.output_shape(&[s(&[3, 16]), s(&[3, 16])]).is_err());
    let g = ln_geom(16, true, Layout::ChannelFirst);
    assert_eq!(g.output_shape(&[s(&[16, 3])]), Ok(s(&[16, 3])));
    assert!(matches!(g.output_shape(&[s(&[16])]), Err(ShapeError::Rank { arg: 0, got: 1, .. })));
    let r = RmsNormGeometry { channels: 4, eps: 1e-6, layout: Layout::FrameMajor };
    assert_eq!(r.name(), "rms_norm");
    assert_eq!(r.output_shape(&[s(&[9, 4])]), Ok(s(&[9, 4])));
    let gn = GroupNormGeometry { channels: 6, groups: 3, eps: EPS, bias: true };
    assert_eq!(gn.output_shape(&[s(&[6, 4, 5])]), Ok(s(&[6, 4, 5])));
    assert!(matches!(gn.output_shape(&[s(&[6])]), Err(ShapeError::Rank { .. })));
    assert!(matches!(gn.output_shape(&[s(&[5, 2])]), Err(ShapeError::Dim { .. })));
    let bad = GroupNormGeometry { groups: 4, ..gn };
    assert!(matches!(bad.output_shape(&[s(&[6, 2])]), Err(ShapeError::Geometry { .. })));
    let bad = GroupNormGeometry { groups: 0, ..gn };
    assert!(matches!(bad.output_shape(&[s(&[6, 2])]), Err(ShapeError::Geometry { .. })));
}

#[test]
fn rms_norm_op() {
    let mut r = rng(9);
    let (c, t) = (10, 21);
    let x = data(&mut r, c * t, 0.0);
    let gamma = uniform(&mut r, c, -2.0, 2.0);
    let mut want = vec![0.0; c * t];
    let mut got = vec![0.0; c * t];
    for layout in [Layout::FrameMajor, Layout::ChannelFirst] {
        let geom = RmsNormGeometry { channels: c, eps: EPS, layout };
        let op = RmsNorm::from_slice(geom, &gamma).unwrap();
        let dims = match layout {
            Layout::FrameMajor => {
                Portable::rms_norm_rows(t, c, &x, &gamma, EPS, &mut want);
                [t, c]
            }
            Layout::ChannelFirst => {
                Portable::rms_norm_channels(c, t, &x, &gamma, EPS, &mut want);
                [c, t]
            }
        };
        let input = TensorView::new(&x, &dims, layout).unwrap();
        let mut output = TensorViewMut::new(&mut got, &dims, layout).unwrap();
        op.run::<Portable>(&input, &mut output).unwrap();
        assert_eq!(got, want);
        // Errors: gamma length, wrong dims, wrong layout; then usable again.
        assert!(matches!(RmsNorm::new(geom, vec![1.0; c + 1]), Err(Error::Length { .. })));
        let wrong = TensorView::new(&x, &[dims[1], dims[0]], layout).unwrap();
        let mut output = TensorViewMut::new(&mut got, &dims, layout).unwrap();
        assert!(op.run::<Portable>(&wrong, &mut output).is_err());
        let other = match layout {
            Layout::FrameMajor => Layout::ChannelFirst,
            Layout::ChannelFirst => Layout::FrameMajor,
        };
        let wrong = TensorView::new(&x, &dims, other).unwrap();
        assert!(matches!(op.run::<Portable>(&wrong, &mut output), Err(Error::Layout { .. })));
        op.run::<Portable>(&input, &mut output).unwrap();
        assert_eq!(got, want);
    }
}

#[test]
fn group_norm_op() {
    let mut r = rng(10);
    let (c, h, w, groups) = (6, 3, 5, 2);
    let x = data(&mut r, c * h * w, 1000.0);
    let gamma = uniform(&mut r, c, -2.0, 2.0);
    let beta = uniform(&mut r, c, -1.0, 1.0);
    let geom = GroupNormGeometry { channels: c, groups, eps: EPS, bias: true };
    let op = GroupNorm::new(geom, gamma.clone(), Some(beta.clone())).unwrap();
    let mut want = vec![0.0; x.len()];
    Portable::group_norm(c, h * w, groups, &x, params(&gamma, Some(&beta)), &mut want);
    let mut got = vec![0.0; x.len()];
    // Rank 3 [c, h, w] equals the flattened [c, h*w].
    for dims in [&[c, h, w][..], &[c, h * w][..]] {
        let input = TensorView::new(&x, dims, Layout::ChannelFirst).unwrap();
        let mut output = TensorViewMut::new(&mut got, dims, Layout::ChannelFirst).unwrap();
        op.run::<Portable>(&input, &mut output).unwrap();
        assert_eq!(got, want);
    }
    // Errors.
    let bad = GroupNormGeometry { groups: 4, ..geom };
    assert!(matches!(
        GroupNorm::new(bad, gamma.clone(), Some(beta.clone())),
        Err(Error::Shape(ShapeError::Geometry { op: "group_norm", .. }))
    ));
    assert!(matches!(GroupNorm::from_packed(geom, &gamma[..], None), Err(Error::Length { .. })));
    assert!(matches!(
        GroupNorm::from_slice(geom, &gamma, Some(&beta[1..])),
        Err(Error::Length { what: "beta", .. })
    ));
    let input = TensorView::new(&x, &[c, h * w], Layout::FrameMajor).unwrap();
    let mut output = TensorViewMut::new(&mut got, &[c, h * w], Layout::ChannelFirst).unwrap();
    assert!(matches!(op.run::<Portable>(&input, &mut output), Err(Error::Layout { .. })));
    let input = TensorView::new(&x, &[h * w, c], Layout::ChannelFirst).unwrap();
    let mut output = TensorViewMut::new(&mut got, &[h * w, c], Layout::ChannelFirst).unwrap();
    assert!(matches!(op.run::<Portable>(&input, &mut output), Err(Error::Shape(_))));
    let input = TensorView::new(&x, &[c, h * w], Layout::ChannelFirst).unwrap();
    let mut output = TensorViewMut::new(&mut got, &[c, h, w], Layout::ChannelFirst).unwrap();
    assert!(matches!(op.run::<Portable>(&input, &mut output), Err(Error::Shape(_))));
    let mut output = TensorViewMut::new(&mut got, &[c, h * w], Layout::ChannelFirst).unwrap();
    op.run::<Portable>(&input, &mut output).unwrap();
    assert_eq!(got, want);
}
