use neon_macros::neon_plan;

// Option errors (a malformed value, an unknown option) and check errors of other
// statements are reported together, in statement order.
neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        weight w: f32[8, 8, 1];
        input x: [8, frames];
        output y: [8, frames];
        let h = conv1d(x, w, stride = -1, bogus = 2);
        let g = gelu(z);
        y = relu(h);
    }
}

fn main() {}
