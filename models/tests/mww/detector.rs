//! microWakeWord detector arithmetic (`neon_models::microwakeword::{quantize, feeder, window,
//! detector}`) against pymicro-wakeword 2.5.0, with the model step replayed from the goldens:
//! input quantisation bit for bit, probabilities equal to `statistics.mean` to the last bit,
//! detections, numpy's wrapping cast, refusals, no allocation per step.
//!
//! References: `models/microwakeword/goldens/<clip>.safetensors` (tools/microwakeword/
//! goldens.py): per clip `features` [F, 40] U16 and per model `input.<m>` [S, N, 40] I8,
//! `output.<m>` [S] U8, `prob.<m>` [S] F64, `detect.<m>` [S] U8; the metadata `model.<m>`
//! names the model's JSON. Input and output quantisation and N are read from the model file
//! (neon-import's `parse_stream`), cutoff and window from its JSON.

use crate::{clip_goldens, repo, thread_alloc};

use std::path::Path;

use neon_import::tflite::parse_stream;
use neon_import::Limits;
use neon_models::error::WeightsSource;
use neon_models::microwakeword::config::MicroConfig;
use neon_models::microwakeword::detector::{DetectorError, WordDetector, WordSettings};
use neon_models::microwakeword::feeder::{StepFeeder, MAX_STEP_FRAMES};
use neon_models::microwakeword::frontend::FEATURES;
use neon_models::microwakeword::quantize::{
    numpy_x86_i8, round_ties_even, InputQuantizer, OutputDequantizer,
};
use neon_models::microwakeword::window::{ProbabilityWindow, MAX_WINDOW};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use safetensors::{Dtype, SafeTensors};

/// `parse_stream`'s limits for microWakeWord models (as neon-import's tests use).
const LIMITS: Limits =
    Limits { frame_width: 40, max_frames: 16, max_features: 1 << 20, max_layers: 512 };

/// One model's recorded run on one clip.
struct Run {
    clip: String,
    model: String,
    settings: WordSettings,
    /// `input.<m>`, flat [S * N * 40].
    input: Vec<i8>,
    output: Vec<u8>,
    prob: Vec<f64>,
    detect: Vec<u8>,
}

/// One golden clip: its raw features [F * 40] and its runs.
struct Clip {
    features: Vec<u16>,
    runs: Vec<Run>,
}

/// The raw little-endian bytes of tensor `name`, checked to be `dtype` of `shape`.
fn bytes<'a>(st: &'a SafeTensors, name: &str, dtype: Dtype, shape: &[usize]) -> &'a [u8] {
    let t = st.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((t.dtype(), t.shape()), (dtype, shape), "{name}: dtype and shape");
    t.data()
}

/// The detector settings of the model whose JSON is `json` (repository-relative).
fn settings(json: &Path) -> WordSettings {
    let source = WeightsSource::File(json.to_path_buf());
    let config = MicroConfig::from_json(&std::fs::read_to_string(json).unwrap(), &source).unwrap();
    let tflite = std::fs::read(json.parent().unwrap().join(&config.model)).unwrap();
    let g = parse_stream(&tflite, &LIMITS).unwrap();
    let (iq, oq) = (g.input.quant.unwrap(), g.output.quant.unwrap());
    WordSettings {
        frames: g.input.shape[1],
        input: InputQuantizer::new(iq.scale[0], iq.zero_point[0].try_into().unwrap()).unwrap(),
        output: OutputDequantizer { scale: oq.scale[0], zero_point: oq.zero_point[0] as i32 },
        sliding_window_size: config.sliding_window_size,
        probability_cutoff: config.probability_cutoff,
    }
}

