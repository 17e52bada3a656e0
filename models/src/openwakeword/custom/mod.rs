//! Users' own wake-word heads, loaded from the `.onnx` and `.tflite` files openWakeWord's
//! training notebook exports (feature `std`).
//!
//! Both parsers ([`onnx`], [`tflite`]) recognise the graphs openWakeWord's training writes
//! (a flatten, dense layers of any width and depth, LayerNorm as one op or decomposed,
//! ReLU, a final sigmoid; TFLite's optional two-stage `IF`) and reduce them to one neutral
//! description, a [`HeadGraph`]: a chain of [`Layer`]s on one row of `frames * 96`
//! embedding values. [`HeadGraph::validate`] checks the chain (widths, sizes, finite values)
//! and [`HeadGraph::build`] turns it into prepared operators for run-time
//! [`ExecutionPlan`]s ([`GraphHead`]), one per detector, sharing the weights.
//!
//! Input of every head: the last `frames` embeddings `[frames, 96]` (oldest first),
//! flattened frame by frame (`t * 96 + c`), as openwakeword's `predict` passes
//! `get_features(N)` with N read from the model's input shape `[1, N, 96]`.

mod flatbuffer;
mod load;
pub mod names;
pub mod onnx;
pub mod onnx_proto;
pub mod tflite;

pub use load::{parse, wake_word_from_file, wake_words_in_dir, Format};

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use neon_runtime::exec::{ExecutionPlan, Op, Value};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};
use neon_runtime::{Backend, Layout, TensorView};

use super::stream::EMBEDDING_DIM;
use crate::error::{Error, WeightsReason, WeightsSource};

/// Largest number of embedding frames a head may read (openwakeword keeps 120 embeddings,
/// `feature_buffer_max_len`, so no model can read more).
pub const MAX_FRAMES: usize = 120;

/// Largest layer width accepted (far above any openWakeWord head, 32..=128 in practice):
/// bounds the memory a hostile file can make us allocate per layer.
pub const MAX_FEATURES: usize = 1 << 16;

/// Largest number of layers per stage.
pub const MAX_LAYERS: usize = 256;

/// One layer of a head, applied to a row `[1, features]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Layer {
    /// `y = x W^T + b` (ONNX `Gemm`, `MatMul` (+ `Add`); TFLite `FULLY_CONNECTED`).
    Dense {
        /// Input features.
        in_features: usize,
        /// Output features.
        out_features: usize,
        /// `[out_features, in_features]`, row-major (PyTorch's layout; an ONNX `MatMul`'s
        /// `[in, out]` matrix is transposed by its parser).
        weight: Vec<f32>,
        /// `[out_features]`, if any.
        bias: Option<Vec<f32>>,
    },
    /// LayerNorm over the row (biased variance, Ba et al. 2016):
    /// `(x - mean) / sqrt(var + eps) * gamma + beta`.
    LayerNorm {
        /// Features normalised together.
        features: usize,
        /// Added to the variance (> 0).
        eps: f32,
        /// Scale `[features]`; `None` is all ones.
        gamma: Option<Vec<f32>>,
        /// Shift `[features]`; `None` is all zeros.
        beta: Option<Vec<f32>>,
    },
    /// `max(x, 0)`.
    Relu,
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
}

impl Layer {
    /// The op's name in messages.
    fn name(&self) -> &'static str {
        match self {
            Layer::Dense { .. } => "dense",
            Layer::LayerNorm { .. } => "layer_norm",
            Layer::Relu => "relu",
            Layer::Sigmoid => "sigmoid",
        }
    }
}

/// A second stage (openWakeWord's official `hey_jarvis` graph: `GREATER_EQUAL`, `RESHAPE`,
/// `IF`): when the first stage's score is `>= threshold`, these layers on the same input
/// give the score; otherwise the first stage's score stands.
#[derive(Clone, Debug, PartialEq)]
pub struct SecondStage {
    /// The first-stage score at or above which the second stage runs.
    pub threshold: f32,
    /// The second stage's layers (input `[1, frames * 96]`, output `[1, 1]`).
    pub layers: Vec<Layer>,
}

/// A head as a parser found it: `layers` map `[1, frames * 96]` to a score `[1, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadGraph {
    /// Embedding frames read (the model's input shape `[1, frames, 96]`), 1..=[`MAX_FRAMES`].
    pub frames: usize,
    /// The first (or only) stage.
    pub layers: Vec<Layer>,
    /// An optional second stage.
    pub stage2: Option<SecondStage>,
}

