//! Streaming features with openwakeword 0.6.0's semantics: audio in any chunk size, mel
//! frames and speech embeddings out, grouped exactly as the reference pipeline groups them.
//!
//! # Semantics (openwakeword 0.6.0, `AudioFeatures._streaming_features` and `Model.predict`)
//! - Audio is consumed in chunks of [`CHUNK`] = 1280 samples (80 ms). Samples that do not
//!   complete a chunk wait in a remainder buffer.
//! - When a push completes `n >= 1` chunks, **one** mel call covers the last
//!   `n * 1280 + 480` samples (fewer at the very start of the stream: the first call sees
//!   only the `n * 1280` samples received so far), so the mel floor (`max - 80 dB`) is shared
//!   by those chunks. Its frames (as `dB / 10 + 2`) are appended to the mel buffer.
//! - Then `n` embeddings are computed, oldest first, on the 76-frame mel windows ending
//!   `8 * i` frames before the newest frame, `i = n - 1 ..= 0`, and appended to the feature
//!   buffer.
//! - Per push, a head reports: for `n > 1`, the max over the `n` windows of 16 embeddings
//!   ending at each new embedding; for `n == 1`, its score on the newest 16; for `n == 0`,
//!   the value it reported on the previous push. The first [`WARMUP_PUSHES`] pushes report
//!   0 (the head is still scored; see [`crate::openwakeword::detector`]).
//!
//! A push may complete at most [`MAX_CHUNKS`] chunks; a larger push is processed as
//! successive pieces that each complete `MAX_CHUNKS` (the first one fewer if samples were
//! pending), which matches feeding those pieces one by one.
//!
//! # Initial state
//! The mel buffer starts as 76 frames of ones (as openwakeword); the feature buffer holds
//! [`FEATURE_HISTORY`] embeddings set by [`FeatureStream::set_initial_features`]. Which
//! values to use is the caller's choice (openwakeword computes them from 4 s of random
//! noise; the converter's goldens record those of a seeded run).

use neon_runtime::Error as RuntimeError;
use neon_runtime::{Parallel, Serial};

use crate::error::Error;

/// Samples per chunk (80 ms at 16 kHz).
pub const CHUNK: usize = 1280;
/// Samples of history before a group of chunks that each mel call also reads (3 hops).
pub const MEL_CONTEXT: usize = 480;
/// Mel bins per frame.
pub const MEL_BINS: usize = 32;
/// Mel frames per chunk (hop of 160 samples).
pub const FRAMES_PER_CHUNK: usize = 8;
/// Mel frames an embedding reads.
pub const EMBEDDING_WINDOW: usize = 76;
/// Values per embedding.
pub const EMBEDDING_DIM: usize = 96;
/// Embeddings a head reads.
pub const HEAD_FRAMES: usize = 16;
/// Chunks one push can complete before it is split (8 chunks = 640 ms = 10,240 samples).
pub const MAX_CHUNKS: usize = 8;
/// Pushes that report 0 at the start of a stream (openwakeword zeroes the first 5).
pub const WARMUP_PUSHES: usize = 5;
/// Embeddings kept by the default feature buffer: enough for the 16-frame head windows of
/// a push completing [`MAX_CHUNKS`].
pub const FEATURE_HISTORY: usize = HEAD_FRAMES + MAX_CHUNKS - 1;

/// Rows of a feature buffer for heads reading up to `head_frames` embeddings (at least the
/// default [`FEATURE_HISTORY`]): `max(head_frames, 16) + MAX_CHUNKS - 1`.
pub const fn feature_history(head_frames: usize) -> usize {
    let frames = if head_frames > HEAD_FRAMES { head_frames } else { HEAD_FRAMES };
    frames + MAX_CHUNKS - 1
}

/// The default feature storage: [`FEATURE_HISTORY`] embeddings, a fixed array.
pub type DefaultFeatures = [f32; FEATURE_HISTORY * EMBEDDING_DIM];

const PENDING: usize = MEL_CONTEXT + MAX_CHUNKS * CHUNK;
const MEL_HISTORY: usize = EMBEDDING_WINDOW + FRAMES_PER_CHUNK * (MAX_CHUNKS - 1);
/// Most mel frames one call produces: `n * 1280 + 480` samples with n = MAX_CHUNKS.
const MEL_FRAMES_MAX: usize = (PENDING - 512) / 160 + 1;