fn clip(path: &Path) -> Clip {
    let file = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&file).unwrap();
    let meta = SafeTensors::read_metadata(&file).unwrap().1;
    let meta = meta.metadata().as_ref().expect("golden metadata");
    let frames = st.tensor("features").unwrap().shape()[0];
    let features = bytes(&st, "features", Dtype::U16, &[frames, FEATURES])
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut models: Vec<String> =
        st.names().iter().filter_map(|n| n.strip_prefix("input.").map(str::to_string)).collect();
    models.sort();
    assert!(!models.is_empty(), "{name}: no model");
    let runs = models
        .into_iter()
        .map(|m| {
            // "models/microwakeword/alexa.json (tflite sha256 ...): ..."
            let json = meta[&format!("model.{m}")].split(' ').next().unwrap();
            let settings = settings(&repo(json));
            let (n, steps) = (settings.frames, frames / settings.frames);
            let input = bytes(&st, &format!("input.{m}"), Dtype::I8, &[steps, n, FEATURES]);
            let prob = bytes(&st, &format!("prob.{m}"), Dtype::F64, &[steps]);
            Run {
                clip: name.clone(),
                input: input.iter().map(|&b| b as i8).collect(),
                output: bytes(&st, &format!("output.{m}"), Dtype::U8, &[steps]).to_vec(),
                prob: prob
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
                detect: bytes(&st, &format!("detect.{m}"), Dtype::U8, &[steps]).to_vec(),
                model: m,
                settings,
            }
        })
        .collect();
    Clip { features, runs }
}

/// Every clip golden ([`clip_goldens`]).
fn clips() -> Vec<Clip> {
    clip_goldens().iter().map(|p| clip(p)).collect()
}

fn frame(features: &[u16], i: usize) -> &[u16; FEATURES] {
    features[i * FEATURES..(i + 1) * FEATURES].try_into().unwrap()
}

#[test]
fn features_quantise_to_the_golden_inputs_bit_for_bit() {
    let mut checked = 0;
    for clip in clips() {
        for run in &clip.runs {
            let q = run.settings.input;
            let mut got = vec![0i8; run.input.len()];
            q.quantize_frame(&clip.features[..got.len()], &mut got);
            if let Some(i) = got.iter().zip(&run.input).position(|(a, b)| a != b) {
                let raw = clip.features[i];
                panic!(
                    "{} {}: value {i} (raw {raw}): {} vs {}",
                    run.clip, run.model, got[i], run.input[i]
                );
            }
            checked += got.len();
        }
    }
    println!("{checked} input values equal");
    assert!(checked > 0);
}

#[test]
fn outputs_give_the_golden_probabilities_and_detections_exactly() {
    for clip in clips() {
        for run in &clip.runs {
            let s = &run.settings;
            let mut window = ProbabilityWindow::new(s.sliding_window_size, s.output).unwrap();
            for (i, &q) in run.output.iter().enumerate() {
                let p = window.push(q);
                let what = format!("{} {} step {i}", run.clip, run.model);
                assert_eq!(p.to_bits(), run.prob[i].to_bits(), "{what}: {p} vs {}", run.prob[i]);
                assert_eq!(u8::from(p > s.probability_cutoff), run.detect[i], "{what}: detection");
            }
        }
    }
}

/// The whole detector with a step that checks its input and replays the golden output.
#[test]
fn feeder_to_probabilities_reproduces_the_goldens() {
    let mut detections = 0;
    for clip in clips() {
        for run in &clip.runs {
            let n = run.settings.frames;
            let mut detector = WordDetector::new(&run.settings).unwrap();
            assert_eq!(detector.frames(), n);
            let mut step_index = 0;
            let mut step = |input: &[i8]| {
                let want = &run.input[step_index * n * FEATURES..(step_index + 1) * n * FEATURES];
                assert_eq!(input, want, "{} {} step {step_index}: input", run.clip, run.model);
                step_index += 1;
                run.output[step_index - 1]
            };
            let frames = clip.features.len() / FEATURES;
            let mut steps = 0;
            for i in 0..frames {
                let d = detector.push_frame(frame(&clip.features, i), &mut step);
                assert_eq!(d.is_some(), (i + 1) % n == 0, "frame {i}: a step every {n} frames");
                if let Some(d) = d {
                    assert_eq!(d.output, run.output[steps]);
                    assert_eq!(d.probability.to_bits(), run.prob[steps].to_bits());
                    assert_eq!(u8::from(d.detected), run.detect[steps]);
                    detections += usize::from(d.detected);
                    steps += 1;
                }
            }
            assert_eq!(steps, run.output.len(), "{} {}: steps", run.clip, run.model);
        }
    }
    println!("{detections} detecting steps reproduced");
    assert!(detections > 0);
}