/// An [`Error::Weights`] for the model file `source` as a whole: `message` (one line).
pub fn model_error(source: &WeightsSource, message: impl Into<String>) -> Error {
    Error::Weights {
        source: source.clone(),
        tensor: "",
        reason: WeightsReason::Invalid(message.into()),
    }
}

/// Checks one stage: widths chain from `input` features to 1, sizes match, values finite.
fn validate_stage(layers: &[Layer], input: usize, stage: &str) -> Result<(), String> {
    if layers.is_empty() {
        return Err(format!("{stage} has no layers"));
    }
    if layers.len() > MAX_LAYERS {
        return Err(format!("{stage} has {} layers (at most {MAX_LAYERS})", layers.len()));
    }
    let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
    let mut width = input;
    for (i, layer) in layers.iter().enumerate() {
        let at = || format!("{stage} layer {i} ({})", layer.name());
        match layer {
            Layer::Dense { in_features, out_features, weight, bias } => {
                if *in_features != width {
                    return Err(format!("{}: takes {in_features} features, gets {width}", at()));
                }
                if *out_features == 0 || *out_features > MAX_FEATURES {
                    return Err(format!("{}: {out_features} outputs", at()));
                }
                if weight.len() != in_features * out_features {
                    return Err(format!("{}: weight has {} values", at(), weight.len()));
                }
                if bias.as_ref().is_some_and(|b| b.len() != *out_features) {
                    return Err(format!("{}: bias is not [{out_features}]", at()));
                }
                if !finite(weight) || !bias.as_deref().is_none_or(finite) {
                    return Err(format!("{}: NaN or infinity in the weights", at()));
                }
                width = *out_features;
            }
            Layer::LayerNorm { features, eps, gamma, beta } => {
                if *features != width {
                    return Err(format!("{}: normalises {features} features, gets {width}", at()));
                }
                if !(eps.is_finite() && *eps > 0.0) {
                    return Err(format!("{}: eps {eps} is not positive and finite", at()));
                }
                for (what, v) in [("scale", gamma), ("shift", beta)] {
                    if let Some(v) = v {
                        if v.len() != *features {
                            return Err(format!("{}: {what} is not [{features}]", at()));
                        }
                        if !finite(v) {
                            return Err(format!("{}: NaN or infinity in the {what}", at()));
                        }
                    }
                }
            }
            Layer::Relu | Layer::Sigmoid => {}
        }
    }
    if width != 1 {
        return Err(format!("{stage} ends with {width} values, not one score"));
    }
    Ok(())
}

impl HeadGraph {
    /// Values of one head input: `frames * 96`.
    pub fn input_features(&self) -> usize {
        self.frames * EMBEDDING_DIM
    }

    /// Checks the graph: `frames` in 1..=[`MAX_FRAMES`]; each stage non-empty (at most
    /// [`MAX_LAYERS`] layers), its widths chaining from `frames * 96` to a single score,
    /// every weight of the size its layer states and finite; a finite threshold.
    ///
    /// # Errors
    /// [`Error::Weights`] for `source` with the first fault, in one line.
    pub fn validate(&self, source: &WeightsSource) -> Result<(), Error> {
        if self.frames == 0 || self.frames > MAX_FRAMES {
            return Err(model_error(
                source,
                format!(
                    "the model reads {} embedding frames (supported: 1 to {MAX_FRAMES})",
                    self.frames
                ),
            ));
        }
        let input = self.input_features();
        validate_stage(&self.layers, input, "the head").map_err(|m| model_error(source, m))?;
        if let Some(s2) = &self.stage2 {
            if !s2.threshold.is_finite() {
                return Err(model_error(source, "the second stage's threshold is not finite"));
            }
            validate_stage(&s2.layers, input, "the second stage")
                .map_err(|m| model_error(source, m))?;
        }
        Ok(())
    }

    /// Validates the graph, then prepares its operators (weights packed once, shared by
    /// every plan [`GraphHead::plans`] builds).
    ///
    /// # Errors
    /// As [`Self::validate`]; [`Error::Runtime`] should an operator refuse its geometry.
    pub fn build(&self, source: &WeightsSource) -> Result<GraphHead, Error> {
        self.validate(source)?;
        let stage2 = match &self.stage2 {
            Some(s) => Some((s.threshold, prepare(&s.layers)?)),
            None => None,
        };
        Ok(GraphHead { frames: self.frames, stage1: prepare(&self.layers)?, stage2 })
    }
}

