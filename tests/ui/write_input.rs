use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [8, 10];
        output y: [8, 10];
        x = relu(x);
        y = relu(x);
    }
}

fn main() {}
