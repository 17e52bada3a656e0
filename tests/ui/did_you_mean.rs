//! A misspelt operator, option, keyword value, weight, storage or scalar gives one error
//! with the closest valid name (and, where the names are few, the list of them).

use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

fixed_plan! {
    Operator;
    weight w: f32[8, 1, 1];
    y = depthwise_conv(x, w);
}

conv_plan! {
    OptionName;
    y = conv1d(x, w, paddng = 1);
}

norm_plan! {
    LayoutValue;
    input x: [frames, 8];
    output y: [frames, 8];
    y = layer_norm(x, g, layout = framemajor);
}

norm_plan! {
    Eps;
    input x: [8, frames];
    output y: [8, frames];
    y = layer_norm(x, g, esp = 1e-6);
}

fixed_plan! {
    WeightName;
    weight w_typo: f32[8, 8, 1];
    y = conv1d(x, w_tpyo);
}

fixed_plan! {
    Storage;
    weight w: f23[8, 8, 1];
    y = conv1d(x, w);
}

neon_plan! {
    pub plan Scalar {
        dim frames in 1..=16;
        scalar pos: usize;
        input x: [4, frames];
        state cache: [4, 16];
        output y: [4, 16];
        cache = write_frames(cache, x, at = pso);
        y = relu(cache);
    }
}

neon_plan! {
    pub plan Padding {
        weight w: f32[4, 4, 3, 3];
        input x: [4, 8, 8];
        output y: [4, 8, 8];
        y = conv2d(x, w, padding = sam);
    }
}

conv_plan! {
    Flag;
    y = conv1d(x, w, casual);
}

neon_plan! {
    pub plan FlagAfterTensors {
        input q: [4, 8];
        output y: [4, 8];
        y = attention(q, q, q, casual, heads = 2);
    }
}

fn main() {}
