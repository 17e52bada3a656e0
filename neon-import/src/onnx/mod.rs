//! `.onnx` wake-word heads → [`HeadGraph`].
//!
//! The file is decoded with prost into ONNX's own message types ([`crate::onnx_proto`],
//! generated from `onnx.proto`), then the graph is walked by tensor name from its single
//! input to its single output (any topological node order). Recognised, for any hidden
//! width and depth (what openWakeWord's `train.py` exports with `torch.onnx.export`, and what
//! tf2onnx makes of the TFLite files, as community models on the collections are):
//!
//! - input `[1 or symbolic, N, 96]` float (96: [`Limits::frame_width`]), N in
//!   1..=[`Limits::max_frames`]; `Flatten` (axis 0, 1 or -2) or `Reshape` to
//!   `[1 | -1 | 0, N * 96 | -1]` (shape an initializer or `Constant`);
//! - `Gemm` (`transA` 0, `transB` 0 or 1, `alpha` and `beta` folded into the weights) or
//!   `MatMul` by a constant `[in, out]`; without a bias of its own, optionally followed by
//!   an `Add` of a constant bias (either operand order) → [`Layer::Dense`];
//! - `LayerNormalization` (axis -1, `epsilon`, scale, optional bias) → [`Layer::LayerNorm`];
//! - a decomposed LayerNorm: any connected group of `ReduceMean` (axes as attribute or, from
//!   opset 18, input), `Sub`, `Mul`, `Pow`, `Div`, `Sqrt`, `Reciprocal`, `Neg`, `Add` and
//!   `Identity` nodes on one `[1, H]` tensor with constant other operands (torch's
//!   ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt, Div, Mul, Add; TF's batchnorm form
//!   Mul(d, d), Reciprocal(Sqrt), x * (g * r) + (b - m * g * r); with or without the affine
//!   part). eps is the constant added to the variance; scale and shift are read by
//!   evaluating the group (in f64) at zero and at two probe rows, and the group is then
//!   checked against `(x - mean) / sqrt(var + eps) * scale + shift` on six seeded random
//!   rows (relative error at most 1e-6), so a group that computes anything else is refused;
//! - `Relu`, `Sigmoid`; `Identity` anywhere; `Constant` nodes as operands.
//!
//! Weights must be float32 (`raw_data`, little endian, or `float_data`) stored in the file;
//! float16 / int8 / external data are refused by name. Two-stage models (an `If` node, as in
//! openWakeWord's `hey_jarvis_v0.1.onnx`) are not supported: the error says so (its
//! `.tflite` file loads). Every fault is an [`Error`] with one line naming the first
//! unsupported node (op type, name, index). No input bytes can make the parser panic, and
//! every allocation is bounded by the bytes present (tensor element counts are checked
//! against the data actually stored; decoded protobuf is at most a small multiple of the
//! file).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use prost::Message;

use crate::onnx_proto as pb;
use crate::{Error, HeadGraph, Layer, Limits};

mod norm;
use norm::{decomposed_norm, NORM_OPS};

/// ONNX `TensorProto.DataType` values named in messages.
fn dtype_name(t: i32) -> &'static str {
    match t {
        1 => "float32",
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        7 => "int64",
        9 => "bool",
        10 => "float16",
        11 => "float64",
        16 => "bfloat16",
        _ => "another type",
    }
}

/// A constant tensor: dims and values (float32 or int64).
struct Const {
    dims: Vec<usize>,
    data: ConstData,
}

