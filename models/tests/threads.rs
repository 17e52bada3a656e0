//! The real models give the same bits on any thread count: Moonshine's encoder output,
//! every logit of the first decoder steps (both int8 paths) and the greedy tokens, and
//! openWakeWord's embeddings and scores on a real recording, for worker teams of 2, 3, 4
//! and 7 threads against the serial run. On the host every backend the CPU has; on aarch64
//! (qemu in CI) NEON, on a shorter clip and teams of 3 and 4.

mod common;

use neon_models::error::WeightsSource;
use neon_models::moonshine::transcriber::{argmax, Transcriber};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::weights::TensorFile;
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::{Backend, Parallel, Serial, Team};

/// Thread counts checked against the serial run: 2, 3, 4 and 7 on the host; under qemu one
/// odd and one even count, 3 and 4 (each run streams the 38.5 M int8 weights through emulated
/// NEON: the serial run and four teams took 127 s of CI's qemu time). How a team splits the
/// rows is the same portable code on every architecture; the NEON kernels' splits on teams
/// of 2, 3, 4 and 7 are `neon-runtime/tests/parallel.rs`'s, under qemu too.
const THREADS: &[usize] = if cfg!(target_arch = "aarch64") { &[3, 4] } else { &[2, 3, 4, 7] };

/// Seconds of beckett.wav the Moonshine check encodes: 4 s on the host (160 encoder
/// frames: two blocks of every int8 GEMM's row unit, 80 rows at AVX2), 1 s under qemu.
const MOONSHINE_SECONDS: usize = common::host_or_qemu(4, 1);

/// Decoder steps whose logits are compared (per int8 path): fewer under qemu, where each step
/// streams the 38.5 M int8 weights through emulated NEON.
const STEPS: usize = common::host_or_qemu(4, 2);

/// Greedy tokens decoded per run: fewer under qemu, where this test (five runs of each model)
/// took over three minutes with 12 greedy tokens and 4 steps per path.
const GREEDY: usize = common::host_or_qemu(12, 3);

fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        panic!("{what}: index {i}: {} vs {}", got[i], want[i]);
    }
}

/// What one context computes from the clip: encoder output, logits per path and step,
/// greedy tokens.
struct MoonshineRun {
    encoder: Vec<f32>,
    logits: Vec<Vec<f32>>,
    tokens: Vec<u32>,
}

fn moonshine_run(t: &mut Transcriber, par: &dyn Parallel, audio: &[f32]) -> MoonshineRun {
    t.encode_in(par, audio).unwrap();
    let encoder = t.encoder_output().to_vec();
    let mut logits = Vec::new();
    for path in [QuantPath::Widening, QuantPath::Dot] {
        t.set_decoder_path(path);
        t.restart();
        let mut token = 1;
        for _ in 0..STEPS {
            let l = t.decode_step_in(par, token).unwrap();
            token = argmax(l);
            logits.push(l.to_vec());
        }
    }
    t.set_decoder_path(QuantPath::Widening);
    let mut tokens = Vec::new();
    t.greedy_in(par, GREEDY, &mut tokens).unwrap();
    MoonshineRun { encoder, logits, tokens }
}

fn moonshine_same_bits<B: Backend>() {
    let goldens = common::moonshine::goldens();
    let beckett = goldens.iter().find(|g| g.name == "beckett").expect("beckett golden");
    let audio = &beckett.audio[..MOONSHINE_SECONDS * 16_000];
    let mut t = common::moonshine::transcriber::<B>();
    let want = moonshine_run(&mut t, &Serial, audio);
    assert!(want.tokens.len() > 3, "the clip decodes to words");
    for &n in THREADS {
        let team = Team::new(n).unwrap();
        let got = moonshine_run(&mut t, &team, audio);
        assert_bits(&format!("{} encoder, {n} threads", B::NAME), &got.encoder, &want.encoder);
        for (s, (g, w)) in got.logits.iter().zip(&want.logits).enumerate() {
            assert_bits(&format!("{} logits of step {s}, {n} threads", B::NAME), g, w);
        }
        assert_eq!(got.tokens, want.tokens, "{} tokens, {n} threads", B::NAME);
    }
}

/// Per push of the committed "hey jarvis" clip: the newest embedding and the five scores.
fn oww_run<B: Backend>(par: &dyn Parallel) -> Vec<Vec<f32>> {
    let words = builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let embedding =
        TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let mut d = WakeDetectorOn::<B>::with_embedding(&embedding, words).unwrap();
    let audio = neon_audio::Audio::open(common::oww_path("clips/hey_jarvis.wav")).unwrap();
    let samples = audio.to_i16();
    let mut out = Vec::new();
    // One push of 3 chunks first (several embeddings per push), then chunk by chunk.
    let (first, rest) = samples.split_at(3 * CHUNK);
    for piece in std::iter::once(first).chain(rest.chunks(CHUNK)) {
        let scores = d.push_in(par, piece).unwrap().to_vec();
        let mut row = d.stream().last_embedding().to_vec();
        row.extend(scores);
        out.push(row);
    }
    out
}

fn openwakeword_same_bits<B: Backend>() {
    let want = oww_run::<B>(&Serial);
    assert!(want.iter().any(|r| r[r.len() - 5..].iter().any(|&s| s > 0.5)), "the clip wakes");
    for &n in THREADS {
        let team = Team::new(n).unwrap();
        let got = oww_run::<B>(&team);
        for (p, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_bits(&format!("{} push {p} (embedding, scores), {n} threads", B::NAME), g, w);
        }
    }
}

host_and_neon_tests!(moonshine_same_bits, openwakeword_same_bits);
