//! One wake word's detector around its model step, as pymicro-wakeword 2.5.0's
//! `MicroWakeWord.process_streaming_prob` and `process_streaming`: raw feature frames in, a
//! model step every N frames ([`StepFeeder`]), the windowed mean of the outputs
//! ([`ProbabilityWindow`]) and the decision `probability > probability_cutoff` (strictly; the
//! peer resets nothing after a detection).
//!
//! The model step itself plugs in as a [`ModelStep`]: any `FnMut(&[i8]) -> u8` (the input
//! `[N, 40]` in, the `uint8` output out), so this arithmetic is tested apart from the graph.
//! Nothing here allocates; the detector is `no_std` without `alloc`.

use core::fmt;

use super::feeder::StepFeeder;
use super::frontend::FEATURES;
use super::quantize::{InputQuantizer, OutputDequantizer};
use super::window::ProbabilityWindow;

/// A model step: the quantised input `[N, 40]` (frame-major) in, the model's `uint8` output
/// out; the step keeps the model's streaming state itself.
pub trait ModelStep {
    /// Runs one step on `input` (`N * 40` values).
    fn step(&mut self, input: &[i8]) -> u8;
}

impl<F: FnMut(&[i8]) -> u8> ModelStep for F {
    fn step(&mut self, input: &[i8]) -> u8 {
        self(input)
    }
}

/// A detector setting was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DetectorError {
    /// The input scale is not finite and positive.
    InputScale,
    /// The frames per step (the input's N) are not in 1..=[`super::feeder::MAX_STEP_FRAMES`].
    StepFrames {
        /// The N given.
        frames: usize,
    },
    /// `sliding_window_size` is not in 1..=[`super::window::MAX_WINDOW`].
    Window {
        /// The size given.
        size: usize,
    },
    /// The output quantisation gives a non-finite value or a window sum that might not be
    /// exact ([`ProbabilityWindow::new`]).
    OutputScale,
    /// `probability_cutoff` is NaN or infinite.
    Cutoff,
}

impl fmt::Display for DetectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DetectorError::InputScale => f.write_str("input scale is not finite and positive"),
            DetectorError::StepFrames { frames } => write!(
                f,
                "model input takes {frames} frames a step: expected 1..={}",
                super::feeder::MAX_STEP_FRAMES
            ),
            DetectorError::Window { size } => write!(
                f,
                "sliding_window_size is {size}: expected 1..={}",
                super::window::MAX_WINDOW
            ),
            DetectorError::OutputScale => {
                f.write_str("output quantisation gives values whose mean cannot be exact")
            }
            DetectorError::Cutoff => f.write_str("probability_cutoff is not finite"),
        }
    }
}

impl core::error::Error for DetectorError {}

/// A word's detector settings: the model's input and output quantisation and N, and the
/// model JSON's window and cutoff.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WordSettings {
    /// N: frames per step (the model input `[1, N, 40]`'s dimension 1).
    pub frames: usize,
    /// The model input's quantisation.
    pub input: InputQuantizer,
    /// The model output's quantisation.
    pub output: OutputDequantizer,
    /// `micro.sliding_window_size`: outputs averaged.
    pub sliding_window_size: usize,
    /// `micro.probability_cutoff`: detected when the probability is strictly above.
    pub probability_cutoff: f64,
}

/// What one model step gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The model's `uint8` output.
    pub output: u8,
    /// The mean of the last `sliding_window_size` dequantised outputs (0.0 until that many
    /// steps have run).
    pub probability: f64,
    /// `probability > probability_cutoff`.
    pub detected: bool,
}

/// One word's detector: the feeder, the window and the cutoff (the model step is passed to
/// [`WordDetector::push_frame`]).
#[derive(Clone, Debug)]
pub struct WordDetector {
    feeder: StepFeeder,
    window: ProbabilityWindow,
    cutoff: f64,
}

impl WordDetector {
    /// A detector with `settings`, no frame collected and an empty window.
    ///
    /// # Errors
    /// [`DetectorError`]: N, the window size or the output quantisation is refused
    /// ([`StepFeeder::new`], [`ProbabilityWindow::new`]), or the cutoff is not finite.
    pub fn new(settings: &WordSettings) -> Result<Self, DetectorError> {
        if !settings.probability_cutoff.is_finite() {
            return Err(DetectorError::Cutoff);
        }
        Ok(Self {
            feeder: StepFeeder::new(settings.input, settings.frames)?,
            window: ProbabilityWindow::new(settings.sliding_window_size, settings.output)?,
            cutoff: settings.probability_cutoff,
        })
    }

    /// N, the frames a step takes.
    pub fn frames(&self) -> usize {
        self.feeder.frames()
    }

    /// Takes one frame of raw features; every N-th frame runs `step` and returns its
    /// [`Decision`], else `None` (where the peer's `process_streaming_prob` returns 0.0). No
    /// allocation.
    pub fn push_frame<S: ModelStep + ?Sized>(
        &mut self,
        frame: &[u16; FEATURES],
        step: &mut S,
    ) -> Option<Decision> {
        let output = self.feeder.push(frame, step)?;
        let probability = self.window.push(output);
        Some(Decision { output, probability, detected: probability > self.cutoff })
    }

    /// Forgets collected frames and outputs (the model's state is the step's to reset).
    pub fn reset(&mut self) {
        self.feeder.reset();
        self.window.reset();
    }
}
