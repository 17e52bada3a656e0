//! Finding microWakeWord model files (feature `std`): a model given by path
//! ([`load`]), every model of a directory ([`scan_dir`], [`scan_dirs`]) and the embedded
//! official ones ([`MicroModelFile::builtin`]).
//!
//! A model is a `.tflite` file and its JSON description ([`MicroConfig`]). As
//! wyoming-microwakeword 2.1.0 finds its custom models:
//! - a directory contributes each `*.json` file (not recursively) whose `type` is `"micro"`
//!   and whose `model` file exists (its path taken relative to the JSON's directory); other
//!   files are skipped;
//! - a model is named after its JSON's file stem (`okay_computer.json` is `okay_computer`),
//!   unchanged: no version suffix is stripped, unlike openWakeWord's names;
//! - with several directories, the first one that offers a name wins.
//!
//! Unlike the peer (which stops on any malformed JSON), a file that cannot be read or is not a
//! microWakeWord JSON is skipped with a reason ([`Skipped`]) for the caller to log; a
//! microWakeWord JSON with a missing or wrong field is an error naming the file.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::builtin::BuiltinModel;
use super::config::{model_type, MicroConfig, MODEL_TYPE};
use crate::error::{Error, WeightsSource};
use crate::files::{read_limited, MICRO_CONFIG_LIMIT, MICRO_MODEL_LIMIT};

/// Where a model's `.tflite` bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TfliteSource {
    /// Embedded in the program (an official model, feature `builtin-micro`).
    Embedded(&'static [u8]),
    /// A file, read when [`MicroModelFile::tflite_bytes`] is called.
    File(PathBuf),
}

/// A microWakeWord model found on disk or embedded: its name, its `.tflite` and its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MicroModelFile {
    /// The model's name: the stem of its JSON (or of its `.tflite` when it has none).
    pub name: String,
    /// The `.tflite` model.
    pub tflite: TfliteSource,
    /// The JSON's settings, or [`MicroConfig::default_for`] the stem.
    pub config: MicroConfig,
}

impl MicroModelFile {
    /// The embedded official model `model`, its settings taken from the constants of
    /// [`BuiltinModel`] (the same as its JSON's: a test checks them).
    pub fn builtin(model: &BuiltinModel) -> MicroModelFile {
        MicroModelFile {
            name: model.name.to_string(),
            tflite: TfliteSource::Embedded(model.tflite),
            config: MicroConfig {
                wake_word: model.wake_word.to_string(),
                model: format!("{}.tflite", model.name),
                author: super::builtin::AUTHOR.to_string(),
                website: super::builtin::WEBSITE.to_string(),
                trained_languages: model.trained_languages.iter().map(|l| l.to_string()).collect(),
                version: super::builtin::VERSION.to_string(),
                probability_cutoff: model.probability_cutoff,
                sliding_window_size: model.sliding_window_size,
                feature_step_size: super::config::FEATURE_STEP_MS,
                tensor_arena_size: Some(model.tensor_arena_size),
            },
        }
    }

    /// Where the `.tflite` is, for error messages.
    pub fn source(&self) -> WeightsSource {
        match &self.tflite {
            TfliteSource::Embedded(_) => match super::builtin::get(&self.name) {
                Some(m) => WeightsSource::Embedded(m.name),
                None => WeightsSource::Embedded("microWakeWord model"),
            },
            TfliteSource::File(path) => WeightsSource::File(path.clone()),
        }
    }

    /// The `.tflite` bytes: borrowed when embedded, else read from the file (a regular file
    /// of at most [`MICRO_MODEL_LIMIT`] bytes).
    ///
    /// # Errors
    /// [`Error::Io`] naming the file when it cannot be read, is not a regular file or is too
    /// large.
    pub fn tflite_bytes(&self) -> Result<Cow<'static, [u8]>, Error> {
        match &self.tflite {
            TfliteSource::Embedded(bytes) => Ok(Cow::Borrowed(bytes)),
            TfliteSource::File(path) => Ok(Cow::Owned(read_limited(path, MICRO_MODEL_LIMIT)?)),
        }
    }
}

/// A file a directory scan passed over, and why (one line, for the caller's log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipping {}: {}", self.path.display(), self.reason)
    }
}

/// What a directory scan found: the models, sorted by name, and the files it skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// The models found, sorted by name, one per name.
    pub models: Vec<MicroModelFile>,
    /// The files passed over, with their reasons, in path order.
    pub skipped: Vec<Skipped>,
}

/// The file stem of `path` (lossy UTF-8; `""` when it has none).
fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether `path`'s extension is `ext`, in any case.
fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// The text of the JSON file `path` (a regular file of at most [`MICRO_CONFIG_LIMIT`] bytes,
/// UTF-8).
fn read_json_text(path: &Path) -> Result<String, Error> {
    let bytes = read_limited(path, MICRO_CONFIG_LIMIT)?;
    String::from_utf8(bytes).map_err(|_| {
        Error::invalid_file(&WeightsSource::File(path.into()), "not UTF-8 text, so not JSON")
    })
}

/// Whether `a` and `b` are the same file (compared as canonical paths; as written when either
/// cannot be resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The model file `config` names, beside the JSON `json_path`; an error naming the JSON when
/// it is not a regular file.
fn model_beside(json_path: &Path, config: &MicroConfig) -> Result<PathBuf, Error> {
    let model = json_path.parent().unwrap_or(Path::new("")).join(&config.model);
    if model.is_file() {
        Ok(model)
    } else {
        Err(Error::invalid_file(
            &WeightsSource::File(json_path.into()),
            format!("field `model` names {}, which is not a file", model.display()),
        ))
    }
}

