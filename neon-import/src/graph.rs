//! The neutral description both parsers produce ([`HeadGraph`]), its check against the
//! caller's [`Limits`], and its operators ([`ops`], [`chain`]).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use neon_runtime::exec::{ExecutionPlan, Op, Value};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};
use neon_runtime::Layout;

use crate::Error;

/// What a head may be, stated by the caller (neon-models passes openWakeWord's: 96, 120,
/// 65536, 256): the graph's input is `[1, N, frame_width]` with N in `1..=max_frames`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Values of one input frame (openWakeWord: 96 embedding values).
    pub frame_width: usize,
    /// Largest number of frames a head may read.
    pub max_frames: usize,
    /// Largest layer width accepted: bounds the memory a hostile file can make us allocate
    /// per layer.
    pub max_features: usize,
    /// Largest number of layers per stage.
    pub max_layers: usize,
}

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
    pub(crate) fn name(&self) -> &'static str {
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
    /// The second stage's layers (input `[1, frames * frame_width]`, output `[1, 1]`).
    pub layers: Vec<Layer>,
}

/// A head as a parser found it: `layers` map `[1, frames * frame_width]` to a score `[1, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadGraph {
    /// Frames read (the model's input shape `[1, frames, frame_width]`),
    /// 1..=[`Limits::max_frames`].
    pub frames: usize,
    /// The first (or only) stage.
    pub layers: Vec<Layer>,
    /// An optional second stage.
    pub stage2: Option<SecondStage>,
}

/// Checks one stage: widths chain from `input` features to 1, sizes match, values finite.
fn check_stage(layers: &[Layer], input: usize, stage: &str, limits: &Limits) -> Result<(), String> {
    let Limits { max_layers, max_features, .. } = *limits;
    if layers.is_empty() {
        return Err(format!("{stage} has no layers"));
    }
    if layers.len() > max_layers {
        return Err(format!("{stage} has {} layers (at most {max_layers})", layers.len()));
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
                if *out_features == 0 || *out_features > max_features {
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
    /// Checks the graph against `limits`: `frames` in 1..=[`Limits::max_frames`]; each stage
    /// non-empty (at most [`Limits::max_layers`] layers), its widths chaining from
    /// `frames * frame_width` to a single score, every weight of the size its layer states
    /// and finite; a finite threshold.
    ///
    /// # Errors
    /// an [`Error`] with the first fault, in one line.
    pub fn check(&self, limits: &Limits) -> Result<(), Error> {
        if self.frames == 0 || self.frames > limits.max_frames {
            return Err(Error::new(format!(
                "the model reads {} embedding frames (supported: 1 to {})",
                self.frames, limits.max_frames
            )));
        }
        let input = self.frames * limits.frame_width;
        check_stage(&self.layers, input, "the head", limits).map_err(Error::new)?;
        if let Some(s2) = &self.stage2 {
            if !s2.threshold.is_finite() {
                return Err(Error::new("the second stage's threshold is not finite"));
            }
            check_stage(&s2.layers, input, "the second stage", limits).map_err(Error::new)?;
        }
        Ok(())
    }
}

/// Prepared operators of one stage, in order (weights packed once; clones of the `Arc`
/// share them). The layers should have passed [`HeadGraph::check`].
///
/// # Errors
/// neon-runtime's, should an operator refuse its geometry or weights.
pub fn ops(layers: &[Layer]) -> Result<Arc<[Op]>, neon_runtime::Error> {
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

/// A plan applying `ops` in a chain to one input, its output frame-major.
///
/// # Errors
/// neon-runtime's, when consecutive operators do not chain.
pub fn chain(ops: &[Op]) -> Result<ExecutionPlan, neon_runtime::Error> {
    let mut plan = ExecutionPlan::new();
    let mut v: Value = plan.input();
    for op in ops {
        v = plan.add(op.clone(), &[v])?;
    }
    plan.set_output(v, Layout::FrameMajor)?;
    Ok(plan)
}
