//! The steps of a [`StreamPlan`](super::StreamPlan): the int8 operators ([`StreamOp`]), their
//! element types and shape rules, and the copy geometry ([`Rows`]) that concatenation,
//! slicing, splitting, reshaping and the state variables' reads and writes share.

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

/// A copy of `outer` blocks of `chunk` bytes: block `i` is read at
/// `src_start + i * src_stride` and written at `dst_start + i * dst_stride` (offsets in bytes
/// within the source and destination values). Concatenation is one `Rows` per input,
/// slicing and splitting one per part, a reshape or a variable's read or write one
/// contiguous block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rows {
    /// Blocks (the product of the dimensions before the axis).
    outer: usize,
    /// Bytes per block.
    chunk: usize,
    /// First source byte.
    src_start: usize,
    /// Source bytes between blocks.
    src_stride: usize,
    /// First destination byte.
    dst_start: usize,
    /// Destination bytes between blocks.
    dst_stride: usize,
}

impl Rows {
    /// One contiguous block of `bytes`.
    pub(super) fn whole(bytes: usize) -> Self {
        Rows { outer: 1, chunk: bytes, src_start: 0, src_stride: 0, dst_start: 0, dst_stride: 0 }
    }

    /// Along `axis` of a tensor of `dims` with `elem` bytes per element: the blocks holding
    /// indices `start..start + len` of the axis, written at index `dst_index` of an axis of
    /// `dst_len` (the same sizes elsewhere).
    pub(super) fn along(
        dims: &[usize],
        elem: usize,
        axis: usize,
        [start, len]: [usize; 2],
        [dst_index, dst_len]: [usize; 2],
    ) -> Self {
        let outer: usize = dims[..axis].iter().product();
        let inner: usize = dims[axis + 1..].iter().product::<usize>() * elem;
        Rows {
            outer,
            chunk: len * inner,
            src_start: start * inner,
            src_stride: dims[axis] * inner,
            dst_start: dst_index * inner,
            dst_stride: dst_len * inner,
        }
    }

    /// Copies between two distinct buffers, `src` and `dst` being the whole values.
    ///
    /// # Errors
    /// [`Error::Length`] when a block falls outside either value (build-time checks make
    /// this unreachable).
    pub(super) fn copy(&self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        for i in 0..self.outer {
            let (s, d) =
                (self.src_start + i * self.src_stride, self.dst_start + i * self.dst_stride);
            let from = src.get(s..s + self.chunk).ok_or(outside(s + self.chunk, src.len()))?;
            let dst_len = dst.len();
            let to = dst.get_mut(d..d + self.chunk).ok_or(outside(d + self.chunk, dst_len))?;
            to.copy_from_slice(from);
        }
        Ok(())
    }

    /// Copies within one buffer: the source value at byte `src` of `ws`, the destination at
    /// byte `dst` (a block that is already in place is skipped).
    ///
    /// # Errors
    /// As [`copy`](Self::copy).
    pub(super) fn copy_within(&self, ws: &mut [u8], src: usize, dst: usize) -> Result<(), Error> {
        for i in 0..self.outer {
            let s = src + self.src_start + i * self.src_stride;
            let d = dst + self.dst_start + i * self.dst_stride;
            let end = s.max(d) + self.chunk;
            if end > ws.len() {
                return Err(outside(end, ws.len()));
            }
            if s != d {
                ws.copy_within(s..s + self.chunk, d);
            }
        }
        Ok(())
    }
}

/// The error of a copy reaching byte `end` of a buffer of `len` bytes.
fn outside(end: usize, len: usize) -> Error {
    Error::Length { what: "stream plan copy", expected: end, got: len }
}

/// An error of the stream plan's rule `reason` at step `op`.
pub(super) fn rule(op: &'static str, reason: &'static str) -> Error {
    Error::Shape(ShapeError::Geometry { op, reason })
}
