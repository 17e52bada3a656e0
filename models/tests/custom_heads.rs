//! Users' heads through the run-time path (`openwakeword::custom`): a [`HeadGraph`] built
//! from each official head's tensors scores every push of a real clip with bitwise the
//! compiled plan's score, inside a detector (second stage included); heads reading other
//! frame counts (1, 28, 120) get their windows from a history sized for them, match an f64
//! evaluation, and leave the 16-frame heads' scores unchanged; bad graphs are refused with
//! one-line messages before anything runs.

use std::path::PathBuf;
use std::sync::Arc;

use neon_audio::Audio;
use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom::{
    self, Format, HeadGraph, HeadGraphExt, Layer, SecondStage, MAX_FRAMES,
};
use neon_models::openwakeword::detector::{WakeDetectorOn, WakeWord};
use neon_models::openwakeword::names::{HeadNames, STAGE1, STAGE2};
use neon_models::openwakeword::stream::{CHUNK, EMBEDDING_DIM};
use neon_models::weights::TensorFile;
use neon_runtime::Portable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn source() -> WeightsSource {
    WeightsSource::Embedded("test")
}

/// The layers of one stage of a converted head, as a parser would describe them.
fn stage(file: &TensorFile<'_>, n: &HeadNames) -> Vec<Layer> {
    let mut layers = Vec::new();
    let layer_norm = file.contains(n.norm[0]);
    for i in 0..3 {
        let shape = file.shape(n.dense[i]).unwrap();
        let (out_features, in_features) = (shape[0], shape[1]);
        layers.push(Layer::Dense {
            in_features,
            out_features,
            weight: file.f32(n.dense[i], &shape).unwrap(),
            bias: Some(file.f32(n.dense_bias[i], &[out_features]).unwrap()),
        });
        if i == 2 {
            break;
        }
        if layer_norm {
            layers.push(Layer::LayerNorm {
                features: out_features,
                eps: 1e-5,
                gamma: Some(file.f32(n.norm[i], &[out_features]).unwrap()),
                beta: Some(file.f32(n.norm_bias[i], &[out_features]).unwrap()),
            });
        }
        layers.push(Layer::Relu);
    }
    layers.push(Layer::Sigmoid);
    layers
}

/// The official head `bytes` as a [`HeadGraph`].
fn graph_of(bytes: &[u8]) -> HeadGraph {
    let file = TensorFile::parse(bytes, source()).unwrap();
    let stage2 = file
        .contains(STAGE2.dense[0])
        .then(|| SecondStage { threshold: 0.5, layers: stage(&file, &STAGE2) });
    HeadGraph { frames: 16, layers: stage(&file, &STAGE1), stage2 }
}

fn graph_word(name: &str, g: &HeadGraph) -> WakeWord {
    WakeWord::from_graph(name.into(), Arc::new(g.build(&source()).unwrap()))
}

fn detector(words: Vec<WakeWord>) -> WakeDetectorOn<Portable> {
    let embedding = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("e")).unwrap();
    WakeDetectorOn::<Portable>::with_embedding(&embedding, words).unwrap()
}

fn clip(name: &str) -> Vec<i16> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("openwakeword/clips");
    let mut a = vec![0i16; 16_000];
    a.extend(Audio::open(dir.join(name)).unwrap().to_i16());
    a.extend(vec![0i16; 16_000]);
    a
}

/// Scores of every push of `audio` in 1280-sample chunks, per word.
fn scores(d: &mut WakeDetectorOn<Portable>, audio: &[i16]) -> Vec<Vec<f32>> {
    audio.chunks(CHUNK).map(|c| d.push(c).unwrap().to_vec()).collect()
}

#[test]
fn graph_heads_score_as_the_compiled_heads_bit_for_bit() {
    let compiled: Vec<WakeWord> =
        builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let graphs: Vec<WakeWord> =
        builtin::HEADS.iter().map(|(n, b)| graph_word(n, &graph_of(b))).collect();
    assert_eq!(compiled.len(), 5);
    for (c, g) in compiled.iter().zip(&graphs) {
        assert_eq!((c.frames(), c.hidden()), (g.frames(), g.hidden()), "{}", c.name());
    }
    let audio = clip("hey_jarvis.wav");
    let a = scores(&mut detector(compiled), &audio);
    let mut d = detector(graphs.clone());
    let b = scores(&mut d, &audio);
    assert_eq!(a, b, "graph heads differ from the compiled ones");
    // hey_jarvis fires (its second stage ran), and a reset stream repeats itself.
    assert!(b.iter().any(|s| s[1] > 0.9), "hey_jarvis should detect its clip");
    d.reset();
    assert_eq!(scores(&mut d, &audio), b, "after reset");
    // A clone shares the operators and starts afresh.
    assert_eq!(scores(&mut detector(graphs), &audio), b, "clones");
}

