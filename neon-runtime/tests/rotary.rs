//! Rotary embedding: the frequency table and the f32-angle sine / cosine against f64, the
//! kernels against an f64 reference on many geometries (odd head dims, pair tails, partial
//! rotation, both pair conventions, positions up to 2^24), every backend against the
//! portable one; the operator's validation. One generic body per case, run for every
//! backend (`backend_tests!`).

mod common;

use common::{rng, uniform};
use neon_runtime::kernels::rotary::{inv_freq, sin_cos, RotaryFrames, RotaryPairs, MAX_POSITION};
use neon_runtime::kernels::RotaryKernels;
use neon_runtime::ops::rotary::{Rotary, RotaryGeometry};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};
use rand::Rng;

neon_runtime::backend_tests!(kernel, matches_portable, operator_in_place_matches_portable);

/// `B::rotary` of `frames x heads x head_dim` values at positions `at..`.
fn rotate<B: RotaryKernels>(
    x: &mut [f32],
    (frames, heads, head_dim): (usize, usize, usize),
    inv_freq: &[f32],
    pairs: RotaryPairs,
    at: usize,
) {
    B::rotary(x, RotaryFrames { frames, heads, head_dim, at }, inv_freq, pairs);
}

/// Unit roundoff of f32.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// The reference table: `theta^(-2i/d)` with `std`'s f64 `powf`, rounded to f32.
fn ref_inv_freq(theta: f32, d: usize) -> Vec<f32> {
    (0..d / 2).map(|i| (theta as f64).powf(-((2 * i) as f64) / d as f64) as f32).collect()
}

/// The f32 angle of pair `i` at position `pos`, as the reference graphs compute it.
fn angle(pos: usize, w: f32) -> f32 {
    pos as f32 * w
}

/// f64 reference of the kernel, with the f32 angle (`exact_angle`: the f64 angle
/// `pos * theta^(-2i/d)` instead, to show that the test tells the two apart).
fn reference(
    x: &[f32],
    f: RotaryFrames,
    (theta, d): (f32, usize),
    pairs: RotaryPairs,
    exact_angle: bool,
) -> Vec<f64> {
    let RotaryFrames { frames, heads, head_dim: hd, at } = f;
    let w = ref_inv_freq(theta, d);
    let mut y: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for f in 0..frames {
        for h in 0..heads {
            let base = (f * heads + h) * hd;
            for (i, &wi) in w.iter().enumerate() {
                let t = if exact_angle {
                    (at + f) as f64 * (theta as f64).powf(-((2 * i) as f64) / d as f64)
                } else {
                    angle(at + f, wi) as f64
                };
                let (s, c) = t.sin_cos();
                let (ia, ib) = match pairs {
                    RotaryPairs::Interleaved => (2 * i, 2 * i + 1),
                    RotaryPairs::HalfSplit => (i, i + d / 2),
                };
                let (a, b) = (x[base + ia] as f64, x[base + ib] as f64);
                y[base + ia] = a * c - b * s;
                y[base + ib] = b * c + a * s;
            }
        }
    }
    y
}

/// Bound per value: `cos` and `sin` rounded to f32 (`u` relative each, plus the 3e-16 of
/// their f64 evaluation), two products and one sum in f32 (`u` each): at most
/// `(3u + 1e-15) (|a| + |b|)` for both values of a pair; values outside the rotated dims
/// must be bitwise unchanged (bound 0).
fn bounds(x: &[f32], heads: usize, hd: usize, d: usize, pairs: RotaryPairs) -> Vec<f64> {
    let mut b = vec![0.0; x.len()];
    for (row, brow) in x.chunks_exact(hd).zip(b.chunks_exact_mut(hd)) {
        for i in 0..d / 2 {
            let (ia, ib) = match pairs {
                RotaryPairs::Interleaved => (2 * i, 2 * i + 1),
                RotaryPairs::HalfSplit => (i, i + d / 2),
            };
            let m = (3.0 * U + 1e-15) * (row[ia].abs() as f64 + row[ib].abs() as f64);
            brow[ia] = m;
            brow[ib] = m;
        }
    }
    let _ = heads;
    b
}

fn max_violation(got: &[f32], want: &[f64], bound: &[f64]) -> Option<(usize, f64, f64)> {
    got.iter()
        .zip(want)
        .zip(bound)
        .enumerate()
        .map(|(i, ((&g, &w), &b))| (i, (g as f64 - w).abs(), b))
        .find(|&(_, e, b)| e > b)
}

