//! Instruction-count workloads for openWakeWord end to end: the mel frontend, the
//! speech-embedding CNN (the real `EmbeddingNet` plan with the converted weights) and the
//! hey_jarvis_v0.1 head, per stage and per 80 ms chunk, and `WakeDetector::push` of one
//! 1280-sample chunk in steady state.
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region is counted. Weight loading and packing, reading the inputs and the
//! detector's warm-up happen before it; the checks against the goldens after it.
//!
//! Inputs (the same as `tools/openwakeword/bench_peers.py`, all committed files, embedded in
//! the binary):
//! - mel: the first 1760 samples (80 ms + 480 samples of context, the size of one streaming
//!   mel call) of `models/openwakeword/clips/hey_jarvis.wav`, int16 values as f32 → `[8, 32]`
//!   dB;
//! - embedding: `mel_db[0:76] / 10 + 2` of `goldens/hey_jarvis.safetensors` (`[76, 32]`) →
//!   `[96]`;
//! - head: `features[5:21]` of the same golden (the window scored at chunk 20: first stage
//!   0.002 < 0.5, so the second stage does not run, the common case);
//! - head, second stage: `features[14:30]` (chunk 29: first stage 0.914 >= 0.5, the
//!   64-wide second head runs too).
//!
//! Usage: `insn_oww WORKLOAD [portable]` with WORKLOAD one of
//! - `mel`: `FRONTEND.run` on the 1760 samples;
//! - `embedding`: one embedding (`Embedding::embed`, the `EmbeddingNet` plan);
//! - `embedding-step`: one incremental embedding (`IncrementalEmbedding::embed`, one
//!   `EmbeddingStep`) of `mel_db[8:84] / 10 + 2`, after the stage embedded `mel_db[0:76]`
//!   (checked bitwise against the whole-window plan after the region);
//! - `embedding-prime`: a fresh incremental stage's first window (`mel_db[0:76]`): the
//!   priming pass of 10 steps;
//! - `head`: hey_jarvis_v0.1 on `features[5:21]` (first stage, then the `p1 >= 0.5` test);
//! - `head-stage2`: hey_jarvis_v0.1 on `features[14:30]` (both stages);
//! - `chunk`: mel + embedding + head back to back in one region (the per-chunk work);
//! - `push`: `WakeDetector::push` of the 1280 samples of chunk 20 of the clip padded by 1 s
//!   of zeros on each side (as the goldens stream it), after pushing chunks 0..20: one mel
//!   call on 1760 samples, the feature scaling, the buffer shifts, one embedding (the
//!   detector's default, incremental) and the head (first stage only);
//! - `push-full`: the same push with the whole-window embedding (`EmbeddingMode::Full`);
//! - `push-heads:N`: the same push scoring `N` heads: hey_jarvis (both stages; its score is
//!   checked), then alexa, hey_mycroft, hey_rhasspy and ok_nabu in turn, for the cost of
//!   each additional head;
//! - `push-stage2`: the same for chunk 29 (the second stage runs);
//! - `push:N`: `push` with the embedding on a worker team of `N` threads that parks without
//!   spinning (`TeamOptions { spin: false }`, so the count is deterministic; count it with
//!   `count-insns.sh --percpu`: the region then includes every thread's instructions).
//!
//! FLOPs (in `insn-count.sh`): `2 * MACs` of the convs (embedding) and of the dense layers
//! (head); mel, chunk and push rows report none. On aarch64 the backend is `Neon` (or
//! `Portable` with the second argument `portable`).

use neon_benches::{region_start, region_stop, wav_i16};
use neon_models::error::WeightsSource;
use neon_models::openwakeword::detector::{
    EmbeddingMode, WakeDetectorOn, WakeWord, STAGE2_THRESHOLD,
};
use neon_models::openwakeword::embedding::{boxed_workspace, Embedding, EmbeddingNetWeights};
use neon_models::openwakeword::head::HeadNet;
use neon_models::openwakeword::incremental::{self, IncrementalEmbedding};
use neon_models::openwakeword::mel::FRONTEND;
use neon_models::openwakeword::names::{STAGE1, STAGE2};
use neon_models::openwakeword::stream::EmbeddingStage;
use neon_models::weights::TensorFile;
use neon_runtime::{Backend, Portable, Team, TeamOptions};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

macro_rules! oww {
    ($rel:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/openwakeword/", $rel))
    };
}

const EMBEDDING: &[u8] = oww!("embedding.safetensors");
const HEAD: &[u8] = oww!("hey_jarvis_v0.1.safetensors");
/// The other official heads, added in turn by `push-heads:N` (single-stage models).
const OTHER_HEADS: [(&str, &[u8]); 4] = [
    ("alexa_v0.1", oww!("alexa_v0.1.safetensors")),
    ("hey_mycroft_v0.1", oww!("hey_mycroft_v0.1.safetensors")),
    ("hey_rhasspy_v0.1", oww!("hey_rhasspy_v0.1.safetensors")),
    ("ok_nabu_v0.1", oww!("ok_nabu_v0.1.safetensors")),
];
const GOLDEN: &[u8] = oww!("goldens/hey_jarvis.safetensors");
const CLIP: &[u8] = oww!("clips/hey_jarvis.wav");

