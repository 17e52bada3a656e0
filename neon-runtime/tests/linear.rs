//! The `Linear` operator: results against an f64 reference (rank 1 and 2, bias or not,
//! every constructor), the shape rule, and every error returned without panicking, the
//! operator staying usable afterwards.
#![cfg(feature = "alloc")]

mod common;

use common::{assert_close, rng, uniform, LINEAR_SHAPES};
use neon_runtime::kernels::gemm::{pack_b, packed_b_len};
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};

/// `y = x · W^T + b` in f64 and the tolerance `(k + 2) * eps * max sum|x w|` (f32
/// accumulation error bound, see tests/gemm.rs).
fn reference(x: &[f32], w: &[f32], b: Option<&[f32]>, k: usize, n: usize) -> (Vec<f64>, f64) {
    let rows = x.len() / k;
    let mut out = vec![0.0; rows * n];
    let mut tol: f64 = 0.0;
    for r in 0..rows {
        for j in 0..n {
            let bias = b.map_or(0.0, |b| b[j] as f64);
            let (mut s, mut abs) = (bias, bias.abs());
            for kk in 0..k {
                let p = x[r * k + kk] as f64 * w[j * k + kk] as f64;
                s += p;
                abs += p.abs();
            }
            out[r * n + j] = s;
            tol = tol.max((k as f64 + 2.0) * f32::EPSILON as f64 * abs);
        }
    }
    (out, tol)
}

fn check<B: Backend>() {
    let mut r = rng(11);
    for &(rows, k, n, bias) in &LINEAR_SHAPES {
        let x = uniform(&mut r, rows * k, -1.0, 1.0);
        let w = uniform(&mut r, n * k, -1.0, 1.0);
        let b = bias.then(|| uniform(&mut r, n, -1.0, 1.0));
        let (want, tol) = reference(&x, &w, b.as_deref(), k, n);

        // The three constructors give the same operator.
        let by_value = Linear::new(
            LinearGeometry { in_features: k, out_features: n, bias: b.clone().is_some() },
            w.clone(),
            b.clone(),
        )
        .unwrap();
        let by_slice = Linear::from_slice(
            LinearGeometry { in_features: k, out_features: n, bias: b.as_deref().is_some() },
            &w,
            b.as_deref(),
        )
        .unwrap();
        let mut packed = vec![0.0; packed_b_len(n, k)];
        pack_b(&w, n, k, &mut packed);
        let by_packed = Linear::from_packed(
            LinearGeometry { in_features: k, out_features: n, bias: b.as_deref().is_some() },
            &packed[..],
            b.as_deref(),
        )
        .unwrap();
        assert_eq!(by_value.packed_weight(), by_slice.packed_weight());
        assert_eq!(by_value.packed_weight(), by_packed.packed_weight());
        assert_eq!(by_value.geometry(), LinearGeometry { in_features: k, out_features: n, bias });

        let mut y = vec![f32::NAN; rows * n];
        let what = format!("{} linear rows={rows} k={k} n={n}", B::NAME);
        let input = TensorView::new(&x, &[rows, k], Layout::FrameMajor).unwrap();
        let mut out = TensorViewMut::new(&mut y, &[rows, n], Layout::FrameMajor).unwrap();
        by_value.run::<B>(&input, &mut out).unwrap();
        assert_close(&what, &y, &want, tol, 0.0);
        y.fill(f32::NAN);
        let mut out = TensorViewMut::new(&mut y, &[rows, n], Layout::FrameMajor).unwrap();
        by_packed.run::<B>(&input, &mut out).unwrap();
        assert_close(&what, &y, &want, tol, 0.0);

        if rows == 1 {
            // Rank 1: `[in_features] -> [out_features]`, any layout tag.
            y.fill(f32::NAN);
            let input = TensorView::new(&x, &[k], Layout::ChannelFirst).unwrap();
            let mut out = TensorViewMut::new(&mut y, &[n], Layout::ChannelFirst).unwrap();
            by_slice.run::<B>(&input, &mut out).unwrap();
            assert_close(&what, &y, &want, tol, 0.0);
        }
    }
}

