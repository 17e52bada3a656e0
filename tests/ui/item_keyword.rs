//! A misspelt item keyword is one syntax error that suggests the keyword and lists the
//! items (the checks do not run on a block with a syntax error); a call without a target
//! says how to write one.

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

fixed_plan! {
    P;
    wieght w1: f32[8, 8, 1];
    y = conv1d(x, w1);
}

fixed_plan! {
    Q;
    relu(x);
    y = relu(x);
}

fn main() {}