enum ConstData {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// Decodes a `TensorProto` (float32 or int64, data in the file). `what` names it in errors.
fn decode_tensor(t: &pb::TensorProto, what: &str) -> Result<Const, String> {
    if t.data_location == Some(1) || !t.external_data.is_empty() {
        return Err(format!("{what} is stored in an external file (only weights inside the .onnx file are supported)"));
    }
    if t.segment.is_some() {
        return Err(format!("{what} is segmented (not supported)"));
    }
    let mut dims = Vec::with_capacity(t.dims.len().min(8));
    let mut numel: usize = 1;
    for &d in &t.dims {
        let d = usize::try_from(d).map_err(|_| format!("{what} has a negative dimension"))?;
        numel = numel.checked_mul(d).ok_or_else(|| format!("{what} is too large"))?;
        dims.push(d);
    }
    let raw = t.raw_data.as_deref();
    let dtype = t.data_type.unwrap_or(0);
    let count = |stored: usize, size: usize| -> Result<(), String> {
        if numel.checked_mul(size) != Some(stored) {
            return Err(format!(
                "{what}: {numel} elements declared, {stored} bytes of data stored"
            ));
        }
        Ok(())
    };
    let data = match dtype {
        1 => ConstData::F32(match raw {
            Some(raw) => {
                count(raw.len(), 4)?;
                raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            None => {
                count(t.float_data.len() * 4, 4)?;
                t.float_data.clone()
            }
        }),
        7 => ConstData::I64(match raw {
            Some(raw) => {
                count(raw.len(), 8)?;
                raw.chunks_exact(8)
                    .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                    .collect()
            }
            None => {
                count(t.int64_data.len() * 8, 8)?;
                t.int64_data.clone()
            }
        }),
        other => {
            return Err(format!(
                "{what} has data type {other} ({}); only float32 weights are supported",
                dtype_name(other)
            ))
        }
    };
    Ok(Const { dims, data })
}

/// A name shortened and escaped for a one-line message.
pub(crate) fn short(name: &str) -> String {
    let mut s: String = name.chars().take(80).collect::<String>().escape_debug().collect();
    if name.chars().count() > 80 {
        s.push_str("...");
    }
    s
}

/// The attribute `name` of `node`.
fn attr<'n>(node: &'n pb::NodeProto, name: &str) -> Option<&'n pb::AttributeProto> {
    node.attribute.iter().find(|a| a.name.as_deref() == Some(name))
}

fn attr_i(node: &pb::NodeProto, name: &str, default: i64) -> i64 {
    attr(node, name).and_then(|a| a.i).unwrap_or(default)
}

fn attr_f(node: &pb::NodeProto, name: &str, default: f32) -> f32 {
    attr(node, name).and_then(|a| a.f).unwrap_or(default)
}

/// The graph with its name indexes.
struct Graph<'a> {
    nodes: &'a [pb::NodeProto],
    inits: BTreeMap<&'a str, &'a pb::TensorProto>,
    /// Output name → index of the `Constant` node producing it.
    const_nodes: BTreeMap<&'a str, usize>,
    consumers: BTreeMap<&'a str, Vec<usize>>,
    limits: &'a Limits,
}

impl<'a> Graph<'a> {
    fn err(&self, message: impl Into<String>) -> Error {
        Error::new(message)
    }

    /// "`Gemm` node `name` (#3)".
    fn label(&self, i: usize) -> String {
        let n = &self.nodes[i];
        format!(
            "`{}` node `{}` (#{i})",
            short(n.op_type.as_deref().unwrap_or("")),
            short(n.name.as_deref().unwrap_or(""))
        )
    }

