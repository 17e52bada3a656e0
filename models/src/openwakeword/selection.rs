//! The wake-word detector configured by session options (feature `std`): the backend of
//! component `embedding` (`openwakeword.exec_plan`) and the embedding mode
//! (`openwakeword.embedding_mode`), chosen once at construction.
//!
//! The mel frontend and the heads run on the embedding's backend (together about a tenth
//! of a push). Each push dispatches once to the detector monomorphised for that backend
//! ([`WakeDetectorOn`]); no kernel dispatches.
//!
//! Shared weights: several detectors (one per stream or client) over one
//! [`SharedEmbedding`] and clones of the same [`WakeWord`]s hold one copy of the weights;
//! each owns its buffers ([`WakeDetector::INSTANCE_BYTES`] plus the scores).

use alloc::vec::Vec;

use neon_runtime::{Avx2, Avx512, X86};
use neon_runtime::{BackendKind, Parallel, Portable};

use super::detector::{load_embedding, DetectorEmbedding, EmbeddingMode, SharedEmbedding};
use super::detector::{DetectorStream, WakeDetectorOn, WakeWord};
use super::embedding::EmbeddingNet;
use super::incremental::IncrementalWorkspace;
use super::mel::Mel;
use super::stream::{EMBEDDING_DIM, FEATURE_HISTORY};
use crate::error::{Error, WeightsSource};
use crate::exec_plan::Family;
use crate::session::SessionOptions;
use crate::weights::TensorFile;

/// One [`WakeDetectorOn`] per backend this build can name.
enum Inner {
    Portable(WakeDetectorOn<Portable>),
    #[cfg(all(target_arch = "aarch64", feature = "neon"))]
    Neon(WakeDetectorOn<neon_runtime::Neon>),
    Avx2(WakeDetectorOn<X86<Avx2>>),
    Avx512(WakeDetectorOn<X86<Avx512>>),
}

/// Runs `$body` with `$d` bound to the inner detector, whatever its backend.
macro_rules! each {
    ($inner:expr, $d:ident => $body:expr) => {
        match $inner {
            Inner::Portable($d) => $body,
            #[cfg(all(target_arch = "aarch64", feature = "neon"))]
            Inner::Neon($d) => $body,
            Inner::Avx2($d) => $body,
            Inner::Avx512($d) => $body,
        }
    };
}

/// Audio in any chunk size → one score per wake word per push, as [`WakeDetectorOn`] (see
/// [`crate::openwakeword::stream`] for the semantics), on the backend the session options
/// select. No allocation per push.
pub struct WakeDetector {
    inner: Inner,
    backend: BackendKind,
}

impl WakeDetector {
    /// Bytes of buffers each detector of 16-frame heads (the official ones) owns besides
    /// its scores: the feature stream (mel and embedding history) and the incremental
    /// embedding's workspace (with `openwakeword.embedding_mode=full`,
    /// [`EmbeddingNet::WORKSPACE_BYTES`] instead). Heads reading N > 16 frames add
    /// `2 * (N - 16) * 96 * 4` bytes of feature history.
    pub const INSTANCE_BYTES: usize = core::mem::size_of::<
        DetectorStream<Mel<Portable>, DetectorEmbedding<Portable>>,
    >() + 2 * FEATURE_HISTORY * EMBEDDING_DIM * 4
        + IncrementalWorkspace::BYTES;

    /// Bytes of the whole-window embedding's workspace (`embedding_mode=full`).
    pub const FULL_WORKSPACE_BYTES: usize = EmbeddingNet::WORKSPACE_BYTES;

    /// A detector for `words` over shared embedding weights, configured by `options`
    /// (module docs). Initial state as [`WakeDetectorOn::with_embedding`].
    ///
    /// # Errors
    /// [`Error::Backend`] when the selected backend cannot run here (options validated on
    /// another machine).
    pub fn new(
        embedding: SharedEmbedding,
        words: Vec<WakeWord>,
        options: &SessionOptions,
    ) -> Result<Self, Error> {
        let backend = options.backend(Family::OpenWakeWord, "embedding");
        backend.availability().map_err(Error::Backend)?;
        let mode = options.embedding_mode();
        let inner = neon_runtime::dispatch!(backend, B => {
            let d = WakeDetectorOn::<B>::with_shared(embedding, words, mode)?;
            IntoInner::into_inner(d)
        })
        .map_err(Error::Backend)?;
        Ok(Self { inner, backend })
    }

