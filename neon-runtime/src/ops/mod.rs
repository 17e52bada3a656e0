//! Prepared operators.
//!
//! An operator owns immutable, kernel-ready weights (packed once, in its constructor, or
//! borrowed as already-packed `&'static` data on firmware), is `Send + Sync` so plans can
//! share it, validates every shape before any kernel runs (returning [`crate::Error`], never
//! panicking), and never allocates in `run`: scratch memory is the caller's.
//!
//! Each operator has a *geometry*: the `Copy` description of its sizes (channels, kernel
//! size, stride...) without weights. The geometry implements [`ShapeRule`], generic over
//! [`Dim`], so the `neon_plan!` macro runs the very same rule on symbolic shapes at compile
//! time that the operator runs on concrete shapes.
//!
//! Next to the shape rule, the same trait states the facts a planner needs: whether the
//! operator may run in place on its first input ([`ShapeRule::in_place`]) and which layouts
//! it reads and writes ([`ShapeRule::reads_layout`], [`ShapeRule::writes_layout`]).
//!
//! # Operators
//!
//! [`linear`], [`quant`] (int8-weight linear layers), [`int8`] (int8-activation layers with
//! TFLite's integer arithmetic), [`conv`] (conv1d, depthwise conv1d),
//! [`conv2d`], [`pool`] (2-D max pooling; 1-D and global average and max pooling), [`norm`] (LayerNorm, RMSNorm, GroupNorm),
//! [`activation`], [`elementwise`] (add, mul, scale, per-channel bias and scale),
//! [`softmax`], [`layout`] (transpose, reshape), [`sequence`] (frames concatenated, kept,
//! written into a state), [`pad`] (reflection padding), [`complex`] (magnitudes of stacked
//! real and imaginary channels), [`lstm`] (one LSTM cell step on a caller-owned state),
//! [`embedding`], [`rotary`], [`attention`] (over a KV cache), [`stft`] (magnitude STFT),
//! [`istft`] (inverse STFT).
//!
//! Storage is generic: `S: AsRef<[f32]>`: `Vec<f32>` (feature `alloc`), `&'static [f32]`,
//! or anything else that derefs to a slice (int8 weights likewise: `Q: AsRef<[i8]>`, see
//! [`quant`]).
//!
//! # Constructors and accessors
//!
//! Every operator with weights is built the same way, geometry first (the geometry
//! constants `neon_plan!` emits, such as `Block::W`, fit here as they are):
//!
//! - `new(geometry, weight, bias)`: takes the weights by value and packs them once into the
//!   kernel's layout (feature `alloc`);
//! - `from_slice(geometry, &weight, bias)`: the same from borrowed data (copied);
//! - `from_packed(geometry, packed, bias)`: borrows or takes data already in the kernel's
//!   layout (packed offline, e.g. `&'static` arrays on bare metal): no packing, no copy.
//!
//! Operators without a bias drop the last argument; int8 layers give their quantisation
//! parameters right after the weights (`QuantLinear::new(geometry, q, scale, offset,
//! bias)`). Every operator answers `geometry()` (a `Copy` value), `packed_weight()` (the
//! weights in the kernel's layout, what `from_packed` takes) and, when it has one, `bias()`.
//!
//! Operators are immutable after construction. Choices made per call (today the int8 path
//! of [`quant::QuantLinear`]) are [`RunOptions`], given to `run_with`; `run` uses the
//! defaults.

#[macro_use]
mod macros;
pub(crate) use macros::{field_setters, layout_facts, with_run_options};

pub mod activation;
pub mod attention;
pub mod complex;
pub mod conv;
pub mod conv2d;
pub mod elementwise;
pub mod embedding;
pub mod int8;
pub mod istft;
pub mod layout;
pub mod linear;
pub mod lstm;
pub mod norm;
pub mod options;
pub mod pad;
pub mod pool;
pub mod quant;
pub mod rotary;
pub mod sequence;
pub mod softmax;
pub mod stft;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

pub use options::RunOptions;

