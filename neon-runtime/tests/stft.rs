//! The magnitude STFT operator against a direct DFT of the windowed frames in f64: random
//! windows and signals, n_fft 16..=512, hops from 1 to beyond n_fft, odd input lengths
//! (samples left over after the last frame); bad shapes, layouts, lengths and scratch are
//! errors before anything is written; every backend (`backend_tests!`).
//!
//! Tolerance, per bin (the operator's accuracy, `ops::stft` docs): the FFT's norm-wise
//! relative error is below `4.0e-7 log2 n` (`kernels::fft` docs, Higham's Theorem 24.2 with
//! rounded twiddles), so a bin's absolute error is below that times `||Y||_2 = sqrt(n)
//! ||y||_2`; the f32 window products add at most `u sum |y_j| <= u sqrt(n) ||y||_2`; the
//! magnitude adds `2u |Y[k]|` (`u = 2^-24`). The bound is asserted as it is: measured
//! errors are far below it (the FFT's are 1.3 to 2.6 `u` norm-wise).

mod common;

use common::{rng, uniform};
use neon_runtime::kernels::fft::{fill_twiddles, twiddle_len};
use neon_runtime::ops::stft::{StftMagnitude, StftMagnitudeGeometry};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Backend, Error, Layout, Shape, TensorView, TensorViewMut};

const U: f64 = 1.0 / (1u64 << 24) as f64;

/// `|DFT(x[hop t ..][..n] * w)[k]|` in f64 for every bin and frame, `[bins, frames]`, and
/// the per-frame `||y||_2`.
fn reference(x: &[f32], w: &[f32], hop: usize) -> (Vec<f64>, Vec<f64>, usize) {
    let n = w.len();
    let (bins, frames) = (n / 2 + 1, (x.len() - n) / hop + 1);
    let tau = 2.0 * std::f64::consts::PI;
    let mut out = vec![0.0f64; bins * frames];
    let mut norms = Vec::new();
    for t in 0..frames {
        let y: Vec<f64> = (0..n).map(|j| x[hop * t + j] as f64 * w[j] as f64).collect();
        norms.push(y.iter().map(|v| v * v).sum::<f64>().sqrt());
        for k in 0..bins {
            let (mut re, mut im) = (0.0f64, 0.0f64);
            for (j, &v) in y.iter().enumerate() {
                let a = tau * ((j * k) % n) as f64 / n as f64;
                re += v * a.cos();
                im -= v * a.sin();
            }
            out[k * frames + t] = (re * re + im * im).sqrt();
        }
    }
    (out, norms, frames)
}

fn op(n: usize, hop: usize, window: Vec<f32>) -> StftMagnitude<Vec<f32>> {
    StftMagnitude::new(StftMagnitudeGeometry::new(n, hop), window).unwrap()
}

/// One geometry and input length against the reference.
fn check<B: Backend>(n: usize, hop: usize, samples: usize, seed: u64) {
    let mut r = rng(seed);
    let window = uniform(&mut r, n, -1.0, 1.0);
    let x = uniform(&mut r, samples, -1.0, 1.0);
    let s = op(n, hop, window.clone());
    let (want, norms, frames) = reference(&x, &window, hop);
    let bins = n / 2 + 1;
    let geometry = s.geometry();
    let shape = geometry.output_shape(&[Shape::new(&[1, samples]).unwrap()]).unwrap();
    assert_eq!(shape.dims(), &[bins, frames], "n {n} hop {hop} T {samples}");
    assert_eq!(geometry.output_frames(samples), Some(frames));
    let cf = Layout::ChannelFirst;
    let mut y = vec![f32::NAN; bins * frames];
    let mut scratch = vec![f32::NAN; s.scratch_len()];
    let xv = TensorView::new(&x, &[1, samples], cf).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &[bins, frames], cf).unwrap();
    s.run::<B>(&xv, &mut yv, &mut scratch).unwrap();
    let fft_rel = 4.0e-7 * (n.trailing_zeros() as f64);
    for k in 0..bins {
        for t in 0..frames {
            let (got, w) = (y[k * frames + t] as f64, want[k * frames + t]);
            let allowed = (fft_rel + U) * (n as f64).sqrt() * norms[t] + 2.0 * U * w;
            let err = (got - w).abs();
            assert!(
                err <= allowed,
                "{}: n {n} hop {hop} T {samples}: bin {k} frame {t}: {got} vs {w} (err {err:e}, allowed {allowed:e})",
                B::NAME
            );
        }
    }
}

