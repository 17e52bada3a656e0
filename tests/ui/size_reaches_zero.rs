use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight w: f32[8, 8, 7];
        input x: [8, frames];
        output y: [8, frames - 6];
        y = conv1d(x, w);
    }
}

fn main() {}
