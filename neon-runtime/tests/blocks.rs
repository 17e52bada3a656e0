//! Blocks: `ResidualConv` and `ConvNeXt` against f64 references written with plain loops
//! (`blocks/reference.rs`, with the error bound each value may carry), over odd channel
//! counts, frames 1..=33 and several kernels, dilations, activations and expansions, on
//! every backend this build has (`backend_tests!`); the same bits on worker teams of any
//! size; the same bits as the parts called one by one and through `from_parts` with
//! borrowed storage; errors for bad weights, geometries, shapes, layouts and scratch.

mod common;
#[path = "blocks/reference.rs"]
mod reference;

use common::recording::Recording;
use common::{rng, uniform};
use neon_runtime::blocks::{
    same_padding, ConvNeXt, ConvNeXtGeometry, ConvNeXtWeights, ResidualConv, ResidualConvGeometry,
    ResidualConvWeights,
};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::{Conv1d, DepthwiseConv1d, IM2COL_TILE_FRAMES};
use neon_runtime::ops::elementwise::LayerScale;
use neon_runtime::ops::norm::LayerNorm;
use neon_runtime::ops::{InPlace, RunOptions, ShapeRule};
use neon_runtime::{
    Backend, Error, Layout, Parallel, Portable, Serial, Shape, ShapeError, Team, TensorView,
    TensorViewMut,
};
use rand::rngs::SmallRng;
use reference::{Act, Approx, Conv};

const CF: Layout = Layout::ChannelFirst;

fn view(data: &[f32], c: usize, frames: usize) -> TensorView<'_> {
    TensorView::new(data, &[c, frames], CF).unwrap()
}

fn view_mut(data: &mut [f32], c: usize, frames: usize) -> TensorViewMut<'_> {
    TensorViewMut::new(data, &[c, frames], CF).unwrap()
}

// ---------------------------------------------------------------------------------------
// Weights (as the sanoTTS synthetic voice draws them: weights ~ 1/sqrt(fan_in), biases and
// norm offsets ~ 0.1, norm scales ~ 1, layer scales positive and varied per channel).
// ---------------------------------------------------------------------------------------

fn residual_weights(r: &mut SmallRng, g: &ResidualConvGeometry) -> ResidualConvWeights<Vec<f32>> {
    let c = g.channels;
    let s = |k: usize| 1.0 / ((c * k) as f32).sqrt();
    ResidualConvWeights {
        conv1_weight: uniform(r, c * c * g.kernels[0], -s(g.kernels[0]), s(g.kernels[0])),
        conv1_bias: uniform(r, c, -0.1, 0.1),
        conv2_weight: uniform(r, c * c * g.kernels[1], -s(g.kernels[1]), s(g.kernels[1])),
        conv2_bias: uniform(r, c, -0.1, 0.1),
    }
}

fn convnext_weights(r: &mut SmallRng, g: &ConvNeXtGeometry) -> ConvNeXtWeights<Vec<f32>> {
    let (c, e, k) = (g.channels, g.hidden, g.kernel);
    let s = |fan: usize| 1.0 / (fan as f32).sqrt();
    ConvNeXtWeights {
        dw_weight: uniform(r, c * k, -s(k), s(k)),
        dw_bias: uniform(r, c, -0.1, 0.1),
        norm_weight: uniform(r, c, 0.9, 1.1),
        norm_bias: uniform(r, c, -0.1, 0.1),
        pw1_weight: uniform(r, e * c, -s(c), s(c)),
        pw1_bias: uniform(r, e, -0.1, 0.1),
        pw2_weight: uniform(r, c * e, -s(e), s(e)),
        pw2_bias: uniform(r, c, -0.1, 0.1),
        gamma: uniform(r, c, 0.05, 0.5),
    }
}

// ---------------------------------------------------------------------------------------
// The blocks in f64 (reference.rs), step by step as their definitions say.
// ---------------------------------------------------------------------------------------

