use neon_macros::neon_plan;

// Option errors (a malformed value, an unknown option) and check errors of other
// statements are reported together, in statement order.
neon_plan! {
    plan Several {
        dim t in 2..=50;
        weight k: f32[4, 4, 1];
        input a: [4, t];
        output b: [4, t];
        let h = conv1d(a, k, stride = -1, bogus = 2);
        let g = gelu(z);
        b = relu(h);
    }
}

fn main() {}
