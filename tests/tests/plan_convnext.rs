//! Blocks as plan statements: a residual conv and two ConvNeXt blocks (Liu et al. 2022,
//! over 1-D audio features: depthwise conv k=7 -> LayerNorm over channels -> pointwise up
//! -> GELU -> pointwise down -> layer scale -> + skip), each one `neon_plan!` statement
//! over symbolic frames. The plan must produce exactly what the blocks produce when called
//! directly, and what the runtime's operators produce when called one by one; allocate
//! nothing; give the same bits on a worker team; place each block's scratch in its
//! workspace (shown in the memory map) and stay within 2% of the lower bound.

mod common;

use neon_macros::neon_plan;
use neon_runtime::blocks::{ConvNeXt, ConvNeXtWeights, ResidualConv, ResidualConvWeights};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::elementwise::Add;
use neon_runtime::{Backend, Layout, Portable, RunOptions, Team, TensorView, TensorViewMut};

neon_plan! {
    /// A residual conv (kernel 3, dilations 1 then 3, leaky ReLU 0.1) and two ConvNeXt
    /// blocks (x3 and x4 expansion) over `[32, frames]`.
    pub plan Blocks {
        dim frames in 1..=2000;
        weight res: residual_conv[32, 3];
        weight cn0: convnext[32, 96, 7];
        weight cn1: convnext[32, 128, 7];
        input x: [32, frames];
        output y: [32, frames];

        let h = residual_conv(x, res, dilations = (1, 3), slope = 0.1);
        let h = convnext(h, cn0, eps = 1e-6);
        y = convnext(h, cn1);
    }
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0) * scale).collect()
}

fn convnext_weights(c: usize, e: usize, seed: usize) -> ConvNeXtWeights<Vec<f32>> {
    ConvNeXtWeights {
        dw_weight: values(c * 7, seed, 0.3),
        dw_bias: values(c, seed + 1, 0.1),
        norm_weight: values(c, seed + 2, 0.5).iter().map(|v| 1.0 + v).collect(),
        norm_bias: values(c, seed + 3, 0.1),
        pw1_weight: values(e * c, seed + 4, 0.2),
        pw1_bias: values(e, seed + 5, 0.1),
        pw2_weight: values(c * e, seed + 6, 0.1),
        pw2_bias: values(c, seed + 7, 0.1),
        gamma: values(c, seed + 8, 0.5),
    }
}

fn weights() -> BlocksWeights<Vec<f32>> {
    let res = ResidualConvWeights {
        conv1_weight: values(32 * 32 * 3, 1, 0.1),
        conv1_bias: values(32, 2, 0.1),
        conv2_weight: values(32 * 32 * 3, 3, 0.1),
        conv2_bias: values(32, 4, 0.1),
    };
    BlocksWeights {
        res: ResidualConv::new(Blocks::RES, res).unwrap(),
        cn0: ConvNeXt::new(Blocks::CN0, convnext_weights(32, 96, 10)).unwrap(),
        cn1: ConvNeXt::new(Blocks::CN1, convnext_weights(32, 128, 20)).unwrap(),
    }
}

const CF: Layout = Layout::ChannelFirst;

fn view(d: &[f32], c: usize, frames: usize) -> TensorView<'_> {
    TensorView::new(d, &[c, frames], CF).unwrap()
}

fn view_mut(d: &mut [f32], c: usize, frames: usize) -> TensorViewMut<'_> {
    TensorViewMut::new(d, &[c, frames], CF).unwrap()
}

