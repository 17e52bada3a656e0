//! One mistake, one error: a call whose options failed defines its output poisoned (the
//! statements reading it and the declared output report nothing more), and a dim with an
//! empty range is reported once, not at each use.

use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

conv_plan! {
    MisspeltOption;
    let h = conv1d(x, w, paddng = 1);
    y = relu(h);
}

neon_plan! {
    pub plan BadLayout {
        dim frames in 1..=100;
        input a: [frames, 8];
        input b: [frames, 8];
        output y: [2 * frames, 8];
        let h = concat_frames(a, b, layout = framemajor);
        y = relu(h);
    }
}

neon_plan! {
    pub plan EmptyRange {
        dim frames in 10..=5;
        input x: [8, frames];
        output y: [8, frames];
        y = relu(x);
    }
}

fn main() {}