#[test]
fn inv_freq_is_correctly_rounded() {
    for theta in [10000.0f32, 500_000.0, 1.0, 2.5, 1e6, 123_456.79] {
        for d in [2, 4, 6, 10, 32, 34, 64, 100, 128, 254, 256] {
            let t = inv_freq(theta, d);
            assert_eq!(&t[..d / 2], &ref_inv_freq(theta, d)[..], "theta {theta}, d {d}");
            assert!(t[d / 2..].iter().all(|&v| v == 0.0));
        }
    }
    // Invalid inputs give an empty (zero) table, never a panic.
    for (theta, d) in [(0.0f32, 32), (-1.0, 32), (f32::NAN, 32), (f32::INFINITY, 32), (1e4, 0)] {
        assert!(inv_freq(theta, d).iter().all(|&v| v == 0.0));
    }
    const T: [f32; 128] = inv_freq(10000.0, 32);
    assert_eq!(T[1], 10000f32.powf(-1.0 / 16.0));
}

/// `sin_cos` is the f32 rounding of the exact sine / cosine of the f32 angle, up to 3e-16
/// (documented bound) before the rounding: `|got - exact| <= ulp/2 + 3e-16`.
#[test]
fn sin_cos_of_f32_angles() {
    let mut r = rng(7);
    let half_ulp = |v: f64| {
        let v = (v.abs() as f32).max(f32::MIN_POSITIVE);
        (f32::from_bits(v.to_bits() + 1) - v) as f64 / 2.0
    };
    let mut angles: Vec<f32> = (0..20_000).map(|_| r.gen_range(-10.0f32..10.0)).collect();
    angles.extend((0..20_000).map(|_| r.gen_range(0.0f32..2e4)));
    angles.extend((0..20_000).map(|_| r.gen_range(0.0f32..1.7e7)));
    // Positions times every Moonshine frequency, including the largest positions.
    let w = inv_freq(10000.0, 32);
    for pos in (0..3000).chain(MAX_POSITION - 50..=MAX_POSITION) {
        angles.extend(w[..16].iter().map(|&w| angle(pos, w)));
    }
    // Near multiples of pi/2 (results near 0), and exact zeros.
    for k in 1..2000 {
        let t = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        angles.extend([t, f32::from_bits(t.to_bits() + 1), f32::from_bits(t.to_bits() - 1)]);
    }
    angles.extend([0.0, -0.0, 1e-30, -1e-30]);
    for &t in &angles {
        let (s, c) = sin_cos(t);
        let (es, ec) = (t as f64).sin_cos();
        for (got, want, what) in [(s, es, "sin"), (c, ec, "cos")] {
            let err = (got as f64 - want).abs();
            assert!(err <= half_ulp(want) + 3e-16, "{what}({t:e}) = {got:e}, want {want:e}");
        }
    }
}

fn geometries(seed: u64) -> Vec<(usize, usize, usize, usize)> {
    // (frames, heads, head_dim, rotary_dims)
    let mut g = vec![
        (1, 1, 2, 2),
        (3, 8, 52, 32),
        (2, 8, 52, 52),
        (2, 2, 64, 64),
        (2, 3, 64, 32),
        (1, 1, 3, 2),
        (4, 2, 17, 16),
        (3, 5, 17, 10),
        (1, 4, 256, 256),
        (2, 1, 300, 254),
    ];
    let mut r = rng(seed);
    for _ in 0..60 {
        let hd = r.gen_range(2..=70);
        let d = 2 * r.gen_range(1..=hd / 2);
        g.push((r.gen_range(1..=6), r.gen_range(1..=5), hd, d));
    }
    g
}

fn kernel<B: RotaryKernels>() {
    let mut r = rng(11);
    for (n, (frames, heads, hd, d)) in geometries(12).into_iter().enumerate() {
        let pairs = if n % 2 == 0 { RotaryPairs::Interleaved } else { RotaryPairs::HalfSplit };
        let theta = if n % 3 == 0 { 500_000.0 } else { 10000.0 };
        for at in [0, 1, 7, 1500, 4095, MAX_POSITION + 1 - frames] {
            let x = uniform(&mut r, frames * heads * hd, -2.0, 2.0);
            let f = RotaryFrames { frames, heads, head_dim: hd, at };
            let want = reference(&x, f, (theta, d), pairs, false);
            let bound = bounds(&x, heads, hd, d, pairs);
            let mut y = x.clone();
            B::rotary(&mut y, f, &inv_freq(theta, d)[..d / 2], pairs);
            if let Some((i, e, b)) = max_violation(&y, &want, &bound) {
                panic!(
                    "{} rotary {frames}x{heads}x{hd} d {d} {pairs:?} at {at}: index {i}, \
                     err {e:e} > {b:e}",
                    B::NAME
                );
            }
        }
    }
}

