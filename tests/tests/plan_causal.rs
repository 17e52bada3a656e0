//! A causal conv plan with caller-owned history: streaming in uneven chunks equals one
//! whole run, and both equal the runtime operators called one by one.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::ops::norm::LayerNorm;
use neon_runtime::{Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// Causal dilated conv over a chunk, with the last 4 frames of history kept in a state.
    pub plan CausalConv {
        dim frames in 1..=512;
        weight conv: f32[8, 4, 3];
        weight conv_b: f32[8];
        weight norm: f32[8];
        input x: [4, frames];
        state history: [4, 4];
        output y: [8, frames];

        let xx = concat_frames(history, x);
        let h = conv1d(xx, conv, conv_b, dilation = 2);
        y = layer_norm(h, norm, eps = 1e-5);
        history = last_frames(xx, frames = 4);
    }
}

fn weights() -> CausalConvWeights<Vec<f32>> {
    let w: Vec<f32> = (0..8 * 4 * 3).map(|i| ((i * 37 % 17) as f32 - 8.0) / 10.0).collect();
    let b: Vec<f32> = (0..8).map(|i| i as f32 / 10.0).collect();
    let g: Vec<f32> = (0..8).map(|i| 1.0 + i as f32 / 8.0).collect();
    CausalConvWeights {
        conv: Conv1d::new(CausalConv::CONV, w, Some(b)).unwrap(),
        norm: LayerNorm::new(CausalConv::NORM, g, None).unwrap(),
    }
}

fn input(frames: usize) -> Vec<f32> {
    (0..4 * frames).map(|i| ((i * 7919 % 101) as f32 - 50.0) / 25.0).collect()
}

/// Runs the plan over `x` in chunks of the given sizes, carrying the history.
fn stream(w: &CausalConvWeights<Vec<f32>>, x: &[f32], frames: usize, chunks: &[usize]) -> Vec<f32> {
    let mut history = vec![0.0f32; 16];
    let mut out = vec![0.0f32; 8 * frames];
    let mut ws = CausalConvWorkspace::new();
    let mut t0 = 0;
    for &n in chunks {
        let chunk: Vec<f32> =
            (0..4).flat_map(|c| x[c * frames + t0..c * frames + t0 + n].to_vec()).collect();
        let mut y = vec![0.0f32; 8 * n];
        CausalConv::run::<Portable, _>(w, &chunk, &mut y, &mut history, n, &mut ws).unwrap();
        for c in 0..8 {
            out[c * frames + t0..c * frames + t0 + n].copy_from_slice(&y[c * n..(c + 1) * n]);
        }
        t0 += n;
    }
    out
}

#[test]
fn streaming_equals_whole_and_ops_one_by_one() {
    let w = weights();
    let frames = 100;
    let x = input(frames);
    let whole = stream(&w, &x, frames, &[frames]);
    let chunked = stream(&w, &x, frames, &[1, 7, 30, 2, 60]);
    assert_eq!(whole, chunked, "streaming in uneven chunks must equal one whole run");

    // The same math with the runtime's operators one by one: zero history + x, conv, norm.
    let mut xx = vec![0.0f32; 4 * (frames + 4)];
    for c in 0..4 {
        xx[c * (frames + 4) + 4..(c + 1) * (frames + 4)]
            .copy_from_slice(&x[c * frames..(c + 1) * frames]);
    }
    let xv = TensorView::new(&xx, &[4, frames + 4], Layout::ChannelFirst).unwrap();
    let mut h = vec![0.0f32; 8 * frames];
    let mut scratch = vec![0.0f32; w.conv.scratch_len(frames + 4)];
    w.conv
        .run::<Portable>(
            &xv,
            &mut TensorViewMut::new(&mut h, &[8, frames], Layout::ChannelFirst).unwrap(),
            &mut scratch,
        )
        .unwrap();
    let hv = TensorView::new(&h, &[8, frames], Layout::ChannelFirst).unwrap();
    let mut y = vec![0.0f32; 8 * frames];
    w.norm
        .run::<Portable>(
            &hv,
            &mut TensorViewMut::new(&mut y, &[8, frames], Layout::ChannelFirst).unwrap(),
        )
        .unwrap();
    assert_eq!(whole, y);
    common::print_memory("CausalConv", CausalConv::WORKSPACE_BYTES, CausalConv::LOWER_BOUND_BYTES);
}

#[test]
fn bad_inputs_are_errors_and_the_plan_stays_usable() {
    let w = weights();
    let mut ws = CausalConvWorkspace::new();
    let mut history = vec![0.0f32; 16];
    let x = input(10);
    let mut y = vec![0.0f32; 80];
    assert!(CausalConv::run::<Portable, _>(&w, &x, &mut y, &mut history, 0, &mut ws).is_err());
    assert!(CausalConv::run::<Portable, _>(&w, &x, &mut y, &mut history, 513, &mut ws).is_err());
    assert!(
        CausalConv::run::<Portable, _>(&w, &x[..39], &mut y, &mut history, 10, &mut ws).is_err()
    );
    assert!(
        CausalConv::run::<Portable, _>(&w, &x, &mut y[..79], &mut history, 10, &mut ws).is_err()
    );
    assert_eq!(history, vec![0.0; 16], "validation happens before any kernel");
    CausalConv::run::<Portable, _>(&w, &x, &mut y, &mut history, 10, &mut ws).unwrap();
}

#[test]
fn run_allocates_nothing() {
    let w = weights();
    let mut ws = Box::new(CausalConvWorkspace::new());
    let mut history = vec![0.0f32; 16];
    let x = input(200);
    let mut y = vec![0.0f32; 8 * 200];
    let (result, allocations) = common::count_allocations(|| {
        CausalConv::run::<Portable, _>(&w, &x, &mut y, &mut history, 200, &mut ws)
    });
    result.unwrap();
    assert_eq!(allocations, 0, "CausalConv::run allocated");
    // An error path allocates nothing either.
    let (result, allocations) = common::count_allocations(|| {
        CausalConv::run::<Portable, _>(&w, &x, &mut y, &mut history, 199, &mut ws)
    });
    assert!(result.is_err());
    assert_eq!(allocations, 0);
}

#[test]
fn allocation_counter_sees_allocations() {
    let (v, n) = common::count_allocations(|| vec![1u8; 10]);
    assert_eq!((v.len(), n), (10, 1));
}