    fn op(&self, i: usize) -> &'a str {
        let n = &self.nodes[i];
        match n.domain.as_deref() {
            None | Some("") | Some("ai.onnx") => n.op_type.as_deref().unwrap_or(""),
            Some(_) => "",
        }
    }

    fn consumers(&self, tensor: &str) -> &[usize] {
        self.consumers.get(tensor).map_or(&[], Vec::as_slice)
    }

    fn is_const(&self, name: &str) -> bool {
        self.inits.contains_key(name) || self.const_nodes.contains_key(name)
    }

    /// The constant `name` (an initializer or a `Constant` node's output).
    fn constant(&self, name: &str) -> Result<Const, Error> {
        let what = format!("tensor `{}`", short(name));
        if let Some(t) = self.inits.get(name) {
            return decode_tensor(t, &what).map_err(|m| self.err(m));
        }
        let Some(&i) = self.const_nodes.get(name) else {
            return Err(self.err(format!("{what} is not a constant")));
        };
        let n = &self.nodes[i];
        let bad = || self.err(format!("{}: unsupported constant value", self.label(i)));
        let a = n.attribute.first().filter(|_| n.attribute.len() == 1).ok_or_else(bad)?;
        match a.name.as_deref() {
            Some("value") => {
                let t = a.t.as_ref().ok_or_else(bad)?;
                decode_tensor(t, &what).map_err(|m| self.err(m))
            }
            Some("value_float") => {
                Ok(Const { dims: vec![], data: ConstData::F32(vec![a.f.ok_or_else(bad)?]) })
            }
            Some("value_floats") => {
                Ok(Const { dims: vec![a.floats.len()], data: ConstData::F32(a.floats.clone()) })
            }
            Some("value_int") => {
                Ok(Const { dims: vec![], data: ConstData::I64(vec![a.i.ok_or_else(bad)?]) })
            }
            Some("value_ints") => {
                Ok(Const { dims: vec![a.ints.len()], data: ConstData::I64(a.ints.clone()) })
            }
            _ => Err(bad()),
        }
    }

    /// The float32 constant `name`: (dims, values).
    fn f32_const(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>), Error> {
        let c = self.constant(name)?;
        match c.data {
            ConstData::F32(v) => Ok((c.dims, v)),
            ConstData::I64(_) => Err(self.err(format!(
                "tensor `{}` has data type 7 (int64); only float32 weights are supported",
                short(name)
            ))),
        }
    }

    /// The int64 constant `name`.
    fn i64_const(&self, name: &str) -> Result<Vec<i64>, Error> {
        match self.constant(name)?.data {
            ConstData::I64(v) => Ok(v),
            ConstData::F32(_) => {
                Err(self.err(format!("tensor `{}` is not an int64 constant", short(name))))
            }
        }
    }
}

/// A `[features]` vector from a constant that broadcasts along one row `[1, features]`:
/// one value (repeated) or `features` values (dims `[F]`, `[1, F]`, ...).
fn row_vector(dims: &[usize], v: Vec<f32>, features: usize) -> Option<Vec<f32>> {
    let lead_ones = dims.len() <= 2 && dims.iter().rev().skip(1).all(|&d| d == 1);
    if !lead_ones {
        return None;
    }
    if v.len() == features {
        Some(v)
    } else if v.len() == 1 {
        Some(vec![v[0]; features])
    } else {
        None
    }
}

/// Parses an `.onnx` head (see the module docs) into a validated [`HeadGraph`].
///
/// # Errors
/// An [`Error`], one line: not protobuf / not a model; not exactly one input
/// `[1, N, 96]` or output; unsupported dtypes or external data; the first node the walk
/// cannot take (op type, name, index); a two-stage (`If`) model; then [`HeadGraph::check`]'s
/// faults.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<HeadGraph, Error> {
    let model = pb::ModelProto::decode(bytes)
        .map_err(|e| Error::new(format!("not an ONNX model ({e})")))?;
    let graph = model.graph.as_ref().ok_or_else(|| Error::new("not an ONNX model (no graph)"))?;
    walk(graph, limits)
}

