//! ExecutionPlan against the operators run one by one: the design's contract example,
//! branches, buffer reuse, layouts, shape changes, invalid inputs, shared operators,
//! retained values, misuse errors and (feature `std`) thread counts.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{ExecutionPlan, Value};
use crate::error::Error;
use crate::ops::activation::Activation;
use crate::ops::conv::{Conv1d, Conv1dGeometry, DepthwiseConv1d, DepthwiseConv1dGeometry};
use crate::ops::elementwise::{Add, Mul};
use crate::ops::layout::{Reshape, Transpose};
use crate::ops::linear::{Linear, LinearGeometry};
use crate::ops::norm::{LayerNorm, LayerNormGeometry, RmsNorm, RmsNormGeometry};
use crate::plan::{self, Location, Schedule, Step};
use crate::tensor::{Layout, TensorView, TensorViewMut};
use crate::Portable;

type P = Portable;
const CF: Layout = Layout::ChannelFirst;
const FM: Layout = Layout::FrameMajor;

fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}

fn uniform(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

fn linear(rng: &mut SmallRng, k: usize, n: usize) -> Arc<Linear<Vec<f32>>> {
    let g = LinearGeometry { in_features: k, out_features: n, bias: true };
    Arc::new(Linear::new(g, uniform(rng, n * k), Some(uniform(rng, n))).unwrap())
}

fn layer_norm(rng: &mut SmallRng, c: usize, layout: Layout) -> Arc<LayerNorm<Vec<f32>>> {
    let g = LayerNormGeometry { channels: c, eps: 1e-5, bias: true, layout };
    Arc::new(LayerNorm::new(g, uniform(rng, c), Some(uniform(rng, c))).unwrap())
}

fn conv(rng: &mut SmallRng, g: Conv1dGeometry) -> Arc<Conv1d<Vec<f32>>> {
    let w = uniform(rng, g.weight_len().unwrap());
    Arc::new(Conv1d::new(g, w, Some(uniform(rng, g.out_channels))).unwrap())
}

/// `[rows, n]` frame-major result of `op` on `x` (`[rows, k]`), run directly.
fn run_linear(op: &Linear<Vec<f32>>, x: &[f32], rows: usize) -> Vec<f32> {
    let g = op.geometry();
    let mut y = vec![0.0; rows * g.out_features];
    let xv = TensorView::new(x, &[rows, g.in_features], FM).unwrap();
    op.run::<P>(&xv, &mut TensorViewMut::new(&mut y, &[rows, g.out_features], FM).unwrap())
        .unwrap();
    y
}

fn run_norm(op: &LayerNorm<Vec<f32>>, x: &[f32], dims: &[usize], layout: Layout) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    let xv = TensorView::new(x, dims, layout).unwrap();
    op.run::<P>(&xv, &mut TensorViewMut::new(&mut y, dims, layout).unwrap()).unwrap();
    y
}

fn act(a: Activation, x: &[f32]) -> Vec<f32> {
    let mut y = x.to_vec();
    a.apply::<P>(&mut y).unwrap();
    y
}

/// `[out_channels, out_frames]` (or frame-major) result of `op` on `[in, frames]`.
fn run_conv(op: &Conv1d<Vec<f32>>, x: &[f32], frames: usize) -> Vec<f32> {
    let g = op.geometry();
    let t = g.output_frames(frames).unwrap();
    let dims = match g.output_layout {
        CF => [g.out_channels, t],
        FM => [t, g.out_channels],
    };
    let mut y = vec![0.0; g.out_channels * t];
    let mut scratch = vec![0.0; op.scratch_len(frames)];
    let xv = TensorView::new(x, &[g.in_channels, frames], CF).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &dims, g.output_layout).unwrap();
    op.run::<P>(&xv, &mut yv, &mut scratch).unwrap();
    y
}

fn transposed(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols).map(|i| x[(i % rows) * cols + i / rows]).collect()
}

