//! The guide's keyword-spotting example (`examples/kws`, its own crate) checked here, where
//! every backend and the counting allocator are at hand: the plan against an f64 forward
//! pass written from the layer definitions (PyTorch's Conv1d, BatchNorm1d in inference
//! mode, MaxPool1d with `-inf` padding, mean over frames, Linear, softmax), over frame
//! counts that are odd, even and not multiples of the vector widths; without allocation;
//! and its workspace at the lower bound.

mod common;

#[path = "../../examples/kws/src/model.rs"]
mod model;
#[path = "../../examples/kws/src/weights.rs"]
mod weights;

use model::{Kws, KwsWorkspace};
use neon_runtime::Backend;
use weights::{example_features, RawWeights, BANDS, BN_EPS, CHANNELS as C, CLASSES};

/// A `[C, T]` conv1d with "same" padding 1 (kernel 3), `groups` = 1 or `C` (depthwise).
fn conv3(
    x: &[f64],
    cin: usize,
    t: usize,
    w: &[f32],
    b: Option<&[f32]>,
    depthwise: bool,
) -> Vec<f64> {
    let mut y = vec![0.0; C * t];
    for o in 0..C {
        for f in 0..t {
            let mut s = b.map_or(0.0, |b| b[o] as f64);
            let inputs = if depthwise { o..o + 1 } else { 0..cin };
            for (j, c) in inputs.enumerate() {
                for k in 0..3 {
                    let src = f as i64 + k as i64 - 1;
                    if (0..t as i64).contains(&src) {
                        let wi = if depthwise { o * 3 + k } else { (o * cin + j) * 3 + k };
                        s += w[wi] as f64 * x[c * t + src as usize];
                    }
                }
            }
            y[o * t + f] = s;
        }
    }
    y
}

/// The network in f64 from the unfolded PyTorch weights: `[40, t]` -> 12 probabilities.
fn forward64(r: &RawWeights, x: &[f32], t: usize) -> Vec<f64> {
    let relu = |v: &mut Vec<f64>| v.iter_mut().for_each(|a| *a = a.max(0.0));
    let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut h = conv3(&x, BANDS, t, &r.conv_w, None, false);
    for c in 0..C {
        let (g, b, m, v) = (r.bn_gamma[c], r.bn_beta[c], r.bn_mean[c], r.bn_var[c]);
        let inv = 1.0 / (v as f64 + BN_EPS as f64).sqrt();
        h[c * t..][..t].iter_mut().for_each(|a| *a = (*a - m as f64) * inv * g as f64 + b as f64);
    }
    relu(&mut h);
    let mut h = conv3(&h, C, t, &r.dw_w, Some(&r.dw_b), true);
    relu(&mut h);
    let mut p = vec![0.0; C * t];
    for o in 0..C {
        for f in 0..t {
            let dot: f64 = (0..C).map(|c| r.pw_w[o * C + c] as f64 * h[c * t + f]).sum();
            p[o * t + f] = dot + r.pw_b[o] as f64;
        }
    }
    relu(&mut p);
    // MaxPool1d(kernel 3, stride 2, padding 1): windows start at -1, -1 + 2, ..; padding
    // is -inf; then the mean of the pooled frames.
    let pooled = (t + 2 - 3) / 2 + 1;
    let mean: Vec<f64> = (0..C)
        .map(|c| {
            let row = &p[c * t..][..t];
            let window_max = |i: usize| {
                (0..3)
                    .filter_map(|k| (2 * i + k).checked_sub(1).filter(|&s| s < t))
                    .map(|s| row[s])
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            (0..pooled).map(window_max).sum::<f64>() / pooled as f64
        })
        .collect();
    let logits: Vec<f64> = (0..CLASSES)
        .map(|o| r.fc_b[o] as f64 + (0..C).map(|c| r.fc_w[o * C + c] as f64 * mean[c]).sum::<f64>())
        .collect();
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

fn kws_matches_f64<B: Backend>() {
    let raw = RawWeights::example();
    let weights = raw.prepare().unwrap();
    let mut ws = Box::new(KwsWorkspace::new());
    for frames in [16, 17, 31, 33, 64, 98, 100] {
        let x = example_features(frames);
        let mut y = [0.0f32; CLASSES];
        common::allocation_free(|| Kws::run::<B, _>(&weights, &x, &mut y, frames, &mut ws))
            .unwrap();
        let want = forward64(&raw, &x, frames);
        // f32 sums of at most 120 products of O(1) terms before the softmax: a relative
        // error of a few 1e-7 per logit, which moves a probability by well under 1e-5.
        for (k, (&got, &w)) in y.iter().zip(&want).enumerate() {
            assert!(
                (got as f64 - w).abs() < 1e-5,
                "{} frames {frames} class {k}: {got} vs {w}",
                B::NAME
            );
        }
    }
}

neon_runtime::backend_tests!(kws_matches_f64);

#[test]
fn kws_workspace_is_the_lower_bound() {
    common::print_memory("Kws", Kws::WORKSPACE_BYTES, Kws::LOWER_BOUND_BYTES);
    assert_eq!(Kws::WORKSPACE_BYTES, Kws::LOWER_BOUND_BYTES);
}
