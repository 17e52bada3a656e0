//! Shared immutable weights and component selection: four threads, each with its own
//! transcriber (or wake-word detector) over one shared weights set, give bitwise the
//! results of instances over weights loaded on their own; and `<family>.exec_plan` puts
//! each component on the backend it names.

mod common;

use std::sync::Arc;

use neon_models::error::WeightsSource;
use neon_models::exec_plan::Family;
use neon_models::moonshine::transcriber::{argmax, MoonshineModel, Transcriber};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::{EmbeddingMode, WakeDetectorOn, WakeWord};
use neon_models::openwakeword::selection::{builtin_embedding, WakeDetector};
use neon_models::session::SessionOptions;
use neon_models::weights::TensorFile;
use neon_runtime::{BackendKind, Portable};

/// What a transcriber computes from a clip: encoder output, the logits of the first steps
/// and the greedy tokens.
#[derive(PartialEq)]
struct Run {
    encoder: Vec<u32>,
    logits: Vec<u32>,
    tokens: Vec<u32>,
}

/// Decoder steps whose logits are compared, greedy tokens, samples per slice and wake-word
/// chunks: smaller under qemu, which runs NEON float code at about 30 M instructions/s.
const STEPS: usize = common::host_or_qemu(3, 1);
const GREEDY: usize = common::host_or_qemu(6, 2);
const SLICE: usize = common::host_or_qemu(16_000, 4_000);
const WAKE_CHUNKS: usize = common::host_or_qemu(usize::MAX, 12);

fn run(t: &mut Transcriber, audio: &[f32]) -> Run {
    t.encode(audio).unwrap();
    let encoder = t.encoder_output().iter().map(|v| v.to_bits()).collect();
    let mut logits = Vec::new();
    let mut token = 1;
    for _ in 0..STEPS {
        let l = t.decode_step(token).unwrap();
        token = argmax(l);
        logits.extend(l.iter().map(|v| v.to_bits()));
    }
    let mut tokens = Vec::new();
    t.greedy(GREEDY, &mut tokens).unwrap();
    Run { encoder, logits, tokens }
}

/// Four slices of beckett.wav (1 s on the host) at different offsets (one per thread).
fn slices() -> Vec<Vec<f32>> {
    let goldens = common::moonshine::goldens();
    let beckett = goldens.iter().find(|g| g.name == "beckett").expect("beckett golden");
    (0..4).map(|i| beckett.audio[i * 32_000..i * 32_000 + SLICE].to_vec()).collect()
}

