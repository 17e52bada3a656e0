//! The microWakeWord engine of the wake-word service (`neon serve --engine micro`): the models
//! a server offers ([`MicroModels`], loaded once and shared by every client) and one client's
//! detector ([`MicroStream`]), behaving as wyoming-microwakeword 2.1.0's handler does.
//!
//! - Models: the four embedded official ones (`alexa`, `hey_jarvis`, `hey_mycroft`,
//!   `okay_nabu`), then the custom models that [`scan_dirs`] finds in the `--custom-model-dir`
//!   directories (each `*.json` of type `"micro"` whose model file exists, named after the
//!   JSON's stem; the first directory offering a name wins). A custom model of a built-in's
//!   name replaces it; a file skipped by the scan or a model that does not load is logged and
//!   the server still starts.
//! - `info`: one wake program `microWakeWord`; a built-in's phrase is its name in words
//!   ([`phrase`]: `okay_nabu` → `Okay Nabu`), languages `["en"]`, version `2.0.0` (the peer's
//!   fixed values); a custom model's phrase and description are its JSON's `wake_word`, its
//!   attribution the JSON's `author` and `website`, its languages `trained_languages` and its
//!   version `version` (as text).
//! - `detect` selects by name (unknown names are skipped); the selection takes effect at the
//!   next `audio-start`, which starts a fresh [`MicroDetector`] (frontend, model states,
//!   windows and refractory periods); with no selection (or none known) `audio-start` runs
//!   `okay_nabu`. Audio outside `audio-start` .. `audio-stop` is not scored.
//! - A model step whose windowed probability is strictly above the model's own
//!   `probability_cutoff` fires `detection` unless the model fired less than
//!   `--refractory-seconds` of *audio* ago (the peer counts wall-clock time).
//!
//! With both engines on (`--engine openwakeword,micro`), the microWakeWord models are offered
//! under [`DUAL_PREFIX`] (`micro:okay_nabu`), so that no name is offered by both engines, and
//! their descriptions say `(microWakeWord)`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::event::Event;
use neon_models::microwakeword::builtin;
use neon_models::microwakeword::config::phrase;
use neon_models::microwakeword::load::{scan_dirs, MicroModelFile, TfliteSource};
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::MicroWord;

/// The wake program's name in `info` (wyoming-microwakeword's).
pub const PROGRAM: &str = "microWakeWord";

/// The prefix of the microWakeWord models' names when both engines are on.
pub const DUAL_PREFIX: &str = "micro:";

/// The built-in model `audio-start` runs when `detect` selected none.
pub const DEFAULT_MODEL: &str = "okay_nabu";

/// The `version` `info` gives every built-in model (wyoming-microwakeword's fixed value).
const BUILTIN_VERSION: &str = "2.0.0";

/// The attribution of the engine and of its built-in models (wyoming-microwakeword's).
pub fn attribution() -> Value {
    json!({"name": "kahrendt", "url": "https://github.com/kahrendt/microWakeWord/"})
}

/// `path` resolved (as written when it cannot be).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One offered microWakeWord model.
#[derive(Clone)]
pub struct MicroOffered {
    /// The name clients use (the file stem, with [`DUAL_PREFIX`] when both engines are on).
    pub name: String,
    /// Whether it is one of the embedded official models.
    pub builtin: bool,
    /// The loaded model (its plan shared by every client's detector).
    pub word: MicroWord,
}

/// Every microWakeWord model a server offers and the refractory period; shared by all
/// sessions.
pub struct MicroModels {
    models: Vec<MicroOffered>,
    /// The `.tflite` files the custom models' JSON files name (loaded or not), canonical.
    claimed: Vec<PathBuf>,
    warnings: Vec<String>,
    /// Samples of 16 kHz audio a model stays silent after firing.
    refractory: u64,
    /// Whether the openWakeWord engine is on too (names prefixed, descriptions marked).
    dual: bool,
}

impl MicroModels {
    /// The embedded official models and the custom models of `custom_dirs` (module docs),
    /// each loaded once; `refractory` samples of 16 kHz audio between two detections of a
    /// model; `dual` when the openWakeWord engine is on too.
    ///
    /// # Errors
    /// A one-line message when a directory cannot be read, a `"micro"` JSON has a missing or
    /// wrong field, or an embedded model does not load.
    pub fn load(custom_dirs: &[PathBuf], refractory: u64, dual: bool) -> Result<Self, String> {
        let prefix = if dual { DUAL_PREFIX } else { "" };
        let mut models = Vec::new();
        for model in &builtin::MODELS {
            let word =
                MicroWord::load(&MicroModelFile::builtin(model)).map_err(|e| e.to_string())?;
            models.push(MicroOffered {
                name: format!("{prefix}{}", model.name),
                builtin: true,
                word,
            });
        }
        let scan = scan_dirs(custom_dirs).map_err(|e| e.to_string())?;
        let mut warnings: Vec<String> = scan.skipped.iter().map(|s| s.to_string()).collect();
        let mut claimed = Vec::new();
        for file in &scan.models {
            if let TfliteSource::File(path) = &file.tflite {
                claimed.push(canonical(path));
            }
            // One bad file must not keep the server from starting (a restart loop under
            // systemd): it is skipped with a warning.
            let word = match MicroWord::load(file) {
                Ok(word) => word,
                Err(e) => {
                    warnings
                        .push(format!("skipping a microWakeWord model that does not load: {e}"));
                    continue;
                }
            };
            let name = format!("{prefix}{}", file.name);
            if let Some(i) = models.iter().position(|m| m.builtin && m.name == name) {
                warnings.push(format!(
                    "--custom-model-dir: the microWakeWord model `{name}` replaces the built-in one"
                ));
                models.remove(i);
            }
            models.push(MicroOffered { name, builtin: false, word });
        }
        Ok(MicroModels { models, claimed, warnings, refractory, dual })
    }

