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

use neon_runtime::Backend;

use super::stream::embedding_stage;

/// Writes a `neon_plan!` of the CNN. The whole-window plan ([`EmbeddingNet`]) and its
/// streaming twin ([`EmbeddingStep`](super::incremental::EmbeddingStep), which runs on the
/// same [`EmbeddingNetWeights`]) share its 40 weights and its layer table, stated here once.
///
/// `embedding_plan!(whole | step, <doc> pub plan Name { <declarations> })`: the weights,
/// then the caller's declarations (input `x`, output `y`, `weights = ..;`), then the
/// layers. The table lists every pair of convs (a 1x3 "same" over mel, then a 3x1 valid
/// over time; `conv bias`) with the state the step keeps for the second conv's 3 rows (the
/// last conv has one too): the 2 rows before the new ones of that conv's input,
/// `[channels, 2, width]`. `whole` ignores the states; `step` declares them (in table
/// order), prepends each to its conv's input (`concat_frames`) and keeps that input's last
/// 2 rows in it (`last_frames`). Every conv but the last has LeakyReLU (slope 0.2) and
/// `max(x, -0.4)`.
macro_rules! embedding_plan {
    ($mode:ident, $(#[$attr:meta])* pub plan $name:ident { $($decl:tt)* }) => {
        embedding_plan! {@layers $mode [$(#[$attr])* pub plan $name] [$($decl)*] []
            push[let h = conv2d(x, conv0, conv0_b, padding = (0, 0, 1, 1), leaky_relu = 0.2, clamp_min = -0.4);]
            pair(conv1 conv1_b, conv2 conv2_b, s2: [24, 2, 32]) pool(2, 2)
            pair(conv3 conv3_b, conv4 conv4_b, s4: [48, 2, 16]) pair(conv5 conv5_b, conv6 conv6_b, s6: [48, 2, 16])
            pool(1, 2) pair(conv7 conv7_b, conv8 conv8_b, s8: [72, 2, 8]) pair(conv9 conv9_b, conv10 conv10_b, s10: [72, 2, 8])
            pool(2, 2) pair(conv11 conv11_b, conv12 conv12_b, s12: [96, 2, 4]) pair(conv13 conv13_b, conv14 conv14_b, s14: [96, 2, 4])
            pool(1, 2) pair(conv15 conv15_b, conv16 conv16_b, s16: [96, 2, 2]) pair(conv17 conv17_b, conv18 conv18_b, s18: [96, 2, 2])
            pool(2, 2) state(s19: [96, 2, 1]) push[y = conv2d(h, conv19, conv19_b);]
        }
    };
    // Statements in order, appended to the body.
    (@layers $mode:ident $head:tt $decl:tt [$($body:tt)*] push[$($stmt:tt)*] $($rest:tt)*) => {
        embedding_plan! {@layers $mode $head $decl [$($body)* $($stmt)*] $($rest)*}
    };
    (@layers $mode:ident $head:tt $decl:tt $body:tt pair($a:ident $ab:ident, $b:ident $bb:ident, $s:ident: $shape:tt) $($rest:tt)*) => {
        embedding_plan! {@layers $mode $head $decl $body
            push[let h = conv2d(h, $a, $ab, padding = same, leaky_relu = 0.2, clamp_min = -0.4);]
            state($s: $shape)
            push[let h = conv2d(h, $b, $bb, leaky_relu = 0.2, clamp_min = -0.4);]
            $($rest)*}
    };
    (@layers $mode:ident $head:tt $decl:tt $body:tt pool($kh:tt, $kw:tt) $($rest:tt)*) => {
        embedding_plan! {@layers $mode $head $decl $body
            push[let h = max_pool2d(h, kernel = ($kh, $kw), stride = ($kh, $kw));] $($rest)*}
    };
    (@layers whole $head:tt $decl:tt $body:tt state($s:ident: $shape:tt) $($rest:tt)*) => {
        embedding_plan! {@layers whole $head $decl $body $($rest)*}
    };
    (@layers step $head:tt [$($decl:tt)*] $body:tt state($s:ident: $shape:tt) $($rest:tt)*) => {
        embedding_plan! {@layers step $head [$($decl)* state $s: $shape;] $body
            push[let h = concat_frames($s, h); $s = last_frames(h, frames = 2);] $($rest)*}
    };
    (@layers $mode:ident [$($head:tt)*] [$($decl:tt)*] [$($body:tt)*]) => {
        ::neon_macros::neon_plan! {
            $($head)* {
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
                $($decl)*

                $($body)*
            }
        }
    };
}
pub(super) use embedding_plan;

embedding_plan! {
    whole,
    /// openWakeWord's speech-embedding CNN: `[1, 76, 32]` mel features → `[96, 1, 1]`.
    pub plan EmbeddingNet {
        input x: [1, 76, 32];
        output y: [96, 1, 1];
    }
}

/// The plan as the stream's [`EmbeddingStage`](super::stream::EmbeddingStage): prepared
/// weights, a workspace and the backend `B`.
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

embedding_stage!(
    [B: Backend, S: AsRef<[f32]>, W: BorrowMut<EmbeddingNetWorkspace>] Embedding<B, S, W>,
    |this, window, out, options| {
        let ws = this.workspace.borrow_mut();
        EmbeddingNet::run_with::<B, S>(&this.weights, window, out, ws, options)?;
        Ok(())
    }
);

/// A zeroed workspace on the heap, without building the (large) value on the stack first.
#[cfg(feature = "alloc")]
pub fn boxed_workspace() -> alloc::boxed::Box<EmbeddingNetWorkspace> {
    // SAFETY: the workspace is a plain array of f32 (in an align(16) wrapper); all-zero
    // bytes are a valid value of it (0.0f32 in every element).
    unsafe { neon_runtime::workspace::boxed_zeroed() }
}
