//! [`Op`]: the prepared operators an [`ExecutionPlan`](super::ExecutionPlan) can call, and
//! their facts for the planner, read from the operators' own [`ShapeRule`]s.

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::blocks::{ConvNeXt, ResidualConv};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::activation::Activation;
use crate::ops::conv::{Conv1d, DepthwiseConv1d};
use crate::ops::elementwise::{Add, BiasAdd, Mul, Scale, ScaleShift};
use crate::ops::layout::{Reshape, Transpose};
use crate::ops::linear::Linear;
use crate::ops::norm::{LayerNorm, RmsNorm};
use crate::ops::softmax::Softmax;
use crate::ops::{InPlace, RunOptions, ShapeRule};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// One step's operator. Operators with weights are held by [`Arc`], so several plans (and
/// threads) share one prepared operator and its weights; the others are small `Copy`
/// values. Every variant converts into an `Op` with `From` (an operator by value is moved
/// into a new `Arc`), so [`ExecutionPlan::add`](super::ExecutionPlan::add) takes either.
///
/// Shapes, layouts and in-place facts are the operators' own ([`ShapeRule`], implemented
/// for `Op` by delegation): the same rules `neon_plan!` checks at compile time.
///
/// Weights are f32 in `Vec<f32>` storage, as a loader builds them; int8 layers are not
/// steps yet.
#[derive(Clone, Debug)]
pub enum Op {
    /// [`Linear`] (ONNX `Gemm` / `MatMul` + bias): frame-major `[rows, in]` -> `[rows, out]`.
    Linear(Arc<Linear<Vec<f32>>>),
    /// [`LayerNorm`] over the channels of each frame.
    LayerNorm(Arc<LayerNorm<Vec<f32>>>),
    /// [`RmsNorm`] over the channels of each frame.
    RmsNorm(Arc<RmsNorm<Vec<f32>>>),
    /// [`Conv1d`]: channel-first input, output in the layout it was built for.
    Conv1d(Arc<Conv1d<Vec<f32>>>),
    /// [`DepthwiseConv1d`]: channel-first in and out.
    DepthwiseConv1d(Arc<DepthwiseConv1d<Vec<f32>>>),
    /// A pointwise [`Activation`] (ReLU, sigmoid, ...), in place when the planner allows.
    Activation(Activation),
    /// Elementwise [`Add`] of two tensors of one shape.
    Add,
    /// Elementwise [`Mul`] of two tensors of one shape.
    Mul,
    /// Multiplication by a scalar ([`Scale`]).
    Scale(Scale),
    /// Scale and shift by scalars ([`ScaleShift`]).
    ScaleShift(ScaleShift),
    /// Per-channel bias ([`BiasAdd`]), e.g. the `Add` of a constant after a `MatMul`.
    BiasAdd(Arc<BiasAdd<Vec<f32>>>),
    /// [`Softmax`] over the last axis.
    Softmax,
    /// [`Transpose`] of a rank-2 sequence into the other layout.
    Transpose(Transpose),
    /// [`Reshape`] (ONNX `Flatten` / `Reshape`): no computation when in place.
    Reshape(Reshape),
    /// A [`ResidualConv`] block: channel-first in and out, with its scratch in the plan's
    /// workspace.
    ResidualConv(Arc<ResidualConv<Vec<f32>>>),
    /// A [`ConvNeXt`] block: channel-first in and out, with its scratch in the plan's
    /// workspace.
    ConvNeXt(Arc<ConvNeXt<Vec<f32>>>),
}

macro_rules! from_arc {
    ($($variant:ident: $ty:ty),*) => {$(
        impl From<Arc<$ty>> for Op {
            fn from(op: Arc<$ty>) -> Self {
                Op::$variant(op)
            }
        }
        impl From<$ty> for Op {
            fn from(op: $ty) -> Self {
                Op::$variant(Arc::new(op))
            }
        }
    )*};
}

from_arc!(
    Linear: Linear<Vec<f32>>,
    LayerNorm: LayerNorm<Vec<f32>>,
    RmsNorm: RmsNorm<Vec<f32>>,
    Conv1d: Conv1d<Vec<f32>>,
    DepthwiseConv1d: DepthwiseConv1d<Vec<f32>>,
    BiasAdd: BiasAdd<Vec<f32>>,
    ResidualConv: ResidualConv<Vec<f32>>,
    ConvNeXt: ConvNeXt<Vec<f32>>
);

/// `From` for the operators a variant holds by value (`Op::$variant(op)`).
macro_rules! from_value {
    ($($variant:ident),*) => {$(
        impl From<$variant> for Op {
            fn from(op: $variant) -> Self {
                Op::$variant(op)
            }
        }
    )*};
}

/// `From` for the operators without parameters (a variant with no data).
macro_rules! from_unit {
    ($($variant:ident),*) => {$(
        impl From<$variant> for Op {
            fn from(_: $variant) -> Self {
                Op::$variant
            }
        }
    )*};
}

from_value!(Activation, Scale, ScaleShift, Transpose, Reshape);
from_unit!(Add, Mul, Softmax);