/// The official `.tflite` heads (the converter's source files: `target/py/cache`, written by
/// `tools/openwakeword/check.sh`, which `scripts/test.sh` runs first) parse to exactly the
/// converted heads: same weights bit for bit, LayerNorm scale and shift recovered exactly
/// from TFLite's decomposed form, eps 1e-5, hey_jarvis's `IF` as a second stage at 0.5. With
/// the test above, they score bitwise as the compiled heads.
#[test]
fn official_tflite_files_parse_to_the_converted_heads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../target/py/cache/wyoming_openwakeword-1.8.2-py3-none-any/wyoming_openwakeword/models",
    );
    for (name, bytes) in builtin::HEADS {
        let path = dir.join(format!("{name}.tflite"));
        let tflite = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run tools/openwakeword/check.sh (downloads the official files)",
                path.display()
            )
        });
        let g = custom::parse(&tflite, Format::Tflite, &source()).unwrap();
        assert_eq!(g, graph_of(bytes), "{name}");
        let word = custom::wake_word_from_file(&path).unwrap();
        assert_eq!(word.name(), custom::names::model_name(name), "named as the peer names it");
    }
}

/// A random head on `frames` frames: dense → LayerNorm → ReLU → dense → sigmoid.
fn random_graph(frames: usize, hidden: usize, seed: u64) -> HeadGraph {
    let mut rng = SmallRng::seed_from_u64(seed);
    let n = frames * EMBEDDING_DIM;
    let scale = 1.0 / (n as f32).sqrt();
    let mut v = |len: usize, s: f32| (0..len).map(|_| rng.gen_range(-s..s)).collect::<Vec<f32>>();
    HeadGraph {
        frames,
        layers: vec![
            Layer::Dense {
                in_features: n,
                out_features: hidden,
                weight: v(n * hidden, 3.0 * scale),
                bias: Some(v(hidden, 0.1)),
            },
            Layer::LayerNorm {
                features: hidden,
                eps: 1e-5,
                gamma: Some(v(hidden, 1.0)),
                beta: None,
            },
            Layer::Relu,
            Layer::Dense {
                in_features: hidden,
                out_features: 1,
                weight: v(hidden, 1.0),
                bias: None,
            },
            Layer::Sigmoid,
        ],
        stage2: None,
    }
}

/// An f64 evaluation of `g`'s first stage on `x`, from the layer definitions.
fn reference(g: &HeadGraph, x: &[f32]) -> f64 {
    let mut h: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    for layer in &g.layers {
        h = match layer {
            Layer::Dense { in_features, out_features, weight, bias } => (0..*out_features)
                .map(|o| {
                    let w = &weight[o * in_features..(o + 1) * in_features];
                    let b = bias.as_ref().map_or(0.0, |b| f64::from(b[o]));
                    b + w.iter().zip(&h).map(|(&w, &x)| f64::from(w) * x).sum::<f64>()
                })
                .collect(),
            Layer::LayerNorm { features, eps, gamma, beta } => {
                let m = h.iter().sum::<f64>() / *features as f64;
                let var = h.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / *features as f64;
                let d = (var + f64::from(*eps)).sqrt();
                (0..*features)
                    .map(|i| {
                        let g = gamma.as_ref().map_or(1.0, |g| f64::from(g[i]));
                        let b = beta.as_ref().map_or(0.0, |b| f64::from(b[i]));
                        (h[i] - m) / d * g + b
                    })
                    .collect()
            }
            Layer::Relu => h.iter().map(|x| x.max(0.0)).collect(),
            Layer::Sigmoid => h.iter().map(|x| 1.0 / (1.0 + (-x).exp())).collect(),
        };
    }
    h[0]
}

