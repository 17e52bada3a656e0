//! The operators of `neon_plan!`: the operator table ([`table`]: argument slots, flags,
//! options and defaults of every builtin call, and the documentation's operator table), and how a call such as `conv1d(x, w, b, stride = 2)` becomes the runtime's own
//! geometry ([`Op`]), whose shape rule and planner facts the check phase then reads.
//!
//! Every geometry here is a `neon_runtime::ops` type: the macro never restates a shape
//! rule, an in-place fact or a layout.
//!
//! [`resolve`] checks the storage of the call's weights, then dispatches by the table's
//! operator group, as the check and emit phases group them: [`conv`], [`pool`], [`dense`], [`norm`],
//! [`pointwise`], [`sequence`], [`blocks`].

use neon_runtime::Shape;
use syn::Ident;

mod blocks;
mod conv;
mod dense;
mod norm;
mod pointwise;
mod pool;
mod sequence;
pub(crate) mod table;

pub use table::{lookup, DefaultValue, OpSpec};
use table::{Group, OPERATORS};

use crate::ctxt::Ctxt;
use crate::ir::{BlockKind, Op, Storage};
use crate::options::Options;
use crate::sym::SymDim;

/// What an argument position of an operator takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Tensor,
    Weight,
    OptionalWeight,
}

/// The signature of a builtin operator: argument slots and whether it has weights.
pub fn signature(name: &str) -> Option<&'static [Slot]> {
    table::lookup(name).map(|op| op.slots)
}

/// The names of every builtin operator, in the table's order.
pub fn operator_names() -> Vec<&'static str> {
    OPERATORS.iter().map(|op| op.name).collect()
}

/// The flags of operator `op`: its options that may be written bare (`causal` for
/// `causal = true`).
pub fn flags(op: &str) -> Vec<&'static str> {
    let options = table::lookup(op).map_or(&[][..], |op| op.options);
    options.iter().filter(|o| matches!(o.default, DefaultValue::Flag(_))).map(|o| o.name).collect()
}

/// Whether `name` is a flag of operator `op`.
pub fn is_flag(op: &str, name: &str) -> bool {
    flags(op).contains(&name)
}

/// Whether the size a shape rule of operator `op` expects as `what` (the runtime's
/// [`ShapeError::Dim`](neon_runtime::ShapeError::Dim) axis name) is the one the call's
/// main weight declares: the check then reports the mismatch at that weight's
/// declaration. conv1d's weight gives its input channels as axis 1 times `groups`,
/// depthwise_conv1d's as axis 0, conv2d's as axis 1; linear's weight gives its input
/// features as axis 1; the norms', layer_scale's, bias_add's, the per-channel
/// scale_shift's and the blocks' weights give the channels as axis 0. (lstm_cell names its
/// weight itself.)
pub fn weight_fixes(op: &str, what: &str) -> bool {
    matches!(
        (op, what),
        ("conv1d" | "depthwise_conv1d" | "conv2d", "input channels")
            | ("linear", "input features")
            | (
                "layer_norm"
                    | "rms_norm"
                    | "group_norm"
                    | "layer_scale"
                    | "bias_add"
                    | "scale_shift"
                    | "residual_conv"
                    | "convnext",
                "channels"
            )
    )
}

/// How a call of an operator that always writes its first input in place
/// ([`InPlace::Always`](neon_runtime::ops::InPlace::Always)) is written: the hint of the
/// error for a call assigned to anything but the state it reads.
pub fn in_place_example(op: &str) -> String {
    match op {
        "lstm_cell" => "s = lstm_cell(s, x, w, b)".to_string(),
        _ => format!("s = {op}(s, x, at = pos)"),
    }
}

/// A tensor argument as the resolver sees it: the user's name and its symbolic shape.
pub struct TensorArg<'a> {
    pub name: &'a Ident,
    pub shape: &'a Shape<SymDim>,
}

impl TensorArg<'_> {
    /// The shape as the user writes it, `[2, 128]`.
    fn shape_text(&self) -> String {
        let parts: Vec<String> = self.shape.dims().iter().map(|d| d.to_string()).collect();
        format!("[{}]", parts.join(", "))
    }
}

/// A weight argument as the resolver sees it: name, span and constant shape.
pub struct WeightArg<'a> {
    pub name: &'a Ident,
    pub shape: &'a [usize],
    pub storage: Storage,
}

/// Rule: a weight has the rank its operator reads. Returns the weight (every signature
/// with this rule has one).
fn weight_rank<'w, 'a>(
    op: &str,
    w: Option<&'w WeightArg<'a>>,
    rank: usize,
    what: &str,
) -> Result<&'w WeightArg<'a>, syn::Error> {
    let w = w.expect("signature has a weight");
    if w.shape.len() == rank {
        Ok(w)
    } else {
        Err(syn::Error::new(
            w.name.span(),
            format!("{op} expects {what} of rank {rank}, `{}` has shape {:?}", w.name, w.shape),
        ))
    }
}

