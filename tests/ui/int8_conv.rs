use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: i8[8, 8, 1];
        weight v: i8_block32[8, 30];
        input x: [8, 10];
        output y: [8, 10];
        y = conv1d(x, w);
    }
}

fn main() {}
