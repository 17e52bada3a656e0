use neon_macros::neon_plan;

// One weight: neither form.
neon_plan! {
    pub plan OneWeight {
        weight g: f32[8];
        input x: [8, 4];
        output y: [8, 4];
        y = scale_shift(x, g);
    }
}

// Weights and a scalar option: two forms at once.
neon_plan! {
    pub plan Both {
        weight g: f32[8];
        weight b: f32[8];
        input x: [8, 4];
        output y: [8, 4];
        y = scale_shift(x, g, b, scale = 2.0);
    }
}

// Neither weights nor options.
neon_plan! {
    pub plan Nothing {
        input x: [8, 4];
        output y: [8, 4];
        y = scale_shift(x);
    }
}

// A shift vector of the wrong length.
neon_plan! {
    pub plan ShortShift {
        weight g: f32[8];
        weight b: f32[7];
        input x: [8, 4];
        output y: [8, 4];
        y = scale_shift(x, g, b);
    }
}

// Weights of 6 channels for an 8-channel input: the error names the weight.
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
