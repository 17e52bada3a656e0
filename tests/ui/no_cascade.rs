//! One mistake, one error: a call whose options failed defines its output poisoned (the
//! statements reading it and the declared output report nothing more), and a dim with an
//! empty range is reported once, not at each use. Two mistakes are still two errors: a
//! statement silenced by a poisoned argument reports its unknown operator or option.

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

pool_plan! {
    TwoMistakes;
    output y: [1, 8];
    let h = avg_pool1d(x, kernel = 3, padding = 2);
    let h = global_avgpool(h);
    y = reshape(h, to = [1, 8], layuot = frame_major);
}

fn main() {}