fn residual_ref(
    g: &ResidualConvGeometry,
    w: &ResidualConvWeights<Vec<f32>>,
    x: &[f32],
    frames: usize,
) -> Approx {
    let act = match g.activation {
        Activation::Relu => Act::Relu,
        Activation::LeakyRelu { slope } => Act::Leaky(slope as f64),
        a => panic!("no reference for {a:?}"),
    };
    let c = g.channels;
    let conv = |i: usize, w: &[f32], b: &[f32], h: &Approx| {
        let (k, d) = (g.kernels[i], g.dilations[i]);
        // "Same" padding, PyTorch's: the extra zero of an odd total on the right.
        let pad_left = d * (k - 1) / 2;
        let spec = Conv { cin: c, cout: c, k, d, pad_left, groups: 1, w, b };
        reference::conv(h, &spec, frames)
    };
    let x = Approx::exact(x);
    let h = reference::activate(&x, act);
    let h = conv(0, &w.conv1_weight, &w.conv1_bias, &h);
    let h = reference::activate(&h, act);
    let h = conv(1, &w.conv2_weight, &w.conv2_bias, &h);
    reference::add(&h, &x)
}

fn convnext_ref(
    g: &ConvNeXtGeometry,
    w: &ConvNeXtWeights<Vec<f32>>,
    x: &[f32],
    frames: usize,
) -> Approx {
    let (c, e, k) = (g.channels, g.hidden, g.kernel);
    let x = Approx::exact(x);
    let dw = Conv {
        cin: c,
        cout: c,
        k,
        d: 1,
        pad_left: (k - 1) / 2,
        groups: c,
        w: &w.dw_weight,
        b: &w.dw_bias,
    };
    let h = reference::conv(&x, &dw, frames);
    let h = reference::layer_norm(&h, c, frames, &w.norm_weight, &w.norm_bias, g.eps as f64);
    let up = Conv {
        cin: c,
        cout: e,
        k: 1,
        d: 1,
        pad_left: 0,
        groups: 1,
        w: &w.pw1_weight,
        b: &w.pw1_bias,
    };
    let h = reference::gelu(&reference::conv(&h, &up, frames));
    let down = Conv {
        cin: e,
        cout: c,
        k: 1,
        d: 1,
        pad_left: 0,
        groups: 1,
        w: &w.pw2_weight,
        b: &w.pw2_bias,
    };
    let h = reference::conv(&h, &down, frames);
    let h = reference::layer_scale(&h, frames, &w.gamma);
    reference::add(&h, &x)
}

// ---------------------------------------------------------------------------------------
// Against the references, every backend.
// ---------------------------------------------------------------------------------------

/// Residual geometries: sanoTTS's kernel 3 with dilations 1 then 3; ReLU; even kernels
/// (asymmetric "same" padding); a kernel-1 conv (the conv's pointwise path).
fn residual_geometries() -> Vec<ResidualConvGeometry> {
    let leaky = |slope| Activation::LeakyRelu { slope };
    vec![
        ResidualConvGeometry::new(5, 3, leaky(0.1)).dilations(1, 3),
        ResidualConvGeometry::new(13, 5, Activation::Relu).kernels(5, 3).dilations(2, 1),
        ResidualConvGeometry::new(32, 2, leaky(0.2)).kernels(2, 4).dilations(1, 2),
        ResidualConvGeometry::new(13, 1, leaky(0.01)).kernels(1, 7),
    ]
}

/// ConvNeXt geometries: expansions x3 (sanoTTS) and x4 (the original), x1, eps 1e-6 and
/// 1e-5, kernels 7, 3, an even 4 and 1.
fn convnext_geometries() -> Vec<ConvNeXtGeometry> {
    vec![
        ConvNeXtGeometry::new(5, 15, 7),
        ConvNeXtGeometry::new(13, 52, 7).eps(1e-5),
        ConvNeXtGeometry::new(32, 96, 3),
        ConvNeXtGeometry::new(13, 13, 4),
        ConvNeXtGeometry::new(7, 28, 1),
    ]
}

