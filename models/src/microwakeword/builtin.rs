//! The four official microWakeWord models (alexa, hey_jarvis, hey_mycroft, okay_nabu),
//! embedded in the program with feature `builtin-micro` (default), so that no model file is
//! needed to run them.
//!
//! They are the unmodified `.tflite` and `.json` files of the pymicro-wakeword 2.5.0 wheel
//! (`models/microwakeword/`, Apache-2.0: see its `LICENSE.md`). Their detector settings are
//! also given here as constants ([`BuiltinModel`]), so that this module needs neither a JSON
//! parser nor an allocator (it builds for bare-metal targets); a test checks them against the
//! embedded JSON. Without `builtin-micro`, [`MODELS`] is empty.

/// One embedded official model: its files and the settings its JSON states.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinModel {
    /// The model's name, its files' stem (`okay_nabu`), as pymicro-wakeword and
    /// wyoming-microwakeword name it.
    pub name: &'static str,
    /// The `.tflite` file's bytes.
    pub tflite: &'static [u8],
    /// The `.json` file's text.
    pub json: &'static str,
    /// `wake_word`: the phrase (`"Okay Nabu"`).
    pub wake_word: &'static str,
    /// `trained_languages`.
    pub trained_languages: &'static [&'static str],
    /// `micro.probability_cutoff`: detected when the windowed mean is strictly above it.
    pub probability_cutoff: f64,
    /// `micro.sliding_window_size`: model outputs averaged.
    pub sliding_window_size: usize,
    /// `micro.tensor_arena_size` (bytes; information only).
    pub tensor_arena_size: u64,
}

/// `author` of every official model's JSON.
pub const AUTHOR: &str = "Kevin Ahrendt";
/// `website` of every official model's JSON.
pub const WEBSITE: &str = "https://www.kevinahrendt.com/";
/// `version` of every official model's JSON (the number 2, as text).
pub const VERSION: &str = "2";

/// `BuiltinModel` for the files `models/microwakeword/$name.{tflite,json}`.
#[cfg(feature = "builtin-micro")]
macro_rules! builtin {
    ($name:literal, $phrase:literal, $langs:expr, $cutoff:literal, $arena:literal) => {
        BuiltinModel {
            name: $name,
            tflite: include_bytes!(concat!("../../microwakeword/", $name, ".tflite")),
            json: include_str!(concat!("../../microwakeword/", $name, ".json")),
            wake_word: $phrase,
            trained_languages: $langs,
            probability_cutoff: $cutoff,
            sliding_window_size: 5,
            tensor_arena_size: $arena,
        }
    };
}

/// The embedded official models, sorted by name (empty without feature `builtin-micro`).
#[cfg(feature = "builtin-micro")]
pub const MODELS: [BuiltinModel; 4] = [
    builtin!("alexa", "Alexa", &["en"], 0.9, 22348),
    builtin!("hey_jarvis", "Hey Jarvis", &["en"], 0.97, 22860),
    builtin!("hey_mycroft", "Hey Mycroft", &["en"], 0.95, 23628),
    builtin!("okay_nabu", "Okay Nabu", &["en", "nl", "fr", "de", "it", "es", "sv"], 0.85, 37000),
];

/// The embedded official models, sorted by name (empty without feature `builtin-micro`).
#[cfg(not(feature = "builtin-micro"))]
pub const MODELS: [BuiltinModel; 0] = [];

/// The names of the embedded models, sorted (`alexa`, `hey_jarvis`, `hey_mycroft`,
/// `okay_nabu`; none without feature `builtin-micro`).
pub fn names() -> impl Iterator<Item = &'static str> {
    MODELS.iter().map(|m| m.name)
}

/// The embedded model named `name`, if any.
pub fn get(name: &str) -> Option<&'static BuiltinModel> {
    MODELS.iter().find(|m| m.name == name)
}
