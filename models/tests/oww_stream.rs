//! The streaming feature grouping against a literal re-statement of openwakeword 0.6.0's
//! `_streaming_features` / `predict` (growing lists, no ring buffers), with stand-in stages
//! whose outputs depend on every sample, frame and call boundary (so a grouping error shows).

use neon_models::openwakeword::stream::{
    EmbeddingStage, FeatureStream, MelStage, CHUNK, EMBEDDING_DIM, HEAD_FRAMES, MAX_CHUNKS,
};
use neon_models::Error;

/// Frames of `n` samples: floor((n - 512) / 160) + 1. Bin b of frame f: a mix of the frame's
/// samples; then the per-call floor max - 80 (as the real frontend), so the values depend on
/// which samples share a call.
struct FakeMel;

impl MelStage for FakeMel {
    fn mel(&mut self, s: &[f32], out: &mut [f32]) -> Result<usize, Error> {
        let frames = (s.len() - 512) / 160 + 1;
        for f in 0..frames {
            for b in 0..32 {
                let v: f32 = s[f * 160..f * 160 + 512]
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| x * (((i * (b + 1)) % 7) as f32 - 3.0))
                    .sum();
                out[f * 32 + b] = (v.abs() + 1.0).ln() * 3.0;
            }
        }
        let max = out[..frames * 32].iter().cloned().fold(f32::MIN, f32::max);
        out[..frames * 32].iter_mut().for_each(|v| *v = v.max(max - 8.0));
        Ok(frames)
    }
}

struct FakeEmbedding;

impl EmbeddingStage for FakeEmbedding {
    fn embed(&mut self, w: &[f32], out: &mut [f32]) -> Result<(), Error> {
        assert_eq!(w.len(), 76 * 32);
        for (c, o) in out.iter_mut().enumerate() {
            *o = w.iter().enumerate().map(|(i, &x)| x * ((i + c) % 5) as f32).sum::<f32>() / 100.0;
        }
        Ok(())
    }
}

/// A "head": a weighted sum of its 16 embeddings, squashed.
fn head(x: &[f32]) -> f32 {
    assert_eq!(x.len(), HEAD_FRAMES * EMBEDDING_DIM);
    let s: f32 = x.iter().enumerate().map(|(i, &v)| v * ((i % 11) as f32 - 5.0)).sum();
    (s / 1000.0).tanh()
}

/// openwakeword 0.6.0, restated literally (lists that only grow).
struct Reference {
    raw: Vec<f32>,
    remainder: Vec<f32>,
    accumulated: usize,
    mel: Vec<[f32; 32]>,
    features: Vec<Vec<f32>>,
    predictions: Vec<f32>,
}

impl Reference {
    fn new(init: &[Vec<f32>]) -> Self {
        Self {
            raw: Vec::new(),
            remainder: Vec::new(),
            accumulated: 0,
            mel: vec![[1.0; 32]; 76],
            features: init.to_vec(),
            predictions: Vec::new(),
        }
    }

    fn streaming_features(&mut self, x: &[f32]) -> usize {
        let mut x: Vec<f32> = x.to_vec();
        let mut processed = 0;
        if !self.remainder.is_empty() {
            let mut r = std::mem::take(&mut self.remainder);
            r.extend_from_slice(&x);
            x = r;
        }
        if self.accumulated + x.len() >= 1280 {
            let rem = (self.accumulated + x.len()) % 1280;
            let even = x.len() - rem;
            self.raw.extend_from_slice(&x[..even]);
            self.accumulated += even;
            self.remainder = x[even..].to_vec();
        } else {
            self.accumulated += x.len();
            self.raw.extend_from_slice(&x);
        }
        if self.accumulated >= 1280 && self.accumulated.is_multiple_of(1280) {
            let n = self.accumulated + 480;
            let start = self.raw.len().saturating_sub(n);
            let mut out = vec![0.0; 200 * 32];
            let frames = FakeMel.mel(&self.raw[start..], &mut out).unwrap();
            for f in 0..frames {
                let mut row = [0.0; 32];
                for b in 0..32 {
                    row[b] = out[f * 32 + b] / 10.0 + 2.0;
                }
                self.mel.push(row);
            }
            for i in (0..self.accumulated / 1280).rev() {
                let end = self.mel.len() - 8 * i;
                let window: Vec<f32> = self.mel[end - 76..end].iter().flatten().copied().collect();
                let mut e = vec![0.0; 96];
                FakeEmbedding.embed(&window, &mut e).unwrap();
                self.features.push(e);
            }
            processed = self.accumulated;
            self.accumulated = 0;
        }
        if processed != 0 {
            processed
        } else {
            self.accumulated
        }
    }

    fn window(&self, end_back: usize) -> Vec<f32> {
        let end = self.features.len() - end_back;
        self.features[end - 16..end].iter().flatten().copied().collect()
    }

    fn predict(&mut self, x: &[f32]) -> f32 {
        let n = self.streaming_features(x);
        let mut p = if n > 1280 {
            (0..n / 1280).rev().map(|i| head(&self.window(i))).fold(f32::MIN, f32::max)
        } else if n == 1280 {
            head(&self.window(0))
        } else {
            self.predictions.last().copied().unwrap_or(0.0)
        };
        if self.predictions.len() < 5 {
            p = 0.0;
        }
        self.predictions.push(p);
        p
    }
}

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn audio(n: usize) -> Vec<i16> {
    let mut r = Xorshift(0x1234_5678);
    (0..n)
        .map(|i| {
            let tone = ((i as f32 * 0.05).sin() * 3000.0 * ((i / 4000) % 3) as f32) as i32;
            (tone + (r.next() % 400) as i32 - 200) as i16
        })
        .collect()
}

