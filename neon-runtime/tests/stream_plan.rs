//! `exec::stream::StreamPlan` on a small hand-built streaming graph of microWakeWord's form:
//! a state `[1, 2, 1, 4]` read and concatenated with 3 new frames along time, a depthwise
//! conv (kernel 5 x 1, VALID) over the 5 rows, the newest 2 rows sliced off and assigned
//! back; then the channels split and concatenated in swapped order, a 1 x 1 conv, a reshape,
//! fully connected, LOGISTIC (table) and QUANTIZE to u8. Over 20 steps it equals the same
//! operators called directly with a state carried by hand; `reset` equals a fresh state; two
//! states on one plan are independent; `run` allocates nothing (per-thread counter); bad
//! input and mismatched steps are errors at run or at build.

#[path = "../../tests/tests/common/mod.rs"]
mod thread_alloc;

use neon_runtime::exec::stream::{
    ElemType, StreamOp, StreamPlan, StreamPlanBuilder, StreamValue, StreamVar,
};
use neon_runtime::kernels::int8::{
    AffineQuant, ConvGeometry, DepthwiseGeometry, FcGeometry, Int8Kernels, OutputStage, Padding,
    QuantizedMultiplier, Rounding, Window2d,
};
use neon_runtime::ops::int8::{
    Conv2dI8, DepthwiseI8, DequantizeI8F32, FullyConnectedI8, Int8Params, LogisticI8,
    OwnedInt8Params, QuantizeF32I8, RequantizeI8U8,
};
use neon_runtime::{backend_tests, Error, Portable};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Channels, state rows, new rows, FC outputs.
const C: usize = 4;
const T: usize = 2;
const NEW: usize = 3;
const OUT: usize = 3;
/// Depthwise kernel rows: the kernel spans the state and the new rows (one output row, VALID).
const K: usize = T + NEW;

/// The graph's operators.
struct Ops {
    dw: DepthwiseI8<OwnedInt8Params>,
    conv: Conv2dI8<OwnedInt8Params>,
    fc: FullyConnectedI8<OwnedInt8Params>,
    logistic: LogisticI8,
    to_u8: RequantizeI8U8,
}

fn codes(r: &mut SmallRng, n: usize) -> Vec<i8> {
    (0..n).map(|_| r.gen_range(-128..=127)).collect()
}

fn multipliers(r: &mut SmallRng, n: usize) -> Vec<QuantizedMultiplier> {
    (0..n).map(|_| QuantizedMultiplier::from_real(r.gen_range(1e-3..2e-2)).unwrap()).collect()
}

fn window(height: usize, kernel_h: usize, padding: Padding) -> Window2d {
    Window2d::with_padding(C, [height, 1], [kernel_h, 1], [1, 1], [1, 1], padding).unwrap()
}

fn ops() -> Ops {
    let mut r = SmallRng::seed_from_u64(39);
    let relu = OutputStage {
        zero_point: -128,
        act_min: -128,
        act_max: 127,
        rounding: Rounding::AwayFromZero,
    };
    let none = OutputStage::int8(3, Rounding::HalfUp);
    let g = DepthwiseGeometry { window: window(T + NEW, K, Padding::Valid), depth_multiplier: 1 };
    let p = Int8Params {
        filter: codes(&mut r, K * C),
        bias: Some((0..C).map(|_| r.gen_range(-2000..2000)).collect()),
        multipliers: multipliers(&mut r, C),
    };
    let dw = DepthwiseI8::new(g, p, -128, none).unwrap();
    let g = ConvGeometry { window: window(1, 1, Padding::Same), out_channels: C };
    let p = Int8Params {
        filter: codes(&mut r, C * C),
        bias: Some((0..C).map(|_| r.gen_range(-2000..2000)).collect()),
        multipliers: multipliers(&mut r, C),
    };
    let conv = Conv2dI8::new(g, p, 3, relu).unwrap();
    let g = FcGeometry { rows: 1, in_features: C, out_features: OUT };
    let p = Int8Params {
        filter: codes(&mut r, OUT * C),
        bias: Some((0..OUT).map(|_| r.gen_range(-2000..2000)).collect()),
        multipliers: multipliers(&mut r, 1),
    };
    let fc =
        FullyConnectedI8::new(g, p, -128, OutputStage::int8(-5, Rounding::AwayFromZero)).unwrap();
    let mut lut = [0i8; 256];
    for (i, e) in lut.iter_mut().enumerate() {
        // A monotone table (the values matter only for equality).
        *e = ((i as i32 * 3 / 4) - 128) as i8;
    }
    let u8_stage =
        OutputStage { zero_point: 0, act_min: 0, act_max: 255, rounding: Rounding::AwayFromZero };
    let to_u8 =
        RequantizeI8U8::new(-128, QuantizedMultiplier::from_real(1.0).unwrap(), u8_stage).unwrap();
    Ops { dw, conv, fc, logistic: LogisticI8::new(lut), to_u8 }
}

