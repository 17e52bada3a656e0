//! `.tflite` int8 streaming models (microWakeWord) → [`StreamGraph`].
//!
//! A microWakeWord model is one step of a streaming network: its `main` subgraph reads
//! `[1, N, 40]` int8 features, concatenates them with state kept in resource variables,
//! runs convolutions over time and writes the state back; a second subgraph, run once by
//! `CALL_ONCE`, assigns each variable its initial constant. This reader checks such a file
//! and describes it without any run-time type ([`StreamGraph`]): the tensors it reads and
//! writes, the variables with their initial bytes, and `main`'s operators in file order.
//!
//! Recognised (the operators of the 7 models of `tools/microwakeword/FACTS.md` section 3;
//! BuiltinOperator codes and option slots from TFLite's `schema.fbs`):
//! `CONV_2D`, `DEPTHWISE_CONV_2D`, `FULLY_CONNECTED` (int8 weights, int32 bias, fused NONE
//! or RELU), `LOGISTIC`, `CONCATENATION` (every input quantised as the output: a copy),
//! `STRIDED_SLICE` (constant operands, stride 1, no ellipsis / new-axis / shrink masks),
//! `SPLIT_V`, `RESHAPE`, `QUANTIZE`, `DEQUANTIZE`, and the variables: `CALL_ONCE`,
//! `VAR_HANDLE`, `READ_VARIABLE`, `ASSIGN_VARIABLE`.
//!
//! Every fault is one line naming the operator (subgraph, index, name) and the rule. Each
//! operator's output shape is inferred again from its inputs and options and compared with
//! the file's; a tensor is read only after it is computed; a variable is not read after it
//! is assigned in the same step. Allocation is bounded by the file (constants are copied
//! once; shapes are checked against [`Limits::max_features`] before use).

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;

use super::{
    activation_name, code, op_name, read_model, type_name, Model, Operator, Quantization, Subgraph,
    FLOAT32, INT32, INT8, UINT8,
};
use crate::flatbuffer::Table;
use crate::{Error, Limits};

mod ops;
mod plan;
pub use plan::{load_stream_plan, stream_plan, window};
pub mod quant;
#[cfg(test)]
mod tests;
mod vars;

use vars::Vars;

/// The element type of a tensor the stream reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// `INT8` (activations, state, weights).
    I8,
    /// `UINT8` (the output of the official models).
    U8,
    /// `INT32` (biases).
    I32,
    /// `FLOAT32` (state of some community models, around `DEQUANTIZE` / `QUANTIZE`).
    F32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::I32 | DType::F32 => 4,
        }
    }

    fn of(t: u8) -> Option<Self> {
        match t {
            INT8 => Some(DType::I8),
            UINT8 => Some(DType::U8),
            INT32 => Some(DType::I32),
            FLOAT32 => Some(DType::F32),
            _ => None,
        }
    }
}

/// One tensor of `main` as an operator sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    /// Index in `main`'s tensor list.
    pub index: usize,
    /// Element type.
    pub dtype: DType,
    /// Dimensions (TFLite order; NHWC for the convolutions).
    pub shape: Vec<usize>,
    /// Quantisation, if the file gives one (every int8 / uint8 tensor here has one).
    pub quant: Option<Quantization>,
}

impl TensorSpec {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The per-tensor (scale, zero point), if the tensor has exactly one.
    pub fn scale_zp(&self) -> Option<(f32, i64)> {
        let q = self.quant.as_ref()?;
        match (&q.scale[..], &q.zero_point[..]) {
            ([s], [z]) => Some((*s, *z)),
            _ => None,
        }
    }
}

/// A resource variable: its key, type and initial value (assigned by the init subgraph).
#[derive(Clone, Debug, PartialEq)]
pub struct VarSpec {
    /// `VarHandleOptions.container` (empty in the shipped models).
    pub container: String,
    /// `VarHandleOptions.shared_name`, the variable's key (`stream/states`, ...).
    pub shared_name: String,
    /// Element type.
    pub dtype: DType,
    /// Dimensions (`[1, T, 1, C]` in the shipped models).
    pub shape: Vec<usize>,
    /// Quantisation of the initial constant.
    pub quant: Option<Quantization>,
    /// Initial value: `len(shape) * dtype.size()` little-endian bytes.
    pub init: Vec<u8>,
}

