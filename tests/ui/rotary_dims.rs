use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [10, 64];
        output y: [10, 64];
        output z: [10, 64];
        y = rotary(x, heads = 2, dims = 31);
        z = rotary(x, heads = 16, dims = 32, half_split);
    }
}

fn main() {}
