use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=76;
        input x: [8, frames, 32];
        output y: [8, (frames + 1) / 2, 16];
        y = max_pool2d(x, kernel = (2, 2));
    }
}

fn main() {}
