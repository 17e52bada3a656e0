//! The wake-word engine and models a command runs: `--engine`, `--model NAME|PATH`
//! (repeatable) and `--custom-model-dir DIR` (repeatable), shared by `neon wake` and
//! `neon listen`.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use neon_models::microwakeword::builtin as micro_builtin;
use neon_models::microwakeword::load::scan_dir;
use neon_models::microwakeword::word::{resolve, MicroWord};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom;
use neon_models::openwakeword::detector::WakeWord;

/// `--engine`: which wake-word models run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// openWakeWord: the speech embedding and a classifier head per word.
    #[default]
    Openwakeword,
    /// microWakeWord: int8 streaming TFLite models, one per word (as ESPHome satellites and
    /// wyoming-microwakeword run them).
    Micro,
}

#[derive(Args)]
pub struct ModelArgs {
    /// The wake-word engine: `openwakeword` (the default) or `micro` (microWakeWord; the
    /// models' JSON `probability_cutoff` decides, so --threshold does not apply).
    #[arg(long, value_enum, default_value_t = Engine::Openwakeword, value_name = "ENGINE")]
    pub engine: Engine,
    /// Wake-word model. openWakeWord: a built-in name (alexa, hey_jarvis, hey_mycroft,
    /// hey_rhasspy, ok_nabu, with or without `_v0.1`), a model trained with openWakeWord's
    /// notebook (`.onnx` or `.tflite`, named after its file as wyoming-openwakeword names it:
    /// `computer_v2.tflite` is `computer`), or a converted safetensors file. With
    /// `--engine micro`: a built-in name (alexa, hey_jarvis, hey_mycroft, okay_nabu) or a
    /// microWakeWord `.tflite` (with its `.json` beside it) or `.json`, named after its file
    /// stem. Repeatable; default (with no --custom-model-dir either): every built-in model.
    #[arg(long = "model", value_name = "NAME|PATH")]
    pub models: Vec<String>,
    /// A directory of models. openWakeWord: every `.tflite` and `.onnx` file in it (not in
    /// subdirectories; `x.onnx` is skipped when `x.tflite` is there; of two files with one
    /// model name, the first in path order is used and the other skipped with a warning).
    /// With `--engine micro`: every `*.json` with `"type": "micro"` whose `model` file exists
    /// (other files are skipped with a warning), as wyoming-microwakeword finds them.
    /// Repeatable, and combines with --model.
    #[arg(long = "custom-model-dir", value_name = "DIR")]
    pub custom_model_dirs: Vec<PathBuf>,
}

/// The error for an option given with `--engine micro` that only openWakeWord uses.
///
/// # Errors
/// One line naming `flag` and `why` when `given`.
pub fn refuse_with_micro(flag: &str, given: bool, why: &str) -> Result<(), String> {
    if given {
        return Err(format!("{flag} does not apply to --engine micro: {why}"));
    }
    Ok(())
}

/// The error for a second model named `name` (names key the output).
fn duplicate(origin: &str, name: &str) -> String {
    format!(
        "{origin}: a model named `{name}` is already loaded (names must be unique; a custom \
         model is named after its file)"
    )
}

