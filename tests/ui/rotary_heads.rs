use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        input x: [frames, 415];
        output y: [frames, 415];
        y = rotary(x, heads = 8, dims = 32);
    }
}

fn main() {}
