use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        input x: [8, frames];
        output y: [8, frames];
        y = frobnicate(x);
    }
}

fn main() {}
