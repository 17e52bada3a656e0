//! A small CNN in the style of openWakeWord's embedding as a plan over a symbolic height
//! (time): conv2d 3x3 with the width padded -> leaky ReLU -> clamp_min (separate, in place)
//! -> conv2d 1x3 "same" with the fused output stage -> conv2d 3x1 (the direct GEMM path)
//! -> max pool 2x2 -> conv2d 3x1 -> max pool 1x2 / (1, 2). The plan must produce exactly
//! what the runtime's operators produce when called one by one, agree with an f64
//! reference, run the activations in place, and allocate nothing.

mod common;
#[path = "../../neon-runtime/tests/common/pool64.rs"]
mod pool_ref;

use neon_macros::neon_plan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv2d::Conv2d;
use neon_runtime::ops::pool::MaxPool2d;
use neon_runtime::{Backend, Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// `[1, frames, 12]` (time x mel) -> `[16, frames / 2 - 4, 3]`.
    pub plan SmallCnn {
        dim frames in 10..=80;
        weight w1: f32[8, 1, 3, 3];
        weight b1: f32[8];
        weight w2: f32[8, 8, 1, 3];
        weight b2: f32[8];
        weight w3: f32[16, 8, 3, 1];
        weight b3: f32[16];
        weight w4: f32[16, 16, 3, 1];
        input x: [1, frames, 12];
        output y: [16, frames / 2 - 4, 3];

        let h = conv2d(x, w1, b1, padding = (0, 0, 1, 1));
        let h = leaky_relu(h, slope = 0.2);
        let h = clamp_min(h, min = -0.4);
        let h = conv2d(h, w2, b2, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, w3, b3, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (2, 2));
        let h = conv2d(h, w4);
        y = max_pool2d(h, kernel = (1, 2), stride = (1, 2));
    }
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0) * scale).collect()
}

/// Raw weights, PyTorch layout: (w1, b1, w2, b2, w3, b3, w4).
type Raw = [Vec<f32>; 7];

fn raw() -> Raw {
    [
        values(8 * 9, 1, 0.5),
        values(8, 2, 0.1),
        values(8 * 8 * 3, 3, 0.25),
        values(8, 4, 0.1),
        values(16 * 8 * 3, 5, 0.25),
        values(16, 6, 0.1),
        values(16 * 16 * 3, 7, 0.2),
    ]
}

fn weights(r: &Raw) -> SmallCnnWeights<Vec<f32>> {
    SmallCnnWeights {
        w1: Conv2d::new(SmallCnn::W1, r[0].clone(), Some(r[1].clone())).unwrap(),
        w2: Conv2d::new(SmallCnn::W2, r[2].clone(), Some(r[3].clone())).unwrap(),
        w3: Conv2d::new(SmallCnn::W3, r[4].clone(), Some(r[5].clone())).unwrap(),
        w4: Conv2d::new(SmallCnn::W4, r[6].clone(), None).unwrap(),
    }
}

const CF: Layout = Layout::ChannelFirst;

/// One conv through the runtime operator: `[c, h, w]` in, the output and its dims out.
fn conv<B: Backend>(op: &Conv2d<Vec<f32>>, x: &[f32], dims: [usize; 3]) -> (Vec<f32>, [usize; 3]) {
    let g = op.geometry();
    let (oh, ow) = g.output_size(dims[1], dims[2]).unwrap();
    let out = [g.out_channels, oh, ow];
    let mut y = vec![0.0; out.iter().product()];
    let mut scratch = vec![0.0; op.scratch_len(dims[1], dims[2])];
    op.run::<B>(
        &TensorView::new(x, &dims, CF).unwrap(),
        &mut TensorViewMut::new(&mut y, &out, CF).unwrap(),
        &mut scratch,
    )
    .unwrap();
    (y, out)
}

fn pool<B: Backend>(p: MaxPool2d, x: &[f32], dims: [usize; 3]) -> (Vec<f32>, [usize; 3]) {
    let out =
        [dims[0], (dims[1] - p.kernel_h) / p.stride_h + 1, (dims[2] - p.kernel_w) / p.stride_w + 1];
    let mut y = vec![0.0; out.iter().product()];
    p.run::<B>(
        &TensorView::new(x, &dims, CF).unwrap(),
        &mut TensorViewMut::new(&mut y, &out, CF).unwrap(),
    )
    .unwrap();
    (y, out)
}

