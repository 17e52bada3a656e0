//! The speech-embedding CNN (openWakeWord's `embedding_model`, derived from Google's
//! speech_embedding) as a `neon_plan!`.
//!
//! Input: 76 mel frames of 32 bins of openWakeWord features (`dB / 10 + 2`), frame-major,
//! read as a one-channel image `[1, 76, 32]` (H = time, W = mel). Output: one embedding
//! `[96, 1, 1]`. Layers (checked against the official TFLite graph by
//! `tools/openwakeword/convert.py`): every conv but the last is followed by LeakyReLU
//! (slope 0.2) and `max(x, -0.4)`, fused into the conv's output stage here; "same" 1x3
//! convs pad the mel axis by one zero on each side; pools never pad. 41,955,840
//! multiply-accumulates per embedding.
//!
//! | convs | kernel | channels | after |
//! |---|---|---|---|
//! | 0 | 3x3, mel padded by 1 | 1 → 24 | |
//! | 1, 2 | 1x3 same, 3x1 valid | 24 | max pool 2x2 |
//! | 3 – 6 | (1x3 same, 3x1 valid) x 2 | 24 → 48 | max pool 1x2 (stride 1, 2) |
//! | 7 – 10 | (1x3 same, 3x1 valid) x 2 | 48 → 72 | max pool 2x2 |
//! | 11 – 14 | (1x3 same, 3x1 valid) x 2 | 72 → 96 | max pool 1x2 (stride 1, 2) |
//! | 15 – 18 | (1x3 same, 3x1 valid) x 2 | 96 | max pool 2x2 |
//! | 19 | 3x1 valid, no activation | 96 | |
//!
//! Shapes (time x mel x channels): 74x32x24, 72x32x24, 36x16x24, 32x16x48, 32x8x48,
//! 28x8x72, 14x4x72, 10x4x96, 10x2x96, 6x2x96, 3x1x96, 1x1x96.
//!
//! Weights: `EmbeddingNetWeights::load` (feature `alloc`, in `load`), tensor names in
//! [`names`](super::names).

use core::borrow::BorrowMut;

use neon_macros::neon_plan;
use neon_runtime::{Backend, Parallel, RunOptions, Serial};

use super::stream::EmbeddingStage;

neon_plan! {
    /// openWakeWord's speech-embedding CNN: `[1, 76, 32]` mel features → `[96, 1, 1]`.
    pub plan EmbeddingNet {
        weight conv0: f32[24, 1, 3, 3];
        weight conv0_b: f32[24];
        weight conv1: f32[24, 24, 1, 3];
        weight conv1_b: f32[24];
        weight conv2: f32[24, 24, 3, 1];
        weight conv2_b: f32[24];
        weight conv3: f32[48, 24, 1, 3];
        weight conv3_b: f32[48];
        weight conv4: f32[48, 48, 3, 1];
        weight conv4_b: f32[48];
        weight conv5: f32[48, 48, 1, 3];
        weight conv5_b: f32[48];
        weight conv6: f32[48, 48, 3, 1];
        weight conv6_b: f32[48];
        weight conv7: f32[72, 48, 1, 3];
        weight conv7_b: f32[72];
        weight conv8: f32[72, 72, 3, 1];
        weight conv8_b: f32[72];
        weight conv9: f32[72, 72, 1, 3];
        weight conv9_b: f32[72];
        weight conv10: f32[72, 72, 3, 1];
        weight conv10_b: f32[72];
        weight conv11: f32[96, 72, 1, 3];
        weight conv11_b: f32[96];
        weight conv12: f32[96, 96, 3, 1];
        weight conv12_b: f32[96];
        weight conv13: f32[96, 96, 1, 3];
        weight conv13_b: f32[96];
        weight conv14: f32[96, 96, 3, 1];
        weight conv14_b: f32[96];
        weight conv15: f32[96, 96, 1, 3];
        weight conv15_b: f32[96];
        weight conv16: f32[96, 96, 3, 1];
        weight conv16_b: f32[96];
        weight conv17: f32[96, 96, 1, 3];
        weight conv17_b: f32[96];
        weight conv18: f32[96, 96, 3, 1];
        weight conv18_b: f32[96];
        weight conv19: f32[96, 96, 3, 1];
        weight conv19_b: f32[96];
        input x: [1, 76, 32];
        output y: [96, 1, 1];

        let h = conv2d(x, conv0, conv0_b, padding = (0, 0, 1, 1), leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv1, conv1_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv2, conv2_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (2, 2), stride = (2, 2));
        let h = conv2d(h, conv3, conv3_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv4, conv4_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv5, conv5_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv6, conv6_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (1, 2), stride = (1, 2));
        let h = conv2d(h, conv7, conv7_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv8, conv8_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv9, conv9_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv10, conv10_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (2, 2), stride = (2, 2));
        let h = conv2d(h, conv11, conv11_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv12, conv12_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv13, conv13_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv14, conv14_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (1, 2), stride = (1, 2));
        let h = conv2d(h, conv15, conv15_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv16, conv16_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv17, conv17_b, padding = same, leaky_relu = 0.2, clamp_min = -0.4);
        let h = conv2d(h, conv18, conv18_b, leaky_relu = 0.2, clamp_min = -0.4);
        let h = max_pool2d(h, kernel = (2, 2), stride = (2, 2));
        y = conv2d(h, conv19, conv19_b);
    }
}

/// The plan as the stream's [`EmbeddingStage`]: prepared weights, a workspace and the
/// backend `B`.
///
/// `W` owns or borrows the workspace ([`EmbeddingNetWorkspace`], [`EmbeddingNet::WORKSPACE_BYTES`]
/// bytes): a `Box` on hosts, a `&'static mut` from a `static` on bare metal.
pub struct Embedding<B, S: AsRef<[f32]>, W> {
    weights: EmbeddingNetWeights<S>,
    workspace: W,
    backend: core::marker::PhantomData<B>,
}

impl<B: Backend, S: AsRef<[f32]>, W: BorrowMut<EmbeddingNetWorkspace>> Embedding<B, S, W> {
    /// The network with its weights and workspace.
    pub fn new(weights: EmbeddingNetWeights<S>, workspace: W) -> Self {
        Self { weights, workspace, backend: core::marker::PhantomData }
    }
}

impl<B: Backend, S: AsRef<[f32]>, W: BorrowMut<EmbeddingNetWorkspace>> EmbeddingStage
    for Embedding<B, S, W>
{
    fn embed(&mut self, window: &[f32], out: &mut [f32]) -> Result<(), crate::Error> {
        self.embed_in(&Serial, window, out)
    }

    fn embed_in(
        &mut self,
        par: &dyn Parallel,
        window: &[f32],
        out: &mut [f32],
    ) -> Result<(), crate::Error> {
        let options = RunOptions::new().with_parallel(par);
        let ws = self.workspace.borrow_mut();
        EmbeddingNet::run_with::<B, S>(&self.weights, window, out, ws, options)?;
        Ok(())
    }
}

/// A zeroed workspace on the heap, without building the (large) value on the stack first.
#[cfg(feature = "alloc")]
pub fn boxed_workspace() -> alloc::boxed::Box<EmbeddingNetWorkspace> {
    // SAFETY: the workspace is a plain array of f32 (in an align(16) wrapper); all-zero
    // bytes are a valid value of it (0.0f32 in every element).
    unsafe { neon_runtime::workspace::boxed_zeroed() }
}