/// Prepared operators of one stage, in order.
fn prepare(layers: &[Layer]) -> Result<Arc<[Op]>, Error> {
    let mut ops = Vec::with_capacity(layers.len());
    for layer in layers {
        ops.push(match layer {
            Layer::Dense { in_features, out_features, weight, bias } => {
                let g = LinearGeometry {
                    in_features: *in_features,
                    out_features: *out_features,
                    bias: bias.is_some(),
                };
                Op::from(Linear::from_slice(g, weight, bias.as_deref())?)
            }
            Layer::LayerNorm { features, eps, gamma, beta } => {
                let g = LayerNormGeometry {
                    channels: *features,
                    eps: *eps,
                    bias: beta.is_some(),
                    layout: Layout::FrameMajor,
                };
                let ones;
                let gamma = match gamma {
                    Some(g) => g.as_slice(),
                    None => {
                        ones = alloc::vec![1.0f32; *features];
                        ones.as_slice()
                    }
                };
                Op::from(LayerNorm::from_slice(g, gamma, beta.as_deref())?)
            }
            Layer::Relu => Op::Activation(Activation::Relu),
            Layer::Sigmoid => Op::Activation(Activation::Sigmoid),
        });
    }
    Ok(ops.into())
}

/// A validated head's prepared operators, shared (by `Arc`) among detectors; each detector
/// runs them through plans of its own ([`Self::plans`]).
#[derive(Clone, Debug)]
pub struct GraphHead {
    frames: usize,
    stage1: Arc<[Op]>,
    stage2: Option<(f32, Arc<[Op]>)>,
}

impl GraphHead {
    /// Embedding frames the head reads.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The width of the first layer's output (the hidden width H of openWakeWord's heads).
    pub fn hidden(&self) -> usize {
        match self.stage1.first() {
            Some(Op::Linear(l)) => l.geometry().out_features,
            _ => 0,
        }
    }

    /// Whether a second stage follows.
    pub fn has_stage2(&self) -> bool {
        self.stage2.is_some()
    }

    /// Fresh plans over the shared operators, for one detector.
    ///
    /// # Errors
    /// None for a built head (the chain was validated).
    pub fn plans(&self) -> Result<GraphPlans, Error> {
        let stage2 = match &self.stage2 {
            Some((t, ops)) => Some((*t, chain(ops)?)),
            None => None,
        };
        Ok(GraphPlans { frames: self.frames, stage1: chain(&self.stage1)?, stage2 })
    }
}

/// A plan applying `ops` in a chain to one input, its output frame-major.
fn chain(ops: &[Op]) -> Result<ExecutionPlan, Error> {
    let mut plan = ExecutionPlan::new();
    let mut v: Value = plan.input();
    for op in ops {
        v = plan.add(op.clone(), &[v])?;
    }
    plan.set_output(v, Layout::FrameMajor)?;
    Ok(plan)
}

/// One detector's plans of a [`GraphHead`]: the first run at the head's input shape plans
/// the workspace (one allocation); every later score allocates nothing.
#[derive(Debug)]
pub struct GraphPlans {
    frames: usize,
    stage1: ExecutionPlan,
    stage2: Option<(f32, ExecutionPlan)>,
}

impl GraphPlans {
    /// The score of `x` (`[1, frames * 96]`, see the module docs), second stage included.
    ///
    /// # Errors
    /// [`Error::Input`] when `x` does not hold `frames * 96` values.
    pub fn score<B: Backend>(&mut self, x: &[f32]) -> Result<f32, Error> {
        let n = self.frames * EMBEDDING_DIM;
        if x.len() != n {
            return Err(Error::Input {
                what: "head input",
                expected: "frames * 96 values",
                got: x.len(),
            });
        }
        let view = TensorView::new(x, &[1, n], Layout::FrameMajor)?;
        let p1 = first(self.stage1.run::<B>(&[view])?.data());
        match &mut self.stage2 {
            Some((t, plan)) if p1 >= *t => {
                let view = TensorView::new(x, &[1, n], Layout::FrameMajor)?;
                Ok(first(plan.run::<B>(&[view])?.data()))
            }
            _ => Ok(p1),
        }
    }
}

/// The single value of a `[1, 1]` output.
fn first(data: &[f32]) -> f32 {
    data.first().copied().unwrap_or(f32::NAN)
}
