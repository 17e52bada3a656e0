//! Blocks: reusable compositions of prepared operators, run as one step.
//!
//! - [`ResidualConv`] (`y = x + conv2(act(conv1(act(x))))`, HiFi-GAN's residual unit);
//! - [`ConvNeXt`] (depthwise conv -> LayerNorm -> pointwise up -> GELU -> pointwise down ->
//!   layer scale -> + skip; Liu et al. 2022, "A ConvNet for the 2020s", over 1-D sequences
//!   as audio models such as Vocos use it).
//!
//! A block is not new math: it holds the ordinary prepared operators of [`crate::ops`]
//! ([`Conv1d`](crate::ops::conv::Conv1d), [`DepthwiseConv1d`](crate::ops::conv::DepthwiseConv1d),
//! [`LayerNorm`](crate::ops::norm::LayerNorm), [`LayerScale`](crate::ops::elementwise::LayerScale),
//! [`Activation`](crate::ops::activation::Activation), [`Add`](crate::ops::elementwise::Add))
//! and calls them in order, so a block gives exactly the bits of those operators called one
//! by one.
//!
//! Like an operator, a block has a `Copy` *geometry* ([`ResidualConvGeometry`],
//! [`ConvNeXtGeometry`]) implementing [`ShapeRule`], generic over
//! [`Dim`](crate::Dim): `neon_plan!` checks a block statement with the same rule at compile
//! time. The rule is the composition of the parts' own rules (after the block's own checks
//! of the input's rank and channels, so errors name the block). Each geometry also answers
//! `scratch_len(frames)`: the caller's scratch a run needs, which a plan places in its
//! workspace like any other value.
//!
//! Blocks are channel-first `[channels, frames]` in and out, keep the frame count ("same"
//! padding, see [`same_padding`]) and never run in place: the skip input is read by the last
//! step, after the output has been written. Every intermediate lives in the output or in the
//! scratch, so a block needs no memory beyond those two (see each block's `run` for the
//! order of the steps and what the scratch holds).
//!
//! Construction follows the operators: `new(geometry, weights)` takes a weights struct in
//! PyTorch's layouts by value (feature `alloc`) and packs it; `from_parts(geometry, ..)`
//! takes prepared operators (any storage `S`, e.g. built with their `from_packed` over
//! `&'static` data), checking that each has the geometry the block expects. Blocks are
//! immutable after construction and `Send + Sync` when `S` is.

pub mod convnext;
pub mod residual;

pub use convnext::{ConvNeXt, ConvNeXtGeometry, ConvNeXtWeights};
pub use residual::{ResidualConv, ResidualConvGeometry, ResidualConvWeights};

use crate::error::{Error, ShapeError};
use crate::ops::{check_channel_first, check_scratch, ShapeRule};
use crate::tensor::{Layout, TensorView, TensorViewMut};

/// "Same" padding of a stride-1 window of `kernel` taps spaced `dilation` frames apart:
/// `(pad_left, pad_right)` with `pad_left = dilation * (kernel - 1) / 2` (floor) and the
/// rest on the right, so the output has as many frames as the input. This is PyTorch's
/// `padding="same"` (`torch.nn.Conv1d`: an odd total puts the extra zero on the right); for
/// an odd kernel both sides get `dilation * (kernel - 1) / 2`. Saturates for sizes that
/// overflow (their geometry is refused by the conv's own validation).
pub const fn same_padding(kernel: usize, dilation: usize) -> (usize, usize) {
    let total = kernel.saturating_sub(1).saturating_mul(dilation);
    (total / 2, total - total / 2)
}

/// The geometry error a block reports for a part that does not have the block's geometry
/// (or lacks the bias every part of a block has).
pub(crate) fn part_error(op: &'static str, reason: &'static str) -> Error {
    Error::Shape(ShapeError::Geometry { op, reason })
}

/// Checks that a weight buffer of a block (`what`, the weights struct's field name) has
/// `expected` elements, so a wrong one is named before any part is built.
#[cfg(feature = "alloc")]
pub(crate) fn check_weight(what: &'static str, expected: usize, got: usize) -> Result<(), Error> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::Length { what, expected, got })
    }
}

/// The checks of a block's run, before any step: `input` and `output` channel-first
/// `[channels, frames]` as the block's shape rule (`rule`) says, and `scratch_len` at least
/// `need(frames)` elements. Returns `frames`.
pub(crate) fn check_run<R: ShapeRule>(
    rule: &R,
    input: &TensorView<'_>,
    output: &TensorViewMut<'_>,
    scratch_len: usize,
    need: impl FnOnce(usize) -> usize,
) -> Result<usize, Error> {
    check_channel_first(rule, input, output, &["channels", "frames"])?;
    let frames = input.dims()[1];
    check_scratch(need(frames), scratch_len)?;
    Ok(frames)
}

/// Splits the front of `scratch` off as a channel-first `[channels, frames]` view (one of
/// the block's intermediates) and returns it with the rest.
///
/// # Errors
/// [`Error::Length`] (`"scratch"`) when `scratch` is shorter than `channels * frames` (a
/// block checks its whole `scratch_len` first, so this does not happen in a run).
pub(crate) fn take_view(
    scratch: &mut [f32],
    channels: usize,
    frames: usize,
) -> Result<(TensorViewMut<'_>, &mut [f32]), Error> {
    let len = channels.saturating_mul(frames);
    let short = Error::Length { what: "scratch", expected: len, got: scratch.len() };
    let (head, rest) = scratch.split_at_mut_checked(len).ok_or(short)?;
    Ok((TensorViewMut::new(head, &[channels, frames], Layout::ChannelFirst)?, rest))
}
