//! The iSTFT operator against an f64 implementation written from `sanotts.md` (direct
//! inverse DFT, plain loops): sanoTTS's geometry and odd ones (hop 1, hop not dividing
//! n_fft, hop n_fft/2), 0 to 33 frames, magnitudes above the cap; streaming equals the whole
//! utterance bit for bit, also through a stream resumed on its workspace; bad lengths and
//! misuse are errors; every backend (`backend_tests!`).

mod common;

use common::{rng, uniform};
use neon_runtime::kernels::fft::{fill_twiddles, twiddle_len};
use neon_runtime::ops::istft::{periodic_hann, Istft, IstftGeometry};
use neon_runtime::{Backend, Error};

const LN100: f32 = 4.605_170_2;

struct Setup {
    geometry: IstftGeometry,
    twiddles: Vec<f32>,
    window: Vec<f32>,
}

impl Setup {
    fn new(n_fft: usize, hop: usize) -> Self {
        let mut twiddles = vec![0.0; twiddle_len(n_fft)];
        fill_twiddles(n_fft, &mut twiddles);
        let mut window = vec![0.0; n_fft];
        periodic_hann(&mut window);
        Setup { geometry: IstftGeometry { n_fft, hop, max_log: LN100 }, twiddles, window }
    }

    fn op(&self) -> Istft<'_> {
        Istft::new(self.geometry, &self.twiddles, &self.window).unwrap()
    }
}

/// `frames` random frames: log-magnitudes in [-4, 6] (some above ln 100), phases in [-10, 10].
fn frames(n: usize, frames: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    let bins = n / 2 + 1;
    let mut y = Vec::new();
    for _ in 0..frames {
        y.extend(uniform(&mut r, bins, -4.0, 6.0));
        y.extend(uniform(&mut r, bins, -10.0, 10.0));
    }
    y
}

/// sanotts.md's iSTFT in f64, written from the page.
fn reference(y: &[f32], n: usize, hop: usize) -> Vec<f64> {
    let (bins, m) = (n / 2 + 1, n / 2);
    let t = y.len() / (n + 2);
    if t == 0 {
        return Vec::new();
    }
    let tau = 2.0 * std::f64::consts::PI;
    let w: Vec<f64> = (0..n).map(|i| 0.5 - 0.5 * (tau * i as f64 / n as f64).cos()).collect();
    let len = (t - 1) * hop + n;
    let (mut buf, mut env) = (vec![0.0f64; len], vec![0.0f64; len]);
    for f in 0..t {
        let fr = &y[f * (n + 2)..(f + 1) * (n + 2)];
        let mag = |k: usize| (fr[k] as f64).min(LN100 as f64).exp();
        let re: Vec<f64> = (0..bins).map(|k| mag(k) * (fr[bins + k] as f64).cos()).collect();
        let im: Vec<f64> = (0..bins).map(|k| mag(k) * (fr[bins + k] as f64).sin()).collect();
        for j in 0..n {
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            let mut acc = re[0] + sign * re[m];
            for k in 1..m {
                let a = tau * ((j * k) % n) as f64 / n as f64;
                acc += 2.0 * (re[k] * a.cos() - im[k] * a.sin());
            }
            buf[f * hop + j] += acc / n as f64 * w[j];
            env[f * hop + j] += w[j] * w[j];
        }
    }
    (0..t * hop)
        .map(|j| {
            let p = m + j;
            if env[p] < 1e-11 {
                buf[p]
            } else {
                buf[p] / env[p]
            }
        })
        .collect()
}

fn whole<B: Backend>(s: &Setup, y: &[f32]) -> Vec<f32> {
    let op = s.op();
    let t = y.len() / (s.geometry.n_fft + 2);
    let mut out = vec![f32::NAN; t * s.geometry.hop];
    let mut ws = vec![0.0; Istft::workspace_len(s.geometry.n_fft)];
    op.run::<B>(y, &mut ws, &mut out).unwrap();
    out
}

