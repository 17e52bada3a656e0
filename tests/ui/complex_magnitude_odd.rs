use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input x: [257, 4];
        output y: [128, 4];
        y = complex_magnitude(x);
    }
}

fn main() {}