#[test]
fn contract_example_identity_conv_frame_major_output() {
    // Conv1d in 2, out 2, kernel 1, identity weights, on [1, 2, 3, 4] as [2 channels, 2
    // frames]: the frame-major output is [1, 3, 2, 4], whether the conv writes frame-major
    // itself (no extra step) or channel-first (a final transpose).
    let x = [1.0, 2.0, 3.0, 4.0];
    for conv_layout in [FM, CF] {
        let g = Conv1dGeometry::new(2, 2, 1).output_layout(conv_layout);
        let op = Conv1d::new(g, vec![1.0, 0.0, 0.0, 1.0], None).unwrap();
        let mut plan = ExecutionPlan::new();
        let input = plan.input();
        let y = plan.add(op, &[input]).unwrap();
        plan.set_output(y, FM).unwrap();
        let out = plan.run::<P>(&[TensorView::new(&x, &[2, 2], CF).unwrap()]).unwrap();
        assert_eq!(out.data(), &[1.0, 3.0, 2.0, 4.0], "conv writes {conv_layout:?}");
        assert_eq!((out.dims(), out.layout()), (&[2, 2][..], FM));
        let transposes = plan.prepared.as_ref().unwrap().transpose.is_some();
        assert_eq!(transposes, conv_layout == CF);
    }
}

#[test]
fn branch_joined_by_add_matches_ops_one_by_one() {
    let mut r = rng(1);
    let (rows, k, n) = (3, 7, 13);
    let (l0, l1, l2) = (linear(&mut r, k, n), linear(&mut r, n, n), linear(&mut r, n, n));
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(l0.clone(), &[x]).unwrap();
    // `h` feeds two branches, so neither may run in place over it.
    let a = plan.add(Activation::Relu, &[h]).unwrap();
    let a = plan.add(l1.clone(), &[a]).unwrap();
    let b = plan.add(Activation::Sigmoid, &[h]).unwrap();
    let b = plan.add(l2.clone(), &[b]).unwrap();
    let s = plan.add(Add, &[a, b]).unwrap();
    let m = plan.add(Mul, &[s, h]).unwrap();
    plan.set_output(m, FM).unwrap();

    let xd = uniform(&mut r, rows * k);
    let h = run_linear(&l0, &xd, rows);
    let a = run_linear(&l1, &act(Activation::Relu, &h), rows);
    let b = run_linear(&l2, &act(Activation::Sigmoid, &h), rows);
    let want: Vec<f32> = a.iter().zip(&b).zip(&h).map(|((a, b), h)| (a + b) * h).collect();
    let out = plan.run::<P>(&[TensorView::new(&xd, &[rows, k], FM).unwrap()]).unwrap();
    assert_eq!(out.data(), &want[..]);
}

#[test]
fn long_chain_reuses_two_buffers_as_the_planner_says() {
    let mut r = rng(2);
    let (rows, c, layers) = (8, 64, 12);
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let mut h = x;
    let mut ops = Vec::new();
    for _ in 0..layers {
        let l = linear(&mut r, c, c);
        h = plan.add(l.clone(), &[h]).unwrap();
        h = plan.add(Activation::Relu, &[h]).unwrap();
        ops.push(l);
    }
    plan.set_output(h, FM).unwrap();
    let xd = uniform(&mut r, rows * c);
    let out = plan.run::<P>(&[TensorView::new(&xd, &[rows, c], FM).unwrap()]).unwrap();
    let out_ptr = out.data().as_ptr() as usize;
    let mut want = xd.clone();
    for l in &ops {
        want = act(Activation::Relu, &run_linear(l, &want, rows));
    }
    assert_eq!(out.data(), &want[..]);

    // The same schedule by hand, planned directly: the plan's workspace is that result.
    let bytes = rows * c * 4;
    let mut values = vec![plan::Value { bytes, location: Location::External }];
    let mut steps = Vec::new();
    for s in 0..2 * layers {
        values.push(plan::Value { bytes, location: Location::Workspace });
        steps.push(Step { inputs: vec![s], output: s + 1, in_place: s % 2 == 1, temps: vec![] });
    }
    let direct = plan::plan(&Schedule { values, steps }).unwrap();
    let mp = plan.memory_plan().unwrap();
    assert_eq!(plan.workspace_bytes(), direct.workspace_bytes);
    // Each ReLU runs in place; each linear needs its input and output: two buffers, the
    // lower bound, against 24 values of 2 KiB.
    assert_eq!(mp.workspace_bytes, 2 * bytes);
    assert_eq!(mp.workspace_bytes, mp.lower_bound_bytes);
    assert!(mp.workspace_bytes * 10 < 2 * layers * bytes);
    assert_eq!(plan.workspace.len(), 2 * bytes / 4 + super::SLACK);
    assert_eq!(out_ptr % 16, 0, "the workspace starts on a 16-byte boundary");
}

