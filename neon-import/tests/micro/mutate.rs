//! `tflite::parse_stream` on the 7 microWakeWord models with single bytes changed: every
//! mutant gives a one-line error or a graph whose variables hold their whole initial values
//! and whose operators' quantisation parameters are derived or refused (no panic, no huge
//! allocation). A byte every `STRIDE` is changed, at two offsets so the tables' fields are
//! hit at several positions. Host only (`main.rs` says why).

use neon_import::tflite::quant::{logistic_lut, LayerRequant, Requantize};
use neon_import::tflite::{parse_stream, StreamGraph, StreamOp};

use crate::support::{model_bytes, LIMITS, MODELS};

/// Changed bytes per model: one every `STRIDE` (2.5 s; a stride of 7, 123 585 mutants, also
/// passed: 40 523 refused, 83 062 parsed).
const STRIDE: usize = 53;

/// The graph's own invariants, and every operator's parameters derived or refused.
fn check(g: &StreamGraph, what: &str) {
    for v in &g.vars {
        let len: usize = v.shape.iter().product();
        assert_eq!(v.init.len(), len * v.dtype.size(), "{what}: {}", v.shared_name);
    }
    for op in &g.ops {
        let r = match op {
            StreamOp::Conv2d(c) => LayerRequant::conv2d(c).map(drop),
            StreamOp::DepthwiseConv2d(c) => LayerRequant::depthwise(c).map(drop),
            StreamOp::FullyConnected(f) => LayerRequant::fully_connected(f).map(drop),
            StreamOp::Logistic { input, output } => logistic_lut(input, output).map(drop),
            StreamOp::Quantize { input, output } => Requantize::new(input, output).map(drop),
            StreamOp::ReadVariable { var, .. } | StreamOp::AssignVariable { var, .. } => {
                assert!(*var < g.vars.len(), "{what}");
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            assert!(!e.to_string().contains('\n'), "{what}: multi-line error: {e}");
        }
    }
}

#[test]
fn single_byte_mutants_are_refused_or_consistent() {
    let (mut refused, mut parsed) = (0usize, 0usize);
    for (name, dir) in MODELS {
        let bytes = model_bytes(name, dir);
        let mut m = bytes.clone();
        for (start, flip) in [(0usize, 0xffu8), (STRIDE / 2, 0x80)] {
            for at in (start..bytes.len()).step_by(STRIDE) {
                m[at] ^= flip;
                let what = format!("{name} byte {at} ^ {flip:#x}");
                match parse_stream(&m, &LIMITS) {
                    Ok(g) => {
                        check(&g, &what);
                        parsed += 1;
                    }
                    Err(e) => {
                        assert!(!e.to_string().contains('\n'), "{what}: multi-line error: {e}");
                        refused += 1;
                    }
                }
                m[at] = bytes[at];
            }
        }
    }
    assert!(refused > 0 && parsed > 0, "refused {refused}, parsed {parsed}");
    eprintln!("mutants: {refused} refused, {parsed} parsed");
}

/// A variable name holding a newline (one byte of a `VAR_HANDLE`'s or the init subgraph's
/// `shared_name` changed, as the fuzzer found: `variable ` followed by a raw newline) gives
/// a one-line error: names are escaped in messages.
#[test]
fn newline_in_a_variable_name_gives_a_one_line_error() {
    let mut hits = 0;
    for (model, dir) in MODELS {
        let bytes = model_bytes(model, dir);
        let at: Vec<usize> = bytes
            .windows(7)
            .enumerate()
            .filter(|(_, w)| *w == b"stream_")
            .map(|(i, _)| i)
            .collect();
        for &i in &at {
            let mut m = bytes.clone();
            m[i] = b'\n';
            if let Err(e) = parse_stream(&m, &LIMITS) {
                assert!(!e.to_string().contains('\n'), "{model} at {i}: multi-line error: {e}");
                hits += 1;
            }
        }
    }
    assert!(hits > 0, "no mutant was refused");
}