/// The f32 angle matters: at position 1500 and beyond, rotating by the exact f64 angle
/// differs from the reference graphs' f32 angle by far more than the bound.
#[test]
fn f32_angle_is_not_the_f64_angle() {
    let (frames, heads, hd, d) = (4, 2, 52, 32);
    let mut r = rng(5);
    let x = uniform(&mut r, frames * heads * hd, -1.0, 1.0);
    let mut y = x.clone();
    let w = inv_freq(10000.0, d);
    let f = RotaryFrames { frames, heads, head_dim: hd, at: 1500 };
    Portable::rotary(&mut y, f, &w[..d / 2], RotaryPairs::Interleaved);
    let exact = reference(&x, f, (10000.0, d), RotaryPairs::Interleaved, true);
    let bound = bounds(&x, heads, hd, d, RotaryPairs::Interleaved);
    assert!(max_violation(&y, &exact, &bound).is_some());
}

#[test]
#[should_panic(expected = "rotary_dims exceeds head_dim")]
fn dims_beyond_head_panics() {
    rotate::<Portable>(&mut [0.0; 8], (2, 1, 4), &[1.0; 3], RotaryPairs::Interleaved, 0);
}

#[test]
#[should_panic(expected = "position exceeds MAX_POSITION")]
fn position_beyond_limit_panics() {
    let pairs = RotaryPairs::Interleaved;
    rotate::<Portable>(&mut [0.0; 8], (2, 1, 4), &[1.0; 2], pairs, MAX_POSITION);
}

/// Same inputs through `B` and the portable backend. The tables of `cos` and `sin` are the
/// same code, so the backends differ only in NEON fusing one product into the sum: per
/// value at most `u |a c|` or `u |b s|` plus the two final roundings, below
/// `3u (|a| + |b|)`; pass-through values are equal.
fn matches_portable<B: RotaryKernels>() {
    let mut r = rng(13);
    for (n, (frames, heads, hd, d)) in geometries(14).into_iter().enumerate() {
        let pairs = if n % 2 == 1 { RotaryPairs::Interleaved } else { RotaryPairs::HalfSplit };
        let x = uniform(&mut r, frames * heads * hd, -3.0, 3.0);
        let w = inv_freq(10000.0, d);
        let (mut p, mut q) = (x.clone(), x.clone());
        rotate::<Portable>(&mut p, (frames, heads, hd), &w[..d / 2], pairs, 321);
        rotate::<B>(&mut q, (frames, heads, hd), &w[..d / 2], pairs, 321);
        let bound = bounds(&x, heads, hd, d, pairs);
        for i in 0..x.len() {
            let e = (p[i] - q[i]).abs() as f64;
            let what = format!("{} {frames}x{heads}x{hd} d {d} {pairs:?} {i}", B::NAME);
            assert!(e <= bound[i], "{what}: {e:e}");
        }
    }
}

fn geom(heads: usize, rotary_dims: usize) -> RotaryGeometry {
    RotaryGeometry { heads, rotary_dims, theta: 10000.0, pairs: RotaryPairs::Interleaved }
}

fn s(d: &[usize]) -> Shape {
    Shape::new(d).unwrap()
}

#[test]
fn shape_rule_and_geometry_errors() {
    let g = geom(8, 32);
    assert_eq!(g.output_shape(&[s(&[5, 416])]), Ok(s(&[5, 416])));
    assert!(matches!(
        g.output_shape(&[s(&[5, 415])]),
        Err(ShapeError::Indivisible { op: "rotary", arg: 0, axis: 1, divisor: 8, got: 415, .. })
    ));
    assert!(matches!(
        g.output_shape(&[s(&[5, 8 * 30])]),
        Err(ShapeError::TooSmall { value: 30, min: 32, .. })
    ));
    assert!(matches!(g.output_shape(&[s(&[416])]), Err(ShapeError::Rank { .. })));
    assert!(matches!(g.output_shape(&[s(&[5, 416]); 2]), Err(ShapeError::Geometry { .. })));
    for bad in [
        geom(0, 32),
        geom(8, 31),
        geom(8, 0),
        geom(1, 258),
        RotaryGeometry { theta: 0.5, ..geom(8, 32) },
        RotaryGeometry { theta: f32::NAN, ..geom(8, 32) },
    ] {
        assert!(matches!(bad.output_shape(&[s(&[5, 416])]), Err(ShapeError::Geometry { .. })));
        assert_eq!(Rotary::new(bad).inv_freq(), &[] as &[f32]);
    }
    let e = ShapeError::Indivisible {
        op: "rotary",
        arg: 0,
        axis: 1,
        what: "channels",
        divisor: 8,
        divisor_what: "heads",
        got: 415usize,
    };
    assert_eq!(
        e.to_string(),
        "rotary expects channels divisible by 8 heads, argument 0 has 415 (axis 1)"
    );
}

