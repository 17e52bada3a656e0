use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w1: f32[8, 4, 3, 3];
        weight w2: f32[8, 4, 3, 3];
        weight w3: f32[8, 4, 1, 1];
        weight w4: f32[8, 4, 3];
        input x: [4, 10, 16];
        output y: [4, 10, 16];
        let a = conv2d(x, w1, padding = (1, 1));
        let b = conv2d(x, w2, stride = 2, padding = same);
        let c = conv2d(x, w3, leaky_relu = 1.5);
        let d = conv2d(x, w4);
        let e = max_pool2d(x, stride = 2);
        y = clamp_min(x);
    }
}

fn main() {}
