use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        input q: [10, 64];
        output y: [10, 64];
        output z: [10, 64];
        output u: [10, 64];
        y = attention(q, q, q, causal);
        z = attention(q, q, q, heads = 2, causal, masked);
        u = attention(q, q, q, heads = 2, len = m);
    }
}

fn main() {}
