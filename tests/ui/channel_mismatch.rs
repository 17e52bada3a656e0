use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight w: f32[16, 64, 1];
        input x: [32, frames];
        output y: [16, frames];
        y = conv1d(x, w);
    }
}

fn main() {}