/// Walks `graph` from its one input to its one output (see the module docs) into a
/// validated one-stage [`HeadGraph`]. The `.tflite` parser builds such a graph from each
/// stage of a TFLite head ([`crate::tflite`]), so both formats share this walk.
///
/// # Errors
/// As [`parse`], after decoding.
pub(crate) fn walk(graph: &pb::GraphProto, limits: &Limits) -> Result<HeadGraph, Error> {
    let nodes = graph.node.as_slice();
    let mut g = Graph {
        nodes,
        inits: BTreeMap::new(),
        const_nodes: BTreeMap::new(),
        consumers: BTreeMap::new(),
        limits,
    };
    for t in &graph.initializer {
        g.inits.insert(t.name.as_deref().unwrap_or(""), t);
    }
    for (i, n) in nodes.iter().enumerate() {
        match g.op(i) {
            "If" => {
                return Err(g.err(format!(
                    "{}: two-stage models (an `If` node, as in openWakeWord's hey_jarvis) are not supported in .onnx form; use the model's .tflite file",
                    g.label(i)
                )))
            }
            "Constant" => {
                if let Some(o) = n.output.first() {
                    g.const_nodes.insert(o.as_str(), i);
                }
            }
            _ => {}
        }
        for input in &n.input {
            if !input.is_empty() {
                let c = g.consumers.entry(input.as_str()).or_default();
                if c.last() != Some(&i) {
                    c.push(i);
                }
            }
        }
    }

    // The one non-initializer input `[1 | symbolic, N, 96]` and the one output.
    let inputs: Vec<&pb::ValueInfoProto> = graph
        .input
        .iter()
        .filter(|v| !g.inits.contains_key(v.name.as_deref().unwrap_or("")))
        .collect();
    let [input] = inputs.as_slice() else {
        return Err(g.err(format!("the graph has {} inputs (a head has one)", inputs.len())));
    };
    let [output] = graph.output.as_slice() else {
        return Err(g.err(format!("the graph has {} outputs (a head has one)", graph.output.len())));
    };
    let frames = input_frames(&g, input)?;
    let input_name = input.name.as_deref().unwrap_or("");
    let output_name = output.name.as_deref().unwrap_or("");

    let mut layers = Vec::new();
    let mut cur: &str = input_name;
    let mut width = 0usize; // 0 until the flatten
    let mut steps = 0usize;
    while cur != output_name || !g.consumers(cur).is_empty() {
        steps += 1;
        if steps > nodes.len() + 1 || layers.len() > limits.max_layers {
            return Err(g.err("the graph does not reach its output through a chain of layers"));
        }
        let cons = g.consumers(cur);
        let Some(&i) = cons.first() else {
            return Err(g.err(format!(
                "tensor `{}` is not used, and is not the graph's output `{}`",
                short(cur),
                short(output_name)
            )));
        };
        let n = &nodes[i];
        let op = g.op(i);
        let first_in = n.input.first().map(String::as_str) == Some(cur);
        let out0 = || {
            n.output
                .first()
                .map(String::as_str)
                .filter(|o| !o.is_empty())
                .ok_or_else(|| g.err(format!("{} has no output", g.label(i))))
        };
        if cons.len() == 1 && first_in {
            match op {
                "Identity" => {
                    cur = out0()?;
                    continue;
                }
                "Flatten" if width == 0 => {
                    if !matches!(attr_i(n, "axis", 1), 0 | 1 | -2 | -3) {
                        return Err(
                            g.err(format!("{}: flattens at another axis than 1", g.label(i)))
                        );
                    }
                    width = frames * limits.frame_width;
                    cur = out0()?;
                    continue;
                }
                "Reshape" if width == 0 => {
                    let shape = match n.input.get(1) {
                        Some(s) if g.is_const(s) => g.i64_const(s)?,
                        _ => {
                            return Err(
                                g.err(format!("{}: the shape is not a constant", g.label(i)))
                            )
                        }
                    };
                    let f = (frames * limits.frame_width) as i64;
                    let zero_ok = attr_i(n, "allowzero", 0) == 0;
                    let ok = match shape.as_slice() {
                        [a, b] => {
                            (*a == 1 || *a == -1 || (*a == 0 && zero_ok))
                                && (*b == f || (*b == -1 && *a != -1))
                        }
                        _ => false,
                    };
                    if !ok {
                        return Err(
                            g.err(format!("{}: reshapes to {shape:?}, not [1, {f}]", g.label(i)))
                        );
                    }
                    width = frames * limits.frame_width;
                    cur = out0()?;
                    continue;
                }
                "Gemm" | "MatMul" if width > 0 => {
                    let dense = if op == "Gemm" { gemm } else { matmul };
                    let (layer, out, next) = dense(&g, i, width)?;
                    width = out;
                    layers.push(layer);
                    cur = next;
                    continue;
                }
                "Relu" if width > 0 => {
                    layers.push(Layer::Relu);
                    cur = out0()?;
                    continue;
                }
                "Sigmoid" if width > 0 => {
                    layers.push(Layer::Sigmoid);
                    cur = out0()?;
                    continue;
                }
                "LayerNormalization" if width > 0 => {
                    layers.push(layer_normalization(&g, i, width)?);
                    cur = out0()?;
                    continue;
                }
                _ => {}
            }
        }
        if width > 0 && cons.iter().all(|&c| NORM_OPS.contains(&g.op(c))) {
            let (layer, exit) = decomposed_norm(&g, cur, width, output_name)?;
            layers.push(layer);
            cur = exit;
            continue;
        }
        let first_bad =
            cons.iter().copied().find(|&c| !NORM_OPS.contains(&g.op(c)) || width == 0).unwrap_or(i);
        return Err(g.err(format!(
            "unsupported node {} on tensor `{}`{}",
            g.label(first_bad),
            short(cur),
            if width == 0 { " (a head starts with Flatten or Reshape)" } else { "" }
        )));
    }
    if width == 0 || layers.is_empty() {
        return Err(g.err("the graph has no layers"));
    }
    let head = HeadGraph { frames, layers, stage2: None };
    head.check(limits)?;
    Ok(head)
}