/// Loads the model given by `path`:
/// - a `.json` file: its settings, and the `.tflite` its `model` names (relative to the
///   JSON's directory); named after the JSON's stem;
/// - a `.tflite` file: the settings of the `.json` of the same stem beside it when there is
///   one (its `model` must name this file), else [`MicroConfig::default_for`] the stem;
///   named after the stem.
///
/// The `.tflite` is not read here ([`MicroModelFile::tflite_bytes`] reads it).
///
/// # Errors
/// [`Error::Io`] naming the file when `path` (or the JSON) cannot be read or is not a
/// regular file; [`Error::Unknown`] for another extension; [`Error::Weights`] naming the JSON
/// for a malformed or non-microWakeWord JSON ([`MicroConfig::from_json`]), a missing model
/// file, or a sibling JSON that describes another file.
pub fn load(path: &Path) -> Result<MicroModelFile, Error> {
    if has_extension(path, "json") {
        let source = WeightsSource::File(path.into());
        let config = MicroConfig::from_json(&read_json_text(path)?, &source)?;
        let model = model_beside(path, &config)?;
        return Ok(MicroModelFile { name: stem(path), tflite: TfliteSource::File(model), config });
    }
    if !has_extension(path, "tflite") {
        return Err(Error::Unknown {
            what: "model format",
            name: format!("{} (expected a microWakeWord .tflite or .json)", path.display()),
        });
    }
    let meta = std::fs::metadata(path).map_err(|error| Error::Io { path: path.into(), error })?;
    if !meta.is_file() {
        return Err(Error::Io {
            path: path.into(),
            error: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
        });
    }
    let name = stem(path);
    let json_path = path.with_extension("json");
    let config = if json_path.exists() {
        let source = WeightsSource::File(json_path.clone());
        let config = MicroConfig::from_json(&read_json_text(&json_path)?, &source)?;
        let described = json_path.parent().unwrap_or(Path::new("")).join(&config.model);
        if !same_file(&described, path) {
            let file_name = path.file_name().map(|f| f.to_string_lossy()).unwrap_or_default();
            return Err(Error::invalid_file(
                &source,
                format!(
                    "field `model` is `{}`, not `{file_name}`: this JSON describes another model",
                    config.model.escape_debug()
                ),
            ));
        }
        config
    } else {
        MicroConfig::default_for(&name)
    };
    Ok(MicroModelFile { name, tflite: TfliteSource::File(path.into()), config })
}

/// One `*.json` of a scanned directory: `Ok(Some(model))`, `Ok(None)` after recording why it
/// was skipped, or an error for a malformed microWakeWord JSON.
fn scan_json(path: &Path, skipped: &mut Vec<Skipped>) -> Result<Option<MicroModelFile>, Error> {
    let mut skip = |reason: String| {
        skipped.push(Skipped { path: path.into(), reason });
        Ok(None)
    };
    let text = match read_json_text(path) {
        Ok(text) => text,
        Err(e) => return skip(format!("cannot be read ({e})")),
    };
    let json: Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(e) => return skip(format!("not valid JSON ({e})")),
    };
    match model_type(&json) {
        Some(MODEL_TYPE) => {}
        Some(t) => return skip(format!("not a microWakeWord model (type `{}`)", t.escape_debug())),
        None => return skip("not a microWakeWord model (no string `type`)".into()),
    }
    let config = MicroConfig::from_value(&json, &WeightsSource::File(path.into()))?;
    match model_beside(path, &config) {
        Ok(model) => {
            Ok(Some(MicroModelFile { name: stem(path), tflite: TfliteSource::File(model), config }))
        }
        Err(e) => skip(format!("its model file is missing ({e})")),
    }
}

/// The microWakeWord models of `dir` (see the module docs), sorted by name.
///
/// # Errors
/// [`Error::Io`] when `dir` cannot be read; [`Error::Weights`] naming the file for a JSON of
/// type `"micro"` with a missing or wrong field ([`MicroConfig::from_value`]).
pub fn scan_dir(dir: &Path) -> Result<Scan, Error> {
    scan_dirs(&[dir])
}

/// The microWakeWord models of each of `dirs` in turn; a name already found in an earlier
/// directory is skipped (with a reason), as wyoming-microwakeword keeps the first. The models
/// are sorted by name.
///
/// # Errors
/// As [`scan_dir`], for the first directory or file that fails.
pub fn scan_dirs<P: AsRef<Path>>(dirs: &[P]) -> Result<Scan, Error> {
    let mut scan = Scan::default();
    for dir in dirs {
        let dir = dir.as_ref();
        let io = |error| Error::Io { path: dir.to_path_buf(), error };
        let mut jsons = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().is_some_and(|e| e == "json") && path.is_file() {
                jsons.push(path);
            }
        }
        jsons.sort();
        for path in jsons {
            let Some(model) = scan_json(&path, &mut scan.skipped)? else { continue };
            if scan.models.iter().any(|m| m.name == model.name) {
                let reason = format!("a model named `{}` was found before", model.name);
                scan.skipped.push(Skipped { path, reason });
                continue;
            }
            scan.models.push(model);
        }
    }
    scan.models.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(scan)
}