#[test]
fn reset_equals_a_fresh_detector() {
    let clip = clip(&repo("models/microwakeword/goldens/okay_nabu.safetensors"));
    let run = clip.runs.iter().find(|r| r.model == "okay_nabu").unwrap();
    let replay = |detector: &mut WordDetector| {
        let mut k = 0;
        let mut step = |_: &[i8]| {
            k += 1;
            run.output[k - 1]
        };
        (0..clip.features.len() / FEATURES)
            .filter_map(|i| detector.push_frame(frame(&clip.features, i), &mut step))
            .map(|d| d.probability.to_bits())
            .collect::<Vec<_>>()
    };
    let mut detector = WordDetector::new(&run.settings).unwrap();
    let fresh = replay(&mut detector);
    // Leave a frame collected and the window full, then reset.
    detector.push_frame(frame(&clip.features, 0), &mut |_: &[i8]| 255);
    detector.reset();
    assert_eq!(replay(&mut detector), fresh);
}

/// The official input quantisation (scale 26/255 in f32, zero point -128) at and past the
/// int8 range: values measured with numpy 2.4.6 on x86-64 (tools/microwakeword/FACTS.md,
/// section 7: raw 666 → 127, 667 → 128 wraps).
#[test]
fn the_input_wraps_as_numpy_casts() {
    let q = InputQuantizer::new(26.0 / 255.0, -128).unwrap();
    assert_eq!(q.scale.to_bits(), 0.101_960_786_f32.to_bits());
    for (raw, want) in [
        (0, -128),
        (1, -128),
        (660, 125),
        (661, 125),
        (666, 127),
        (667, -128),
        (700, -116),
        (1000, -1),
    ]
    .into_iter()
    .chain([(5000, -4), (65535, -109)])
    {
        assert_eq!(q.quantize(raw), want, "raw {raw}");
    }
    for (v, want) in [
        (128.0, -128),
        (255.0, -1),
        (24979.0, -109),
        (-129.0, 127),
        (-70000.0, -112),
        (2_147_483_647.0, -1),
        (-2_147_483_648.0, 0),
        (2_147_483_648.0, 0),
        (2_147_483_653.0, 0),
        (-2_147_483_649.0, 0),
        (1.0995116e12, 0),
        (1e300, 0),
        (f64::INFINITY, 0),
        (f64::NEG_INFINITY, 0),
        (f64::NAN, 0),
    ] {
        assert_eq!(numpy_x86_i8(v), want, "{v}");
    }
}

#[test]
fn round_ties_even_equals_std() {
    let mut rng = SmallRng::seed_from_u64(39);
    let ties = (-20..20).map(|k| f64::from(k) + 0.5);
    let edges = [
        0.0,
        -0.0,
        0.49999999999999994,
        -0.49999999999999994,
        4503599627370495.5,
        2f64.powi(52),
        1e300,
    ];
    let random = (0..100_000).map(|_| rng.gen_range(-300.0..300.0) * rng.gen::<f64>());
    for v in ties.chain(edges).chain(random).chain([f64::INFINITY, f64::NEG_INFINITY]) {
        assert_eq!(round_ties_even(v).to_bits(), v.round_ties_even().to_bits(), "{v}");
    }
    assert!(round_ties_even(f64::NAN).is_nan());
}

/// Windows whose means `statistics.mean` computed (Python 3.11.7, numpy 2.4.6; bits of the
/// f64 result), for the official output quantisation and for scale f32(0.1), zero point 3.
#[test]
fn window_means_equal_statistics_mean() {
    let official = OutputDequantizer { scale: 1.0 / 256.0, zero_point: 0 };
    let other = OutputDequantizer { scale: 0.1, zero_point: 3 };
    let cases: [(OutputDequantizer, &[u8], u64); 8] = [
        (official, &[1, 1, 1], 0x3f70000000000000),
        (official, &[255, 255, 254], 0x3fefd55555555555),
        (official, &[1, 2, 4, 8, 16, 32, 64], 0x3fb2249249249249),
        (official, &[255; 7], 0x3fefe00000000000),
        (official, &[3, 5, 7, 11, 13, 17, 19, 23, 29], 0x3fac38e38e38e38e),
        (other, &[0, 1, 2], 0xbfc99999a5555555),
        (other, &[255, 7, 9, 200, 3], 0x40225c2900333333),
        (other, &[4, 4, 4, 4, 4, 4], 0x3fb99999a0000000),
    ];
    for (dq, outputs, bits) in cases {
        let mut w = ProbabilityWindow::new(outputs.len(), dq).unwrap();
        // Outputs pushed before the window's span leave no trace.
        for &q in [200u8, 13, 255].iter().chain(outputs) {
            w.push(q);
        }
        assert_eq!(w.probability().to_bits(), bits, "{outputs:?}");
    }
    let mut w = ProbabilityWindow::new(3, official).unwrap();
    assert_eq!((w.push(255), w.push(255)), (0.0, 0.0), "0.0 until the window is full");
    assert_eq!(w.push(255), 255.0 / 256.0);
}

