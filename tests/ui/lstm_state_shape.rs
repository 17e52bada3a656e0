use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[512, 256];
        input x: [128, 1];
        state s: [3, 128];
        output y: [1, 128];
        s = lstm_cell(s, x, w);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

neon_plan! {
    pub plan Q {
        weight w: f32[512, 256];
        input x: [128, 2];
        state s: [256];
        output y: [1, 128];
        s = lstm_cell(s, x, w);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

neon_plan! {
    pub plan R {
        weight w: f32[512, 256];
        input x: [128, 2];
        state s: [2, 128];
        output y: [1, 128];
        s = lstm_cell(s, x, w);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

fn main() {}
