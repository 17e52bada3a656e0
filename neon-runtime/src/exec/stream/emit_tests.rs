//! The emitter ([`StreamPlan::to_rust`]) on small plans: the generated module's key lines,
//! and the [`fixed`](super::super::fixed) calls it generates, parsed from its text and
//! replayed line by line here over `u128` buffers, against [`StreamPlan::run`] on the same
//! plan. (The bare-metal program, `models/bare-metal`, compiles and runs real generated
//! modules.)

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::super::fixed::{self, Rows};
use super::super::{ElemType, Exec, StreamOp, StreamPlan, StreamPlanBuilder};
use crate::error::Error;
use crate::kernels::int8::{
    ConvGeometry, DepthwiseGeometry, FcGeometry, OutputStage, Padding, QuantizedMultiplier,
    Rounding, Window2d,
};
use crate::ops::int8::{
    Conv2dI8, DepthwiseI8, FullyConnectedI8, Int8Params, LogisticI8, RequantizeI8U8,
};
use crate::Portable;

/// Channels of the chain.
const C: usize = 4;

/// The module docs' plan: a 2-frame history of 3 features, out the newest 3 frames as u8.
fn history() -> Result<StreamPlan, Error> {
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[1, 3])?;
    let s = b.variable::<i8>(&[2, 3], &[0; 6])?;
    let h = b.read(s)?;
    let c = b.concat(&[h, x], 0)?;
    let newest = b.slice_last(c, 0, 2)?;
    b.assign(s, newest)?;
    let y = b.op(StreamOp::RequantizeU8(to_u8()?), c)?;
    b.build(y)
}

/// QUANTIZE int8 -> uint8 with equal scales.
fn to_u8() -> Result<RequantizeI8U8, Error> {
    let stage =
        OutputStage { zero_point: 0, act_min: 0, act_max: 255, rounding: Rounding::AwayFromZero };
    RequantizeI8U8::new(-128, QuantizedMultiplier::from_real(1.0)?, stage)
}

/// Deterministic int8 codes.
fn codes(n: usize, seed: usize) -> Vec<i8> {
    (0..n).map(|i| ((i * 37 + seed * 11) % 61) as i8 - 30).collect()
}

/// `n` multipliers around 1/64.
fn multipliers(n: usize) -> Result<Vec<QuantizedMultiplier>, Error> {
    (0..n).map(|i| QuantizedMultiplier::from_real(0.01 + 0.002 * i as f64)).collect()
}

/// A streaming chain with state: `[1, 1, 1, C]` frames; the last 2 kept in a variable,
/// depthwise over 3 rows, 1x1 conv, reshape, fully connected, LOGISTIC, uint8.
fn chain() -> Result<StreamPlan, Error> {
    let stage = OutputStage::int8(-3, Rounding::HalfUpBlocks);
    let window = |h: usize, k: usize| {
        Window2d::with_padding(C, [h, 1], [k, 1], [1, 1], [1, 1], Padding::Valid)
    };
    let p = |filter: usize, out: usize, seed: usize| -> Result<_, Error> {
        Ok(Int8Params {
            filter: codes(filter, seed),
            bias: Some((0..out).map(|i| i as i32 * 50 - 70).collect()),
            multipliers: multipliers(out)?,
        })
    };
    let dw = DepthwiseGeometry { window: window(3, 3)?, depth_multiplier: 1 };
    let dw = DepthwiseI8::new(dw, p(3 * C, C, 1)?, -128, stage)?;
    let conv = ConvGeometry { window: window(1, 1)?, out_channels: C };
    let conv = Conv2dI8::new(conv, p(C * C, C, 2)?, -3, stage)?;
    let fc = FcGeometry { rows: 1, in_features: C, out_features: 2 };
    let fc = FullyConnectedI8::new(fc, p(2 * C, 2, 3)?, -3, stage)?;
    let lut: Vec<i8> = (0..256).map(|i| (i / 2) as i8).collect();
    let logistic = LogisticI8::new(lut.try_into().map_err(|_| Error::Plan { reason: "lut" })?);

    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[1, 1, 1, C])?;
    let s = b.variable::<i8>(&[1, 2, 1, C], &codes(2 * C, 9))?;
    let h = b.read(s)?;
    let c = b.concat(&[h, x], 1)?;
    let newest = b.slice_last(c, 1, 2)?;
    b.assign(s, newest)?;
    let d = b.op(StreamOp::Depthwise(dw), c)?;
    let d = b.op(StreamOp::Conv2d(conv), d)?;
    let d = b.reshape(d, &[1, C])?;
    let d = b.op(StreamOp::FullyConnected(fc), d)?;
    let d = b.op(StreamOp::Logistic(logistic), d)?;
    let y = b.op(StreamOp::RequantizeU8(to_u8()?), d)?;
    b.build(y)
}

