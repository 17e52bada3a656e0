use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        y = conv1d(x, w, strides = 2);
    }
}

fn main() {}
