//! Elementwise kernels against f64 references on every tail and on channel-first /
//! frame-major geometries; every backend vs portable (generic bodies, `backend_tests!`); the
//! elementwise operators' shape, layout and length errors.

mod common;

use common::{assert_close, f64s, rng, tail_sizes, uniform};
use neon_runtime::kernels::ElementwiseKernels;
use neon_runtime::ops::elementwise::{Add, Mul, Scale, ScaleShift};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};

/// Unit roundoff of f32: one correctly rounded operation has relative error <= U.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// `|got - want| <= bound[i]` elementwise.
fn assert_within(what: &str, got: &[f32], want: &[f64], bound: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((&g, &w), &b)) in got.iter().zip(want).zip(bound).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= b, "{what}: index {i}: got {g}, want {w} (err {err:e}, allowed {b:e})");
    }
}

/// The bound of a multiply-add `p + c` rounded twice or once (fused), per element: `U |p|
/// + U |want|` for the exact products `p` and results `want`.
fn mul_add_bound(products: impl IntoIterator<Item = f64>, want: &[f64]) -> Vec<f64> {
    products.into_iter().zip(want).map(|(p, w)| U * p.abs() + U * w.abs()).collect()
}

/// Binary ops and scalar maps on every length. One IEEE operation is correctly rounded:
/// relative error <= U against the exact (f64) result of the same f32 inputs. `x * s + b`
/// rounds twice (portable) or once (NEON, fused): error <= U |x s| + U |x s + b|.
fn flat<B: Backend>() {
    let mut r = rng(21);
    for n in tail_sizes() {
        let a = uniform(&mut r, n, -4.0, 4.0);
        let b = uniform(&mut r, n, -4.0, 4.0);
        let (a64, b64) = (f64s(&a), f64s(&b));
        let sum: Vec<f64> = a64.iter().zip(&b64).map(|(x, y)| x + y).collect();
        let prod: Vec<f64> = a64.iter().zip(&b64).map(|(x, y)| x * y).collect();

        let mut out = vec![f32::NAN; n];
        B::add(&a, &b, &mut out);
        assert_close("add", &out, &sum, 0.0, U);
        let mut acc = a.clone();
        B::add_assign(&mut acc, &b);
        assert_eq!(acc, out, "add_assign == add");
        B::mul(&a, &b, &mut out);
        assert_close("mul", &out, &prod, 0.0, U);
        let mut acc = a.clone();
        B::mul_assign(&mut acc, &b);
        assert_eq!(acc, out, "mul_assign == mul");

        let s = -1.75f32;
        let want: Vec<f64> = a64.iter().map(|x| x * s as f64).collect();
        let mut x = a.clone();
        B::scale(&mut x, s);
        assert_close("scale", &x, &want, 0.0, U);
        B::scale_to(&a, &mut out, s);
        assert_eq!(out, x, "scale_to == scale");

        let (s, sh) = (0.37f32, -1.25f32);
        let want: Vec<f64> = a64.iter().map(|x| x * s as f64 + sh as f64).collect();
        let bound = mul_add_bound(a64.iter().map(|x| x * s as f64), &want);
        let mut x = a.clone();
        B::scale_shift(&mut x, s, sh);
        assert_within("scale_shift", &x, &want, &bound);
        B::scale_shift_to(&a, &mut out, s, sh);
        assert_eq!(out, x, "scale_shift_to == scale_shift");
    }
    // Empty slices are fine.
    B::add(&[], &[], &mut []);
    B::scale_shift(&mut [], 1.0, 2.0);
}

/// Geometries for the per-channel kernels: `(channels, frames)`.
fn geometries() -> Vec<(usize, usize)> {
    let mut g: Vec<(usize, usize)> = tail_sizes().map(|n| (1, n)).collect();
    g.extend(tail_sizes().take(20).map(|n| (n, 1)));
    g.extend([(7, 13), (13, 7), (3, 33), (33, 3), (64, 65), (416, 1664)]);
    g
}

