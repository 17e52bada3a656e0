//! An `ExecutionPlan` run allocates nothing after the first run at given input shapes, on
//! any thread: a process-wide counting allocator (`tests/support/process_alloc.rs`; this
//! test binary holds this one test and no test harness: `harness = false` in Cargo.toml, so
//! no other thread allocates meanwhile).

#[path = "../../tests/support/process_alloc.rs"]
mod process_alloc;

use std::sync::Arc;

use neon_runtime::exec::ExecutionPlan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::elementwise::{Add, Mul};
use neon_runtime::ops::layout::Reshape;
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};
use neon_runtime::{Layout, Portable, TensorView};

fn runs_at_known_shapes_allocate_nothing() {
    // conv (with im2col scratch) -> LayerNorm -> ReLU (in place), a branch through a
    // sigmoid joined by Mul and Add, a final transpose to frame-major; a second input
    // through flatten -> linear.
    let (cin, c, k) = (32, 64, 3);
    let g = Conv1dGeometry::new(cin, c, k).padding(1, 1);
    let conv = Arc::new(Conv1d::new(g, vec![0.01; c * cin * k], Some(vec![0.1; c])).unwrap());
    let ng = LayerNormGeometry { channels: c, eps: 1e-5, bias: true, layout: Layout::ChannelFirst };
    let norm = Arc::new(LayerNorm::new(ng, vec![1.0; c], Some(vec![0.0; c])).unwrap());
    let lg = LinearGeometry { in_features: 4 * 6, out_features: 5, bias: true };
    let lin = Arc::new(Linear::new(lg, vec![0.02; 5 * 24], Some(vec![0.0; 5])).unwrap());

    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(conv, &[x]).unwrap();
    let h = plan.add(norm, &[h]).unwrap();
    let h = plan.add(Activation::Relu, &[h]).unwrap();
    let s = plan.add(Activation::Sigmoid, &[h]).unwrap();
    let m = plan.add(Mul, &[s, h]).unwrap();
    let y = plan.add(Add, &[m, h]).unwrap();
    plan.set_output(y, Layout::FrameMajor).unwrap();
    let e = plan.input();
    let f = plan.add(Reshape::flatten(0, Layout::FrameMajor), &[e]).unwrap();
    let z = plan.add(lin, &[f]).unwrap();
    plan.retain(z).unwrap();

    let long = vec![0.5f32; cin * 300];
    let emb = vec![0.25f32; 4 * 6];
    let ev = TensorView::new(&emb, &[4, 6], Layout::FrameMajor).unwrap();
    let inputs = |frames: usize| {
        let xv = TensorView::new(&long[..cin * frames], &[cin, frames], Layout::ChannelFirst);
        [xv.unwrap(), ev]
    };

    for threads in [1, 3] {
        plan.set_threads(threads).unwrap();
        for frames in [50, 300, 50] {
            let inputs = inputs(frames);
            // The first run at these shapes plans (and may start the team): it allocates
            // (which shows the counter counts). Every following one must not.
            let before = process_alloc::allocated();
            plan.run::<Portable>(&inputs).unwrap();
            assert!(process_alloc::allocated() > before, "the first run at new shapes re-plans");
            let want = plan.run::<Portable>(&inputs).unwrap().data().to_vec();
            let before = process_alloc::allocated();
            for _ in 0..50 {
                let out = plan.run::<Portable>(&inputs).unwrap();
                assert_eq!(out.dims(), &[frames, c]);
                let _ = plan.view(z).unwrap();
            }
            let after = process_alloc::allocated();
            assert_eq!(
                after - before,
                0,
                "allocations in 50 runs ({threads} threads, {frames} frames)"
            );
            assert_eq!(plan.run::<Portable>(&inputs).unwrap().data(), &want[..]);
        }
    }
}

/// `harness = false` (Cargo.toml): the test runs on the main thread with no libtest threads
/// beside it (they allocate at moments of their own, which a process-wide counter would see
/// under load). The last line has `cargo test`'s form for `scripts/qemu_tests.py`.
fn main() {
    runs_at_known_shapes_allocate_nothing();
    process_alloc::report_passed();
}
