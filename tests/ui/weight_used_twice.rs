use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[8, 8, 1];
        input x: [8, 10];
        output y: [8, 10];
        let h = conv1d(x, w);
        y = conv1d(h, w, stride = 1, dilation = 2);
    }
}

fn main() {}
