use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

// One mistake per plan: each shows exactly one error. The first two name `x`'s shape, so
// their plans are written out.

// The element count changes.
neon_plan! {
    pub plan Fewer {
        input x: [64, 1];
        output y: [32];
        y = reshape(x, to = [32]);
    }
}

// A symbolic input to a constant shape: 16 * frames elements are not always 64.
neon_plan! {
    pub plan Symbolic {
        dim frames in 1..=4;
        input x: [16, frames];
        output y: [1, 64];
        y = reshape(x, to = [1, 64], layout = frame_major);
    }
}

// A zero dimension.
fixed_plan! {
    Zero;
    y = reshape(x, to = [0]);
}

fn main() {}
