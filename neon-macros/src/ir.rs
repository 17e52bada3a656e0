//! The types the phases hand to each other, and nothing else: the parsed plan
//! ([`Plan`], phase 1's output), the resolved operator of a call ([`Op`]) and the checked
//! plan ([`Checked`], phase 2's output, read by the scheduler and the emitter). A phase
//! imports these and the shared tables (`signatures`, `sym`), never another phase's
//! private helpers.

use neon_runtime::blocks::{ConvNeXtGeometry, ResidualConvGeometry};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::ops::elementwise::{Add, Mul, PerChannel, ScaleShift};
use neon_runtime::ops::layout::{Reshape, Transpose};
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::lstm::LstmCellGeometry;
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::pool::{GlobalPool, MaxPool2d, Pool1d};
use neon_runtime::ops::quant::{BlockQ8LinearGeometry, QuantLinearGeometry};
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::sequence::{ConcatFrames, LastFrames, WriteFrames};
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::stft::StftMagnitudeGeometry;
use neon_runtime::ops::{InPlace, ShapeRule};
use neon_runtime::{Layout, Shape, ShapeError};
use proc_macro2::Span;
use syn::{Attribute, Expr, Ident, Path, Visibility};

use crate::sym::SymDim;

// ---------------------------------------------------------------------------------------
// The parsed plan (phase 1 -> phase 2)
// ---------------------------------------------------------------------------------------

/// A whole plan as written.
pub struct Plan {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub krate: Option<Path>,
    pub dims: Vec<DimDecl>,
    pub weights: Vec<WeightDecl>,
    pub tensors: Vec<TensorDecl>,
    pub scalars: Vec<Ident>,
    /// `workers N;`: the largest execution context `run_with` accepts.
    pub workers: Option<(i64, Span)>,
    /// `weights = Path;`: run on another plan's weights struct instead of generating one.
    pub shared_weights: Option<Path>,
    pub stmts: Vec<Stmt>,
}

/// `dim frames in 1..=3000;`
pub struct DimDecl {
    pub name: Ident,
    pub lo: (i64, Span),
    pub hi: Option<(i64, Span)>,
}

/// `weight up: f32[256, 64, 1];`, or a block's weights: `weight cn0: convnext[128, 384, 7];`
pub struct WeightDecl {
    pub name: Ident,
    pub storage: Ident,
    pub shape: Vec<Expr>,
    pub shape_span: Span,
}

/// Role of a caller-owned tensor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Input,
    Output,
    State,
}

/// `input x: [64, frames];`
pub struct TensorDecl {
    pub role: Role,
    pub name: Ident,
    pub shape: Vec<Expr>,
    pub shape_span: Span,
}

/// `let h = up(x);` or `y = add(h, x);`
pub struct Stmt {
    pub is_let: bool,
    pub target: Ident,
    pub callee: Ident,
    pub args: Vec<Ident>,
    pub options: Vec<(Ident, Expr)>,
    pub call_span: Span,
}

// ---------------------------------------------------------------------------------------
// Resolved operators
// ---------------------------------------------------------------------------------------

/// How a declared weight is stored: one tensor in a storage type, or the f32 tensors of a
/// block (held by the block's prepared type, declared by the block's sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// f32 values.
    F32,
    /// int8 with one scale and one offset per tensor: `w = scale * q + offset`.
    I8,
    /// Block-int8: 32 consecutive weights of a row share one f32 scale.
    I8Block32,
    /// The weights of one block (`neon_runtime::blocks`).
    Block(BlockKind),
}

impl std::fmt::Display for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Storage::F32 => "f32",
            Storage::I8 => "i8",
            Storage::I8Block32 => "i8_block32",
            Storage::Block(b) => return b.fmt(f),
        })
    }
}

/// A block of `neon_runtime::blocks`: its declaration keyword (also the name of its
/// statement) and the sizes its declaration lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// `residual_conv[channels, kernel]` or `residual_conv[channels, kernel1, kernel2]`.
    ResidualConv,
    /// `convnext[channels, hidden, kernel]`.
    ConvNeXt,
}

impl std::fmt::Display for BlockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl BlockKind {
    /// The block declared by storage keyword `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "residual_conv" => Some(BlockKind::ResidualConv),
            "convnext" => Some(BlockKind::ConvNeXt),
            _ => None,
        }
    }

    /// The declaration keyword and statement name.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::ResidualConv => "residual_conv",
            BlockKind::ConvNeXt => "convnext",
        }
    }

    /// The declaration as the user writes it.
    pub fn form(self) -> &'static str {
        match self {
            BlockKind::ResidualConv => {
                "`residual_conv[channels, kernel]` or `residual_conv[channels, kernel1, kernel2]`"
            }
            BlockKind::ConvNeXt => "`convnext[channels, hidden, kernel]`",
        }
    }

    /// Whether a declaration may list `n` sizes.
    pub fn takes_sizes(self, n: usize) -> bool {
        match self {
            BlockKind::ResidualConv => n == 2 || n == 3,
            BlockKind::ConvNeXt => n == 3,
        }
    }
}