#[test]
fn four_threads_over_one_moonshine_model_match_independent_instances() {
    let slices = slices();
    let options = SessionOptions::new();
    // Independent: a model loaded on its own, one transcriber, the slices in turn.
    let own = MoonshineModel::open(&common::moonshine::model_dir()).unwrap();
    let mut alone = Transcriber::new(own, &options).unwrap();
    let want: Vec<Run> = slices.iter().map(|s| run(&mut alone, s)).collect();
    drop(alone);
    // Shared: one model, four transcribers on four threads at once.
    let shared = common::moonshine::model();
    let got: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = slices
            .iter()
            .map(|s| {
                let (model, options) = (Arc::clone(&shared), &options);
                scope.spawn(move || {
                    let mut t = Transcriber::new(model, options).unwrap();
                    assert!(Arc::ptr_eq(t.model(), &common::moonshine::model()), "a copy");
                    run(&mut t, s)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g.encoder == w.encoder, "slice {i}: encoder output differs");
        assert!(g.logits == w.logits, "slice {i}: logits differ");
        assert_eq!(g.tokens, w.tokens, "slice {i}: tokens");
    }
    assert!(want.iter().all(|r| r.tokens.len() > 1), "every slice decodes tokens");
}

#[test]
fn exec_plan_puts_each_component_on_its_backend() {
    let best = BackendKind::best();
    let options =
        SessionOptions::from_pairs([r#"moonshine_asr.exec_plan={"decoder":"portable"}"#]).unwrap();
    let model = common::moonshine::model();
    let mut mixed = Transcriber::new(Arc::clone(&model), &options).unwrap();
    assert_eq!(mixed.backends(), (best, BackendKind::Portable));
    let mut fast = Transcriber::with_backends(Arc::clone(&model), best, best).unwrap();
    let mut portable = Transcriber::on::<Portable>(Arc::clone(&model)).unwrap();
    assert_eq!(portable.backends(), (BackendKind::Portable, BackendKind::Portable));
    let audio = &slices()[0];
    let (m, f, p) = (run(&mut mixed, audio), run(&mut fast, audio), run(&mut portable, audio));
    // The encoder ran on the default backend, bit for bit.
    assert!(m.encoder == f.encoder, "the mixed encoder is not the default backend's");
    if best != BackendKind::Portable {
        // The backends round differently (fused multiply-adds), so the decoder's logits
        // tell which one ran: not the default's.
        assert!(m.logits != f.logits, "the mixed decoder ran on the default backend");
        assert!(p.encoder != f.encoder, "the portable encoder matched the default's bits");
    }
    assert_eq!(m.tokens, p.tokens, "tokens of mixed backends");
    // The int8 path is a session option too.
    let dot = SessionOptions::from_pairs(["moonshine_asr.int8=dot"]).unwrap();
    let mut t = Transcriber::new(model, &dot).unwrap();
    let d = run(&mut t, audio);
    assert!(d.encoder == f.encoder, "the int8 path changes only the decoder");
    assert!(d.logits != f.logits, "moonshine_asr.int8=dot did not reach the decoder");
    // Options are family-scoped: the encoder of moonshine_asr is not sanotts's decoder.
    let other = SessionOptions::from_pairs([r#"sanotts.exec_plan={"decoder":"portable"}"#]);
    let t = Transcriber::new(common::moonshine::model(), &other.unwrap()).unwrap();
    assert_eq!(t.backends(), (best, best));
    assert_eq!(other_family_default(), best);
}

fn other_family_default() -> BackendKind {
    SessionOptions::new().backend(Family::OpenWakeWord, "embedding")
}

/// Per push of `samples` in chunks of `chunk`: the newest embedding and every score.
fn wake_run(d: &mut WakeDetector, samples: &[i16], chunk: usize) -> Vec<u32> {
    let mut out = Vec::new();
    for piece in samples.chunks(chunk) {
        let scores = d.push(piece).unwrap().to_vec();
        out.extend(d.last_embedding().iter().chain(&scores).map(|v| v.to_bits()));
    }
    out
}

/// The committed "hey jarvis" clip (its first `WAKE_CHUNKS` chunks).
fn hey_jarvis() -> Vec<i16> {
    let mut s = neon_audio::Audio::open(common::oww_path("clips/hey_jarvis.wav")).unwrap().to_i16();
    s.truncate(WAKE_CHUNKS.saturating_mul(1280));
    s
}

fn wake_words() -> Vec<WakeWord> {
    builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect()
}

#[test]
fn four_threads_over_one_wake_model_match_independent_detectors() {
    let samples = hey_jarvis();
    let chunks = [1280, 640, 1000, 3 * 1280];
    let options = SessionOptions::new();
    let want: Vec<Vec<u32>> = chunks
        .iter()
        .map(|&c| {
            let mut alone = WakeDetector::with_builtin_embedding(wake_words(), &options).unwrap();
            wake_run(&mut alone, &samples, c)
        })
        .collect();
    let embedding = builtin_embedding().unwrap();
    let words = wake_words();
    let got: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|&c| {
                let (embedding, words, options) = (Arc::clone(&embedding), words.clone(), &options);
                let samples = &samples;
                scope.spawn(move || {
                    let mut d = WakeDetector::new(embedding, words, options).unwrap();
                    wake_run(&mut d, samples, c)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (c, (g, w)) in chunks.iter().zip(got.iter().zip(&want)) {
        assert!(g == w, "chunks of {c}: the shared detector differs from an independent one");
    }
    // On the host the whole clip wakes hey_jarvis (scores are the last 5 of each row).
    #[cfg(not(target_arch = "aarch64"))]
    assert!(want[0].chunks(101).any(|r| f32::from_bits(r[97]) > 0.5), "hey_jarvis wakes");
    // Four detectors and the test held one embedding weights set.
    assert_eq!(Arc::strong_count(&embedding), 1);
}

#[test]
fn exec_plan_selects_the_wake_detectors_backend() {
    let samples = &hey_jarvis();
    let pairs = [
        r#"openwakeword.exec_plan={"embedding":{"impl":"portable","backend":"cpu"}}"#,
        "openwakeword.embedding_mode=full",
    ];
    let options = SessionOptions::from_pairs(pairs).unwrap();
    let mut d = WakeDetector::with_builtin_embedding(wake_words(), &options).unwrap();
    assert_eq!(d.backend(), BackendKind::Portable);
    assert_eq!(d.embedding_mode(), EmbeddingMode::Full);
    let got = wake_run(&mut d, samples, 1280);
    // The same bits as the detector typed for the portable backend.
    let file = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let mut typed = WakeDetectorOn::<Portable>::with_embedding(&file, wake_words()).unwrap();
    let mut want = Vec::new();
    for piece in samples.chunks(1280) {
        let scores = typed.push(piece).unwrap().to_vec();
        want.extend(typed.stream().last_embedding().iter().chain(&scores).map(|v| v.to_bits()));
    }
    assert!(got == want, "the portable selection differs from WakeDetectorOn<Portable>");
    let d = WakeDetector::with_builtin_embedding(wake_words(), &SessionOptions::new()).unwrap();
    assert_eq!(d.backend(), BackendKind::best());
    assert_eq!(d.embedding_mode(), EmbeddingMode::Incremental);
}

/// The per-instance memory docs/architecture.md states.
#[test]
fn per_instance_memory() {
    println!(
        "WakeDetector {} bytes, Transcriber {} bytes",
        WakeDetector::INSTANCE_BYTES,
        Transcriber::INSTANCE_BYTES
    );
    assert_eq!(Transcriber::INSTANCE_BYTES.div_ceil(100_000), 818); // 81.8 MB
    assert_eq!(WakeDetector::INSTANCE_BYTES, 260_080); // the feature stream 90,848 + 169,232
}