/// The mel frontend as the stream uses it: raw dB with the per-call floor.
pub trait MelStage {
    /// Writes the floored dB mel frames of `samples` (int16 values as f32, at least 512)
    /// into `out` (`[frames, 32]`, frame-major, exactly `frames * 32` values with
    /// `frames = floor((samples - 512) / 160) + 1`) and returns `frames`.
    ///
    /// # Errors
    /// When `samples` is shorter than 512 or `out` has the wrong length.
    fn mel(&mut self, samples: &[f32], out: &mut [f32]) -> Result<usize, Error>;
}

/// The speech-embedding network as the stream uses it.
pub trait EmbeddingStage {
    /// Writes the embedding (`[96]`) of one mel window (`[76, 32]`, frame-major features
    /// `dB / 10 + 2`) into `out`.
    ///
    /// # Errors
    /// When a length is wrong (a bug in the caller) or the network fails.
    fn embed(&mut self, window: &[f32], out: &mut [f32]) -> Result<(), Error>;

    /// [`embed`](Self::embed) on the execution context `par` (e.g. a worker team); the
    /// result must not depend on it. The default ignores `par` and runs `embed`.
    ///
    /// # Errors
    /// As [`embed`](Self::embed), and the context's.
    fn embed_in(
        &mut self,
        par: &dyn Parallel,
        window: &[f32],
        out: &mut [f32],
    ) -> Result<(), Error> {
        let _ = par;
        self.embed(window, out)
    }
}

/// Implements [`EmbeddingStage`] for a network that runs with `neon_runtime::RunOptions`:
/// `embedding_stage!([<impl generics>] Type, |this, window, out, options| <body>);` where
/// the body computes the embedding of `window` into `out` on `this` (`&mut Self`) with
/// `options` and returns `Result<(), Error>`. `embed` is `embed_in(&Serial, ..)`, and
/// `embed_in` passes the context `par` in the options.
macro_rules! embedding_stage {
    (
        [$($generics:tt)*] $ty:ty,
        |$this:ident, $window:ident, $out:ident, $options:ident| $body:expr
    ) => {
        impl<$($generics)*> $crate::openwakeword::stream::EmbeddingStage for $ty {
            fn embed(&mut self, window: &[f32], out: &mut [f32]) -> Result<(), $crate::Error> {
                self.embed_in(&::neon_runtime::Serial, window, out)
            }

            fn embed_in(
                &mut self,
                par: &dyn ::neon_runtime::Parallel,
                $window: &[f32],
                $out: &mut [f32],
            ) -> Result<(), $crate::Error> {
                let $this = self;
                let $options = ::neon_runtime::RunOptions::new().with_parallel(par);
                $body
            }
        }
    };
}
pub(super) use embedding_stage;

/// What one processed piece produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Chunks completed by this piece (`0..=MAX_CHUNKS`), i.e. new embeddings.
    pub chunks: usize,
    /// Samples of the push consumed by this piece.
    pub consumed: usize,
}

/// Audio → mel frames → embeddings, with the reference grouping (module docs).
///
/// Holds fixed-size buffers only (about 91 KB plus the stages): no allocation after
/// construction. [`Self::new`] is a `const fn`, so a stream can be built in place in a
/// `static` on bare metal (not on the stack and moved there); a stage that can only be built
/// at run time (weights borrowed through run-time constructors) can be installed afterwards
/// through [`Self::embedding_mut`].
///
/// The feature buffer `F` holds `rows * 96` values, oldest first: by default a fixed array
/// of [`FEATURE_HISTORY`] rows, enough for heads of 16 frames; heads reading more
/// embeddings (user models read N up to 120) need a stream built by
/// [`FeatureStream::with_head_frames`] (feature `alloc`), sized for the largest of them.
pub struct FeatureStream<M, E, F = DefaultFeatures> {
    mel: M,
    embedding: E,
    /// Samples: up to [`MEL_CONTEXT`] of history, then the pending ones.
    pending: [f32; PENDING + CHUNK],
    history: usize,
    pending_len: usize,
    mel_frames: [f32; MEL_HISTORY * MEL_BINS],
    mel_scratch: [f32; MEL_FRAMES_MAX * MEL_BINS],
    features: F,
    initial_features: F,
    total_samples: u64,
}

impl<M, E, F> FeatureStream<M, E, F> {
    /// A stream at its start over the zeroed feature buffers `features` and
    /// `initial_features` (equal lengths, a multiple of 96).
    const fn from_parts(mel: M, embedding: E, features: F, initial_features: F) -> Self {
        Self {
            mel,
            embedding,
            pending: [0.0; PENDING + CHUNK],
            history: 0,
            pending_len: 0,
            mel_frames: [1.0; MEL_HISTORY * MEL_BINS],
            mel_scratch: [0.0; MEL_FRAMES_MAX * MEL_BINS],
            features,
            initial_features,
            total_samples: 0,
        }
    }
}