/// The shape rule of an operator geometry, and the other facts a planner needs about the
/// operator: whether it may run in place and which layouts it reads and writes.
///
/// These facts are stated here, once per operator, next to its shape rule; `neon_plan!`
/// reads them at compile time (through the same trait, on symbolic shapes) to place values
/// in its workspace and to tag the views it hands to each operator.
pub trait ShapeRule {
    /// Operator name used in error messages (`"conv1d"`).
    fn name(&self) -> &'static str;
    /// Number of tensor inputs the operator takes.
    fn arity(&self) -> usize {
        1
    }
    /// The output shape for `inputs` (in call order), or the first violated rule.
    ///
    /// # Errors
    /// [`ShapeError`] naming the argument, the axis and both sizes.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>>;
    /// Whether the output may take the first input's storage ([`InPlace::Never`] unless an
    /// operator says otherwise).
    fn in_place(&self) -> InPlace {
        InPlace::Never
    }
    /// The layout input `arg` (`0..arity`) must carry, or `None` when the operator reads
    /// every layout (elementwise operators: all inputs then carry one layout).
    fn reads_layout(&self, arg: usize) -> Option<Layout>;
    /// The layout of the output, or `None` when it is the first input's.
    fn writes_layout(&self) -> Option<Layout>;
}

/// Whether an operator's output may live in its first input's storage: the planner's
/// in-place fact (see [`ShapeRule::in_place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlace {
    /// Output and inputs are distinct buffers.
    Never,
    /// The output has the first input's shape and may overwrite it (the operator has a
    /// `run_in_place`; a [`layout::Reshape`] has another shape of the same size and nothing
    /// to compute): a planner reuses the input's storage when nothing reads the input
    /// afterwards.
    Allowed,
    /// The operator always updates its first input (a caller-owned state such as a KV
    /// cache): the output *is* that input.
    Always,
}

impl InPlace {
    /// Whether the output may (or must) share the first input's storage.
    pub const fn possible(self) -> bool {
        !matches!(self, InPlace::Never)
    }
}

/// Checks that argument `arg` has one of the accepted ranks (a helper for shape rules).
///
/// # Errors
/// [`ShapeError::Rank`] when `shape.rank()` is not in `ranks`.
pub fn expect_rank<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    ranks: &[usize],
    expected: &'static str,
) -> Result<(), ShapeError<D>> {
    if ranks.contains(&shape.rank()) {
        Ok(())
    } else {
        Err(ShapeError::Rank { op, arg, expected, got: shape.rank() })
    }
}

/// Checks that axis `axis` of argument `arg` equals `expected` (a helper for shape rules).
///
/// # Errors
/// [`ShapeError::Dim`] with both sizes when they differ.
pub fn expect_dim<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    axis: usize,
    what: &'static str,
    expected: &D,
) -> Result<(), ShapeError<D>> {
    let got = &shape.dims()[axis];
    if got == expected {
        Ok(())
    } else {
        Err(ShapeError::Dim { op, arg, axis, what, expected: expected.clone(), got: got.clone() })
    }
}

/// The size of one head when axis `axis` of argument `arg` (`channels`) is split into
/// `heads` equal heads (a helper for the attention shape rules; `heads >= 1`).
///
/// # Errors
/// [`ShapeError::Indivisible`] when the channels are not a multiple of `heads` (for a
/// symbolic size: unless it is one for every value).
pub fn head_dim<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    axis: usize,
    heads: usize,
) -> Result<D, ShapeError<D>> {
    let c = &shape.dims()[axis];
    let hd = c.div_floor_const(heads);
    if hd.mul_const(heads) == *c && hd.at_least(1) {
        Ok(hd)
    } else {
        Err(ShapeError::Indivisible {
            op,
            arg,
            axis,
            what: "channels",
            divisor: heads,
            divisor_what: "heads",
            got: c.clone(),
        })
    }
}

/// Checks that a buffer (`what`: "weight", "packed weight", ...) has `expected` elements.
pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::Length { what, expected, got })
    }
}

