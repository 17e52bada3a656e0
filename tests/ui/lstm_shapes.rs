//! `lstm_cell` operand shapes: the state (rows, rank), the input frames, the weight (shape, rank)
//! and the bias.

use neon_macros::neon_plan;

#[macro_use]
#[path = "fixtures/plans.rs"]
mod fixtures;

lstm_plan! {
    A {
        weight w: f32[512, 256];
        input x: [128, 1];
        state s: [3, 128];
    }
    s = lstm_cell(s, x, w);
}

neon_plan! {
    pub plan B {
        weight w: f32[512, 256];
        input x: [128, 2];
        state s: [256];
        output y: [1, 128];
        s = lstm_cell(s, x, w);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

lstm_plan! {
    C {
        weight w: f32[512, 256];
        input x: [128, 2];
        state s: [2, 128];
    }
    s = lstm_cell(s, x, w);
}

lstm_plan! {
    D {
        weight lstm: f32[512, 200];
        weight lstm_b: f32[512];
        input x: [128, 1];
        state s: [2, 128];
    }
    s = lstm_cell(s, x, lstm, lstm_b);
}

lstm_plan! {
    E {
        weight w: f32[512, 256];
        weight b: f32[256];
        input x: [128, 1];
        state s: [2, 128];
    }
    s = lstm_cell(s, x, w, b);
}

lstm_plan! {
    F {
        weight w: f32[512, 256, 1];
        input x: [128, 1];
        state s: [2, 128];
    }
    s = lstm_cell(s, x, w);
}

fn main() {}