#[test]
fn layouts_transpose_only_when_needed_and_mismatches_fail_before_dispatch() {
    let mut r = rng(3);
    let (cin, cout, frames) = (3, 5, 7);
    let g = Conv1dGeometry::new(cin, cout, 3).padding(1, 1);
    let xd = uniform(&mut r, cin * frames);
    let x = TensorView::new(&xd, &[cin, frames], CF).unwrap();
    for conv_layout in [CF, FM] {
        let op = conv(&mut r, g.output_layout(conv_layout));
        let direct = run_conv(&op, &xd, frames);
        for out_layout in [CF, FM] {
            let mut plan = ExecutionPlan::new();
            let input = plan.input();
            let y = plan.add(op.clone(), &[input]).unwrap();
            let y = plan.add(Activation::Tanh, &[y]).unwrap();
            plan.set_output(y, out_layout).unwrap();
            let out = plan.run::<P>(&[x]).unwrap();
            let mut want = act(Activation::Tanh, &direct);
            if conv_layout != out_layout {
                want = match conv_layout {
                    CF => transposed(&want, cout, frames),
                    FM => transposed(&want, frames, cout),
                };
            }
            assert_eq!(out.data(), &want[..], "{conv_layout:?} -> {out_layout:?}");
            assert_eq!(out.layout(), out_layout);
        }
    }
    // A linear layer reads frame-major: a channel-first input fails before any kernel.
    let mut plan = ExecutionPlan::new();
    let input = plan.input();
    let y = plan.add(linear(&mut r, cin, 4), &[input]).unwrap();
    plan.set_output(y, FM).unwrap();
    let err = plan.run::<P>(&[TensorView::new(&xd, &[frames, cin], CF).unwrap()]).unwrap_err();
    assert!(matches!(err, Error::Layout { op: "linear", .. }), "{err:?}");
    // Add of two layouts: refused too; a transpose step makes it right.
    let mut plan = ExecutionPlan::new();
    let (a, b) = (plan.input(), plan.input());
    let s = plan.add(Add, &[a, b]).unwrap();
    plan.set_output(s, CF).unwrap();
    let other = TensorView::new(&xd, &[cin, frames], FM).unwrap();
    let err = plan.run::<P>(&[x, other]).unwrap_err();
    assert!(matches!(err, Error::Layout { op: "add", .. }), "{err:?}");
    let mut plan = ExecutionPlan::new();
    let (a, b) = (plan.input(), plan.input());
    let bt = plan.add(Transpose::new(CF), &[b]).unwrap();
    let s = plan.add(Add, &[a, bt]).unwrap();
    plan.set_output(s, CF).unwrap();
    let td = transposed(&xd, cin, frames);
    let out = plan.run::<P>(&[x, TensorView::new(&td, &[frames, cin], FM).unwrap()]).unwrap();
    let want: Vec<f32> = xd.iter().map(|a| a + a).collect();
    assert_eq!(out.data(), &want[..]);
}

#[test]
fn shape_changes_replan_and_stay_correct() {
    let mut r = rng(4);
    let (cin, c) = (4, 6);
    let op = conv(&mut r, Conv1dGeometry::new(cin, c, 3).padding(2, 0));
    let norm = layer_norm(&mut r, c, CF);
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(op.clone(), &[x]).unwrap();
    let h = plan.add(norm.clone(), &[h]).unwrap();
    let h = plan.add(Activation::GeluErf, &[h]).unwrap();
    plan.set_output(h, CF).unwrap();
    for frames in [5, 9, 5, 300, 9] {
        let xd = uniform(&mut r, cin * frames);
        let out = plan.run::<P>(&[TensorView::new(&xd, &[cin, frames], CF).unwrap()]).unwrap();
        let t = frames; // padding (2, 0) with kernel 3 keeps the length
        let h = run_norm(&norm, &run_conv(&op, &xd, frames), &[c, t], CF);
        assert_eq!(out.data(), &act(Activation::GeluErf, &h)[..], "frames {frames}");
        assert_eq!(out.dims(), &[c, t]);
    }
    // The workspace grew for 300 frames and did not shrink afterwards.
    assert!(plan.workspace.len() * 4 >= 300 * c * 4);
    assert!(plan.workspace_bytes() < plan.workspace.len() * 4);
}

