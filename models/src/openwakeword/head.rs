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
//! Dense weights are `[out, in]` (the converter's `dense{i}.weight`), LayerNorm parameters
//! `norm{i}.weight` / `norm{i}.bias`.

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

/// One prepared head of any architecture, with its (small) workspace.
pub enum HeadNet<S: AsRef<[f32]>> {
    /// [`ReluHead128`].
    Relu128(ReluHead128Weights<S>, ReluHead128Workspace),
    /// [`LayerNormHead128`].
    LayerNorm128(LayerNormHead128Weights<S>, LayerNormHead128Workspace),
    /// [`LayerNormHead64`].
    LayerNorm64(LayerNormHead64Weights<S>, LayerNormHead64Workspace),
    /// [`LayerNormHead32`].
    LayerNorm32(LayerNormHead32Weights<S>, LayerNormHead32Workspace),
}

impl<S: AsRef<[f32]>> HeadNet<S> {
    /// The score of `x` (`[1, 1536]`, see the module docs) in `(0, 1)`.
    ///
    /// # Errors
    /// [`Error::Runtime`] when `x` does not hold [`HEAD_INPUT`] values.
    pub fn score<B: Backend>(&mut self, x: &[f32]) -> Result<f32, Error> {
        let mut y = [0.0f32; 1];
        match self {
            HeadNet::Relu128(w, ws) => ReluHead128::run::<B, S>(w, x, &mut y, ws)?,
            HeadNet::LayerNorm128(w, ws) => LayerNormHead128::run::<B, S>(w, x, &mut y, ws)?,
            HeadNet::LayerNorm64(w, ws) => LayerNormHead64::run::<B, S>(w, x, &mut y, ws)?,
            HeadNet::LayerNorm32(w, ws) => LayerNormHead32::run::<B, S>(w, x, &mut y, ws)?,
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

/// Tensor names of one head's parameters (a prefix applied to the converter's names).
#[derive(Clone, Copy, Debug)]
pub struct HeadNames {
    /// `dense{0,1,2}.weight`.
    pub dense: [&'static str; 3],
    /// `dense{0,1,2}.bias`.
    pub dense_bias: [&'static str; 3],
    /// `norm{0,1}.weight`.
    pub norm: [&'static str; 2],
    /// `norm{0,1}.bias`.
    pub norm_bias: [&'static str; 2],
}

/// Names of a head's first (or only) stage.
pub const STAGE1: HeadNames = HeadNames {
    dense: ["dense0.weight", "dense1.weight", "dense2.weight"],
    dense_bias: ["dense0.bias", "dense1.bias", "dense2.bias"],
    norm: ["norm0.weight", "norm1.weight"],
    norm_bias: ["norm0.bias", "norm1.bias"],
};

/// Names of hey_jarvis's second stage (prefix `stage2.`).
pub const STAGE2: HeadNames = HeadNames {
    dense: ["stage2.dense0.weight", "stage2.dense1.weight", "stage2.dense2.weight"],
    dense_bias: ["stage2.dense0.bias", "stage2.dense1.bias", "stage2.dense2.bias"],
    norm: ["stage2.norm0.weight", "stage2.norm1.weight"],
    norm_bias: ["stage2.norm0.bias", "stage2.norm1.bias"],
};

#[cfg(feature = "alloc")]
mod load {
    use alloc::vec::Vec;

    use neon_runtime::ops::linear::{Linear, LinearGeometry};
    use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};

    use super::*;
    use crate::error::WeightsReason;
    use crate::weights::TensorFile;

    /// Dense layer `i` with the plan's geometry `g` (`[out, in]` weight and `[out]` bias).
    fn dense(
        f: &TensorFile<'_>,
        n: &HeadNames,
        i: usize,
        g: LinearGeometry,
    ) -> Result<Linear<Vec<f32>>, Error> {
        let w = f.f32(n.dense[i], &[g.out_features, g.in_features])?;
        let b = f.f32(n.dense_bias[i], &[g.out_features])?;
        Ok(Linear::new(g, w, Some(b))?)
    }

    /// LayerNorm `i` with the plan's geometry `g` (`[H]` weight and bias).
    fn norm(
        f: &TensorFile<'_>,
        n: &HeadNames,
        i: usize,
        g: LayerNormGeometry,
    ) -> Result<LayerNorm<Vec<f32>>, Error> {
        let w = f.f32(n.norm[i], &[g.channels])?;
        let b = f.f32(n.norm_bias[i], &[g.channels])?;
        Ok(LayerNorm::new(g, w, Some(b))?)
    }

    macro_rules! load_layer_norm_head {
        ($plan:ident, $weights:ident, $ws:ident, $variant:ident, $file:expr, $n:expr) => {{
            let (f, n) = ($file, $n);
            HeadNet::$variant(
                $weights {
                    dense0: dense(f, n, 0, $plan::DENSE0)?,
                    norm0: norm(f, n, 0, $plan::NORM0)?,
                    dense1: dense(f, n, 1, $plan::DENSE1)?,
                    norm1: norm(f, n, 1, $plan::NORM1)?,
                    dense2: dense(f, n, 2, $plan::DENSE2)?,
                },
                $ws::new(),
            )
        }};
    }

    impl HeadNet<Vec<f32>> {
        /// Loads the head whose tensors are named by `names` from `file`: a LayerNorm head
        /// when `norm0.weight` is present (H from `dense0.weight`'s shape: 128, 64 or 32),
        /// else a ReLU head with H = 128.
        ///
        /// # Errors
        /// [`Error::Weights`] for a missing tensor, a wrong shape or dtype, non-finite
        /// values, or an unsupported H.
        pub fn load(file: &TensorFile<'_>, names: &HeadNames) -> Result<Self, Error> {
            let arch = || Error::Weights {
                source: file.source().clone(),
                tensor: names.dense[0],
                reason: WeightsReason::Architecture,
            };
            let h = match file.shape(names.dense[0]) {
                Some(s) if s.len() == 2 && s[1] == HEAD_INPUT => s[0],
                Some(_) => return Err(arch()),
                None => {
                    return Err(Error::Weights {
                        source: file.source().clone(),
                        tensor: names.dense[0],
                        reason: WeightsReason::Missing,
                    })
                }
            };
            if !file.contains(names.norm[0]) {
                if h != 128 {
                    return Err(arch());
                }
                return Ok(HeadNet::Relu128(
                    ReluHead128Weights {
                        dense0: dense(file, names, 0, ReluHead128::DENSE0)?,
                        dense1: dense(file, names, 1, ReluHead128::DENSE1)?,
                        dense2: dense(file, names, 2, ReluHead128::DENSE2)?,
                    },
                    ReluHead128Workspace::new(),
                ));
            }
            Ok(match h {
                128 => load_layer_norm_head!(
                    LayerNormHead128,
                    LayerNormHead128Weights,
                    LayerNormHead128Workspace,
                    LayerNorm128,
                    file,
                    names
                ),
                64 => load_layer_norm_head!(
                    LayerNormHead64,
                    LayerNormHead64Weights,
                    LayerNormHead64Workspace,
                    LayerNorm64,
                    file,
                    names
                ),
                32 => load_layer_norm_head!(
                    LayerNormHead32,
                    LayerNormHead32Weights,
                    LayerNormHead32Workspace,
                    LayerNorm32,
                    file,
                    names
                ),
                _ => return Err(arch()),
            })
        }
    }
}
