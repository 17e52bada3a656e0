//! [`StreamGraph`] → [`StreamPlan`]: every operator of the graph as a step of neon-runtime's
//! [`StreamPlanBuilder`], in file order, with the integer operands of [`super::quant`].
//!
//! - variables: declared with their initial bytes; READ_VARIABLE / ASSIGN_VARIABLE are the
//!   builder's `read` / `assign`;
//! - CONCATENATION, SPLIT_V: `concat`, `split` along the (non-negative) axis;
//!   STRIDED_SLICE (stride 1): one `slice` per dimension it narrows (none: a reshape, which
//!   the planner may alias), the streaming form "last T rows" included;
//! - RESHAPE: `reshape` (the planner gives the output the input's buffer when it can);
//! - CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED: the runtime's prepared layers with
//!   [`LayerRequant`]'s multipliers and output stage (FC reads `[rows, K]`: a reshape
//!   before and after when the file's tensors have other ranks);
//! - LOGISTIC: its table ([`logistic_lut`]);
//! - QUANTIZE int8 → int8 / uint8 ([`Requantize`]), f32 → int8; DEQUANTIZE int8 → f32.
//!
//! Anything else (another type pair, a tensor of rank above 4) is refused with one line
//! naming the operator's index.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use neon_runtime::exec::stream::{
    ElemType, StreamOp as Step, StreamPlan, StreamPlanBuilder, StreamValue, StreamVar,
};
use neon_runtime::kernels::int8::{
    AffineQuant, ConvGeometry, DepthwiseGeometry, FcGeometry, Padding as KernelPadding, Window2d,
};
use neon_runtime::ops::int8::{DequantizeI8F32, RequantizeI8, RequantizeI8U8};
use neon_runtime::ops::int8::{Int8Layer, Int8Params, LogisticI8, OwnedInt8Params, QuantizeF32I8};

use super::quant::{logistic_lut, LayerRequant, Requantize};
use super::{
    parse_stream, Conv2d, DType, Filter, Padding, StreamGraph, StreamOp, TensorSpec, VarSpec,
};
use crate::{Error, Limits};

/// Parses a microWakeWord `.tflite` ([`parse_stream`]) and builds its [`StreamPlan`]
/// ([`stream_plan`]).
///
/// # Errors
/// [`parse_stream`]'s errors, then [`stream_plan`]'s.
pub fn load_stream_plan(bytes: &[u8], limits: &Limits) -> Result<StreamPlan, Error> {
    stream_plan(&parse_stream(bytes, limits)?)
}