#[test]
fn bad_settings_are_refused() {
    let input = InputQuantizer::new(26.0 / 255.0, -128).unwrap();
    let output = OutputDequantizer { scale: 1.0 / 256.0, zero_point: 0 };
    for scale in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(InputQuantizer::new(scale, 0), Err(DetectorError::InputScale));
    }
    for frames in [0, MAX_STEP_FRAMES + 1] {
        let e = StepFeeder::new(input, frames).unwrap_err();
        assert_eq!(e, DetectorError::StepFrames { frames });
        assert!(e.to_string().contains("expected 1..=16"), "{e}");
    }
    for size in [0, MAX_WINDOW + 1] {
        assert_eq!(
            ProbabilityWindow::new(size, output).unwrap_err(),
            DetectorError::Window { size }
        );
    }
    let huge = OutputDequantizer { scale: f32::MAX, zero_point: 0 };
    assert_eq!(ProbabilityWindow::new(5, huge).unwrap_err(), DetectorError::OutputScale);
    let settings = WordSettings {
        frames: 3,
        input,
        output,
        sliding_window_size: 5,
        probability_cutoff: f64::NAN,
    };
    assert_eq!(WordDetector::new(&settings).unwrap_err(), DetectorError::Cutoff);
    // Largest accepted: N 16, window 1024.
    let largest = WordSettings {
        frames: MAX_STEP_FRAMES,
        sliding_window_size: MAX_WINDOW,
        probability_cutoff: 0.5,
        ..settings
    };
    WordDetector::new(&largest).unwrap();
}

#[test]
fn a_step_allocates_nothing() {
    let clip = clip(&repo("models/microwakeword/goldens/alexa.safetensors"));
    let run = &clip.runs[0];
    let mut detector = WordDetector::new(&run.settings).unwrap();
    let mut k = 0;
    let mut step = |_: &[i8]| {
        k += 1;
        run.output[(k - 1) % run.output.len()]
    };
    let frames = clip.features.len() / FEATURES;
    let steps = thread_alloc::allocation_free(|| {
        (0..frames).filter_map(|i| detector.push_frame(frame(&clip.features, i), &mut step)).count()
    });
    assert_eq!(steps, run.output.len());
}

/// A step runs on every N-th frame with the last N frames, for N other than the official 3.
#[test]
fn a_step_takes_the_last_n_frames() {
    let q = InputQuantizer::new(1.0, -128).unwrap();
    for n in [1, 2, 3, MAX_STEP_FRAMES] {
        let mut feeder = StepFeeder::new(q, n).unwrap();
        let mut seen = Vec::new();
        let mut step = |input: &[i8]| {
            assert_eq!(input.len(), n * FEATURES);
            seen.push(input.to_vec());
            7
        };
        // Frame i: raw 256 i, feature 10 i, input 10 i - 128 (wrapping past 127).
        let outputs: Vec<Option<u8>> =
            (0..4 * n).map(|i| feeder.push(&[(i * 256) as u16; FEATURES], &mut step)).collect();
        for (i, o) in outputs.iter().enumerate() {
            assert_eq!(*o, ((i + 1) % n == 0).then_some(7), "N {n} frame {i}");
        }
        assert_eq!(seen.len(), 4);
        for (s, input) in seen.iter().enumerate() {
            for f in 0..n {
                let want = ((s * n + f) * 10) as i32 - 128; // 256 * 0.0390625 = 10
                let got = &input[f * FEATURES..(f + 1) * FEATURES];
                assert!(got.iter().all(|&v| v == want as i8), "N {n} step {s}");
            }
        }
    }
}