/// Checks that the caller's scratch holds the `need` elements a run asks for (the
/// operator's or block's `scratch_len`).
pub(crate) fn check_scratch(need: usize, got: usize) -> Result<(), Error> {
    if got < need {
        Err(Error::Length { what: "scratch", expected: need, got })
    } else {
        Ok(())
    }
}

/// Checks that a bias, when given, has `channels` values.
pub(crate) fn check_bias_len<S: AsRef<[f32]>>(
    bias: Option<&S>,
    channels: usize,
) -> Result<(), Error> {
    match bias.map(|b| b.as_ref().len()) {
        Some(got) if got != channels => {
            Err(Error::Length { what: "bias", expected: channels, got })
        }
        _ => Ok(()),
    }
}

/// Rank as text for [`ShapeError::Rank`] (`expected` is a `&'static str`).
const RANK_TEXT: [&str; 4] = ["1", "2", "3", "4"];

/// Checks the number of inputs a shape rule was given.
pub(crate) fn expect_arity<D: Dim>(
    op: &'static str,
    inputs: &[Shape<D>],
    n: usize,
) -> Result<(), ShapeError<D>> {
    if inputs.len() == n {
        Ok(())
    } else {
        let reason = if n == 1 { "expects exactly 1 input" } else { "expects exactly 2 inputs" };
        Err(ShapeError::Geometry { op, reason })
    }
}

/// Checks that argument `arg` has exactly the shape `expected` (rank, then every axis).
pub(crate) fn expect_shape<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    expected: &Shape<D>,
) -> Result<(), ShapeError<D>> {
    let rank = expected.rank();
    if shape.rank() != rank {
        return Err(ShapeError::Rank { op, arg, expected: RANK_TEXT[rank - 1], got: shape.rank() });
    }
    for (axis, d) in expected.dims().iter().enumerate() {
        expect_dim(op, arg, shape, axis, "size", d)?;
    }
    Ok(())
}

/// Checks that argument `arg` (an output) has exactly the shape `expected`, naming each
/// axis in the error (`what[axis]`, one name per axis of `expected`).
///
/// # Errors
/// [`ShapeError::Rank`] for another rank, [`ShapeError::Dim`] for another size.
pub(crate) fn expect_named_shape(
    op: &'static str,
    arg: usize,
    shape: &Shape,
    expected: &Shape,
    what: &[&'static str],
) -> Result<(), ShapeError<usize>> {
    let rank = expected.rank();
    expect_rank(op, arg, shape, &[rank], RANK_TEXT[rank - 1])?;
    for (axis, (&what, want)) in what.iter().zip(expected.dims()).enumerate() {
        expect_dim(op, arg, shape, axis, what, want)?;
    }
    Ok(())
}

/// The one input of a single-input shape rule.
///
/// # Errors
/// [`ShapeError::Geometry`] with reason `reason` unless `inputs` holds exactly one shape.
pub(crate) fn only_input<'a, D>(
    op: &'static str,
    inputs: &'a [Shape<D>],
    reason: &'static str,
) -> Result<&'a Shape<D>, ShapeError<D>> {
    match inputs {
        [x] => Ok(x),
        _ => Err(ShapeError::Geometry { op, reason }),
    }
}

/// The input of a single-input shape rule of rank `rank`, after the geometry's own check
/// (`geometry`, the result of its `validate`): the first of `inputs` (later ones are not
/// read).
///
/// # Errors
/// `geometry`'s error first; [`ShapeError::Geometry`] with reason `missing` when there is
/// no input; [`ShapeError::Rank`] (argument 0) when it does not have rank `rank`.
pub(crate) fn first_input<'a, D: Dim>(
    op: &'static str,
    geometry: Result<(), ShapeError<D>>,
    inputs: &'a [Shape<D>],
    missing: &'static str,
    rank: usize,
) -> Result<&'a Shape<D>, ShapeError<D>> {
    geometry?;
    let x = inputs.first().ok_or(ShapeError::Geometry { op, reason: missing })?;
    expect_rank(op, 0, x, &[rank], RANK_TEXT[rank - 1])?;
    Ok(x)
}

