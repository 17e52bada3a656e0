//! `.tflite` models: the FlatBuffer decode shared by the readers, and the readers.
//!
//! The FlatBuffer is read with the bounds-checked reader of `flatbuffer.rs` (tables
//! and field slots of TFLite's `schema.fbs`: `Model`, `SubGraph`, `Tensor`, `Buffer`,
//! `Operator`, `OperatorCode`); this module decodes those tables once (`decode`) and the
//! readers walk the result:
//!
//! - [`parse`] (`head.rs`): openWakeWord's float32 wake-word heads → [`HeadGraph`](crate::HeadGraph);
//! - [`parse_stream`] (`stream/`): microWakeWord's int8 streaming models → [`StreamGraph`];
//!   [`stream_plan`] (`stream/plan.rs`) turns one into neon-runtime's `StreamPlan`
//!   ([`load_stream_plan`]: both from the file's bytes).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::flatbuffer::Table;
use crate::Error;

mod head;
mod stream;

pub use head::parse;
pub use stream::quant;
pub use stream::{load_stream_plan, stream_plan, window};
pub use stream::{
    parse_stream, Conv2d, DType, Filter, FullyConnected, FusedActivation, Padding, StreamGraph,
    StreamOp, TensorSpec, VarSpec,
};

/// TFLite `BuiltinOperator` codes used here (schema.fbs).
mod code {
    pub const ADD: i32 = 0;
    pub const CONCATENATION: i32 = 2;
    pub const CONV_2D: i32 = 3;
    pub const DEPTHWISE_CONV_2D: i32 = 4;
    pub const DEQUANTIZE: i32 = 6;
    pub const FULLY_CONNECTED: i32 = 9;
    pub const LOGISTIC: i32 = 14;
    pub const MUL: i32 = 18;
    pub const RELU: i32 = 19;
    pub const RESHAPE: i32 = 22;
    pub const CUSTOM: i32 = 32;
    pub const MEAN: i32 = 40;
    pub const SUB: i32 = 41;
    pub const DIV: i32 = 42;
    pub const NEG: i32 = 59;
    pub const GREATER_EQUAL: i32 = 62;
    pub const SQRT: i32 = 75;
    pub const RSQRT: i32 = 76;
    pub const STRIDED_SLICE: i32 = 45;
    pub const SQUARED_DIFFERENCE: i32 = 99;
    pub const SPLIT_V: i32 = 102;
    pub const QUANTIZE: i32 = 114;
    pub const IF: i32 = 118;
    pub const CALL_ONCE: i32 = 129;
    pub const VAR_HANDLE: i32 = 142;
    pub const READ_VARIABLE: i32 = 143;
    pub const ASSIGN_VARIABLE: i32 = 144;
}

/// TFLite `BuiltinOptions` union types used here.
mod options {
    pub const CONV_2D: u8 = 1;
    pub const DEPTHWISE_CONV_2D: u8 = 2;
    pub const FULLY_CONNECTED: u8 = 8;
    pub const CONCATENATION: u8 = 10;
    pub const RESHAPE: u8 = 17;
    pub const STRIDED_SLICE: u8 = 32;
    pub const SPLIT_V: u8 = 79;
    pub const IF: u8 = 92;
    pub const CALL_ONCE: u8 = 103;
    pub const VAR_HANDLE: u8 = 111;
}

/// TFLite `TensorType` values.
const FLOAT32: u8 = 0;
const INT32: u8 = 2;
const UINT8: u8 = 3;
const INT8: u8 = 9;
const RESOURCE: u8 = 13;

/// The name of a builtin operator in messages.
fn op_name(c: i32) -> String {
    let known = match c {
        code::ADD => "ADD",
        1 => "AVERAGE_POOL_2D",
        code::CONCATENATION => "CONCATENATION",
        code::CONV_2D => "CONV_2D",
        code::DEPTHWISE_CONV_2D => "DEPTHWISE_CONV_2D",
        code::DEQUANTIZE => "DEQUANTIZE",
        code::FULLY_CONNECTED => "FULLY_CONNECTED",
        code::LOGISTIC => "LOGISTIC",
        16 => "LSTM",
        17 => "MAX_POOL_2D",
        code::MUL => "MUL",
        code::RELU => "RELU",
        21 => "RELU6",
        code::RESHAPE => "RESHAPE",
        25 => "SOFTMAX",
        28 => "TANH",
        code::CUSTOM => "CUSTOM",
        39 => "TRANSPOSE",
        code::MEAN => "MEAN",
        code::SUB => "SUB",
        code::DIV => "DIV",
        43 => "SQUEEZE",
        code::STRIDED_SLICE => "STRIDED_SLICE",
        code::NEG => "NEG",
        code::GREATER_EQUAL => "GREATER_EQUAL",
        70 => "EXPAND_DIMS",
        code::SQRT => "SQRT",
        code::RSQRT => "RSQRT",
        code::SQUARED_DIFFERENCE => "SQUARED_DIFFERENCE",
        code::SPLIT_V => "SPLIT_V",
        code::QUANTIZE => "QUANTIZE",
        code::IF => "IF",
        126 => "BATCH_MATMUL",
        code::CALL_ONCE => "CALL_ONCE",
        code::VAR_HANDLE => "VAR_HANDLE",
        code::READ_VARIABLE => "READ_VARIABLE",
        code::ASSIGN_VARIABLE => "ASSIGN_VARIABLE",
        _ => return format!("builtin operator {c}"),
    };
    known.into()
}