/// Per-channel kernels in both layouts against f64 references (bias add and scale: one
/// rounding, <= U relative; residual with layer scale and scale-and-shift: <= U |s x| +
/// U |want|).
fn per_channel<B: Backend>() {
    let mut r = rng(22);
    for (c, t) in geometries() {
        let x = uniform(&mut r, c * t, -3.0, 3.0);
        let v = uniform(&mut r, c, -2.0, 2.0);
        let acc0 = uniform(&mut r, c * t, -3.0, 3.0);
        let w = uniform(&mut r, c, -2.0, 2.0);
        // Channel first: x[ch * t + f]; frame major: x[f * c + ch]. Same random data read
        // both ways.
        for layout in [Layout::ChannelFirst, Layout::FrameMajor] {
            let ch_of = |i: usize| match layout {
                Layout::ChannelFirst => i / t,
                Layout::FrameMajor => i % c,
            };
            let bias_want: Vec<f64> =
                x.iter().enumerate().map(|(i, &e)| e as f64 + v[ch_of(i)] as f64).collect();
            // x[i] * v[ch], exact in f64 (a product of two f32).
            let scale_want: Vec<f64> =
                x.iter().enumerate().map(|(i, &e)| e as f64 * v[ch_of(i)] as f64).collect();
            let res_want: Vec<f64> =
                scale_want.iter().zip(&acc0).map(|(p, &a)| a as f64 + p).collect();
            let res_bound = mul_add_bound(scale_want.iter().copied(), &res_want);

            // Scale and shift: x * v[c] + w[c], rounded once (fused) or twice.
            let ss_want: Vec<f64> =
                scale_want.iter().enumerate().map(|(i, p)| p + w[ch_of(i)] as f64).collect();
            let ss_bound = mul_add_bound(scale_want.iter().copied(), &ss_want);

            let mut y = x.clone();
            let mut y2 = x.clone();
            let mut y3 = x.clone();
            let mut a = acc0.clone();
            match layout {
                Layout::ChannelFirst => {
                    B::add_bias_channel_first(&mut y, &v, c, t);
                    B::scale_channels_channel_first(&mut y2, &v, c, t);
                    B::scale_shift_channels_channel_first(&mut y3, (&v, &w), c, t);
                    B::add_scaled_channels_channel_first(&mut a, &x, &v, c, t);
                }
                Layout::FrameMajor => {
                    B::add_bias_frame_major(&mut y, &v, t, c);
                    B::scale_channels_frame_major(&mut y2, &v, t, c);
                    B::scale_shift_channels_frame_major(&mut y3, (&v, &w), t, c);
                    B::add_scaled_channels_frame_major(&mut a, &x, &v, t, c);
                }
            }
            let what = format!("{layout:?} {c}x{t}");
            assert_close(&format!("add_bias {what}"), &y, &bias_want, 0.0, U);
            assert_close(&format!("scale_channels {what}"), &y2, &scale_want, 0.0, U);
            assert_within(&format!("add_scaled_channels {what}"), &a, &res_want, &res_bound);
            assert_within(&format!("scale_shift_channels {what}"), &y3, &ss_want, &ss_bound);
        }
    }
}

#[test]
#[should_panic(expected = "lengths differ")]
fn add_length_mismatch_panics() {
    Portable::add(&[1.0, 2.0], &[1.0], &mut [0.0; 2]);
}

#[test]
#[should_panic(expected = "vector length")]
fn scale_shift_channels_shift_length_panics() {
    Portable::scale_shift_channels_channel_first(&mut [0.0; 6], (&[1.0, 2.0], &[1.0]), 2, 3);
}

#[test]
#[should_panic(expected = "not rows * cols")]
fn bias_geometry_mismatch_panics() {
    Portable::add_bias_channel_first(&mut [0.0; 6], &[1.0, 2.0], 2, 4);
}

#[test]
#[should_panic(expected = "vector length")]
fn bias_length_mismatch_panics() {
    Portable::add_bias_frame_major(&mut [0.0; 6], &[1.0, 2.0], 2, 3);
}

