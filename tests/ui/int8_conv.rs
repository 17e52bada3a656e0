use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight w: i8[8, 8, 1];
        weight v: i8_block32[8, 30];
        input x: [8, frames];
        output y: [8, frames];
        y = conv1d(x, w);
    }
}

fn main() {}
