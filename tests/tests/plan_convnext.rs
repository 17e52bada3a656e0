//! A ConvNeXt block (Liu et al. 2022, as used over 1-D audio features) as a plan over
//! symbolic frames: depthwise conv k=7 -> LayerNorm over channels -> pointwise up x4 ->
//! GELU -> pointwise down -> layer scale -> + skip. The plan must produce exactly what the
//! runtime's operators produce when called one by one, allocate nothing, and keep its
//! in-place chain in one buffer.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::{Conv1d, DepthwiseConv1d};
use neon_runtime::ops::elementwise::{Add, LayerScale};
use neon_runtime::ops::norm::LayerNorm;
use neon_runtime::{Backend, Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// One ConvNeXt block over `[32, frames]`.
    pub plan ConvNext {
        dim frames in 1..=2000;
        weight dw: f32[32, 1, 7];
        weight dw_b: f32[32];
        weight norm: f32[32];
        weight norm_b: f32[32];
        weight up: f32[128, 32, 1];
        weight up_b: f32[128];
        weight down: f32[32, 128, 1];
        weight down_b: f32[32];
        weight gamma: f32[32];
        input x: [32, frames];
        output y: [32, frames];

        let h = depthwise_conv1d(x, dw, dw_b, padding = (3, 3));
        let h = layer_norm(h, norm, norm_b, eps = 1e-6);
        let h = conv1d(h, up, up_b);
        let h = gelu(h);
        let h = conv1d(h, down, down_b);
        let h = layer_scale(h, gamma);
        y = add(h, x);
    }
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0) * scale).collect()
}

fn weights() -> ConvNextWeights<Vec<f32>> {
    ConvNextWeights {
        dw: DepthwiseConv1d::new(ConvNext::DW, values(32 * 7, 1, 0.3), Some(values(32, 2, 0.1)))
            .unwrap(),
        norm: LayerNorm::new(
            ConvNext::NORM,
            values(32, 3, 0.5).iter().map(|v| 1.0 + v).collect(),
            Some(values(32, 4, 0.1)),
        )
        .unwrap(),
        up: Conv1d::new(ConvNext::UP, values(128 * 32, 5, 0.2), Some(values(128, 6, 0.1))).unwrap(),
        down: Conv1d::new(ConvNext::DOWN, values(32 * 128, 7, 0.1), Some(values(32, 8, 0.1)))
            .unwrap(),
        gamma: LayerScale::new(ConvNext::GAMMA, values(32, 9, 0.5)).unwrap(),
    }
}

/// The same math with the runtime's operators called one by one.
fn reference<B: Backend>(w: &ConvNextWeights<Vec<f32>>, x: &[f32], frames: usize) -> Vec<f32> {
    let cf = Layout::ChannelFirst;
    fn view(d: &[f32], c: usize, frames: usize) -> TensorView<'_> {
        TensorView::new(d, &[c, frames], Layout::ChannelFirst).unwrap()
    }
    let mut a = vec![0.0; 32 * frames];
    w.dw.run::<B>(
        &view(x, 32, frames),
        &mut TensorViewMut::new(&mut a, &[32, frames], cf).unwrap(),
    )
    .unwrap();
    let mut b = vec![0.0; 32 * frames];
    w.norm
        .run::<B>(
            &view(&a, 32, frames),
            &mut TensorViewMut::new(&mut b, &[32, frames], cf).unwrap(),
        )
        .unwrap();
    let mut c = vec![0.0; 128 * frames];
    let mut scratch = vec![0.0; w.up.scratch_len(frames)];
    w.up.run::<B>(
        &view(&b, 32, frames),
        &mut TensorViewMut::new(&mut c, &[128, frames], cf).unwrap(),
        &mut scratch,
    )
    .unwrap();
    Activation::GeluErf
        .run_in_place::<B>(&mut TensorViewMut::new(&mut c, &[128, frames], cf).unwrap())
        .unwrap();
    let mut d = vec![0.0; 32 * frames];
    let mut scratch = vec![0.0; w.down.scratch_len(frames)];
    w.down
        .run::<B>(
            &view(&c, 128, frames),
            &mut TensorViewMut::new(&mut d, &[32, frames], cf).unwrap(),
            &mut scratch,
        )
        .unwrap();
    w.gamma.run_in_place::<B>(&mut TensorViewMut::new(&mut d, &[32, frames], cf).unwrap()).unwrap();
    let mut y = vec![0.0; 32 * frames];
    Add.run::<B>(
        &view(&d, 32, frames),
        &view(x, 32, frames),
        &mut TensorViewMut::new(&mut y, &[32, frames], cf).unwrap(),
    )
    .unwrap();
    y
}

fn plan_equals_operators_one_by_one<B: Backend>() {
    let w = weights();
    let mut ws = Box::new(ConvNextWorkspace::new());
    for frames in [1, 2, 7, 33, 100, 2000] {
        let x = values(32 * frames, frames, 1.0);
        let mut y = vec![0.0; 32 * frames];
        ConvNext::run::<B, _>(&w, &x, &mut y, frames, &mut ws).unwrap();
        assert_eq!(y, reference::<B>(&w, &x, frames), "frames = {frames}");
    }
}

neon_runtime::backend_tests!(plan_equals_operators_one_by_one);

#[test]
fn in_place_chain_and_memory() {
    let map = ConvNext::MEMORY_MAP;
    let region = |name: &str| map.iter().find(|r| r.name == name).unwrap();
    // GELU and the layer scale run in place over the buffers they read.
    assert_eq!(region("h#4").offset, region("h#3").offset, "gelu in place");
    assert_eq!(region("h#6").offset, region("h#5").offset, "layer scale in place");
    // The planner's target: workspace within 2% of the lower bound (checked at compile time).
    const { assert!(ConvNext::WORKSPACE_BYTES * 100 <= ConvNext::LOWER_BOUND_BYTES * 102) };
    println!(
        "ConvNext: workspace {} bytes, lower bound {} bytes, ratio {:.4}",
        ConvNext::WORKSPACE_BYTES,
        ConvNext::LOWER_BOUND_BYTES,
        ConvNext::WORKSPACE_BYTES as f64 / ConvNext::LOWER_BOUND_BYTES as f64
    );
}

#[test]
fn run_allocates_nothing() {
    let w = weights();
    let mut ws = Box::new(ConvNextWorkspace::new());
    let x = values(32 * 500, 3, 1.0);
    let mut y = vec![0.0; 32 * 500];
    common::allocation_free(|| ConvNext::run::<Portable, _>(&w, &x, &mut y, 500, &mut ws)).unwrap();
}