/// How a convolution pads its input (`Padding` of schema.fbs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Output `ceil(in / stride)`; the padding split as TFLite does (more after).
    Same,
    /// No padding: output `ceil((in - (k - 1) * dilation) / stride)`.
    Valid,
}

/// The activation fused into an operator (`ActivationFunctionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedActivation {
    /// None: the output saturates to its type's range.
    None,
    /// `max(0, y)`: the quantised output is clamped below at the zero point's value.
    Relu,
}

/// Constant weights of a convolution or fully connected layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// The weight tensor (shape and quantisation as in the file).
    pub spec: TensorSpec,
    /// Its values, row-major as the file stores them (zero point 0).
    pub weights: Vec<i8>,
    /// One scale per output channel (a per-tensor scale repeated).
    pub scales: Vec<f32>,
    /// One int32 bias per output channel, in units of `input scale * weight scale`.
    pub bias: Vec<i32>,
    /// The bias tensor.
    pub bias_spec: TensorSpec,
}

/// A `CONV_2D` or `DEPTHWISE_CONV_2D` on NHWC int8 tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv2d {
    /// Input `[1, H, W, C_in]`.
    pub input: TensorSpec,
    /// Weights: `[C_out, KH, KW, C_in]` (conv, per-channel axis 0) or `[1, KH, KW, C_out]`
    /// (depthwise, per-channel axis 3).
    pub filter: Filter,
    /// Output `[1, OH, OW, C_out]`.
    pub output: TensorSpec,
    /// Padding.
    pub padding: Padding,
    /// (height, width) strides.
    pub stride: [usize; 2],
    /// (height, width) dilation factors.
    pub dilation: [usize; 2],
    /// Output channels per input channel (depthwise; 1 for `CONV_2D`).
    pub depth_multiplier: usize,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// A `FULLY_CONNECTED` on int8 tensors: `y[r, u] = Σ_k x[r, k] w[u, k] + b[u]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FullyConnected {
    /// Input, read as rows of `K` values.
    pub input: TensorSpec,
    /// Weights `[U, K]`, per-tensor.
    pub filter: Filter,
    /// Output `[rows, U]` (or the input's shape with `U` last when `keep_num_dims`).
    pub output: TensorSpec,
    /// Fused activation.
    pub activation: FusedActivation,
}