fn matches_reference<B: Backend>() {
    let mut seed = 1;
    for n in [16usize, 32, 64, 128, 256, 512] {
        for hop in [1, 3, n / 4, n / 2 + 1, n - 1, n, n + 5] {
            // 1 to 6 frames, then 0 and an odd number of leftover samples.
            let frames = if hop < 4 { 6 } else { 1 + seed as usize % 4 };
            for leftover in [0, (hop.saturating_sub(1)) | 1] {
                let leftover = if leftover >= hop { 0 } else { leftover };
                check::<B>(n, hop, n + hop * (frames - 1) + leftover, seed);
                seed += 1;
            }
        }
    }
    // Silero VAD's geometry: 640 samples, 4 frames of 256 every 128.
    check::<B>(256, 128, 640, 99);
    // One frame and an odd length with a long tail.
    check::<B>(64, 64, 64, 100);
    check::<B>(64, 200, 263, 101);
}

/// Shapes, layouts, lengths and scratch are checked before anything is written.
fn errors<B: Backend>() {
    let cf = Layout::ChannelFirst;
    let s = op(32, 8, vec![1.0; 32]);
    let x = vec![0.5f32; 48];
    let mut y = vec![7.0f32; 17 * 3];
    let mut scratch = vec![0.0; s.scratch_len()];
    let xv = TensorView::new(&x, &[1, 48], cf).unwrap();
    // Wrong output frames.
    let mut yv = TensorViewMut::new(&mut y[..17 * 2], &[17, 2], cf).unwrap();
    assert!(matches!(s.run::<B>(&xv, &mut yv, &mut scratch), Err(Error::Shape(_))));
    // Frame-major output.
    let mut yv = TensorViewMut::new(&mut y, &[17, 3], Layout::FrameMajor).unwrap();
    assert!(matches!(s.run::<B>(&xv, &mut yv, &mut scratch), Err(Error::Layout { .. })));
    // Short scratch.
    let mut yv = TensorViewMut::new(&mut y, &[17, 3], cf).unwrap();
    let short = &mut scratch[..65];
    assert!(matches!(s.run::<B>(&xv, &mut yv, short), Err(Error::Length { .. })));
    // Two channels; an input shorter than the window.
    let xv2 = TensorView::new(&x, &[2, 24], cf).unwrap();
    assert!(matches!(s.run::<B>(&xv2, &mut yv, &mut scratch), Err(Error::Shape(_))));
    let xv3 = TensorView::new(&x[..31], &[1, 31], cf).unwrap();
    assert!(matches!(s.run::<B>(&xv3, &mut yv, &mut scratch), Err(Error::Shape(_))));
    assert!(yv.data_mut().iter().all(|&v| v == 7.0), "nothing written on error");
    // The right call succeeds.
    s.run::<B>(&xv, &mut yv, &mut scratch).unwrap();
    // DC bin of a constant 0.5 under a window of ones: 16.
    assert_eq!(yv.data_mut()[0], 16.0);
}

#[test]
fn construction_errors() {
    let g = |n, hop| StftMagnitudeGeometry::new(n, hop);
    assert!(matches!(StftMagnitude::new(g(48, 8), vec![0.0; 48]), Err(Error::Shape(_))));
    assert!(matches!(StftMagnitude::new(g(8, 4), vec![0.0; 8]), Err(Error::Shape(_))));
    assert!(matches!(StftMagnitude::new(g(32, 0), vec![0.0; 32]), Err(Error::Shape(_))));
    assert!(matches!(StftMagnitude::new(g(32, 8), vec![0.0; 31]), Err(Error::Length { .. })));
    assert!(matches!(StftMagnitude::from_slice(g(32, 8), &[0.0; 33]), Err(Error::Length { .. })));
    let w = [0.0f32; 32];
    let tw = vec![0.0f32; twiddle_len(32) - 1];
    assert!(matches!(
        StftMagnitude::from_packed(g(32, 8), &w[..], &tw[..]),
        Err(Error::Length { .. })
    ));
    // from_packed with a table of its own equals new.
    let mut tw = vec![0.0f32; twiddle_len(32)];
    fill_twiddles(32, &mut tw);
    let packed = StftMagnitude::from_packed(g(32, 8), &w[..], &tw[..]).unwrap();
    let owned = StftMagnitude::from_slice(g(32, 8), &w).unwrap();
    assert_eq!(packed.twiddles(), owned.twiddles());
    assert_eq!(packed.packed_weight(), owned.packed_weight());
    assert_eq!(owned.geometry(), g(32, 8));
    assert_eq!(owned.scratch_len(), 66);
    assert_eq!(g(32, 8).output_frames(31), None);
}

neon_runtime::backend_tests!(matches_reference, errors);
