//! The wake-word models a command runs: `--model NAME|PATH` (repeatable) and
//! `--custom-model-dir DIR` (repeatable), shared by `neon wake` and `neon listen`.

use std::path::PathBuf;

use clap::Args;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom;
use neon_models::openwakeword::detector::WakeWord;

#[derive(Args)]
pub struct ModelArgs {
    /// Wake-word model: a built-in name (alexa, hey_jarvis, hey_mycroft, hey_rhasspy,
    /// ok_nabu, with or without `_v0.1`), a model trained with openWakeWord's notebook
    /// (`.onnx` or `.tflite`, named after its file as wyoming-openwakeword names it:
    /// `computer_v2.tflite` is `computer`), or a converted safetensors file. Repeatable;
    /// default (with no --custom-model-dir either): every built-in model.
    #[arg(long = "model", value_name = "NAME|PATH")]
    pub models: Vec<String>,
    /// A directory of models trained with openWakeWord: every `.tflite` and `.onnx` file in
    /// it (not in subdirectories; `x.onnx` is skipped when `x.tflite` is there; of two files
    /// with one model name, the first in path order is used and the other skipped with a
    /// warning). Repeatable, and combines with --model.
    #[arg(long = "custom-model-dir", value_name = "DIR")]
    pub custom_model_dirs: Vec<PathBuf>,
}

impl ModelArgs {
    /// The wake words, in the order given (`--model`s, then each directory's files); every
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
                return Err(format!(
                    "{origin}: a model named `{}` is already loaded (names must be unique; a \
                     custom model is named after its file)",
                    word.name()
                ));
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
            let word = builtin::wake_word(n).map_err(|e| e.to_string())?;
            add(format!("--model {n}"), word, &mut words)?;
        }
        for dir in &self.custom_model_dirs {
            let found = custom::wake_words_in_dir(dir).map_err(|e| e.to_string())?;
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
}
