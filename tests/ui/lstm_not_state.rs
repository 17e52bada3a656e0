use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[512, 256];
        weight w2: f32[512, 256];
        input x: [128, 1];
        state s: [2, 128];
        output y: [2, 128];
        output z: [2, 128];
        let h = lstm_cell(s, x, w);
        y = relu(h);
        z = lstm_cell(s, x, w2);
    }
}

fn main() {}