/// A resolved operator call: the runtime's own geometry (or weightless operator), plus
/// the run-time scalar the call reads, if any.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Conv1d(Conv1dGeometry),
    DepthwiseConv1d(DepthwiseConv1dGeometry),
    Conv2d(Conv2dGeometry),
    MaxPool2d(MaxPool2d),
    /// `avg_pool1d` / `max_pool1d`.
    Pool1d(Pool1d),
    /// `global_avg_pool` / `global_max_pool`.
    GlobalPool(GlobalPool),
    Linear(LinearGeometry),
    QuantLinear(QuantLinearGeometry),
    BlockQ8Linear(BlockQ8LinearGeometry),
    LayerNorm(LayerNormGeometry),
    RmsNorm(RmsNormGeometry),
    GroupNorm(GroupNormGeometry),
    Transpose(Transpose),
    Act(Activation),
    Add(Add),
    Mul(Mul),
    Softmax(Softmax),
    /// `layer_scale` (`PerChannelOp::Scale`), `bias_add` (`PerChannelOp::AddBias`) or
    /// per-channel `scale_shift` (`PerChannelOp::ScaleShift`).
    PerChannel(PerChannel),
    /// `scale_shift` by scalars (no weights).
    ScaleShift(ScaleShift),
    /// `reshape` to constant dims (aliases its input when the planner allows).
    Reshape(Reshape),
    ConcatFrames(ConcatFrames),
    LastFrames(LastFrames),
    ReflectPad(ReflectPad),
    ComplexMagnitude(ComplexMagnitude),
    /// Magnitude STFT of a mono signal (owns its window).
    StftMagnitude(StftMagnitudeGeometry),
    /// Writes into the state given as its first argument at the scalar `at`.
    WriteFrames(WriteFrames, Ident),
    /// Rotary embedding at the optional scalar position `at` (default 0).
    Rotary(RotaryGeometry, Option<Ident>),
    /// Attention over the first `len` frames of `k` and `v` (optional scalar; default all).
    Attention(Attention, Option<Ident>),
    /// One step of an LSTM cell, updating the state given as its first argument in place.
    LstmCell(LstmCellGeometry),
    /// A `neon_runtime::blocks::ResidualConv` block.
    ResidualConv(ResidualConvGeometry),
    /// A `neon_runtime::blocks::ConvNeXt` block.
    ConvNeXt(ConvNeXtGeometry),
}

/// Runs `$body` with `$r` bound to the runtime [`ShapeRule`] of `$op`: the one place that
/// maps every operator to the runtime type whose facts it has.
macro_rules! with_rule {
    ($op:expr, $r:ident => $body:expr) => {
        match $op {
            Op::Conv1d($r) => $body,
            Op::DepthwiseConv1d($r) => $body,
            Op::Conv2d($r) => $body,
            Op::MaxPool2d($r) => $body,
            Op::Pool1d($r) => $body,
            Op::GlobalPool($r) => $body,
            Op::Linear($r) => $body,
            Op::QuantLinear($r) => $body,
            Op::BlockQ8Linear($r) => $body,
            Op::LayerNorm($r) => $body,
            Op::RmsNorm($r) => $body,
            Op::GroupNorm($r) => $body,
            Op::Transpose($r) => $body,
            Op::Act($r) => $body,
            Op::Add($r) => $body,
            Op::Mul($r) => $body,
            Op::Softmax($r) => $body,
            Op::PerChannel($r) => $body,
            Op::ScaleShift($r) => $body,
            Op::Reshape($r) => $body,
            Op::ConcatFrames($r) => $body,
            Op::LastFrames($r) => $body,
            Op::ReflectPad($r) => $body,
            Op::ComplexMagnitude($r) => $body,
            Op::StftMagnitude($r) => $body,
            Op::WriteFrames($r, _) => $body,
            Op::Rotary($r, _) => $body,
            Op::Attention($r, _) => $body,
            Op::LstmCell($r) => $body,
            Op::ResidualConv($r) => $body,
            Op::ConvNeXt($r) => $body,
        }
    };
}

/// The layout the macro gives a view when the operator reads every layout: values carry
/// shapes, not layouts, so any fixed choice is correct; channel-first is the default
/// layout of sequences.
const ANY_LAYOUT: Layout = Layout::ChannelFirst;

impl Op {
    /// The runtime's shape rule, on symbolic shapes.
    pub fn output_shape(
        &self,
        inputs: &[Shape<SymDim>],
    ) -> Result<Shape<SymDim>, ShapeError<SymDim>> {
        with_rule!(self, r => r.output_shape(inputs))
    }

