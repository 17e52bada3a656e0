//! The speech-recognition service of `neon serve` (Moonshine base-en): [`AsrModels`], shared
//! by every client, and [`request::AsrRequest`], one `transcribe` request.
//!
//! A request is `transcribe`, then `audio-start`, `audio-chunk`s and `audio-stop`. The
//! audio (converted to 16 kHz mono as for the wake service) is cut into the pieces
//! Moonshine decodes while it arrives: with the voice-activity detector ([`AsrConfig::vad`],
//! the default) the decode windows of [`neon_models::vad::windows`], so silence before, between
//! and after speech is never decoded; without it, the whole audio cut at quiet points every
//! 30 s ([`neon_models::moonshine::segment`]). Either way the final text equals `neon
//! transcribe`'s on the same samples (with the same `--vad`). [`request`] lists the events
//! a request answers with (streaming: `transcript-start`, a `transcript-chunk` per decoded
//! piece, `transcript`, `transcript-stop`), the endpointing ([`AsrConfig::endpointing`])
//! and the cap ([`AsrConfig::max_samples`]).
//!
//! At most `workers` pieces are decoded at once (`--asr-workers`); each worker owns a
//! [`Transcriber`] (81.8 MB of workspaces, made at its first use) and a worker team, over
//! one copy of the weights, and is taken for one piece at a time: requests of several
//! clients interleave piece by piece, and a request waits only for a free worker.

pub mod request;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{json, Value};

use neon_models::exec_plan::Family;
use neon_models::moonshine::transcriber::{token_budget, MoonshineModel, Transcriber};
use neon_models::moonshine::SAMPLE_RATE;
use neon_models::session::SessionOptions;
use neon_models::vad::detector::{Vad, VadModel};

/// Default longest request (s): audio past it ends the request with an error.
pub const MAX_SECONDS: u32 = 300;

/// How a server's requests are transcribed (`neon serve --vad`, `--vad-endpointing`,
/// `--max-request-seconds`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AsrConfig {
    /// Decode only the speech Silero VAD finds ([`neon_models::vad::windows`]); `false` decodes
    /// the audio as given.
    pub vad: bool,
    /// End a request once this much silence (s) follows its speech, without waiting for
    /// `audio-stop` (needs `vad`); `None` waits for `audio-stop`. A request's
    /// `vad_sensitivity` scales it ([`Sensitivity`]).
    pub endpointing: Option<f32>,
    /// Most converted samples (16 kHz) a request takes; past them it ends with an `error`.
    pub max_samples: u64,
}

impl Default for AsrConfig {
    /// VAD on, no endpointing, [`MAX_SECONDS`].
    fn default() -> Self {
        Self {
            vad: true,
            endpointing: None,
            max_samples: u64::from(MAX_SECONDS) * SAMPLE_RATE as u64,
        }
    }
}

/// A request's `vad_sensitivity` (`wyoming` 1.10's `VadSensitivity`: "how quickly the end
/// of a voice command is detected"). It scales the endpointing silence in the proportions
/// of Home Assistant's own voice-command segmenter (`VadSensitivity.to_seconds` in
/// `assist_pipeline/vad.py`: 0.25 s aggressive, 0.7 s default, 1.25 s relaxed), so
/// `--vad-endpointing 0.7` gives exactly Home Assistant's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sensitivity {
    /// `default`, absent or unknown: the silence as configured.
    Default,
    /// `relaxed`: 1.25 / 0.7 of it (longer pauses allowed).
    Relaxed,
    /// `aggressive`: 0.25 / 0.7 of it (ends sooner).
    Aggressive,
}

impl Sensitivity {
    /// The sensitivity a `transcribe` event's `vad_sensitivity` names (anything else is
    /// [`Sensitivity::Default`], as clients may send values of later protocol versions).
    pub fn parse(name: Option<&str>) -> Self {
        match name {
            Some("relaxed") => Sensitivity::Relaxed,
            Some("aggressive") => Sensitivity::Aggressive,
            _ => Sensitivity::Default,
        }
    }

    /// `seconds` of endpointing silence at this sensitivity.
    pub fn scale(self, seconds: f32) -> f32 {
        match self {
            Sensitivity::Default => seconds,
            Sensitivity::Relaxed => seconds * (1.25 / 0.7),
            Sensitivity::Aggressive => seconds * (0.25 / 0.7),
        }
    }
}

/// One worker: a transcriber and its team.
struct Worker {
    transcriber: Transcriber,
    team: neon_runtime::Team,
}

/// The Moonshine model and its workers.
pub struct AsrModels {
    model: Arc<MoonshineModel>,
    vad: Arc<VadModel>,
    config: AsrConfig,
    options: SessionOptions,
    threads: usize,
    workers: usize,
    idle: Mutex<(Vec<Worker>, usize)>,
    freed: Condvar,
}