/// The same math with the runtime's operators called one by one.
fn reference<B: Backend>(w: &SmallCnnWeights<Vec<f32>>, x: &[f32], frames: usize) -> Vec<f32> {
    let (mut h, d) = conv::<B>(&w.w1, x, [1, frames, 12]);
    let mut v = TensorViewMut::new(&mut h, &d, CF).unwrap();
    Activation::LeakyRelu { slope: 0.2 }.run_in_place::<B>(&mut v).unwrap();
    Activation::ClampMin { min: -0.4 }.run_in_place::<B>(&mut v).unwrap();
    let (h, d) = conv::<B>(&w.w2, &h, d);
    let (h, d) = conv::<B>(&w.w3, &h, d);
    let (h, d) = pool::<B>(MaxPool2d::new((2, 2)), &h, d);
    let (h, d) = conv::<B>(&w.w4, &h, d);
    let (y, d) = pool::<B>(MaxPool2d::new((1, 2)).stride(1, 2), &h, d);
    assert_eq!(d, [16, frames / 2 - 4, 3]);
    y
}

// ---------------------------------------------------------------------------------------
// f64 reference, written from the definitions (PyTorch Conv2d / MaxPool2d semantics).
// ---------------------------------------------------------------------------------------

struct T64 {
    d: [usize; 3],
    v: Vec<f64>,
}

fn conv64(
    x: &T64,
    w: &[f32],
    b: Option<&[f32]>,
    cout: usize,
    (kh, kw): (usize, usize),
    (pt, pb, pl, pr): (usize, usize, usize, usize),
    act: bool,
) -> T64 {
    let [cin, h, wd] = x.d;
    let (oh, ow) = (h + pt + pb - kh + 1, wd + pl + pr - kw + 1);
    let mut v = vec![0.0; cout * oh * ow];
    for o in 0..cout {
        for r in 0..oh {
            for q in 0..ow {
                let mut s = b.map_or(0.0, |b| b[o] as f64);
                for c in 0..cin {
                    for i in 0..kh {
                        for j in 0..kw {
                            let (ri, qj) = ((r + i) as i64 - pt as i64, (q + j) as i64 - pl as i64);
                            if ri >= 0 && ri < h as i64 && qj >= 0 && qj < wd as i64 {
                                let xv = x.v[(c * h + ri as usize) * wd + qj as usize];
                                s += w[((o * cin + c) * kh + i) * kw + j] as f64 * xv;
                            }
                        }
                    }
                }
                if act {
                    s = if s < 0.0 { 0.2 * s } else { s };
                    s = s.max(-0.4);
                }
                v[(o * oh + r) * ow + q] = s;
            }
        }
    }
    T64 { d: [cout, oh, ow], v }
}

fn pool64(x: &T64, k: (usize, usize), s: (usize, usize)) -> T64 {
    let [c, h, w] = x.d;
    let (oh, ow) = ((h - k.0) / s.0 + 1, (w - k.1) / s.1 + 1);
    T64 { d: [c, oh, ow], v: pool_ref::max_pool2d(&x.v, c, (h, w), k, s) }
}

fn reference64(r: &Raw, x: &[f32], frames: usize) -> Vec<f64> {
    let x = T64 { d: [1, frames, 12], v: x.iter().map(|&v| v as f64).collect() };
    let h = conv64(&x, &r[0], Some(&r[1]), 8, (3, 3), (0, 0, 1, 1), true);
    let h = conv64(&h, &r[2], Some(&r[3]), 8, (1, 3), (0, 0, 1, 1), true);
    let h = conv64(&h, &r[4], Some(&r[5]), 16, (3, 1), (0, 0, 0, 0), true);
    let h = pool64(&h, (2, 2), (2, 2));
    let h = conv64(&h, &r[6], None, 16, (3, 1), (0, 0, 0, 0), false);
    pool64(&h, (1, 2), (1, 2)).v
}

