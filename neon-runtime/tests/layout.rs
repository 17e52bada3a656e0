//! Transpose kernel and operator, and the Reshape operator. A transpose only moves values,
//! so every comparison is exact (bitwise), against a plain index-swapping reference.

mod common;

use common::{rng, transpose_ref, uniform};
use neon_runtime::kernels::LayoutKernels;
use neon_runtime::ops::layout::{Reshape, ReshapeTo, Transpose};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};

fn reference(rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    transpose_ref(x, rows, cols)
}

fn shapes() -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = (1..=33).flat_map(|r| (1..=33).map(move |c| (r, c))).collect();
    v.extend([(7, 13), (13, 7), (64, 64), (33, 1000), (1000, 33), (416, 1664), (1664, 416)]);
    v
}

fn transpose<B: Backend>() {
    let mut r = rng(11);
    for (rows, cols) in shapes() {
        let x = uniform(&mut r, rows * cols, -1.0, 1.0);
        let mut y = vec![f32::NAN; x.len()];
        B::transpose(rows, cols, &x, &mut y);
        assert!(y == reference(rows, cols, &x), "{} transpose {rows}x{cols}", B::NAME);
        // And back.
        let mut z = vec![f32::NAN; x.len()];
        B::transpose(cols, rows, &y, &mut z);
        assert!(z == x, "{} transpose back {cols}x{rows}", B::NAME);
    }
}

/// `B` and Portable agree bit for bit (both are exact).
fn matches_portable<B: Backend>() {
    let mut r = rng(12);
    for (rows, cols) in [(5, 9), (32, 32), (37, 70), (416, 1664)] {
        let x = uniform(&mut r, rows * cols, -1.0, 1.0);
        let (mut a, mut b) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        Portable::transpose(rows, cols, &x, &mut a);
        B::transpose(rows, cols, &x, &mut b);
        assert!(a == b, "{} {rows}x{cols}", B::NAME);
    }
}

/// Non-finite values and signed zeros are moved untouched.
fn transpose_moves_bits<B: Backend>() {
    let x = [f32::NAN, -0.0, f32::INFINITY, 1.0, f32::from_bits(1), -f32::MAX, 0.0, 2.5];
    let mut y = [0.0f32; 8];
    B::transpose(2, 4, &x, &mut y);
    let want: Vec<u32> = reference(2, 4, &x).iter().map(|v| v.to_bits()).collect();
    assert_eq!(y.map(f32::to_bits).to_vec(), want);
}

fn transpose_op<B: Backend>() {
    let mut r = rng(13);
    let (c, t) = (13, 37);
    let x = uniform(&mut r, c * t, -1.0, 1.0);
    let want = reference(c, t, &x);
    let mut y = vec![0.0; c * t];

    // Channel-first [c, t] -> frame-major [t, c], and back.
    let to_fm = Transpose::new(Layout::FrameMajor);
    assert_eq!(to_fm.from_layout(), Layout::ChannelFirst);
    let input = TensorView::new(&x, &[c, t], Layout::ChannelFirst).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[t, c], Layout::FrameMajor).unwrap();
    to_fm.run::<B>(&input, &mut output).unwrap();
    assert_eq!(output.channels(), Some(c));
    assert_eq!(output.frames(), Some(t));
    assert!(y == want);
    let to_cf = Transpose::new(Layout::ChannelFirst);
    let input = TensorView::new(&y, &[t, c], Layout::FrameMajor).unwrap();
    let mut z = vec![0.0; c * t];
    let mut output = TensorViewMut::new(&mut z, &[c, t], Layout::ChannelFirst).unwrap();
    to_cf.run::<B>(&input, &mut output).unwrap();
    assert!(z == x);

    // Errors: nothing written, op still usable.
    let mut y = vec![7.0f32; c * t];
    let (cf, fm) = (Layout::ChannelFirst, Layout::FrameMajor);
    let cases: [(&[usize], Layout, &[usize], Layout); 5] = [
        (&[13, 37], fm, &[37, 13], fm),    // input already frame-major
        (&[13, 37], cf, &[13, 37], fm),    // output not transposed
        (&[13, 37], cf, &[37, 13], cf),    // output layout
        (&[1, 13, 37], cf, &[37, 13], fm), // rank 3 input
        (&[13, 37], cf, &[1, 37, 13], fm), // output rank
    ];
    for (idims, il, odims, ol) in cases {
        let input = TensorView::new(&x, idims, il).unwrap();
        let mut output = TensorViewMut::new(&mut y, odims, ol).unwrap();
        assert!(to_fm.run::<B>(&input, &mut output).is_err(), "{idims:?} -> {odims:?}");
        assert!(y.iter().all(|&v| v == 7.0));
    }
    let input = TensorView::new(&x, &[c, t], fm).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[t, c], fm).unwrap();
    assert_eq!(
        to_fm.run::<B>(&input, &mut output),
        Err(Error::Layout { op: "transpose", expected: "channel-first" })
    );
    let input = TensorView::new(&x, &[c, t], cf).unwrap();
    let mut output = TensorViewMut::new(&mut y, &[c, t], fm).unwrap();
    assert!(matches!(
        to_fm.run::<B>(&input, &mut output),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 37, got: 13, .. }))
    ));
    let mut output = TensorViewMut::new(&mut y, &[t, c], fm).unwrap();
    to_fm.run::<B>(&input, &mut output).unwrap();
    assert!(y == want);
}

