use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 4..=100;
        weight w: f32[8, 8, 3];
        input x: [8, frames];
        output y: [8, frames];
        y = conv1d(x, w);
    }
}

fn main() {}
