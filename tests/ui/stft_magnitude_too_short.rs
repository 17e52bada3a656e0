use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        weight w: f32[256];
        input x: [1, 200];
        output y: [129, 1];
        y = stft_magnitude(x, w, hop = 128);
    }
}

neon_plan! {
    pub plan Q {
        dim samples in 200..=1000;
        weight w: f32[256];
        input x: [1, samples];
        output y: [129, 1];
        y = stft_magnitude(x, w, hop = 128);
    }
}

neon_plan! {
    pub plan R {
        weight w: f32[200];
        input x: [1, 640];
        output y: [101, 4];
        y = stft_magnitude(x, w, hop = 128);
    }
}

fn main() {}
