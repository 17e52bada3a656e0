//! Instruction-count workloads for microWakeWord: one model step, the frontend per 10 ms
//! frame, and the whole detector per second of audio.
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region is counted. Reading the models into stream plans, decoding the clip
//! and the warm-up (the steps, frames or audio before the counted ones, so the streaming
//! state is the stream's) happen before it; the check against the `Portable` kernels after
//! it.
//!
//! Input: `models/tests/data/microwakeword/okay_nabu.wav` (embedded; 3.7 s, the phrase
//! spoken once), its frontend features; the models are the four official ones
//! (`models/microwakeword/*.tflite`, embedded by `neon_models::microwakeword::builtin`).
//!
//! Usage: `insn_micro WORKLOAD [widening|portable]` with WORKLOAD one of
//! - `step:MODEL`: [`STEPS`] steps of MODEL's stream plan (`StreamPlan::run`, input
//!   `[N, 40]` int8 from the clip's features as the detector quantises them, after
//!   [`WARM_STEPS`] steps); `insn-count.sh` divides the count by [`STEPS`];
//! - `frontend`: the frontend (`Frontend::push`) of 1 s of the clip (100 frames of 10 ms)
//!   after its first [`WARM_SAMPLES`]; `insn-count.sh` divides by 100;
//! - `detector:MODEL` or `detector:all` (the four models on one stream): the detector of one
//!   second of the clip after its first [`WARM_SAMPLES`]: the frontend, per model its
//!   `WordDetector` (quantisation, steps of N frames, the window) and its plan, as
//!   `neon_models::microwakeword::session::MicroDetector::push` composes them (that type
//!   needs neon-models' `import` feature, which pulls `std`; this is the same loop over the
//!   same pieces, the refractory bookkeeping left out).
//!
//! On aarch64 the int8 kernels are `Neon` (`sdot` where the core has FEAT_DotProd, the
//! widening path elsewhere), `NeonWidening` with `widening` (the widening path on every core)
//! or `Portable` with `portable`. After the region every model output of the run (warm-up
//! included) is checked to equal the `Portable` kernels' on the same inputs.

use neon_benches::{parsed_main, region_start, region_stop, wav_i16};
use neon_import::tflite::{parse_stream, stream_plan, StreamGraph};
use neon_import::Limits;
use neon_models::microwakeword::builtin::{self, BuiltinModel};
use neon_models::microwakeword::detector::{WordDetector, WordSettings};
use neon_models::microwakeword::feeder::MAX_STEP_FRAMES;
use neon_models::microwakeword::frontend::{Frontend, FEATURES};
use neon_models::microwakeword::quantize::{InputQuantizer, OutputDequantizer};
use neon_runtime::exec::stream::StreamPlan;
use neon_runtime::kernels::Int8Kernels;
use neon_runtime::Portable;

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;
#[cfg(target_arch = "aarch64")]
type Widening = neon_runtime::kernels::int8::NeonWidening;
#[cfg(not(target_arch = "aarch64"))]
type Widening = Portable;

const USAGE: &str = "usage: insn_micro step:MODEL | frontend | detector:MODEL|all  \
                     [widening|portable]  (MODEL: alexa, hey_jarvis, hey_mycroft, okay_nabu)";

const CLIP: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/tests/data/microwakeword/okay_nabu.wav"
));

/// Model steps counted by `step:MODEL`.
const STEPS: usize = 20;
/// Model steps run before the counted ones (1.2 s of audio at N = 3).
const WARM_STEPS: usize = 40;
/// Samples of the clip pushed before the counted second (`frontend`, `detector`): 1.2 s.
const WARM_SAMPLES: usize = 19_200;
/// One second of 16 kHz audio.
const SECOND: usize = 16_000;

/// The reading limits of a microWakeWord `.tflite`, as `neon_models::microwakeword::word`'s.
const LIMITS: Limits = Limits {
    frame_width: FEATURES,
    max_frames: MAX_STEP_FRAMES,
    max_features: 1 << 20,
    max_layers: 512,
};

/// A parsed command line.
struct Workload {
    kind: Kind,
    /// `widening`: the NEON kernels on the widening dot-product path.
    widening: bool,
}

