//! Moonshine's decoder: token embedding, eight pre-norm layers (causal rotary
//! self-attention over a KV cache, cross-attention over the encoder output, gated SiLU MLP),
//! a final LayerNorm and the LM head tied to the embedding.
//!
//! One step feeds one token at position `pos` (the number of tokens fed before it) and
//! returns the logits `[32768]` of the next token. The caller owns the state: per layer a
//! self-attention KV cache (`[CACHE, 416]` keys after rotary, and values, of which the first
//! `pos + 1` rows are valid after the step) and the cross-attention keys and values
//! `[memory, 416]`, computed once per utterance from the encoder output by [`CrossKv`].

use neon_macros::neon_plan;

neon_plan! {
    /// One decoder layer for one token: frame-major `[1, 416]` → `[1, 416]`.
    ///
    /// `x += SelfAttn(LN1 x)` (8 heads of 52, rotary on the first 32 dims of each head at
    /// position `pos`, interleaved pairs, theta 10000; the token's key and value are written
    /// into the caches at row `pos`, then the query attends to rows `0..len` with
    /// `len = pos + 1`); `x += CrossAttn(LN2 x)` over `cross_k` / `cross_v` (no rotary);
    /// `x += down(silu(gate) * value)` with `value = up_value(LN3 x)`, `gate = up_gate(LN3 x)`
    /// (the shipped up-projection 416 → 3328 split into its halves, value first).
    /// Projections have no biases except the MLP's; LayerNorms have none.
    pub plan DecoderLayer {
        dim memory in 1..=1248;
        scalar pos: usize;
        scalar len: usize;
        weight self_norm: f32[416];
        weight self_q: i8[416, 416];
        weight self_k: i8[416, 416];
        weight self_v: i8[416, 416];
        weight self_o: i8[416, 416];
        weight cross_norm: f32[416];
        weight cross_q: i8[416, 416];
        weight cross_o: i8[416, 416];
        weight mlp_norm: f32[416];
        weight up_value: i8[1664, 416];
        weight up_value_b: f32[1664];
        weight up_gate: i8[1664, 416];
        weight up_gate_b: f32[1664];
        weight down: i8[416, 1664];
        weight down_b: f32[416];
        input x: [1, 416];
        input cross_k: [memory, 416];
        input cross_v: [memory, 416];
        state k_cache: [256, 416];
        state v_cache: [256, 416];
        output y: [1, 416];

        let h = layer_norm(x, self_norm, layout = frame_major);
        let q = linear(h, self_q);
        let k = linear(h, self_k);
        let v = linear(h, self_v);
        let q = rotary(q, heads = 8, dims = 32, theta = 10000, at = pos);
        let k = rotary(k, heads = 8, dims = 32, theta = 10000, at = pos);
        k_cache = write_frames(k_cache, k, at = pos, layout = frame_major);
        v_cache = write_frames(v_cache, v, at = pos, layout = frame_major);
        let a = attention(q, k_cache, v_cache, heads = 8, causal = true, len = len);
        let a = linear(a, self_o);
        let x1 = add(a, x);

        let h = layer_norm(x1, cross_norm, layout = frame_major);
        let q = linear(h, cross_q);
        let a = attention(q, cross_k, cross_v, heads = 8);
        let a = linear(a, cross_o);
        let x2 = add(a, x1);

        let h = layer_norm(x2, mlp_norm, layout = frame_major);
        let value = linear(h, up_value, up_value_b);
        let gate = linear(h, up_gate, up_gate_b);
        let gate = silu(gate);
        let m = mul(gate, value);
        let d = linear(m, down, down_b);
        y = add(d, x2);
    }
}

neon_plan! {
    /// One layer's cross-attention keys and values from the encoder output
    /// `[memory, 416]` (no rotary, no biases), computed once per utterance.
    pub plan CrossKv {
        dim memory in 1..=1248;
        weight k: i8[416, 416];
        weight v: i8[416, 416];
        input encoded: [memory, 416];
        output keys: [memory, 416];
        output values: [memory, 416];

        keys = linear(encoded, k);
        values = linear(encoded, v);
    }
}

neon_plan! {
    /// The final LayerNorm (no bias) and the LM head tied to the token embedding:
    /// `[1, 416]` → logits `[1, 32768]` = `LN(x) E^T`.
    pub plan DecoderHead {
        weight norm: f32[416];
        weight embedding: i8[32768, 416];
        input x: [1, 416];
        output logits: [1, 32768];

        let h = layer_norm(x, norm, layout = frame_major);
        logits = linear(h, embedding);
    }
}