impl<M: MelStage, E: EmbeddingStage> FeatureStream<M, E> {
    /// A stream at its start: mel buffer of ones, feature buffer ([`FEATURE_HISTORY`] rows)
    /// of zeros (call [`Self::set_initial_features`] to choose another initial state).
    pub const fn new(mel: M, embedding: E) -> Self {
        let zeros = [0.0; FEATURE_HISTORY * EMBEDDING_DIM];
        Self::from_parts(mel, embedding, zeros, zeros)
    }
}

#[cfg(feature = "alloc")]
impl<M: MelStage, E: EmbeddingStage> FeatureStream<M, E, alloc::vec::Vec<f32>> {
    /// A stream at its start (as [`FeatureStream::new`]) whose feature buffer keeps
    /// [`feature_history`]`(head_frames)` embeddings, for heads reading up to `head_frames`
    /// (`[head_frames, 96]`, [`Self::head_window`]).
    pub fn with_head_frames(mel: M, embedding: E, head_frames: usize) -> Self {
        let n = feature_history(head_frames) * EMBEDDING_DIM;
        Self::from_parts(mel, embedding, alloc::vec![0.0; n], alloc::vec![0.0; n])
    }
}

impl<M, E, F> FeatureStream<M, E, F>
where
    M: MelStage,
    E: EmbeddingStage,
    F: AsRef<[f32]> + AsMut<[f32]>,
{
    /// Embeddings the feature buffer keeps.
    pub fn history_rows(&self) -> usize {
        self.features.as_ref().len() / EMBEDDING_DIM
    }

    /// The most embedding frames a head window may span: `history_rows - MAX_CHUNKS + 1`.
    pub fn max_head_frames(&self) -> usize {
        self.history_rows() + 1 - MAX_CHUNKS
    }

    /// Sets the initial feature buffer: the newest `rows` embeddings of `features`
    /// (`[rows, 96]`, oldest first; the last [`Self::history_rows`] are kept, fewer rows are
    /// preceded by zeros), applied now and by every [`Self::reset`].
    ///
    /// # Errors
    /// [`Error::Input`] when `features.len()` is not a multiple of 96.
    pub fn set_initial_features(&mut self, features: &[f32]) -> Result<(), Error> {
        if !features.len().is_multiple_of(EMBEDDING_DIM) {
            return Err(Error::Input {
                what: "initial features",
                expected: "a multiple of 96 values ([rows, 96])",
                got: features.len(),
            });
        }
        let initial = self.initial_features.as_mut();
        let keep = features.len().min(initial.len());
        initial.fill(0.0);
        let n = initial.len();
        initial[n - keep..].copy_from_slice(&features[features.len() - keep..]);
        self.features.as_mut().copy_from_slice(self.initial_features.as_ref());
        Ok(())
    }

    /// The embedding stage.
    pub fn embedding(&self) -> &E {
        &self.embedding
    }

    /// The embedding stage, mutably (e.g. to install run-time-built weights in a stream that
    /// a `static` holds; the stream's buffers are unaffected).
    pub fn embedding_mut(&mut self) -> &mut E {
        &mut self.embedding
    }

    /// Back to the state after construction (buffers, initial features, counters).
    pub fn reset(&mut self) {
        self.history = 0;
        self.pending_len = 0;
        self.mel_frames.fill(1.0);
        self.features.as_mut().copy_from_slice(self.initial_features.as_ref());
        self.total_samples = 0;
    }

    /// Samples consumed since the start (or the last reset), including pending ones.
    pub fn total_samples(&self) -> u64 {
        self.total_samples
    }

    /// Samples received that do not yet complete a chunk.
    pub fn pending_samples(&self) -> usize {
        self.pending_len
    }

    /// The window of 16 embeddings (`[16, 96]` flattened, oldest first) ending `back`
    /// embeddings before the newest (`back < MAX_CHUNKS`).
    ///
    /// # Panics
    /// When `back >= MAX_CHUNKS`.
    pub fn head_input(&self, back: usize) -> &[f32] {
        self.head_window(back, HEAD_FRAMES)
    }

    /// The window of `frames` embeddings (`[frames, 96]` flattened, oldest first) ending
    /// `back` embeddings before the newest.
    ///
    /// # Panics
    /// When `back >= MAX_CHUNKS` or `frames` exceeds [`Self::max_head_frames`].
    pub fn head_window(&self, back: usize, frames: usize) -> &[f32] {
        assert!(back < MAX_CHUNKS, "head_window: back {back} >= {MAX_CHUNKS}");
        let max = self.max_head_frames();
        assert!(frames <= max, "head_window: {frames} frames > {max}");
        let end = (self.history_rows() - back) * EMBEDDING_DIM;
        &self.features.as_ref()[end - frames * EMBEDDING_DIM..end]
    }

    /// The newest embedding (`[96]`).
    pub fn last_embedding(&self) -> &[f32] {
        let f = self.features.as_ref();
        &f[f.len() - EMBEDDING_DIM..]
    }

    /// The newest `frames` mel frames (`[frames, 32]`, features `dB / 10 + 2`).
    ///
    /// # Panics
    /// When `frames` exceeds the buffer (`76 + 8 * (MAX_CHUNKS - 1)`).
    pub fn last_mel(&self, frames: usize) -> &[f32] {
        &self.mel_frames[(MEL_HISTORY - frames) * MEL_BINS..]
    }

    /// Consumes the first piece of `samples` (int16): at most as many samples as complete
    /// [`MAX_CHUNKS`] chunks. Call again with the rest until everything is consumed; each
    /// call is one openwakeword `predict` call.
    ///
    /// # Errors
    /// Errors of the mel or embedding stage (none for valid stages); the stream is then
    /// reset so it stays usable.
    pub fn push_piece(&mut self, samples: &[i16]) -> Result<Progress, Error> {
        self.push_piece_in(&Serial, samples)
    }

    /// [`Self::push_piece`] with the embeddings computed on `par` ([`EmbeddingStage::embed_in`];
    /// the same features for any context).
    ///
    /// # Errors
    /// As [`Self::push_piece`], and the context's; the stream is then reset.
    pub fn push_piece_in(
        &mut self,
        par: &dyn Parallel,
        samples: &[i16],
    ) -> Result<Progress, Error> {
        let room = MAX_CHUNKS * CHUNK - self.pending_len;
        let take = samples.len().min(room);
        let start = self.history + self.pending_len;
        for (d, &s) in self.pending[start..start + take].iter_mut().zip(&samples[..take]) {
            *d = f32::from(s);
        }
        self.pending_len += take;
        self.total_samples += take as u64;
        let chunks = self.pending_len / CHUNK;
        if chunks > 0 {
            if let Err(e) = self.process(par, chunks) {
                self.reset();
                return Err(e);
            }
        }
        Ok(Progress { chunks, consumed: take })
    }

    /// Runs the mel call and `chunks` embeddings over the pending samples, then keeps the
    /// last [`MEL_CONTEXT`] processed samples as history and the remainder after them.
    fn process(&mut self, par: &dyn Parallel, chunks: usize) -> Result<(), Error> {
        let end = self.history + chunks * CHUNK;
        let expected = (end - 512) / 160 + 1;
        let frames =
            self.mel.mel(&self.pending[..end], &mut self.mel_scratch[..expected * MEL_BINS])?;
        if frames != expected {
            return Err(Error::Runtime(RuntimeError::BadShape {
                reason: "mel stage returned an unexpected frame count",
            }));
        }
        // Append the new frames as features dB / 10 + 2.
        let keep = MEL_HISTORY.saturating_sub(frames);
        let new = frames.min(MEL_HISTORY);
        self.mel_frames.copy_within((MEL_HISTORY - keep) * MEL_BINS.., 0);
        let src = &self.mel_scratch[(frames - new) * MEL_BINS..frames * MEL_BINS];
        for (d, &s) in self.mel_frames[keep * MEL_BINS..].iter_mut().zip(src) {
            *d = s / 10.0 + 2.0;
        }
        // Embeddings, oldest first.
        for i in (0..chunks).rev() {
            let w_end = MEL_HISTORY - FRAMES_PER_CHUNK * i;
            let window = &self.mel_frames[(w_end - EMBEDDING_WINDOW) * MEL_BINS..w_end * MEL_BINS];
            let features = self.features.as_mut();
            features.copy_within(EMBEDDING_DIM.., 0);
            let n = features.len();
            self.embedding.embed_in(par, window, &mut features[n - EMBEDDING_DIM..])?;
        }
        // History and remainder.
        let remainder = self.pending_len - chunks * CHUNK;
        let history = end.min(MEL_CONTEXT);
        self.pending.copy_within(end - history..end + remainder, 0);
        self.history = history;
        self.pending_len = remainder;
        Ok(())
    }
}