/// The initial state: -128 (the zero point) but for a few rows, so reset is visible.
fn init() -> Vec<i8> {
    (0..T * C).map(|i| if i % 3 == 0 { -128 } else { i as i8 * 5 }).collect()
}

/// The plan of the graph.
fn plan() -> StreamPlan {
    let o = ops();
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[1, NEW, 1, C]).unwrap();
    let v = b.variable::<i8>(&[1, T, 1, C], &init()).unwrap();
    let s = b.read(v).unwrap();
    let c = b.concat(&[s, x], 1).unwrap();
    let d = b.op(StreamOp::Depthwise(o.dw), c).unwrap();
    let newest = b.slice_last(c, 1, T).unwrap();
    b.assign(v, newest).unwrap();
    let halves = b.split(d, 3, &[C / 2, C / 2]).unwrap();
    let swapped = b.concat(&[halves[1], halves[0]], 3).unwrap();
    let h = b.op(StreamOp::Conv2d(o.conv), swapped).unwrap();
    let h = b.reshape(h, &[1, C]).unwrap();
    let h = b.op(StreamOp::FullyConnected(o.fc), h).unwrap();
    let h = b.op(StreamOp::Logistic(o.logistic), h).unwrap();
    let y = b.op(StreamOp::RequantizeU8(o.to_u8), h).unwrap();
    b.build(y).unwrap()
}

/// One step of the graph with the operators called directly; `state` carried by hand.
fn reference<B: Int8Kernels>(o: &Ops, state: &mut [i8], x: &[i8]) -> Vec<u8> {
    let c: Vec<i8> = state.iter().chain(x).copied().collect(); // [1, T + NEW, 1, C]
    let mut d = vec![0i8; C];
    o.dw.run::<B>(&c, &mut d).unwrap();
    state.copy_from_slice(&c[NEW * C..]);
    let swapped: Vec<i8> = d[C / 2..].iter().chain(&d[..C / 2]).copied().collect();
    let mut h = vec![0i8; C];
    o.conv.run::<B>(&swapped, &mut h).unwrap();
    let mut f = vec![0i8; OUT];
    o.fc.run::<B>(&h, &mut f).unwrap();
    let mut l = vec![0i8; OUT];
    o.logistic.run::<B>(&f, &mut l).unwrap();
    let mut y = vec![0u8; OUT];
    o.to_u8.run::<B>(&l, &mut y).unwrap();
    y
}

fn frames(steps: usize) -> Vec<Vec<i8>> {
    let mut r = SmallRng::seed_from_u64(7);
    (0..steps).map(|_| codes(&mut r, NEW * C)).collect()
}

fn equals_direct_ops<B: Int8Kernels>() {
    let plan = plan();
    let o = ops();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let mut carried = init();
    for (k, x) in frames(20).iter().enumerate() {
        let want = reference::<B>(&o, &mut carried, x);
        let got = plan.run::<B, i8, u8>(&mut state, &mut scratch, x).unwrap();
        assert_eq!(got, &want[..], "step {k}");
    }
    assert_eq!(plan.output(), (ElemType::U8, &[1, OUT][..]));
    assert_eq!(plan.input(), (ElemType::I8, &[1, NEW, 1, C][..]));
    println!(
        "stream plan: {} steps, workspace {} bytes, lower bound {} bytes",
        plan.steps(),
        plan.workspace_bytes(),
        plan.lower_bound()
    );
}

fn reset_equals_fresh_and_states_are_independent<B: Int8Kernels>() {
    let plan = plan();
    let xs = frames(12);
    let run = |state: &mut _, scratch: &mut _, xs: &[Vec<i8>]| -> Vec<Vec<u8>> {
        xs.iter().map(|x| plan.run::<B, i8, u8>(state, scratch, x).unwrap().to_vec()).collect()
    };
    let mut scratch = plan.scratch();
    let mut fresh = plan.state();
    let want = run(&mut fresh, &mut scratch, &xs);
    // A state that ran other frames, then reset, gives the fresh state's outputs.
    let mut used = plan.state();
    run(&mut used, &mut scratch, &frames(5)[..]);
    used.reset();
    assert_eq!(run(&mut used, &mut scratch, &xs), want);
    // Two states interleaved on one plan (and one scratch) each give their own sequence.
    let (mut a, mut b) = (plan.state(), plan.state());
    let other = frames(7);
    for k in 0..xs.len() {
        let ya = plan.run::<B, i8, u8>(&mut a, &mut scratch, &xs[k]).unwrap().to_vec();
        assert_eq!(ya, want[k], "state a, step {k}");
        plan.run::<B, i8, u8>(&mut b, &mut scratch, &other[k % other.len()]).unwrap();
    }
}

