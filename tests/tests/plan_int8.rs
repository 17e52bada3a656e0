//! Plans with int8 weights: a pre-norm MLP block over frame-major activations, with a
//! per-tensor int8 up-projection (scale and offset, Moonshine's shipped format) and a
//! block-int8 down-projection. Equals the runtime operators one by one; allocates nothing.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::elementwise::Add;
use neon_runtime::ops::norm::LayerNorm;
use neon_runtime::ops::quant::{BlockQ8Linear, QuantLinear};
use neon_runtime::{Backend, Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// x + down(gelu(up(layer_norm(x)))) over `[frames, 64]`.
    pub plan Mlp {
        dim frames in 1..=64;
        weight norm: f32[64];
        weight up: i8[128, 64];
        weight up_b: f32[128];
        weight down: i8_block32[64, 128];
        input x: [frames, 64];
        output y: [frames, 64];

        let h = layer_norm(x, norm, layout = frame_major);
        let h = linear(h, up, up_b);
        let h = gelu(h);
        let h = linear(h, down);
        y = add(h, x);
    }
}

fn int8(n: usize, seed: usize) -> Vec<i8> {
    (0..n).map(|i| ((i * 7919 + seed * 31) % 256) as i32 - 128).map(|v| v as i8).collect()
}

fn weights() -> MlpWeights<Vec<f32>, Vec<i8>> {
    let scales: Vec<f32> = (0..64 * 4).map(|i| 1e-3 * (1 + i % 7) as f32).collect();
    MlpWeights {
        norm: LayerNorm::new(Mlp::NORM, vec![1.0; 64], None).unwrap(),
        up: QuantLinear::new(Mlp::UP, int8(128 * 64, 1), 4e-3, 4e-3 * -17.0, Some(vec![0.01; 128]))
            .unwrap(),
        down: BlockQ8Linear::new(Mlp::DOWN, int8(64 * 128, 2), scales, None).unwrap(),
    }
}

fn reference<B: Backend>(w: &MlpWeights<Vec<f32>, Vec<i8>>, x: &[f32], frames: usize) -> Vec<f32> {
    let fm = Layout::FrameMajor;
    let mut a = vec![0.0; frames * 64];
    let xv = TensorView::new(x, &[frames, 64], fm).unwrap();
    w.norm.run::<B>(&xv, &mut TensorViewMut::new(&mut a, &[frames, 64], fm).unwrap()).unwrap();
    let mut b = vec![0.0; frames * 128];
    let av = TensorView::new(&a, &[frames, 64], fm).unwrap();
    w.up.run::<B>(&av, &mut TensorViewMut::new(&mut b, &[frames, 128], fm).unwrap()).unwrap();
    Activation::GeluErf.apply::<B>(&mut b).unwrap();
    let mut c = vec![0.0; frames * 64];
    let bv = TensorView::new(&b, &[frames, 128], fm).unwrap();
    w.down.run::<B>(&bv, &mut TensorViewMut::new(&mut c, &[frames, 64], fm).unwrap()).unwrap();
    let mut y = vec![0.0; frames * 64];
    let cv = TensorView::new(&c, &[frames, 64], fm).unwrap();
    Add.run::<B>(&cv, &xv, &mut TensorViewMut::new(&mut y, &[frames, 64], fm).unwrap()).unwrap();
    y
}

fn int8_plan_equals_operators_one_by_one<B: Backend>() {
    let w = weights();
    let mut ws = MlpWorkspace::new();
    for frames in [1, 2, 5, 33, 64] {
        let x: Vec<f32> = (0..frames * 64).map(|i| ((i * 37 % 101) as f32 - 50.0) / 30.0).collect();
        let mut y = vec![0.0; frames * 64];
        Mlp::run::<B, _, _>(&w, &x, &mut y, frames, &mut ws).unwrap();
        assert_eq!(y, reference::<B>(&w, &x, frames), "frames = {frames}");
    }
}

neon_runtime::backend_tests!(int8_plan_equals_operators_one_by_one);

#[test]
fn memory() {
    common::print_memory("Mlp", Mlp::WORKSPACE_BYTES, Mlp::LOWER_BOUND_BYTES);
}

#[test]
fn int8_plan_allocates_nothing() {
    let w = weights();
    let mut ws = MlpWorkspace::new();
    let x = vec![0.5f32; 64 * 64];
    let mut y = vec![0.0; 64 * 64];
    common::allocation_free(|| Mlp::run::<Portable, _, _>(&w, &x, &mut y, 64, &mut ws)).unwrap();
}
