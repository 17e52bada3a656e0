//! The steps of a [`StreamPlan`](super::StreamPlan): the int8 operators ([`StreamOp`]), their
//! element types and shape rules, and the copy geometry ([`Rows`](super::fixed::Rows)) that concatenation,
//! slicing, splitting, reshaping and the state variables' reads and writes share (in
//! [`super::fixed`], which compiled plans call without `alloc`).

use super::elem::{view, view_mut, ElemType};
use crate::error::{Error, ShapeError};
use crate::kernels::int8::Int8Kernels;
use crate::ops::int8::{
    Conv2dI8, DepthwiseI8, DequantizeI8F32, FullyConnectedI8, LogisticI8, OwnedInt8Params,
    QuantizeF32I8, RequantizeI8, RequantizeI8U8,
};
use crate::ops::ShapeRule;
use crate::tensor::Shape;

/// An operator step of a stream plan: one input, one output, each of a fixed element type
/// ([`types`](Self::types)) and a shape given by the operator's [`ShapeRule`].
#[derive(Clone, Debug, PartialEq)]
pub enum StreamOp {
    /// CONV_2D, i8 `[1, H, W, Cin]` -> i8 `[1, OH, OW, Cout]`.
    Conv2d(Conv2dI8<OwnedInt8Params>),
    /// DEPTHWISE_CONV_2D, i8 `[1, H, W, C]` -> i8 `[1, OH, OW, C * multiplier]`.
    Depthwise(DepthwiseI8<OwnedInt8Params>),
    /// FULLY_CONNECTED, i8 `[rows, in]` -> i8 `[rows, out]`.
    FullyConnected(FullyConnectedI8<OwnedInt8Params>),
    /// LOGISTIC as a table, i8 -> i8, any shape.
    Logistic(LogisticI8),
    /// QUANTIZE int8 -> int8, any shape.
    Requantize(RequantizeI8),
    /// QUANTIZE int8 -> uint8, any shape.
    RequantizeU8(RequantizeI8U8),
    /// QUANTIZE f32 -> int8, any shape.
    Quantize(QuantizeF32I8),
    /// DEQUANTIZE int8 -> f32, any shape.
    Dequantize(DequantizeI8F32),
}

impl StreamOp {
    /// The operator's name (as in its shape rule's errors).
    pub fn name(&self) -> &'static str {
        match self {
            StreamOp::Conv2d(op) => op.geometry().name(),
            StreamOp::Depthwise(op) => op.geometry().name(),
            StreamOp::FullyConnected(op) => op.geometry().name(),
            StreamOp::Logistic(_) => LogisticI8::RULE.op,
            StreamOp::Requantize(_) => RequantizeI8::RULE.op,
            StreamOp::RequantizeU8(_) => RequantizeI8U8::RULE.op,
            StreamOp::Quantize(_) => QuantizeF32I8::RULE.op,
            StreamOp::Dequantize(_) => DequantizeI8F32::RULE.op,
        }
    }

    /// The element types `(input, output)`.
    pub fn types(&self) -> (ElemType, ElemType) {
        match self {
            StreamOp::RequantizeU8(_) => (ElemType::I8, ElemType::U8),
            StreamOp::Quantize(_) => (ElemType::F32, ElemType::I8),
            StreamOp::Dequantize(_) => (ElemType::I8, ElemType::F32),
            _ => (ElemType::I8, ElemType::I8),
        }
    }

    /// The output shape for input shape `x`: the operator's shape rule (the layers'
    /// geometry rules, [`crate::ops::int8::Elementwise8`] for the others).
    ///
    /// # Errors
    /// [`Error::Shape`] from the rule.
    pub fn output_shape(&self, x: &Shape) -> Result<Shape, Error> {
        let inputs = [*x];
        let out = match self {
            StreamOp::Conv2d(op) => op.geometry().output_shape(&inputs),
            StreamOp::Depthwise(op) => op.geometry().output_shape(&inputs),
            StreamOp::FullyConnected(op) => op.geometry().output_shape(&inputs),
            StreamOp::Logistic(_) => LogisticI8::RULE.output_shape(&inputs),
            StreamOp::Requantize(_) => RequantizeI8::RULE.output_shape(&inputs),
            StreamOp::RequantizeU8(_) => RequantizeI8U8::RULE.output_shape(&inputs),
            StreamOp::Quantize(_) => QuantizeF32I8::RULE.output_shape(&inputs),
            StreamOp::Dequantize(_) => DequantizeI8F32::RULE.output_shape(&inputs),
        };
        Ok(out?)
    }

    /// Runs the operator with backend `B` on the bytes of its input and output (each viewed
    /// as the operator's element type).
    ///
    /// # Errors
    /// [`Error::BadShape`] for a misaligned or ragged byte region; the operator's
    /// [`Error::Length`] for wrong lengths.
    pub(super) fn run<B: Int8Kernels>(&self, x: &[u8], y: &mut [u8]) -> Result<(), Error> {
        match self {
            StreamOp::Conv2d(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::Depthwise(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::FullyConnected(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::Logistic(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::Requantize(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::RequantizeU8(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::Quantize(op) => op.run::<B>(view(x)?, view_mut(y)?),
            StreamOp::Dequantize(op) => op.run::<B>(view(x)?, view_mut(y)?),
        }
    }
}

/// An error of the stream plan's rule `reason` at step `op`.
pub(super) fn rule(op: &'static str, reason: &'static str) -> Error {
    Error::Shape(ShapeError::Geometry { op, reason })
}
