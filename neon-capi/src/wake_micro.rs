//! The microWakeWord engine of a `neon_wake` handle (`neon_wake_new_micro`): a
//! [`MicroDetector`] over the models, its fired steps turned into the handle's detections and
//! its probabilities into the handle's scores, so that `neon_wake_push`, `neon_wake_scores`,
//! `neon_wake_detections`, the model names, `neon_wake_reset` and `neon_wake_free` work as for
//! openWakeWord.

use std::ffi::c_char;

use neon_models::microwakeword::builtin;
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::{resolve, MicroWord};
use neon_models::Error;

use crate::args::check_ptr;
use crate::status::run;
use crate::wake::{load_words, register_wake, Engine, NeonDetection, NeonWake};
use crate::{NeonStatus, RATE};

/// Samples of audio in which a model that fired does not fire again: 2 s,
/// wyoming-microwakeword 2.1.0's `--refractory-seconds` default and `neon wake --engine
/// micro`'s (a decision stays positive for up to 1.2 s of an utterance: 1 s fired twice on
/// hey_mycroft's recording followed by 1 s of silence).
const REFRACTORY: u64 = 2 * RATE;

/// microWakeWord models on one stream, with the scores of the last push.
pub(crate) struct MicroStream {
    detector: MicroDetector,
    /// Per model, the last push's score: the highest probability of the steps it completed,
    /// or the previous score when it completed none (0 before the first step).
    scores: Vec<f32>,
    /// Per model, whether the push in progress has completed a step.
    stepped: Vec<bool>,
}

impl MicroStream {
    /// A stream over `words` whose models do not fire again within [`REFRACTORY`] samples of
    /// a detection.
    fn new(words: Vec<MicroWord>) -> Self {
        let n = words.len();
        MicroStream {
            detector: MicroDetector::new(words).with_refractory(REFRACTORY),
            scores: vec![0.0; n],
            stepped: vec![false; n],
        }
    }

    /// Feeds `samples` (16 kHz mono, any count) and appends the steps that fired to
    /// `detections`, in time order (model order within a step time).
    ///
    /// # Errors
    /// As [`MicroDetector::push`]; the stream then starts over (scores zero) and nothing is
    /// appended.
    pub(crate) fn push(
        &mut self,
        samples: &[i16],
        detections: &mut Vec<NeonDetection>,
    ) -> Result<(), Error> {
        let Self { detector, scores, stepped } = self;
        let before = detections.len();
        stepped.fill(false);
        let pushed = detector.push(samples, |e| {
            let p = e.decision.probability as f32;
            let (score, seen) = (&mut scores[e.word], &mut stepped[e.word]);
            *score = if *seen { score.max(p) } else { p };
            *seen = true;
            if e.fired {
                detections.push(NeonDetection::new(e.word, e.end_sample, p));
            }
        });
        if pushed.is_err() {
            detections.truncate(before);
            self.reset();
        }
        pushed
    }

    /// The scores of the last push, one per model.
    pub(crate) fn scores(&self) -> &[f32] {
        &self.scores
    }

    /// A new stream (the models' state, windows, refractory periods and time start over),
    /// scores zero.
    pub(crate) fn reset(&mut self) {
        self.detector.reset();
        self.scores.fill(0.0);
    }
}

/// Creates a microWakeWord detector and stores it in `*out`. It is a `neon_wake` handle:
/// `neon_wake_push`, `neon_wake_scores`, `neon_wake_detections`, `neon_wake_model_count`,
/// `neon_wake_model_name`, `neon_wake_reset`, `neon_wake_error` and `neon_wake_free` work on
/// it as on one from `neon_wake_new`.
///
/// `models`: `n_models` built-in model names (`alexa`, `hey_jarvis`, `hey_mycroft`,
/// `okay_nabu`) or paths to a user's model: its `.tflite` (with the `.json` of the same stem
/// beside it, when there is one) or its `.json`; a model is named after its file stem
/// (names must be unique). `n_models` 0 (with `models` NULL or not) loads every built-in
/// model.
///
/// The models run as pymicro-wakeword 2.5.0 runs them: a step every N feature frames of
/// 10 ms (N from the model's input, 3 for the built-in models: a step per 30 ms of audio,
/// whatever the push sizes), and a model detects when the mean of its last
/// `sliding_window_size` outputs is strictly above its `probability_cutoff` (both from its
/// JSON: 0.85 to 0.97 for the built-in models; no threshold argument). A detection is
/// reported when the model detects and has not fired within the last 2 s of audio
/// (wyoming-microwakeword's default: a decision stays positive for up to 1.2 s of an
/// utterance), with the probability as its score and the end of the step's audio as its
/// time; a push of more than 2 s can report a model more than once (a buffer of
/// `neon_wake_model_count` entries is enough for pushes up to 2 s). `neon_wake_scores`
/// gives per model the highest probability of the steps the last push completed (the
/// previous scores when it completed none); the first `sliding_window_size` - 1 steps of a
/// stream score 0.
///
/// Errors: `NEON_STATUS_INVALID_ARGUMENT` for a name that is neither a built-in model nor
/// a file, or two models of one name; `NEON_STATUS_IO` for a file that cannot be read;
/// `NEON_STATUS_MODEL` for a file that is not a microWakeWord streaming model this library
/// runs (truncated, corrupt, an unsupported operator) or a malformed JSON. `*out` is then
/// left unchanged and the one-line message is in `neon_last_error()`.
///
/// # Safety
/// `models` must point to `n_models` pointers to NUL-terminated strings (when `n_models` is
/// not 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_new_micro(
    models: *const *const c_char,
    n_models: usize,
    out: *mut *mut NeonWake,
) -> NeonStatus {
    run(|| {
        check_ptr(out, "out")?;
        // SAFETY: the caller's contract on `models`.
        let words =
            unsafe { load_words(models, n_models, builtin::names(), resolve, MicroWord::name)? };
        let names: Vec<String> = words.iter().map(|w| w.name().to_string()).collect();
        let engine = Engine::Micro(Box::new(MicroStream::new(words)));
        // SAFETY: the caller's contract on `out`.
        unsafe { register_wake(engine, names.iter().map(String::as_str), out) }
    })
}
