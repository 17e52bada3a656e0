//! The keyword-spotting network as one `neon_plan!` block: 40 log-mel bands over `frames`
//! 10 ms frames -> 12 class probabilities. Shared by the example program (`src/main.rs`)
//! and the workspace test that checks it against an f64 forward pass
//! (`tests/tests/kws_example.rs`).

use neon_macros::neon_plan;

neon_plan! {
    /// conv1d k=3 (40 -> 64) -> folded BatchNorm -> ReLU -> depthwise k=3 -> ReLU
    /// -> pointwise 64 -> 64 -> ReLU -> max pool k=3 s=2 -> mean over frames -> linear
    /// 64 -> 12 -> softmax. `[40, frames]` (channel-first) -> `[1, 12]`.
    pub plan Kws {
        dim frames in 16..=100;
        weight conv_w: f32[64, 40, 3];
        weight bn_scale: f32[64];
        weight bn_shift: f32[64];
        weight dw_w: f32[64, 1, 3];
        weight dw_b: f32[64];
        weight pw_w: f32[64, 64, 1];
        weight pw_b: f32[64];
        weight fc_w: f32[12, 64];
        weight fc_b: f32[12];
        input x: [40, frames];
        output y: [1, 12];

        let h = conv1d(x, conv_w, padding = 1);
        let h = scale_shift(h, bn_scale, bn_shift);
        let h = relu(h);
        let h = depthwise_conv1d(h, dw_w, dw_b, padding = 1);
        let h = relu(h);
        let h = conv1d(h, pw_w, pw_b);
        let h = relu(h);
        let h = max_pool1d(h, kernel = 3, stride = 2, padding = 1);
        let h = global_avg_pool(h);
        let h = reshape(h, to = [1, 64], layout = frame_major);
        let h = linear(h, fc_w, fc_b);
        y = softmax(h);
    }
}