/// Same inputs through `B` and Portable: everything but the fused multiply-adds is bitwise
/// equal; `scale_shift` and the residual with layer scale differ by at most one rounding of
/// the product (<= U |x s|) plus one of the result (<= U |y|).
fn matches_portable<B: Backend>() {
    let mut r = rng(23);
    for n in tail_sizes() {
        let a = uniform(&mut r, n, -4.0, 4.0);
        let b = uniform(&mut r, n, -4.0, 4.0);
        let (mut p, mut q) = (vec![0.0; n], vec![0.0; n]);
        Portable::add(&a, &b, &mut p);
        B::add(&a, &b, &mut q);
        assert_eq!(p, q);
        Portable::mul(&a, &b, &mut p);
        B::mul(&a, &b, &mut q);
        assert_eq!(p, q);
        Portable::scale_to(&a, &mut p, 0.3);
        B::scale_to(&a, &mut q, 0.3);
        assert_eq!(p, q);
        Portable::scale_shift_to(&a, &mut p, 0.3, 0.7);
        B::scale_shift_to(&a, &mut q, 0.3, 0.7);
        for i in 0..n {
            let tol = U * (a[i] * 0.3).abs() as f64 + 2.0 * U * p[i].abs() as f64;
            assert!(((p[i] - q[i]).abs() as f64) <= tol, "scale_shift {i}: {} vs {}", p[i], q[i]);
        }
    }
    for (c, t) in [(7, 13), (13, 7), (5, 64)] {
        let x = uniform(&mut r, c * t, -3.0, 3.0);
        let v = uniform(&mut r, c, -2.0, 2.0);
        let (mut p, mut q) = (x.clone(), x.clone());
        Portable::add_bias_channel_first(&mut p, &v, c, t);
        B::add_bias_channel_first(&mut q, &v, c, t);
        assert_eq!(p, q);
        let (mut p, mut q) = (x.clone(), x.clone());
        Portable::scale_channels_frame_major(&mut p, &v, t, c);
        B::scale_channels_frame_major(&mut q, &v, t, c);
        assert_eq!(p, q);
        let w = uniform(&mut r, c, -2.0, 2.0);
        for layout in [Layout::ChannelFirst, Layout::FrameMajor] {
            let (mut p, mut q) = (x.clone(), x.clone());
            if layout == Layout::ChannelFirst {
                Portable::scale_shift_channels_channel_first(&mut p, (&v, &w), c, t);
                B::scale_shift_channels_channel_first(&mut q, (&v, &w), c, t);
            } else {
                Portable::scale_shift_channels_frame_major(&mut p, (&v, &w), t, c);
                B::scale_shift_channels_frame_major(&mut q, (&v, &w), t, c);
            }
            for i in 0..c * t {
                let tol = 3.0 * U * (x[i].abs() * 2.0 + p[i].abs()) as f64;
                assert!((p[i] - q[i]).abs() as f64 <= tol, "{layout:?} {i}: {} vs {}", p[i], q[i]);
            }
        }
    }
}

neon_runtime::backend_tests!(flat, per_channel, matches_portable);

// ---------------------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------------------

fn view<'a>(d: &'a [f32], dims: &[usize], l: Layout) -> TensorView<'a> {
    TensorView::new(d, dims, l).unwrap()
}

