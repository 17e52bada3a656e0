use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [10, 415];
        output y: [10, 415];
        y = rotary(x, heads = 8, dims = 32);
    }
}

fn main() {}
