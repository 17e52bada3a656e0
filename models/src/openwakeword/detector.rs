//! The wake-word detector: one feature stream shared by several heads, with openwakeword
//! 0.6.0's per-push scores (feature `alloc`).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::marker::PhantomData;

use neon_runtime::{Backend, Parallel, Serial};

use super::embedding::{self, EmbeddingNet, EmbeddingNetWeights, EmbeddingNetWorkspace};
use super::head::HeadNet;
use super::incremental::{self, IncrementalWorkspace};
use super::mel::Mel;
use super::stream::{
    embedding_stage, EmbeddingStage, FeatureStream, MelStage, Progress, EMBEDDING_DIM,
    EMBEDDING_WINDOW, HEAD_FRAMES, MEL_BINS, WARMUP_PUSHES,
};
use crate::error::Error;
use crate::weights::TensorFile;

pub use super::head::STAGE2_THRESHOLD;

/// How a [`WakeWord`] computes its score.
enum Head {
    /// A compiled plan (the official architectures), with an optional second stage.
    Compiled { net: Arc<HeadNet<Vec<f32>>>, stage2: Option<Arc<HeadNet<Vec<f32>>>> },
    /// A user's model ([`custom`](super::custom), feature `std`): shared operators, and
    /// run-time plans of this wake word's own, built at its first score.
    #[cfg(feature = "import")]
    Graph { head: Arc<super::custom::GraphHead>, plans: Option<Box<super::custom::GraphPlans>> },
}

/// A head with its name, an optional second stage, and the score it last reported. The
/// heads' weights are shared: a clone (e.g. for another detector) shares them and starts
/// from no score.
pub struct WakeWord {
    name: String,
    head: Head,
    last: f32,
}

impl Clone for WakeWord {
    fn clone(&self) -> Self {
        let head = match &self.head {
            Head::Compiled { net, stage2 } => {
                Head::Compiled { net: net.clone(), stage2: stage2.clone() }
            }
            #[cfg(feature = "import")]
            Head::Graph { head, .. } => Head::Graph { head: head.clone(), plans: None },
        };
        Self { name: self.name.clone(), head, last: 0.0 }
    }
}

impl WakeWord {
    /// A named head; `stage2` replaces scores `>= STAGE2_THRESHOLD` of `net` by its own.
    pub fn new(name: String, net: HeadNet<Vec<f32>>, stage2: Option<HeadNet<Vec<f32>>>) -> Self {
        let head = Head::Compiled { net: Arc::new(net), stage2: stage2.map(Arc::new) };
        Self { name, head, last: 0.0 }
    }

    /// A named user model (feature `std`), its operators shared with `head`'s other users.
    #[cfg(feature = "import")]
    pub fn from_graph(name: String, head: Arc<super::custom::GraphHead>) -> Self {
        Self { name, head: Head::Graph { head, plans: None }, last: 0.0 }
    }

    /// The model name (e.g. `hey_jarvis_v0.1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Embedding frames the head reads: 16 for the official heads, N of a user model's
    /// input shape `[1, N, 96]`.
    pub fn frames(&self) -> usize {
        match &self.head {
            Head::Compiled { .. } => HEAD_FRAMES,
            #[cfg(feature = "import")]
            Head::Graph { head, .. } => head.frames(),
        }
    }

    /// Hidden width of the head's first layer.
    pub fn hidden(&self) -> usize {
        match &self.head {
            Head::Compiled { net, .. } => net.hidden(),
            #[cfg(feature = "import")]
            Head::Graph { head, .. } => head.hidden(),
        }
    }

    /// Score of one head input (`[frames, 96]` flattened), second stage included.
    fn score<B: Backend>(&mut self, x: &[f32]) -> Result<f32, Error> {
        match &mut self.head {
            Head::Compiled { net, stage2 } => {
                let p1 = net.score::<B>(x)?;
                match stage2 {
                    Some(s2) if p1 >= STAGE2_THRESHOLD => s2.score::<B>(x),
                    _ => Ok(p1),
                }
            }
            #[cfg(feature = "import")]
            Head::Graph { head, plans } => {
                let plans = match plans {
                    Some(p) => p,
                    None => plans.insert(Box::new(head.plans()?)),
                };
                plans.score::<B>(x)
            }
        }
    }
}