    /// What [`MicroModels::load`] skipped or replaced, one line each (for the server's log).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The offered models, built-ins first.
    pub fn models(&self) -> &[MicroOffered] {
        &self.models
    }

    /// Whether `path` is the `.tflite` of a custom microWakeWord model (so that the
    /// openWakeWord engine's scan of the same directory passes it over).
    pub fn claims(&self, path: &Path) -> bool {
        self.claimed.contains(&canonical(path))
    }

    /// The index of the model named `name` (as offered), if any.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.models.iter().position(|m| m.name == name)
    }

    /// The index of [`DEFAULT_MODEL`], if offered.
    pub fn default_model(&self) -> Option<usize> {
        let prefix = if self.dual { DUAL_PREFIX } else { "" };
        self.position(&format!("{prefix}{DEFAULT_MODEL}"))
    }

    /// The models' entries of `info` (module docs).
    pub fn info_models(&self) -> Vec<Value> {
        self.models
            .iter()
            .map(|m| {
                let config = m.word.config();
                let (text, attribution, languages, version) = if m.builtin {
                    (phrase(m.word.name()), attribution(), vec!["en".to_string()], BUILTIN_VERSION)
                } else {
                    let by = json!({"name": config.author, "url": config.website});
                    (
                        config.wake_word.clone(),
                        by,
                        config.trained_languages.clone(),
                        &*config.version,
                    )
                };
                let description =
                    if self.dual { format!("{text} (microWakeWord)") } else { text.clone() };
                json!({"name": m.name, "description": description, "phrase": text,
                       "attribution": attribution, "installed": true,
                       "languages": languages, "version": version})
            })
            .collect()
    }
}

/// The detector of one stream, from `audio-start` to `audio-stop`.
struct Running {
    detector: MicroDetector,
    /// The models (indexes into [`MicroModels::models`]), in the detector's order.
    models: Vec<usize>,
    /// Whether each model fired since `audio-start`.
    fired: Vec<bool>,
    /// Between `audio-start` and `audio-stop`.
    open: bool,
}

/// One client's microWakeWord state: the selection of `detect` and the running detector.
pub struct MicroStream {
    /// The models the next `audio-start` runs (indexes into [`MicroModels::models`]).
    selected: Vec<usize>,
    /// The detector (kept after `audio-stop` and reused when the selection is unchanged).
    running: Option<Running>,
}

impl MicroStream {
    /// A client's state before any event: `selected` runs at the next `audio-start`.
    pub fn new(selected: Vec<usize>) -> Self {
        MicroStream { selected, running: None }
    }

    /// `detect`: the models the next `audio-start` runs.
    pub fn select(&mut self, models: Vec<usize>) {
        self.selected = models;
    }

    /// `audio-start`: a fresh stream through the selected models (none: nothing runs); the
    /// detector is reused (reset) when the selection is unchanged.
    pub fn start(&mut self, offered: &MicroModels) {
        if self.selected.is_empty() {
            self.running = None;
            return;
        }
        match self.running.as_mut() {
            Some(r) if r.models == self.selected => {
                r.detector.reset();
                r.fired.fill(false);
                r.open = true;
            }
            _ => {
                let models = self.selected.clone();
                let words = models.iter().map(|&i| offered.models[i].word.clone()).collect();
                let detector = MicroDetector::new(words).with_refractory(offered.refractory);
                let fired = vec![false; models.len()];
                self.running = Some(Running { detector, models, fired, open: true });
            }
        }
    }

    /// Scores 16 kHz mono `samples`; each model step that fires appends a `detection` with
    /// `timestamp` (ms) to `out`.
    ///
    /// # Errors
    /// A one-line message if a model cannot run (the detector then starts over).
    pub fn push(
        &mut self,
        offered: &MicroModels,
        samples: &[i16],
        timestamp: u64,
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        let Some(Running { detector, models, fired, open: true }) = self.running.as_mut() else {
            return Ok(());
        };
        detector
            .push(samples, |e| {
                if e.fired {
                    fired[e.word] = true;
                    out.push(Event::with_data(
                        "detection",
                        json!({"name": offered.models[models[e.word]].name,
                               "timestamp": timestamp, "speaker": null}),
                    ));
                }
            })
            .map_err(|e| format!("microWakeWord: {e}"))
    }

    /// `audio-stop`: whether a model fired since `audio-start`; the stream is closed.
    pub fn stop(&mut self) -> bool {
        let Some(r) = self.running.as_mut().filter(|r| r.open) else { return false };
        r.open = false;
        r.fired.iter().any(|&f| f)
    }
}