/// Rule: a bias has one value per output channel (or feature).
fn bias_len(op: &str, b: Option<&WeightArg>, n: usize, what: &str) -> Result<bool, syn::Error> {
    match b {
        None => Ok(false),
        Some(b) if b.shape == [n] => Ok(true),
        Some(b) => Err(syn::Error::new(
            b.name.span(),
            format!("{op} expects {what} of shape [{n}], `{}` has shape {:?}", b.name, b.shape),
        )),
    }
}

/// A block weight whose declaration does not list the block's sizes (the declaration
/// check reports it first; this keeps the resolver total).
fn block_sizes(w: &WeightArg, kind: BlockKind) -> syn::Error {
    syn::Error::new(
        w.name.span(),
        format!("`{}` must be declared {}, it has sizes {:?}", w.name, kind.form(), w.shape),
    )
}

fn conflict(callee: &Ident) -> syn::Error {
    syn::Error::new(
        callee.span(),
        format!("{callee}: `causal = true` and `padding` both set the padding; give one"),
    )
}

/// Builds the operator of a call from its name, weight shapes, options and (for the
/// operators whose geometry the tensors give, `lstm_cell`) tensor shapes; `None` when the
/// call is invalid (reported into `cx`; malformed option values are reported by `opts`).
pub fn resolve(
    callee: &Ident,
    weights: &[WeightArg],
    tensors: &[TensorArg],
    opts: &mut Options,
    cx: &Ctxt,
) -> Option<Op> {
    match resolve_op(callee, weights, tensors, opts) {
        Ok(op) => op,
        Err(e) => {
            cx.syn_error(e);
            None
        }
    }
}

/// What resolving a call gives: `Err` for an error of its own, `Ok(None)` when an option
/// error (already reported) leaves the call without an operator.
type Resolved = Result<Option<Op>, syn::Error>;

/// One call as the operator groups read it: the operator's name, its identifier (for
/// spans), its first two weights and its tensor arguments.
#[derive(Clone, Copy)]
struct Call<'a, 'b> {
    op: &'a str,
    callee: &'a Ident,
    w: Option<&'a WeightArg<'b>>,
    b: Option<&'a WeightArg<'b>>,
    tensors: &'a [TensorArg<'b>],
}

/// [`resolve`]'s operator ([`Resolved`]).
fn resolve_op(
    callee: &Ident,
    weights: &[WeightArg],
    tensors: &[TensorArg],
    opts: &mut Options,
) -> Resolved {
    let name = callee.to_string();
    let op = name.as_str();
    storage_rules(op, weights)?;
    let call = Call { op, callee, w: weights.first(), b: weights.get(1), tensors };
    debug_assert_eq!(opts.spec().name, op, "the options are read against the callee's row");
    match opts.spec().group {
        Group::Conv => conv::resolve(call, opts),
        Group::Pool => pool::resolve(call, opts),
        Group::Dense => dense::resolve(call, opts),
        Group::Norm => norm::resolve(call, opts),
        Group::Pointwise => pointwise::resolve(call, opts),
        Group::Sequence => sequence::resolve(call, opts),
        Group::Blocks => blocks::resolve(call, opts),
    }
}

/// Rules on the storage of a call's weights: a block's weights go to that block's
/// statement, a block statement takes its own block's weights, and only `linear` takes
/// int8 weights.
fn storage_rules(op: &str, weights: &[WeightArg]) -> Result<(), syn::Error> {
    // Rule: a block's weights go to that block's statement, and a block statement takes
    // its own block's weights.
    let block = BlockKind::from_name(op);
    for arg in weights {
        match (arg.storage, block) {
            (Storage::Block(k), Some(b)) if k == b => {}
            (Storage::Block(k), _) => {
                return Err(syn::Error::new(
                    arg.name.span(),
                    format!(
                        "`{}` is a {k} block: call it as `let y = {k}(x, {});`",
                        arg.name, arg.name
                    ),
                ))
            }
            (s, Some(b)) => {
                return Err(syn::Error::new(
                    arg.name.span(),
                    format!(
                        "{op} takes the weights of a block declared {}, `{}` is {s}{:?}",
                        b.form(),
                        arg.name,
                        arg.shape
                    ),
                ))
            }
            (_, None) => {}
        }
    }
    // Rule: only `linear` takes int8 weights; biases and every other weight are f32.
    for (k, arg) in weights.iter().enumerate() {
        if block.is_none() && arg.storage != Storage::F32 && !(op == "linear" && k == 0) {
            return Err(syn::Error::new(
                arg.name.span(),
                format!(
                    "{op} takes f32 {}, `{}` is {}",
                    if k == 0 { "weights" } else { "biases" },
                    arg.name,
                    arg.storage
                ),
            ));
        }
    }
    Ok(())
}