/// The feature stream of a [`Detector`]: its buffer sized for the largest head.
pub type DetectorStream<M, E> = FeatureStream<M, E, Vec<f32>>;

/// Audio in any chunk size → one score per wake word per push (see
/// [`crate::openwakeword::stream`] for the exact semantics). No allocation per push (a
/// user model's plans allocate their workspace once, at their first score).
pub struct Detector<B, M, E> {
    stream: Box<DetectorStream<M, E>>,
    words: Vec<WakeWord>,
    scores: Vec<f32>,
    pushes: usize,
    backend: PhantomData<B>,
}

impl<B: Backend, M: MelStage, E: EmbeddingStage> Detector<B, M, E> {
    /// A detector over `stream` scoring every word in `words`.
    ///
    /// # Errors
    /// [`Error::Input`] when a word reads more embedding frames than `stream` keeps
    /// ([`FeatureStream::max_head_frames`]; build it with
    /// [`FeatureStream::with_head_frames`] of [`max_frames`]`(&words)`).
    pub fn new(stream: Box<DetectorStream<M, E>>, words: Vec<WakeWord>) -> Result<Self, Error> {
        let frames = max_frames(&words);
        if frames > stream.max_head_frames() {
            return Err(Error::Input {
                what: "wake words",
                expected: "heads reading at most the embedding frames the stream keeps",
                got: frames,
            });
        }
        let n = words.len();
        Ok(Self { stream, words, scores: alloc::vec![0.0; n], pushes: 0, backend: PhantomData })
    }

    /// The wake words, in score order.
    pub fn words(&self) -> &[WakeWord] {
        &self.words
    }

    /// The feature stream (for its buffers and counters).
    pub fn stream(&self) -> &DetectorStream<M, E> {
        &self.stream
    }

    /// The feature stream, mutably (e.g. to set its initial features).
    pub fn stream_mut(&mut self) -> &mut DetectorStream<M, E> {
        &mut self.stream
    }

    /// Feeds int16 samples (16 kHz mono) and returns one score per wake word, as
    /// openwakeword 0.6.0's `predict` returns for the same call: a push completing no chunk
    /// repeats the previous scores, one completing several reports the max, and the first
    /// 5 pushes report 0. A push completing more than `MAX_CHUNKS` chunks is processed as
    /// successive pieces (each counted as a push) and reports the max over the pieces. So
    /// push at most [`CHUNK`](super::stream::CHUNK) samples at a time for one score per 80 ms:
    /// at the start of a stream, a push of up to 40 chunks (5 pieces) is all warm-up and
    /// reports 0.
    ///
    /// # Errors
    /// Errors of the stages (none for valid weights); the detector is then reset.
    pub fn push(&mut self, samples: &[i16]) -> Result<&[f32], Error> {
        self.push_in(&Serial, samples)
    }

    /// [`Detector::push`] with the speech embeddings computed on `par`, e.g. a caller-owned
    /// [`Team`](neon_runtime::Team) (the same scores for any context; the mel frontend and
    /// the small heads run on the calling thread).
    ///
    /// # Errors
    /// As [`Detector::push`], and the context's; the detector is then reset.
    pub fn push_in(&mut self, par: &dyn Parallel, samples: &[i16]) -> Result<&[f32], Error> {
        let mut rest = samples;
        let mut first = true;
        loop {
            let progress = self.stream.push_piece_in(par, rest)?;
            if let Err(e) = self.score_piece(progress, first) {
                self.reset();
                return Err(e);
            }
            first = false;
            rest = &rest[progress.consumed..];
            if rest.is_empty() {
                return Ok(&self.scores);
            }
        }
    }