/// One operator of `main`, in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamOp {
    /// `CONV_2D`.
    Conv2d(Conv2d),
    /// `DEPTHWISE_CONV_2D`.
    DepthwiseConv2d(Conv2d),
    /// `FULLY_CONNECTED`.
    FullyConnected(FullyConnected),
    /// `LOGISTIC`: `1 / (1 + e^-x)` on quantised values.
    Logistic {
        /// Input.
        input: TensorSpec,
        /// Output (same shape).
        output: TensorSpec,
    },
    /// `CONCATENATION` along `axis`; every input is quantised as the output (a copy).
    Concatenation {
        /// Inputs, in order.
        inputs: Vec<TensorSpec>,
        /// Output.
        output: TensorSpec,
        /// The axis, made non-negative.
        axis: usize,
    },
    /// `STRIDED_SLICE` with stride 1: output dimension `d` is input range
    /// `begin[d]..end[d]` (masks and negative indices already resolved).
    StridedSlice {
        /// Input.
        input: TensorSpec,
        /// Output.
        output: TensorSpec,
        /// Resolved start per dimension.
        begin: Vec<usize>,
        /// Resolved end (exclusive) per dimension.
        end: Vec<usize>,
        /// Strides as in the file (all 1).
        strides: Vec<i32>,
        /// `begin_mask` as in the file.
        begin_mask: i32,
        /// `end_mask` as in the file.
        end_mask: i32,
    },
    /// `SPLIT_V` along `axis` into pieces of `sizes`.
    SplitV {
        /// Input.
        input: TensorSpec,
        /// Outputs, in order.
        outputs: Vec<TensorSpec>,
        /// Size of each piece along `axis` (a `-1` resolved).
        sizes: Vec<usize>,
        /// The axis, made non-negative.
        axis: usize,
    },
    /// `RESHAPE`: the same bytes under `shape`.
    Reshape {
        /// Input.
        input: TensorSpec,
        /// Output.
        output: TensorSpec,
        /// The new shape (`-1` resolved).
        shape: Vec<usize>,
    },
    /// `QUANTIZE`: f32 → int8, or int8 ↔ uint8 requantisation.
    Quantize {
        /// Input.
        input: TensorSpec,
        /// Output.
        output: TensorSpec,
    },
    /// `DEQUANTIZE`: int8 / uint8 → f32.
    Dequantize {
        /// Input.
        input: TensorSpec,
        /// Output.
        output: TensorSpec,
    },
    /// `READ_VARIABLE`: the current value of variable `var` (index in [`StreamGraph::vars`]).
    ReadVariable {
        /// The variable.
        var: usize,
        /// Output (the variable's type and shape).
        output: TensorSpec,
    },
    /// `ASSIGN_VARIABLE`: variable `var` takes `value` from here on.
    AssignVariable {
        /// The variable.
        var: usize,
        /// The value assigned (the variable's type and shape).
        value: TensorSpec,
    },
}

impl StreamOp {
    /// The operator's TFLite name (`CONV_2D`, `READ_VARIABLE`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            StreamOp::Conv2d(_) => "CONV_2D",
            StreamOp::DepthwiseConv2d(_) => "DEPTHWISE_CONV_2D",
            StreamOp::FullyConnected(_) => "FULLY_CONNECTED",
            StreamOp::Logistic { .. } => "LOGISTIC",
            StreamOp::Concatenation { .. } => "CONCATENATION",
            StreamOp::StridedSlice { .. } => "STRIDED_SLICE",
            StreamOp::SplitV { .. } => "SPLIT_V",
            StreamOp::Reshape { .. } => "RESHAPE",
            StreamOp::Quantize { .. } => "QUANTIZE",
            StreamOp::Dequantize { .. } => "DEQUANTIZE",
            StreamOp::ReadVariable { .. } => "READ_VARIABLE",
            StreamOp::AssignVariable { .. } => "ASSIGN_VARIABLE",
        }
    }
}

/// A streaming model: `output = step(input, vars)`, the variables updated in place.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamGraph {
    /// The input `[1, N, Limits::frame_width]`.
    pub input: TensorSpec,
    /// The output.
    pub output: TensorSpec,
    /// The variables, in the order the init subgraph assigns them.
    pub vars: Vec<VarSpec>,
    /// `main`'s operators in file order (`CALL_ONCE` and `VAR_HANDLE` resolved away).
    pub ops: Vec<StreamOp>,
}

/// Parses a microWakeWord `.tflite` model (see the module docs) into a [`StreamGraph`].
///
/// `limits`: the input is `[1, N, frame_width]` with N in `1..=max_frames`; no tensor has
/// more than `max_features` elements; `main` has at most `max_layers` operators.
///
/// # Errors
/// An [`Error`], one line: not a TFLite FlatBuffer or a malformed one; not one input and one
/// output; the first operator (`main operator #k NAME` or `init operator #k NAME`) that is
/// unknown or breaks a rule (types, per-channel axis, shapes, constants, order of variable
/// reads and writes).
pub fn parse_stream(bytes: &[u8], limits: &Limits) -> Result<StreamGraph, Error> {
    let model = read_model(bytes)?;
    let budget = Cell::new(ALLOCATION_PER_BYTE.saturating_mul(bytes.len()).saturating_add(4096));
    Reader { model: &model, main: &model.subgraphs[0], limits, budget }.read().map_err(Error::new)
}

