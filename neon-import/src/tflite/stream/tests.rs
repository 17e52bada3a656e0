//! Crafted faults: bytes of a real model patched so that one rule breaks.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::*;
use crate::tflite::options;

const ALEXA: &[u8] = include_bytes!("../../../../models/microwakeword/alexa.tflite");

const LIMITS: Limits =
    Limits { frame_width: 40, max_frames: 16, max_features: 1 << 20, max_layers: 512 };

fn message(bytes: &[u8]) -> String {
    let Err(e) = parse_stream(bytes, &LIMITS) else { panic!("parsed") };
    let e = e.to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

fn root() -> Table<'static> {
    Table::root(ALEXA).unwrap()
}

/// The file with every operator code `from` rewritten to `to` (both below 127).
fn with_opcode(from: u8, to: u8) -> Vec<u8> {
    let mut b = ALEXA.to_vec();
    let codes = root().vector(1, 4).unwrap().unwrap();
    let mut patched = 0;
    for i in 0..codes.len() {
        let c = codes.table(i).unwrap();
        if i32::from(c.u8(0, 0).unwrap() as i8).max(c.i32(3, 0).unwrap()) == i32::from(from) {
            b[c.field(0).unwrap().unwrap()] = to;
            if let Some(p) = c.field(3).unwrap() {
                b[p..p + 4].copy_from_slice(&i32::from(to).to_le_bytes());
            }
            patched += 1;
        }
    }
    assert_eq!(patched, 1);
    b
}

#[test]
fn an_unknown_operator_is_refused_by_name() {
    parse_stream(ALEXA, &LIMITS).unwrap();
    let e = message(&with_opcode(code::LOGISTIC as u8, 18));
    assert!(e.starts_with("main operator #") && e.ends_with("MUL: unsupported operator"), "{e}");
    let e = message(&with_opcode(code::LOGISTIC as u8, 1));
    assert!(e.contains("AVERAGE_POOL_2D: unsupported operator"), "{e}");
}

#[test]
fn every_prefix_is_an_error() {
    for n in (0..ALEXA.len()).step_by(37).chain([ALEXA.len() - 1]) {
        let e = message(&ALEXA[..n]);
        assert!(e.contains("TFLite"), "{n}: {e}");
    }
}

#[test]
fn a_bias_of_another_type_is_refused() {
    let g = parse_stream(ALEXA, &LIMITS).unwrap();
    let Some(StreamOp::Conv2d(c)) = g.ops.iter().find(|o| matches!(o, StreamOp::Conv2d(_))) else {
        panic!("no CONV_2D")
    };
    let main = root().vector(2, 4).unwrap().unwrap().table(0).unwrap();
    let t = main.vector(0, 4).unwrap().unwrap().table(c.filter.bias_spec.index).unwrap();
    let mut b = ALEXA.to_vec();
    b[t.field(1).unwrap().unwrap()] = INT8;
    let e = message(&b);
    assert!(e.contains("CONV_2D: the bias is I8, not [I32]"), "{e}");
}

#[test]
fn a_read_after_the_assign_of_its_variable_is_refused() {
    // The last operator (QUANTIZE) replaced by the first READ_VARIABLE: it then reads a
    // variable that this step has already assigned.
    let mut b = ALEXA.to_vec();
    let main = root().vector(2, 4).unwrap().unwrap().table(0).unwrap();
    let ops = main.vector(3, 4).unwrap().unwrap();
    let codes = root().vector(1, 4).unwrap().unwrap();
    let code_of = |k: usize| {
        let c = codes.table(ops.table(k).unwrap().u32(0, 0).unwrap() as usize).unwrap();
        i32::from(c.u8(0, 0).unwrap() as i8).max(c.i32(3, 0).unwrap())
    };
    let read = (0..ops.len()).find(|&k| code_of(k) == code::READ_VARIABLE).unwrap();
    let last = ops.len() - 1;
    assert_eq!(code_of(last), code::QUANTIZE);
    // Vector elements are u32 offsets relative to their own position.
    let entries = main.field(3).unwrap().unwrap();
    let start = entries + u32::from_le_bytes(b[entries..entries + 4].try_into().unwrap()) as usize;
    let pos = |k: usize| start + 4 + 4 * k;
    let target =
        |k: usize| pos(k) + u32::from_le_bytes(b[pos(k)..pos(k) + 4].try_into().unwrap()) as usize;
    let off = (target(read) - pos(last)) as u32;
    let p = pos(last);
    b[p..p + 4].copy_from_slice(&off.to_le_bytes());
    let e = message(&b);
    assert!(
        e.contains(&alloc::format!("main operator #{last} READ_VARIABLE: reads variable")),
        "{e}"
    );
    assert!(e.contains("after its ASSIGN_VARIABLE"), "{e}");
}

