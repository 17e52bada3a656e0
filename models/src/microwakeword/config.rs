//! A microWakeWord model's JSON description (feature `std`): which `.tflite` it describes
//! and the detector's settings.
//!
//! The format is the one pymicro-wakeword 2.5.0 ships beside its models and
//! wyoming-microwakeword 2.1.0 scans for (tools/microwakeword/FACTS.md, section 3):
//!
//! ```json
//! {"type": "micro", "wake_word": "Okay Nabu", "author": "...", "website": "...",
//!  "model": "okay_nabu.tflite", "trained_languages": ["en"], "version": 2,
//!  "micro": {"probability_cutoff": 0.85, "sliding_window_size": 5,
//!            "feature_step_size": 10, "tensor_arena_size": 37000}}
//! ```
//!
//! Required, as pymicro-wakeword's `MicroWakeWord.from_config` reads them without a
//! fallback: `type` (`"micro"`), `model`, `wake_word`, `micro.probability_cutoff` and
//! `micro.sliding_window_size`. Optional, with the fallbacks wyoming-microwakeword uses for its
//! `info` event: `author` and `website` (`""`), `trained_languages` (`[]`), `version` (`""`).
//! `micro.feature_step_size` is optional too (absent means 10 ms); `micro.tensor_arena_size`
//! (the bytes TFLite Micro reserves on a microcontroller) is kept for information only, and
//! other fields (`minimum_esphome_version`) are ignored.
//!
//! A `.tflite` without JSON gets [`MicroConfig::default_for`]: neither peer documents such
//! defaults (FACTS.md, section 10), so they are ours.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value};

use crate::error::{Error, WeightsSource};

/// The `type` of a microWakeWord model's JSON.
pub const MODEL_TYPE: &str = "micro";

/// The one feature step supported (ms): the frontend makes one 40-value feature frame per
/// 10 ms of audio (160 samples at 16 kHz), which every shipped model is trained on.
pub const FEATURE_STEP_MS: u64 = 10;

/// Largest `sliding_window_size` accepted: 1024 model steps (about 31 s of audio at 30 ms a
/// step), far above the shipped models' 5 (8 for a community model), so that a hostile JSON
/// cannot size the detector's ring of recent outputs without bound; the detector's limit,
/// [`super::window::MAX_WINDOW`], stated once.
pub const MAX_SLIDING_WINDOW: usize = super::window::MAX_WINDOW;

/// Our `probability_cutoff` for a `.tflite` without JSON: 0.9, inside the range of the four
/// official models' cutoffs (okay_nabu 0.85, alexa 0.9, hey_mycroft 0.95, hey_jarvis 0.97).
/// No peer documents a default (tools/microwakeword/FACTS.md, section 10).
pub const DEFAULT_PROBABILITY_CUTOFF: f64 = 0.9;

/// Our `sliding_window_size` for a `.tflite` without JSON: 5, the window of every official and
/// wyoming-microwakeword community model.
pub const DEFAULT_SLIDING_WINDOW: usize = 5;

/// A microWakeWord model's description and detector settings, from its JSON
/// ([`MicroConfig::from_json`]) or our defaults ([`MicroConfig::default_for`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MicroConfig {
    /// The phrase, as people say it (`"Okay Nabu"`).
    pub wake_word: String,
    /// The `.tflite` file the JSON names (`model`): a path relative to the JSON's directory
    /// (usually a file name there), or absolute, as the peers join it.
    pub model: String,
    /// Who trained the model (`""` when not given).
    pub author: String,
    /// The author's web site (`""` when not given).
    pub website: String,
    /// Language codes the model was trained on (`["en"]`; empty when not given).
    pub trained_languages: Vec<String>,
    /// The model's version as the JSON writes it (`2` gives `"2"`; `""` when not given).
    pub version: String,
    /// A detection is reported when the mean of the last `sliding_window_size` outputs is
    /// strictly above this probability, in (0, 1).
    pub probability_cutoff: f64,
    /// How many model outputs (one per model step) are averaged, in
    /// 1..=[`MAX_SLIDING_WINDOW`].
    pub sliding_window_size: usize,
    /// Milliseconds between feature frames: always [`FEATURE_STEP_MS`] (others are refused).
    pub feature_step_size: u64,
    /// Bytes TFLite Micro reserves for the model on a microcontroller, if the JSON says
    /// (information only: this runtime plans its own memory).
    pub tensor_arena_size: Option<u64>,
}

