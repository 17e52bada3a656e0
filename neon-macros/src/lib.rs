//! `neon_plan!`: compile-time shape checking, static memory planning and straight-line
//! code generation over `neon-runtime` kernels.
//!
//! A plan is one model component written as a block of operator calls. At compile time
//! the macro resolves every name, runs each operator's shape rule on symbolic shapes (the
//! runtime's own rules, evaluated on symbolic dims: one source of truth),
//! computes buffer lifetimes and a fixed workspace layout with the runtime's planner, and
//! expands to one zero-allocation function that calls the kernels in order.
//!
//! # Example
//!
//! ```
//! use neon_macros::neon_plan;
//! use neon_runtime::ops::conv::Conv1d;
//! use neon_runtime::Portable;
//!
//! neon_plan! {
//!     /// conv1d -> ReLU -> residual add, over any number of frames up to 1000.
//!     pub plan Block {
//!         dim frames in 1..=1000;
//!         weight w: f32[16, 16, 3];
//!         weight b: f32[16];
//!         input x: [16, frames];
//!         output y: [16, frames];
//!
//!         let h = conv1d(x, w, b, padding = (1, 1));
//!         let h = relu(h);
//!         y = add(h, x);
//!     }
//! }
//!
//! // Weights: one prepared operator per weight an operator uses, built with the geometry
//! // the plan was compiled for (packing happens here, once).
//! let weights = BlockWeights {
//!     w: Conv1d::new(Block::W, vec![0.01; 16 * 16 * 3], Some(vec![0.0; 16])).unwrap(),
//! };
//! let mut workspace = Box::new(BlockWorkspace::new()); // Block::WORKSPACE_BYTES, aligned
//! let x = vec![1.0f32; Block::x_len(40)];
//! let mut y = vec![0.0f32; Block::y_len(40)];
//! Block::run::<Portable, _>(&weights, &x, &mut y, 40, &mut workspace).unwrap();
//! assert!((y[0] - 1.32).abs() < 1e-5); // relu(0.01 * 32 taps inside the padding) + 1
//!
//! // Wrong sizes are errors before any kernel runs; the plan stays usable.
//! assert!(Block::run::<Portable, _>(&weights, &x, &mut y, 41, &mut workspace).is_err());
//! ```
//!
//! # Grammar
//!
#![doc = include_str!("../docs/grammar.md")]
//!
//! # Operators
//!
#![doc = include_str!("../docs/operators.md")]
//!
//! # Blocks
//!
//! `residual_conv` and `convnext` are the blocks of `neon_runtime::blocks`, one statement
//! each: a block weight (`weight cn0: convnext[128, 384, 7];`) declares the sizes of all of
//! the block's tensors, and its statement runs the whole block as one step:
//!
//! ```text
//! weight res: residual_conv[128, 3];          // channels, kernel (both convs)
//! weight cn0: convnext[128, 384, 7];          // channels, hidden, depthwise kernel
//! let h = residual_conv(x, res, dilations = (1, 3), slope = 0.1);
//! let h = convnext(h, cn0, eps = 1e-6);
//! ```
//!
//! The shape rule is the block geometry's (`ResidualConvGeometry`, `ConvNeXtGeometry`);
//! the weights struct has one field of the block's prepared type (`ResidualConv<S>`,
//! `ConvNeXt<S>`), built with the geometry constant (`ConvNeXt::new(Name::CN0, weights)`);
//! the block's scratch (its intermediates) is a workspace value named
//! `convnext#scratchN` in `MEMORY_MAP`, placed by the planner like any other. A block never
//! runs in place: its output is a new value.
//!
//! # Generated items
//!
//! For `plan Name`:
//! - `struct Name` with `WORKSPACE_BYTES`, `LOWER_BOUND_BYTES`, `STEPS`, `MAX_WORKERS` (the
//!   `workers` bound, `usize::MAX` without one), `MEMORY_MAP` (name,
//!   offset, bytes, first and last step of every value), one geometry constant per weight
//!   (`Name::W`: pass it to the operator's constructor, e.g. `Linear::new(Name::W, w, b)`),
//!   `NAME_len(dims..)` for every caller tensor,
//!   `run_with::<B, S>(weights, inputs.., outputs.., states.., dims.., scalars.., workspace,
//!   options)` with per-call `neon_runtime::RunOptions` (the int8 path of `i8` linear
//!   layers; the execution context, e.g. `RunOptions::new().with_parallel(&team)`, on which
//!   linear, conv, depthwise, attention, LSTM and block steps split their outputs: the same
//!   bits for any thread count, and the same workspace, which has no per-worker part; a team above
//!   `workers` is `Error::OutOfRange` named `workers` before any kernel), and
//!   `run::<B, S>(..)`, the same with `RunOptions::new()` (serial).
//! - `struct NameWeights<S>`: the prepared operators, one field per weight an operator
//!   uses (a bias belongs to its operator's field). `S: AsRef<[f32]>` is the f32 storage;
//!   a plan with int8 weights adds `Q: AsRef<[i8]>` (`NameWeights<S, Q>`, fields such as
//!   `QuantLinear<Q, S>` and `BlockQ8Linear<Q, S>`), and `run` takes `<B, S, Q>`.
//! - With `weights = OtherWeights;` no weights struct is generated: `run` and `run_with`
//!   take `&OtherWeights<S>` (e.g. a streaming twin of a whole-window plan over the same
//!   prepared operators, so the weights are held once). Its fields must be named as this
//!   plan's weights and have their operator types (the compiler checks), and `run` checks
//!   each field's geometry against this plan's constants before any kernel, as it does for
//!   its own struct.
//! - `struct NameWorkspace`: `[f32; WORKSPACE_BYTES / 4]`, 16-byte aligned, `const fn new`,
//!   so it can be a `static`.
//!
//! `run` first checks that backend `B` can run here (`B::KIND.availability()`; otherwise
//! `neon_runtime::Error::Backend`, never a panic: without the runtime's feature `std` there
//! is no run-time CPU detection, so `X86<Avx2>` and `X86<Avx512>` run only where their
//! target features are enabled at compile time, e.g. `-C target-feature=+avx2,+fma`), then
//! validates dims against their bounds, every tensor's length, every weight's
//! geometry and every scalar's range (`at` of `write_frames` and `rotary`, `len` of
//! `attention`; the error names the scalar), returning `neon_runtime::Error` before the
//! first kernel runs. The generated
//! code has no heap allocation, no dynamic dispatch and no `unsafe`.
//!
//! # Errors
//!
//! Every error is a `compile_error!` spanned on the offending token, and a block's errors
//! are reported together: every syntax error (a malformed item is skipped up to its `;`),
//! else the errors of all declarations and statements (per statement every argument and
//! option error, or the first shape error): mismatched channels or frames (naming both
//! shapes), channels that do not split into an operator's heads, wrong ranks, unknown
//! operators, weights or options, a weight used by two statements, block declarations without their
//! sizes, a block's weights given to another operator (or another weight to a block),
//! undefined values, redefining or writing an input, unbounded or empty dims, sizes that
//! can reach 0 within the bounds, and values computed but never used. Stable proc macros
//! cannot emit warnings, so what would be a warning is an error.
//!
//! One mistake gives one error. A statement that fails (in its arguments, its options or
//! its shapes) defines its result with an unknown shape that silences every later use of
//! it, and a dim with a bad range is reported once and then read clamped. Messages use
//! the names the user wrote (`h`, never the memory map's `h#2`).
//!
//! A size a weight's declaration fixes (conv1d's, depthwise_conv1d's and conv2d's input
//! channels, linear's input features, the channels of the norms, `layer_scale`,
//! `bias_add` and the blocks) that the input does not have is reported at the weight's
//! declaration, naming the weight and still the input and its shape (a `compile_error!`
//! has one span, and stable Rust has no notes to point at the second place):
//!
//! ```text
//! error: conv1d: weight `w1` is declared [64, 32, 3], which takes 32 input channels, but `x` has 40 (`x`: [40, frames])
//!   --> ui/weight_names_culprit.rs:10:23
//!    |
//! 10 |         weight w1: f32[64, 32, 3];
//!    |                       ^^^^^^^^^^^
//! ```
//!
//! A misspelt name gets the closest valid one (optimal-string-alignment distance within a
//! third of its length, or the one name it starts) and, where the names are few, the list:
//! operators, options (those the operator reads), flags written bare, item keywords,
//! layouts and `padding` keywords, weight storages, weights, values and scalars:
//!
//! ```text
//! error: conv1d has no option `paddng`: did you mean `padding`? (options: groups, stride, dilation, output, causal, padding)
//!   --> ui/no_cascade.rs:14:26
//!    |
//! 14 |     let h = conv1d(x, w, paddng = 1);
//!    |                          ^^^^^^
//! ```
//!
//! Values carry shapes, not layouts: each operator reads its inputs in the layout it
//! expects (`conv1d` channel-first, `linear` frame-major, norms as their `layout` option
//! says). When a channel-first `[C, T]` value meets an operator that expects frame-major
//! `[T, C]`, the shape check catches it unless `C == T`; convert with `transpose(x)` or
//! `conv1d(.., output = frame_major)`.
//!
//! # Expanded
//!
//! What the example above expands to, as `cargo expand` shows it (regenerated by
//! `scripts/expand-example.sh`):
//!
#![doc = include_str!("../docs/expanded.md")]
//!
//! # Design
//!
//! Phases, one module each, talking only through the types of `ir`: `parse` (syntax ->
//! `ir::Plan`) -> `check` (names, symbolic shapes, the runtime's own shape rules and
//! planner facts -> `ir::Checked`) -> `schedule` (the runtime's planner: liveness,
//! in-place, offsets) -> `emit` (straight-line Rust). Every phase reports into one error
//! context (`ctxt`, serde_derive's pattern), so all of a block's errors are reported at
//! once: every syntax error, else every check error. `signatures` holds the operator table
//! (`signatures/table.rs`: argument slots, call form, shape text, options and their
//! defaults; the operator table above is rendered from it) and turns a call's options into
//! the runtime geometry (read through `options`, which checks them against the table).
//!
//! Operator facts are the runtime's: the shape rule, whether an operator may run in place
//! on its first input and which layouts it reads and writes are stated once, next to each
//! `ShapeRule` in `neon_runtime::ops`, and read here through that trait (the macro links
//! the runtime at compile time). Symbolic dims are canonical polynomials with
//! floor-division atoms; range checks evaluate every point of small domains exactly and
//! fall back to sound interval arithmetic.

mod check;
mod ctxt;
#[cfg(test)]
mod docs;
mod emit;
mod ir;
mod literals;
mod options;
mod parse;
mod schedule;
mod signatures;
mod suggest;
mod sym;

use proc_macro::TokenStream;

use ctxt::Ctxt;

/// Compiles a plan into straight-line code: see the [crate documentation](crate).
#[proc_macro]
pub fn neon_plan(input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let expanded = expand(input.into(), &cx);
    match cx.check() {
        Ok(()) => expanded.unwrap_or_default().into(),
        Err(errors) => errors.into(),
    }
}

/// The phases, each reporting into `cx`; `None` once one has failed (the next would only
/// add noise).
fn expand(input: proc_macro2::TokenStream, cx: &Ctxt) -> Option<proc_macro2::TokenStream> {
    let plan = parse::parse(input, cx)?;
    if cx.error_count() > 0 {
        return None;
    }
    let checked = check::check(&plan, cx)?;
    match schedule::schedule(&checked) {
        Ok(memory) => Some(emit::emit(&checked, &memory)),
        Err(e) => {
            cx.error(checked.name.span(), format!("memory planning failed: {e}"));
            None
        }
    }
}