#[test]
fn portable_linear() {
    check::<Portable>();
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
fn neon_linear() {
    check::<neon_runtime::Neon>();
}

#[test]
fn shape_rule() {
    let g = LinearGeometry { in_features: 8, out_features: 3, bias: true };
    assert_eq!(g.name(), "linear");
    let s = |d: &[usize]| Shape::new(d).unwrap();
    assert_eq!(g.output_shape(&[s(&[5, 8])]), Ok(s(&[5, 3])));
    assert_eq!(g.output_shape(&[s(&[8])]), Ok(s(&[3])));
    assert!(matches!(g.output_shape(&[s(&[2, 5, 8])]), Err(ShapeError::Rank { got: 3, .. })));
    assert!(matches!(
        g.output_shape(&[s(&[5, 7])]),
        Err(ShapeError::Dim { arg: 0, axis: 1, expected: 8, got: 7, .. })
    ));
    assert!(matches!(g.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
    let zero = LinearGeometry { in_features: 0, out_features: 3, bias: false };
    assert!(matches!(zero.output_shape(&[s(&[5, 8])]), Err(ShapeError::Geometry { .. })));
    assert_eq!(g.packed_weight_len(), packed_b_len(3, 8));
}

#[test]
fn constructor_errors() {
    let w = vec![0.5; 12];
    assert_eq!(
        Linear::new(
            LinearGeometry { in_features: 4, out_features: 4, bias: false },
            w.clone(),
            None
        )
        .unwrap_err(),
        Error::Length { what: "weight", expected: 16, got: 12 }
    );
    assert_eq!(
        Linear::from_slice(
            LinearGeometry { in_features: 4, out_features: 3, bias: true },
            &w,
            Some(&[1.0; 2])
        )
        .unwrap_err(),
        Error::Length { what: "bias", expected: 3, got: 2 }
    );
    assert!(matches!(
        Linear::new(
            LinearGeometry { in_features: 0, out_features: 3, bias: false },
            Vec::new(),
            None
        ),
        Err(Error::Shape(ShapeError::Geometry { .. }))
    ));
    assert!(matches!(
        Linear::from_slice(
            LinearGeometry { in_features: 3, out_features: 0, bias: false },
            &[],
            None
        ),
        Err(Error::Shape(ShapeError::Geometry { .. }))
    ));
    assert_eq!(
        Linear::from_packed(
            LinearGeometry { in_features: 4, out_features: 3, bias: false },
            &w[..],
            None
        )
        .unwrap_err(),
        Error::Length { what: "packed weight", expected: packed_b_len(3, 4), got: 12 }
    );
    let packed = vec![0.0; packed_b_len(3, 4)];
    assert!(matches!(
        Linear::from_packed(
            LinearGeometry { in_features: 4, out_features: 3, bias: true },
            &packed[..],
            Some(&w[..4])
        ),
        Err(Error::Length { what: "bias", .. })
    ));
    assert!(matches!(
        Linear::from_packed(
            LinearGeometry { in_features: usize::MAX, out_features: 3, bias: false },
            &packed[..],
            None
        ),
        Err(Error::BadShape { .. } | Error::Length { .. })
    ));
}

#[test]
fn run_errors_leave_output_and_operator_intact() {
    let (k, n) = (4, 3);
    let w: Vec<f32> = (0..n * k).map(|v| v as f32 * 0.25).collect();
    let op = Linear::new(
        LinearGeometry { in_features: k, out_features: n, bias: true },
        w.clone(),
        Some(vec![1.0, 2.0, 3.0]),
    )
    .unwrap();
    let x = [1.0f32; 8];
    let mut y = [7.0f32; 9];

    let run = |op: &Linear<Vec<f32>>, xd: &[usize], xl, yd: &[usize], yl, y: &mut [f32]| {
        let len = yd.iter().product();
        let input = TensorView::new(&x[..xd.iter().product()], xd, xl).unwrap();
        let mut out = TensorViewMut::new(&mut y[..len], yd, yl).unwrap();
        op.run::<Portable>(&input, &mut out)
    };
    let fm = Layout::FrameMajor;
    let cf = Layout::ChannelFirst;
    // Wrong in_features.
    assert!(matches!(
        run(&op, &[2, 3], fm, &[2, 3], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 0, axis: 1, expected: 4, got: 3, .. }))
    ));
    // Wrong input rank.
    assert!(matches!(
        run(&op, &[1, 2, 4], fm, &[2, 3], fm, &mut y),
        Err(Error::Shape(ShapeError::Rank { arg: 0, got: 3, .. }))
    ));
    // Channel-first input or output.
    assert!(matches!(run(&op, &[2, 4], cf, &[2, 3], fm, &mut y), Err(Error::Layout { .. })));
    assert!(matches!(run(&op, &[2, 4], fm, &[2, 3], cf, &mut y), Err(Error::Layout { .. })));
    // Output rows, features, rank.
    assert!(matches!(
        run(&op, &[2, 4], fm, &[3, 3], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 2, got: 3, .. }))
    ));
    assert!(matches!(
        run(&op, &[2, 4], fm, &[2, 4], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 1, expected: 3, got: 4, .. }))
    ));
    assert!(matches!(
        run(&op, &[2, 4], fm, &[6], fm, &mut y),
        Err(Error::Shape(ShapeError::Rank { arg: 1, got: 1, .. }))
    ));
    assert!(matches!(
        run(&op, &[4], fm, &[1, 3], fm, &mut y),
        Err(Error::Shape(ShapeError::Rank { arg: 1, got: 2, .. }))
    ));
    assert!(matches!(
        run(&op, &[4], fm, &[4], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 3, got: 4, .. }))
    ));
    assert_eq!(y, [7.0; 9], "output written on error");

    // Still usable: x = ones, so y[j] = sum_k W[j, k] + b[j].
    run(&op, &[2, 4], fm, &[2, 3], fm, &mut y).unwrap();
    let want: Vec<f32> =
        (0..n).map(|j| w[j * k..j * k + k].iter().sum::<f32>() + (j + 1) as f32).collect();
    assert_eq!(&y[..3], &want[..]);
    assert_eq!(&y[3..6], &want[..]);
}

#[test]
fn send_sync() {
    common::assert_ops_send_sync!(Linear);
}
