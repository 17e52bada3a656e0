//! The rules of names: a use of an undefined value, an unknown weight, an input redefined, a value
//! computed but never used, a weight used by two steps.

use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

pointwise_plan! {
    A;
    y = conv1d(h, w);
}

pointwise_plan! {
    B;
    y = conv1d(x, w_typo);
}

neon_plan! {
    pub plan C {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        let x = conv1d(x, w);
        y = relu(x);
    }
}

pointwise_plan! {
    D;
    let h = conv1d(x, w);
    y = relu(x);
}

pointwise_plan! {
    E;
    let h = conv1d(x, w);
    y = conv1d(h, w, stride = 1, dilation = 2);
}

fn main() {}
