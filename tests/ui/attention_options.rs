use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        input q: [frames, 64];
        output y: [frames, 64];
        output z: [frames, 64];
        output u: [frames, 64];
        y = attention(q, q, q, causal);
        z = attention(q, q, q, heads = 2, causal, masked);
        u = attention(q, q, q, heads = 2, len = m);
    }
}

fn main() {}