/// N of the input `[1 | symbolic, N, 96]` (float32; 96 is [`Limits::frame_width`]).
fn input_frames(g: &Graph<'_>, input: &pb::ValueInfoProto) -> Result<usize, Error> {
    let name = short(input.name.as_deref().unwrap_or(""));
    let tensor = match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(pb::type_proto::Value::TensorType(t)) => t,
        _ => return Err(g.err(format!("input `{name}` is not a tensor"))),
    };
    if tensor.elem_type != Some(1) {
        let t = tensor.elem_type.unwrap_or(0);
        return Err(g.err(format!("input `{name}` is {} (expected float32)", dtype_name(t))));
    }
    use pb::tensor_shape_proto::dimension::Value as D;
    let (width, max) = (g.limits.frame_width as u64, g.limits.max_frames);
    let dims: Vec<Option<i64>> = tensor
        .shape
        .as_ref()
        .map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(D::DimValue(v)) => Some(*v),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    match dims.as_slice() {
        [None | Some(1), Some(n), Some(w)] if u64::try_from(*w).ok() == Some(width) => {
            match usize::try_from(*n) {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(g.err(format!(
                    "input `{name}` reads {n} embedding frames (supported: 1 to {max})"
                ))),
            }
        }
        _ => Err(
            g.err(format!("input `{name}` has shape {dims:?}, not [1, N, {width}] with a fixed N"))
        ),
    }
}

/// A `Gemm` node `i` on the current `[1, width]` tensor, and an `Add` of a constant bias
/// when the `Gemm` has none and one follows: (the dense layer, its width, the tensor after).
fn gemm<'a>(g: &Graph<'a>, i: usize, width: usize) -> Result<(Layer, usize, &'a str), Error> {
    let n = &g.nodes[i];
    let label = || g.label(i);
    if attr_i(n, "transA", 0) != 0 {
        return Err(g.err(format!("{}: transA is not supported", label())));
    }
    let trans_b = match attr_i(n, "transB", 0) {
        0 => false,
        1 => true,
        _ => return Err(g.err(format!("{}: transB is not 0 or 1", label()))),
    };
    let (alpha, beta) = (attr_f(n, "alpha", 1.0), attr_f(n, "beta", 1.0));
    let b_name = match n.input.get(1) {
        Some(b) if g.is_const(b) => b,
        _ => return Err(g.err(format!("{}: the weight is not a constant", label()))),
    };
    let (dims, w) = g.f32_const(b_name)?;
    let weight = dense_weight(g, &label(), &dims, w, width, trans_b)?;
    let out = weight.len() / width;
    let weight: Vec<f32> =
        if alpha == 1.0 { weight } else { weight.into_iter().map(|x| x * alpha).collect() };
    let bias = match n.input.get(2).filter(|c| !c.is_empty()) {
        None => None,
        Some(c) if g.is_const(c) => {
            let (dims, v) = g.f32_const(c)?;
            let v = row_vector(&dims, v, out)
                .ok_or_else(|| g.err(format!("{}: the bias is not [{out}]", label())))?;
            Some(if beta == 1.0 { v } else { v.into_iter().map(|x| x * beta).collect() })
        }
        Some(_) => return Err(g.err(format!("{}: the bias is not a constant", label()))),
    };
    let y = out_name(g, i)?;
    let (bias, next) = match bias {
        Some(b) => (Some(b), y),
        None => following_bias(g, y, out)?,
    };
    Ok((Layer::Dense { in_features: width, out_features: out, weight, bias }, out, next))
}

