//! Users' own wake-word heads, loaded from the `.onnx` and `.tflite` files openWakeWord's
//! training notebook exports (feature `std`, which enables `import`).
//!
//! The file formats are read by the `neon-import` crate: both parsers ([`onnx`], [`tflite`])
//! recognise the graphs openWakeWord's training writes (a flatten, dense layers of any width
//! and depth, LayerNorm as one op or decomposed, ReLU, a final sigmoid; TFLite's optional
//! two-stage `IF`) and reduce them to one neutral description, a [`HeadGraph`]: a chain of
//! [`Layer`]s on one row of `frames * 96` embedding values. This module states what an
//! openWakeWord head may be ([`LIMITS`]: 96 values a frame, [`MAX_FRAMES`],
//! [`MAX_FEATURES`], [`MAX_LAYERS`]), names the file in every error ([`import_error`]),
//! and, through [`HeadGraphExt`], checks a graph ([`HeadGraphExt::validate`]) and turns it
//! into prepared operators for run-time [`ExecutionPlan`]s
//! ([`GraphHead`]), one per detector, sharing the weights.
//!
//! Input of every head: the last `frames` embeddings `[frames, 96]` (oldest first),
//! flattened frame by frame (`t * 96 + c`), as openwakeword's `predict` passes
//! `get_features(N)` with N read from the model's input shape `[1, N, 96]`.

mod load;
pub mod names;

pub use load::{parse, wake_word_from_file, wake_words_in_dir, Format};
pub use neon_import::{onnx, onnx_proto, tflite, HeadGraph, Layer, Limits, SecondStage};

use alloc::string::String;
use alloc::sync::Arc;

use neon_import::{chain, ops};
use neon_runtime::exec::{ExecutionPlan, Op};
use neon_runtime::{Backend, Layout, TensorView};

use super::stream::EMBEDDING_DIM;
use crate::error::{Error, WeightsSource};

/// Largest number of embedding frames a head may read (openwakeword keeps 120 embeddings,
/// `feature_buffer_max_len`, so no model can read more).
pub const MAX_FRAMES: usize = 120;

/// Largest layer width accepted (far above any openWakeWord head, 32..=128 in practice):
/// bounds the memory a hostile file can make us allocate per layer.
pub const MAX_FEATURES: usize = 1 << 16;

/// Largest number of layers per stage.
pub const MAX_LAYERS: usize = 256;

/// What an openWakeWord head may be, as the parsers of `neon-import` are told.
pub const LIMITS: Limits = Limits {
    frame_width: EMBEDDING_DIM,
    max_frames: MAX_FRAMES,
    max_features: MAX_FEATURES,
    max_layers: MAX_LAYERS,
};

/// An [`Error::Weights`] for the model file `source` as a whole: `message` (one line).
pub fn model_error(source: &WeightsSource, message: impl Into<String>) -> Error {
    Error::invalid_file(source, message)
}

/// `neon-import`'s error for the model file `source`: an [`Error::Weights`] whose message is
/// `neon-import`'s line ([`model_error`]; shown as "`<file>`: `<message>`").
pub fn import_error(source: &WeightsSource, e: neon_import::Error) -> Error {
    model_error(source, e.into_message())
}

/// openWakeWord's checks and operators for a [`HeadGraph`] (a type of `neon-import`), with
/// errors naming the file.
pub trait HeadGraphExt {
    /// Checks the graph against [`LIMITS`]: `frames` in 1..=[`MAX_FRAMES`]; each stage
    /// non-empty (at most [`MAX_LAYERS`] layers), its widths chaining from `frames * 96` to a
    /// single score, every weight of the size its layer states and finite; a finite
    /// threshold.
    ///
    /// # Errors
    /// [`Error::Weights`] for `source` with the first fault, in one line.
    fn validate(&self, source: &WeightsSource) -> Result<(), Error>;

    /// Validates the graph, then prepares its operators (weights packed once, shared by
    /// every plan [`GraphHead::plans`] builds).
    ///
    /// # Errors
    /// As [`Self::validate`]; [`Error::Runtime`] should an operator refuse its geometry.
    fn build(&self, source: &WeightsSource) -> Result<GraphHead, Error>;
}

impl HeadGraphExt for HeadGraph {
    fn validate(&self, source: &WeightsSource) -> Result<(), Error> {
        self.check(&LIMITS).map_err(|e| import_error(source, e))
    }

    fn build(&self, source: &WeightsSource) -> Result<GraphHead, Error> {
        self.validate(source)?;
        let stage2 = match &self.stage2 {
            Some(s) => Some((s.threshold, ops(&s.layers)?)),
            None => None,
        };
        let stage1 = ops(&self.layers)?;
        Ok(GraphHead { frames: self.frames, stage1, stage2 })
    }
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
