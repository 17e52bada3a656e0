//! The sanoTTS nano decoder network (`sanotts.md`): acoustic hidden states `[192, frames]`
//! → per-frame iSTFT coefficients, frame-major `[frames, 514]` (257 log-magnitudes, then
//! 257 phases in radians). The iSTFT head ([`ISTFT`]) turns those into `128 * frames`
//! samples at 16 kHz.
//!
//! Layers, channel-first `[128, frames]` between them:
//! 1. input conv `[128, 192, 7]`, padding 3: the acoustic model's bias-free projection
//!    `[80, 192]` folded into the decoder's `conv_embed` `[128, 80, 7]` at load time, and
//!    the speaker embedding folded into its bias ([`super::load`]);
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
//! [`super::vocoder::Vocoder`] relies on). That is why the head is a channel-first conv
//! followed by a transpose rather than a conv written frame-major: the frame-major GEMM
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
        weight embed: f32[128, 192, 7];
        weight embed_b: f32[128];
        weight res1: f32[128, 128, 3];
        weight res1_b: f32[128];
        weight res2: f32[128, 128, 3];
        weight res2_b: f32[128];
        weight norm0: f32[128];
        weight norm0_b: f32[128];
        weight dw0: f32[128, 1, 7];
        weight dw0_b: f32[128];
        weight norm_0: f32[128];
        weight norm_0_b: f32[128];
        weight up0: f32[384, 128, 1];
        weight up0_b: f32[384];
        weight down0: f32[128, 384, 1];
        weight down0_b: f32[128];
        weight gamma0: f32[128];
        weight dw1: f32[128, 1, 7];
        weight dw1_b: f32[128];
        weight norm_1: f32[128];
        weight norm_1_b: f32[128];
        weight up1: f32[384, 128, 1];
        weight up1_b: f32[384];
        weight down1: f32[128, 384, 1];
        weight down1_b: f32[128];
        weight gamma1: f32[128];
        weight dw2: f32[128, 1, 7];
        weight dw2_b: f32[128];
        weight norm_2: f32[128];
        weight norm_2_b: f32[128];
        weight up2: f32[384, 128, 1];
        weight up2_b: f32[384];
        weight down2: f32[128, 384, 1];
        weight down2_b: f32[128];
        weight gamma2: f32[128];
        weight dw3: f32[128, 1, 7];
        weight dw3_b: f32[128];
        weight norm_3: f32[128];
        weight norm_3_b: f32[128];
        weight up3: f32[384, 128, 1];
        weight up3_b: f32[384];
        weight down3: f32[128, 384, 1];
        weight down3_b: f32[128];
        weight gamma3: f32[128];
        weight norm1: f32[128];
        weight norm1_b: f32[128];
        weight head: f32[514, 128, 1];
        weight head_b: f32[514];
        input hidden: [192, frames];
        output y: [frames, 514];

        // Input conv (projection and speaker folded in).
        let x = conv1d(hidden, embed, embed_b, padding = (3, 3));
        // ResidualConv.
        let r = leaky_relu(x, slope = 0.1);
        let r = conv1d(r, res1, res1_b, padding = (1, 1));
        let r = leaky_relu(r, slope = 0.1);
        let r = conv1d(r, res2, res2_b, dilation = 3, padding = (3, 3));
        let x = add(r, x);
        let x = layer_norm(x, norm0, norm0_b, eps = 1e-6);
        // ConvNeXt 0.
        let c = depthwise_conv1d(x, dw0, dw0_b, padding = (3, 3));
        let c = layer_norm(c, norm_0, norm_0_b, eps = 1e-6);
        let c = conv1d(c, up0, up0_b);
        let c = gelu(c);
        let c = conv1d(c, down0, down0_b);
        let c = layer_scale(c, gamma0);
        let x = add(c, x);
        // ConvNeXt 1.
        let c = depthwise_conv1d(x, dw1, dw1_b, padding = (3, 3));
        let c = layer_norm(c, norm_1, norm_1_b, eps = 1e-6);
        let c = conv1d(c, up1, up1_b);
        let c = gelu(c);
        let c = conv1d(c, down1, down1_b);
        let c = layer_scale(c, gamma1);
        let x = add(c, x);
        // ConvNeXt 2.
        let c = depthwise_conv1d(x, dw2, dw2_b, padding = (3, 3));
        let c = layer_norm(c, norm_2, norm_2_b, eps = 1e-6);
        let c = conv1d(c, up2, up2_b);
        let c = gelu(c);
        let c = conv1d(c, down2, down2_b);
        let c = layer_scale(c, gamma2);
        let x = add(c, x);
        // ConvNeXt 3.
        let c = depthwise_conv1d(x, dw3, dw3_b, padding = (3, 3));
        let c = layer_norm(c, norm_3, norm_3_b, eps = 1e-6);
        let c = conv1d(c, up3, up3_b);
        let c = gelu(c);
        let c = conv1d(c, down3, down3_b);
        let c = layer_scale(c, gamma3);
        let x = add(c, x);
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
