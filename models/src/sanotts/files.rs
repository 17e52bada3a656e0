//! Voice files on disk and session options (feature `std`).

use std::path::Path;
use std::sync::Arc;

use super::load::VoiceWeights;
use super::utterance::Decoder;
use super::vocoder::Vocoder;
use super::voice::Voice;
use crate::error::{Error, WeightsSource};
use crate::exec_plan::Family;
use crate::files::read_limited;
use crate::session::SessionOptions;
use crate::weights::TensorFile;

/// Largest voice file read: 16 MiB (a nano voice is about 2.6 MB).
pub const VOICE_LIMIT: u64 = 16 << 20;

/// Reads and checks a voice file ([`Voice::load`]).
///
/// # Errors
/// [`Error::Io`] if it cannot be read or is not a regular file of at most [`VOICE_LIMIT`]
/// bytes; [`Error::Weights`] naming the file and the first problem.
pub fn load_voice(path: &Path) -> Result<Voice, Error> {
    let bytes = read_limited(path, VOICE_LIMIT)?;
    Voice::load(&TensorFile::parse(&bytes, WeightsSource::File(path.to_path_buf()))?)
}

/// Reads, checks, folds and packs a voice file, ready to share.
///
/// # Errors
/// As [`load_voice`].
pub fn load_weights(path: &Path) -> Result<Arc<VoiceWeights>, Error> {
    Ok(Arc::new(VoiceWeights::prepare(&load_voice(path)?)?))
}

impl Decoder {
    /// A decoder over shared `weights` on the backend `options` select
    /// (`sanotts.exec_plan`, component `decoder`).
    ///
    /// # Errors
    /// [`Error::Backend`] when the selected backend cannot run here (options validated on
    /// another machine).
    pub fn new(weights: Arc<VoiceWeights>, options: &SessionOptions) -> Result<Self, Error> {
        Decoder::with_backend(weights, options.backend(Family::SanoTts, "decoder"))
    }
}

impl Vocoder {
    /// A vocoder (block 1) over shared `weights` on the backend `options` select
    /// (`sanotts.exec_plan`, component `decoder`).
    ///
    /// # Errors
    /// As [`Decoder::new`].
    pub fn new(weights: Arc<VoiceWeights>, options: &SessionOptions) -> Result<Self, Error> {
        Ok(Vocoder::from_decoder(Decoder::new(weights, options)?))
    }
}
