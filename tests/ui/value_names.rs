//! The rules of names: a use of an undefined value, an unknown weight, an input redefined, a value
//! computed but never used, a weight used by two steps.

use neon_macros::neon_plan;

neon_plan! {
    pub plan A {
        dim frames in 1..=100;
        weight w: f32[8, 8, 1];
        input x: [8, frames];
        output y: [8, frames];
        y = conv1d(h, w);
    }
}

neon_plan! {
    pub plan B {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        y = conv1d(x, w_typo);
    }
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

neon_plan! {
    pub plan D {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        let h = conv1d(x, w);
        y = relu(x);
    }
}

neon_plan! {
    pub plan E {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        let h = conv1d(x, w);
        y = conv1d(h, w, stride = 1, dilation = 2);
    }
}

fn main() {}
