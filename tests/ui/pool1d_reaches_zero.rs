use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        input x: [8, frames];
        output y: [8, (frames + 4) / 5];
        y = avg_pool1d(x, kernel = 5);
    }
}

fn main() {}
