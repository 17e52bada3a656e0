use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight w: f32[8, 8, 1];
        input x: [8, frames];
        output y: [8, frames];
        let h = conv1d(x, w);
        y = conv1d(h, w, stride = 1, dilation = 2);
    }
}

fn main() {}
