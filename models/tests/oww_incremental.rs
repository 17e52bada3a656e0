//! The incremental speech embedding gives bitwise the whole-window plan's embeddings:
//! stage by stage on random mel windows (consecutive ones, jumps, repeats, other shifts),
//! and through whole detectors on long random audio streams (random push sizes, pushes of
//! several chunks and of more than `MAX_CHUNKS`, resets in the middle), comparing every
//! embedding and every score. On the host every backend the CPU has; on aarch64 (qemu in
//! CI) NEON, on shorter streams.

mod common;

use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::{EmbeddingMode, WakeDetectorOn};
use neon_models::openwakeword::embedding::{boxed_workspace, Embedding, EmbeddingNetWeights};
use neon_models::openwakeword::incremental::{self, IncrementalEmbedding};
use neon_models::openwakeword::stream::{
    EmbeddingStage, CHUNK, EMBEDDING_DIM, EMBEDDING_WINDOW, FRAMES_PER_CHUNK, MAX_CHUNKS, MEL_BINS,
};
use neon_models::weights::TensorFile;
use neon_runtime::Backend;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Windows of the stage test and chunks of the stream test. Under qemu the NEON float
/// arithmetic runs at about 30 M instructions per second, and the whole-window reference
/// costs 13 M per chunk: 60 chunks (and 12 windows) keep the suite near 30 s there; the
/// stream logic is the same code on every target and gets its thousands of chunks on the
/// host.
const WINDOWS: usize = common::host_or_qemu(300, 12);
const CHUNKS: usize = common::host_or_qemu(2000, 60);
/// Pushes between resets of the stream test (besides its seeded random ones).
const RESET_EVERY: usize = CHUNKS / 4;

fn weights() -> EmbeddingNetWeights<Vec<f32>> {
    let file = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    EmbeddingNetWeights::load(&file).unwrap()
}

fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        panic!("{what}: index {i}: {} vs {}", got[i], want[i]);
    }
}

/// Random mel windows in openWakeWord's feature range (dB / 10 + 2 spans about -6 ..
/// 10): mostly the next window 8 frames on, sometimes a jump, a repeat or another shift.
fn stage_matches_whole_window<B: Backend>() {
    let mut full = Embedding::<B, _, _>::new(weights(), boxed_workspace());
    let mut inc = IncrementalEmbedding::<B, _, _>::new(weights(), incremental::boxed_workspace());
    let mut rng = SmallRng::seed_from_u64(11);
    let frames = 4000;
    let mel: Vec<f32> = (0..frames * MEL_BINS).map(|_| rng.gen_range(-6.0f32..10.0)).collect();
    let (mut start, mut want, mut got) = (0usize, [0.0f32; EMBEDDING_DIM], [0.0f32; EMBEDDING_DIM]);
    let mut kinds = [0usize; 4];
    for w in 0..WINDOWS {
        // Every kind first (a jump, next, next, repeat, next, shift, next, jump, next), then
        // at random, two thirds of them the next window.
        const FIRST: [usize; 9] = [0, 1, 1, 2, 1, 3, 1, 0, 1];
        let kind =
            FIRST.get(w).copied().unwrap_or([1, 1, 1, 1, 1, 1, 2, 3, 0][rng.gen_range(0..9)]);
        kinds[kind] += 1;
        start = match kind {
            0 => rng.gen_range(0..frames - EMBEDDING_WINDOW), // a jump
            1 => start + FRAMES_PER_CHUNK,                    // the next window
            2 => start,                                       // the same window again
            _ => start + rng.gen_range(1..2 * FRAMES_PER_CHUNK), // another shift
        };
        if start + EMBEDDING_WINDOW > frames {
            start = 0;
        }
        let window = &mel[start * MEL_BINS..(start + EMBEDDING_WINDOW) * MEL_BINS];
        full.embed(window, &mut want).unwrap();
        inc.embed(window, &mut got).unwrap();
        assert_bits(&format!("{} window {w} (kind {kind}, start {start})", B::NAME), &got, &want);
    }
    assert!(kinds.iter().all(|&k| k > 0), "every kind of window ran: {kinds:?}");
    assert!(kinds[1] >= 3, "consecutive windows ran: {kinds:?}");
    // A window of the wrong size is an error, and the stage primes and stays exact after it.
    assert!(inc.embed(&mel[..10], &mut got).is_err());
    let window = &mel[..EMBEDDING_WINDOW * MEL_BINS];
    full.embed(window, &mut want).unwrap();
    inc.embed(window, &mut got).unwrap();
    assert_bits(&format!("{} after an error", B::NAME), &got, &want);
}

