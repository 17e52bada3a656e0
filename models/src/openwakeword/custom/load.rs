//! Loading a user's model file (`.onnx` or `.tflite`) into a [`WakeWord`].

use alloc::format;
use alloc::sync::Arc;
use std::path::Path;

use super::{import_error, names, onnx, tflite, HeadGraph, HeadGraphExt, LIMITS};
use crate::error::{Error, WeightsSource};
use crate::files::{read_limited, HEAD_LIMIT};
use crate::openwakeword::detector::WakeWord;

/// The model format of a file, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// ONNX (`.onnx`): a protobuf `ModelProto`.
    Onnx,
    /// TFLite (`.tflite`): a FlatBuffer `Model`.
    Tflite,
}

impl Format {
    /// The format of `path` by its extension (`onnx` or `tflite`, any case), if either.
    pub fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("onnx") {
            Some(Format::Onnx)
        } else if ext.eq_ignore_ascii_case("tflite") {
            Some(Format::Tflite)
        } else {
            None
        }
    }
}

/// Parses the model in `bytes` (of `format`) into a validated [`HeadGraph`].
///
/// # Errors
/// [`Error::Weights`] for `source` when the bytes are not a model of `format`, or the graph
/// is not a head we recognise (the message names the first unsupported node or layer).
pub fn parse(bytes: &[u8], format: Format, source: &WeightsSource) -> Result<HeadGraph, Error> {
    let graph = match format {
        Format::Onnx => onnx::parse(bytes, &LIMITS),
        Format::Tflite => tflite::parse(bytes, &LIMITS),
    }
    .map_err(|e| import_error(source, e))?;
    graph.validate(source)?;
    Ok(graph)
}

/// Loads the user model in `path` (`.onnx` or `.tflite`, a regular file of at most
/// [`HEAD_LIMIT`] bytes), named as [`names::model_name_of`] derives it.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read, is not a regular file or is too large;
/// [`Error::Unknown`] for another extension; [`Error::Weights`] as [`parse`].
pub fn wake_word_from_file(path: &Path) -> Result<WakeWord, Error> {
    let Some(format) = Format::of(path) else {
        return Err(Error::Unknown {
            what: "model format",
            name: format!("{} (expected .onnx or .tflite)", path.display()),
        });
    };
    let bytes = read_limited(path, HEAD_LIMIT)?;
    let source = WeightsSource::File(path.into());
    let head = parse(&bytes, format, &source)?.build(&source)?;
    Ok(WakeWord::from_graph(names::model_name_of(path), Arc::new(head)))
}

/// Loads every model file of `dir` ([`names::scan_dir`]: `.tflite` preferred over an
/// `.onnx` of the same stem), in path order.
///
/// # Errors
/// As [`names::scan_dir`] and [`wake_word_from_file`], for the first file that fails.
pub fn wake_words_in_dir(dir: &Path) -> Result<alloc::vec::Vec<WakeWord>, Error> {
    names::scan_dir(dir)?.iter().map(|p| wake_word_from_file(p)).collect()
}