/// Samples of one streaming mel call: one chunk (1280) plus 480 of context.
const MEL_SAMPLES: usize = 1760;
/// Chunk whose head window is the `head` input (`features[5:21]`).
const HEAD_CHUNK: usize = 20;
/// Chunk whose head window is the `head-stage2` input (`features[14:30]`).
const HEAD_STAGE2_CHUNK: usize = 29;
/// The hey_jarvis golden score tolerance of the model tests (TFLite's own rounding).
const SCORE_TOLERANCE: f32 = 1e-5;
/// The largest mel error (dB) accepted against the official model on the bench input (a
/// sanity check; the frontend's own tests bound the error by band level).
const MEL_TOLERANCE_DB: f32 = 0.05;

fn file(bytes: &'static [u8], name: &'static str) -> TensorFile<'static> {
    TensorFile::parse(bytes, WeightsSource::Embedded(name)).unwrap()
}

fn golden(name: &'static str) -> Vec<f32> {
    let g = file(GOLDEN, "goldens/hey_jarvis.safetensors");
    let shape = g.shape(name).unwrap_or_else(|| panic!("golden tensor {name} missing"));
    g.f32(name, &shape).unwrap()
}

/// hey_jarvis_v0.1's two stages.
fn heads() -> (HeadNet<Vec<f32>>, HeadNet<Vec<f32>>) {
    let f = file(HEAD, "hey_jarvis_v0.1");
    (HeadNet::load(&f, &STAGE1).unwrap(), HeadNet::load(&f, &STAGE2).unwrap())
}

/// The wake word's score as the detector computes it: the second stage replaces a first
/// stage score `>= 0.5`.
fn wake_score<B: Backend>(s1: &HeadNet<Vec<f32>>, s2: &HeadNet<Vec<f32>>, x: &[f32]) -> f32 {
    let p1 = s1.score::<B>(x).unwrap();
    if p1 >= STAGE2_THRESHOLD {
        s2.score::<B>(x).unwrap()
    } else {
        p1
    }
}

/// The embedding stage with the converted weights (loaded and packed here, not counted).
fn embedding<B: Backend>() -> impl EmbeddingStage {
    let w = EmbeddingNetWeights::load(&file(EMBEDDING, "embedding.safetensors")).unwrap();
    Embedding::<B, _, _>::new(w, boxed_workspace())
}

/// The incremental embedding stage with the converted weights.
fn incremental_embedding<B: Backend>() -> impl EmbeddingStage {
    let w = EmbeddingNetWeights::load(&file(EMBEDDING, "embedding.safetensors")).unwrap();
    IncrementalEmbedding::<B, _, _>::new(w, incremental::boxed_workspace())
}

/// The bench inputs: mel samples, embedding windows (`mel_db[0:76]` and `[8:84]`), head
/// windows (chunk 20 and 29).
struct Inputs {
    samples: Vec<f32>,
    window: Vec<f32>,
    next_window: Vec<f32>,
    head: Vec<f32>,
    head2: Vec<f32>,
}

fn inputs() -> Inputs {
    let clip = wav_i16(CLIP);
    let samples = clip[..MEL_SAMPLES].iter().map(|&s| f32::from(s)).collect();
    let mel: Vec<f32> = golden("mel_db").iter().map(|&v| v / 10.0 + 2.0).collect();
    let (window, next_window) = (mel[..76 * 32].to_vec(), mel[8 * 32..84 * 32].to_vec());
    let features = golden("features");
    let rows = |c: usize| features[(c - 15) * 96..(c + 1) * 96].to_vec();
    Inputs { samples, window, next_window, head: rows(HEAD_CHUNK), head2: rows(HEAD_STAGE2_CHUNK) }
}

/// Checks a hey_jarvis score against the goldens' score at `chunk`.
fn check_score(score: f32, chunk: usize) {
    let want = golden("scores.hey_jarvis_v0.1")[chunk];
    assert!((score - want).abs() <= SCORE_TOLERANCE, "chunk {chunk}: score {score} vs {want}");
}

/// Checks the mel output against the official model's on the same samples.
fn check_mel(mel: &[f32]) {
    let want = golden("mel_db_window");
    let diff = mel.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(diff <= MEL_TOLERANCE_DB, "mel differs from the official model by {diff} dB");
}

/// How a `push` workload runs: the embedding's mode, the team's size, the number of heads.
struct PushSetup {
    mode: EmbeddingMode,
    threads: usize,
    heads: usize,
}

impl PushSetup {
    const DEFAULT: Self = Self { mode: EmbeddingMode::Incremental, threads: 1, heads: 1 };
}