#[test]
fn transpose_shape_rule() {
    let op = Transpose::new(Layout::FrameMajor);
    let s = |d: &[usize]| Shape::new(d).unwrap();
    assert_eq!(op.name(), "transpose");
    assert_eq!(op.output_shape(&[s(&[3, 5])]), Ok(s(&[5, 3])));
    assert!(matches!(op.output_shape(&[s(&[3])]), Err(ShapeError::Rank { .. })));
    assert!(matches!(op.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
}

neon_runtime::backend_tests!(transpose, matches_portable, transpose_moves_bits, transpose_op);

#[test]
fn reshape_shape_rule_and_copy() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let fm = Layout::FrameMajor;
    let x = s(&[2, 3, 4]);
    for (axis, want) in [(0, [1, 24]), (1, [2, 12]), (2, [6, 4]), (3, [24, 1])] {
        let r = Reshape::flatten(axis, fm);
        assert_eq!(r.output_shape(&[x]).unwrap(), s(&want), "axis {axis}");
    }
    let bad_axis = Reshape::flatten(4, fm).output_shape(&[x]);
    assert!(matches!(bad_axis, Err(ShapeError::Geometry { op: "flatten", .. })));
    let to = Reshape::to_dims(&[4, 6], fm).unwrap();
    assert_eq!(to.to, ReshapeTo::Dims(s(&[4, 6])));
    assert_eq!(to.output_shape(&[x]).unwrap(), s(&[4, 6]));
    let wrong = Reshape::to_dims(&[5, 5], fm).unwrap().output_shape(&[x]);
    assert!(matches!(wrong, Err(ShapeError::Dim { op: "reshape", expected: 25, got: 24, .. })));
    assert!(Reshape::to_dims(&[0, 3], fm).is_err());
    assert!(to.output_shape(&[x, x]).is_err());
    assert!(to.in_place().possible());
    assert_eq!((to.reads_layout(0), to.writes_layout()), (None, Some(fm)));

    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let xv = TensorView::new(&data, &[2, 3, 4], Layout::ChannelFirst).unwrap();
    let mut y = vec![0.0; 24];
    to.run(&xv, &mut TensorViewMut::new(&mut y, &[4, 6], fm).unwrap()).unwrap();
    assert_eq!(y, data);
    // The output's shape and layout are checked; nothing is written on error.
    let mut z = vec![-1.0; 24];
    let err = to.run(&xv, &mut TensorViewMut::new(&mut z, &[6, 4], fm).unwrap()).unwrap_err();
    assert!(matches!(err, Error::Shape(_)), "{err}");
    let err = to.run(&xv, &mut TensorViewMut::new(&mut z, &[4, 6], Layout::ChannelFirst).unwrap());
    assert!(matches!(err, Err(Error::Layout { .. })));
    assert!(z.iter().all(|&v| v == -1.0));
}
