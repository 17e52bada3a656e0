use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        input x: [frames, 64];
        output y: [frames, 64];
        output z: [frames, 64];
        y = rotary(x, heads = 2, dims = 31);
        z = rotary(x, heads = 16, dims = 32, half_split);
    }
}

fn main() {}