    /// The runtime's in-place fact ([`ShapeRule::in_place`]).
    pub fn in_place(&self) -> InPlace {
        with_rule!(self, r => r.in_place())
    }

    /// Layouts of the `arity` tensor inputs and of the output, from the runtime's layout
    /// facts ([`ShapeRule::reads_layout`], [`ShapeRule::writes_layout`]); an operator that
    /// reads every layout gets [`ANY_LAYOUT`], and an output that follows its input the
    /// first input's layout.
    pub fn layouts(&self, arity: usize) -> (Vec<Layout>, Layout) {
        with_rule!(self, r => {
            let inputs: Vec<Layout> =
                (0..arity).map(|a| r.reads_layout(a).unwrap_or(ANY_LAYOUT)).collect();
            let first = inputs.first().copied().unwrap_or(ANY_LAYOUT);
            (inputs, r.writes_layout().unwrap_or(first))
        })
    }

    /// The run-time scalar the call reads (`at` of write_frames and rotary, `len` of
    /// attention), if any.
    pub fn scalar(&self) -> Option<&Ident> {
        match self {
            Op::WriteFrames(_, at) => Some(at),
            Op::Rotary(_, at) => at.as_ref(),
            Op::Attention(_, len) => len.as_ref(),
            _ => None,
        }
    }

    /// Scratch elements for an input whose dims are at most `max_dims`.
    pub fn scratch_len(&self, max_dims: &[usize]) -> usize {
        let dim = |i: usize| max_dims.get(i).copied().unwrap_or(1);
        match self {
            Op::Conv1d(g) => g.scratch_len(dim(1)),
            Op::Conv2d(g) => g.scratch_len(dim(1), dim(2)),
            Op::ResidualConv(g) => g.scratch_len(dim(1)),
            Op::ConvNeXt(g) => g.scratch_len(dim(1)),
            Op::LstmCell(g) => g.scratch_len(),
            Op::StftMagnitude(g) => g.scratch_len(),
            _ => 0,
        }
    }

    /// Whether the prepared operator stores int8 weights (its type is `Op<Q, S>`).
    pub fn int8(&self) -> bool {
        matches!(self, Op::QuantLinear(_) | Op::BlockQ8Linear(_))
    }
}

// ---------------------------------------------------------------------------------------
// The checked plan (phase 2 -> phases 3 and 4)
// ---------------------------------------------------------------------------------------

/// A declared symbolic dimension.
pub struct DimInfo {
    pub name: Ident,
    pub lo: i64,
    pub hi: i64,
}

/// A declared weight tensor.
pub struct WeightInfo {
    pub name: Ident,
    pub storage: Storage,
    pub shape: Vec<usize>,
    /// The declared shape's span (`[64, 32, 3]`), where a size it fixes is reported.
    pub decl: Span,
    /// The step whose prepared operator holds it, and whether it is that operator's
    /// main weight (the field of the weights struct) or its bias.
    pub used: Option<(usize, bool)>,
}

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Caller-owned tensor `tensors[i]`.
    Tensor(usize),
    /// Workspace intermediate (a `let`).
    Temp,
    /// Workspace scratch of one step.
    Scratch,
}

/// A value of the graph.
pub struct Value {
    /// Name in the memory map (`h`, `h#2` for a second `let h`).
    pub label: String,
    /// Name in messages: the user's (`h` for every `let h`).
    pub name: String,
    pub span: Span,
    pub shape: Vec<SymDim>,
    pub home: Home,
    /// Elements at the upper bounds (scratch: its length).
    pub max_elems: usize,
}

/// A caller-owned tensor.
pub struct TensorInfo {
    pub role: Role,
    pub name: Ident,
    pub shape: Vec<SymDim>,
    pub written: bool,
}

/// One operator call.
pub struct StepInfo {
    pub op: Op,
    pub callee: Ident,
    pub inputs: Vec<usize>,
    pub output: usize,
    pub scratch: Option<usize>,
    /// The weight (index in `weights`) whose prepared operator runs this step, and its bias.
    pub weight: Option<usize>,
    pub bias: Option<usize>,
    /// Whether the planner may place the output over the first input.
    pub in_place: bool,
}

/// The checked plan: every name resolved, every shape known, in execution order.
pub struct Checked {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub krate: Option<Path>,
    pub dims: Vec<DimInfo>,
    pub weights: Vec<WeightInfo>,
    pub tensors: Vec<TensorInfo>,
    pub scalars: Vec<Ident>,
    /// The declared maximum worker count (`workers N;`), if any.
    pub workers: Option<usize>,
    /// Another plan's weights struct (`weights = Path;`), if declared.
    pub shared_weights: Option<Path>,
    pub values: Vec<Value>,
    pub steps: Vec<StepInfo>,
}