/// The name of a tensor type in messages.
fn type_name(t: u8) -> &'static str {
    match t {
        0 => "float32",
        1 => "float16",
        2 => "int32",
        3 => "uint8",
        4 => "int64",
        6 => "bool",
        7 => "int16",
        9 => "int8",
        10 => "float64",
        RESOURCE => "resource",
        _ => "another type",
    }
}

/// A tensor's quantisation (`QuantizationParameters`): `real = scale * (q - zero_point)`,
/// one (scale, zero point) per tensor or, for a per-channel tensor, one per index of
/// dimension `axis`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantization {
    /// Scales (slot 2), one or one per channel.
    pub scale: Vec<f32>,
    /// Zero points (slot 3), as many as `scale`.
    pub zero_point: Vec<i64>,
    /// The channel dimension of a per-channel tensor (`quantized_dimension`, slot 6).
    pub axis: i32,
}

struct Tensor<'a> {
    shape: Vec<i32>,
    dtype: u8,
    buffer: usize,
    name: &'a str,
    /// Absent when the file gives no scale.
    quant: Option<Quantization>,
    /// A variable tensor (slot 5), which TFLite keeps between invocations.
    is_variable: bool,
}

/// A tensor's `QuantizationParameters` (Tensor slot 4), if it has scales.
fn quantization(t: &Table<'_>) -> Result<Option<Quantization>, String> {
    let Some(q) = t.table(4)? else { return Ok(None) };
    let scale: Vec<f32> = q.vector(2, 4)?.map(|v| v.f32s().collect()).unwrap_or_default();
    if scale.is_empty() {
        return Ok(None);
    }
    let zero_point = q.vector(3, 8)?.map(|v| v.i64s().collect()).unwrap_or_default();
    Ok(Some(Quantization { scale, zero_point, axis: q.i32(6, 0)? }))
}

struct Operator<'a> {
    code: i32,
    custom: &'a str,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    options_type: u8,
    options: Option<Table<'a>>,
}

struct Subgraph<'a> {
    tensors: Vec<Tensor<'a>>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    ops: Vec<Operator<'a>>,
}

struct Model<'a> {
    subgraphs: Vec<Subgraph<'a>>,
    buffers: Vec<&'a [u8]>,
}

fn ints(t: &Table<'_>, slot: usize) -> Result<Vec<i32>, String> {
    Ok(t.vector(slot, 4)?.map(|v| v.i32s().collect()).unwrap_or_default())
}

/// The name of a fused activation (`ActivationFunctionType`) in messages.
fn activation_name(a: u8) -> &'static str {
    ["NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT"]
        .get(usize::from(a))
        .unwrap_or(&"?")
}

/// [`decode`], its fault as the crate's one-line [`Error`].
fn read_model(bytes: &[u8]) -> Result<Model<'_>, Error> {
    decode(bytes).map_err(|m| {
        let m =
            if m.starts_with("not a TFLite") { m } else { format!("malformed TFLite file: {m}") };
        Error::new(m)
    })
}

/// Decodes the tables the readers need.
fn decode(bytes: &[u8]) -> Result<Model<'_>, String> {
    if bytes.get(4..8) != Some(b"TFL3") {
        return Err("not a TFLite model (no TFL3 identifier)".into());
    }
    let root = Table::root(bytes)?;
    let mut codes = Vec::new();
    if let Some(v) = root.vector(1, 4)? {
        for i in 0..v.len() {
            let c = v.table(i)?;
            let deprecated = i32::from(c.u8(0, 0)? as i8);
            codes.push((deprecated.max(c.i32(3, 0)?), c.string(1)?.unwrap_or("")));
        }
    }
    let mut buffers = Vec::new();
    if let Some(v) = root.vector(4, 4)? {
        for i in 0..v.len() {
            let b = v.table(i)?;
            if b.u64(1, 0)? > 1 {
                return Err(format!("buffer {i} is stored outside the FlatBuffer (not supported)"));
            }
            buffers.push(b.vector(0, 1)?.map(|d| d.bytes()).unwrap_or(&[]));
        }
    }
    let mut subgraphs = Vec::new();
    let sgs = root.vector(2, 4)?.filter(|v| !v.is_empty());
    let Some(sgs) = sgs else { return Err("the model has no subgraphs".into()) };
    for s in 0..sgs.len() {
        let sg = sgs.table(s)?;
        let mut tensors = Vec::new();
        if let Some(v) = sg.vector(0, 4)? {
            for i in 0..v.len() {
                let t = v.table(i)?;
                if t.u32(10, 0)? != 0 {
                    return Err(format!("tensor {i} is stored outside the file (not supported)"));
                }
                tensors.push(Tensor {
                    shape: ints(&t, 0)?,
                    dtype: t.u8(1, FLOAT32)?,
                    buffer: t.u32(2, 0)? as usize,
                    name: t.string(3)?.unwrap_or(""),
                    quant: quantization(&t)?,
                    is_variable: t.u8(5, 0)? != 0,
                });
            }
        }
        let mut ops = Vec::new();
        if let Some(v) = sg.vector(3, 4)? {
            for i in 0..v.len() {
                let o = v.table(i)?;
                let index = o.u32(0, 0)? as usize;
                let &(code, custom) = codes.get(index).ok_or_else(|| {
                    format!("operator {i} of subgraph {s}: no operator code {index}")
                })?;
                ops.push(Operator {
                    code,
                    custom,
                    inputs: ints(&o, 1)?,
                    outputs: ints(&o, 2)?,
                    options_type: o.u8(3, 0)?,
                    options: o.table(4)?,
                });
            }
        }
        subgraphs.push(Subgraph { tensors, inputs: ints(&sg, 1)?, outputs: ints(&sg, 2)?, ops });
    }
    Ok(Model { subgraphs, buffers })
}
