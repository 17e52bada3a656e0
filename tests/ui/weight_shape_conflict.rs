#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

pointwise_plan! {
    P;
    weight b: f32[7];
    y = conv1d(x, w, b);
}

fn main() {}
