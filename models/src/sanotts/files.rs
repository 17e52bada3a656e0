//! Voice files and hidden-states files on disk, and session options (feature `std`).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;
use std::{format, vec};

use safetensors::tensor::Metadata;
use safetensors::Dtype;

use super::load::VoiceWeights;
use super::utterance::Decoder;
use super::vocoder::Vocoder;
use super::voice::Voice;
use super::HIDDEN;
use crate::error::{Error, WeightsReason, WeightsSource};
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

/// Largest JSON header of a hidden-states file: 1 MiB (one tensor's header is about 100
/// bytes).
pub const HIDDEN_HEADER_LIMIT: u64 = 1 << 20;

/// A hidden-states file read in chunks of frames, so an utterance of any length needs
/// memory for one chunk only: a safetensors file holding one tensor, `hidden`, f32
/// `[192, T]` channel-first (`T >= 1`), as an acoustic model writes it for `neon vocode`.
pub struct HiddenStates {
    path: PathBuf,
    file: File,
    /// Byte offset of the tensor's data in the file.
    data: u64,
    frames: usize,
    bytes: Vec<u8>,
}

impl HiddenStates {
    /// Opens and checks `path`: a regular file, a valid safetensors header (at most
    /// [`HIDDEN_HEADER_LIMIT`] bytes) whose offsets match the file's length, exactly one
    /// tensor `hidden` of dtype F32 and shape `[192, T]`, `T >= 1`. The values are checked
    /// (finite) as they are read.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be opened or read or is not a regular file;
    /// [`Error::Weights`] naming the file and what is wrong with it.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let io = |error: io::Error| Error::Io { path: path.to_path_buf(), error };
        let fail = |tensor: &'static str, reason: WeightsReason| Error::Weights {
            source: WeightsSource::File(path.to_path_buf()),
            tensor,
            reason,
        };
        let format = |m: String| fail("", WeightsReason::Format(m));
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            let what = if meta.is_dir() { "is a directory" } else { "not a regular file" };
            return Err(io(io::Error::new(io::ErrorKind::InvalidInput, what)));
        }
        let mut file = File::open(path).map_err(io)?;
        let mut len = [0u8; 8];
        file.read_exact(&mut len)
            .map_err(|_| format("shorter than its 8-byte header length".into()))?;
        let n = u64::from_le_bytes(len);
        if n > HIDDEN_HEADER_LIMIT || 8 + n > meta.len() {
            return Err(format(format!(
                "header of {n} bytes: larger than the file or than {HIDDEN_HEADER_LIMIT}"
            )));
        }
        let mut header = vec![0u8; n as usize];
        file.read_exact(&mut header).map_err(io)?;
        let header: Metadata =
            serde_json::from_slice(&header).map_err(|e| format(format!("header: {e}")))?;
        if 8 + n + header.data_len() as u64 != meta.len() {
            return Err(format(format!(
                "{} bytes, but the header describes {}",
                meta.len(),
                8 + n + header.data_len() as u64
            )));
        }
        let names = header.offset_keys();
        if let Some(other) = names.iter().find(|k| k.as_str() != "hidden") {
            return Err(fail(
                "",
                WeightsReason::Invalid(format!(
                    "unknown tensor `{}` (a hidden-states file holds one tensor, `hidden`)",
                    other.escape_debug()
                )),
            ));
        }
        let info = header.info("hidden").ok_or_else(|| fail("hidden", WeightsReason::Missing))?;
        if info.dtype != Dtype::F32 {
            return Err(fail("hidden", WeightsReason::Dtype("F32")));
        }
        let frames = match info.shape[..] {
            [HIDDEN, t] if t >= 1 => t,
            ref s => {
                return Err(fail(
                    "hidden",
                    WeightsReason::Invalid(format!("shape is {s:?}, expected [192, T], T >= 1")),
                ))
            }
        };
        let data = 8 + n + info.data_offsets.0 as u64;
        Ok(Self { path: path.to_path_buf(), file, data, frames, bytes: Vec::new() })
    }

    /// Frames `T` in the file.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Reads frames `from..to` into `out`, channel-first `[192, to - from]`.
    ///
    /// # Errors
    /// [`Error::Input`] for a range outside `0..=T` or an `out` of another length;
    /// [`Error::Io`] for a read error; [`Error::Weights`] naming the channel and frame of
    /// the first NaN or infinite value.
    pub fn read(&mut self, from: usize, to: usize, out: &mut [f32]) -> Result<(), Error> {
        if from > to || to > self.frames {
            return Err(Error::Input {
                what: "hidden frames (end)",
                expected: "at most T",
                got: to,
            });
        }
        let n = to - from;
        if out.len() != HIDDEN * n {
            return Err(Error::Input {
                what: "hidden chunk values",
                expected: "192 * frames",
                got: out.len(),
            });
        }
        let path = &self.path;
        let io = |error: io::Error| Error::Io { path: path.clone(), error };
        self.bytes.resize(4 * n, 0);
        if n == 0 {
            return Ok(());
        }
        for (c, row) in out.chunks_exact_mut(n).enumerate() {
            let at = self.data + 4 * (c * self.frames + from) as u64;
            self.file.seek(SeekFrom::Start(at)).map_err(io)?;
            self.file.read_exact(&mut self.bytes).map_err(io)?;
            for (j, (v, b)) in row.iter_mut().zip(self.bytes.chunks_exact(4)).enumerate() {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if !v.is_finite() {
                    return Err(Error::Weights {
                        source: WeightsSource::File(path.clone()),
                        tensor: "hidden",
                        reason: WeightsReason::Invalid(format!(
                            "NaN or infinity at channel {c}, frame {}",
                            from + j
                        )),
                    });
                }
            }
        }
        Ok(())
    }
}