    /// [`WakeDetector::new`] over the embedding network embedded in the program
    /// ([`builtin::EMBEDDING`](super::builtin::EMBEDDING)), loaded for this detector alone.
    ///
    /// # Errors
    /// As [`WakeDetector::new`].
    pub fn with_builtin_embedding(
        words: Vec<WakeWord>,
        options: &SessionOptions,
    ) -> Result<Self, Error> {
        Self::new(builtin_embedding()?, words, options)
    }

    /// The backend everything runs on.
    pub fn backend(&self) -> BackendKind {
        self.backend
    }

    /// How the embeddings are computed.
    pub fn embedding_mode(&self) -> EmbeddingMode {
        each!(&self.inner, d => d.stream().embedding().mode())
    }

    /// The shared embedding weights.
    pub fn embedding_weights(&self) -> &SharedEmbedding {
        each!(&self.inner, d => d.stream().embedding().weights())
    }

    /// The wake words, in score order.
    pub fn words(&self) -> &[WakeWord] {
        each!(&self.inner, d => d.words())
    }

    /// Feeds int16 samples (16 kHz mono) and returns one score per wake word
    /// ([`super::detector::Detector::push`]).
    ///
    /// # Errors
    /// As [`super::detector::Detector::push`]; the detector is then reset.
    pub fn push(&mut self, samples: &[i16]) -> Result<&[f32], Error> {
        each!(&mut self.inner, d => d.push(samples))
    }

    /// [`WakeDetector::push`] with the speech embeddings computed on `par` (the same
    /// scores for any context).
    ///
    /// # Errors
    /// As [`super::detector::Detector::push_in`].
    pub fn push_in(&mut self, par: &dyn Parallel, samples: &[i16]) -> Result<&[f32], Error> {
        each!(&mut self.inner, d => d.push_in(par, samples))
    }

    /// The newest embedding `[96]`.
    pub fn last_embedding(&self) -> &[f32] {
        each!(&self.inner, d => d.stream().last_embedding())
    }

    /// Sets the feature history ([`FeatureStream::set_initial_features`](super::stream::FeatureStream::set_initial_features)).
    ///
    /// # Errors
    /// As [`FeatureStream::set_initial_features`](super::stream::FeatureStream::set_initial_features).
    pub fn set_initial_features(&mut self, features: &[f32]) -> Result<(), Error> {
        each!(&mut self.inner, d => d.stream_mut().set_initial_features(features))
    }

    /// Back to the state after construction.
    pub fn reset(&mut self) {
        each!(&mut self.inner, d => d.reset())
    }
}

/// Wraps a detector of a concrete backend (the one place types meet [`Inner`]'s variants).
trait IntoInner {
    fn into_inner(self) -> Inner;
}

impl IntoInner for WakeDetectorOn<Portable> {
    fn into_inner(self) -> Inner {
        Inner::Portable(self)
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl IntoInner for WakeDetectorOn<neon_runtime::Neon> {
    fn into_inner(self) -> Inner {
        Inner::Neon(self)
    }
}

impl IntoInner for WakeDetectorOn<X86<Avx2>> {
    fn into_inner(self) -> Inner {
        Inner::Avx2(self)
    }
}

impl IntoInner for WakeDetectorOn<X86<Avx512>> {
    fn into_inner(self) -> Inner {
        Inner::Avx512(self)
    }
}

/// The embedded speech-embedding network, loaded (about 1.3 MB of prepared weights):
/// share it among detectors with [`WakeDetector::new`].
///
/// # Errors
/// None for the embedded file (checked by the tests).
pub fn builtin_embedding() -> Result<SharedEmbedding, Error> {
    let file = TensorFile::parse(super::builtin::EMBEDDING, WeightsSource::Embedded("embedding"))?;
    load_embedding(&file)
}