/// The `type` field of a parsed JSON document, if it is an object with a string `type`.
pub fn model_type(json: &Value) -> Option<&str> {
    json.get("type")?.as_str()
}

/// The phrase of a model name, as wyoming-microwakeword derives its built-ins' phrases: the
/// `_`-separated words, each with its first letter in upper case and the rest in lower case
/// (`okay_nabu` gives `"Okay Nabu"`).
pub fn phrase(name: &str) -> String {
    let words: Vec<String> = name
        .split('_')
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(first) => {
                    first.to_uppercase().chain(chars.flat_map(char::to_lowercase)).collect()
                }
                None => String::new(),
            }
        })
        .collect();
    words.join(" ")
}

impl MicroConfig {
    /// Our settings for the model file with stem `stem` when it has no JSON: wake word
    /// [`phrase`]`(stem)`, model `<stem>.tflite`, [`DEFAULT_PROBABILITY_CUTOFF`] (0.9),
    /// [`DEFAULT_SLIDING_WINDOW`] (5), a 10 ms feature step, empty author, website, languages
    /// and version, no arena size.
    pub fn default_for(stem: &str) -> MicroConfig {
        MicroConfig {
            wake_word: phrase(stem),
            model: format!("{stem}.tflite"),
            author: String::new(),
            website: String::new(),
            trained_languages: Vec::new(),
            version: String::new(),
            probability_cutoff: DEFAULT_PROBABILITY_CUTOFF,
            sliding_window_size: DEFAULT_SLIDING_WINDOW,
            feature_step_size: FEATURE_STEP_MS,
            tensor_arena_size: None,
        }
    }

    /// Parses and checks the JSON text of the file `source` (see the module docs).
    ///
    /// # Errors
    /// [`Error::Weights`] naming `source`, in one line: the text is not JSON, is another
    /// model's JSON ("not a microWakeWord model (type ...)"), or a field is missing, of the
    /// wrong kind or out of range ([`MicroConfig::from_value`]).
    pub fn from_json(text: &str, source: &WeightsSource) -> Result<MicroConfig, Error> {
        let json: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_file(source, format!("not valid JSON: {e}")))?;
        MicroConfig::from_value(&json, source)
    }

    /// Reads and checks a parsed JSON document of the file `source`.
    ///
    /// # Errors
    /// [`Error::Weights`] naming `source` and the field, in one line:
    /// - `type` is absent or not `"micro"` ("not a microWakeWord model (type `...`)");
    /// - a required field (`model`, `wake_word`, `micro`, `micro.probability_cutoff`,
    ///   `micro.sliding_window_size`) is missing, or a field is of the wrong JSON kind;
    /// - `micro.probability_cutoff` is not in (0, 1), `micro.sliding_window_size` not in
    ///   1..=[`MAX_SLIDING_WINDOW`], `micro.feature_step_size` not 10, or `model` is empty.
    pub fn from_value(json: &Value, source: &WeightsSource) -> Result<MicroConfig, Error> {
        let fail = |message: String| Error::invalid_file(source, message);
        let Some(top) = json.as_object() else {
            return Err(fail("not a microWakeWord model (not a JSON object)".into()));
        };
        match top.get("type") {
            Some(Value::String(t)) if t == MODEL_TYPE => {}
            Some(t) => return Err(fail(format!("not a microWakeWord model (type {t})"))),
            None => return Err(fail("not a microWakeWord model (no `type` field)".into())),
        }
        let fields = Fields { source };
        let micro = match top.get("micro") {
            Some(Value::Object(m)) => m,
            Some(_) => return Err(fail("field `micro` is not an object".into())),
            None => return Err(fail("field `micro` is missing".into())),
        };
        let model = fields.string(top, "model")?.ok_or_else(|| fields.missing("model"))?;
        if model.is_empty() {
            return Err(fail("field `model` is empty: expected the .tflite file's name".into()));
        }
        let config = MicroConfig {
            wake_word: fields
                .string(top, "wake_word")?
                .ok_or_else(|| fields.missing("wake_word"))?,
            model,
            author: fields.string(top, "author")?.unwrap_or_default(),
            website: fields.string(top, "website")?.unwrap_or_default(),
            trained_languages: fields.languages(top)?,
            version: match top.get("version") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                Some(_) => return Err(fail("field `version` is not a string or number".into())),
            },
            probability_cutoff: fields.cutoff(micro)?,
            sliding_window_size: fields.window(micro)?,
            feature_step_size: fields
                .integer(micro, "feature_step_size")?
                .unwrap_or(FEATURE_STEP_MS),
            tensor_arena_size: fields.integer(micro, "tensor_arena_size")?,
        };
        if config.feature_step_size != FEATURE_STEP_MS {
            return Err(fail(format!(
                "field `micro.feature_step_size` is {}: only {FEATURE_STEP_MS} (ms) is supported, \
                 the step of the audio frontend",
                config.feature_step_size
            )));
        }
        Ok(config)
    }
}

