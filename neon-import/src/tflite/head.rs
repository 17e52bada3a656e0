//! `.tflite` wake-word heads → [`HeadGraph`].
//!
//! The FlatBuffer is read with the bounds-checked reader of `flatbuffer.rs` (tables
//! and field slots of TFLite's `schema.fbs`: `Model`, `SubGraph`, `Tensor`, `Buffer`,
//! `Operator`, `OperatorCode` and the options of the operators below). Each stage is then
//! restated as an ONNX graph of the same arithmetic and walked by the `.onnx` parser
//! ([`crate::onnx`]), so both formats accept the same heads and report faults alike.
//! Recognised operators (openWakeWord's official heads and the community models trained
//! with its notebook, converted to TFLite):
//!
//! - `RESHAPE` (shape as input or option) → `Reshape`; a `FULLY_CONNECTED` reading the
//!   `[1, N, 96]` input directly flattens it, as TFLite does (`keep_num_dims` false);
//! - `FULLY_CONNECTED` (float32 weight `[out, in]`, optional bias; fused activation NONE or
//!   RELU) → `Gemm` with `transB` 1 (and `Relu`);
//! - `ADD`, `SUB`, `MUL`, `DIV` (fused activation NONE or RELU), `MEAN`, `SQUARED_DIFFERENCE`
//!   (→ `Sub`, `Mul`), `RSQRT` (→ `Sqrt`, `Reciprocal`), `SQRT`, `NEG`: the pieces of a
//!   decomposed LayerNorm, which the walk recognises by evaluating it (two forms seen in
//!   real files: `MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL, MUL, ADD` and the batch-norm form
//!   with `SQUARED_DIFFERENCE`), and bias `ADD`s after a bias-less `FULLY_CONNECTED`;
//! - `RELU`, `LOGISTIC`;
//! - the two-stage form of openWakeWord's `hey_jarvis_v0.1.tflite`: the first stage's score
//!   `s`, `GREATER_EQUAL(s, threshold)`, optionally `RESHAPE`d, drives an `IF` whose `then`
//!   subgraph computes the second stage from the same input (its other inputs bound to the
//!   main subgraph's constants) and whose `else` subgraph returns `s` unchanged
//!   ([`crate::SecondStage`]).
//!
//! Refused by name: other operators (including custom ones), weights other than float32
//! (float16, int8), buffers stored outside the FlatBuffer, an `IF` of another form. No input
//! bytes can make the parser panic, and it allocates at most a small multiple of the file.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::{
    activation_name, code, ints, op_name, options, read_model, type_name, Model, Operator,
    Subgraph, Tensor, FLOAT32, INT32,
};
use crate::onnx::short;
use crate::onnx_proto as pb;
use crate::{onnx, Error, HeadGraph, Limits, SecondStage};

/// ONNX `TensorProto.DataType` of a TFLite tensor type (so the walk names it in errors).
fn onnx_type(t: u8) -> i32 {
    match t {
        0 => 1,
        1 => 10,
        2 => 6,
        3 => 2,
        4 => 7,
        6 => 9,
        7 => 5,
        9 => 3,
        10 => 11,
        _ => 0,
    }
}

/// Where a subgraph's tensor comes from when it is a constant: (the subgraph holding it,
/// the tensor there). A `then` subgraph's inputs are bound to the main subgraph's tensors.
type Binding = Vec<Option<(usize, usize)>>;

/// Builds the ONNX restatement of one stage and walks it.
struct Stage<'m, 'a> {
    model: &'m Model<'a>,
    sg: usize,
    /// Inputs of `sg` bound to constants of another subgraph (by position in `sg.inputs`).
    bound: Binding,
    limits: &'m Limits,
    graph: pb::GraphProto,
    inits: Vec<usize>,
    fresh: usize,
}

impl<'m, 'a> Stage<'m, 'a> {
    fn err(&self, message: impl Into<String>) -> Error {
        Error::new(message)
    }

