//! The operators `QuantLinear` and `BlockQ8Linear`: the four constructors, results against
//! the f64 reference on every backend, shape rules, errors.

use crate::common::{assert_close, rng, LINEAR_SHAPES};
use crate::problem::*;
use neon_runtime::kernels::quant::{packed_block_scales_len, packed_i8_len, BLOCK_K};
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::quant::{
    BlockQ8Linear, BlockQ8LinearGeometry, QuantLinear, QuantLinearGeometry,
};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Backend, Portable};
use neon_runtime::{Error, Layout, Shape, ShapeError, TensorView, TensorViewMut};

/// `[n, k]` -> `[k, n]`.
fn transpose<T: Copy>(v: &[T], n: usize, k: usize) -> Vec<T> {
    (0..k * n).map(|i| v[(i % n) * k + i / n]).collect()
}

/// Runs `run` (backend `B`) on `p.a` as `[rows, k]` (and, for one row, as rank 1) and
/// checks the result against the f64 reference.
fn check_run(
    p: &Problem,
    what: &str,
    run: &dyn Fn(&TensorView, &mut TensorViewMut) -> Result<(), Error>,
) {
    let (want, tol) = p.reference();
    let (rows, k, n) = (p.m, p.k, p.n);
    let mut y = vec![f32::NAN; rows * n];
    let input = TensorView::new(&p.a, &[rows, k], Layout::FrameMajor).unwrap();
    let mut out = TensorViewMut::new(&mut y, &[rows, n], Layout::FrameMajor).unwrap();
    run(&input, &mut out).unwrap();
    assert_close(&p.label(what), &y, &want, tol, 0.0);
    if rows == 1 {
        // Rank 1: `[in_features] -> [out_features]`, any layout tag.
        y.fill(f32::NAN);
        let input = TensorView::new(&p.a, &[k], Layout::ChannelFirst).unwrap();
        let mut out = TensorViewMut::new(&mut y, &[n], Layout::ChannelFirst).unwrap();
        run(&input, &mut out).unwrap();
        assert_close(&p.label(what), &y, &want, tol, 0.0);
    }
}

/// The f32 linear layer's shapes, and a 1664 -> 416 projection of 3 rows with a bias.
fn shapes() -> impl Iterator<Item = (usize, usize, usize, bool)> {
    LINEAR_SHAPES.into_iter().chain([(3, 1664, 416, true)])
}

fn quant_linear<B: Backend>() {
    let mut r = rng(20);
    for (rows, k, n, bias) in shapes() {
        let p = Problem::new(&mut r, dims(rows, n, k, k, n), bias, false);
        let Format::Tensor { scale, offset } = p.format else { unreachable!() };
        let b = p.bias.clone();
        let geometry = qg(k, n, b.is_some());
        let by_value = QuantLinear::new(geometry, p.q.clone(), scale, offset, b.clone()).unwrap();
        let by_slice =
            QuantLinear::from_slice(geometry, &p.q, scale, offset, b.as_deref()).unwrap();
        let qt = transpose(&p.q, n, k);
        let by_in_out =
            QuantLinear::from_in_out(geometry, &qt, scale, offset, b.as_deref()).unwrap();
        let (packed, _) = p.packed();
        let by_packed =
            QuantLinear::from_packed(geometry, &packed[..], scale, offset, b.as_deref()).unwrap();
        // The four constructors give the same operator.
        for op in [&by_slice, &by_in_out] {
            assert_eq!(op.packed_weight(), by_value.packed_weight());
            assert_eq!(op.bias(), by_value.bias());
        }
        assert_eq!(by_packed.packed_weight(), by_value.packed_weight());
        let g = QuantLinearGeometry { in_features: k, out_features: n, bias };
        assert_eq!(by_value.geometry(), g);
        assert_eq!((by_value.scale(), by_value.offset()), (scale, offset));
        assert_eq!(g.packed_weight_len(), packed.len());

        let what = format!("{} quant_linear", B::NAME);
        check_run(&p, &what, &|i, o| by_value.run::<B>(i, o));
        check_run(&p, &what, &|i, o| by_in_out.run::<B>(i, o));
        check_run(&p, &what, &|i, o| by_packed.run::<B>(i, o));
    }
}

