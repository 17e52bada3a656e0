//! One wake-word stream (feature `std`): a [`WakeDetector`], a [`Trigger`] per model and
//! the stream's time in samples, turning pushes of audio into scores and detections. The
//! `neon` program (`neon wake`, `neon listen`), the Wyoming server and the C API all feed
//! their audio through this type; they differ only in how they cut the audio (the program
//! and the server push 1280-sample chunks, the C API what its caller pushes) and in the
//! trigger [`Rule`](super::trigger::Rule) they configure.
//!
//! A model whose score is not finite (a head whose weights overflow) is reported once in
//! [`WakeSession::unusable`] and never fires again in this session: a NaN would otherwise
//! count as "not below the threshold" in some rules. No allocation per push.

use alloc::vec::Vec;

use neon_runtime::Parallel;

use super::detector::WakeWord;
use super::selection::WakeDetector;
use super::trigger::Trigger;
use crate::error::Error;

/// A detection by one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// Index of the model, in the detector's order ([`WakeSession::words`]).
    pub model: usize,
    /// End of the audio that produced the score, in samples (16 kHz) since the session
    /// started or was last reset.
    pub end_sample: u64,
    /// The score that fired.
    pub score: f32,
}

/// A model disabled because its score was not finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unusable {
    /// Index of the model.
    pub model: usize,
    /// The score (NaN or infinite).
    pub score: f32,
}

/// One stream of wake-word detection (module docs).
pub struct WakeSession {
    detector: WakeDetector,
    triggers: Vec<Trigger>,
    /// Models disabled by a non-finite score.
    disabled: Vec<bool>,
    /// Samples pushed since the start or the last reset.
    samples: u64,
    scores: Vec<f32>,
    detections: Vec<Detection>,
    unusable: Vec<Unusable>,
}

impl WakeSession {
    /// A session over `detector`, every model with a copy of `trigger`.
    pub fn new(detector: WakeDetector, trigger: Trigger) -> Self {
        let n = detector.words().len();
        WakeSession {
            detector,
            triggers: alloc::vec![trigger; n],
            disabled: alloc::vec![false; n],
            samples: 0,
            scores: alloc::vec![0.0; n],
            detections: Vec::with_capacity(n),
            unusable: Vec::with_capacity(n),
        }
    }

    /// Feeds int16 samples (16 kHz mono, any count: openWakeWord's streaming semantics,
    /// [`super::stream`]) and applies the triggers to the scores that result.
    ///
    /// # Errors
    /// As [`WakeDetector::push`]; the session is then reset (a new stream).
    pub fn push(&mut self, samples: &[i16]) -> Result<(), Error> {
        let scores = self.detector.push(samples).map(|s| self.scores.copy_from_slice(s));
        self.after(scores, samples.len())
    }

    /// [`WakeSession::push`] with the speech embeddings computed on `par` (the same scores
    /// for any context).
    ///
    /// # Errors
    /// As [`WakeSession::push`].
    pub fn push_in(&mut self, par: &dyn Parallel, samples: &[i16]) -> Result<(), Error> {
        let scores = self.detector.push_in(par, samples).map(|s| self.scores.copy_from_slice(s));
        self.after(scores, samples.len())
    }

    fn after(&mut self, scored: Result<(), Error>, pushed: usize) -> Result<(), Error> {
        self.detections.clear();
        self.unusable.clear();
        if let Err(e) = scored {
            self.reset();
            return Err(e);
        }
        self.samples += pushed as u64;
        let models = self.triggers.iter_mut().zip(&mut self.disabled).zip(&self.scores);
        for (model, ((trigger, disabled), &score)) in models.enumerate() {
            if *disabled {
                continue;
            }
            if !score.is_finite() {
                *disabled = true;
                self.unusable.push(Unusable { model, score });
                continue;
            }
            if let Some(d) = trigger.update(score, self.samples) {
                self.detections.push(Detection { model, end_sample: d.end_sample, score });
            }
        }
        Ok(())
    }

    /// The scores of the last push, one per model `[models]` (0 before the first).
    pub fn scores(&self) -> &[f32] {
        &self.scores
    }

    /// The detections of the last push, in model order.
    pub fn detections(&self) -> &[Detection] {
        &self.detections
    }

    /// The models the last push disabled (their score was not finite).
    pub fn unusable(&self) -> &[Unusable] {
        &self.unusable
    }

    /// Samples pushed since the start or the last reset.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The wake words, in score order.
    pub fn words(&self) -> &[WakeWord] {
        self.detector.words()
    }

    /// The detector.
    pub fn detector(&self) -> &WakeDetector {
        &self.detector
    }

    /// A new stream: the detector, the triggers, the time and the last push's results
    /// start over; disabled models stay disabled.
    pub fn reset(&mut self) {
        self.detector.reset();
        self.triggers.iter_mut().for_each(Trigger::reset);
        self.samples = 0;
        self.scores.fill(0.0);
        self.detections.clear();
        self.unusable.clear();
    }
}