/// Bytes the reader may allocate per byte of the file (specs, constants): each operand an
/// operator names costs 4 bytes of the file and a [`TensorSpec`] of it; the real models
/// need 0.89–0.93 (measured on the 7 models).
const ALLOCATION_PER_BYTE: usize = 16;

struct Reader<'m, 'a> {
    model: &'m Model<'a>,
    main: &'m Subgraph<'a>,
    limits: &'m Limits,
    /// Bytes the reader may still allocate.
    budget: Cell<usize>,
}

/// The options table of `op` if it is of union type `kind` (absent: all defaults).
fn opts<'a>(op: &Operator<'a>, kind: u8) -> Result<Option<Table<'a>>, String> {
    match op.options {
        Some(_) if op.options_type != kind => Err("options of another operator".into()),
        o => Ok(o),
    }
}

fn activation(a: u8) -> Result<FusedActivation, String> {
    match a {
        0 => Ok(FusedActivation::None),
        1 => Ok(FusedActivation::Relu),
        a => {
            Err(format!("fused activation {} is not supported (NONE or RELU)", activation_name(a)))
        }
    }
}

fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

/// Checks that `spec` has the inferred shape `want`.
fn same_shape(spec: &TensorSpec, want: &[usize], what: &str) -> Result<(), String> {
    if spec.shape != want {
        return Err(format!(
            "{what} has shape {} in the file, {} by the operator's rule",
            shape_str(&spec.shape),
            shape_str(want)
        ));
    }
    Ok(())
}

fn want(spec: &TensorSpec, dtypes: &[DType], what: &str) -> Result<(), String> {
    if !dtypes.contains(&spec.dtype) {
        return Err(format!("{what} is {:?}, not {:?}", spec.dtype, dtypes));
    }
    Ok(())
}

/// A non-negative axis of a rank-`rank` tensor (TFLite allows `-rank..rank`).
fn axis(a: i32, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a64 = i64::from(a);
    let k = if a64 < 0 { a64 + r } else { a64 };
    usize::try_from(k).ok().filter(|&k| k < rank).ok_or_else(|| format!("axis {a} out of range"))
}

impl<'m, 'a> Reader<'m, 'a> {
    /// Takes `bytes` from the allocation budget.
    fn charge(&self, bytes: usize) -> Result<(), String> {
        let left = self.budget.get().checked_sub(bytes).ok_or_else(|| {
            format!(
                "the model needs more than {ALLOCATION_PER_BYTE} bytes of memory per byte of file"
            )
        })?;
        self.budget.set(left);
        Ok(())
    }

