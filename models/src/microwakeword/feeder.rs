//! Feeding a model step: feature frames collected, quantised, N at a time, as
//! pymicro-wakeword 2.5.0 does (`process_streaming_prob`: it appends each frame, and when it
//! holds N (`stride`, the model input's dimension 1) it quantises their concatenation
//! `[1, N, 40]`, runs the model and clears its list, so steps never overlap).

use super::detector::{DetectorError, ModelStep};
use super::frontend::FEATURES;
use super::quantize::InputQuantizer;

/// Largest number of frames a step may take (the input's N): the official models take 3,
/// some community models 2. The window is a fixed array of this many frames, so the feeder
/// needs no allocator.
pub const MAX_STEP_FRAMES: usize = 16;

/// Collects frames of raw features into a model's quantised input `[N, 40]` and runs the
/// step every N frames.
#[derive(Clone, Debug)]
pub struct StepFeeder {
    /// The input's quantisation.
    quantizer: InputQuantizer,
    /// N: frames per step, in 1..=[`MAX_STEP_FRAMES`].
    frames: usize,
    /// Frames collected since the last step.
    filled: usize,
    /// The input, `input[..frames * FEATURES]` used (frame-major, as `[N, 40]`).
    input: [i8; MAX_STEP_FRAMES * FEATURES],
}

impl StepFeeder {
    /// A feeder of steps of `frames` frames quantised by `quantizer`.
    ///
    /// # Errors
    /// [`DetectorError::StepFrames`] when `frames` is not in 1..=[`MAX_STEP_FRAMES`].
    pub fn new(quantizer: InputQuantizer, frames: usize) -> Result<Self, DetectorError> {
        if !(1..=MAX_STEP_FRAMES).contains(&frames) {
            return Err(DetectorError::StepFrames { frames });
        }
        Ok(Self { quantizer, frames, filled: 0, input: [0; MAX_STEP_FRAMES * FEATURES] })
    }

    /// N, the frames a step takes.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The last (or, between steps, the partly filled) quantised input `[N, 40]`.
    pub fn input(&self) -> &[i8] {
        &self.input[..self.frames * FEATURES]
    }

    /// Quantises `frame` (raw features of one 10 ms frame) into the input; when it is the
    /// N-th since the last step, runs `step` on the input `[N, 40]` and returns its output,
    /// else returns `None`. No allocation.
    pub fn push<S: ModelStep + ?Sized>(
        &mut self,
        frame: &[u16; FEATURES],
        step: &mut S,
    ) -> Option<u8> {
        let at = self.filled * FEATURES;
        self.quantizer.quantize_frame(frame, &mut self.input[at..at + FEATURES]);
        self.filled += 1;
        if self.filled < self.frames {
            return None;
        }
        self.filled = 0;
        Some(step.step(&self.input[..self.frames * FEATURES]))
    }

    /// Drops the frames collected since the last step (as the peer's `reset`).
    pub fn reset(&mut self) {
        self.filled = 0;
    }
}
