use neon_macros::neon_plan;

neon_plan! {
    pub plan P {
        dim frames in 1..=100;
        scalar n: usize;
        input q: [1, 416];
        state k: [frames, 208];
        state v: [frames, 416];
        output y: [1, 416];
        y = attention(q, k, v, heads = 8, len = n);
    }
}

fn main() {}