const GEOMETRIES: [(usize, usize); 6] =
    [(512, 128), (16, 8), (64, 24), (32, 1), (128, 48), (1024, 256)];

/// Error relative to the largest reference sample. Measured: 3.0e-7 at most over these
/// cases on every x86_64 backend. Bound 2e-6: the inverse FFT's `7 u log2 n` (tests/irfft.rs,
/// 4.2e-6 for n 1024 in the worst case, 3e-7 typical), plus the trig kernels' 8.7e-8 absolute
/// on magnitudes up to 100, summed over the frames overlapping a sample (n_fft / hop) and
/// divided by an envelope of the same order.
fn against_reference<B: Backend>() {
    let max_n = if cfg!(target_arch = "aarch64") { 512 } else { 1024 };
    let mut worst = 0.0f64;
    for (g, &(n, hop)) in GEOMETRIES.iter().enumerate() {
        if n > max_n {
            continue;
        }
        let s = Setup::new(n, hop);
        for t in [0usize, 1, 2, 3, 7, 33] {
            if n >= 512 && t > 7 && cfg!(target_arch = "aarch64") {
                continue;
            }
            let y = frames(n, t, 0x157f + g as u64 * 100 + t as u64);
            let got = whole::<B>(&s, &y);
            let want = reference(&y, n, hop);
            assert_eq!(got.len(), want.len(), "n {n} hop {hop} T {t}: T * hop samples");
            let scale = want.iter().fold(0.0f64, |a, &b| a.max(b.abs())).max(1e-30);
            let err =
                got.iter().zip(&want).map(|(&a, &b)| (a as f64 - b).abs()).fold(0.0, f64::max)
                    / scale;
            assert!(err <= 2e-6, "{} n {n} hop {hop} T {t}: relative error {err:e}", B::NAME);
            worst = worst.max(err);
        }
    }
    println!("{}: istft max error relative to the largest sample {worst:.2e}", B::NAME);
}

/// Pushing frame by frame (any output buffer) and finishing gives the whole utterance's
/// samples bit for bit, with the documented counts; reset starts afresh.
fn streaming_equals_whole<B: Backend>() {
    for &(n, hop) in &GEOMETRIES[..5] {
        let s = Setup::new(n, hop);
        let op = s.op();
        for t in [0usize, 1, 2, 5, 13] {
            let y = frames(n, t, 0x5eed + t as u64);
            let want = whole::<B>(&s, &y);
            let mut ws = vec![7.0; Istft::workspace_len(n) + 5];
            let mut stream = op.stream(&mut ws).unwrap();
            for round in 0..2 {
                let mut got = Vec::new();
                let mut out = vec![0.0; n];
                for (i, f) in y.chunks_exact(n + 2).enumerate() {
                    let k = op.push::<B>(&mut stream, f, &mut out).unwrap();
                    let before = (hop * i).saturating_sub(n / 2).min(hop * (i + 1));
                    let expected = (hop * (i + 1)).saturating_sub(n / 2) - before;
                    assert_eq!(k, expected.min(hop), "n {n} hop {hop} frame {i}");
                    got.extend_from_slice(&out[..k]);
                }
                assert_eq!(stream.frames(), t);
                let k = op.finish(&mut stream, &mut out).unwrap();
                assert_eq!(k, (n / 2).min(hop * t));
                got.extend_from_slice(&out[..k]);
                assert_eq!(got.len(), t * hop);
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "n {n} hop {hop} T {t} round {round}: stream differs from whole");
                stream.reset();
            }
        }
    }
}