/// The first output of node `i`.
fn out_name<'a>(g: &Graph<'a>, i: usize) -> Result<&'a str, Error> {
    g.nodes[i]
        .output
        .first()
        .map(String::as_str)
        .filter(|o| !o.is_empty())
        .ok_or_else(|| g.err(format!("{} has no output", g.label(i))))
}

/// When the only consumer of `y` (`[1, out]`) is an `Add` of a constant `[out]` (either
/// operand order): (that bias, the `Add`'s output); otherwise (`None`, `y`).
fn following_bias<'a>(
    g: &Graph<'a>,
    y: &'a str,
    out: usize,
) -> Result<(Option<Vec<f32>>, &'a str), Error> {
    if let [a] = g.consumers(y) {
        let add = &g.nodes[*a];
        if g.op(*a) == "Add" && add.input.len() == 2 {
            let other = if add.input[0] == y { &add.input[1] } else { &add.input[0] };
            if other != y && g.is_const(other) {
                let (dims, v) = g.f32_const(other)?;
                if let Some(v) = row_vector(&dims, v, out) {
                    return Ok((Some(v), out_name(g, *a)?));
                }
            }
        }
    }
    Ok((None, y))
}

/// A dense weight `[out, in]` from a constant `[out, in]` (`transposed`) or `[in, out]`.
fn dense_weight(
    g: &Graph<'_>,
    label: &str,
    dims: &[usize],
    w: Vec<f32>,
    width: usize,
    transposed: bool,
) -> Result<Vec<f32>, Error> {
    let &[d0, d1] = dims else {
        return Err(g.err(format!("{label}: the weight has shape {dims:?}, not a matrix")));
    };
    let (rows_in, out) = if transposed { (d1, d0) } else { (d0, d1) };
    if rows_in != width || out == 0 || out > g.limits.max_features {
        return Err(
            g.err(format!("{label}: the weight has shape {dims:?}, its input is [1, {width}]"))
        );
    }
    if transposed {
        return Ok(w);
    }
    let mut t = vec![0.0f32; w.len()];
    for (k, row) in w.chunks_exact(out).enumerate() {
        for (o, &x) in row.iter().enumerate() {
            t[o * width + k] = x;
        }
    }
    Ok(t)
}

/// A `MatMul` node `i` by a constant `[in, out]`, and an `Add` of a constant bias when one
/// follows: (the dense layer, its width, the tensor after it).
fn matmul<'a>(g: &Graph<'a>, i: usize, width: usize) -> Result<(Layer, usize, &'a str), Error> {
    let n = &g.nodes[i];
    let label = g.label(i);
    let w_name = match n.input.get(1) {
        Some(b) if g.is_const(b) && n.input.len() == 2 => b,
        _ => return Err(g.err(format!("{label}: the weight is not a constant"))),
    };
    let (dims, w) = g.f32_const(w_name)?;
    let weight = dense_weight(g, &label, &dims, w, width, false)?;
    let out = weight.len() / width;
    let (bias, next) = following_bias(g, out_name(g, i)?, out)?;
    Ok((Layer::Dense { in_features: width, out_features: out, weight, bias }, out, next))
}

/// A `LayerNormalization` node `i` over the last axis of `[1, width]`.
fn layer_normalization(g: &Graph<'_>, i: usize, width: usize) -> Result<Layer, Error> {
    let n = &g.nodes[i];
    let label = g.label(i);
    if !matches!(attr_i(n, "axis", -1), -1 | 1) {
        return Err(g.err(format!("{label}: normalises another axis than the last")));
    }
    let eps = attr_f(n, "epsilon", 1e-5);
    let vector = |k: usize, what: &str| -> Result<Option<Vec<f32>>, Error> {
        match n.input.get(k).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(s) if g.is_const(s) => {
                let (dims, v) = g.f32_const(s)?;
                row_vector(&dims, v, width)
                    .map(Some)
                    .ok_or_else(|| g.err(format!("{label}: the {what} is not [{width}]")))
            }
            Some(_) => Err(g.err(format!("{label}: the {what} is not a constant"))),
        }
    };
    let gamma = vector(1, "scale")?;
    let beta = vector(2, "bias")?;
    Ok(Layer::LayerNorm { features: width, eps, gamma, beta })
}
