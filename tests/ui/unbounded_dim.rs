use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..;
        input x: [8, frames];
        output y: [8, frames];
        y = relu(x);
    }
}

fn main() {}