fn block_q8_linear<B: Backend>() {
    let mut r = rng(21);
    for (rows, k, n, bias) in shapes() {
        let k = k.div_ceil(BLOCK_K) * BLOCK_K;
        let p = Problem::new(&mut r, dims(rows, n, k, k, n), bias, true);
        let Format::Block(s) = &p.format else { unreachable!() };
        let b = p.bias.clone();
        let geometry = bg(k, n, b.is_some());
        let by_value = BlockQ8Linear::new(geometry, p.q.clone(), s.clone(), b.clone()).unwrap();
        let by_slice = BlockQ8Linear::from_slice(geometry, &p.q, s, b.as_deref()).unwrap();
        let (qt, st) = (transpose(&p.q, n, k), transpose(s, n, k / BLOCK_K));
        let by_in_out = BlockQ8Linear::from_in_out(geometry, &qt, &st, b.as_deref()).unwrap();
        let (packed, packed_scales) = p.packed();
        let by_packed =
            BlockQ8Linear::from_packed(geometry, &packed[..], &packed_scales[..], b.as_deref())
                .unwrap();
        for op in [&by_slice, &by_in_out] {
            assert_eq!(op.packed_weight(), by_value.packed_weight());
            assert_eq!(op.packed_scales(), by_value.packed_scales());
            assert_eq!(op.bias(), by_value.bias());
        }
        assert_eq!(by_packed.packed_scales(), by_value.packed_scales());
        let g = BlockQ8LinearGeometry { in_features: k, out_features: n, bias };
        assert_eq!(by_value.geometry(), g);
        assert_eq!(g.packed_scales_len(), packed_scales.len());

        let what = format!("{} block_q8_linear", B::NAME);
        check_run(&p, &what, &|i, o| by_value.run::<B>(i, o));
        check_run(&p, &what, &|i, o| by_in_out.run::<B>(i, o));
        check_run(&p, &what, &|i, o| by_packed.run::<B>(i, o));
    }
}

neon_runtime::backend_tests!(quant_linear, block_q8_linear);