    fn sub(&self) -> &'m Subgraph<'a> {
        &self.model.subgraphs[self.sg]
    }

    fn tensor(&self, t: i32) -> Result<&'m Tensor<'a>, Error> {
        usize::try_from(t)
            .ok()
            .and_then(|t| self.sub().tensors.get(t))
            .ok_or_else(|| self.err(format!("subgraph {}: no tensor {t}", self.sg)))
    }

    /// The constant behind tensor `t` of this stage's subgraph: (tensor, its bytes).
    fn constant(&self, t: i32) -> Option<(&'m Tensor<'a>, &'a [u8])> {
        let sub = self.sub();
        let (sg, t) = match sub.inputs.iter().position(|&i| i == t) {
            Some(k) => self.bound.get(k).copied().flatten()?,
            None => (self.sg, usize::try_from(t).ok()?),
        };
        let tensor = self.model.subgraphs.get(sg)?.tensors.get(t)?;
        let data = *self.model.buffers.get(tensor.buffer).filter(|_| tensor.buffer > 0)?;
        (!data.is_empty()).then_some((tensor, data))
    }

    fn name(t: i32) -> String {
        format!("t{t}")
    }

    fn fresh(&mut self) -> String {
        self.fresh += 1;
        format!("n{}", self.fresh)
    }

    /// Names tensor `t` as an operand: adds its initializer once if it is a constant.
    fn operand(&mut self, t: i32) -> Result<String, Error> {
        if let Some((tensor, data)) = self.constant(t) {
            let key = usize::try_from(t).unwrap_or(usize::MAX);
            if !self.inits.contains(&key) {
                self.inits.push(key);
                if tensor.dtype != FLOAT32 && tensor.dtype != INT32 {
                    return Err(self.err(format!(
                        "tensor `{}` is {}; only float32 weights are supported",
                        short(tensor.name),
                        type_name(tensor.dtype)
                    )));
                }
                let dims: Vec<i64> = tensor.shape.iter().map(|&d| i64::from(d)).collect();
                let (data_type, raw) = if tensor.dtype == INT32 {
                    if !data.len().is_multiple_of(4) {
                        return Err(self.err(format!(
                            "tensor `{}` has {} bytes, not whole int32 values",
                            short(tensor.name),
                            data.len()
                        )));
                    }
                    let wide: Vec<u8> = data
                        .chunks_exact(4)
                        .flat_map(|b| {
                            i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes()
                        })
                        .collect();
                    (7, wide)
                } else {
                    (onnx_type(tensor.dtype), data.to_vec())
                };
                self.graph.initializer.push(pb::TensorProto {
                    name: Some(Self::name(t)),
                    dims,
                    data_type: Some(data_type),
                    raw_data: Some(raw),
                    ..Default::default()
                });
            }
        } else {
            self.tensor(t)?;
        }
        Ok(Self::name(t))
    }

    fn node(&mut self, label: &str, op: &str, inputs: Vec<String>, output: String) {
        self.graph.node.push(pb::NodeProto {
            op_type: Some(op.into()),
            name: Some(label.into()),
            input: inputs,
            output: vec![output],
            ..Default::default()
        });
    }

    fn int_attr(name: &str, v: i64) -> pb::AttributeProto {
        pb::AttributeProto {
            name: Some(name.into()),
            i: Some(v),
            r#type: Some(2),
            ..Default::default()
        }
    }

    /// The fused activation (slot 0 of most options tables) of operator `op`: 0 NONE, 1 RELU.
    fn fused(&self, op: &Operator<'_>, label: &str) -> Result<bool, Error> {
        let act = match op.options {
            Some(t) => t.u8(0, 0).map_err(|m| self.err(format!("{label}: {m}")))?,
            None => 0,
        };
        match act {
            0 => Ok(false),
            1 => Ok(true),
            a => Err(self.err(format!(
                "{label}: fused activation {} is not supported (NONE or RELU)",
                activation_name(a)
            ))),
        }
    }

