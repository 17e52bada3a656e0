use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w1: f32[24, 1, 3, 3];
        weight w2: f32[48, 32, 1, 3];
        input x: [1, 10, 32];
        output y: [48, 8, 32];
        let h = conv2d(x, w1, padding = (0, 0, 1, 1));
        y = conv2d(h, w2, padding = same);
    }
}

fn main() {}