#[test]
fn shape_rules() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let g = QuantLinearGeometry { in_features: 8, out_features: 3, bias: true };
    assert_eq!(g.name(), "quant_linear");
    assert_eq!(g.output_shape(&[s(&[5, 8])]), Ok(s(&[5, 3])));
    assert_eq!(g.output_shape(&[s(&[8])]), Ok(s(&[3])));
    // The same rule as Linear, under its own name.
    let lin = LinearGeometry { in_features: 8, out_features: 3, bias: true };
    assert_eq!(g.linear(), lin);
    for x in [s(&[2, 5, 8]), s(&[5, 7]), s(&[4])] {
        let (a, b) = (g.output_shape(&[x]), lin.output_shape(&[x]));
        match (a, b) {
            (Err(ShapeError::Rank { op, got, .. }), Err(ShapeError::Rank { got: g2, .. })) => {
                assert_eq!((op, got), ("quant_linear", g2))
            }
            (
                Err(ShapeError::Dim { op, expected, got, .. }),
                Err(ShapeError::Dim { expected: e2, got: g2, .. }),
            ) => assert_eq!((op, expected, got), ("quant_linear", e2, g2)),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(matches!(g.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
    let zero = QuantLinearGeometry { in_features: 0, out_features: 3, bias: false };
    assert!(matches!(
        zero.output_shape(&[s(&[5, 8])]),
        Err(ShapeError::Geometry { op: "quant_linear", .. })
    ));

    let b = BlockQ8LinearGeometry { in_features: 64, out_features: 5, bias: false };
    assert_eq!(b.name(), "block_q8_linear");
    assert_eq!(b.output_shape(&[s(&[7, 64])]), Ok(s(&[7, 5])));
    assert_eq!(b.output_shape(&[s(&[64])]), Ok(s(&[5])));
    assert!(matches!(
        b.output_shape(&[s(&[7, 32])]),
        Err(ShapeError::Dim { op: "block_q8_linear", axis: 1, expected: 64, got: 32, .. })
    ));
    let odd = BlockQ8LinearGeometry { in_features: 40, out_features: 5, bias: false };
    assert!(matches!(
        odd.output_shape(&[s(&[7, 40])]),
        Err(ShapeError::Geometry { op: "block_q8_linear", .. })
    ));
    assert_eq!(b.packed_weight_len(), packed_i8_len(5, 64));
    assert_eq!(b.packed_scales_len(), packed_block_scales_len(5, 64));
}

#[test]
fn constructor_errors() {
    let q = vec![1i8; 12];
    let geometry_err = |e: Error| matches!(e, Error::Shape(ShapeError::Geometry { .. }));
    assert_eq!(
        QuantLinear::new(qg(4, 4, false), q.clone(), 0.1, 0.0, None).unwrap_err(),
        Error::Length { what: "weight", expected: 16, got: 12 }
    );
    assert_eq!(
        QuantLinear::from_slice(qg(4, 3, true), &q, 0.1, 0.0, Some(&[1.0; 2])).unwrap_err(),
        Error::Length { what: "bias", expected: 3, got: 2 }
    );
    assert_eq!(
        QuantLinear::from_in_out(qg(3, 3, false), &q, 0.1, 0.0, None).unwrap_err(),
        Error::Length { what: "weight", expected: 9, got: 12 }
    );
    assert!(geometry_err(
        QuantLinear::new(qg(0, 3, false), Vec::new(), 0.1, 0.0, None).unwrap_err()
    ));
    assert!(geometry_err(
        QuantLinear::from_slice(qg(3, 0, false), &[], 0.1, 0.0, None).unwrap_err()
    ));
    for (scale, offset) in
        [(f32::NAN, 0.0), (f32::INFINITY, 0.0), (0.1, f32::NAN), (0.1, -f32::INFINITY)]
    {
        assert!(geometry_err(
            QuantLinear::new(qg(4, 3, false), q.clone(), scale, offset, None).unwrap_err()
        ));
        assert!(geometry_err(
            QuantLinear::from_in_out(qg(4, 3, false), &q, scale, offset, None).unwrap_err()
        ));
        let packed = vec![0i8; packed_i8_len(3, 4)];
        assert!(geometry_err(
            QuantLinear::<_, &[f32]>::from_packed(
                qg(4, 3, false),
                &packed[..],
                scale,
                offset,
                None
            )
            .unwrap_err()
        ));
    }
    assert_eq!(
        QuantLinear::<_, &[f32]>::from_packed(qg(4, 3, false), &q[..], 0.1, 0.0, None).unwrap_err(),
        Error::Length { what: "packed weight", expected: packed_i8_len(3, 4), got: 12 }
    );
    let packed = vec![0i8; packed_i8_len(3, 4)];
    assert!(matches!(
        QuantLinear::from_packed(qg(4, 3, true), &packed[..], 0.1, 0.0, Some(&[1.0f32; 4][..])),
        Err(Error::Length { what: "bias", .. })
    ));
    assert!(matches!(
        QuantLinear::<_, &[f32]>::from_packed(
            qg(usize::MAX, 3, false),
            &packed[..],
            0.1,
            0.0,
            None
        ),
        Err(Error::BadShape { .. } | Error::Length { .. })
    ));
    assert!(matches!(
        QuantLinear::from_slice(qg(usize::MAX, 3, false), &q, 0.1, 0.0, None),
        Err(Error::BadShape { .. } | Error::Length { .. })
    ));

    // Block-int8.
    let (k, n) = (64, 3);
    let q = vec![1i8; n * k];
    let s = vec![0.5f32; n * k / BLOCK_K];
    assert!(BlockQ8Linear::from_slice(bg(k, n, false), &q, &s, None).is_ok());
    assert!(geometry_err(BlockQ8Linear::from_slice(bg(48, 4, false), &q, &s, None).unwrap_err()));
    assert!(geometry_err(
        BlockQ8Linear::new(bg(0, 3, false), Vec::new(), Vec::new(), None).unwrap_err()
    ));
    assert_eq!(
        BlockQ8Linear::from_slice(bg(k, n, false), &q, &s[1..], None).unwrap_err(),
        Error::Length { what: "scales", expected: 6, got: 5 }
    );
    assert_eq!(
        BlockQ8Linear::from_in_out(bg(k, n, false), &q[1..], &s, None).unwrap_err(),
        Error::Length { what: "weight", expected: n * k, got: n * k - 1 }
    );
    assert_eq!(
        BlockQ8Linear::new(bg(k, n, true), q.clone(), s.clone(), Some(vec![0.0; 2])).unwrap_err(),
        Error::Length { what: "bias", expected: 3, got: 2 }
    );
    let mut bad = s.clone();
    bad[4] = f32::NAN;
    assert!(geometry_err(BlockQ8Linear::from_slice(bg(k, n, false), &q, &bad, None).unwrap_err()));
    bad[4] = f32::NEG_INFINITY;
    assert!(geometry_err(BlockQ8Linear::from_in_out(bg(k, n, false), &q, &bad, None).unwrap_err()));
    let packed = vec![0i8; packed_i8_len(n, k)];
    let mut packed_scales = vec![0.5f32; packed_block_scales_len(n, k)];
    assert!(
        BlockQ8Linear::from_packed(bg(k, n, false), &packed[..], &packed_scales[..], None).is_ok()
    );
    assert!(matches!(
        BlockQ8Linear::from_packed(bg(k, n, false), &packed[..], &packed_scales[1..], None),
        Err(Error::Length { what: "scales", .. })
    ));
    assert!(matches!(
        BlockQ8Linear::from_packed(bg(k, n, false), &packed[1..], &packed_scales[..], None),
        Err(Error::Length { what: "packed weight", .. })
    ));
    packed_scales[7] = f32::INFINITY;
    assert!(geometry_err(
        BlockQ8Linear::from_packed(bg(k, n, false), &packed[..], &packed_scales[..], None)
            .unwrap_err()
    ));
    assert!(matches!(
        BlockQ8Linear::from_slice(bg(usize::MAX / 32 * 32, n, false), &q, &s, None),
        Err(Error::BadShape { .. } | Error::Length { .. })
    ));
}

/// Every run error is returned before anything is written, and the operator works
/// afterwards; the same for both formats.
fn run_errors<F>(k: usize, n: usize, run: F, want: &[f32])
where
    F: Fn(&TensorView, &mut TensorViewMut) -> Result<(), Error>,
{
    let x = vec![1.0f32; 2 * k + 1];
    let mut y = vec![7.0f32; 3 * n + 1];
    let go = |xd: &[usize], xl, yd: &[usize], yl, y: &mut [f32]| {
        let len = yd.iter().product();
        let input = TensorView::new(&x[..xd.iter().product()], xd, xl).unwrap();
        let mut out = TensorViewMut::new(&mut y[..len], yd, yl).unwrap();
        run(&input, &mut out)
    };
    let (fm, cf) = (Layout::FrameMajor, Layout::ChannelFirst);
    let shape_err = |e: Result<(), Error>| matches!(e, Err(Error::Shape(_)));
    // Wrong in_features, rank, layouts, output rows / features / rank.
    assert!(shape_err(go(&[2, k - 1], fm, &[2, n], fm, &mut y)));
    assert!(shape_err(go(&[1, 2, k], fm, &[2, n], fm, &mut y)));
    assert!(matches!(go(&[2, k], cf, &[2, n], fm, &mut y), Err(Error::Layout { .. })));
    assert!(matches!(go(&[2, k], fm, &[2, n], cf, &mut y), Err(Error::Layout { .. })));
    assert!(matches!(
        go(&[2, k], fm, &[3, n], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 2, got: 3, .. }))
    ));
    assert!(matches!(
        go(&[2, k], fm, &[2, n + 1], fm, &mut y),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 1, .. }))
    ));
    assert!(matches!(
        go(&[2, k], fm, &[2 * n], fm, &mut y),
        Err(Error::Shape(ShapeError::Rank { arg: 1, got: 1, .. }))
    ));
    assert!(matches!(
        go(&[k], fm, &[1, n], fm, &mut y),
        Err(Error::Shape(ShapeError::Rank { arg: 1, got: 2, .. }))
    ));
    assert!(shape_err(go(&[k], fm, &[n + 1], fm, &mut y)));
    assert!(y.iter().all(|&v| v == 7.0), "output written on error");
    // Still usable.
    go(&[2, k], fm, &[2, n], fm, &mut y).unwrap();
    assert_eq!(&y[..n], want);
    assert_eq!(&y[n..2 * n], want);
    go(&[k], fm, &[n], fm, &mut y).unwrap();
    assert_eq!(&y[..n], want);
}

