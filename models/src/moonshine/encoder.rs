//! Moonshine's encoder: a convolutional stem over raw audio, then eight pre-norm transformer
//! layers with rotary self-attention, then a final LayerNorm.
//!
//! Shapes (base, facts checked by `tools/moonshine/`): 16 kHz samples `[1, N]` (values in
//! `[-1, 1]`, no normalisation) → stem → frame-major `[T, 416]` with one frame per 384
//! samples: `T1 = (N - 127) / 64 + 1`, `T2 = (T1 - 7) / 3 + 1`, `T = (T2 - 3) / 2 + 1`
//! (floor divisions; no padding anywhere). `N >= 895` gives `T >= 1`.

use neon_macros::neon_plan;

neon_plan! {
    /// The convolutional stem: conv1 (1 → 416, kernel 127, stride 64, no bias) → tanh →
    /// GroupNorm (one group over all channels and frames, eps 1e-5, affine) → conv2
    /// (416 → 832, kernel 7, stride 3) → GELU (erf) → conv3 (832 → 416, kernel 3, stride 2)
    /// → GELU. Input `[1, samples]`, output frame-major `[frames, 416]`.
    pub plan EncoderStem {
        dim samples in 895..=480000;
        weight conv1: f32[416, 1, 127];
        weight norm: f32[416];
        weight norm_b: f32[416];
        weight conv2: f32[832, 416, 7];
        weight conv2_b: f32[832];
        weight conv3: f32[416, 832, 3];
        weight conv3_b: f32[416];
        input audio: [1, samples];
        output y: [(((samples - 127) / 64 + 1 - 7) / 3 + 1 - 3) / 2 + 1, 416];

        let h = conv1d(audio, conv1, stride = 64);
        let h = tanh(h);
        let h = group_norm(h, norm, norm_b, groups = 1);
        let h = conv1d(h, conv2, conv2_b, stride = 3);
        let h = gelu(h);
        let h = conv1d(h, conv3, conv3_b, stride = 2, output = frame_major);
        y = gelu(h);
    }
}

neon_plan! {
    /// One encoder layer over frame-major `[frames, 416]`: `x += SelfAttn(LN x)`,
    /// `x += MLP(LN x)`. Self-attention is bidirectional over all frames, 8 heads of 52,
    /// no projection biases, rotary on the first 32 dims of each head (interleaved pairs,
    /// theta 10000, positions 0..frames). The MLP is fc1 416 → 1664 (+bias), GELU (erf),
    /// fc2 1664 → 416 (+bias). LayerNorms have no bias (eps 1e-5).
    pub plan EncoderLayer {
        dim frames in 1..=1248;
        weight attn_norm: f32[416];
        weight q: i8[416, 416];
        weight k: i8[416, 416];
        weight v: i8[416, 416];
        weight o: i8[416, 416];
        weight mlp_norm: f32[416];
        weight fc1: i8[1664, 416];
        weight fc1_b: f32[1664];
        weight fc2: i8[416, 1664];
        weight fc2_b: f32[416];
        input x: [frames, 416];
        output y: [frames, 416];

        let h = layer_norm(x, attn_norm, layout = frame_major);
        let qh = linear(h, q);
        let kh = linear(h, k);
        let vh = linear(h, v);
        let qh = rotary(qh, heads = 8, dims = 32, theta = 10000);
        let kh = rotary(kh, heads = 8, dims = 32, theta = 10000);
        let a = attention(qh, kh, vh, heads = 8);
        let a = linear(a, o);
        let x1 = add(a, x);
        let h = layer_norm(x1, mlp_norm, layout = frame_major);
        let h = linear(h, fc1, fc1_b);
        let h = gelu(h);
        let h = linear(h, fc2, fc2_b);
        y = add(h, x1);
    }
}

neon_plan! {
    /// The encoder's final LayerNorm (no bias, eps 1e-5) over frame-major `[frames, 416]`.
    pub plan EncoderNorm {
        dim frames in 1..=1248;
        weight norm: f32[416];
        input x: [frames, 416];
        output y: [frames, 416];

        y = layer_norm(x, norm, layout = frame_major);
    }
}
