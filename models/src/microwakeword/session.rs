//! One audio stream through several microWakeWord models (feature `import`), as
//! wyoming-microwakeword 2.1.0 runs a client's models: one [`Frontend`] shared by the models,
//! and per model its stream plan's state and workspace and a [`WordDetector`] (steps of N
//! frames, the windowed probability, the cutoff).
//!
//! [`MicroDetector::push`] reports every model step as a [`MicroEvent`]: the `uint8` output,
//! the probability, the peer's decision (`probability > probability_cutoff`, true on every
//! step while the window stays above the cutoff) and whether the step *fires*: a decision
//! outside the refractory period, counted in audio samples since the model last fired (0,
//! the default, fires on every positive decision, as pymicro-wakeword's `process_streaming`
//! returns true). Nothing is reset after a detection, as in the peer.
//!
//! The plans run on the fastest int8 kernels this machine has, chosen once at construction
//! ([`BackendKind::best`]: NEON on aarch64 with feature `neon`, the best x86-64 level (AVX2
//! or AVX-512, VNNI where the CPU has it) with run-time detection, else the portable ones;
//! [`MicroDetector::with_backend`] picks another): every step's output is the same bits on
//! all of them (`neon-import`'s tests). No allocation per push.

use alloc::vec::Vec;

use neon_runtime::exec::stream::{StreamScratch, StreamState};
use neon_runtime::{dispatch, BackendKind};

use super::detector::{Decision, WordDetector};
use super::frontend::{Frontend, FEATURES};
use super::word::MicroWord;
use crate::error::Error;

/// Samples between feature frames (10 ms at 16 kHz).
const FRAME_STEP: u64 = 160;
/// Samples of the first frame's window (30 ms at 16 kHz).
const FRAME_WINDOW: u64 = 480;

/// One model step of one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MicroEvent {
    /// Index of the model, in the detector's order ([`MicroDetector::words`]).
    pub word: usize,
    /// End of the audio of the step's last frame, in samples (16 kHz) since the stream
    /// started or was last reset.
    pub end_sample: u64,
    /// The output, the probability and the peer's decision.
    pub decision: Decision,
    /// `decision.detected` outside the model's refractory period (module docs).
    pub fired: bool,
}

/// One model's running state.
#[derive(Debug)]
struct Slot {
    state: StreamState,
    scratch: StreamScratch,
    detector: WordDetector,
    /// The sample before which the model does not fire again.
    quiet_until: u64,
}

/// Several microWakeWord models on one 16 kHz stream (module docs).
#[derive(Debug)]
pub struct MicroDetector {
    frontend: Frontend,
    words: Vec<MicroWord>,
    slots: Vec<Slot>,
    /// Feature frames since the start or the last reset.
    frames: u64,
    /// Samples pushed since the start or the last reset.
    samples: u64,
    refractory: u64,
    /// The kernels of every model step.
    backend: BackendKind,
}

impl MicroDetector {
    /// A detector over `words` (each model's own state and workspace), no refractory period.
    pub fn new(words: Vec<MicroWord>) -> Self {
        let slots = words
            .iter()
            .map(|w| Slot {
                state: w.plan().state(),
                scratch: w.plan().scratch(),
                detector: w.detector().clone(),
                quiet_until: 0,
            })
            .collect();
        let backend = BackendKind::best();
        Self {
            frontend: Frontend::new(),
            words,
            slots,
            frames: 0,
            samples: 0,
            refractory: 0,
            backend,
        }
    }

    /// Runs the models on `backend`'s kernels instead of the best ones (module docs).
    ///
    /// # Errors
    /// [`Error::Runtime`] ([`neon_runtime::Error::Backend`]) when `backend` cannot run here.
    pub fn with_backend(mut self, backend: BackendKind) -> Result<Self, Error> {
        backend.availability().map_err(|e| Error::Runtime(e.into()))?;
        self.backend = backend;
        Ok(self)
    }

    /// The backend whose kernels run the model steps.
    pub fn backend(&self) -> BackendKind {
        self.backend
    }

    /// Sets the refractory period: after a model fires, its positive decisions in the next
    /// `samples` samples of audio (32,000 = 2 s, wyoming-microwakeword's default) do not fire.
    pub fn with_refractory(mut self, samples: u64) -> Self {
        self.refractory = samples;
        self
    }

    /// The models, in event order.
    pub fn words(&self) -> &[MicroWord] {
        &self.words
    }

    /// Samples pushed since the start or the last reset.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Feeds 16 kHz mono samples (any count) and calls `on_step` for each model step that
    /// results, in time order and, within a step time, in model order. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Runtime`] if a plan cannot run (a kernel unavailable on this CPU: none after
    /// a successful load); the detector is then reset.
    pub fn push(
        &mut self,
        samples: &[i16],
        mut on_step: impl FnMut(MicroEvent),
    ) -> Result<(), Error> {
        let Self { frontend, words, slots, frames, refractory, backend, .. } = self;
        let mut failed = None;
        frontend.push(samples, |frame: &[u16; FEATURES]| {
            let end_sample = FRAME_WINDOW + *frames * FRAME_STEP;
            *frames += 1;
            for (word, (slot, w)) in slots.iter_mut().zip(words.iter()).enumerate() {
                let Slot { state, scratch, detector, quiet_until } = slot;
                let mut step = |input: &[i8]| match run_step(*backend, w, state, scratch, input) {
                    Ok(y) => y,
                    Err(e) => {
                        failed.get_or_insert(e);
                        0
                    }
                };
                let Some(decision) = detector.push_frame(frame, &mut step) else { continue };
                let fired = decision.detected && end_sample >= *quiet_until;
                if fired {
                    *quiet_until = end_sample + *refractory;
                }
                on_step(MicroEvent { word, end_sample, decision, fired });
            }
        });
        if let Some(e) = failed {
            self.reset();
            return Err(Error::Runtime(e));
        }
        self.samples += samples.len() as u64;
        Ok(())
    }

    /// A new stream: the frontend, every model's state (its variables' initial values),
    /// collected frames, windows, refractory periods and the time start over.
    pub fn reset(&mut self) {
        self.frontend.reset();
        for slot in &mut self.slots {
            slot.state.reset();
            slot.detector.reset();
            slot.quiet_until = 0;
        }
        self.frames = 0;
        self.samples = 0;
    }
}

/// One step of `word`'s plan on `backend`'s int8 kernels (every backend gives the same
/// bits): one dispatch per step, none per kernel.
fn run_step(
    backend: BackendKind,
    word: &MicroWord,
    state: &mut StreamState,
    scratch: &mut StreamScratch,
    input: &[i8],
) -> Result<u8, neon_runtime::Error> {
    let y: &[u8] = dispatch!(backend, B => word.plan().run::<B, i8, u8>(state, scratch, input))??;
    y.first().copied().ok_or(neon_runtime::Error::Plan { reason: "the output is empty" })
}