/// The frame counts of the `i`-th geometry: the first of each block takes every count
/// 1..=33 (every vector tail of the kernels: channel-first blocks of 16, 4 and 1 frames,
/// GEMM column tiles) and, for the residual block, `IM2COL_TILE_FRAMES + 44` (more than one
/// im2col tile of a conv: the tiles share the block's scratch; ConvNeXt's convs have no
/// im2col); the others a spread of residues mod 4, 12 and 16. qemu runs these tests about
/// 20 times slower than the host: this keeps them to seconds.
fn frame_counts(i: usize, long: bool) -> Vec<usize> {
    match i {
        0 => (1..=33).chain(long.then_some(IM2COL_TILE_FRAMES + 44)).collect(),
        _ => vec![1, 2, 3, 5, 8, 12, 13, 16, 19, 26, 31, 33],
    }
}

/// A random input `[channels, frames]` and what `run` (a block's serial run) writes for it,
/// the output and `scratch_len` elements of scratch filled with NaN first.
fn run_random(
    r: &mut SmallRng,
    channels: usize,
    frames: usize,
    scratch_len: usize,
    run: impl FnOnce(&TensorView<'_>, &mut TensorViewMut<'_>, &mut [f32]) -> Result<(), Error>,
) -> (Vec<f32>, Vec<f32>) {
    let x = uniform(r, channels * frames, -1.0, 1.0);
    let mut y = vec![f32::NAN; channels * frames];
    let mut scratch = vec![f32::NAN; scratch_len];
    run(&view(&x, channels, frames), &mut view_mut(&mut y, channels, frames), &mut scratch)
        .unwrap();
    (x, y)
}

/// The test `$name::<B>()`: block `$block` built from `$weights` (seeded with `$seed`) for
/// every geometry of `$geometries`, run on random inputs of every frame count of
/// `frame_counts(i, $residual)`, each output within the bound of `$reference`; prints the
/// largest error relative to the bound, prefixed `$label`.
macro_rules! block_matches_f64 {
    ($name:ident, $label:literal, $seed:literal, $geometries:ident, $weights:ident,
     $block:ident, $residual:literal, $reference:ident) => {
        fn $name<B: Backend>() {
            let mut r = rng($seed);
            let mut worst = 0.0f64;
            for (i, g) in $geometries().into_iter().enumerate() {
                let w = $weights(&mut r, &g);
                let block = $block::new(g, w.clone()).unwrap();
                for frames in frame_counts(i, $residual) {
                    let scratch = block.scratch_len(frames);
                    let (x, y) = run_random(&mut r, g.channels, frames, scratch, |x, y, s| {
                        block.run::<B>(x, y, s)
                    });
                    let what = format!("{} {g:?} frames={frames}", B::NAME);
                    let want = $reference(&g, &w, &x, frames);
                    worst = worst.max(reference::assert_within(&what, &y, &want));
                }
            }
            println!("{} {}: largest error {worst:.4} of the bound", $label, B::NAME);
        }
    };
}

block_matches_f64!(
    residual_conv_matches_f64,
    "residual_conv",
    1,
    residual_geometries,
    residual_weights,
    ResidualConv,
    true,
    residual_ref
);
block_matches_f64!(
    convnext_matches_f64,
    "convnext",
    2,
    convnext_geometries,
    convnext_weights,
    ConvNeXt,
    false,
    convnext_ref
);