#[test]
fn operator_matches_kernel_and_validates() {
    const ROPE: Rotary = Rotary::new(RotaryGeometry {
        heads: 8,
        rotary_dims: 32,
        theta: 10000.0,
        pairs: RotaryPairs::HalfSplit,
    });
    assert_eq!(ROPE.inv_freq(), &inv_freq(10000.0, 32)[..16]);
    let mut r = rng(21);
    let x = uniform(&mut r, 3 * 416, -1.0, 1.0);
    let mut want = x.clone();
    rotate::<Portable>(&mut want, (3, 8, 52), ROPE.inv_freq(), RotaryPairs::HalfSplit, 9);

    let vx = TensorView::new(&x, &[3, 416], Layout::FrameMajor).unwrap();
    let mut o = vec![0.0; 3 * 416];
    let mut vo = TensorViewMut::new(&mut o, &[3, 416], Layout::FrameMajor).unwrap();
    ROPE.run::<Portable>(&vx, &mut vo, 9).unwrap();
    assert_eq!(o, want);
    let mut y = x.clone();
    let mut vy = TensorViewMut::new(&mut y, &[3, 416], Layout::FrameMajor).unwrap();
    ROPE.run_in_place::<Portable>(&mut vy, 9).unwrap();
    assert_eq!(y, want);

    // Errors, nothing written: position range, layouts, output shape, geometry.
    let mut o = vec![-1.0; 3 * 416];
    let mut vo = TensorViewMut::new(&mut o, &[3, 416], Layout::FrameMajor).unwrap();
    assert_eq!(
        ROPE.run::<Portable>(&vx, &mut vo, MAX_POSITION - 1),
        Err(Error::OutOfRange {
            name: "at",
            value: MAX_POSITION - 1,
            min: 0,
            max: MAX_POSITION - 2
        })
    );
    ROPE.run::<Portable>(&vx, &mut vo, MAX_POSITION - 2).unwrap();
    let mut o = vec![-1.0; 3 * 416];
    let mut vo = TensorViewMut::new(&mut o, &[3, 416], Layout::ChannelFirst).unwrap();
    assert!(matches!(ROPE.run::<Portable>(&vx, &mut vo, 0), Err(Error::Layout { .. })));
    let vcf = TensorView::new(&x, &[3, 416], Layout::ChannelFirst).unwrap();
    let mut vo = TensorViewMut::new(&mut o, &[3, 416], Layout::FrameMajor).unwrap();
    assert!(matches!(ROPE.run::<Portable>(&vcf, &mut vo, 0), Err(Error::Layout { .. })));
    let mut vo = TensorViewMut::new(&mut o, &[416, 3], Layout::FrameMajor).unwrap();
    assert!(matches!(
        ROPE.run::<Portable>(&vx, &mut vo, 0),
        Err(Error::Shape(ShapeError::Dim { arg: 1, .. }))
    ));
    let bad = Rotary::new(geom(8, 33));
    let mut vo = TensorViewMut::new(&mut o, &[3, 416], Layout::FrameMajor).unwrap();
    assert!(matches!(bad.run::<Portable>(&vx, &mut vo, 0), Err(Error::Shape(_))));
    assert!(o.iter().all(|&v| v == -1.0));
}

/// The operator in place on `B` against the portable backend.
fn operator_in_place_matches_portable<B: Backend>() {
    let rope = Rotary::new(geom(2, 4));
    let x: Vec<f32> = (0..2 * 2 * 6).map(|i| i as f32 / 7.0 - 1.0).collect();
    let (mut a, mut b) = (x.clone(), x.clone());
    let mut va = TensorViewMut::new(&mut a, &[2, 12], Layout::FrameMajor).unwrap();
    rope.run_in_place::<B>(&mut va, 3).unwrap();
    let mut vb = TensorViewMut::new(&mut b, &[2, 12], Layout::FrameMajor).unwrap();
    rope.run_in_place::<Portable>(&mut vb, 3).unwrap();
    let bound = bounds(&x, 2, 6, 4, RotaryPairs::Interleaved);
    assert!(a.iter().zip(&b).zip(&bound).all(|((p, q), &m)| ((p - q).abs() as f64) <= m));
}