impl ModelArgs {
    /// The openWakeWord wake words, in the order given (`--model`s, then each directory's files); every
    /// built-in one when neither option is given.
    ///
    /// # Errors
    /// A one-line message for a model that cannot be loaded, an empty directory, a build
    /// without built-in heads given neither option, or two `--model`s with one name (names
    /// key the output; in directories the first model of a name is kept, with a warning).
    pub fn load(&self) -> Result<Vec<WakeWord>, String> {
        let mut words: Vec<WakeWord> = Vec::new();
        let add = |origin: String, word: WakeWord, words: &mut Vec<WakeWord>| {
            if words.iter().any(|w| w.name() == word.name()) {
                return Err(duplicate(&origin, word.name()));
            }
            words.push(word);
            Ok(())
        };
        let defaults: Vec<String>;
        let names = if self.models.is_empty() && self.custom_model_dirs.is_empty() {
            if builtin::HEADS.is_empty() {
                return Err("this build has no built-in wake-word models (feature \
                            `builtin-heads` is off): pass --model PATH or --custom-model-dir DIR"
                    .into());
            }
            defaults = builtin::HEADS.iter().map(|(n, _)| n.to_string()).collect();
            &defaults
        } else {
            &self.models
        };
        for n in names {
            let word = builtin::wake_word(n).map_err(|e| match resolve(n) {
                // openWakeWord's error on such a file (a safetensors header, an operator)
                // would not say what is wrong.
                Ok(_) if Path::new(n).exists() => {
                    format!("--model {n} is a microWakeWord model: add --engine micro")
                }
                _ => e.to_string(),
            })?;
            add(format!("--model {n}"), word, &mut words)?;
        }
        for dir in &self.custom_model_dirs {
            let found = custom::wake_words_in_dir(dir).map_err(|e| match scan_dir(dir) {
                Ok(scan) if !scan.models.is_empty() => format!(
                    "{e} (--custom-model-dir {} holds microWakeWord models: add --engine micro)",
                    dir.display()
                ),
                _ => e.to_string(),
            })?;
            if found.is_empty() {
                return Err(format!(
                    "--custom-model-dir {}: no .tflite or .onnx model in it",
                    dir.display()
                ));
            }
            for word in found {
                // As wyoming-openwakeword does, the first model of a name wins in directories
                // (`computer_v1.onnx` and `computer_v2.tflite` are both `computer`).
                if words.iter().any(|w| w.name() == word.name()) {
                    crate::warn(format_args!(
                        "--custom-model-dir {}: skipping a second model named `{}`",
                        dir.display(),
                        word.name()
                    ));
                    continue;
                }
                add(format!("--custom-model-dir {}", dir.display()), word, &mut words)?;
            }
        }
        Ok(words)
    }

    /// The microWakeWord models (`--engine micro`), in the order given (`--model`s, then
    /// each directory's models by name); the four built-in ones when neither option is given.
    ///
    /// # Errors
    /// A one-line message for a model that cannot be loaded, a directory with no
    /// microWakeWord model, a build without built-in models given neither option, or two
    /// `--model`s with one name. In directories the first model of a name is kept and later
    /// ones skipped with a warning, as are files that are not microWakeWord models.
    pub fn load_micro(&self) -> Result<Vec<MicroWord>, String> {
        let mut words: Vec<MicroWord> = Vec::new();
        let defaults: Vec<String>;
        let names = if self.models.is_empty() && self.custom_model_dirs.is_empty() {
            if micro_builtin::MODELS.is_empty() {
                return Err("this build has no built-in microWakeWord models (feature \
                            `builtin-micro` is off): pass --model PATH or --custom-model-dir DIR"
                    .into());
            }
            defaults = micro_builtin::names().map(String::from).collect();
            &defaults
        } else {
            &self.models
        };
        for n in names {
            let word = resolve(n).map_err(|e| e.to_string())?;
            if words.iter().any(|w| w.name() == word.name()) {
                return Err(duplicate(&format!("--model {n}"), word.name()));
            }
            words.push(word);
        }
        for dir in &self.custom_model_dirs {
            let scan = scan_dir(dir).map_err(|e| e.to_string())?;
            let origin = format!("--custom-model-dir {}", dir.display());
            for skipped in &scan.skipped {
                crate::warn(format_args!("{origin}: {skipped}"));
            }
            if scan.models.is_empty() {
                return Err(format!(
                    "{origin}: no microWakeWord model in it (a `*.json` with \"type\": \"micro\" \
                     beside its model file)"
                ));
            }
            for file in &scan.models {
                if words.iter().any(|w| w.name() == file.name) {
                    crate::warn(format_args!(
                        "{origin}: skipping a second model named `{}`",
                        file.name
                    ));
                    continue;
                }
                words.push(MicroWord::load(file).map_err(|e| e.to_string())?);
            }
        }
        Ok(words)
    }
}