fn init_features() -> Vec<Vec<f32>> {
    (0..41).map(|r| (0..96).map(|c| ((r * 96 + c) % 13) as f32 / 13.0 - 0.5).collect()).collect()
}

/// Ours: FeatureStream + the same grouping of head scores as `Detector::push`.
fn ours(sizes: &[usize], samples: &[i16]) -> Vec<f32> {
    let mut s = FeatureStream::new(FakeMel, FakeEmbedding);
    let flat: Vec<f32> = init_features().concat();
    s.set_initial_features(&flat).unwrap();
    let mut out = Vec::new();
    let (mut pos, mut pushes, mut last) = (0, 0, 0.0);
    for &n in sizes {
        let mut rest = &samples[pos..pos + n];
        pos += n;
        let mut best = f32::MIN;
        loop {
            let p = s.push_piece(rest).unwrap();
            pushes += 1;
            let score = if p.chunks == 0 {
                last
            } else {
                (0..p.chunks).rev().map(|b| head(s.head_input(b))).fold(f32::MIN, f32::max)
            };
            last = if pushes <= 5 { 0.0 } else { score };
            best = best.max(last);
            rest = &rest[p.consumed..];
            if rest.is_empty() {
                break;
            }
        }
        out.push(best);
    }
    out
}

fn reference(sizes: &[usize], samples: &[i16]) -> Vec<f32> {
    let mut r = Reference::new(&init_features());
    let mut pos = 0;
    sizes
        .iter()
        .map(|&n| {
            let x: Vec<f32> = samples[pos..pos + n].iter().map(|&v| f32::from(v)).collect();
            pos += n;
            r.predict(&x)
        })
        .collect()
}

#[test]
fn fixed_chunk_sizes_match_the_reference_exactly() {
    let samples = audio(48_000);
    for size in [1280, 640, 1000, 4000, 2560, 1, 1279, 1281, MAX_CHUNKS * CHUNK] {
        let count = if size == 1 { 5000 } else { samples.len() / size };
        let sizes = vec![size; count];
        assert_eq!(ours(&sizes, &samples), reference(&sizes, &samples), "chunk size {size}");
    }
}

#[test]
fn random_mix_matches_the_reference_exactly() {
    let samples = audio(64_000);
    let mut r = Xorshift(99);
    for _ in 0..5 {
        let mut sizes = Vec::new();
        let mut total = 0;
        loop {
            let n = (r.next() % 6000) as usize;
            if total + n > samples.len() {
                break;
            }
            total += n;
            sizes.push(n);
        }
        assert_eq!(ours(&sizes, &samples), reference(&sizes, &samples), "sizes {sizes:?}");
    }
}

#[test]
fn pushes_beyond_the_maximum_equal_their_pieces() {
    let samples = audio(40_000);
    // 700 samples, then one huge push: pieces complete MAX_CHUNKS chunks each.
    let big = 30_000;
    let got = ours(&[700, big], &samples);
    let first = MAX_CHUNKS * CHUNK - 700;
    let mut pieces = vec![700, first];
    let mut left = big - first;
    while left > 0 {
        let n = left.min(MAX_CHUNKS * CHUNK);
        pieces.push(n);
        left -= n;
    }
    let want = reference(&pieces, &samples);
    assert_eq!(got[0], want[0]);
    assert_eq!(got[1], want[1..].iter().cloned().fold(f32::MIN, f32::max));
}

#[test]
fn reset_replays_identically() {
    let samples = audio(20_000);
    let mut s = FeatureStream::new(FakeMel, FakeEmbedding);
    let run = |s: &mut FeatureStream<FakeMel, FakeEmbedding>| {
        let mut e = Vec::new();
        for c in samples.chunks(1000) {
            s.push_piece(c).unwrap();
            e.extend_from_slice(s.last_embedding());
        }
        e
    };
    let a = run(&mut s);
    s.reset();
    assert_eq!(s.total_samples(), 0);
    assert_eq!(run(&mut s), a);
}

/// An embedding stage installed after construction (as the bare-metal program does, whose
/// stream is built by the `const fn` constructor in a `static` before the weights exist).
struct Installed(Option<FakeEmbedding>);

impl EmbeddingStage for Installed {
    fn embed(&mut self, w: &[f32], out: &mut [f32]) -> Result<(), Error> {
        match &mut self.0 {
            Some(e) => e.embed(w, out),
            None => Err(Error::Input { what: "embedding stage", expected: "installed", got: 0 }),
        }
    }
}

/// Built at compile time (`FeatureStream::new` is a `const fn`).
static EMPTY: std::sync::Mutex<FeatureStream<FakeMel, Installed>> =
    std::sync::Mutex::new(FeatureStream::new(FakeMel, Installed(None)));

#[test]
fn const_built_stream_with_an_installed_stage_matches() {
    let samples = audio(20_000);
    let mut s = EMPTY.lock().unwrap();
    // Without a stage, a push that completes a chunk fails and leaves the stream reset.
    assert!(s.push_piece(&samples[..CHUNK]).is_err());
    assert_eq!(s.total_samples(), 0);
    s.embedding_mut().0 = Some(FakeEmbedding);
    assert!(s.embedding().0.is_some());
    let mut fresh = FeatureStream::new(FakeMel, FakeEmbedding);
    for c in samples.chunks(1000) {
        s.push_piece(c).unwrap();
        fresh.push_piece(c).unwrap();
        assert_eq!(s.last_embedding(), fresh.last_embedding());
        assert_eq!(s.head_input(0), fresh.head_input(0));
    }
}
