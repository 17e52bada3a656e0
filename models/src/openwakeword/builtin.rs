//! The official openWakeWord models, converted by `tools/openwakeword/convert.py` and
//! embedded in the program (feature `std`), so `neon wake` needs no files besides the audio.
//!
//! Licences (`models/openwakeword/LICENSE.md`): the speech-embedding model derives from
//! Google's speech_embedding (Apache-2.0); the wake-word heads are CC BY-NC-SA 4.0, **not for
//! commercial use**.

use alloc::format;
use alloc::string::{String, ToString};
use std::path::Path;

#[cfg(feature = "import")]
use super::custom;
use super::detector::WakeWord;
use super::head::HeadNet;
use super::names::{STAGE1, STAGE2};
use crate::error::{Error, WeightsSource};
use crate::weights::TensorFile;

/// The speech-embedding CNN's weights (safetensors).
pub const EMBEDDING: &[u8] = include_bytes!("../../openwakeword/embedding.safetensors");

/// The wake-word heads shipped with openWakeWord: (model name, safetensors bytes). Empty
/// without feature `builtin-heads` (default), for builds that must not carry the
/// non-commercial heads; `--model PATH` then loads heads from files.
#[cfg(not(feature = "builtin-heads"))]
pub const HEADS: [(&str, &[u8]); 0] = [];

/// The wake-word heads shipped with openWakeWord: (model name, safetensors bytes). Empty
/// without feature `builtin-heads` (default), for builds that must not carry the
/// non-commercial (CC BY-NC-SA 4.0) heads; `--model PATH` then loads heads from files.
#[cfg(feature = "builtin-heads")]
pub const HEADS: [(&str, &[u8]); 5] = [
    ("alexa_v0.1", include_bytes!("../../openwakeword/alexa_v0.1.safetensors")),
    ("hey_jarvis_v0.1", include_bytes!("../../openwakeword/hey_jarvis_v0.1.safetensors")),
    ("hey_mycroft_v0.1", include_bytes!("../../openwakeword/hey_mycroft_v0.1.safetensors")),
    ("hey_rhasspy_v0.1", include_bytes!("../../openwakeword/hey_rhasspy_v0.1.safetensors")),
    ("ok_nabu_v0.1", include_bytes!("../../openwakeword/ok_nabu_v0.1.safetensors")),
];

/// Loads a wake word from a safetensors file's bytes (first stage, and the second stage
/// when `stage2.*` tensors are present).
///
/// # Errors
/// [`Error::Weights`] for a malformed file or a head we cannot run.
pub fn wake_word_from_bytes(
    name: String,
    bytes: &[u8],
    source: WeightsSource,
) -> Result<WakeWord, Error> {
    let file = TensorFile::parse(bytes, source)?;
    let net = HeadNet::load(&file, &STAGE1)?;
    let stage2 =
        if file.contains(STAGE2.dense[0]) { Some(HeadNet::load(&file, &STAGE2)?) } else { None };
    Ok(WakeWord::new(name, net, stage2))
}

/// Resolves `--model NAME|PATH`: a built-in model name (`hey_jarvis_v0.1`, or without the
/// version suffix, `hey_jarvis`), a user's model trained with openWakeWord (`.onnx` or
/// `.tflite`, loaded by [`custom::wake_word_from_file`] and named as wyoming-openwakeword
/// names it), or a path to a safetensors head written by the converter (named after its
/// file stem).
///
/// # Errors
/// [`Error::Unknown`] for a name that is neither built in nor an existing file;
/// [`Error::Io`] when the file cannot be read or is not a regular file of at most
/// [`crate::files::HEAD_LIMIT`] bytes; [`Error::Weights`] when it is malformed or (for
/// `.onnx` / `.tflite`) not a head we recognise.
pub fn wake_word(name_or_path: &str) -> Result<WakeWord, Error> {
    let builtin = HEADS
        .iter()
        .find(|(n, _)| *n == name_or_path || n.strip_suffix("_v0.1") == Some(name_or_path));
    if let Some((name, bytes)) = builtin {
        return wake_word_from_bytes(name.to_string(), bytes, WeightsSource::Embedded(name));
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        let known: String =
            HEADS.iter().map(|(n, _)| *n).collect::<alloc::vec::Vec<_>>().join(", ");
        return Err(Error::Unknown {
            what: "model",
            name: format!("`{name_or_path}` is neither a built-in model ({known}) nor a file"),
        });
    }
    #[cfg(feature = "import")]
    if custom::Format::of(path).is_some() {
        return custom::wake_word_from_file(path);
    }
    #[cfg(not(feature = "import"))]
    if path.extension().is_some_and(|e| e == "onnx" || e == "tflite") {
        return Err(Error::Unknown {
            what: "model",
            name: format!("`{name_or_path}`: .onnx and .tflite models need the `import` feature"),
        });
    }
    let bytes = crate::files::read_limited(path, crate::files::HEAD_LIMIT)?;
    let name = path.file_stem().map_or_else(|| name_or_path.into(), |s| s.to_string_lossy().into());
    wake_word_from_bytes(name, &bytes, WeightsSource::File(path.into()))
}
