use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        scalar n: usize;
        input q: [1, 416];
        state k: [10, 208];
        state v: [10, 416];
        output y: [1, 416];
        y = attention(q, k, v, heads = 8, len = n);
    }
}

fn main() {}