/// A stream dropped after some pushes and resumed on the same workspace with its frame count
/// continues bit for bit (each push through a fresh `resume`); a short workspace is refused.
fn resumed_stream_continues<B: Backend>() {
    for &(n, hop) in &GEOMETRIES[..5] {
        let s = Setup::new(n, hop);
        let op = s.op();
        let t = 9;
        let y = frames(n, t, 0xa11 + n as u64);
        let want = whole::<B>(&s, &y);
        let mut ws = vec![0.0; Istft::workspace_len(n)];
        op.stream(&mut ws).unwrap(); // zeroes the tail; each push then resumes it
        let mut got = Vec::new();
        let mut out = vec![0.0; n];
        for (i, f) in y.chunks_exact(n + 2).enumerate() {
            let mut stream = op.resume(&mut ws, i).unwrap();
            let k = op.push::<B>(&mut stream, f, &mut out).unwrap();
            got.extend_from_slice(&out[..k]);
        }
        let mut stream = op.resume(&mut ws, t).unwrap();
        let k = op.finish(&mut stream, &mut out).unwrap();
        got.extend_from_slice(&out[..k]);
        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "n {n} hop {hop}");
        assert_eq!(got.len(), want.len());
        assert!(matches!(op.resume(&mut ws[1..], 0), Err(Error::Length { .. })));
    }
}

fn errors_change_nothing<B: Backend>() {
    let s = Setup::new(64, 16);
    let op = s.op();
    let y = frames(64, 3, 9);
    let good = whole::<B>(&s, &y);
    let mut ws = vec![0.0; Istft::workspace_len(64)];
    let mut out = vec![0.0; 48];
    // Whole: bad frame count, output length, workspace.
    assert!(matches!(op.run::<B>(&y[..65], &mut ws, &mut out), Err(Error::Length { .. })));
    assert!(matches!(op.run::<B>(&y, &mut ws, &mut out[..47]), Err(Error::Length { .. })));
    assert!(matches!(op.run::<B>(&y, &mut ws[..10], &mut out), Err(Error::Length { .. })));
    // Streaming: a bad frame or a short output leaves the stream as it was.
    let mut stream = op.stream(&mut ws).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0.0; 64];
    for f in y.chunks_exact(66) {
        assert!(op.push::<B>(&mut stream, &f[..65], &mut buf).is_err());
        assert!(op.push::<B>(&mut stream, f, &mut buf[..15]).is_err());
        let k = op.push::<B>(&mut stream, f, &mut buf).unwrap();
        got.extend_from_slice(&buf[..k]);
    }
    assert!(op.finish(&mut stream, &mut buf[..3]).is_err());
    let k = op.finish(&mut stream, &mut buf).unwrap();
    got.extend_from_slice(&buf[..k]);
    assert_eq!(got, good);
    // Finished: pushes and a second finish are refused until reset.
    assert!(matches!(op.push::<B>(&mut stream, &y[..66], &mut buf), Err(Error::Plan { .. })));
    assert!(op.finish(&mut stream, &mut buf).is_err());
    stream.reset();
    assert!(op.push::<B>(&mut stream, &y[..66], &mut buf).is_ok());
    // A stream of another geometry.
    let other = Setup::new(32, 8);
    assert!(matches!(
        other.op().push::<B>(&mut stream, &y[..34], &mut buf),
        Err(Error::Length { .. })
    ));
}

fn invalid_geometry_is_refused<B: Backend>() {
    let s = Setup::new(64, 16);
    for (n_fft, hop, max_log) in
        [(64, 0, 1.0), (64, 33, 1.0), (48, 12, 1.0), (8, 2, 1.0), (64, 16, f32::NAN)]
    {
        let g = IstftGeometry { n_fft, hop, max_log };
        assert!(Istft::new(g, &s.twiddles, &s.window).is_err(), "{g:?}");
    }
    let g = s.geometry;
    assert!(Istft::new(g, &s.twiddles[1..], &s.window).is_err());
    assert!(Istft::new(g, &s.twiddles, &s.window[1..]).is_err());
    let _ = B::NAME;
}

neon_runtime::backend_tests!(
    against_reference,
    streaming_equals_whole,
    resumed_stream_continues,
    errors_change_nothing,
    invalid_geometry_is_refused
);