/// `WakeDetector::push` of chunk `chunk` of the padded clip, after chunks `0..chunk`, as
/// `setup` says (the embedding on a team of `threads`; 1: serial).
fn push<B: Backend>(chunk: usize, setup: PushSetup) -> f32 {
    let team = Team::with_options(setup.threads, TeamOptions { spin: false }).unwrap();
    let f = file(HEAD, "hey_jarvis_v0.1");
    let mut words = vec![WakeWord::new(
        "hey_jarvis_v0.1".into(),
        HeadNet::load(&f, &STAGE1).unwrap(),
        Some(HeadNet::load(&f, &STAGE2).unwrap()),
    )];
    for (name, bytes) in OTHER_HEADS.iter().cycle().take(setup.heads - 1) {
        let h = HeadNet::load(&file(bytes, name), &STAGE1).unwrap();
        words.push(WakeWord::new(name.to_string(), h, None));
    }
    let emb = file(EMBEDDING, "embedding.safetensors");
    let mut d = WakeDetectorOn::<B>::with_embedding_mode(&emb, words, setup.mode).unwrap();
    let mut data = vec![0i16; 16_000];
    data.extend(wav_i16(CLIP));
    data.extend(std::iter::repeat_n(0, 16_000));
    let mut chunks = data.chunks_exact(1280);
    for c in chunks.by_ref().take(chunk) {
        d.push_in(&team, c).unwrap();
    }
    let c = chunks.next().unwrap();
    region_start(1);
    let score = d.push_in(&team, c).unwrap()[0];
    region_stop(1);
    check_score(score, chunk);
    score
}

/// `fill` (one call writing `N` outputs, which must succeed; what it returns besides is
/// dropped) counted as region 1, into zeros; its outputs.
fn in_region<const N: usize, T, E: std::fmt::Debug>(
    fill: impl FnOnce(&mut [f32; N]) -> Result<T, E>,
) -> [f32; N] {
    let mut y = [0.0f32; N];
    region_start(1);
    fill(&mut y).unwrap();
    region_stop(1);
    y
}

fn run<B: Backend>(workload: &str) -> Option<f32> {
    let x = inputs();
    Some(match workload {
        "mel" => {
            let mel = in_region(|mel: &mut [f32; 8 * 32]| FRONTEND.run::<B>(&x.samples, mel));
            check_mel(&mel);
            mel.iter().sum()
        }
        "embedding" => {
            let mut net = embedding::<B>();
            in_region(|y: &mut [f32; 96]| net.embed(&x.window, y)).iter().sum()
        }
        "embedding-prime" => {
            let mut net = incremental_embedding::<B>();
            in_region(|y: &mut [f32; 96]| net.embed(&x.window, y)).iter().sum()
        }
        "embedding-step" => {
            let mut net = incremental_embedding::<B>();
            let mut y = [0.0f32; 96];
            net.embed(&x.window, &mut y).unwrap();
            region_start(1);
            net.embed(&x.next_window, &mut y).unwrap();
            region_stop(1);
            let mut want = [0.0f32; 96];
            embedding::<B>().embed(&x.next_window, &mut want).unwrap();
            assert!(y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "step != plan");
            y.iter().sum()
        }
        "head" | "head-stage2" => {
            let (s1, s2) = heads();
            let (input, chunk) = if workload == "head" {
                (&x.head, HEAD_CHUNK)
            } else {
                (&x.head2, HEAD_STAGE2_CHUNK)
            };
            region_start(1);
            let score = wake_score::<B>(&s1, &s2, input);
            region_stop(1);
            check_score(score, chunk);
            score
        }
        "chunk" => {
            let mut net = embedding::<B>();
            let (s1, s2) = heads();
            let mut mel = [0.0f32; 8 * 32];
            let mut y = [0.0f32; 96];
            region_start(1);
            FRONTEND.run::<B>(&x.samples, &mut mel).unwrap();
            net.embed(&x.window, &mut y).unwrap();
            let score = wake_score::<B>(&s1, &s2, &x.head);
            region_stop(1);
            check_mel(&mel);
            check_score(score, HEAD_CHUNK);
            mel.iter().sum::<f32>() + y.iter().sum::<f32>() + score
        }
        "push" => push::<B>(HEAD_CHUNK, PushSetup::DEFAULT),
        "push-stage2" => push::<B>(HEAD_STAGE2_CHUNK, PushSetup::DEFAULT),
        "push-full" => {
            push::<B>(HEAD_CHUNK, PushSetup { mode: EmbeddingMode::Full, ..PushSetup::DEFAULT })
        }
        w => {
            let number = |prefix: &str| w.strip_prefix(prefix)?.parse().ok().filter(|&n| n >= 1);
            if let Some(heads) = number("push-heads:") {
                push::<B>(HEAD_CHUNK, PushSetup { heads, ..PushSetup::DEFAULT })
            } else {
                push::<B>(HEAD_CHUNK, PushSetup { threads: number("push:")?, ..PushSetup::DEFAULT })
            }
        }
    })
}

fn main() {
    neon_benches::workload_main(
        "insn_oww mel|embedding|embedding-step|embedding-prime|head|head-stage2|chunk|push|push-stage2|push-full|push:THREADS|push-heads:N [portable]",
        run::<Portable>,
        run::<Fast>,
    );
}