#[test]
fn heads_of_other_frame_counts_read_their_own_windows() {
    let official: Vec<WakeWord> =
        builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let audio = clip("alexa.wav");
    let alone = scores(&mut detector(official.clone()), &audio);
    let graphs: Vec<HeadGraph> =
        [1, 28, MAX_FRAMES].iter().map(|&f| random_graph(f, 24, f as u64)).collect();
    let mut words = official;
    words.extend(graphs.iter().enumerate().map(|(i, g)| graph_word(&format!("n{i}"), g)));
    let mut d = detector(words);
    assert_eq!(d.stream().max_head_frames(), MAX_FRAMES);
    let mut worst = 0.0f64;
    for (i, chunk) in audio.chunks(CHUNK).enumerate() {
        let s = d.push(chunk).unwrap().to_vec();
        assert_eq!(s[..5], alone[i][..5], "push {i}: a longer history changed official scores");
        if i < 5 {
            assert!(s[5..].iter().all(|&v| v == 0.0), "warm-up pushes report 0");
            continue;
        }
        for (k, g) in graphs.iter().enumerate() {
            let x = d.stream().head_window(0, g.frames);
            let want = reference(g, x);
            worst = worst.max((f64::from(s[5 + k]) - want).abs());
        }
    }
    // The LayerNorm and dense kernels accumulate in f32 over up to 11,520 products: scores
    // in (0, 1) agree with f64 to well under 1e-5.
    assert!(worst < 1e-5, "worst score error {worst}");
}

#[test]
fn a_stream_too_short_for_a_head_is_refused() {
    use neon_models::openwakeword::detector::{Detector, DetectorEmbedding, EmbeddingMode};
    use neon_models::openwakeword::mel::Mel;
    use neon_models::openwakeword::stream::FeatureStream;
    let file = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("e")).unwrap();
    let weights = neon_models::openwakeword::detector::load_embedding(&file).unwrap();
    let net = DetectorEmbedding::<Portable>::new(weights, EmbeddingMode::Full);
    let stream = Box::new(FeatureStream::with_head_frames(Mel::<Portable>::new(), net, 16));
    let word = graph_word("long", &random_graph(40, 8, 1));
    let e = Detector::<Portable, _, _>::new(stream, vec![word]).err().expect("refused");
    assert!(e.to_string().contains("40"), "{e}");
}

/// The message of `g`'s validation error.
fn refusal(g: &HeadGraph) -> String {
    let e = g.validate(&source()).expect_err("invalid graph accepted");
    let m = e.to_string();
    assert!(!m.contains('\n'), "one line: {m}");
    assert!(g.build(&source()).is_err(), "build must refuse what validate refuses");
    m
}

#[test]
fn invalid_graphs_are_refused_with_one_line() {
    let good = random_graph(16, 8, 3);
    good.validate(&source()).unwrap();
    for frames in [0, MAX_FRAMES + 1] {
        let mut g = good.clone();
        g.frames = frames;
        assert!(refusal(&g).contains("embedding frames"));
    }
    let mut g = good.clone();
    g.frames = 17;
    assert!(refusal(&g).contains("takes 1536 features, gets 1632"), "{}", refusal(&g));
    let mut g = good.clone();
    if let Layer::Dense { weight, .. } = &mut g.layers[0] {
        weight[5] = f32::NAN;
    }
    assert!(refusal(&g).contains("NaN or infinity"));
    let mut g = good.clone();
    g.layers.truncate(3);
    assert!(refusal(&g).contains("ends with 8 values"));
    let mut g = good.clone();
    g.layers.clear();
    assert!(refusal(&g).contains("no layers"));
    let mut g = good.clone();
    if let Layer::LayerNorm { eps, .. } = &mut g.layers[1] {
        *eps = 0.0;
    }
    assert!(refusal(&g).contains("eps"));
    let mut g = good.clone();
    if let Layer::LayerNorm { gamma, .. } = &mut g.layers[1] {
        *gamma = Some(vec![1.0; 7]);
    }
    assert!(refusal(&g).contains("scale is not [8]"));
    let mut g = good.clone();
    g.stage2 = Some(SecondStage { threshold: f32::NAN, layers: good.layers.clone() });
    assert!(refusal(&g).contains("threshold"));
    let mut g = good.clone();
    g.stage2 = Some(SecondStage { threshold: 0.5, layers: vec![Layer::Relu] });
    assert!(refusal(&g).contains("the second stage ends with 1536 values"), "{}", refusal(&g));
}
