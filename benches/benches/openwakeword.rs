//! Host criterion benchmark of openWakeWord's per-chunk work (one 80 ms chunk), on the same
//! inputs as the peer script `tools/openwakeword/bench_peers.py` (TFLite / XNNPACK and ONNX
//! Runtime), so BENCHMARKS.md can put the figures side by side:
//!
//! - `mel`: the frontend on the first 1760 samples of `clips/hey_jarvis.wav` (int16 values
//!   as f32) -> `[8, 32]` dB;
//! - `embedding`: the speech-embedding CNN on `mel_db[0:76] / 10 + 2` of
//!   `goldens/hey_jarvis.safetensors` (`[76, 32]`) -> `[96]`;
//! - `head`: hey_jarvis_v0.1's first stage on `features[5:21]` of the same file (score
//!   0.002: the second stage does not run, the common case while streaming);
//! - `head_stage2`: features[14:30] (first-stage score 0.914 >= 0.5, so the second stage
//!   runs too), not part of the chunk;
//! - `chunk`: mel, embedding and head back to back;
//! - `embedding_t2`, `chunk_t2`: the same with the embedding on a worker team of 2 threads
//!   (`RunOptions::with_parallel`; mel and head stay on the calling thread);
//! - `embedding_step`: one step of the incremental embedding (`IncrementalWorkspace::step`,
//!   one `EmbeddingStep`: the rows 8 new mel frames add, on the 10 newest frames of the
//!   window and the kept rows);
//! - `push`, `push_full`: `WakeDetector::push` of one 1280-sample chunk in steady state
//!   (hey_jarvis only; the clip padded by 1 s of zeros on each side, pushed round and round):
//!   mel, buffers, embedding and head, with the incremental embedding (the default) and with
//!   the whole-window one (`EmbeddingMode::Full`, what the peers compute per chunk).
//!
//! The input tensors are bitwise the peer script's (the sha256 of their f32 little-endian
//! bytes equals the `inputs.*.sha256_f32le` of its JSON output).
//!
//! Single thread but for the `_t2` rows; weights loaded and packed beforehand, no
//! allocation in the timed calls.
//! The backend is the one `neon wake` runs, `BackendKind::best()`: `Neon` on aarch64, the
//! best `X86` level of the CPU on x86-64, chosen once for the whole bench.

use std::path::PathBuf;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use neon_audio::Audio;
use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::{EmbeddingMode, WakeDetectorOn};
use neon_models::openwakeword::embedding::{
    boxed_workspace, EmbeddingNet, EmbeddingNetWeights, EmbeddingNetWorkspace,
};
use neon_models::openwakeword::head::{HeadNet, HEAD_INPUT};
use neon_models::openwakeword::incremental::{self, STEP_ROWS};
use neon_models::openwakeword::mel::{to_features, MelFrontend, FRONTEND, N_MELS};
use neon_models::openwakeword::names::{STAGE1, STAGE2};
use neon_models::weights::TensorFile;
use neon_runtime::{Backend, RunOptions, Team};

/// Samples of one mel call per chunk (1280 new + 480 of context).
const MEL_SAMPLES: usize = 1760;
/// Mel frames of one embedding window.
const WINDOW_FRAMES: usize = 76;
/// Embedding width.
const DIM: usize = 96;
/// Threshold of hey_jarvis's second stage.
const STAGE2_THRESHOLD: f32 = 0.5;

fn oww_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/openwakeword").join(rel)
}

/// A committed safetensors file, parsed; its bytes live for the whole run.
fn oww_file(rel: &str) -> TensorFile<'static> {
    let path = oww_path(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    TensorFile::parse(Box::leak(bytes.into_boxed_slice()), WeightsSource::File(path)).unwrap()
}

/// The f32 tensor `name` of `file` and its shape.
fn tensor(file: &TensorFile<'_>, name: &'static str) -> (Vec<f32>, Vec<usize>) {
    let shape = file.shape(name).unwrap_or_else(|| panic!("tensor {name} missing"));
    (file.f32(name, &shape).unwrap(), shape)
}

/// hey_jarvis_v0.1's two stages.
fn hey_jarvis() -> (HeadNet<Vec<f32>>, HeadNet<Vec<f32>>) {
    let (_, bytes) = builtin::HEADS.iter().find(|(n, _)| *n == "hey_jarvis_v0.1").unwrap();
    let file = TensorFile::parse(bytes, WeightsSource::Embedded("hey_jarvis_v0.1")).unwrap();
    (HeadNet::load(&file, &STAGE1).unwrap(), HeadNet::load(&file, &STAGE2).unwrap())
}

/// The benchmark's inputs (see the module docs).
struct Inputs {
    samples: Vec<f32>,
    window: Vec<f32>,
    head: Vec<f32>,
    head_stage2: Vec<f32>,
}