fn plan_equals_operators_and_f64<B: Backend>() {
    let r = raw();
    let w = weights(&r);
    let mut ws = Box::new(SmallCnnWorkspace::new());
    let mut worst = 0.0f64;
    for frames in [10, 11, 17, 32, 76, 80] {
        let x = values(SmallCnn::x_len(frames), frames, 1.5);
        let mut y = vec![f32::NAN; SmallCnn::y_len(frames)];
        SmallCnn::run::<B, _>(&w, &x, &mut y, frames, &mut ws).unwrap();
        let want = reference::<B>(&w, &x, frames);
        assert!(
            y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{} frames = {frames}: plan differs from the operators",
            B::NAME
        );
        // Five layers of f32 sums of at most 72 products of values of magnitude <= 1.5
        // and weights <= 0.5: each layer's rounding error is below (k + 2) eps sum|terms|
        // ~ 74 * 1.2e-7 * 10 ~ 1e-4 relative to the layer's scale, and the layers do not
        // amplify it (the weights keep the magnitudes around 1). Observed: 1e-7.
        for (i, (&g, &e)) in y.iter().zip(&reference64(&r, &x, frames)).enumerate() {
            let err = (g as f64 - e).abs();
            worst = worst.max(err);
            assert!(err <= 1e-4 * (1.0 + e.abs()), "frames {frames} [{i}]: {g} vs {e}");
        }
    }
    println!("{}: worst |plan - f64| = {worst:e}", B::NAME);
}

neon_runtime::backend_tests!(plan_equals_operators_and_f64);

#[test]
fn geometry_constants_and_memory() {
    // The geometries the plan compiled, as the weights must be built.
    let g = SmallCnn::W2;
    assert_eq!((g.kernel_h, g.kernel_w), (1, 3));
    assert_eq!((g.pad_top, g.pad_bottom, g.pad_left, g.pad_right), (0, 0, 1, 1));
    assert_eq!((g.leaky_slope, g.clamp_min), (Some(0.2), Some(-0.4)));
    assert_eq!(SmallCnn::W1.pad_left, 1);
    assert_eq!(SmallCnn::W1.epilogue(), None);
    assert!(SmallCnn::W3.is_direct() && SmallCnn::W4.is_direct());
    assert_eq!(SmallCnn::x_len(76), 76 * 12);
    assert_eq!(SmallCnn::y_len(76), 16 * 34 * 3);
    let map = SmallCnn::MEMORY_MAP;
    let region = |name: &str| map.iter().find(|r| r.name == name).unwrap();
    // leaky_relu and clamp_min run in place over the first conv's output.
    assert_eq!(region("h#2").offset, region("h").offset, "leaky_relu in place");
    assert_eq!(region("h#3").offset, region("h").offset, "clamp_min in place");
    // im2col scratch for the first two convs, none for the direct 3x1 convs.
    let scratch: Vec<&str> =
        map.iter().filter(|r| r.name.contains("#scratch")).map(|r| r.name).collect();
    assert_eq!(scratch, ["conv2d#scratch0", "conv2d#scratch3"]);
    const { assert!(SmallCnn::WORKSPACE_BYTES * 100 <= SmallCnn::LOWER_BOUND_BYTES * 102) };
}

#[test]
fn errors_then_reuse() {
    let r = raw();
    let w = weights(&r);
    let mut ws = Box::new(SmallCnnWorkspace::new());
    let x = values(SmallCnn::x_len(20), 1, 1.0);
    let mut y = vec![0.0; SmallCnn::y_len(20)];
    // Out-of-range dim, wrong length: errors before any kernel.
    assert!(SmallCnn::run::<Portable, _>(&w, &x, &mut y, 9, &mut ws).is_err());
    assert!(SmallCnn::run::<Portable, _>(&w, &x[1..], &mut y, 20, &mut ws).is_err());
    // A weight built with another output stage: rejected.
    let mut bad = weights(&r);
    bad.w2 = Conv2d::new(SmallCnn::W2.clamp_min(-0.5), r[2].clone(), Some(r[3].clone())).unwrap();
    let e = SmallCnn::run::<Portable, _>(&bad, &x, &mut y, 20, &mut ws).unwrap_err();
    assert_eq!(e, neon_runtime::Error::Weight { name: "w2" });
    // A missing bias: rejected.
    bad.w2 = Conv2d::new(SmallCnn::W2, r[2].clone(), None).unwrap();
    assert!(SmallCnn::run::<Portable, _>(&bad, &x, &mut y, 20, &mut ws).is_err());
    SmallCnn::run::<Portable, _>(&w, &x, &mut y, 20, &mut ws).unwrap();
    assert_eq!(y, reference::<Portable>(&w, &x, 20));
}

#[test]
fn run_allocates_nothing() {
    let w = weights(&raw());
    let mut ws = Box::new(SmallCnnWorkspace::new());
    let x = values(SmallCnn::x_len(76), 3, 1.0);
    let mut y = vec![0.0; SmallCnn::y_len(76)];
    common::allocation_free(|| SmallCnn::run::<Portable, _>(&w, &x, &mut y, 76, &mut ws)).unwrap();
}
