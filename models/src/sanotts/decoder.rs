//! The sanoTTS nano decoder network (`sanotts.md`): acoustic hidden states `[192, frames]`
//! → per-frame iSTFT coefficients, frame-major `[frames, 514]` (257 log-magnitudes, then
//! 257 phases in radians). The iSTFT head ([`ISTFT`]) turns those into `128 * frames`
//! samples at 16 kHz.
//!
//! Layers, channel-first `[128, frames]` between them:
//! 1. the acoustic model's bias-free projection `[80, 192]` (a `[80, 192, 1]` conv), then the
//!    decoder's input conv `conv_embed` `[128, 80, 7]`, padding 3, with the speaker
//!    embedding folded into its bias at load time ([`super::load`]). Unfolded on purpose:
//!    the two steps cost 80 x 192 + 128 x 80 x 7 = 87,040 multiply-adds per frame, the
//!    projection folded into the conv (a `[128, 192, 7]` conv) 172,032;
//! 2. ResidualConv: `x + conv2(lrelu(conv1(lrelu(x))))`, leaky ReLU slope 0.1, both convs
//!    `[128, 128, 3]`, dilation 1 (padding 1) then 3 (padding 3);
//! 3. LayerNorm over channels (eps 1e-6, affine);
//! 4. four ConvNeXt blocks: depthwise conv k = 7 (padding 3) → LayerNorm (eps 1e-6) →
//!    pointwise 128 → 384 → GELU (erf) → pointwise 384 → 128 → layer scale → + skip;
//! 5. final LayerNorm (eps 1e-6) and the linear head 128 → 514 per frame (a `[514, 128, 1]`
//!    conv), transposed to frame-major.
//!
//! Every conv pads with zeros ("same" output length), so an output frame depends on the
//! input frames within [`RECEPTIVE_FIELD`] on each side: 3 (input conv) + 1 + 3 (the
//! residual convs) + 4 × 3 (the depthwise convs) = 19.
//!
//! Every step computes an output frame with the same operations whatever the number of
//! frames and the frame's place among them, so a window of an utterance gives the bits of
//! the whole utterance's run for the frames it holds with full context (what the streaming
//! [`super::vocoder::Vocoder`] relies on). That is why the projection is a channel-first conv, and
//! the head one followed by a transpose rather than a conv written frame-major: the frame-major GEMM
//! (packed weights as `B`, frames as rows) sums the rows of a partial tile in another order
//! on x86 (several accumulator sets over `k`), so a frame's bits would depend on the
//! window's length.

use neon_macros::neon_plan;
use neon_runtime::ops::istft::IstftGeometry;

neon_plan! {
    /// The decoder network: hidden states `[192, frames]` channel-first → iSTFT frames
    /// `[frames, 514]` frame-major (per frame 257 log-magnitudes, then 257 phases).
    pub plan DecoderNet {
        workers 64;
        dim frames in 1..=2000;
        weight proj: f32[80, 192, 1];
        weight embed: f32[128, 80, 7];
        weight embed_b: f32[128];
        weight res: residual_conv[128, 3];
        weight norm0: f32[128];
        weight norm0_b: f32[128];
        weight cn0: convnext[128, 384, 7];
        weight cn1: convnext[128, 384, 7];
        weight cn2: convnext[128, 384, 7];
        weight cn3: convnext[128, 384, 7];
        weight norm1: f32[128];
        weight norm1_b: f32[128];
        weight head: f32[514, 128, 1];
        weight head_b: f32[514];
        input hidden: [192, frames];
        output y: [frames, 514];

        // The projection, then the input conv (speaker folded into its bias).
        let m = conv1d(hidden, proj);
        let x = conv1d(m, embed, embed_b, padding = (3, 3));
        let x = residual_conv(x, res, dilations = (1, 3), slope = 0.1);
        let x = layer_norm(x, norm0, norm0_b, eps = 1e-6);
        let x = convnext(x, cn0, eps = 1e-6);
        let x = convnext(x, cn1, eps = 1e-6);
        let x = convnext(x, cn2, eps = 1e-6);
        let x = convnext(x, cn3, eps = 1e-6);
        // Final norm and the linear head, per frame, channel-first then transposed (see
        // the module docs: every output frame the same operations in any window).
        let x = layer_norm(x, norm1, norm1_b, eps = 1e-6);
        let h = conv1d(x, head, head_b);
        y = transpose(h, to = frame_major);
    }
}

/// Input frames on each side that one output frame of [`DecoderNet`] depends on: 3 (input
/// conv, k = 7) + 1 (residual conv 1, k = 3) + 3 (residual conv 2, k = 3, dilation 3) +
/// 4 × 3 (the ConvNeXt depthwise convs, k = 7).
pub const RECEPTIVE_FIELD: usize = 3 + 1 + 3 + 4 * 3;

/// The iSTFT head (`sanotts.md`): n_fft 512, hop 128, log-magnitudes capped at `ln 100`
/// (`4.605_170_2`, ln 100 rounded to f32: magnitudes at most 100), with a periodic Hann
/// window of 512.
pub const ISTFT: IstftGeometry = IstftGeometry { n_fft: 512, hop: 128, max_log: 4.605_170_2 };