    /// Restates operator `k` of the subgraph.
    fn operator(&mut self, k: usize, input: i32) -> Result<(), Error> {
        let sub = self.sub();
        let op = &sub.ops[k];
        let label = format!("{} operator #{k}", op_name(op.code));
        let bad = |s: &Self, why: &str| s.err(format!("{label}: {why}"));
        let arity = |s: &Self, n: usize| -> Result<(), Error> {
            if op.inputs.len() < n || op.outputs.len() != 1 {
                return Err(bad(s, "unexpected number of inputs or outputs"));
            }
            Ok(())
        };
        let unary = |s: &mut Self, onnx_op: &str| -> Result<(), Error> {
            arity(s, 1)?;
            let x = s.operand(op.inputs[0])?;
            s.node(&label, onnx_op, vec![x], Self::name(op.outputs[0]));
            Ok(())
        };
        let binary = |s: &mut Self, onnx_op: &str| -> Result<(), Error> {
            arity(s, 2)?;
            let relu = s.fused(op, &label)?;
            let (a, b) = (s.operand(op.inputs[0])?, s.operand(op.inputs[1])?);
            let y = Self::name(op.outputs[0]);
            if relu {
                let z = s.fresh();
                s.node(&label, onnx_op, vec![a, b], z.clone());
                s.node(&label, "Relu", vec![z], y);
            } else {
                s.node(&label, onnx_op, vec![a, b], y);
            }
            Ok(())
        };
        match op.code {
            code::FULLY_CONNECTED => {
                arity(self, 2)?;
                if op.options.is_some() && op.options_type != options::FULLY_CONNECTED {
                    return Err(bad(self, "options of another operator"));
                }
                let (weights_format, keep_dims) = match op.options {
                    Some(t) => (
                        t.u8(1, 0).map_err(|m| bad(self, &m))?,
                        t.u8(2, 0).map_err(|m| bad(self, &m))? != 0,
                    ),
                    None => (0, false),
                };
                if weights_format != 0 {
                    return Err(bad(self, "shuffled weights are not supported"));
                }
                let relu = self.fused(op, &label)?;
                let mut x = self.operand(op.inputs[0])?;
                if op.inputs[0] == input && !keep_dims {
                    let flat = self.fresh();
                    self.graph.node.push(pb::NodeProto {
                        op_type: Some("Flatten".into()),
                        name: Some(label.clone()),
                        input: vec![x],
                        output: vec![flat.clone()],
                        attribute: vec![Self::int_attr("axis", 1)],
                        ..Default::default()
                    });
                    x = flat;
                }
                let w = self.operand(op.inputs[1])?;
                let mut ins = vec![x, w];
                if let Some(&b) = op.inputs.get(2).filter(|&&b| b >= 0) {
                    ins.push(self.operand(b)?);
                }
                let y = Self::name(op.outputs[0]);
                let gemm_out = if relu { self.fresh() } else { y.clone() };
                self.graph.node.push(pb::NodeProto {
                    op_type: Some("Gemm".into()),
                    name: Some(label.clone()),
                    input: ins,
                    output: vec![gemm_out.clone()],
                    attribute: vec![Self::int_attr("transB", 1)],
                    ..Default::default()
                });
                if relu {
                    self.node(&label, "Relu", vec![gemm_out], y);
                }
            }
            code::RESHAPE => {
                arity(self, 1)?;
                let x = self.operand(op.inputs[0])?;
                let shape = match op.inputs.get(1).filter(|&&s| s >= 0) {
                    Some(&s) => self.operand(s)?,
                    None => {
                        let t = op
                            .options
                            .filter(|_| op.options_type == options::RESHAPE)
                            .ok_or_else(|| bad(self, "no target shape"))?;
                        let shape = ints(&t, 0).map_err(|m| bad(self, &m))?;
                        let name = self.fresh();
                        self.graph.initializer.push(pb::TensorProto {
                            name: Some(name.clone()),
                            dims: vec![shape.len() as i64],
                            data_type: Some(7),
                            raw_data: Some(
                                shape.iter().flat_map(|&d| i64::from(d).to_le_bytes()).collect(),
                            ),
                            ..Default::default()
                        });
                        name
                    }
                };
                self.node(&label, "Reshape", vec![x, shape], Self::name(op.outputs[0]));
            }
            code::MEAN => {
                arity(self, 2)?;
                let (x, axes) = (self.operand(op.inputs[0])?, self.operand(op.inputs[1])?);
                self.node(&label, "ReduceMean", vec![x, axes], Self::name(op.outputs[0]));
            }
            code::SQUARED_DIFFERENCE => {
                arity(self, 2)?;
                let (a, b) = (self.operand(op.inputs[0])?, self.operand(op.inputs[1])?);
                let d = self.fresh();
                self.node(&label, "Sub", vec![a, b], d.clone());
                self.node(&label, "Mul", vec![d.clone(), d], Self::name(op.outputs[0]));
            }
            code::RSQRT => {
                arity(self, 1)?;
                let x = self.operand(op.inputs[0])?;
                let r = self.fresh();
                self.node(&label, "Sqrt", vec![x], r.clone());
                self.node(&label, "Reciprocal", vec![r], Self::name(op.outputs[0]));
            }
            code::ADD => binary(self, "Add")?,
            code::SUB => binary(self, "Sub")?,
            code::MUL => binary(self, "Mul")?,
            code::DIV => binary(self, "Div")?,
            code::SQRT => unary(self, "Sqrt")?,
            code::NEG => unary(self, "Neg")?,
            code::RELU => unary(self, "Relu")?,
            code::LOGISTIC => unary(self, "Sigmoid")?,
            code::CUSTOM => {
                return Err(
                    self.err(format!("unsupported custom operator `{}` (#{k})", short(op.custom)))
                )
            }
            _ => return Err(self.err(format!("unsupported operator {label}"))),
        }
        Ok(())
    }