impl AsrModels {
    /// Opens the model in `dir` (and the built-in Silero VAD) for at most `workers` pieces
    /// decoded at once, each on a team of `threads`.
    ///
    /// # Errors
    /// A one-line message when a model cannot be loaded or `config` is inconsistent
    /// (endpointing without the VAD, a silence that is not a positive number of seconds, a
    /// zero cap).
    pub fn open(
        dir: &Path,
        options: SessionOptions,
        workers: usize,
        threads: usize,
        config: AsrConfig,
    ) -> Result<Self, String> {
        if let Some(s) = config.endpointing {
            if !config.vad {
                return Err("endpointing needs the voice-activity detector (VAD on)".into());
            }
            if !(s > 0.0 && s <= 3600.0) {
                return Err(format!("the endpointing silence {s} s is not in (0, 3600]"));
            }
        }
        if config.max_samples == 0 {
            return Err("the longest request must be above 0 s".into());
        }
        let model = MoonshineModel::open(dir).map_err(|e| e.to_string())?;
        let vad = VadModel::builtin().map_err(|e| e.to_string())?;
        Ok(AsrModels {
            model,
            vad,
            config,
            options,
            threads: threads.max(1),
            workers: workers.max(1),
            idle: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
        })
    }

    /// How requests are transcribed.
    pub fn config(&self) -> &AsrConfig {
        &self.config
    }

    /// A voice-activity stream for one request (on the backend the session options pick).
    ///
    /// # Errors
    /// A one-line message when its workspace cannot be made.
    pub fn vad(&self) -> Result<Vad, String> {
        Vad::new(self.vad.clone(), self.options.backend(Family::SileroVad, "network"))
            .map_err(|e| e.to_string())
    }

    /// The `asr` programs of `info`: transcript streaming is supported; an external VAD is
    /// needed unless endpointing is on (`wyoming` 1.10's `AsrProgram` fields).
    pub fn info(&self) -> Value {
        let attribution =
            json!({"name": "Useful Sensors", "url": "https://github.com/usefulsensors/moonshine"});
        json!([{
            "name": "moonshine",
            "description": "Moonshine base-en run by neon",
            "attribution": attribution,
            "installed": true,
            "version": "base-en",
            "supports_transcript_streaming": true,
            "requires_external_vad": self.config.endpointing.is_none(),
            "models": [{
                "name": "moonshine-base-en",
                "description": "Moonshine base (English)",
                "attribution": attribution,
                "installed": true,
                "version": "base-en",
                "languages": ["en"],
            }],
        }])
    }

    fn take(&self) -> Result<Worker, String> {
        let mut guard =
            self.idle.lock().map_err(|_| "the transcriber pool is poisoned".to_string())?;
        loop {
            if let Some(w) = guard.0.pop() {
                return Ok(w);
            }
            if guard.1 < self.workers {
                guard.1 += 1;
                drop(guard);
                let made = Transcriber::new(self.model.clone(), &self.options)
                    .map_err(|e| e.to_string())
                    .and_then(|transcriber| {
                        let team =
                            neon_runtime::Team::new(self.threads).map_err(|e| e.to_string())?;
                        Ok(Worker { transcriber, team })
                    });
                if made.is_err() {
                    if let Ok(mut g) = self.idle.lock() {
                        g.1 -= 1;
                    }
                }
                return made;
            }
            guard = self
                .freed
                .wait(guard)
                .map_err(|_| "the transcriber pool is poisoned".to_string())?;
        }
    }

    fn give_back(&self, w: Worker) {
        if let Ok(mut g) = self.idle.lock() {
            g.0.push(w);
        }
        self.freed.notify_one();
    }

    /// The text of one piece (16 kHz mono, full scale 1, at most 30 s): encoded, then
    /// decoded greedily within [`token_budget`], on the first free worker.
    ///
    /// # Errors
    /// A one-line message when a worker cannot be made or decoding fails.
    pub fn decode(&self, samples: &[f32]) -> Result<String, String> {
        let mut worker = self.take()?;
        let result = decode_with(&mut worker, samples);
        self.give_back(worker);
        result
    }
}

fn decode_with(w: &mut Worker, audio: &[f32]) -> Result<String, String> {
    let mut tokens = Vec::new();
    w.transcriber.encode_in(&w.team, audio).map_err(|e| e.to_string())?;
    w.transcriber
        .greedy_in(&w.team, token_budget(audio.len()), &mut tokens)
        .map_err(|e| e.to_string())?;
    Ok(w.transcriber.tokenizer().decode(&tokens))
}