/// The block gives the bits of its parts called one by one (with their own scratch), and
/// the same block built from borrowed, already prepared parts gives them too.
fn blocks_equal_their_parts<B: Backend>() {
    let mut r = rng(3);
    let frames = 29;
    // ConvNeXt.
    let g = ConvNeXtGeometry::new(13, 39, 7);
    let w = convnext_weights(&mut r, &g);
    let block = ConvNeXt::new(g, w.clone()).unwrap();
    let (c, e) = (g.channels, g.hidden);
    let x = uniform(&mut r, c * frames, -1.0, 1.0);
    let mut y = vec![0.0; c * frames];
    let mut scratch = vec![0.0; block.scratch_len(frames)];
    block.run::<B>(&view(&x, c, frames), &mut view_mut(&mut y, c, frames), &mut scratch).unwrap();

    let mut a = vec![0.0; c * frames];
    block.depthwise().run::<B>(&view(&x, c, frames), &mut view_mut(&mut a, c, frames)).unwrap();
    let mut b = vec![0.0; c * frames];
    block.norm().run::<B>(&view(&a, c, frames), &mut view_mut(&mut b, c, frames)).unwrap();
    let mut h = vec![0.0; e * frames];
    block.pw1().run::<B>(&view(&b, c, frames), &mut view_mut(&mut h, e, frames), &mut []).unwrap();
    Activation::GeluErf.run_in_place::<B>(&mut view_mut(&mut h, e, frames)).unwrap();
    let mut d = vec![0.0; c * frames];
    block.pw2().run::<B>(&view(&h, e, frames), &mut view_mut(&mut d, c, frames), &mut []).unwrap();
    block.layer_scale().run_in_place::<B>(&mut view_mut(&mut d, c, frames)).unwrap();
    let want: Vec<f32> = d.iter().zip(&x).map(|(d, x)| d + x).collect();
    assert_eq!(y, want, "convnext = its parts");

    // The same from prepared parts over borrowed storage (`S = &[f32]`).
    let packed1 = block.pw1().packed_weight().to_vec();
    let packed2 = block.pw2().packed_weight().to_vec();
    let borrowed = ConvNeXt::from_parts(
        g,
        DepthwiseConv1d::from_packed(g.depthwise(), &w.dw_weight[..], Some(&w.dw_bias[..]))
            .unwrap(),
        LayerNorm::from_packed(g.norm(), &w.norm_weight[..], Some(&w.norm_bias[..])).unwrap(),
        Conv1d::from_packed(g.pw1(), &packed1[..], Some(&w.pw1_bias[..])).unwrap(),
        Conv1d::from_packed(g.pw2(), &packed2[..], Some(&w.pw2_bias[..])).unwrap(),
        LayerScale::from_packed(g.layer_scale(), &w.gamma[..]).unwrap(),
    )
    .unwrap();
    let mut y2 = vec![0.0; c * frames];
    borrowed
        .run::<B>(&view(&x, c, frames), &mut view_mut(&mut y2, c, frames), &mut scratch)
        .unwrap();
    assert_eq!(y2, y, "convnext from borrowed parts");

    // ResidualConv.
    let g = ResidualConvGeometry::new(13, 3, Activation::LeakyRelu { slope: 0.1 }).dilations(1, 3);
    let w = residual_weights(&mut r, &g);
    let block = ResidualConv::new(g, w.clone()).unwrap();
    let mut y = vec![0.0; c * frames];
    let mut scratch = vec![0.0; block.scratch_len(frames)];
    block.run::<B>(&view(&x, c, frames), &mut view_mut(&mut y, c, frames), &mut scratch).unwrap();
    let mut a = vec![0.0; c * frames];
    g.activation.run::<B>(&view(&x, c, frames), &mut view_mut(&mut a, c, frames)).unwrap();
    // One conv of the block alone (channel-first `[c, frames]` in and out).
    let conv_alone = |conv: &Conv1d<Vec<f32>>, x: &[f32]| {
        let mut y = vec![0.0; c * frames];
        let mut s = vec![0.0; conv.scratch_len(frames)];
        conv.run::<B>(&view(x, c, frames), &mut view_mut(&mut y, c, frames), &mut s).unwrap();
        y
    };
    let mut h = conv_alone(block.conv1(), &a);
    g.activation.run_in_place::<B>(&mut view_mut(&mut h, c, frames)).unwrap();
    let d = conv_alone(block.conv2(), &h);
    let want: Vec<f32> = d.iter().zip(&x).map(|(d, x)| d + x).collect();
    assert_eq!(y, want, "residual_conv = its parts");
}