    /// Restates the operators `ops` of the subgraph, from `input` to `output`, and walks them.
    fn walk(mut self, ops: &[usize], input: i32, output: i32) -> Result<HeadGraph, Error> {
        let t = self.tensor(input)?;
        let dims = t
            .shape
            .iter()
            .map(|&d| pb::tensor_shape_proto::Dimension {
                value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(i64::from(d))),
                ..Default::default()
            })
            .collect();
        self.graph.input.push(pb::ValueInfoProto {
            name: Some(Self::name(input)),
            r#type: Some(pb::TypeProto {
                value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                    elem_type: Some(onnx_type(t.dtype)),
                    shape: Some(pb::TensorShapeProto { dim: dims }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        });
        self.graph
            .output
            .push(pb::ValueInfoProto { name: Some(Self::name(output)), ..Default::default() });
        for &k in ops {
            self.operator(k, input)?;
        }
        onnx::walk(&self.graph, self.limits)
    }
}

/// Parses a `.tflite` head (see the module docs) into a validated [`HeadGraph`].
///
/// # Errors
/// An [`Error`], one line: not a TFLite FlatBuffer or a malformed one; not exactly
/// one input `[1, N, 96]` and one output; the first unsupported operator (name and index)
/// or weight type; an `IF` that is not openWakeWord's two-stage form; then
/// [`HeadGraph::check`]'s faults.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<HeadGraph, Error> {
    let model = read_model(bytes)?;
    let main = &model.subgraphs[0];
    let err = Error::new;
    let [input] = main.inputs[..] else {
        return Err(err(format!("the model has {} inputs (a head has one)", main.inputs.len())));
    };
    let [output] = main.outputs[..] else {
        return Err(err(format!("the model has {} outputs (a head has one)", main.outputs.len())));
    };
    let stage = |sg: usize, bound: Binding| Stage {
        model: &model,
        sg,
        bound,
        limits,
        graph: pb::GraphProto::default(),
        inits: Vec::new(),
        fresh: 0,
    };
    let ifs: Vec<usize> = (0..main.ops.len()).filter(|&k| main.ops[k].code == code::IF).collect();
    match ifs[..] {
        [] => {
            let all: Vec<usize> = (0..main.ops.len()).collect();
            stage(0, Binding::new()).walk(&all, input, output)
        }
        [k] => {
            let two = two_stage(&model, k, input, output).map_err(|m| {
                err(format!(
                    "IF operator #{k}: {m} (only openWakeWord's two-stage form is supported)"
                ))
            })?;
            let first = stage(0, Binding::new()).walk(&two.stage1_ops, input, two.score)?;
            let then_ops: Vec<usize> = (0..model.subgraphs[two.then_sg].ops.len()).collect();
            let second =
                stage(two.then_sg, two.bound).walk(&then_ops, two.then_input, two.then_output)?;
            if second.frames != first.frames {
                return Err(err("the second stage reads another number of frames".to_string()));
            }
            let head = HeadGraph {
                frames: first.frames,
                layers: first.layers,
                stage2: Some(SecondStage { threshold: two.threshold, layers: second.layers }),
            };
            head.check(limits)?;
            Ok(head)
        }
        _ => Err(err(format!("the model has {} IF operators (at most one)", ifs.len()))),
    }
}

