use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

// One mistake per plan: each shows exactly one error.

// One weight: neither form.
fixed_plan! {
    OneWeight;
    weight g: f32[8];
    y = scale_shift(x, g);
}

// Weights and a scalar option: two forms at once.
fixed_plan! {
    Both;
    weight g: f32[8];
    weight b: f32[8];
    y = scale_shift(x, g, b, scale = 2.0);
}

// Neither weights nor options.
fixed_plan! {
    Nothing;
    y = scale_shift(x);
}

// A shift vector of the wrong length.
fixed_plan! {
    ShortShift;
    weight g: f32[8];
    weight b: f32[7];
    y = scale_shift(x, g, b);
}

// Weights of 6 channels for an 8-channel input: the error names the weight (and `x`, so the
// plan is written out).
neon_plan! {
    pub plan WrongChannels {
        weight g: f32[6];
        weight b: f32[6];
        input x: [8, 4];
        output y: [8, 4];
        y = scale_shift(x, g, b);
    }
}

fn main() {}