// ---------------------------------------------------------------------------------------
// Worker teams: the same bits for any context.
// ---------------------------------------------------------------------------------------

fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: index {i}: {g} vs {w}");
    }
}

fn same_bits_on_any_team<B: Backend>() {
    let mut r = rng(4);
    let frames = 97;
    let gr = ResidualConvGeometry::new(24, 3, Activation::LeakyRelu { slope: 0.1 }).dilations(1, 3);
    let res = ResidualConv::new(gr, residual_weights(&mut r, &gr)).unwrap();
    let gc = ConvNeXtGeometry::new(24, 72, 7);
    let cnx = ConvNeXt::new(gc, convnext_weights(&mut r, &gc)).unwrap();
    let c = 24;
    let x = uniform(&mut r, c * frames, -1.0, 1.0);
    let run = |par: &dyn Parallel| {
        let opts = RunOptions::new().with_parallel(par);
        let (mut y1, mut y2) = (vec![f32::NAN; c * frames], vec![f32::NAN; c * frames]);
        let mut s1 = vec![f32::NAN; res.scratch_len(frames)];
        let mut s2 = vec![f32::NAN; cnx.scratch_len(frames)];
        res.run_with::<B>(&view(&x, c, frames), &mut view_mut(&mut y1, c, frames), &mut s1, opts)
            .unwrap();
        cnx.run_with::<B>(&view(&x, c, frames), &mut view_mut(&mut y2, c, frames), &mut s2, opts)
            .unwrap();
        (y1, y2)
    };
    let (want1, want2) = run(&Serial);
    for threads in [1, 2, 3, 4, 7] {
        let team = Recording::new(Box::new(Team::new(threads).unwrap()));
        let (y1, y2) = run(&team);
        assert_bits(&format!("residual_conv, {threads} threads"), &y1, &want1);
        assert_bits(&format!("convnext, {threads} threads"), &y2, &want2);
        let tasks = team.max_tasks();
        assert!(
            threads == 1 || tasks >= 2,
            "{threads} threads: the blocks ran {tasks} tasks at most"
        );
    }
}

neon_runtime::backend_tests!(
    residual_conv_matches_f64,
    convnext_matches_f64,
    blocks_equal_their_parts,
    same_bits_on_any_team
);

// ---------------------------------------------------------------------------------------
// Facts and errors.
// ---------------------------------------------------------------------------------------

#[test]
fn blocks_are_send_sync_and_state_their_facts() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ResidualConv<Vec<f32>>>();
    send_sync::<ConvNeXt<Vec<f32>>>();
    send_sync::<ConvNeXt<&'static [f32]>>();

    let gr = ResidualConvGeometry::new(5, 3, Activation::Relu);
    let gc = ConvNeXtGeometry::new(5, 20, 7);
    let x = Shape::new(&[5usize, 11]).unwrap();
    assert_eq!(gr.output_shape(&[x]).unwrap(), x);
    assert_eq!(gc.output_shape(&[x]).unwrap(), x);
    assert_eq!((gr.in_place(), gc.in_place()), (InPlace::Never, InPlace::Never));
    assert_eq!((gr.reads_layout(0), gr.writes_layout()), (Some(CF), Some(CF)));
    assert_eq!((gc.reads_layout(0), gc.writes_layout()), (Some(CF), Some(CF)));
    // Scratch: one [C, T] intermediate plus the convs' im2col tile; for ConvNeXt one region
    // of [max(C, E), T] (the depthwise output, then the expansion over it).
    assert_eq!(gr.scratch_len(11), 5 * 11 + 5 * 3 * 11);
    assert_eq!(gc.scratch_len(11), 20 * 11);
    assert_eq!(same_padding(7, 1), (3, 3));
    assert_eq!(same_padding(3, 3), (3, 3));
    assert_eq!(same_padding(4, 1), (1, 2));
    assert_eq!(same_padding(1, 5), (0, 0));
}