#[test]
fn invalid_inputs_fail_before_any_kernel_and_the_plan_stays_usable() {
    let mut r = rng(5);
    let (cin, c) = (3, 4);
    let op = conv(&mut r, Conv1dGeometry::new(cin, c, 2));
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(op.clone(), &[x]).unwrap();
    let h = plan.add(Activation::Relu, &[h]).unwrap();
    plan.set_output(h, CF).unwrap();
    let good = uniform(&mut r, cin * 6);
    let want = act(Activation::Relu, &run_conv(&op, &good, 6));
    let gv = TensorView::new(&good, &[cin, 6], CF).unwrap();
    assert_eq!(plan.run::<P>(&[gv]).unwrap().data(), &want[..]);
    let workspace = plan.workspace.clone();

    let rank3 = TensorView::new(&good, &[cin, 2, 3], CF).unwrap();
    let channels = TensorView::new(&good, &[6, cin], CF).unwrap();
    let short = TensorView::new(&good[..cin], &[cin, 1], CF).unwrap();
    let layout = TensorView::new(&good, &[cin, 6], FM).unwrap();
    let cases: [(&[TensorView], &str); 6] = [
        (&[rank3], "rank"),
        (&[channels], "channels"),
        (&[short], "too short"),
        (&[layout], "layout"),
        (&[], "no input"),
        (&[gv, gv], "two inputs"),
    ];
    for (inputs, what) in cases {
        let err = plan.run::<P>(inputs).unwrap_err();
        match what {
            "rank" | "channels" | "too short" => assert!(matches!(err, Error::Shape(_)), "{err}"),
            "layout" => assert!(matches!(err, Error::Layout { .. }), "{err}"),
            _ => assert!(matches!(err, Error::Length { what: "plan inputs", .. }), "{err}"),
        }
        // No kernel ran: the workspace is as the good run left it; views are refused.
        assert_eq!(plan.workspace, workspace, "{what}");
        assert!(matches!(plan.view(h), Err(Error::Plan { .. })));
    }
    assert_eq!(plan.run::<P>(&[gv]).unwrap().data(), &want[..]);
    assert_eq!(plan.view(h).unwrap().data(), &want[..]);
}

#[test]
fn plans_sharing_operators_give_identical_results() {
    let mut r = rng(6);
    let (rows, k, n) = (5, 19, 11);
    let (l0, norm, l1) = (linear(&mut r, k, n), layer_norm(&mut r, n, FM), linear(&mut r, n, 3));
    let build = || {
        let mut plan = ExecutionPlan::new();
        let x = plan.input();
        let h = plan.add(l0.clone(), &[x]).unwrap();
        let h = plan.add(norm.clone(), &[h]).unwrap();
        let h = plan.add(Activation::Relu, &[h]).unwrap();
        let y = plan.add(l1.clone(), &[h]).unwrap();
        plan.set_output(y, FM).unwrap();
        plan
    };
    let (mut p1, mut p2) = (build(), build());
    assert_eq!(Arc::strong_count(&l0), 3);
    let xd = uniform(&mut r, rows * k);
    let xv = TensorView::new(&xd, &[rows, k], FM).unwrap();
    let a = p1.run::<P>(&[xv]).unwrap().data().to_vec();
    let b = p2.run::<P>(&[xv]).unwrap().data().to_vec();
    assert_eq!(a, b);
    let h = act(Activation::Relu, &run_norm(&norm, &run_linear(&l0, &xd, rows), &[rows, n], FM));
    assert_eq!(a, run_linear(&l1, &h, rows));
}

#[test]
fn retained_values_read_as_the_ops_one_by_one() {
    let mut r = rng(7);
    let (rows, k, n) = (4, 6, 9);
    let (l0, l1) = (linear(&mut r, k, n), linear(&mut r, n, n));
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h0 = plan.add(l0.clone(), &[x]).unwrap();
    let a = plan.add(Activation::Sigmoid, &[h0]).unwrap();
    let h1 = plan.add(l1.clone(), &[a]).unwrap();
    let y = plan.add(Activation::Relu, &[h1]).unwrap();
    plan.set_output(y, FM).unwrap();
    plan.retain(h0).unwrap();
    plan.retain(a).unwrap();
    let xd = uniform(&mut r, rows * k);
    plan.run::<P>(&[TensorView::new(&xd, &[rows, k], FM).unwrap()]).unwrap();
    let w0 = run_linear(&l0, &xd, rows);
    let wa = act(Activation::Sigmoid, &w0);
    let wy = act(Activation::Relu, &run_linear(&l1, &wa, rows));
    // Retained, the sigmoid did not run in place over h0.
    assert_eq!(plan.view(h0).unwrap().data(), &w0[..]);
    assert_eq!(plan.view(a).unwrap().data(), &wa[..]);
    assert_eq!(plan.view(y).unwrap().data(), &wy[..]);
    assert!(matches!(plan.view(h1), Err(Error::Plan { .. })));
}