    /// Scores one piece into `self.scores` (overwriting for the first piece of a push,
    /// keeping the max for later ones).
    fn score_piece(&mut self, p: Progress, first: bool) -> Result<(), Error> {
        self.pushes += 1;
        for (word, out) in self.words.iter_mut().zip(self.scores.iter_mut()) {
            let score = if p.chunks == 0 {
                word.last
            } else {
                let mut best = f32::NEG_INFINITY;
                let frames = word.frames();
                for back in (0..p.chunks).rev() {
                    let x = self.stream.head_window(back, frames);
                    best = max_or_nan(best, word.score::<B>(x)?);
                }
                best
            };
            let reported = if self.pushes <= WARMUP_PUSHES { 0.0 } else { score };
            word.last = reported;
            *out = if first { reported } else { max_or_nan(*out, reported) };
        }
        Ok(())
    }

    /// Back to the state after construction: a fresh stream and no pushes.
    pub fn reset(&mut self) {
        self.stream.reset();
        self.pushes = 0;
        self.scores.fill(0.0);
        for w in &mut self.words {
            w.last = 0.0;
        }
    }
}

/// The most embedding frames any of `words` reads (16 when empty).
pub fn max_frames(words: &[WakeWord]) -> usize {
    words.iter().map(WakeWord::frames).fold(HEAD_FRAMES, usize::max)
}

/// The larger of `a` and `b`, NaN if either is: a head that scores NaN (a broken model)
/// must not be reported as another chunk's score, or as `-inf` (`f32::max` drops NaN).
fn max_or_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// How a [`WakeDetectorOn`] computes its speech embeddings. Both give the same bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EmbeddingMode {
    /// Only the rows each chunk adds ([`incremental`]): about a sixth of the instructions
    /// per chunk; the first window after a reset costs about 1.6 whole windows. The default.
    #[default]
    Incremental,
    /// The whole 76-frame window every chunk, as openwakeword does (the reference).
    Full,
}

/// Prepared speech-embedding weights, shared among detectors.
pub type SharedEmbedding = Arc<EmbeddingNetWeights<Vec<f32>>>;

/// Loads the speech-embedding network from `file` (a converted `embedding.safetensors`),
/// ready to share among detectors.
///
/// # Errors
/// [`Error::Weights`] when `file` is malformed.
pub fn load_embedding(file: &TensorFile<'_>) -> Result<SharedEmbedding, Error> {
    Ok(Arc::new(EmbeddingNetWeights::load(file)?))
}

/// The workspace of an [`EmbeddingMode`].
enum EmbeddingState {
    Incremental(Box<IncrementalWorkspace>),
    Full(Box<EmbeddingNetWorkspace>),
}

/// The speech-embedding stage of a [`WakeDetectorOn`]: shared weights, and a workspace of
/// its own in the chosen [`EmbeddingMode`] ([`IncrementalWorkspace::BYTES`] incremental,
/// [`EmbeddingNet::WORKSPACE_BYTES`] full) on backend `B`.
pub struct DetectorEmbedding<B: Backend> {
    weights: SharedEmbedding,
    state: EmbeddingState,
    backend: PhantomData<B>,
}

impl<B: Backend> DetectorEmbedding<B> {
    /// The network over shared `weights` in `mode`.
    pub fn new(weights: SharedEmbedding, mode: EmbeddingMode) -> Self {
        let state = match mode {
            EmbeddingMode::Incremental => {
                EmbeddingState::Incremental(incremental::boxed_workspace())
            }
            EmbeddingMode::Full => EmbeddingState::Full(embedding::boxed_workspace()),
        };
        Self { weights, state, backend: PhantomData }
    }

    /// The mode it computes in.
    pub fn mode(&self) -> EmbeddingMode {
        match self.state {
            EmbeddingState::Incremental(_) => EmbeddingMode::Incremental,
            EmbeddingState::Full(_) => EmbeddingMode::Full,
        }
    }

    /// The shared weights.
    pub fn weights(&self) -> &SharedEmbedding {
        &self.weights
    }
}

