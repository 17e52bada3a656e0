//! A size a weight's declaration fixes (input channels, input features, channels) that the
//! input does not have is reported at the weight's declaration, naming the weight and the
//! input with its shape.

use neon_macros::neon_plan;

neon_plan! {
    pub plan Conv {
        dim frames in 3..=100;
        weight w1: f32[64, 32, 3];
        input x: [40, frames];
        output y: [64, frames - 2];
        y = conv1d(x, w1);
    }
}

neon_plan! {
    pub plan Linear {
        weight w: f32[12, 32];
        input x: [1, 64];
        output y: [1, 12];
        y = linear(x, w);
    }
}

neon_plan! {
    pub plan Norm {
        dim frames in 1..=100;
        weight gamma: f32[63];
        input x: [64, frames];
        output y: [64, frames];
        y = layer_norm(x, gamma);
    }
}

neon_plan! {
    pub plan Depthwise {
        dim frames in 3..=100;
        weight dw: f32[16, 1, 3];
        input x: [24, frames];
        output y: [16, frames - 2];
        y = depthwise_conv1d(x, dw);
    }
}

neon_plan! {
    pub plan Bias {
        dim frames in 1..=100;
        weight b: f32[8];
        input x: [frames, 4];
        output y: [frames, 4];
        y = bias_add(x, b, layout = frame_major);
    }
}

fn main() {}
