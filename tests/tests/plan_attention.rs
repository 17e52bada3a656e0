//! Attention plans: a decoder-like causal self-attention over caller-owned KV caches
//! (linear q/k/v, rotary at the decoding position, write_frames into the caches, attention
//! over the filled part) stepped token by token, and an encoder-like bidirectional block
//! (half-split rotary, explicit scale, an input read directly as keys). Both equal the
//! runtime operators called one by one, bit for bit, validate their run-time scalars
//! before the first kernel and allocate nothing.

mod common;

use neon_macros::neon_plan;
use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::rotary::{Rotary, RotaryGeometry};
use neon_runtime::ops::sequence::WriteFrames;
use neon_runtime::{Backend, Error, Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// One decoder self-attention step: `frames` new tokens at positions `pos..pos + frames`,
    /// appended to the caches, attending causally over the `n = pos + frames` cached ones.
    pub plan SelfAttention {
        dim frames in 1..=4;
        scalar pos: usize;
        scalar n: usize;
        weight wq: f32[16, 16];
        weight wk: f32[16, 16];
        weight wv: f32[16, 16];
        weight wo: f32[16, 16];
        input x: [frames, 16];
        state kc: [12, 16];
        state vc: [12, 16];
        output y: [frames, 16];

        let q = linear(x, wq);
        let q = rotary(q, heads = 2, dims = 6, theta = 10000, at = pos);
        let k = linear(x, wk);
        let k = rotary(k, heads = 2, dims = 6, at = pos);
        let v = linear(x, wv);
        kc = write_frames(kc, k, at = pos, layout = frame_major);
        vc = write_frames(vc, v, at = pos, layout = frame_major);
        let a = attention(q, kc, vc, causal, heads = 2, len = n);
        y = linear(a, wo);
    }
}

neon_plan! {
    /// Bidirectional attention over a whole sequence; the keys are the input itself.
    pub plan Encoder {
        dim frames in 1..=40;
        weight wq: f32[24, 24];
        weight wv: f32[24, 24];
        input x: [frames, 24];
        output y: [frames, 24];

        let q = linear(x, wq);
        let q = rotary(q, heads = 3, dims = 4, half_split);
        let v = linear(x, wv);
        y = attention(q, x, v, heads = 3, scale = 0.25);
    }
}

/// Deterministic weights in `[-0.5, 0.5)`.
fn w(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 1000) as f32 / 1000.0 - 0.5).collect()
}

/// A square projection of the plan's geometry `g`.
fn lin(seed: usize, g: LinearGeometry) -> Linear<Vec<f32>> {
    Linear::new(g, w(g.in_features * g.out_features, seed), None).unwrap()
}

fn self_weights() -> SelfAttentionWeights<Vec<f32>> {
    type P = SelfAttention;
    SelfAttentionWeights {
        wq: lin(1, P::WQ),
        wk: lin(2, P::WK),
        wv: lin(3, P::WV),
        wo: lin(4, P::WO),
    }
}

const FM: Layout = Layout::FrameMajor;

/// The rotary embedding of the plans' `rotary` statements: theta 10000 (written or the
/// default).
fn rope(heads: usize, rotary_dims: usize, pairs: RotaryPairs) -> Rotary {
    Rotary::new(RotaryGeometry { heads, rotary_dims, theta: 10000.0, pairs })
}

fn run_linear<B: Backend>(l: &Linear<Vec<f32>>, x: &[f32], rows: usize, c: usize) -> Vec<f32> {
    let mut y = vec![0.0; rows * c];
    let xv = TensorView::new(x, &[rows, c], FM).unwrap();
    l.run::<B>(&xv, &mut TensorViewMut::new(&mut y, &[rows, c], FM).unwrap()).unwrap();
    y
}

/// The self-attention step with the runtime operators one by one.
fn self_reference<B: Backend>(
    wt: &SelfAttentionWeights<Vec<f32>>,
    x: &[f32],
    frames: usize,
    pos: usize,
    n: usize,
    kc: &mut [f32],
    vc: &mut [f32],
) -> Vec<f32> {
    let rope = rope(2, 6, RotaryPairs::Interleaved);
    let mut q = run_linear::<B>(&wt.wq, x, frames, 16);
    rope.run_in_place::<B>(&mut TensorViewMut::new(&mut q, &[frames, 16], FM).unwrap(), pos)
        .unwrap();
    let mut k = run_linear::<B>(&wt.wk, x, frames, 16);
    rope.run_in_place::<B>(&mut TensorViewMut::new(&mut k, &[frames, 16], FM).unwrap(), pos)
        .unwrap();
    let v = run_linear::<B>(&wt.wv, x, frames, 16);
    let write = WriteFrames { layout: FM };
    let kv = TensorView::new(&k, &[frames, 16], FM).unwrap();
    write.run(&mut TensorViewMut::new(kc, &[12, 16], FM).unwrap(), &kv, pos).unwrap();
    let vv = TensorView::new(&v, &[frames, 16], FM).unwrap();
    write.run(&mut TensorViewMut::new(vc, &[12, 16], FM).unwrap(), &vv, pos).unwrap();
    let mut a = vec![0.0; frames * 16];
    let att = Attention { heads: 2, causal: true, scale: None };
    att.run::<B>(
        &TensorView::new(&q, &[frames, 16], FM).unwrap(),
        &TensorView::new(kc, &[12, 16], FM).unwrap(),
        &TensorView::new(vc, &[12, 16], FM).unwrap(),
        &mut TensorViewMut::new(&mut a, &[frames, 16], FM).unwrap(),
        n,
    )
    .unwrap();
    run_linear::<B>(&wt.wo, &a, frames, 16)
}

