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
//! [`Dim`]: `neon_plan!` checks a block statement with the same rule at compile
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

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::ops::{
    check_channel_first, check_scratch, expect_dim, first_input, layout_facts, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

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

/// What a block geometry states of its own, from which [`validate`] and its [`ShapeRule`]
/// are written once for every block.
pub(crate) trait Composed {
    /// The block's name in errors (`"convnext"`).
    const NAME: &'static str;
    /// The reason of the [`ShapeError::Geometry`] for a call without an input.
    const MISSING: &'static str;
    /// Channels in and out.
    fn channels(&self) -> usize;
    /// The parts' shape rules in the order `run` calls them, on the input shape `x`.
    fn compose<D: Dim>(&self, x: &Shape<D>) -> Result<Shape<D>, ShapeError<D>>;
}

/// A block geometry's own check: the parts' own rules, run on a one-frame input, with
/// their geometry errors named after the block.
///
/// # Errors
/// [`ShapeError::Geometry`] (named `G::NAME`) for zero channels or a part's geometry error;
/// a part's other errors as they are.
pub(crate) fn validate<G: Composed, D: Dim>(g: &G) -> Result<(), ShapeError<D>> {
    let geometry = |reason| ShapeError::Geometry { op: G::NAME, reason };
    if g.channels() == 0 {
        return Err(geometry("channels must be >= 1"));
    }
    let probe = Shape::new(&[D::constant(g.channels()), D::constant(1)])
        .map_err(|_| geometry("channels must be >= 1"))?;
    g.compose(&probe).map(drop).map_err(|e| match e {
        ShapeError::Geometry { reason, .. } => geometry(reason),
        e => e,
    })
}

/// A block's shape rule: channel-first in and out, never in place.
impl<G: Composed> ShapeRule for G {
    fn name(&self) -> &'static str {
        G::NAME
    }

    /// `[channels, frames]` -> `[channels, frames]`.
    ///
    /// # Errors
    /// The geometry's errors (its `validate`), [`ShapeError::Rank`] unless one rank-2
    /// input, [`ShapeError::Dim`] for another channel count (argument 0, named after the
    /// block), then the parts' rules' errors.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = first_input(G::NAME, validate(self), inputs, G::MISSING, 2)?;
        expect_dim(G::NAME, 0, x, 0, "channels", &D::constant(self.channels()))?;
        self.compose(x)
    }
    layout_facts!(Layout::ChannelFirst);
}

/// Writes a block's `scratch_len` (its geometry's), `run` and `run_with`
/// ([`with_run_options`](crate::ops::with_run_options)): `run_with` checks the call
/// ([`check_run`]) and runs `$body` with `$g` the geometry and `$frames` the frame count.
/// `$self` is the caller's `self` token (macro hygiene) and `B` the backend.
macro_rules! block_runs {
    (
        $self:ident, $block:ident, $geometry:ident;
        $(#[$doc:meta])*
        run_with(
            $g:ident,
            $frames:ident,
            $input:ident,
            $output:ident,
            $scratch:ident,
            $options:ident
        ) => $body:block
    ) => {
        #[doc = concat!(
            "Scratch elements a run needs for `frames` frames ([`",
            stringify!($geometry),
            "::scratch_len`])."
        )]
        pub fn scratch_len(&$self, frames: usize) -> usize {
            $self.geometry.scratch_len(frames)
        }

        $crate::ops::with_run_options! {
            $self;
            #[doc = concat!(
                "Runs the block serially: [`",
                stringify!($block),
                "::run_with`] with `RunOptions::new()`."
            )]
            ///
            /// # Errors
            #[doc = concat!("As [`", stringify!($block), "::run_with`].")]
            run($input: &TensorView<'_>, $output: &mut TensorViewMut<'_>, $scratch: &mut [f32]);
            $(#[$doc])*
            run_with($options) => {
                let $g = &$self.geometry;
                let need = |f| $g.scratch_len(f);
                let $frames = $crate::blocks::check_run($g, $input, $output, $scratch.len(), need)?;
                $body
            }
        }
    };
}
pub(crate) use block_runs;