#[test]
fn add_mul_ops() {
    let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..12).map(|i| 0.5 * i as f32).collect();
    let cf = Layout::ChannelFirst;
    let (va, vb) = (view(&a, &[3, 4], cf), view(&b, &[3, 4], cf));
    let mut o = vec![0.0; 12];
    let mut out = TensorViewMut::new(&mut o, &[3, 4], cf).unwrap();
    Add.run::<Portable>(&va, &vb, &mut out).unwrap();
    assert_eq!(out.data()[5], 7.5);
    Mul.run::<Portable>(&va, &vb, &mut out).unwrap();
    assert_eq!(out.data()[4], 8.0);

    // Errors: rank, size, layout of the second input; output shape and layout.
    let vb_rank = view(&b, &[12], cf);
    let vb_dim = view(&b, &[4, 3], cf);
    let vb_fm = view(&b, &[3, 4], Layout::FrameMajor);
    let err = Add.run::<Portable>(&va, &vb_rank, &mut out).unwrap_err();
    assert!(matches!(err, Error::Shape(ShapeError::Rank { op: "add", arg: 1, got: 1, .. })));
    let err = Mul.run::<Portable>(&va, &vb_dim, &mut out).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Shape(ShapeError::Dim { op: "mul", arg: 1, axis: 0, expected: 3, got: 4, .. })
        ),
        "{err:?}"
    );
    assert!(matches!(
        Add.run::<Portable>(&va, &vb_fm, &mut out),
        Err(Error::Layout { op: "add", .. })
    ));
    let mut o2 = vec![-1.0; 12];
    let mut bad = TensorViewMut::new(&mut o2, &[2, 6], cf).unwrap();
    let err = Add.run::<Portable>(&va, &vb, &mut bad).unwrap_err();
    assert!(matches!(err, Error::Shape(ShapeError::Dim { arg: 2, .. })), "{err:?}");
    assert!(o2.iter().all(|&v| v == -1.0), "output untouched on error");
    let mut o3 = vec![0.0; 12];
    let mut bad = TensorViewMut::new(&mut o3, &[3, 4], Layout::FrameMajor).unwrap();
    assert!(matches!(Add.run::<Portable>(&va, &vb, &mut bad), Err(Error::Layout { .. })));

    // In place, and still usable after the errors.
    let mut acc = a.clone();
    let mut vacc = TensorViewMut::new(&mut acc, &[3, 4], cf).unwrap();
    assert!(Add.run_in_place::<Portable>(&mut vacc, &vb_dim).is_err());
    Add.run_in_place::<Portable>(&mut vacc, &vb).unwrap();
    Mul.run_in_place::<Portable>(&mut vacc, &vb).unwrap();
    assert_eq!(acc[2], (2.0 + 1.0) * 1.0);

    // Shape rules.
    let s = Shape::new(&[3usize, 4]).unwrap();
    assert_eq!(Add.arity(), 2);
    assert_eq!(Add.output_shape(&[s, s]), Ok(s));
    assert!(matches!(Add.output_shape(&[s]), Err(ShapeError::Geometry { .. })));
}

#[test]
fn scalar_ops() {
    let x: Vec<f32> = (0..10).map(|i| i as f32 - 5.0).collect();
    let vx = view(&x, &[2, 5], Layout::FrameMajor);
    let mut o = vec![0.0; 10];
    let mut out = TensorViewMut::new(&mut o, &[2, 5], Layout::FrameMajor).unwrap();
    Scale { scale: 2.0 }.run::<Portable>(&vx, &mut out).unwrap();
    assert_eq!(out.data()[0], -10.0);
    ScaleShift { scale: 2.0, shift: 1.0 }.run::<Portable>(&vx, &mut out).unwrap();
    assert_eq!(out.data()[9], 9.0);
    ScaleShift { scale: 2.0, shift: 1.0 }.run_in_place::<Portable>(&mut out).unwrap();
    assert_eq!(out.data()[9], 19.0);

    let err = Scale { scale: f32::NAN }.run::<Portable>(&vx, &mut out).unwrap_err();
    assert!(matches!(err, Error::Shape(ShapeError::Geometry { op: "scale", .. })));
    let err = ScaleShift { scale: 1.0, shift: f32::INFINITY }.run_in_place::<Portable>(&mut out);
    assert!(matches!(err, Err(Error::Shape(ShapeError::Geometry { .. }))));
    let mut o2 = vec![0.0; 10];
    let mut bad = TensorViewMut::new(&mut o2, &[10], Layout::FrameMajor).unwrap();
    let err = Scale { scale: 2.0 }.run::<Portable>(&vx, &mut bad).unwrap_err();
    assert!(matches!(err, Error::Shape(ShapeError::Rank { arg: 1, expected: "2", got: 1, .. })));
    let mut bad = TensorViewMut::new(&mut o2, &[2, 5], Layout::ChannelFirst).unwrap();
    assert!(matches!(
        Scale { scale: 2.0 }.run::<Portable>(&vx, &mut bad),
        Err(Error::Layout { .. })
    ));
}