    /// Tensor `t` of subgraph `sg` as a spec (any type of [`DType`]).
    fn spec_in(&self, sg: &Subgraph<'a>, t: i32) -> Result<TensorSpec, String> {
        let index = usize::try_from(t).map_err(|_| format!("tensor {t} is absent"))?;
        let tensor = sg.tensors.get(index).ok_or_else(|| format!("no tensor {t}"))?;
        if tensor.is_variable {
            return Err(format!(
                "tensor {t} is a variable tensor (state is read from resource variables)"
            ));
        }
        let dtype = DType::of(tensor.dtype).ok_or_else(|| {
            format!("tensor {t} is {} (not supported here)", type_name(tensor.dtype))
        })?;
        let mut shape = Vec::with_capacity(tensor.shape.len().min(8));
        let mut count = 1usize;
        for &d in &tensor.shape {
            let d = usize::try_from(d).map_err(|_| format!("tensor {t} has dimension {d}"))?;
            count = count.checked_mul(d).ok_or_else(|| format!("tensor {t}'s size overflows"))?;
            shape.push(d);
        }
        if count > self.limits.max_features {
            return Err(format!(
                "tensor {t} has {count} elements (at most {})",
                self.limits.max_features
            ));
        }
        if let Some(q) = &tensor.quant {
            let (n, z) = (q.scale.len(), q.zero_point.len());
            if z != n && z > 1 {
                return Err(format!("tensor {t}: {n} scales, {z} zero points"));
            }
            if q.scale.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
                return Err(format!("tensor {t} has a scale that is not finite and positive"));
            }
            self.charge(12 * n)?;
        }
        self.charge(8 * shape.len())?;
        let quant = tensor.quant.clone().map(|mut q| {
            // One zero point, or none (0), applies to every scale.
            if q.zero_point.len() < q.scale.len() {
                q.zero_point = vec![q.zero_point.first().copied().unwrap_or(0); q.scale.len()];
            }
            q
        });
        Ok(TensorSpec { index, dtype, shape, quant })
    }

    fn spec(&self, t: i32) -> Result<TensorSpec, String> {
        self.spec_in(self.main, t)
    }

    /// An activation: int8 / uint8 with one (scale, zero point) in its type's range, or f32.
    fn activation_spec(&self, t: i32, what: &str) -> Result<TensorSpec, String> {
        let s = self.spec(t)?;
        let range = match s.dtype {
            DType::I8 => -128..=127,
            DType::U8 => 0..=255,
            DType::F32 => return Ok(s),
            DType::I32 => return Err(format!("{what} is int32")),
        };
        match s.scale_zp() {
            Some((_, z)) if range.contains(&z) => Ok(s),
            Some((_, z)) => Err(format!("{what} has zero point {z} outside its type")),
            None => Err(format!("{what} is not quantised per tensor")),
        }
    }

    /// The constant bytes behind tensor `t` of `sg` (`len * size` of them).
    fn constant(
        &self,
        sg: &Subgraph<'a>,
        spec: &TensorSpec,
        what: &str,
    ) -> Result<&'a [u8], String> {
        let tensor = &sg.tensors[spec.index];
        let data = self
            .model
            .buffers
            .get(tensor.buffer)
            .filter(|_| tensor.buffer > 0)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| format!("{what} is not a constant"))?;
        self.charge(data.len())?;
        let need = spec.len().checked_mul(spec.dtype.size());
        if need != Some(data.len()) {
            return Err(format!(
                "{what} has {} bytes for shape {}",
                data.len(),
                shape_str(&spec.shape)
            ));
        }
        Ok(data)
    }

    fn const_i32s(&self, t: i32, what: &str) -> Result<Vec<i32>, String> {
        let s = self.spec(t)?;
        want(&s, &[DType::I32], what)?;
        let data = self.constant(self.main, &s, what)?;
        Ok(data.chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }
}

fn same_type(a: &TensorSpec, b: &TensorSpec) -> Result<(), String> {
    if a.dtype != b.dtype {
        return Err(format!("tensors {} and {} differ in type", a.index, b.index));
    }
    Ok(())
}

/// Where a rule was broken: `main operator #k NAME` or `init operator #k NAME`.
fn at(sub: &str, k: usize, op: &Operator<'_>) -> impl Fn(String) -> String {
    let label = format!("{sub} operator #{k} {}", op_name(op.code));
    move |m| format!("{label}: {m}")
}

impl<'m, 'a> Reader<'m, 'a> {
    /// The checks, in order: the model's input and output, the operator count, then each
    /// operator of `main` (its inputs computed before it, its own rules), then the output
    /// computed.
    fn read(&self) -> Result<StreamGraph, String> {
        let (input, output) = self.io()?;
        let main = self.main;
        if main.ops.len() > self.limits.max_layers {
            return Err(format!(
                "main has {} operators (at most {})",
                main.ops.len(),
                self.limits.max_layers
            ));
        }
        let mut ready = vec![false; main.tensors.len()];
        ready[input.index] = true;
        let mut vars = Vars::default();
        let mut ops = Vec::with_capacity(main.ops.len());
        for (k, op) in main.ops.iter().enumerate() {
            let here = at("main", k, op);
            self.inputs_ready(op, &ready).map_err(&here)?;
            if let Some(step) = self.step(op, &mut vars).map_err(&here)? {
                ops.push(step);
            }
            for &t in &op.outputs {
                if let Some(r) = usize::try_from(t).ok().and_then(|t| ready.get_mut(t)) {
                    *r = true;
                }
            }
        }
        if !ready[output.index] {
            return Err("the model's output is never computed".into());
        }
        Ok(StreamGraph { input, output, vars: vars.specs, ops })
    }