embedding_stage!([B: Backend] DetectorEmbedding<B>, |this, window, out, options| {
    let w = &*this.weights;
    match &mut this.state {
        EmbeddingState::Incremental(ws) => ws.embed::<B, Vec<f32>>(w, window, out, options),
        EmbeddingState::Full(ws) => {
            EmbeddingNet::run_with::<B, Vec<f32>>(w, window, out, ws, options)?;
            Ok(())
        }
    }
});

/// The detector with the official frontend and a speech-embedding network over shared
/// weights, everything on backend `B` (the session-configured form is
/// [`WakeDetector`](super::selection::WakeDetector), feature `std`).
pub type WakeDetectorOn<B> = Detector<B, Mel<B>, DetectorEmbedding<B>>;

impl<B: Backend> Detector<B, Mel<B>, DetectorEmbedding<B>> {
    /// A detector for `words` with the embedding network loaded from `embedding` (a
    /// converted `embedding.safetensors`), computed incrementally
    /// ([`EmbeddingMode::Incremental`]; [`Self::with_embedding_mode`] chooses).
    ///
    /// Initial state (deterministic; openwakeword instead embeds 4 s of random noise): the
    /// mel buffer holds 76 frames of ones, as in openwakeword, and the feature buffer the
    /// embedding of that all-ones window in every row, i.e. the stream starts as if it had
    /// always seen that input. Scores from the 16th chunk on do not depend on it. Use
    /// [`FeatureStream::set_initial_features`] (through [`Detector::stream_mut`]) to start
    /// from another state, e.g. the goldens' seeded openwakeword one.
    ///
    /// # Errors
    /// [`Error::Weights`] when `embedding` is malformed.
    pub fn with_embedding(embedding: &TensorFile<'_>, words: Vec<WakeWord>) -> Result<Self, Error> {
        Self::with_embedding_mode(embedding, words, EmbeddingMode::default())
    }

    /// [`Self::with_embedding`] with the embeddings computed in `mode` (the same scores in
    /// either).
    ///
    /// # Errors
    /// [`Error::Weights`] when `embedding` is malformed.
    pub fn with_embedding_mode(
        embedding: &TensorFile<'_>,
        words: Vec<WakeWord>,
        mode: EmbeddingMode,
    ) -> Result<Self, Error> {
        Self::with_shared(load_embedding(embedding)?, words, mode)
    }

    /// A detector over shared embedding weights and `words` (whose heads are shared when
    /// cloned from another detector's), with its own buffers: the mel and feature
    /// history ([`FeatureStream`], 91 KB for 16-frame heads) and the embedding workspace (169 KB incremental,
    /// 583 KB full). Initial state as [`Self::with_embedding`].
    ///
    /// # Errors
    /// None for valid weights (the all-ones window is embedded once).
    pub fn with_shared(
        embedding: SharedEmbedding,
        words: Vec<WakeWord>,
        mode: EmbeddingMode,
    ) -> Result<Self, Error> {
        let mut net = DetectorEmbedding::<B>::new(embedding, mode);
        let ones = alloc::vec![1.0f32; EMBEDDING_WINDOW * MEL_BINS];
        let mut row = [0.0f32; EMBEDDING_DIM];
        net.embed(&ones, &mut row)?;
        let mut stream =
            Box::new(FeatureStream::with_head_frames(Mel::new(), net, max_frames(&words)));
        let rows = stream.history_rows();
        let init: Vec<f32> = row.iter().copied().cycle().take(rows * EMBEDDING_DIM).collect();
        stream.set_initial_features(&init)?;
        Self::new(stream, words)
    }
}

#[cfg(test)]
mod tests {
    use super::max_or_nan;

    #[test]
    fn the_max_of_scores_keeps_nan() {
        assert_eq!(max_or_nan(f32::NEG_INFINITY, 0.25), 0.25);
        assert!(max_or_nan(f32::NEG_INFINITY, f32::NAN).is_nan());
        assert!(max_or_nan(f32::NAN, 0.5).is_nan());
    }
}