#[cfg(feature = "alloc")]
#[test]
fn per_channel_ops() {
    use neon_runtime::ops::elementwise::{BiasAdd, LayerScale, PerChannel, PerChannelOp};
    common::assert_ops_send_sync!(BiasAdd, LayerScale);

    static BIAS: [f32; 3] = [10.0, 20.0, 30.0];
    let cf = Layout::ChannelFirst;
    let fm = Layout::FrameMajor;
    let bias_cf = BiasAdd::from_packed(PerChannel::bias_add(3, cf), &BIAS[..]).unwrap();
    let bias_fm = BiasAdd::from_slice(PerChannel::bias_add(3, fm), &BIAS).unwrap();
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();

    // [3, 4] channel first: channel = row.
    let mut o = vec![0.0; 12];
    let mut out = TensorViewMut::new(&mut o, &[3, 4], cf).unwrap();
    bias_cf.run::<Portable>(&view(&x, &[3, 4], cf), &mut out).unwrap();
    assert_eq!(out.data()[5], 5.0 + 20.0);
    // [4, 3] frame major: channel = column; rank 3 [2, 2, 3] too.
    let mut y = x.clone();
    let mut vy = TensorViewMut::new(&mut y, &[2, 2, 3], fm).unwrap();
    bias_fm.run_in_place::<Portable>(&mut vy).unwrap();
    assert_eq!(y[5], 5.0 + 30.0);
    assert_eq!(
        bias_fm.geometry(),
        PerChannel { channels: 3, layout: fm, op: PerChannelOp::AddBias }
    );

    // Errors: channels, layout, empty vector, output shape.
    let mut y = x.clone();
    let mut wrong = TensorViewMut::new(&mut y, &[4, 3], cf).unwrap();
    let err = bias_cf.run_in_place::<Portable>(&mut wrong).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Shape(ShapeError::Dim {
                op: "bias_add",
                what: "channels",
                expected: 3,
                got: 4,
                ..
            })
        ),
        "{err:?}"
    );
    let err = bias_fm.run_in_place::<Portable>(&mut wrong).unwrap_err();
    assert!(matches!(err, Error::Layout { op: "bias_add", .. }), "{err:?}");
    assert!(y == x, "untouched on error");
    assert!(matches!(
        BiasAdd::new(PerChannel::bias_add(3, cf), Vec::new()),
        Err(Error::Length { .. })
    ));
    let mut o = vec![0.0; 12];
    let mut bad_out = TensorViewMut::new(&mut o, &[12], cf).unwrap();
    assert!(bias_cf.run::<Portable>(&view(&x, &[3, 4], cf), &mut bad_out).is_err());

    // Layer scale and the fused residual; errors leave the operator usable.
    let ls = LayerScale::new(PerChannel::layer_scale(3, cf), vec![0.5, 2.0, -1.0]).unwrap();
    let mut y = x.clone();
    let mut vy = TensorViewMut::new(&mut y, &[3, 4], cf).unwrap();
    ls.run_in_place::<Portable>(&mut vy).unwrap();
    assert_eq!(y[1], 0.5);
    assert_eq!(y[4], 8.0);
    let mut acc = vec![1.0; 12];
    let mut vacc = TensorViewMut::new(&mut acc, &[3, 4], cf).unwrap();
    let err = ls.run_residual::<Portable>(&mut vacc, &view(&x, &[3, 2, 2], cf)).unwrap_err();
    assert!(matches!(
        err,
        Error::Shape(ShapeError::Rank { op: "layer_scale_residual", arg: 1, .. })
    ));
    let err = ls.run_residual::<Portable>(&mut vacc, &view(&x, &[3, 4], fm)).unwrap_err();
    assert!(matches!(err, Error::Layout { .. }));
    ls.run_residual::<Portable>(&mut vacc, &view(&x, &[3, 4], cf)).unwrap();
    assert_eq!(acc[9], 1.0 - 9.0);
    assert_eq!(ls.residual_geometry().arity(), 2);
    let s = Shape::new(&[3usize, 4]).unwrap();
    let g = PerChannel { channels: 0, layout: cf, op: PerChannelOp::Scale };
    assert!(matches!(g.output_shape(&[s]), Err(ShapeError::Geometry { .. })));
}

