use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weights = OtherWeights;
        input x: [8, 10];
        output y: [8, 10];
        y = relu(x);
    }
}

fn main() {}