/// Evaluates `$body` with `$r` bound to the [`ShapeRule`] of `$op` (its geometry, or the
/// operator itself when it has no weights).
macro_rules! with_rule {
    ($op:expr, $r:ident => $body:expr) => {
        with_rule!(
            $op, $r => $body;
            geometry: Linear, LayerNorm, RmsNorm, Conv1d, DepthwiseConv1d, BiasAdd,
                ResidualConv, ConvNeXt;
            value: Activation, Scale, ScaleShift, Transpose, Reshape;
            unit: Softmax, Add, Mul
        )
    };
    (
        $op:expr, $r:ident => $body:expr;
        geometry: $($geometry:ident),*;
        value: $($value:ident),*;
        unit: $($unit:ident),*
    ) => {
        match $op {
            $(Op::$geometry(o) => {
                let $r = &o.geometry();
                $body
            })*
            $(Op::$value($r) => $body,)*
            $(Op::$unit => {
                let $r = &$unit;
                $body
            })*
        }
    };
}

impl ShapeRule for Op {
    fn name(&self) -> &'static str {
        with_rule!(self, r => r.name())
    }
    fn arity(&self) -> usize {
        with_rule!(self, r => r.arity())
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        with_rule!(self, r => r.output_shape(inputs))
    }
    fn in_place(&self) -> InPlace {
        with_rule!(self, r => r.in_place())
    }
    fn reads_layout(&self, arg: usize) -> Option<Layout> {
        with_rule!(self, r => r.reads_layout(arg))
    }
    fn writes_layout(&self) -> Option<Layout> {
        with_rule!(self, r => r.writes_layout())
    }
}

impl Op {
    /// Scratch elements the step needs for an input of shape `input` (a [`Conv1d`]'s
    /// im2col tile, a block's intermediates; 0 for the others).
    pub(super) fn scratch_len(&self, input: &Shape) -> usize {
        let frames = input.dims().get(1).copied();
        match self {
            Op::Conv1d(c) => frames.map_or(0, |f| c.scratch_len(f)),
            Op::ResidualConv(b) => frames.map_or(0, |f| b.scratch_len(f)),
            Op::ConvNeXt(b) => frames.map_or(0, |f| b.scratch_len(f)),
            _ => 0,
        }
    }

    /// Runs the step with backend `B`: `args` are the inputs in call order, except that an
    /// in-place step (`in_place`) finds its first input in `out` (which holds it) and only
    /// the other inputs in `args`.
    pub(super) fn run<B: Backend>(
        &self,
        args: &[TensorView<'_>],
        out: &mut TensorViewMut<'_>,
        scratch: &mut [f32],
        in_place: bool,
        options: RunOptions<'_>,
    ) -> Result<(), Error> {
        let missing = Error::Plan { reason: "a step lacks an input" };
        let x = args.first().ok_or(missing.clone());
        match self {
            Op::Linear(o) => o.run_with::<B>(x?, out, options),
            Op::LayerNorm(o) => o.run_with::<B>(x?, out, options),
            Op::RmsNorm(o) => o.run_with::<B>(x?, out, options),
            Op::Conv1d(o) => o.run_with::<B>(x?, out, scratch, options),
            Op::ResidualConv(o) => o.run_with::<B>(x?, out, scratch, options),
            Op::ConvNeXt(o) => o.run_with::<B>(x?, out, scratch, options),
            Op::DepthwiseConv1d(o) => o.run_with::<B>(x?, out, options),
            Op::Activation(a) if in_place => a.run_in_place_with::<B>(out, options),
            Op::Activation(a) => a.run_with::<B>(x?, out, options),
            Op::Add | Op::Mul if in_place => {
                let b = x?;
                match self {
                    Op::Add => Add.run_in_place_with::<B>(out, b, options),
                    _ => Mul.run_in_place_with::<B>(out, b, options),
                }
            }
            Op::Add | Op::Mul => {
                let b = args.get(1).ok_or(missing)?;
                match self {
                    Op::Add => Add.run_with::<B>(x?, b, out, options),
                    _ => Mul.run_with::<B>(x?, b, out, options),
                }
            }
            Op::Scale(o) if in_place => o.run_in_place::<B>(out),
            Op::Scale(o) => o.run::<B>(x?, out),
            Op::ScaleShift(o) if in_place => o.run_in_place::<B>(out),
            Op::ScaleShift(o) => o.run::<B>(x?, out),
            Op::BiasAdd(o) if in_place => o.run_in_place::<B>(out),
            Op::BiasAdd(o) => o.run::<B>(x?, out),
            Op::Softmax if in_place => Softmax.run_in_place::<B>(out),
            Op::Softmax => Softmax.run::<B>(x?, out),
            Op::Transpose(t) => t.run::<B>(x?, out),
            // In place, the data already is the output: the shape rule was checked when
            // the plan was made for these shapes.
            Op::Reshape(_) if in_place => Ok(()),
            Op::Reshape(r) => r.run(x?, out),
        }
    }
}
