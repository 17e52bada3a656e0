//! `neon-import`: readers of users' model files, `.onnx` (protobuf, decoded with prost) and
//! `.tflite` (FlatBuffer), and the graph walks that turn a file into neon-runtime operators.
//! Depends on neon-runtime (`alloc`) and prost only; not on neon-models, the CLI or audio.
//!
//! Both parsers ([`onnx::parse`], [`tflite::parse`]) recognise the graphs openWakeWord's
//! training writes (a flatten, dense layers of any width and depth, LayerNorm as one op or
//! decomposed, ReLU, a final sigmoid; TFLite's optional two-stage `IF`) and reduce them to
//! one neutral description, a [`HeadGraph`]: a chain of [`Layer`]s on one row of
//! `frames * frame_width` values. The caller states what a head may be ([`Limits`]: the
//! width of one input frame, the largest frame count, layer width and depth);
//! [`HeadGraph::check`] checks a graph against them, and [`ops`] / [`chain`] turn its layers
//! into prepared operators and a run-time [`ExecutionPlan`](neon_runtime::exec::ExecutionPlan).
//!
//! [`tflite::parse_stream`] reads microWakeWord's int8 streaming models (`.tflite` with
//! resource variables) into a [`tflite::StreamGraph`]: tensors, variables with their initial
//! values and the operators of one step, checked but not yet turned into a run-time plan.
//! [`tflite::quant`] computes from its scales what the int8 kernels take (multipliers, output
//! stages, the LOGISTIC table), as the TFLite library does.
//!
//! Every fault is an [`Error`] whose message is one line (the caller adds which file);
//! no input bytes make a parser panic, and allocation is bounded by the bytes present.

#![warn(missing_docs)]

// `alloc` paths, as in neon-runtime; `std` is linked for f64 `sqrt` and `powf` (the LayerNorm
// evaluator of `onnx/norm.rs`).
extern crate alloc;

mod error;
mod flatbuffer;
mod graph;
pub mod onnx;
pub mod onnx_proto;
pub mod tflite;

pub use error::Error;
pub use graph::{chain, ops, HeadGraph, Layer, Limits, SecondStage};