#[test]
fn an_init_subgraph_of_other_operators_is_refused() {
    // VAR_HANDLE made LOGISTIC: the init subgraph then holds another operator.
    let mut b = ALEXA.to_vec();
    let codes = root().vector(1, 4).unwrap().unwrap();
    for i in 0..codes.len() {
        let c = codes.table(i).unwrap();
        if c.i32(3, 0).unwrap() == code::VAR_HANDLE {
            let p = c.field(3).unwrap().unwrap();
            b[p..p + 4].copy_from_slice(&code::LOGISTIC.to_le_bytes());
            if let Some(p) = c.field(0).unwrap() {
                b[p] = code::LOGISTIC as u8;
            }
        }
    }
    let e = message(&b);
    assert!(e.contains("init operator #0 LOGISTIC: the init subgraph may hold only"), "{e}");
}

#[test]
fn a_shape_other_than_the_rule_is_refused() {
    // The first CONV_2D's padding VALID made SAME: its 5 rows with stride 3 would give 2
    // output rows, the file says 1.
    let main = root().vector(2, 4).unwrap().unwrap().table(0).unwrap();
    let ops = main.vector(3, 4).unwrap().unwrap();
    let mut b = ALEXA.to_vec();
    let first_valid_conv = (0..ops.len()).find_map(|i| {
        let o = ops.table(i).unwrap();
        let t = o.table(4).unwrap().filter(|_| o.u8(3, 0).unwrap() == options::CONV_2D)?;
        (t.u8(0, 0).unwrap() == 1).then(|| t.field(0).unwrap().unwrap())
    });
    b[first_valid_conv.unwrap()] = 0;
    let e = message(&b);
    assert!(e.contains("CONV_2D: the output has shape [1, 1, 1, 32] in the file"), "{e}");
    assert!(e.contains("[1, 2, 1, 32] by the operator's rule"), "{e}");
}

#[test]
fn a_per_channel_axis_other_than_the_rule_is_refused() {
    // The first DEPTHWISE_CONV_2D's weights quantised along axis 0 instead of 3.
    let g = parse_stream(ALEXA, &LIMITS).unwrap();
    let Some(StreamOp::DepthwiseConv2d(c)) =
        g.ops.iter().find(|o| matches!(o, StreamOp::DepthwiseConv2d(_)))
    else {
        panic!("no DEPTHWISE_CONV_2D")
    };
    let main = root().vector(2, 4).unwrap().unwrap().table(0).unwrap();
    let t = main.vector(0, 4).unwrap().unwrap().table(c.filter.spec.index).unwrap();
    let q = t.table(4).unwrap().unwrap();
    let p = q.field(6).unwrap().expect("axis 3 is stored");
    let mut b = ALEXA.to_vec();
    b[p..p + 4].copy_from_slice(&0i32.to_le_bytes());
    let e = message(&b);
    assert!(e.contains("DEPTHWISE_CONV_2D: the weights have 32 scales on axis 0"), "{e}");
    assert!(e.contains("(1, or 32 on axis 3)"), "{e}");
}