/// The three blocks called directly, each with its own scratch.
fn blocks_directly<B: Backend>(w: &BlocksWeights<Vec<f32>>, x: &[f32], frames: usize) -> Vec<f32> {
    let mut a = vec![0.0; 32 * frames];
    let mut scratch = vec![0.0; w.res.scratch_len(frames)];
    w.res.run::<B>(&view(x, 32, frames), &mut view_mut(&mut a, 32, frames), &mut scratch).unwrap();
    let mut b = vec![0.0; 32 * frames];
    let mut scratch = vec![0.0; w.cn0.scratch_len(frames)];
    w.cn0.run::<B>(&view(&a, 32, frames), &mut view_mut(&mut b, 32, frames), &mut scratch).unwrap();
    let mut y = vec![0.0; 32 * frames];
    let mut scratch = vec![0.0; w.cn1.scratch_len(frames)];
    w.cn1.run::<B>(&view(&b, 32, frames), &mut view_mut(&mut y, 32, frames), &mut scratch).unwrap();
    y
}

/// A ConvNeXt block's math with the runtime's operators called one by one (the block's
/// parts, each into a buffer of its own).
fn convnext_one_by_one<B: Backend>(blk: &ConvNeXt<Vec<f32>>, x: &[f32], frames: usize) -> Vec<f32> {
    let (c, e) = (blk.geometry().channels, blk.geometry().hidden);
    let mut a = vec![0.0; c * frames];
    blk.depthwise().run::<B>(&view(x, c, frames), &mut view_mut(&mut a, c, frames)).unwrap();
    let mut b = vec![0.0; c * frames];
    blk.norm().run::<B>(&view(&a, c, frames), &mut view_mut(&mut b, c, frames)).unwrap();
    let mut h = vec![0.0; e * frames];
    let mut scratch = vec![0.0; blk.pw1().scratch_len(frames)];
    blk.pw1()
        .run::<B>(&view(&b, c, frames), &mut view_mut(&mut h, e, frames), &mut scratch)
        .unwrap();
    Activation::GeluErf.run_in_place::<B>(&mut view_mut(&mut h, e, frames)).unwrap();
    let mut d = vec![0.0; c * frames];
    let mut scratch = vec![0.0; blk.pw2().scratch_len(frames)];
    blk.pw2()
        .run::<B>(&view(&h, e, frames), &mut view_mut(&mut d, c, frames), &mut scratch)
        .unwrap();
    blk.layer_scale().run_in_place::<B>(&mut view_mut(&mut d, c, frames)).unwrap();
    let mut y = vec![0.0; c * frames];
    Add.run::<B>(&view(&d, c, frames), &view(x, c, frames), &mut view_mut(&mut y, c, frames))
        .unwrap();
    y
}

/// A residual conv's math with the runtime's operators called one by one.
fn residual_one_by_one<B: Backend>(
    blk: &ResidualConv<Vec<f32>>,
    x: &[f32],
    frames: usize,
) -> Vec<f32> {
    let (c, act) = (blk.geometry().channels, blk.geometry().activation);
    let mut a = vec![0.0; c * frames];
    act.run::<B>(&view(x, c, frames), &mut view_mut(&mut a, c, frames)).unwrap();
    let mut h = vec![0.0; c * frames];
    let mut scratch = vec![0.0; blk.conv1().scratch_len(frames)];
    blk.conv1()
        .run::<B>(&view(&a, c, frames), &mut view_mut(&mut h, c, frames), &mut scratch)
        .unwrap();
    act.run_in_place::<B>(&mut view_mut(&mut h, c, frames)).unwrap();
    let mut d = vec![0.0; c * frames];
    let mut scratch = vec![0.0; blk.conv2().scratch_len(frames)];
    blk.conv2()
        .run::<B>(&view(&h, c, frames), &mut view_mut(&mut d, c, frames), &mut scratch)
        .unwrap();
    let mut y = vec![0.0; c * frames];
    Add.run::<B>(&view(&d, c, frames), &view(x, c, frames), &mut view_mut(&mut y, c, frames))
        .unwrap();
    y
}

