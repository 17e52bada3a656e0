//! Input shapes the signal operators reject: a `reflect_pad` input no longer than its padding
//! (fixed and symbolic) or no padding, odd `complex_magnitude` channels, an `stft_magnitude` input
//! shorter than its window (fixed and symbolic) and a window that is not a real-FFT size.

use neon_macros::neon_plan;

neon_plan! {
    pub plan A {
        input x: [1, 64];
        output y: [1, 128];
        y = reflect_pad(x, right = 64);
    }
}

neon_plan! {
    pub plan B {
        dim frames in 4..=100;
        input x: [1, frames];
        output y: [1, frames + 8];
        y = reflect_pad(x, left = 5, right = 3);
    }
}

neon_plan! {
    pub plan C {
        input x: [1, 64];
        output y: [1, 64];
        y = reflect_pad(x);
    }
}

neon_plan! {
    pub plan D {
        input x: [257, 4];
        output y: [128, 4];
        y = complex_magnitude(x);
    }
}

neon_plan! {
    pub plan E {
        weight w: f32[256];
        input x: [1, 200];
        output y: [129, 1];
        y = stft_magnitude(x, w, hop = 128);
    }
}

neon_plan! {
    pub plan F {
        dim samples in 200..=1000;
        weight w: f32[256];
        input x: [1, samples];
        output y: [129, 1];
        y = stft_magnitude(x, w, hop = 128);
    }
}

neon_plan! {
    pub plan G {
        weight w: f32[200];
        input x: [1, 640];
        output y: [101, 4];
        y = stft_magnitude(x, w, hop = 128);
    }
}

fn main() {}