/// Typed reads of the JSON's fields, with one-line errors naming the file and the field.
struct Fields<'a> {
    source: &'a WeightsSource,
}

impl Fields<'_> {
    fn fail(&self, message: String) -> Error {
        Error::invalid_file(self.source, message)
    }

    fn missing(&self, field: &str) -> Error {
        self.fail(format!("field `{field}` is missing"))
    }

    /// A string field of the top-level object `top`, `None` when absent.
    fn string(&self, top: &Map<String, Value>, field: &str) -> Result<Option<String>, Error> {
        match top.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.fail(format!("field `{field}` is not a string"))),
        }
    }

    /// `trained_languages`: an array of strings, empty when absent.
    fn languages(&self, top: &Map<String, Value>) -> Result<Vec<String>, Error> {
        let wrong = || self.fail("field `trained_languages` is not an array of strings".into());
        match top.get("trained_languages") {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => {
                a.iter().map(|v| v.as_str().map(str::to_string).ok_or_else(wrong)).collect()
            }
            Some(_) => Err(wrong()),
        }
    }

    /// A non-negative integer field of `micro`, `None` when absent.
    fn integer(&self, micro: &Map<String, Value>, field: &str) -> Result<Option<u64>, Error> {
        match micro.get(field) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.fail(format!("field `micro.{field}` is {v}: expected a non-negative integer"))
            }),
        }
    }

    /// `micro.probability_cutoff`: a number in (0, 1).
    fn cutoff(&self, micro: &Map<String, Value>) -> Result<f64, Error> {
        let field = "micro.probability_cutoff";
        let v = micro.get("probability_cutoff").ok_or_else(|| self.missing(field))?;
        match v.as_f64() {
            Some(c) if c > 0.0 && c < 1.0 => Ok(c),
            _ => Err(self.fail(format!("field `{field}` is {v}: expected a number in (0, 1)"))),
        }
    }

    /// `micro.sliding_window_size`: an integer in 1..=MAX_SLIDING_WINDOW.
    fn window(&self, micro: &Map<String, Value>) -> Result<usize, Error> {
        let field = "micro.sliding_window_size";
        let v = micro.get("sliding_window_size").ok_or_else(|| self.missing(field))?;
        match v.as_u64() {
            Some(n @ 1..) if n <= MAX_SLIDING_WINDOW as u64 => Ok(n as usize),
            _ => Err(self.fail(format!(
                "field `{field}` is {v}: expected an integer in 1..={MAX_SLIDING_WINDOW}"
            ))),
        }
    }
}