fn run_allocates_nothing<B: Int8Kernels>() {
    let plan = plan();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let xs = frames(20);
    thread_alloc::allocation_free(|| {
        for x in &xs {
            plan.run::<B, i8, u8>(&mut state, &mut scratch, x).unwrap();
        }
        state.reset();
    });
}

fn bad_run_arguments_are_errors<B: Int8Kernels>() {
    let plan = plan();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let x = vec![0i8; NEW * C];
    let short = plan.run::<B, i8, u8>(&mut state, &mut scratch, &x[1..]);
    assert!(matches!(short, Err(Error::Length { expected: 12, got: 11, .. })), "{short:?}");
    let typed = plan.run::<B, u8, u8>(&mut state, &mut scratch, &[0u8; NEW * C]);
    assert!(matches!(typed, Err(Error::Plan { .. })), "{typed:?}");
    let out = plan.run::<B, i8, i8>(&mut state, &mut scratch, &x);
    assert!(matches!(out, Err(Error::Plan { .. })), "{out:?}");
    let other = self::plan();
    let foreign = plan.run::<B, i8, u8>(&mut other.state(), &mut scratch, &x);
    assert!(matches!(foreign, Err(Error::Plan { .. })), "{foreign:?}");
    let mut small = neon_runtime::exec::stream::StreamScratch::new(16);
    let tiny = plan.run::<B, i8, u8>(&mut state, &mut small, &x);
    assert!(matches!(tiny, Err(Error::Length { .. })), "{tiny:?}");
    // Nothing ran: the state is still the initial one.
    let mut fresh = plan.state();
    let a = plan.run::<B, i8, u8>(&mut state, &mut scratch, &x).unwrap().to_vec();
    assert_eq!(plan.run::<B, i8, u8>(&mut fresh, &mut scratch, &x).unwrap(), &a[..]);
}

backend_tests!(
    equals_direct_ops,
    reset_equals_fresh_and_states_are_independent,
    run_allocates_nothing,
    bad_run_arguments_are_errors,
);

/// A builder with an input `[1, NEW, 1, C]` and a variable `[1, T, 1, C]`.
fn builder() -> (StreamPlanBuilder, StreamValue, StreamVar) {
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[1, NEW, 1, C]).unwrap();
    let v = b.variable::<i8>(&[1, T, 1, C], &init()).unwrap();
    (b, x, v)
}

fn is_shape(r: Result<impl std::fmt::Debug, Error>) -> bool {
    matches!(r, Err(Error::Shape(_)))
}

#[test]
fn mismatched_steps_are_build_errors() {
    let o = ops();
    let (mut b, x, v) = builder();
    let s = b.read(v).unwrap();
    // Depthwise over the 3 new rows only: its geometry says 5.
    assert!(is_shape(b.op(StreamOp::Depthwise(o.dw.clone()), x)));
    // Fully connected on a rank-4 value; logistic on u8.
    assert!(is_shape(b.op(StreamOp::FullyConnected(o.fc.clone()), x)));
    let u = b.op(StreamOp::RequantizeU8(o.to_u8), x).unwrap();
    assert!(is_shape(b.op(StreamOp::Logistic(o.logistic.clone()), u)));
    // Concatenation: differing off the axis, mixed types, past the rank, nothing.
    assert!(is_shape(b.concat(&[s, x], 3)));
    assert!(is_shape(b.concat(&[s, u], 1)));
    assert!(is_shape(b.concat(&[s, x], 4)));
    assert!(is_shape(b.concat(&[], 0)));
    // Slices and splits past the axis, sizes not adding up.
    assert!(is_shape(b.slice_last(x, 1, NEW + 1)));
    assert!(is_shape(b.slice(x, 1, 2, 2)));
    assert!(is_shape(b.slice(x, 1, 0, 0)));
    assert!(is_shape(b.slice(x, 5, 0, 1)));
    assert!(is_shape(b.split(x, 3, &[1, 2])));
    // Reshape to another count; assignment of another shape or type.
    assert!(is_shape(b.reshape(x, &[1, 5])));
    assert!(is_shape(b.assign(v, x)));
    let steps_before = b.describe(s).unwrap().1.to_vec();
    assert_eq!(steps_before, [1, T, 1, C]);
    // Declarations: a second input, a bad initial value, zero dims; handles of another
    // builder; an output that is the input.
    assert!(matches!(b.input(ElemType::I8, &[1]), Err(Error::Plan { .. })));
    assert!(matches!(b.variable::<i8>(&[2], &[0; 3]), Err(Error::Length { .. })));
    assert!(matches!(b.variable::<i8>(&[0, 2], &[]), Err(Error::BadShape { .. })));
    let (other, ox, ov) = builder();
    assert!(matches!(b.read(ov), Err(Error::Plan { .. })));
    assert!(matches!(b.reshape(ox, &[12]), Err(Error::Plan { .. })));
    drop(other);
    assert!(matches!(b.build(x), Err(Error::Plan { .. })));
    let mut none = StreamPlanBuilder::new();
    let v = none.variable::<i8>(&[2], &[0; 2]).unwrap();
    let r = none.read(v).unwrap();
    assert!(matches!(none.build(r), Err(Error::Plan { .. })));
}