fn plan_equals_blocks_and_operators<B: Backend>() {
    let w = weights();
    let mut ws = Box::new(BlocksWorkspace::new());
    for frames in [1, 2, 7, 33, 300] {
        let x = values(32 * frames, frames, 1.0);
        let mut y = vec![0.0; 32 * frames];
        Blocks::run::<B, _>(&w, &x, &mut y, frames, &mut ws).unwrap();
        assert_eq!(y, blocks_directly::<B>(&w, &x, frames), "blocks, frames = {frames}");
        let h = residual_one_by_one::<B>(&w.res, &x, frames);
        let h = convnext_one_by_one::<B>(&w.cn0, &h, frames);
        let want = convnext_one_by_one::<B>(&w.cn1, &h, frames);
        assert_eq!(y, want, "operators one by one, frames = {frames}");
    }
}

neon_runtime::backend_tests!(plan_equals_blocks_and_operators);

#[test]
fn memory_map_places_block_scratch() {
    let map = Blocks::MEMORY_MAP;
    let region = |name: &str| *map.iter().find(|r| r.name == name).unwrap();
    let bytes = |elems: usize| elems * 4;
    // Each block's scratch is a workspace value of the size its geometry asks for at the
    // upper bound of `frames`, live during its step only.
    for (name, step, len) in [
        ("residual_conv#scratch0", 0, Blocks::RES.scratch_len(2000)),
        ("convnext#scratch1", 1, Blocks::CN0.scratch_len(2000)),
        ("convnext#scratch2", 2, Blocks::CN1.scratch_len(2000)),
    ] {
        let r = region(name);
        assert_eq!((r.bytes, r.first_step, r.last_step), (bytes(len), step, step), "{name}");
        assert!(r.offset.is_some(), "{name} lives in the workspace");
    }
    // Blocks never run in place: each output is placed apart from its input.
    let overlaps = |a: &str, b: &str| {
        let (a, b) = (region(a), region(b));
        let (oa, ob) = (a.offset.unwrap(), b.offset.unwrap());
        oa < ob + b.bytes && ob < oa + a.bytes
    };
    assert!(!overlaps("h", "h#2"), "convnext's output apart from its input");
    assert!(!overlaps("h#2", "convnext#scratch1"), "scratch apart from the block's output");
    // The planner's target: workspace within 2% of the lower bound (checked at compile time).
    const { assert!(Blocks::WORKSPACE_BYTES * 100 <= Blocks::LOWER_BOUND_BYTES * 102) };
    println!(
        "Blocks: workspace {} bytes, lower bound {} bytes, ratio {:.4}",
        Blocks::WORKSPACE_BYTES,
        Blocks::LOWER_BOUND_BYTES,
        Blocks::WORKSPACE_BYTES as f64 / Blocks::LOWER_BOUND_BYTES as f64
    );
}

#[test]
fn run_allocates_nothing_and_a_team_gives_the_same_bits() {
    let w = weights();
    let mut ws = Box::new(BlocksWorkspace::new());
    let frames = 200;
    let x = values(32 * frames, 3, 1.0);
    let mut y = vec![0.0; 32 * frames];
    common::allocation_free(|| Blocks::run::<Portable, _>(&w, &x, &mut y, frames, &mut ws))
        .unwrap();
    let team = Team::new(3).unwrap();
    let mut y3 = vec![0.0; 32 * frames];
    let options = RunOptions::new().with_parallel(&team);
    Blocks::run_with::<Portable, _>(&w, &x, &mut y3, frames, &mut ws, options).unwrap();
    assert_eq!(y3, y, "3 threads");
}

#[test]
fn a_block_of_another_geometry_is_refused() {
    let mut w = weights();
    w.cn1 = ConvNeXt::new(Blocks::CN1.eps(1e-5), convnext_weights(32, 128, 20)).unwrap();
    let mut ws = Box::new(BlocksWorkspace::new());
    let x = values(32 * 5, 3, 1.0);
    let mut y = vec![0.0; 32 * 5];
    let e = Blocks::run::<Portable, _>(&w, &x, &mut y, 5, &mut ws);
    assert_eq!(e, Err(neon_runtime::Error::Weight { name: "cn1" }));
}