    /// One input `[1, N, frame_width]` int8 with N in `1..=max_frames`, one quantised output.
    fn io(&self) -> Result<(TensorSpec, TensorSpec), String> {
        let main = self.main;
        let ([x], [y]) = (&main.inputs[..], &main.outputs[..]) else {
            return Err(format!(
                "the model has {} inputs and {} outputs (a stream model has one of each)",
                main.inputs.len(),
                main.outputs.len()
            ));
        };
        let input =
            self.activation_spec(*x, "the input").map_err(|m| format!("model input: {m}"))?;
        let output =
            self.activation_spec(*y, "the output").map_err(|m| format!("model output: {m}"))?;
        let (width, frames) = (self.limits.frame_width, self.limits.max_frames);
        match input.shape[..] {
            [1, n, w] if input.dtype == DType::I8 && w == width && (1..=frames).contains(&n) => {
                Ok((input, output))
            }
            _ => Err(format!(
                "the input is {:?} {} (a stream model reads int8 [1, 1..={frames}, {width}])",
                input.dtype,
                shape_str(&input.shape),
            )),
        }
    }

    /// Every input of `op` is the model's input, a constant or computed before.
    fn inputs_ready(&self, op: &Operator<'a>, ready: &[bool]) -> Result<(), String> {
        for &t in &op.inputs {
            let Ok(i) = usize::try_from(t) else { continue };
            let tensor = self.main.tensors.get(i).ok_or_else(|| format!("no tensor {t}"))?;
            let constant = tensor.buffer > 0
                && self.model.buffers.get(tensor.buffer).is_some_and(|d| !d.is_empty());
            if !constant && !ready[i] {
                return Err(format!("reads tensor {t} before it is computed"));
            }
        }
        Ok(())
    }

    /// The rules of `op` by kind; `None` for the operators resolved here (`CALL_ONCE`,
    /// `VAR_HANDLE`).
    fn step(&self, op: &Operator<'a>, vars: &mut Vars) -> Result<Option<StreamOp>, String> {
        let step = match op.code {
            code::CALL_ONCE => return vars.call_once(self, op).map(|()| None),
            code::VAR_HANDLE => return vars.handle(self, op).map(|()| None),
            code::READ_VARIABLE | code::ASSIGN_VARIABLE => vars.access(self, op)?,
            code::CONV_2D => StreamOp::Conv2d(self.conv(op, false)?),
            code::DEPTHWISE_CONV_2D => StreamOp::DepthwiseConv2d(self.conv(op, true)?),
            code::FULLY_CONNECTED => StreamOp::FullyConnected(self.fully_connected(op)?),
            code::LOGISTIC => {
                let [input, output] = self.unary(op, &[DType::I8], &[DType::I8])?;
                StreamOp::Logistic { input, output }
            }
            code::QUANTIZE => {
                let from = [DType::F32, DType::I8, DType::U8];
                let [input, output] = self.unary(op, &from, &[DType::I8, DType::U8])?;
                StreamOp::Quantize { input, output }
            }
            code::DEQUANTIZE => {
                let [input, output] = self.unary(op, &[DType::I8, DType::U8], &[DType::F32])?;
                StreamOp::Dequantize { input, output }
            }
            code::CONCATENATION => self.concatenation(op)?,
            code::STRIDED_SLICE => self.strided_slice(op)?,
            code::SPLIT_V => self.split_v(op)?,
            code::RESHAPE => self.reshape(op)?,
            code::CUSTOM => {
                return Err(format!(
                    "unsupported custom operator `{}`",
                    crate::onnx::short(op.custom)
                ))
            }
            _ => return Err("unsupported operator".into()),
        };
        Ok(Some(step))
    }
}
