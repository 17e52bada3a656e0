use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[16, 64, 1];
        input x: [32, 10];
        output y: [16, 10];
        y = conv1d(x, w);
    }
}

fn main() {}