#[test]
fn shape_rule_errors_name_the_block() {
    let gr = ResidualConvGeometry::new(5, 3, Activation::Relu);
    let gc = ConvNeXtGeometry::new(5, 20, 7);
    let wrong = Shape::new(&[6usize, 11]).unwrap();
    let dim = |op| ShapeError::Dim { op, arg: 0, axis: 0, what: "channels", expected: 5, got: 6 };
    assert_eq!(gr.output_shape(&[wrong]), Err(dim("residual_conv")));
    assert_eq!(gc.output_shape(&[wrong]), Err(dim("convnext")));
    let rank3 = Shape::new(&[5usize, 2, 2]).unwrap();
    assert!(matches!(gc.output_shape(&[rank3]), Err(ShapeError::Rank { op: "convnext", .. })));
    let geometry = |e: Result<(), ShapeError<usize>>, op: &str| {
        assert!(matches!(e, Err(ShapeError::Geometry { op: o, .. }) if o == op), "{e:?}");
    };
    geometry(ResidualConvGeometry::new(0, 3, Activation::Relu).validate(), "residual_conv");
    geometry(ResidualConvGeometry::new(5, 0, Activation::Relu).validate(), "residual_conv");
    geometry(gr.dilations(1, 0).validate(), "residual_conv");
    let nan_slope = ResidualConvGeometry::new(5, 3, Activation::LeakyRelu { slope: f32::NAN });
    geometry(nan_slope.validate(), "residual_conv");
    geometry(ConvNeXtGeometry::new(0, 20, 7).validate(), "convnext");
    geometry(ConvNeXtGeometry::new(5, 0, 7).validate(), "convnext");
    geometry(ConvNeXtGeometry::new(5, 20, 0).validate(), "convnext");
    for eps in [0.0, -1e-6, f32::NAN, f32::INFINITY] {
        geometry(gc.eps(eps).validate(), "convnext");
    }
}

/// A copy of `good` changed by `edit` (whose result is dropped).
fn edited<W: Clone, R>(good: &W, edit: impl FnOnce(&mut W) -> R) -> W {
    let mut w = good.clone();
    edit(&mut w);
    w
}

#[test]
fn bad_weights_are_errors() {
    let mut r = rng(5);
    let gr = ResidualConvGeometry::new(5, 3, Activation::Relu).kernels(3, 5);
    let good = residual_weights(&mut r, &gr);
    let len = |what, expected, got| Err(Error::Length { what, expected, got });
    let w = edited(&good, |w| w.conv2_weight.pop());
    assert_eq!(ResidualConv::new(gr, w).map(drop), len("conv2_weight", 125, 124));
    let w = edited(&good, |w| w.conv1_bias.push(0.0));
    assert_eq!(ResidualConv::new(gr, w).map(drop), len("conv1_bias", 5, 6));
    let bad = ResidualConvGeometry::new(5, 0, Activation::Relu);
    assert!(matches!(ResidualConv::new(bad, good.clone()), Err(Error::Shape(_))));
    // Parts with another geometry, or without a bias.
    let conv1 = Conv1d::new(gr.conv1(), good.conv1_weight.clone(), None).unwrap();
    let conv2 =
        Conv1d::new(gr.conv2(), good.conv2_weight.clone(), Some(good.conv2_bias.clone())).unwrap();
    assert!(matches!(
        ResidualConv::from_parts(gr, conv1.clone(), conv2.clone()),
        Err(Error::Shape(_))
    ));
    assert!(matches!(ResidualConv::from_parts(gr, conv2.clone(), conv1), Err(Error::Shape(_))));

    let gc = ConvNeXtGeometry::new(5, 15, 7);
    let good = convnext_weights(&mut r, &gc);
    let w = edited(&good, |w| w.gamma.pop());
    assert_eq!(ConvNeXt::new(gc, w).map(drop), len("gamma", 5, 4));
    let w = edited(&good, |w| w.pw1_weight.push(0.0));
    assert_eq!(ConvNeXt::new(gc, w).map(drop), len("pw1_weight", 75, 76));
    let w = edited(&good, |w| w.dw_weight.pop());
    assert_eq!(ConvNeXt::new(gc, w).map(drop), len("dw_weight", 35, 34));
    assert!(matches!(ConvNeXt::new(gc.eps(0.0), good.clone()), Err(Error::Shape(_))));
    // A part built for another block (eps 1e-5 instead of 1e-6).
    let block = ConvNeXt::new(gc, good.clone()).unwrap();
    let other_norm =
        LayerNorm::new(gc.eps(1e-5).norm(), good.norm_weight.clone(), Some(good.norm_bias.clone()))
            .unwrap();
    let parts = ConvNeXt::from_parts(
        gc,
        block.depthwise().clone(),
        other_norm,
        block.pw1().clone(),
        block.pw2().clone(),
        block.layer_scale().clone(),
    );
    assert!(matches!(parts, Err(Error::Shape(ShapeError::Geometry { op: "convnext", .. }))));
}