/// Reads and slices that cannot be fused: a read whose variable is assigned before its
/// reader (a whole copy out), an assignment of the input, a slice read by an assignment and
/// a concatenation (a whole copy in); the other read is fused into its concatenation.
fn unfused() -> Result<StreamPlan, Error> {
    let mut b = StreamPlanBuilder::new();
    let x = b.input(ElemType::I8, &[1, 3])?;
    let s = b.variable::<i8>(&[2, 3], &codes(6, 3))?;
    let t = b.variable::<i8>(&[1, 3], &codes(3, 5))?;
    let h = b.read(s)?;
    let c = b.concat(&[h, x], 0)?;
    let newest = b.slice_last(c, 0, 2)?;
    let g = b.read(t)?;
    b.assign(t, x)?;
    b.assign(s, newest)?;
    let d = b.concat(&[g, newest], 0)?;
    let y = b.op(StreamOp::RequantizeU8(to_u8()?), d)?;
    b.build(y)
}

/// The unsigned integers in `s`, in order.
fn numbers(s: &str) -> Vec<usize> {
    let digits = s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty());
    digits.map(|t| t.parse().expect("a number")).collect()
}

/// A call's arguments around its `&Rows` literal: the numbers before, the rows, the numbers
/// after.
fn around_rows(args: &str) -> (Vec<usize>, Rows, Vec<usize>) {
    let start = args.find("&Rows").expect("a rows argument");
    let close = if args[start..].starts_with("&Rows::whole(") { ')' } else { '}' };
    let end = start + args[start..].find(close).expect("the rows' end") + 1;
    let rows = match numbers(&args[start..end])[..] {
        [n] => Rows::whole(n),
        [outer, chunk, src_start, src_stride, dst_start, dst_stride] => {
            Rows { outer, chunk, src_start, src_stride, dst_start, dst_stride }
        }
        _ => panic!("rows: {args}"),
    };
    (numbers(&args[..start]), rows, numbers(&args[end..]))
}

/// What the generated `run` does: the `fixed::` calls of `code` (the plan's generated
/// module), parsed and made in order over `u128` buffers, operator `k` being the plan's
/// step `k`.
fn replay(
    plan: &StreamPlan,
    code: &str,
    state: &mut [u128],
    ws: &mut [u128],
    x: &[i8],
) -> Result<Vec<u8>, Error> {
    let op = |k: usize| match &plan.exec[k] {
        Exec::Op { op, .. } => op,
        other => panic!("step {k} is not an operator: {other:?}"),
    };
    for line in code.lines().map(str::trim).filter(|l| l.starts_with("fixed::")) {
        let (name, args) = line.split_once('(').expect("a call");
        let name = name.split("::<").next().unwrap_or(name);
        let n = numbers(args);
        match name {
            "fixed::op" => {
                let f = |x: &[u8], y: &mut [u8]| op(n[4]).run::<Portable>(x, y);
                fixed::op::<u8, u8>(ws, (n[0], n[1]), (n[2], n[3]), f)?
            }
            "fixed::op_input" => {
                let f = |x: &[u8], y: &mut [u8]| op(n[2]).run::<Portable>(x, y);
                fixed::op_input::<u8, u8>(super::super::bytes(x), ws, (n[0], n[1]), f)?
            }
            "fixed::output" => return Ok(fixed::output::<u8>(ws, (n[0], n[1]))?.to_vec()),
            _ => {
                let (a, r, b) = around_rows(args);
                match name {
                    "fixed::copy" => fixed::copy(ws, &r, b[0], b[1])?,
                    "fixed::copy_input" => fixed::copy_input(x, &r, ws, (b[0], b[1]))?,
                    "fixed::read" => fixed::read(state, (a[0], a[1]), &r, ws, (b[0], b[1]))?,
                    "fixed::assign" => fixed::assign(ws, (a[0], a[1]), &r, state, (b[0], b[1]))?,
                    "fixed::assign_input" => fixed::assign_input(x, &r, state, (b[0], b[1]))?,
                    _ => panic!("unknown call: {line}"),
                }
            }
        }
    }
    panic!("no fixed::output in the generated module")
}

/// `plan` run 6 times by [`replay`] of its generated module and by [`StreamPlan::run`] on
/// the same inputs.
fn same_as_run(plan: &StreamPlan) -> Result<(), Error> {
    let code = plan.to_rust()?;
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let mut words = plan.init.to_vec();
    let mut ws = vec![0u128; plan.workspace_bytes().div_ceil(16)];
    let n = plan.input().1.iter().product();
    for step in 0..6 {
        let x = codes(n, step);
        let want = plan.run::<Portable, i8, u8>(&mut state, &mut scratch, &x)?.to_vec();
        assert_eq!(replay(plan, &code, &mut words, &mut ws, &x)?, want, "step {step}");
    }
    Ok(())
}

