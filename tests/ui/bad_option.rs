#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

pointwise_plan! {
    P;
    y = conv1d(x, w, strides = 2);
}

fn main() {}