#[test]
fn a_read_after_an_assignment_sees_the_new_value() {
    // TFLite order: var <- x, then read(var) gives x in the same run.
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[2]).unwrap();
    let v = b.variable::<i8>(&[2], &[7, 7]).unwrap();
    let before = b.read(v).unwrap();
    b.assign(v, x).unwrap();
    let after = b.read(v).unwrap();
    let y = b.concat(&[before, after], 0).unwrap();
    let plan = b.build(y).unwrap();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    assert_eq!(
        plan.run::<Portable, i8, i8>(&mut state, &mut scratch, &[1, 2]).unwrap(),
        &[7, 7, 1, 2]
    );
    assert_eq!(
        plan.run::<Portable, i8, i8>(&mut state, &mut scratch, &[3, 4]).unwrap(),
        &[1, 2, 3, 4]
    );
}

#[test]
fn a_reshape_at_its_inputs_last_use_copies_nothing() {
    // The planner gives a reshape its input's buffer when the input is not read later.
    let plan = plan();
    let mp = plan.memory_plan();
    let aliased = mp.placements.iter().filter(|p| p.aliases.is_some()).count();
    assert_eq!(aliased, 1, "the reshape shares the conv output's buffer");
    assert!(plan.workspace_bytes() >= plan.lower_bound());
}

#[test]
fn f32_values_and_state_round_trip_through_int8() {
    // hey_luna's form: an f32 state, QUANTIZE f32 -> i8, DEQUANTIZE back, the newest rows
    // assigned; against the operators called directly.
    let q = AffineQuant { scale: 0.037, zero_point: -3 };
    let (quant, dequant) = (QuantizeF32I8::new(q).unwrap(), DequantizeI8F32::new(q).unwrap());
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::F32, &[3, 2]).unwrap();
    let v = b.variable::<f32>(&[1, 2], &[0.5, -0.25]).unwrap();
    let s = b.read(v).unwrap();
    let c = b.concat(&[s, x], 0).unwrap();
    let i = b.op(StreamOp::Quantize(quant), c).unwrap();
    let d = b.op(StreamOp::Dequantize(dequant), i).unwrap();
    let newest = b.slice_last(d, 0, 1).unwrap();
    b.assign(v, newest).unwrap();
    let plan = b.build(d).unwrap();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let mut carried = [0.5f32, -0.25];
    let mut r = SmallRng::seed_from_u64(3);
    for step in 0..10 {
        let x: Vec<f32> = (0..6).map(|_| r.gen_range(-5.0..5.0)).collect();
        let c: Vec<f32> = carried.iter().chain(&x).copied().collect();
        let (mut i, mut want) = (vec![0i8; 8], vec![0f32; 8]);
        quant.run::<Portable>(&c, &mut i).unwrap();
        dequant.run::<Portable>(&i, &mut want).unwrap();
        carried.copy_from_slice(&want[6..]);
        let got = plan.run::<Portable, f32, f32>(&mut state, &mut scratch, &x).unwrap();
        assert_eq!(got, &want[..], "step {step}");
    }
}

#[test]
fn a_plan_is_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<StreamPlan>();
    shared::<neon_runtime::exec::stream::StreamState>();
    let plan = std::sync::Arc::new(plan());
    let xs = frames(6);
    let want: Vec<Vec<u8>> = {
        let (mut st, mut sc) = (plan.state(), plan.scratch());
        xs.iter()
            .map(|x| plan.run::<Portable, i8, u8>(&mut st, &mut sc, x).unwrap().to_vec())
            .collect()
    };
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (plan, xs) = (std::sync::Arc::clone(&plan), xs.clone());
            std::thread::spawn(move || {
                let (mut st, mut sc) = (plan.state(), plan.scratch());
                let run = |x: &Vec<i8>| {
                    plan.run::<Portable, i8, u8>(&mut st, &mut sc, x).map(<[u8]>::to_vec)
                };
                xs.iter().map(run).collect::<Result<Vec<_>, _>>()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().unwrap(), want);
    }
}