/// Audio that changes character: noise of a random level, tones, silence, full-scale bursts.
fn audio(rng: &mut SmallRng, n: usize) -> Vec<i16> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = rng.gen_range(100..8000).min(n - out.len());
        let kind = rng.gen_range(0..4);
        let (level, freq) = (rng.gen_range(0.0f32..20000.0), rng.gen_range(100.0f32..4000.0));
        for i in 0..len {
            let v = match kind {
                0 => rng.gen_range(-1.0f32..1.0) * level,
                1 => (i as f32 * freq * std::f32::consts::TAU / 16000.0).sin() * level,
                2 => 0.0,
                _ => rng.gen_range(-32768.0f32..32767.0),
            };
            out.push(v.clamp(-32768.0, 32767.0) as i16);
        }
    }
    out
}

/// Two detectors (incremental, whole-window) on the same long random stream: every score
/// and the newest embedding after every push, bit for bit.
fn detectors_agree_on_long_streams<B: Backend>() {
    let file = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let words = || builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let mut inc = WakeDetectorOn::<B>::with_embedding(&file, words()).unwrap();
    let mut full =
        WakeDetectorOn::<B>::with_embedding_mode(&file, words(), EmbeddingMode::Full).unwrap();
    assert_eq!(inc.stream().embedding().mode(), EmbeddingMode::Incremental);
    assert_eq!(inc.words().len(), 5, "the five official heads score the stream");
    let mut rng = SmallRng::seed_from_u64(12);
    let samples = audio(&mut rng, CHUNKS * CHUNK);
    let (mut at, mut pushes, mut resets, mut big) = (0, 0, 0, 0);
    while at < samples.len() {
        // The fourth push is always one of more than MAX_CHUNKS chunks (split in pieces).
        let len = match if pushes == 3 { 0 } else { rng.gen_range(0..20) } {
            0 => rng.gen_range(MAX_CHUNKS * CHUNK..(MAX_CHUNKS + 4) * CHUNK), // split in pieces
            1..=3 => rng.gen_range(CHUNK..4 * CHUNK),                         // several chunks
            4 => 0,
            _ => rng.gen_range(1..2 * CHUNK),
        };
        big += usize::from(len >= MAX_CHUNKS * CHUNK);
        let piece = &samples[at..(at + len).min(samples.len())];
        at += piece.len();
        let want = full.push(piece).unwrap().to_vec();
        let got = inc.push(piece).unwrap().to_vec();
        let what = format!("{} push {pushes} (sample {at})", B::NAME);
        assert_bits(&format!("{what}: scores"), &got, &want);
        let (g, w) = (inc.stream().last_embedding(), full.stream().last_embedding());
        assert_bits(&format!("{what}: embedding"), g, w);
        pushes += 1;
        if pushes % RESET_EVERY == 0 || rng.gen_range(0..300) == 0 {
            inc.reset();
            full.reset();
            resets += 1;
        }
    }
    assert!(resets > 0 && big > 0, "the stream reset ({resets}) and split pushes ({big})");
}

host_and_neon_tests!(stage_matches_whole_window, detectors_agree_on_long_streams);

#[test]
fn the_incremental_workspace_is_smaller_than_the_whole_windows() {
    use neon_models::openwakeword::embedding::EmbeddingNet;
    use neon_models::openwakeword::incremental::{EmbeddingStep, IncrementalWorkspace};
    let (inc, step, whole) = (
        IncrementalWorkspace::BYTES,
        EmbeddingStep::WORKSPACE_BYTES,
        EmbeddingNet::WORKSPACE_BYTES,
    );
    println!("incremental workspace {inc} bytes (step plan {step}), whole-window plan {whole}");
    assert!(step < inc && inc < whole / 2, "{inc} vs {whole}");
}
