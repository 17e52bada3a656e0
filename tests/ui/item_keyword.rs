//! A misspelt item keyword is one syntax error that suggests the keyword and lists the
//! items (the checks do not run on a block with a syntax error); a call without a target
//! says how to write one.

use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        wieght w1: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        y = conv1d(x, w1);
    }
}

neon_plan! {
    pub plan Q {
        input x: [8, 10];
        output y: [8, 10];
        relu(x);
        y = relu(x);
    }
}

fn main() {}