#[test]
fn flatten_and_reshape_run_in_place_on_workspace_values() {
    let mut r = rng(8);
    let (frames, c, h) = (4, 6, 3);
    let (l0, l1) = (linear(&mut r, c, c), linear(&mut r, frames * c, h));
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    // A flatten of the borrowed input copies; of a workspace value, it is a no-op in place.
    let flat_in = plan.add(Reshape::flatten(0, FM), &[x]).unwrap();
    let back = plan.add(Reshape::to_dims(&[frames, c], FM).unwrap(), &[flat_in]).unwrap();
    let e = plan.add(l0.clone(), &[back]).unwrap();
    let flat = plan.add(Reshape::flatten(0, FM), &[e]).unwrap();
    let s = plan.add(l1.clone(), &[flat]).unwrap();
    let s = plan.add(Activation::Sigmoid, &[s]).unwrap();
    plan.set_output(s, FM).unwrap();
    let xd = uniform(&mut r, frames * c);
    let out = plan.run::<P>(&[TensorView::new(&xd, &[frames, c], FM).unwrap()]).unwrap();
    let e = run_linear(&l0, &xd, frames);
    let want = act(Activation::Sigmoid, &run_linear(&l1, &e, 1));
    assert_eq!((out.data(), out.dims()), (&want[..], &[1, h][..]));
    let p = plan.prepared.as_ref().unwrap();
    let in_place: Vec<bool> = p.steps.iter().map(|s| s.in_place).collect();
    assert_eq!(in_place, [false, true, false, true, false, true]);
    // A reshape to another element count is a shape error.
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let y = plan.add(Reshape::to_dims(&[5], FM).unwrap(), &[x]).unwrap();
    plan.set_output(y, FM).unwrap();
    let err = plan.run::<P>(&[TensorView::new(&xd, &[frames, c], FM).unwrap()]).unwrap_err();
    assert!(matches!(err, Error::Shape(_)), "{err}");
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let mut r = rng(9);
    let mut plan = ExecutionPlan::new();
    let mut other = ExecutionPlan::new();
    let x = plan.input();
    let foreign: Value = other.input();
    assert!(matches!(plan.add(Activation::Relu, &[foreign]), Err(Error::Plan { .. })));
    assert!(matches!(plan.add(Add, &[x]), Err(Error::Shape(_))));
    assert!(matches!(plan.add(Activation::Relu, &[x, x]), Err(Error::Shape(_))));
    assert!(matches!(plan.set_output(x, CF), Err(Error::Plan { .. })));
    assert!(matches!(plan.retain(x), Err(Error::Plan { .. })));
    let xd = uniform(&mut r, 8);
    let xv = TensorView::new(&xd, &[2, 4], CF).unwrap();
    assert!(matches!(plan.run::<P>(&[xv]), Err(Error::Plan { .. })));
    let y = plan.add(Activation::Relu, &[x]).unwrap();
    assert!(matches!(plan.view(y), Err(Error::Plan { .. })));
    plan.set_output(y, CF).unwrap();
    let _ = other.add(Activation::Exp, &[foreign]).unwrap();
    assert_eq!(plan.run::<P>(&[xv]).unwrap().data(), &act(Activation::Relu, &xd)[..]);
    // A change to the plan makes earlier views stale.
    let z = plan.add(Activation::Relu, &[y]).unwrap();
    assert!(matches!(plan.view(y), Err(Error::Plan { .. })));
    let _ = z;
    assert_eq!(plan.steps(), 2);
}