#[test]
fn bad_calls_are_errors_before_any_write() {
    let mut r = rng(6);
    let gc = ConvNeXtGeometry::new(5, 15, 7);
    let cnx = ConvNeXt::new(gc, convnext_weights(&mut r, &gc)).unwrap();
    let gr = ResidualConvGeometry::new(5, 3, Activation::Relu);
    let res = ResidualConv::new(gr, residual_weights(&mut r, &gr)).unwrap();
    let frames = 9;
    let x = uniform(&mut r, 5 * frames, -1.0, 1.0);
    let x6 = uniform(&mut r, 6 * frames, -1.0, 1.0);
    type Run<'a> = &'a dyn Fn(&TensorView, &mut TensorViewMut, &mut [f32]) -> Result<(), Error>;
    let runs: [(&str, Run, usize); 2] = [
        ("convnext", &|x, y, s| cnx.run::<Portable>(x, y, s), cnx.scratch_len(frames)),
        ("residual_conv", &|x, y, s| res.run::<Portable>(x, y, s), res.scratch_len(frames)),
    ];
    for (op, run, need) in runs {
        let mut y = vec![7.0f32; 5 * frames];
        let mut scratch = vec![0.0; need];
        // Wrong channels in.
        let e = run(&view(&x6, 6, frames), &mut view_mut(&mut y, 5, frames), &mut scratch);
        assert!(
            matches!(e, Err(Error::Shape(ShapeError::Dim { op: o, arg: 0, .. })) if o == op),
            "{e:?}"
        );
        // Frame-major input, or output.
        let fm = TensorView::new(&x, &[frames, 5], Layout::FrameMajor).unwrap();
        assert!(matches!(
            run(&fm, &mut view_mut(&mut y, 5, frames), &mut scratch),
            Err(Error::Layout { .. })
        ));
        let mut fm_out = TensorViewMut::new(&mut y, &[frames, 5], Layout::FrameMajor).unwrap();
        assert!(matches!(
            run(&view(&x, 5, frames), &mut fm_out, &mut scratch),
            Err(Error::Layout { .. })
        ));
        // Output of another length.
        let mut short = vec![7.0f32; 5 * (frames - 1)];
        let e = run(&view(&x, 5, frames), &mut view_mut(&mut short, 5, frames - 1), &mut scratch);
        assert!(matches!(e, Err(Error::Shape(ShapeError::Dim { arg: 1, .. }))), "{e:?}");
        // Short scratch.
        let e = run(&view(&x, 5, frames), &mut view_mut(&mut y, 5, frames), &mut scratch[1..]);
        assert_eq!(e, Err(Error::Length { what: "scratch", expected: need, got: need - 1 }));
        assert!(y.iter().chain(&short).all(|&v| v == 7.0), "{op}: nothing written on error");
        // And the block stays usable.
        run(&view(&x, 5, frames), &mut view_mut(&mut y, 5, frames), &mut scratch).unwrap();
    }
}
