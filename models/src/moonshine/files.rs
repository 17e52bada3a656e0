//! Opening the converted model from a directory (feature `std`).
//!
//! `tools/moonshine/fetch.sh` writes `models/moonshine/` with `base-en.safetensors` (the
//! weights, about 62 MB, not in the repository) and `tokenizer.bin`.

use std::path::{Path, PathBuf};
use std::string::ToString;
use std::sync::Arc;

use super::load::MoonshineWeights;
use super::tokenizer::Tokenizer;
use super::transcriber::{MoonshineModel, Transcriber};
use crate::error::{Error, WeightsReason, WeightsSource};
use crate::exec_plan::Family;
use crate::files::{read_limited, TOKENIZER_LIMIT, WEIGHTS_LIMIT};
use crate::session::SessionOptions;
use crate::weights::TensorFile;

/// The weights file's name in a model directory.
pub const WEIGHTS_FILE: &str = "base-en.safetensors";
/// The tokenizer's name in a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.bin";
/// Where `tools/moonshine/fetch.sh` puts the model, relative to the repository root.
pub const DEFAULT_DIR: &str = "models/moonshine";
/// The command that fetches and converts the model.
pub const FETCH_COMMAND: &str = "tools/moonshine/fetch.sh";

/// Reads `tokenizer.bin` and checks it is base-en's ([`Tokenizer::parse_moonshine`]).
///
/// # Errors
/// [`Error::Io`] if it cannot be read or is not a regular file of at most
/// [`TOKENIZER_LIMIT`] bytes ([`read_limited`]); [`Error::Weights`] if it is truncated or not
/// base-en's.
pub fn load_tokenizer(path: &Path) -> Result<Tokenizer, Error> {
    Tokenizer::parse_moonshine(&read_limited(path, TOKENIZER_LIMIT)?).map_err(|e| Error::Weights {
        source: WeightsSource::File(path.to_path_buf()),
        tensor: "",
        reason: WeightsReason::Invalid(e.to_string()),
    })
}

/// Reads, checks and prepares the weights of a converted `base-en.safetensors`.
///
/// # Errors
/// [`Error::Io`] if it cannot be read or is not a regular file of at most [`WEIGHTS_LIMIT`]
/// bytes ([`read_limited`]); [`Error::Weights`] naming the first bad tensor.
pub fn load_weights(path: &Path) -> Result<MoonshineWeights, Error> {
    let bytes = read_limited(path, WEIGHTS_LIMIT)?;
    let file = TensorFile::parse(&bytes, WeightsSource::File(path.to_path_buf()))?;
    MoonshineWeights::load(&file)
}

/// The two files of a model directory.
pub fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join(WEIGHTS_FILE), dir.join(TOKENIZER_FILE))
}

impl MoonshineModel {
    /// Opens the model in `dir` (`base-en.safetensors` and `tokenizer.bin`), ready to share
    /// among transcribers. The small tokenizer is read and checked first, so a bad one is
    /// reported before the 62 MB of weights are read.
    ///
    /// # Errors
    /// As [`load_tokenizer`] and [`load_weights`].
    pub fn open(dir: &Path) -> Result<Arc<Self>, Error> {
        let (weights, tokenizer) = paths(dir);
        let tokenizer = load_tokenizer(&tokenizer)?;
        Ok(MoonshineModel::new(load_weights(&weights)?, tokenizer))
    }
}

impl Transcriber {
    /// A transcriber over a shared `model` configured by `options`: the encoder's and the
    /// decoder's backends (`moonshine_asr.exec_plan`), the decoder's int8 path
    /// (`moonshine_asr.int8`) and the encoder's (`moonshine_asr.encoder_int8`).
    ///
    /// # Errors
    /// [`Error::Backend`] when a selected backend cannot run here (the options were
    /// validated for this machine, so only options built elsewhere).
    pub fn new(model: Arc<MoonshineModel>, options: &SessionOptions) -> Result<Self, Error> {
        let family = Family::MoonshineAsr;
        let (encoder, decoder) =
            (options.backend(family, "encoder"), options.backend(family, "decoder"));
        let mut t = Transcriber::with_backends(model, encoder, decoder)?;
        t.set_decoder_path(options.int8());
        t.set_encoder_path(options.encoder_int8());
        Ok(t)
    }

    /// Opens the model in `dir` (`base-en.safetensors` and `tokenizer.bin`) for one
    /// transcriber configured by `options` ([`Transcriber::new`]). To run several over one
    /// copy of the weights, open a [`MoonshineModel`] and share it.
    ///
    /// # Errors
    /// As [`load_weights`], [`load_tokenizer`] and [`Transcriber::new`].
    pub fn open(dir: &Path, options: &SessionOptions) -> Result<Self, Error> {
        Transcriber::new(MoonshineModel::open(dir)?, options)
    }
}