#[cfg(feature = "alloc")]
#[test]
fn channel_scale_shift_op() {
    use neon_runtime::ops::elementwise::{ChannelScaleShift, PerChannel, PerChannelOp};
    common::assert_ops_send_sync!(ChannelScaleShift);

    static SCALE: [f32; 3] = [2.0, -1.0, 0.5];
    static SHIFT: [f32; 3] = [10.0, 20.0, 30.0];
    let (cf, fm) = (Layout::ChannelFirst, Layout::FrameMajor);
    let g_cf = PerChannel::scale_shift(3, cf);
    let ss_cf = ChannelScaleShift::from_packed(g_cf, &SCALE[..], &SHIFT[..]).unwrap();
    let ss_fm =
        ChannelScaleShift::from_slice(PerChannel::scale_shift(3, fm), &SCALE, &SHIFT).unwrap();
    assert_eq!(ss_cf.geometry(), g_cf);
    assert_eq!((ss_cf.packed_weight(), ss_cf.bias()), (&SCALE[..], &SHIFT[..]));
    assert_eq!(g_cf.name(), "scale_shift");
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();

    // [3, 4] channel first: channel = row; x[5] is channel 1.
    let mut o = vec![0.0; 12];
    let mut out = TensorViewMut::new(&mut o, &[3, 4], cf).unwrap();
    ss_cf.run::<Portable>(&view(&x, &[3, 4], cf), &mut out).unwrap();
    assert_eq!(out.data()[5], -5.0 + 20.0, "x * -1 + 20");
    // [2, 2, 3] frame major: channel = last axis; x[5] is channel 2.
    let mut y = x.clone();
    let mut vy = TensorViewMut::new(&mut y, &[2, 2, 3], fm).unwrap();
    ss_fm.run_in_place::<Portable>(&mut vy).unwrap();
    assert_eq!(y[5], 5.0 * 0.5 + 30.0);

    // Errors before any write: channels, layout, vector lengths, geometry op.
    let mut y = x.clone();
    let mut wrong = TensorViewMut::new(&mut y, &[4, 3], cf).unwrap();
    let err = ss_cf.run_in_place::<Portable>(&mut wrong).unwrap_err();
    assert!(
        matches!(err, Error::Shape(ShapeError::Dim { op: "scale_shift", expected: 3, got: 4, .. })),
        "{err:?}"
    );
    let err = ss_fm.run_in_place::<Portable>(&mut wrong).unwrap_err();
    assert!(matches!(err, Error::Layout { op: "scale_shift", .. }), "{err:?}");
    assert!(y == x, "untouched on error");
    let short = ChannelScaleShift::new(g_cf, vec![1.0; 3], vec![0.0; 2]);
    assert!(matches!(short, Err(Error::Length { expected: 3, got: 2, .. })), "{short:?}");
    let other = ChannelScaleShift::new(PerChannel::bias_add(3, cf), vec![1.0; 3], vec![0.0; 3]);
    assert!(matches!(other, Err(Error::Shape(ShapeError::Geometry { .. }))));
    assert_eq!(PerChannel { op: PerChannelOp::ScaleShift, ..g_cf }, g_cf);
}
