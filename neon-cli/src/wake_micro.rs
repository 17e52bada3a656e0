//! `neon wake --engine micro`: microWakeWord models on the stream `neon wake` reads
//! ([`crate::wake`]: input, padding, printing and the summary are shared).
//!
//! One [`MicroDetector`] runs every model on the 16 kHz int16 samples as they come (any
//! chunking gives the same steps). A model steps every N feature frames of 10 ms (N = 3 for
//! the official models: 30 ms); a step *fires* when its windowed probability is above the
//! model's `probability_cutoff` outside the refractory period, and each firing is one
//! detection: its time is the end of the step's last frame, in seconds of the audio.
//! `--json` gives per model every step's `uint8` output (`outputs`), the windowed
//! probability (`probabilities`), the model's `probability_cutoff` and the detections.

use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::MicroWord;
use serde_json::{Map, Value};

use crate::wake::{audio_time, report, Printer, RunStats, Track, WakeStream, RATE};

/// Samples of audio before the first feature frame is complete (30 ms window).
const FIRST_FRAME: u64 = 480;
/// Samples between feature frames (10 ms).
const FRAME_STEP: u64 = 160;

/// Every step of one model, kept for `--json` only (a live stream would otherwise grow
/// without bound).
#[derive(Default)]
struct Steps {
    outputs: Vec<u8>,
    probabilities: Vec<f64>,
}

/// microWakeWord's steps and detections.
pub(crate) struct MicroStream {
    detector: MicroDetector,
    tracks: Vec<Track<f64>>,
    steps: Vec<Steps>,
    /// The steps that fired in the last push: (model, end sample, probability); printed
    /// after it (reused, no allocation per push once grown).
    fired: Vec<(usize, u64, f64)>,
    out: Printer,
    pad: u64,
    /// Model steps run, all models together.
    events: u64,
}

impl MicroStream {
    /// A stream through `words`, a model firing again only `refractory` samples after it
    /// last fired; `pad` samples of leading silence are not counted in detection times.
    pub fn new(words: Vec<MicroWord>, refractory: u64, out: Printer, pad: u64) -> Self {
        let tracks = words.iter().map(|w| Track::new(w.name())).collect::<Vec<_>>();
        let steps = words.iter().map(|_| Steps::default()).collect();
        let detector = MicroDetector::new(words).with_refractory(refractory);
        MicroStream { detector, tracks, steps, fired: Vec::new(), out, pad, events: 0 }
    }

    /// Feature frames computed so far.
    fn frames(&self) -> u64 {
        let samples = self.detector.samples();
        if samples < FIRST_FRAME {
            0
        } else {
            (samples - FIRST_FRAME) / FRAME_STEP + 1
        }
    }
}

impl WakeStream for MicroStream {
    fn push(&mut self, samples: &[i16]) -> Result<(), String> {
        let Self { detector, tracks, steps, fired, out, pad, events } = self;
        let json = out.json;
        detector
            .push(samples, |e| {
                *events += 1;
                let p = e.decision.probability;
                tracks[e.word].score(p);
                if json {
                    steps[e.word].outputs.push(e.decision.output);
                    steps[e.word].probabilities.push(p);
                }
                if e.fired {
                    fired.push((e.word, e.end_sample, p));
                }
            })
            .map_err(|e| e.to_string())?;
        for (word, end, p) in fired.drain(..) {
            tracks[word].detect(*out, audio_time(end, *pad), p)?;
        }
        Ok(())
    }

    fn steps(&self) -> u64 {
        self.events
    }

    fn needs(&self) -> String {
        // The first step ends with the N-th frame.
        let n = self.detector.words().iter().map(|w| w.settings().frames).min().unwrap_or(1);
        let samples = FIRST_FRAME + FRAME_STEP * (n as u64).saturating_sub(1);
        format!("at least {samples} samples ({} ms)", samples * 1000 / RATE as u64)
    }

    fn report(&self, label: &str, audio_samples: usize, seconds: f64) -> Result<(), String> {
        let frames = self.frames();
        let steps = format!("{frames} frames of 10 ms");
        let processed_s = self.detector.samples() as f64 / RATE as f64;
        let run = RunStats { label, audio_samples, seconds, steps, processed_s };
        let words = self.detector.words();
        let fields = |i: usize| {
            let s = &self.steps[i];
            Map::from_iter([
                ("outputs".to_string(), Value::from(s.outputs.clone())),
                ("probabilities".to_string(), Value::from(s.probabilities.clone())),
                (
                    "probability_cutoff".to_string(),
                    Value::from(words[i].config().probability_cutoff),
                ),
            ])
        };
        report(self.out, &self.tracks, fields, &run)
    }
}
