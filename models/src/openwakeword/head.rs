//! Wake-word heads: small classifiers over the last 16 speech embeddings.
//!
//! Input: the 16 most recent embeddings `[16, 96]` (oldest first) flattened frame by frame
//! (`t * 96 + c`), one frame-major row `[1, 1536]`. Output: a score in `(0, 1)`.
//!
//! Two architectures ship with openWakeWord (facts checked by `tools/openwakeword/`):
//! - **ReLU head** (`alexa_v0.1`): dense 1536→128, ReLU, dense 128→128, ReLU, dense 128→1,
//!   sigmoid ([`ReluHead128`]).
//! - **LayerNorm head** (`hey_jarvis`, `hey_mycroft` with H = 128, `hey_rhasspy` 64,
//!   `ok_nabu` 32): dense 1536→H, LayerNorm (biased variance, eps 1e-5, affine), ReLU,
//!   dense H→H, LayerNorm, ReLU, dense H→1, sigmoid ([`LayerNormHead128`],
//!   [`LayerNormHead64`], [`LayerNormHead32`]).
//!
//! Dense weights are `[out, in]`. Tensor names are in [`names`](super::names), loading
//! (`HeadNet::load`, feature `alloc`) in `load`.

use neon_macros::neon_plan;
use neon_runtime::Backend;

use crate::error::Error;

/// Embeddings a head reads.
pub const HEAD_FRAMES: usize = 16;
/// Values per embedding.
pub const EMBEDDING_DIM: usize = 96;
/// Input values of a head: `HEAD_FRAMES * EMBEDDING_DIM`.
pub const HEAD_INPUT: usize = HEAD_FRAMES * EMBEDDING_DIM;
/// Score at or above which hey_jarvis's second stage replaces the first stage's score
/// (openwakeword's `hey_jarvis_v0.1` graph).
pub const STAGE2_THRESHOLD: f32 = 0.5;

macro_rules! layer_norm_head {
    ($name:ident, $h:tt, $doc:literal) => {
        neon_plan! {
            #[doc = $doc]
            pub plan $name {
                weight dense0: f32[$h, 1536];
                weight dense0_b: f32[$h];
                weight norm0: f32[$h];
                weight norm0_b: f32[$h];
                weight dense1: f32[$h, $h];
                weight dense1_b: f32[$h];
                weight norm1: f32[$h];
                weight norm1_b: f32[$h];
                weight dense2: f32[1, $h];
                weight dense2_b: f32[1];
                input x: [1, 1536];
                output score: [1, 1];

                let h = linear(x, dense0, dense0_b);
                let h = layer_norm(h, norm0, norm0_b, layout = frame_major);
                let h = relu(h);
                let h = linear(h, dense1, dense1_b);
                let h = layer_norm(h, norm1, norm1_b, layout = frame_major);
                let h = relu(h);
                let s = linear(h, dense2, dense2_b);
                score = sigmoid(s);
            }
        }
    };
}

layer_norm_head!(LayerNormHead128, 128, "LayerNorm head with H = 128: `[1, 1536]` → `[1, 1]`.");
layer_norm_head!(LayerNormHead64, 64, "LayerNorm head with H = 64: `[1, 1536]` → `[1, 1]`.");
layer_norm_head!(LayerNormHead32, 32, "LayerNorm head with H = 32: `[1, 1536]` → `[1, 1]`.");

neon_plan! {
    /// ReLU head (H = 128, no normalisation): `[1, 1536]` → `[1, 1]`.
    pub plan ReluHead128 {
        weight dense0: f32[128, 1536];
        weight dense0_b: f32[128];
        weight dense1: f32[128, 128];
        weight dense1_b: f32[128];
        weight dense2: f32[1, 128];
        weight dense2_b: f32[1];
        input x: [1, 1536];
        output score: [1, 1];

        let h = linear(x, dense0, dense0_b);
        let h = relu(h);
        let h = linear(h, dense1, dense1_b);
        let h = relu(h);
        let s = linear(h, dense2, dense2_b);
        score = sigmoid(s);
    }
}

/// One prepared head of any architecture: immutable weights, shareable among detectors
/// (each score builds its workspace, at most 1,024 bytes, on the stack).
pub enum HeadNet<S: AsRef<[f32]>> {
    /// [`ReluHead128`].
    Relu128(ReluHead128Weights<S>),
    /// [`LayerNormHead128`].
    LayerNorm128(LayerNormHead128Weights<S>),
    /// [`LayerNormHead64`].
    LayerNorm64(LayerNormHead64Weights<S>),
    /// [`LayerNormHead32`].
    LayerNorm32(LayerNormHead32Weights<S>),
}

impl<S: AsRef<[f32]>> HeadNet<S> {
    /// The score of `x` (`[1, 1536]`, see the module docs) in `(0, 1)`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x` does not hold [`HEAD_INPUT`] values.
    pub fn score<B: Backend>(&self, x: &[f32]) -> Result<f32, Error> {
        let mut y = [0.0f32; 1];
        match self {
            HeadNet::Relu128(w) => {
                ReluHead128::run::<B, S>(w, x, &mut y, &mut ReluHead128Workspace::new())?
            }
            HeadNet::LayerNorm128(w) => {
                LayerNormHead128::run::<B, S>(w, x, &mut y, &mut LayerNormHead128Workspace::new())?
            }
            HeadNet::LayerNorm64(w) => {
                LayerNormHead64::run::<B, S>(w, x, &mut y, &mut LayerNormHead64Workspace::new())?
            }
            HeadNet::LayerNorm32(w) => {
                LayerNormHead32::run::<B, S>(w, x, &mut y, &mut LayerNormHead32Workspace::new())?
            }
        }
        Ok(y[0])
    }

    /// Hidden width H of the head.
    pub fn hidden(&self) -> usize {
        match self {
            HeadNet::Relu128(..) | HeadNet::LayerNorm128(..) => 128,
            HeadNet::LayerNorm64(..) => 64,
            HeadNet::LayerNorm32(..) => 32,
        }
    }
}