enum Kind {
    Step(&'static BuiltinModel),
    Frontend,
    Detector(Vec<&'static BuiltinModel>),
}

fn parse(args: &[String]) -> Option<Workload> {
    let (spec, widening) = match args {
        [spec] => (spec, false),
        [spec, w] if w == "widening" => (spec, true),
        _ => return None,
    };
    let kind = match spec.split_once(':') {
        Some(("step", m)) => Kind::Step(builtin::get(m)?),
        Some(("detector", "all")) => Kind::Detector(builtin::MODELS.iter().collect()),
        Some(("detector", m)) => Kind::Detector(vec![builtin::get(m)?]),
        None if spec == "frontend" => Kind::Frontend,
        _ => return None,
    };
    Some(Workload { kind, widening })
}

/// One model read into its stream plan, with the detector settings its file states.
struct Model {
    plan: StreamPlan,
    settings: WordSettings,
}

impl Model {
    fn load(m: &BuiltinModel) -> Result<Model, String> {
        let graph = parse_stream(m.tflite, &LIMITS).map_err(|e| format!("{}: {e}", m.name))?;
        let plan = stream_plan(&graph).map_err(|e| format!("{}: {e}", m.name))?;
        let settings = settings(m, &graph).ok_or(format!("{}: no quantisation", m.name))?;
        Ok(Model { plan, settings })
    }
}

/// N, the input and output quantisation of `graph`, the window and cutoff of `m`.
fn settings(m: &BuiltinModel, graph: &StreamGraph) -> Option<WordSettings> {
    let (iq, oq) = (graph.input.quant.as_ref()?, graph.output.quant.as_ref()?);
    Some(WordSettings {
        frames: graph.input.shape[1],
        input: InputQuantizer::new(*iq.scale.first()?, (*iq.zero_point.first()?) as i32).ok()?,
        output: OutputDequantizer {
            scale: *oq.scale.first()?,
            zero_point: (*oq.zero_point.first()?) as i32,
        },
        sliding_window_size: m.sliding_window_size,
        probability_cutoff: m.probability_cutoff,
    })
}

/// The clip's raw feature frames (the frontend from the start).
fn frames(samples: &[i16]) -> Vec<[u16; FEATURES]> {
    let mut out = Vec::new();
    Frontend::new().push(samples, |f| out.push(*f));
    out
}

/// The model inputs of the clip's first `steps` steps: N frames each, quantised.
fn step_inputs(model: &Model, frames: &[[u16; FEATURES]], steps: usize) -> Vec<Vec<i8>> {
    let n = model.settings.frames;
    frames
        .chunks_exact(n)
        .take(steps)
        .map(|chunk| {
            let mut x = vec![0i8; n * FEATURES];
            for (f, out) in chunk.iter().zip(x.chunks_exact_mut(FEATURES)) {
                model.settings.input.quantize_frame(f, out);
            }
            x
        })
        .collect()
}

/// Region 1 around `f` when `mark`, else `f` alone.
fn marked<T>(mark: bool, f: impl FnOnce() -> T) -> T {
    if mark {
        region_start(1);
    }
    let r = f();
    if mark {
        region_stop(1);
    }
    r
}

/// The plan of `model` on `inputs` from its initial state with kernels `K`: the outputs,
/// the steps from `counted` on inside region 1 (no region with `None`).
fn run_steps<K: Int8Kernels>(
    model: &Model,
    inputs: &[Vec<i8>],
    counted: Option<usize>,
) -> Result<Vec<u8>, String> {
    let (mark, counted) = (counted.is_some(), counted.unwrap_or(inputs.len()));
    let (mut state, mut scratch) = (model.plan.state(), model.plan.scratch());
    let mut outputs = vec![0u8; inputs.len()];
    let mut step = |x: &[i8], y: &mut u8| -> Result<(), String> {
        let out: &[u8] =
            model.plan.run::<K, i8, u8>(&mut state, &mut scratch, x).map_err(|e| e.to_string())?;
        *y = out[0];
        Ok(())
    };
    for (x, y) in inputs[..counted].iter().zip(&mut outputs) {
        step(x, y)?;
    }
    let counted_steps = inputs[counted..].iter().zip(&mut outputs[counted..]);
    marked(mark, || counted_steps.into_iter().try_for_each(|(x, y)| step(x, y)))?;
    Ok(outputs)
}

/// One model's part of the detector.
struct Slot<'m> {
    model: &'m Model,
    state: neon_runtime::exec::stream::StreamState,
    scratch: neon_runtime::exec::stream::StreamScratch,
    detector: WordDetector,
}

/// The detector of `models` on `samples` with kernels `K` (see the module docs), the samples
/// from `counted` on inside region 1 (no region with `None`): every step's output, in time
/// and model order.
fn run_detector<K: Int8Kernels>(
    models: &[Model],
    samples: &[i16],
    counted: Option<usize>,
) -> Result<Vec<u8>, String> {
    let (mark, counted) = (counted.is_some(), counted.unwrap_or(samples.len()));
    let mut slots = models
        .iter()
        .map(|m| {
            let detector = WordDetector::new(&m.settings).map_err(|e| e.to_string())?;
            Ok(Slot { model: m, state: m.plan.state(), scratch: m.plan.scratch(), detector })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut frontend = Frontend::new();
    let mut outputs = Vec::with_capacity(4 * samples.len() / 480 + 4);
    let mut failed = None;
    let mut push = |chunk: &[i16], outputs: &mut Vec<u8>| {
        frontend.push(chunk, |frame| {
            for Slot { model, state, scratch, detector } in &mut slots {
                let mut step = |x: &[i8]| match model.plan.run::<K, i8, u8>(state, scratch, x) {
                    Ok(y) => y[0],
                    Err(e) => {
                        failed.get_or_insert(e.to_string());
                        0
                    }
                };
                if let Some(d) = detector.push_frame(frame, &mut step) {
                    outputs.push(d.output);
                }
            }
        });
    };
    push(&samples[..counted], &mut outputs);
    marked(mark, || push(&samples[counted..], &mut outputs));
    failed.map_or(Ok(outputs), Err)
}

/// Runs the workload with kernels `K` and checks its outputs against `Portable`'s; returns
/// a checksum of the outputs.
fn run<K: Int8Kernels>(w: &Workload) -> Result<f32, String> {
    let samples = wav_i16(CLIP);
    let (outputs, want, what) = match &w.kind {
        Kind::Step(m) => {
            let model = Model::load(m)?;
            let inputs = step_inputs(&model, &frames(&samples), WARM_STEPS + STEPS);
            if inputs.len() < WARM_STEPS + STEPS {
                return Err("the clip is too short".into());
            }
            let got = run_steps::<K>(&model, &inputs, Some(WARM_STEPS))?;
            let want = run_steps::<Portable>(&model, &inputs, None)?;
            (got, want, format!("{} steps of {} (N = {})", STEPS, m.name, model.settings.frames))
        }
        Kind::Frontend => {
            let audio = &samples[..WARM_SAMPLES + SECOND];
            let mut frontend = Frontend::new();
            let mut got = Vec::new();
            frontend.push(&audio[..WARM_SAMPLES], |f| got.push(*f));
            region_start(1);
            frontend.push(&audio[WARM_SAMPLES..], |f| got.push(*f));
            region_stop(1);
            // The same frames as one push of all the samples (the frontend has no kernels).
            if got != frames(audio) {
                return Err("the frontend's frames depend on the chunking".into());
            }
            let flat: Vec<u8> = got.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
            (flat.clone(), flat, "the frontend of 1 s (100 frames)".into())
        }
        Kind::Detector(ms) => {
            let models = ms.iter().map(|m| Model::load(m)).collect::<Result<Vec<_>, _>>()?;
            let audio = &samples[..WARM_SAMPLES + SECOND];
            let got = run_detector::<K>(&models, audio, Some(WARM_SAMPLES))?;
            let want = run_detector::<Portable>(&models, audio, None)?;
            let names: Vec<_> = ms.iter().map(|m| m.name).collect();
            (got, want, format!("the detector of 1 s, {}", names.join(" + ")))
        }
    };
    if outputs != want {
        return Err(format!("{what} ({}): outputs differ from Portable's", K::NAME));
    }
    eprintln!(
        "{what} ({}, widening {}): {} outputs as Portable's",
        K::NAME,
        w.widening,
        want.len()
    );
    Ok(outputs.iter().map(|&y| f32::from(y)).sum())
}

fn fast(w: &Workload) -> Result<f32, String> {
    if w.widening {
        run::<Widening>(w)
    } else {
        run::<Fast>(w)
    }
}

fn main() {
    parsed_main("insn_micro", USAGE, parse, run::<Portable>, fast);
}