/// openWakeWord's two-stage form around `IF` operator `k` of the main subgraph.
struct TwoStage {
    /// The first stage's operators (all but the condition and the `IF`).
    stage1_ops: Vec<usize>,
    /// The first stage's score tensor.
    score: i32,
    threshold: f32,
    then_sg: usize,
    bound: Binding,
    then_input: i32,
    then_output: i32,
}

fn two_stage(model: &Model<'_>, k: usize, input: i32, output: i32) -> Result<TwoStage, String> {
    let main = &model.subgraphs[0];
    let op = &main.ops[k];
    if op.outputs[..] != [output] {
        return Err("its result is not the model's output".into());
    }
    let opts = op.options.filter(|_| op.options_type == options::IF).ok_or("no IF options")?;
    let index = |slot| -> Result<usize, String> {
        let i = opts.i32(slot, 0)?;
        usize::try_from(i)
            .ok()
            .filter(|&i| i > 0 && i < model.subgraphs.len())
            .ok_or_else(|| format!("subgraph {i} does not exist"))
    };
    let (then_sg, else_sg) = (index(0)?, index(1)?);
    let producer = |t: i32| main.ops.iter().position(|o| o.outputs.contains(&t));
    // cond = [RESHAPE] GREATER_EQUAL(score, threshold)
    let &cond = op.inputs.first().ok_or("no condition")?;
    let mut skip = vec![k];
    let mut c = producer(cond).ok_or("the condition is not computed")?;
    if main.ops[c].code == code::RESHAPE {
        skip.push(c);
        let &x = main.ops[c].inputs.first().ok_or("a RESHAPE without input")?;
        c = producer(x).ok_or("the condition is not computed")?;
    }
    let ge = &main.ops[c];
    if ge.code != code::GREATER_EQUAL || ge.inputs.len() != 2 {
        return Err("the condition is not GREATER_EQUAL(score, threshold)".into());
    }
    skip.push(c);
    let score = ge.inputs[0];
    let threshold = {
        let t = usize::try_from(ge.inputs[1]).ok().and_then(|t| main.tensors.get(t));
        let data = t
            .filter(|t| t.dtype == FLOAT32 && t.buffer > 0)
            .and_then(|t| model.buffers.get(t.buffer));
        match data {
            Some(d) if d.len() == 4 => f32::from_le_bytes([d[0], d[1], d[2], d[3]]),
            _ => return Err("the threshold is not one float32 constant".into()),
        }
    };
    // IF operands: the else subgraph returns the one bound to `score`.
    let operands = &op.inputs[1..];
    let els = &model.subgraphs[else_sg];
    let passthrough = els.ops.is_empty()
        && matches!(els.outputs[..], [o] if els.inputs.iter().position(|&i| i == o)
            .is_some_and(|p| operands.get(p) == Some(&score)));
    if !passthrough {
        return Err("the else branch does not return the first stage's score".into());
    }
    let then = &model.subgraphs[then_sg];
    if then.inputs.len() != operands.len() {
        return Err("the then branch takes another number of inputs".into());
    }
    let [then_output] = then.outputs[..] else {
        return Err("the then branch has not one output".into());
    };
    let mut then_input = None;
    let mut bound = Binding::new();
    for (p, &o) in operands.iter().enumerate() {
        if o == input {
            then_input = Some(then.inputs[p]);
            bound.push(None);
        } else {
            bound.push(usize::try_from(o).ok().map(|o| (0, o)));
        }
    }
    let then_input = then_input.ok_or("the then branch does not read the model's input")?;
    let stage1_ops = (0..main.ops.len()).filter(|o| !skip.contains(o)).collect();
    Ok(TwoStage { stage1_ops, score, threshold, then_sg, bound, then_input, then_output })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flatbuffer::Table;

    const COMPUTER: &[u8] = include_bytes!("../../../models/tests/data/custom/computer_v2.tflite");

    /// openWakeWord's heads, as neon-models reads them.
    const LIMITS: Limits =
        Limits { frame_width: 96, max_frames: 120, max_features: 1 << 16, max_layers: 256 };

    fn message(bytes: &[u8]) -> String {
        let Err(e) = parse(bytes, &LIMITS) else { panic!("parsed") };
        let e = e.to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    /// The file with every FULLY_CONNECTED operator code rewritten to `code`.
    fn with_opcode(code: u8) -> Vec<u8> {
        let mut b = COMPUTER.to_vec();
        let root = Table::root(COMPUTER).unwrap();
        let codes = root.vector(1, 4).unwrap().unwrap();
        for i in 0..codes.len() {
            let c = codes.table(i).unwrap();
            let fc = i32::from(c.u8(0, 0).unwrap() as i8).max(c.i32(3, 0).unwrap());
            if fc == code::FULLY_CONNECTED {
                b[c.field(0).unwrap().unwrap()] = code;
                if let Some(p) = c.field(3).unwrap() {
                    b[p..p + 4].copy_from_slice(&i32::from(code).to_le_bytes());
                }
            }
        }
        b
    }

    #[test]
    fn an_unsupported_operator_is_named() {
        parse(COMPUTER, &LIMITS).unwrap();
        let e = message(&with_opcode(3));
        assert!(e.contains("unsupported operator CONV_2D operator #1"), "{e}");
        let e = message(&with_opcode(126));
        assert!(e.contains("BATCH_MATMUL"), "{e}");
    }

    #[test]
    fn tensors_other_than_float32_are_refused_by_type() {
        // Constants typed int32 (RESHAPE's shape, MEAN's axes) retyped float16; float32 is
        // the schema's default, so its type field is not stored and cannot be patched.
        let mut b = COMPUTER.to_vec();
        let root = Table::root(COMPUTER).unwrap();
        let sg = root.vector(2, 4).unwrap().unwrap().table(0).unwrap();
        let tensors = sg.vector(0, 4).unwrap().unwrap();
        let mut patched = 0;
        for i in 0..tensors.len() {
            let t = tensors.table(i).unwrap();
            if t.u8(1, 0).unwrap() == INT32 && t.u32(2, 0).unwrap() > 0 {
                b[t.field(1).unwrap().unwrap()] = 1;
                patched += 1;
            }
        }
        assert!(patched > 0);
        let e = message(&b);
        assert!(e.contains("is float16; only float32 weights are supported"), "{e}");
    }

    #[test]
    fn not_tflite_and_no_subgraphs_are_clean_errors() {
        assert!(message(b"\x08\0\0\0ONNXabcd").contains("not a TFLite model"));
        assert!(message(&COMPUTER[..64]).contains("malformed TFLite file"));
    }
}