fn inputs() -> Inputs {
    let audio = Audio::open(oww_path("clips/hey_jarvis.wav")).unwrap();
    let samples: Vec<f32> = audio.to_i16()[..MEL_SAMPLES].iter().map(|&v| v as f32).collect();
    let golden = oww_file("goldens/hey_jarvis.safetensors");
    let (mel_db, shape) = tensor(&golden, "mel_db");
    assert_eq!(shape[1], N_MELS);
    let mut window = mel_db[..WINDOW_FRAMES * N_MELS].to_vec();
    to_features(&mut window);
    let (features, shape) = tensor(&golden, "features");
    assert_eq!(shape[1], DIM);
    let rows = |chunk: usize| features[(chunk - 15) * DIM..(chunk + 1) * DIM].to_vec();
    Inputs { samples, window, head: rows(20), head_stage2: rows(29) }
}

/// The wake word's score: the first stage, and the second when the first reaches 0.5.
fn score<B: Backend>(s1: &HeadNet<Vec<f32>>, s2: &HeadNet<Vec<f32>>, x: &[f32]) -> f32 {
    let p = s1.score::<B>(x).unwrap();
    if p >= STAGE2_THRESHOLD {
        s2.score::<B>(x).unwrap()
    } else {
        p
    }
}

fn bench_openwakeword(cr: &mut Criterion) {
    neon_benches::bench_on_best_backend!(bench, cr);
}

fn bench<B: Backend>(cr: &mut Criterion) {
    let inp = inputs();
    let weights = EmbeddingNetWeights::load(&oww_file("embedding.safetensors")).unwrap();
    let mut ws: Box<EmbeddingNetWorkspace> = boxed_workspace();
    let (s1, s2) = hey_jarvis();
    let mut mel = vec![0.0f32; MelFrontend::output_len(MEL_SAMPLES)];
    let mut emb = vec![0.0f32; DIM];
    assert_eq!(inp.head.len(), HEAD_INPUT);

    // The inputs select the paths the peers' figures describe.
    let p = score::<B>(&s1, &s2, &inp.head);
    assert!(p < STAGE2_THRESHOLD, "head input must stay in the first stage ({p})");
    let p1 = s1.score::<B>(&inp.head_stage2).unwrap();
    assert!(p1 >= STAGE2_THRESHOLD, "head_stage2 input must reach the second stage ({p1})");

    let mut g = cr.benchmark_group("openwakeword");
    g.bench_function("mel", |bn| {
        bn.iter(|| FRONTEND.run::<B>(black_box(&inp.samples), &mut mel).unwrap())
    });
    g.bench_function("embedding", |bn| {
        bn.iter(|| {
            EmbeddingNet::run::<B, _>(&weights, black_box(&inp.window), &mut emb, &mut ws).unwrap()
        })
    });
    g.bench_function("head", |bn| bn.iter(|| score::<B>(&s1, &s2, black_box(&inp.head))));
    g.bench_function("head_stage2", |bn| {
        bn.iter(|| score::<B>(&s1, &s2, black_box(&inp.head_stage2)))
    });
    g.bench_function("chunk", |bn| {
        bn.iter(|| {
            FRONTEND.run::<B>(black_box(&inp.samples), &mut mel).unwrap();
            EmbeddingNet::run::<B, _>(&weights, black_box(&inp.window), &mut emb, &mut ws).unwrap();
            score::<B>(&s1, &s2, black_box(&inp.head))
        })
    });
    let team = Team::new(2).unwrap();
    let t2 = RunOptions::new().with_parallel(&team);
    g.bench_function("embedding_t2", |bn| {
        bn.iter(|| {
            let x = black_box(&inp.window);
            EmbeddingNet::run_with::<B, _>(&weights, x, &mut emb, &mut ws, t2).unwrap()
        })
    });
    g.bench_function("chunk_t2", |bn| {
        bn.iter(|| {
            FRONTEND.run::<B>(black_box(&inp.samples), &mut mel).unwrap();
            let x = black_box(&inp.window);
            EmbeddingNet::run_with::<B, _>(&weights, x, &mut emb, &mut ws, t2).unwrap();
            score::<B>(&s1, &s2, black_box(&inp.head))
        })
    });
    let mut step_ws = incremental::boxed_workspace();
    let x = &inp.window[(WINDOW_FRAMES - STEP_ROWS) * N_MELS..];
    g.bench_function("embedding_step", |bn| {
        bn.iter(|| {
            step_ws.step::<B, _>(&weights, black_box(x), &mut emb, RunOptions::new()).unwrap()
        })
    });
    let embedding =
        TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let mut clip = vec![0i16; 16_000];
    clip.extend(Audio::open(oww_path("clips/hey_jarvis.wav")).unwrap().to_i16());
    clip.extend(std::iter::repeat_n(0, 16_000));
    for (name, mode) in [("push", EmbeddingMode::Incremental), ("push_full", EmbeddingMode::Full)] {
        let word = builtin::wake_word("hey_jarvis").unwrap();
        let mut d = WakeDetectorOn::<B>::with_embedding_mode(&embedding, vec![word], mode).unwrap();
        let mut chunks = clip.chunks_exact(1280).cycle();
        g.bench_function(name, |bn| {
            bn.iter(|| d.push(black_box(chunks.next().unwrap())).unwrap()[0])
        });
    }
    g.finish();
}

criterion_group!(benches, bench_openwakeword);
criterion_main!(benches);