/// Asserts every line of `want` is in `code`.
fn has_lines(code: &str, want: &[String]) {
    for line in want {
        assert!(code.contains(line.as_str()), "missing `{line}` in:\n{code}");
    }
}

#[test]
fn history_plan_emits_its_sizes_copies_and_state() -> Result<(), Error> {
    let plan = history()?;
    let code = plan.to_rust()?;
    has_lines(&code, &[
        alloc::format!("pub const WORKSPACE_BYTES: usize = {};", plan.workspace_bytes()),
        String::from("pub const STATE_BYTES: usize = 16;"),
        String::from("pub const INPUT_LEN: usize = 3;"),
        String::from("pub const OUTPUT_LEN: usize = 9;"),
        String::from("pub type Input = i8;"),
        String::from("pub type Output = u8;"),
        String::from("pub static INITIAL_STATE: [u128; STATE_WORDS] = [0x0,];"),
        String::from("fixed::read(state, (0, 6), &Rows::whole(6), ws, "),
        String::from("fixed::copy_input(input, &Rows { outer: 1, chunk: 3, "),
        String::from("fixed::assign(ws, "),
        String::from("RequantizeI8U8::new(-128, QuantizedMultiplier { multiplier: 1073741824, shift: 1 }"),
        String::from("rounding: Rounding::AwayFromZero"),
        String::from("fixed::output::<Output>(ws, "),
    ]);
    assert_eq!(code, plan.to_rust()?, "stable output");
    same_as_run(&plan)
}

#[test]
fn chain_plan_emits_weights_and_checked_constructors() -> Result<(), Error> {
    let plan = chain()?;
    let code = plan.to_rust()?;
    has_lines(&code, &[
        String::from("pub const STEPS: usize = 10;"),
        String::from("static W4: [i8; 12] = [-19, 18, -6, "),
        String::from("static B4: [i32; 4] = [-70, -20, 30, 80, ];"),
        String::from("op4: DepthwiseI8<StaticInt8Params>,"),
        String::from("op4: Int8Layer::new(DepthwiseGeometry { window: Window2d { channels: 4, height: 3, "),
        String::from("Int8Params { filter: &W4[..], bias: Some(&B4[..]), multipliers: &M4[..] }, -128, OutputStage { zero_point: -3, act_min: -128, act_max: 127, rounding: Rounding::HalfUpBlocks })?,"),
        String::from("op5: Int8Layer::new(ConvGeometry {"),
        String::from("op7: Int8Layer::new(FcGeometry { rows: 1, in_features: 4, out_features: 2 }"),
        String::from("op8: LogisticI8::new(LUT8),"),
        String::from("static LUT8: [i8; 256] = [0, 0, 1, 1, "),
        String::from("fixed::op::<i8, i8>(ws, "),
        String::from("fixed::op::<i8, u8>(ws, "),
        String::from("|x, y| self.op7.run::<B>(x, y))?;"),
    ]);
    same_as_run(&plan)
}

#[test]
fn history_plan_reads_and_writes_its_variable_in_place() -> Result<(), Error> {
    // The read is copied by the concatenation straight from the state, and the newest rows
    // from the concatenation straight into it: 3 copies, not 5, and no workspace for the
    // read or the slice.
    let plan = history()?;
    let code = plan.to_rust()?;
    let copies = code.lines().filter(|l| l.trim_start().starts_with("fixed::")).count();
    assert_eq!(copies, 3 + 2, "3 copies, the operator and the output:\n{code}");
    has_lines(&code, &[
        String::from("// 0: nothing to copy (in place, or fused)"),
        String::from("// 2: nothing to copy (in place, or fused)"),
        String::from("&Rows { outer: 1, chunk: 6, src_start: 3, src_stride: 9, dst_start: 0, dst_stride: 6 }, state, (0, 6))?;"),
    ]);
    assert_eq!(plan.workspace_bytes(), 32, "the concatenation and the output only");
    Ok(())
}

#[test]
fn reads_and_slices_that_cannot_be_fused_are_copied_whole() -> Result<(), Error> {
    let plan = unfused()?;
    let code = plan.to_rust()?;
    has_lines(
        &code,
        &[
            String::from("fixed::read(state, (0, 6), &Rows::whole(6), ws, "),
            String::from("fixed::read(state, (16, 3), &Rows::whole(3), ws, "),
            String::from("fixed::assign_input(input, &Rows::whole(3), state, (16, 3))?;"),
        ],
    );
    assert!(code.contains("&Rows::whole(6), state, (0, 6))?;"), "{code}");
    same_as_run(&plan)
}