/// Checks that a tensor argument carries the layout the operator needs.
pub(crate) fn expect_layout(
    op: &'static str,
    got: Layout,
    want: Layout,
    expected: &'static str,
) -> Result<(), Error> {
    if got == want {
        Ok(())
    } else {
        Err(Error::Layout { op, expected })
    }
}

/// Name of a layout in error messages.
pub(crate) fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::ChannelFirst => "channel-first",
        Layout::FrameMajor => "frame-major",
    }
}

/// Checks that the input carries `layout`.
pub(crate) fn check_input_layout(
    op: &'static str,
    input: &TensorView,
    layout: Layout,
) -> Result<(), Error> {
    expect_layout(op, input.layout(), layout, layout_name(layout))
}

/// Checks that `output` has shape `expected` (argument 1) and layout `layout`.
pub(crate) fn check_output(
    op: &'static str,
    expected: &Shape,
    layout: Layout,
    output: &TensorViewMut,
) -> Result<(), Error> {
    expect_shape(op, 1, output.shape(), expected)?;
    expect_layout(op, output.layout(), layout, layout_name(layout))
}

/// Validates a call of an operator that reads and writes channel-first tensors: the input's
/// layout, `rule` on its shape, then the output's layout and shape (argument 1, axes named
/// `what`). Returns the output shape.
pub(crate) fn check_channel_first<R: ShapeRule>(
    rule: &R,
    input: &TensorView,
    output: &TensorViewMut,
    what: &[&'static str],
) -> Result<Shape, Error> {
    let (op, cf) = (rule.name(), Layout::ChannelFirst);
    check_input_layout(op, input, cf)?;
    let out = rule.output_shape(&[*input.shape()])?;
    expect_layout(op, output.layout(), cf, layout_name(cf))?;
    expect_named_shape(op, 1, output.shape(), &out, what)?;
    Ok(out)
}

/// Text for [`Error::Layout`] when an argument's layout differs from the first input's.
pub(crate) const SAME_LAYOUT: &str = "tensor in the same layout as the first input";

/// Validates a unary, shape-preserving call: runs `rule` on the input shape and checks the
/// output shape (argument 1) and layout.
pub(crate) fn check_unary<R: ShapeRule>(
    rule: &R,
    input: &TensorView<'_>,
    output: &TensorViewMut<'_>,
) -> Result<(), Error> {
    let out = rule.output_shape(&[*input.shape()])?;
    expect_shape(rule.name(), 1, output.shape(), &out)?;
    expect_layout(rule.name(), output.layout(), input.layout(), SAME_LAYOUT)
}

/// Output positions of a sliding window (no dilation) over `size` input positions with
/// `pad` zeros in total, `kernel` taps and step `stride >= 1`: `floor((size + pad - kernel)
/// / stride) + 1` (PyTorch's `Conv2d` / `MaxPool2d` formula), generic over [`Dim`].
///
/// # Errors
/// [`ShapeError::TooSmall`] naming `what` when `size + pad` can be smaller than `kernel`.
pub(crate) fn window_output<D: Dim>(
    op: &'static str,
    what: &'static str,
    size: &D,
    pad: usize,
    kernel: usize,
    stride: usize,
) -> Result<D, ShapeError<D>> {
    let padded = size.add_const(pad);
    match padded.checked_sub_const(kernel) {
        Some(rest) => Ok(rest.div_floor_const(stride).add_const(1)),
        None => Err(ShapeError::TooSmall { op, what, value: padded, min: kernel }),
    }
}

/// A rank-3 image shape `[channels, height, width]` from three dims >= 1.
pub(crate) fn image_shape<D: Dim>(
    op: &'static str,
    channels: D,
    height: D,
    width: D,
) -> Result<Shape<D>, ShapeError<D>> {
    Shape::new(&[channels.clone(), height.clone(), width.clone()]).map_err(|_| {
        let value = [channels, height, width].into_iter().find(|d| !d.at_least(1));
        let value = value.unwrap_or_else(|| D::constant(0));
        ShapeError::TooSmall { op, what: "output dimension", value, min: 1 }
    })
}