/// A prompt of 3 tokens, then single tokens, then 2 at once: the plan and the operators
/// one by one give the same bits and the same caches.
fn decoder_steps_equal_operators_one_by_one<B: Backend>() {
    let wt = self_weights();
    let mut ws = SelfAttentionWorkspace::new();
    let (mut kc, mut vc) = (vec![f32::NAN; 12 * 16], vec![f32::NAN; 12 * 16]);
    let (mut rk, mut rv) = (kc.clone(), vc.clone());
    let mut pos = 0;
    for (step, frames) in [3, 1, 1, 2, 1, 4].into_iter().enumerate() {
        let x = w(frames * 16, 10 + step);
        let mut y = vec![0.0; frames * 16];
        let n = pos + frames;
        SelfAttention::run::<B, _>(&wt, &x, &mut y, &mut kc, &mut vc, frames, pos, n, &mut ws)
            .unwrap();
        let want = self_reference::<B>(&wt, &x, frames, pos, n, &mut rk, &mut rv);
        assert_eq!(y, want, "{} step {step}", B::NAME);
        assert!(y.iter().all(|v| v.is_finite()), "unwritten cache rows must not be read");
        assert_eq!(kc[..n * 16], rk[..n * 16]);
        assert_eq!(vc[..n * 16], rv[..n * 16]);
        pos = n;
    }
}

#[test]
fn scalars_validated_before_any_kernel_and_no_allocation() {
    let wt = self_weights();
    let mut ws = SelfAttentionWorkspace::new();
    let (mut kc, mut vc) = (vec![0.5f32; 12 * 16], vec![0.25f32; 12 * 16]);
    let x = w(2 * 16, 3);
    let mut y = vec![-1.0; 2 * 16];
    // Valid: 2 tokens at 4..6 over 6 cached frames; no allocation.
    common::allocation_free(|| {
        SelfAttention::run::<Portable, _>(&wt, &x, &mut y, &mut kc, &mut vc, 2, 4, 6, &mut ws)
    })
    .unwrap();
    // `n` below the queries (causal), above the cache, or 0; `pos` past the cache: errors
    // naming the scalar, before any kernel (caches and output untouched), no allocation.
    let before = (kc.clone(), vc.clone());
    let y0 = vec![-1.0; 2 * 16];
    for (pos, n, err) in [
        (4, 1, Error::OutOfRange { name: "n", value: 1, min: 2, max: 12 }),
        (4, 13, Error::OutOfRange { name: "n", value: 13, min: 2, max: 12 }),
        (4, 0, Error::OutOfRange { name: "n", value: 0, min: 2, max: 12 }),
        (11, 12, Error::OutOfRange { name: "pos", value: 11, min: 0, max: 10 }),
    ] {
        let mut y = y0.clone();
        let r = common::allocation_free(|| {
            SelfAttention::run::<Portable, _>(&wt, &x, &mut y, &mut kc, &mut vc, 2, pos, n, &mut ws)
        });
        assert_eq!(r, Err(err));
        assert_eq!(y, y0);
        assert_eq!((&kc, &vc), (&before.0, &before.1));
    }
}

fn encoder_reference<B: Backend>(
    wt: &EncoderWeights<Vec<f32>>,
    x: &[f32],
    frames: usize,
) -> Vec<f32> {
    let rope = rope(3, 4, RotaryPairs::HalfSplit);
    let mut q = run_linear::<B>(&wt.wq, x, frames, 24);
    rope.run_in_place::<B>(&mut TensorViewMut::new(&mut q, &[frames, 24], FM).unwrap(), 0).unwrap();
    let v = run_linear::<B>(&wt.wv, x, frames, 24);
    let mut y = vec![0.0; frames * 24];
    Attention { heads: 3, causal: false, scale: Some(0.25) }
        .run::<B>(
            &TensorView::new(&q, &[frames, 24], FM).unwrap(),
            &TensorView::new(x, &[frames, 24], FM).unwrap(),
            &TensorView::new(&v, &[frames, 24], FM).unwrap(),
            &mut TensorViewMut::new(&mut y, &[frames, 24], FM).unwrap(),
            frames,
        )
        .unwrap();
    y
}

fn encoder_equals_operators_one_by_one<B: Backend>() {
    let wt = EncoderWeights { wq: lin(5, Encoder::WQ), wv: lin(6, Encoder::WV) };
    let mut ws = EncoderWorkspace::new();
    for frames in [1, 3, 4, 5, 17, 40] {
        let x = w(frames * 24, frames);
        let mut y = vec![0.0; frames * 24];
        common::allocation_free(|| Encoder::run::<B, _>(&wt, &x, &mut y, frames, &mut ws)).unwrap();
        assert_eq!(y, encoder_reference::<B>(&wt, &x, frames), "{} frames {frames}", B::NAME);
    }
}

neon_runtime::backend_tests!(
    decoder_steps_equal_operators_one_by_one,
    encoder_equals_operators_one_by_one
);

#[test]
fn memory() {
    common::print_memory(
        "SelfAttention",
        SelfAttention::WORKSPACE_BYTES,
        SelfAttention::LOWER_BOUND_BYTES,
    );
}