#[test]
fn depthwise_conv_and_rms_norm_steps() {
    let mut r = rng(11);
    let (c, frames) = (5, 12);
    let dg = DepthwiseConv1dGeometry::new(c, 7).causal();
    let dw = Arc::new(
        DepthwiseConv1d::new(dg, uniform(&mut r, c * 7), Some(uniform(&mut r, c))).unwrap(),
    );
    let rg = RmsNormGeometry { channels: c, eps: 1e-6, layout: CF };
    let rms = Arc::new(RmsNorm::new(rg, uniform(&mut r, c)).unwrap());
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(dw.clone(), &[x]).unwrap();
    let h = plan.add(rms.clone(), &[h]).unwrap();
    let y = plan.add(Add, &[h, x]).unwrap();
    plan.set_output(y, FM).unwrap();
    let xd = uniform(&mut r, c * frames);
    let xv = TensorView::new(&xd, &[c, frames], CF).unwrap();
    let out = plan.run::<P>(&[xv]).unwrap();
    let mut h = vec![0.0; c * frames];
    dw.run::<P>(&xv, &mut TensorViewMut::new(&mut h, &[c, frames], CF).unwrap()).unwrap();
    let mut g = vec![0.0; c * frames];
    let hv = TensorView::new(&h, &[c, frames], CF).unwrap();
    rms.run::<P>(&hv, &mut TensorViewMut::new(&mut g, &[c, frames], CF).unwrap()).unwrap();
    let sum: Vec<f32> = g.iter().zip(&xd).map(|(a, b)| a + b).collect();
    assert_eq!(out.data(), &transposed(&sum, c, frames)[..]);
}

#[cfg(feature = "std")]
#[test]
fn plans_sharing_operators_run_concurrently() {
    let mut r = rng(12);
    let (rows, k, n) = (6, 33, 17);
    let (l0, l1) = (linear(&mut r, k, n), linear(&mut r, n, 2));
    let xd = uniform(&mut r, rows * k);
    let want = run_linear(&l1, &act(Activation::Silu, &run_linear(&l0, &xd, rows)), rows);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let (l0, l1, xd, want) = (l0.clone(), l1.clone(), &xd, &want);
            scope.spawn(move || {
                let mut plan = ExecutionPlan::new();
                let x = plan.input();
                let h = plan.add(l0, &[x]).unwrap();
                let h = plan.add(Activation::Silu, &[h]).unwrap();
                let y = plan.add(l1, &[h]).unwrap();
                plan.set_output(y, FM).unwrap();
                for _ in 0..20 {
                    let xv = TensorView::new(xd, &[rows, k], FM).unwrap();
                    assert_eq!(plan.run::<P>(&[xv]).unwrap().data(), &want[..]);
                }
            });
        }
    });
}

#[test]
fn plans_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<ExecutionPlan>();
    check::<super::Op>();
}

#[cfg(feature = "std")]
#[test]
fn thread_counts_give_the_same_bits() {
    let mut r = rng(10);
    let (rows, k, n, cin, frames) = (64, 96, 256, 24, 300);
    let l0 = linear(&mut r, k, n);
    let l1 = linear(&mut r, n, k);
    let op = conv(&mut r, Conv1dGeometry::new(cin, 64, 5).padding(2, 2));
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(l0, &[x]).unwrap();
    let h = plan.add(Activation::GeluTanh, &[h]).unwrap();
    let y = plan.add(l1, &[h]).unwrap();
    let s = plan.input();
    let c = plan.add(op, &[s]).unwrap();
    let c = plan.add(Activation::Silu, &[c]).unwrap();
    plan.set_output(y, FM).unwrap();
    plan.retain(c).unwrap();
    let xd = uniform(&mut r, rows * k);
    let sd = uniform(&mut r, cin * frames);
    let inputs = [
        TensorView::new(&xd, &[rows, k], FM).unwrap(),
        TensorView::new(&sd, &[cin, frames], CF).unwrap(),
    ];
    let mut results = Vec::new();
    for threads in [1, 2, 3, 1, 3] {
        plan.set_threads(threads).unwrap();
        let y = plan.run::<P>(&inputs).unwrap().data().to_vec();
        assert_eq!(plan.team.as_ref().map_or(1, crate::team::Team::threads), threads);
        results.push((y, plan.view(c).unwrap().data().to_vec()));
    }
    assert!(results.iter().all(|r| *r == results[0]));
    assert!(matches!(plan.set_threads(0), Err(Error::Team(_))));
}