#[test]
fn run_errors_leave_output_and_operator_intact() {
    // x = ones: y[j] = scale * sum_k q[j, k] + offset * k + b[j], exact in f32 here.
    let (k, n) = (4, 3);
    let q: Vec<i8> = (0..n * k).map(|v| v as i8 - 5).collect();
    let (scale, offset) = (0.25f32, -0.5f32);
    let op = QuantLinear::new(qg(k, n, true), q.clone(), scale, offset, Some(vec![1.0, 2.0, 3.0]))
        .unwrap();
    let want: Vec<f32> = (0..n)
        .map(|j| {
            let s: i32 = q[j * k..j * k + k].iter().map(|&v| v as i32).sum();
            scale * s as f32 + offset * k as f32 + (j + 1) as f32
        })
        .collect();
    run_errors(k, n, |i, o| op.run::<Portable>(i, o), &want);

    let (k, n) = (32, 3);
    let q: Vec<i8> = (0..n * k).map(|v| (v % 7) as i8 - 3).collect();
    let op = BlockQ8Linear::new(bg(k, n, false), q.clone(), vec![0.5; n], None).unwrap();
    let want: Vec<f32> = (0..n)
        .map(|j| 0.5 * q[j * k..j * k + k].iter().map(|&v| v as i32).sum::<i32>() as f32)
        .collect();
    run_errors(k, n, |i, o| op.run::<Portable>(i, o), &want);
}

#[test]
fn send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<QuantLinear<Vec<i8>, Vec<f32>>>();
    assert_send_sync::<QuantLinear<&'static [i8], &'static [f32]>>();
    assert_send_sync::<BlockQ8Linear<Vec<i8>, Vec<f32>>>();
    assert_send_sync::<BlockQ8Linear<&'static [i8], &'static [f32]>>();
}

/// A per-tensor operator's geometry: `k` inputs, `n` outputs.
fn qg(k: usize, n: usize, bias: bool) -> QuantLinearGeometry {
    QuantLinearGeometry { in_features: k, out_features: n, bias }
}

/// A block-int8 operator's geometry: `k` inputs, `n` outputs.
fn bg(k: usize, n: usize, bias: bool) -> BlockQ8LinearGeometry {
    BlockQ8LinearGeometry { in_features: k, out_features: n, bias }
}