/// The stream plan of `graph`: input `graph.input` (its element type and shape), output
/// `graph.output`, the variables at their initial values (see the module docs for the
/// mapping of each operator).
///
/// # Errors
/// One line, `main operator #k NAME: reason`, for the first operator that is not supported
/// (a type pair, a rank above 4) or that the builder refuses; a line naming the variable,
/// the input or the output otherwise.
pub fn stream_plan(graph: &StreamGraph) -> Result<StreamPlan, Error> {
    let mut b = StreamPlanBuilder::new();
    let input = b
        .input(elem(graph.input.dtype), &graph.input.shape)
        .map_err(|e| Error::new(format!("the input: {e}")))?;
    let vars = graph
        .vars
        .iter()
        .map(|v| {
            variable(&mut b, v).map_err(|e| {
                Error::new(format!("variable {}: {e}", crate::onnx::short(&v.shared_name)))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut values = BTreeMap::new();
    values.insert(graph.input.index, input);
    for (k, op) in graph.ops.iter().enumerate() {
        let mut at = Mapper { b: &mut b, values: &mut values, vars: &vars };
        at.op(op).map_err(|e| Error::new(format!("main operator #{k} {}: {e}", op.name())))?;
    }
    let out = *values
        .get(&graph.output.index)
        .ok_or_else(|| Error::new("the output is not computed by any operator"))?;
    b.build(out).map_err(|e| Error::new(format!("the plan: {e}")))
}

/// The kernels' window of a conv or depthwise layer: input `[1, H, W, C]`, filter
/// `[_, KH, KW, _]`, strides and dilations (height, width) and padding as in the file,
/// resolved by [`Window2d::with_padding`].
///
/// # Errors
/// An input or filter that is not 4-D; a window that [`Window2d::with_padding`] refuses
/// (a zero size, stride or dilation, an empty output).
pub fn window(c: &Conv2d) -> Result<Window2d, Error> {
    let (&[_, height, width, channels], &[_, kernel_h, kernel_w, _]) =
        (&c.input.shape[..], &c.filter.spec.shape[..])
    else {
        return Err(Error::new("the input or the weights are not 4-D"));
    };
    let padding = match c.padding {
        Padding::Same => KernelPadding::Same,
        Padding::Valid => KernelPadding::Valid,
    };
    let (image, kernel) = ([height, width], [kernel_h, kernel_w]);
    Window2d::with_padding(channels, image, kernel, c.stride, c.dilation, padding)
        .map_err(|e| Error::new(e.to_string()))
}

/// The runtime's element type of `d`.
fn elem(d: DType) -> ElemType {
    match d {
        DType::I8 => ElemType::I8,
        DType::U8 => ElemType::U8,
        DType::I32 => ElemType::I32,
        DType::F32 => ElemType::F32,
    }
}

/// Declares variable `v` with its initial bytes (little-endian, as the file stores them).
fn variable(b: &mut StreamPlanBuilder, v: &VarSpec) -> Result<StreamVar, neon_runtime::Error> {
    let words = |n: usize| v.init.chunks_exact(n);
    match v.dtype {
        DType::I8 => b.variable(&v.shape, &v.init.iter().map(|&x| x as i8).collect::<Vec<_>>()),
        DType::U8 => b.variable(&v.shape, &v.init),
        DType::I32 => b.variable(
            &v.shape,
            &words(4).map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect::<Vec<_>>(),
        ),
        DType::F32 => b.variable(
            &v.shape,
            &words(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect::<Vec<_>>(),
        ),
    }
}

/// Adds one operator's steps: the builder, the value of each tensor computed so far
/// (by tensor index) and the variables' handles.
struct Mapper<'a> {
    b: &'a mut StreamPlanBuilder,
    values: &'a mut BTreeMap<usize, StreamValue>,
    vars: &'a [StreamVar],
}

impl Mapper<'_> {
    fn op(&mut self, op: &StreamOp) -> Result<(), Error> {
        let rt = |e: neon_runtime::Error| Error::new(e.to_string());
        let (out, y) = match op {
            StreamOp::Conv2d(c) => {
                let q = LayerRequant::conv2d(c)?;
                let g = ConvGeometry { window: window(c)?, out_channels: c.output.shape[3] };
                let layer = Int8Layer::new(g, params(&c.filter, &q), q.input_zero_point, q.stage);
                (&c.output, self.b.op(Step::Conv2d(layer.map_err(rt)?), self.get(&c.input)?))
            }
            StreamOp::DepthwiseConv2d(c) => {
                let q = LayerRequant::depthwise(c)?;
                let g =
                    DepthwiseGeometry { window: window(c)?, depth_multiplier: c.depth_multiplier };
                let layer = Int8Layer::new(g, params(&c.filter, &q), q.input_zero_point, q.stage);
                (&c.output, self.b.op(Step::Depthwise(layer.map_err(rt)?), self.get(&c.input)?))
            }
            StreamOp::FullyConnected(f) => {
                let q = LayerRequant::fully_connected(f)?;
                let &[out_features, in_features] = &f.filter.spec.shape[..] else {
                    return Err(Error::new("the weights are not [units, K]"));
                };
                let rows = f.input.len() / in_features.max(1);
                let g = FcGeometry { rows, in_features, out_features };
                let p = params(&f.filter, &q);
                let layer = Int8Layer::new(g, p, q.input_zero_point, q.stage).map_err(rt)?;
                let x = self.get(&f.input)?;
                let x = self.reshaped(x, &f.input.shape, &[rows, in_features])?;
                let y = self.b.op(Step::FullyConnected(layer), x).map_err(rt)?;
                let y = self.reshaped(y, &[rows, out_features], &f.output.shape)?;
                (&f.output, Ok(y))
            }
            StreamOp::Logistic { input, output } => {
                let lut = LogisticI8::new(logistic_lut(input, output)?);
                (output, self.b.op(Step::Logistic(lut), self.get(input)?))
            }
            StreamOp::Quantize { input, output } => {
                let step = quantize(input, output)?;
                (output, self.b.op(step, self.get(input)?))
            }
            StreamOp::Dequantize { input, output } => {
                let (DType::I8, DType::F32, Some((scale, zp))) =
                    (input.dtype, output.dtype, input.scale_zp())
                else {
                    return Err(unsupported(input, output));
                };
                let q = AffineQuant { scale, zero_point: zero_point(zp)? };
                let step = Step::Dequantize(DequantizeI8F32::new(q).map_err(rt)?);
                (output, self.b.op(step, self.get(input)?))
            }
            StreamOp::Concatenation { inputs, output, axis } => {
                let parts = inputs.iter().map(|t| self.get(t)).collect::<Result<Vec<_>, _>>()?;
                (output, self.b.concat(&parts, *axis))
            }
            StreamOp::StridedSlice { input, output, begin, end, .. } => {
                let whole = self.get(input)?;
                let mut x = whole;
                for (d, (&a, &z)) in begin.iter().zip(end).enumerate() {
                    if a != 0 || z != input.shape[d] {
                        x = self.b.slice(x, d, a, z - a).map_err(rt)?;
                    }
                }
                // A slice that narrows nothing is a copy: a reshape the planner may alias.
                (output, if x == whole { self.b.reshape(x, &output.shape) } else { Ok(x) })
            }
            StreamOp::SplitV { input, outputs, sizes, axis } => {
                let x = self.get(input)?;
                let parts = self.b.split(x, *axis, sizes).map_err(rt)?;
                for (t, v) in outputs.iter().zip(parts) {
                    self.set(t, v);
                }
                return Ok(());
            }
            StreamOp::Reshape { input, output, shape } => {
                let x = self.get(input)?;
                (output, self.b.reshape(x, shape))
            }
            StreamOp::ReadVariable { var, output } => {
                let v = *self.vars.get(*var).ok_or_else(|| Error::new("no such variable"))?;
                (output, self.b.read(v))
            }
            StreamOp::AssignVariable { var, value } => {
                let v = *self.vars.get(*var).ok_or_else(|| Error::new("no such variable"))?;
                let x = self.get(value)?;
                return self.b.assign(v, x).map_err(rt);
            }
        };
        let y = y.map_err(rt)?;
        self.set(out, y);
        Ok(())
    }

    /// The value of tensor `t` (computed by an earlier operator).
    fn get(&self, t: &TensorSpec) -> Result<StreamValue, Error> {
        self.values
            .get(&t.index)
            .copied()
            .ok_or_else(|| Error::new(format!("tensor {} is read before it is computed", t.index)))
    }

    fn set(&mut self, t: &TensorSpec, v: StreamValue) {
        self.values.insert(t.index, v);
    }

    /// `x` (of shape `from`) as shape `to`: `x` itself when they are equal, else a reshape.
    fn reshaped(
        &mut self,
        x: StreamValue,
        from: &[usize],
        to: &[usize],
    ) -> Result<StreamValue, Error> {
        if from == to {
            return Ok(x);
        }
        self.b.reshape(x, to).map_err(|e| Error::new(e.to_string()))
    }
}

/// A layer's weights, bias and multipliers as the runtime's owned parameters.
fn params(f: &Filter, q: &LayerRequant) -> OwnedInt8Params {
    Int8Params {
        filter: f.weights.clone(),
        bias: Some(f.bias.clone()),
        multipliers: q.multipliers.clone(),
    }
}

/// The step of a QUANTIZE: int8 → int8 or uint8 (requantisation), f32 → int8.
fn quantize(input: &TensorSpec, output: &TensorSpec) -> Result<Step, Error> {
    let rt = |e: neon_runtime::Error| Error::new(e.to_string());
    match (input.dtype, output.dtype) {
        (DType::I8, DType::I8 | DType::U8) => {
            let r = Requantize::new(input, output)?;
            Ok(if output.dtype == DType::U8 {
                Step::RequantizeU8(
                    RequantizeI8U8::new(r.input_zero_point, r.multiplier, r.stage).map_err(rt)?,
                )
            } else {
                Step::Requantize(
                    RequantizeI8::new(r.input_zero_point, r.multiplier, r.stage).map_err(rt)?,
                )
            })
        }
        (DType::F32, DType::I8) => {
            let Some((scale, zp)) = output.scale_zp() else {
                return Err(Error::new("the output has no single scale and zero point"));
            };
            let q = AffineQuant { scale, zero_point: zero_point(zp)? };
            Ok(Step::Quantize(QuantizeF32I8::new(q).map_err(rt)?))
        }
        _ => Err(unsupported(input, output)),
    }
}

/// A zero point as the kernels take it.
fn zero_point(zp: i64) -> Result<i32, Error> {
    i32::try_from(zp).map_err(|_| Error::new(format!("zero point {zp} out of range")))
}

/// The error of a type pair the runtime has no step for.
fn unsupported(input: &TensorSpec, output: &TensorSpec) -> Error {
    Error::new(format!("{:?} → {:?} is not supported", input.dtype, output.dtype))
}
