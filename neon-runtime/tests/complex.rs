//! Magnitudes of stacked real and imaginary channels: the kernel
//! (`FftKernels::magnitude_spectrum`) over every vector tail and special values, the
//! `ComplexMagnitude` operator on odd shapes, both bit for bit against the f32 evaluation
//! order they document and within their bound of the exact magnitude; the shape rule and
//! the errors. One generic body per case, run for every backend (`backend_tests!`).

mod common;

use common::{each_tail_spectrum, rng, uniform};
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::{InPlace, ShapeRule};
use neon_runtime::{Backend, Error, Layout, Shape, ShapeError, TensorView, TensorViewMut};

neon_runtime::backend_tests!(kernel_tails, special_values, operator_odd_shapes);

/// `sqrt(re * re + im * im)` with each operation rounded to f32, as the kernels document
/// (ONNX Runtime's `Pow`, `Pow`, `Add`, `Sqrt`): the f64 square root of an f32 rounds
/// correctly to f32 (f64 carries more than `2 * 24 + 2` bits, so the double rounding is
/// harmless), so this is the exact expected bit pattern.
fn f32_order(re: f32, im: f32) -> f32 {
    let s = re * re + im * im;
    (s as f64).sqrt() as f32
}

/// Checks `got` against the documented order bit for bit, and against the exact magnitude
/// of the inputs within its relative bound `2u = 2^-23` (plus the squares' underflow for
/// inputs below 1e-19, which these tests do not use).
fn check(what: &str, re: &[f32], im: &[f32], got: &[f32]) {
    for (k, ((&a, &b), &g)) in re.iter().zip(im).zip(got).enumerate() {
        let want = f32_order(a, b);
        assert_eq!(g.to_bits(), want.to_bits(), "{what}: [{k}] = {g}, want {want}");
        let exact = (a as f64).hypot(b as f64);
        let rel = (g as f64 - exact).abs() / exact.max(f64::MIN_POSITIVE);
        assert!(rel <= f32::EPSILON as f64, "{what}: [{k}]: relative error {rel:e}");
    }
}

fn kernel_tails<B: Backend>() {
    each_tail_spectrum(&mut rng(1), B::magnitude_spectrum, |k, spectrum, mag| {
        let (re, im) = spectrum.split_at(k);
        check(&format!("{} magnitude k={k}", B::NAME), re, im, mag);
    });
}

fn special_values<B: Backend>() {
    let re = [0.0, -0.0, 3.0, -3.0, 1e-10, 2e19, f32::INFINITY, 0.0, f32::NAN, 2.0];
    let im = [0.0, 0.0, -4.0, 4.0, 0.0, 0.0, 1.0, f32::NEG_INFINITY, 1.0, 0.0];
    let mut spectrum = re.to_vec();
    spectrum.extend(im);
    let mut mag = [f32::NAN; 10];
    B::magnitude_spectrum(&spectrum, &mut mag);
    // (2e19)^2 overflows to inf, as ONNX Runtime's `Pow` does.
    let want = [0.0, 0.0, 5.0, 5.0, 1e-10, f32::INFINITY, f32::INFINITY, f32::INFINITY];
    for (k, (&g, &w)) in mag.iter().zip(&want).enumerate() {
        if k == 4 {
            // 1e-20 is a normal f32: the square root of its rounding.
            assert_eq!(g, f32_order(1e-10, 0.0), "{}", B::NAME);
        } else {
            assert_eq!(g, w, "{}: [{k}]", B::NAME);
        }
    }
    assert!(mag[8].is_nan(), "{}: NaN in, NaN out", B::NAME);
    assert_eq!(mag[9], 2.0, "{}", B::NAME);
    assert_eq!(mag[0].to_bits(), 0, "{}: +0 for a zero value", B::NAME);
}

fn operator_odd_shapes<B: Backend>() {
    let mut r = rng(2);
    for (c, t) in [(1, 1), (3, 5), (129, 4), (7, 33), (2, 17)] {
        let x = uniform(&mut r, 2 * c * t, -2.0, 2.0);
        let xv = TensorView::new(&x, &[2 * c, t], Layout::ChannelFirst).unwrap();
        let mut y = vec![f32::NAN; c * t];
        let mut yv = TensorViewMut::new(&mut y, &[c, t], Layout::ChannelFirst).unwrap();
        ComplexMagnitude.run::<B>(&xv, &mut yv).unwrap();
        // out[ch, f] from x[ch, f] and x[C + ch, f].
        let (mut re, mut im) = (Vec::new(), Vec::new());
        for ch in 0..c {
            for f in 0..t {
                re.push(x[ch * t + f]);
                im.push(x[(c + ch) * t + f]);
            }
        }
        check(&format!("{} complex_magnitude [{}, {t}]", B::NAME, 2 * c), &re, &im, &y);
    }
}

#[test]
fn shape_rule_and_errors() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let op = ComplexMagnitude;
    assert_eq!(op.name(), "complex_magnitude");
    assert_eq!(op.output_shape(&[s(&[258, 4])]), Ok(s(&[129, 4])));
    assert!(matches!(
        op.output_shape(&[s(&[257, 4])]),
        Err(ShapeError::Indivisible { arg: 0, axis: 0, divisor: 2, got: 257, .. })
    ));
    assert!(matches!(op.output_shape(&[s(&[1, 4])]), Err(ShapeError::Indivisible { .. })));
    assert!(matches!(op.output_shape(&[s(&[4, 4, 4])]), Err(ShapeError::Rank { got: 3, .. })));
    assert!(matches!(op.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
    assert_eq!(op.in_place(), InPlace::Never);
    assert_eq!(
        (op.reads_layout(0), op.writes_layout()),
        (Some(Layout::ChannelFirst), Some(Layout::ChannelFirst))
    );

    let x = [1.0f32; 12];
    let mut y = [7.0f32; 6];
    let fm = TensorView::new(&x, &[6, 2], Layout::FrameMajor).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &[3, 2], Layout::ChannelFirst).unwrap();
    let r = op.run::<neon_runtime::Portable>(&fm, &mut yv);
    assert!(matches!(r, Err(Error::Layout { op: "complex_magnitude", .. })), "{r:?}");
    let xv = TensorView::new(&x, &[6, 2], Layout::ChannelFirst).unwrap();
    let mut short = [7.0f32; 4];
    let mut sv = TensorViewMut::new(&mut short, &[2, 2], Layout::ChannelFirst).unwrap();
    let r = op.run::<neon_runtime::Portable>(&xv, &mut sv);
    assert!(matches!(r, Err(Error::Shape(ShapeError::Dim { arg: 1, expected: 3, got: 2, .. }))));
    assert_eq!(short, [7.0; 4], "nothing written on error");
}
