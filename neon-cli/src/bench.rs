//! `neon bench`: times the models on this machine (openWakeWord per 80 ms chunk, the
//! Moonshine encoder on a clip and one decoder step) at 1 thread and at the number of cores,
//! Silero VAD per 32 ms window (one thread: a window is one stream's serial step), the
//! official microWakeWord models per model step and the four on one stream per second of
//! audio (one thread), and reports the CPU, its features and the backends chosen, in a form
//! users can paste into an issue.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use neon_models::exec_plan::Family;
use neon_models::microwakeword::builtin as micro_builtin;
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::MicroWord;
use neon_models::moonshine::files::paths;
use neon_models::moonshine::transcriber::{argmax, MoonshineModel, Transcriber};
use neon_models::moonshine::SAMPLE_RATE;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::session::SessionOptions;
use neon_models::vad::detector::Vad;
use neon_models::vad::WINDOW;
use neon_runtime::{dispatch, BackendKind, Team};
use serde_json::{json, Value};

use crate::ranges::check_in;
use crate::ranges::Interval::OpenClosed;
use crate::{line, SessionArgs};

#[derive(Args)]
pub struct BenchArgs {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Directory of the Moonshine model, as for `neon transcribe` (skipped when absent).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// The second thread count timed (default: the cores the OS offers, at most 4); the
    /// first is always 1.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Seconds spent on each measurement (at least 3 runs each): more gives steadier
    /// medians.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    seconds: f64,
    #[command(flatten)]
    session: SessionArgs,
}

/// Milliseconds of audio per VAD window (512 samples at 16 kHz).
const VAD_WINDOW_MS: f64 = 1e3 * WINDOW as f64 / SAMPLE_RATE as f64;

/// Decoder position timed: the step after 16 tokens (a short sentence).
const STEP_POSITION: usize = 16;

/// Medians of one thread count.
struct Run {
    threads: usize,
    wake_chunk_ms: f64,
    encoder_ms: Option<f64>,
    decoder_step_ms: Option<f64>,
}

pub fn run(args: &BenchArgs) -> Result<(), String> {
    check_in("--seconds", args.seconds, OpenClosed(0.0, 600.0))?;
    let options = args
        .session
        .options(&[Family::OpenWakeWord, Family::MoonshineAsr, Family::SileroVad], None)?;
    let cores = crate::default_threads();
    let second = args.threads.unwrap_or(cores);
    let mut counts = vec![1];
    if second != 1 {
        counts.push(second);
    }
    let teams = counts.iter().map(|&n| crate::team(Some(n))).collect::<Result<Vec<_>, _>>()?;
    let dir = crate::transcribe::model_dir(args.model_dir.as_deref());
    let moonshine = if paths(&dir).0.is_file() {
        let model = MoonshineModel::open(&dir).map_err(|e| e.to_string())?;
        let t = Transcriber::new(model, &options).map_err(|e| e.to_string())?;
        Some((t, clip(&dir)?))
    } else {
        None
    };
    let mut words = Vec::new();
    for (name, _) in builtin::HEADS {
        words.push(builtin::wake_word(name).map_err(|e| e.to_string())?);
    }
    let n_words = words.len();
    let mut detector =
        WakeDetector::with_builtin_embedding(words, &options).map_err(|e| e.to_string())?;
    let mut moonshine = moonshine;
    let mut runs = Vec::new();
    for team in &teams {
        let wake_chunk_ms = time_wake(&mut detector, team, args.seconds)?;
        let (encoder_ms, decoder_step_ms) = match &mut moonshine {
            Some((t, audio)) => {
                let (e, d) = time_moonshine(t, team, audio, args.seconds)?;
                (Some(e), Some(d))
            }
            None => (None, None),
        };
        runs.push(Run { threads: team.threads(), wake_chunk_ms, encoder_ms, decoder_step_ms });
    }
    let vad_window_ms = time_vad(&mut crate::vad::vad(&options)?, args.seconds)?;
    let micro = time_micro(args.seconds)?;
    let audio_s = moonshine.as_ref().map(|(_, a)| a.len() as f64 / SAMPLE_RATE as f64);
    let report = Report { options: &options, n_words, audio_s, runs, vad_window_ms, micro, dir };
    if args.json {
        line(format_args!("{}", report.json()))
    } else {
        report.print()
    }
}

/// beckett.wav from the model directory (`tools/moonshine/fetch.sh` puts it there), else
/// 10 s of a deterministic chirp (the encoder's time does not depend on the content).
fn clip(dir: &std::path::Path) -> Result<Vec<f32>, String> {
    let path = dir.join("beckett.wav");
    if path.is_file() {
        let audio = neon_audio::Audio::open(&path).map_err(|e| e.to_string())?;
        return Ok(audio.samples);
    }
    let n = 10 * SAMPLE_RATE;
    Ok((0..n).map(|i| (0.1 * (i as f64 * (0.01 + i as f64 * 1e-7)).sin()) as f32).collect())
}

/// Median of `f`'s timings (ms), after one untimed call, over at least 3 runs and `seconds`.
fn median(seconds: f64, mut f: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    f()?;
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 3 || start.elapsed().as_secs_f64() < seconds {
        times.push(f()?);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// The next value of the xorshift32 generator at `state` (the benchmarks' pseudo-random
/// audio).
fn xorshift(state: &mut u32) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    *state
}

/// Median time of one `push` of a 1280-sample chunk in steady state (pseudo-random audio,
/// after the warm-up pushes).
fn time_wake(d: &mut WakeDetector, team: &Team, seconds: f64) -> Result<f64, String> {
    d.reset();
    let mut state = 0x2545_f491u32;
    let mut chunk = [0i16; CHUNK];
    let mut next = move || {
        for s in chunk.iter_mut() {
            *s = (xorshift(&mut state) >> 20) as i16 - 2048;
        }
        chunk
    };
    for _ in 0..20 {
        d.push_in(team, &next()).map_err(|e| e.to_string())?;
    }
    median(seconds, || {
        let c = next();
        let t0 = Instant::now();
        d.push_in(team, &c).map_err(|e| e.to_string())?;
        Ok(ms(t0))
    })
}

/// Median time of one `Vad::push` of a 512-sample window in steady state (pseudo-random
/// audio, after the warm-up windows): the network runs once per push.
fn time_vad(vad: &mut Vad, seconds: f64) -> Result<f64, String> {
    let mut state = 0x9e37_79b9u32;
    let mut window = [0.0f32; WINDOW];
    let mut next = move || {
        for s in window.iter_mut() {
            *s = ((xorshift(&mut state) >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 0.2;
        }
        window
    };
    for _ in 0..20 {
        vad.push(&next(), |_| {}).map_err(|e| e.to_string())?;
    }
    median(seconds, || {
        let w = next();
        let t0 = Instant::now();
        vad.push(&w, |_| {}).map_err(|e| e.to_string())?;
        Ok(ms(t0))
    })
}

/// The kernels of microWakeWord's model steps: `MicroDetector`'s choice, the best this CPU
/// runs ([`BackendKind::best`]).
fn micro_backend() -> BackendKind {
    BackendKind::best()
}

/// microWakeWord medians: per model, its name, N and one step's time; the four models on
/// one stream per second of audio.
struct Micro {
    steps: Vec<(String, usize, f64)>,
    /// `MicroDetector::push` of 1 s of audio with every model (ms).
    second_ms: f64,
}

/// Times the official microWakeWord models (`None` without feature `builtin-micro`): each
/// model's plan step on pseudo-random int8 input (after 20 warm-up steps: the int8 kernels'
/// time does not depend on the values), and `MicroDetector::push` of 1 s of pseudo-random
/// audio with the four models (after 1 s of warm-up).
fn time_micro(seconds: f64) -> Result<Option<Micro>, String> {
    let words = micro_builtin::names()
        .map(|n| neon_models::microwakeword::word::resolve(n).map_err(|e| e.to_string()))
        .collect::<Result<Vec<MicroWord>, _>>()?;
    if words.is_empty() {
        return Ok(None);
    }
    let mut steps = Vec::new();
    for w in &words {
        let (plan, n) = (w.plan(), w.settings().frames);
        let (mut state, mut scratch) = (plan.state(), plan.scratch());
        let mut seed = 0x1234_5678u32;
        let mut input = vec![0i8; n * neon_models::microwakeword::frontend::FEATURES];
        let mut step = || {
            input.iter_mut().for_each(|x| *x = (xorshift(&mut seed) >> 24) as u8 as i8);
            let t0 = Instant::now();
            dispatch!(micro_backend(), B => plan.run::<B, i8, u8>(&mut state, &mut scratch, &input))
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            Ok(ms(t0))
        };
        for _ in 0..20 {
            step()?;
        }
        steps.push((w.name().to_string(), n, median(seconds, step)?));
    }
    let mut detector = MicroDetector::new(words);
    let mut seed = 0x2545_f491u32;
    let mut audio = vec![0i16; SAMPLE_RATE];
    let mut next = move || {
        audio.iter_mut().for_each(|s| *s = (xorshift(&mut seed) >> 20) as i16 - 2048);
        audio.clone()
    };
    detector.push(&next(), |_| {}).map_err(|e| e.to_string())?;
    let second_ms = median(seconds, || {
        let a = next();
        let t0 = Instant::now();
        detector.push(&a, |_| {}).map_err(|e| e.to_string())?;
        Ok(ms(t0))
    })?;
    Ok(Some(Micro { steps, second_ms }))
}

/// Median times of the encoder on `audio` and of the decoder step at [`STEP_POSITION`].
fn time_moonshine(
    t: &mut Transcriber,
    team: &Team,
    audio: &[f32],
    seconds: f64,
) -> Result<(f64, f64), String> {
    let encoder = median(seconds, || {
        let t0 = Instant::now();
        t.encode_in(team, audio).map_err(|e| e.to_string())?;
        Ok(ms(t0))
    })?;
    let step = median(seconds, || {
        t.restart();
        let mut token = 1;
        for _ in 0..STEP_POSITION {
            token = argmax(t.decode_step_in(team, token).map_err(|e| e.to_string())?);
        }
        let t0 = Instant::now();
        t.decode_step_in(team, token).map_err(|e| e.to_string())?;
        Ok(ms(t0))
    })?;
    Ok((encoder, step))
}

struct Report<'a> {
    options: &'a SessionOptions,
    n_words: usize,
    audio_s: Option<f64>,
    runs: Vec<Run>,
    vad_window_ms: f64,
    micro: Option<Micro>,
    dir: PathBuf,
}

impl Report<'_> {
    fn backends(&self) -> [(&'static str, String); 5] {
        let b = |f, c| self.options.backend(f, c).name().to_string();
        [
            ("openwakeword.embedding", b(Family::OpenWakeWord, "embedding")),
            ("moonshine_asr.encoder", b(Family::MoonshineAsr, "encoder")),
            ("moonshine_asr.decoder", b(Family::MoonshineAsr, "decoder")),
            ("silero_vad.network", b(Family::SileroVad, "network")),
            ("microwakeword.step", micro_backend().name().to_string()),
        ]
    }

    fn json(&self) -> Value {
        let cpu = crate::cpu::describe();
        let runs: Vec<Value> = self
            .runs
            .iter()
            .map(|r| {
                json!({
                    "threads": r.threads,
                    "openwakeword_chunk_ms": r.wake_chunk_ms,
                    "openwakeword_rtf": r.wake_chunk_ms / 80.0,
                    "moonshine_encoder_ms": r.encoder_ms,
                    "moonshine_encoder_rtf": r.encoder_ms.zip(self.audio_s).map(|(e, s)| e / (s * 1e3)),
                    "moonshine_decoder_step_ms": r.decoder_step_ms,
                })
            })
            .collect();
        let backends: serde_json::Map<String, Value> =
            self.backends().into_iter().map(|(k, v)| (k.to_string(), Value::String(v))).collect();
        json!({
            "neon_version": env!("CARGO_PKG_VERSION"),
            "cpu": {
                "model": cpu.model,
                "arch": std::env::consts::ARCH,
                "cores": cpu.cores,
                "features": cpu.features,
            },
            "backends": backends,
            "openwakeword_heads": self.n_words,
            "moonshine_audio_s": self.audio_s,
            "runs": runs,
            "silero_vad_window_ms": self.vad_window_ms,
            "silero_vad_rtf": self.vad_window_ms / VAD_WINDOW_MS,
            "microwakeword": self.micro.as_ref().map(|m| json!({
                "step_ms": m.steps.iter().map(|(name, n, t)| json!({
                    "model": name, "frames": n, "ms": t,
                })).collect::<Vec<_>>(),
                "models_per_stream": m.steps.len(),
                "second_ms": m.second_ms,
                "rtf": m.second_ms / 1e3,
            })),
        })
    }

    fn print(&self) -> Result<(), String> {
        let cpu = crate::cpu::describe();
        line(format_args!("neon {} bench", env!("CARGO_PKG_VERSION")))?;
        line(format_args!(
            "cpu:       {} ({}, {} cores offered; features: {})",
            cpu.model,
            std::env::consts::ARCH,
            cpu.cores,
            if cpu.features.is_empty() { "none".to_string() } else { cpu.features.join(" ") }
        ))?;
        let backends: Vec<String> =
            self.backends().iter().map(|(k, v)| format!("{k}={v}")).collect();
        line(format_args!("backends:  {}", backends.join(", ")))?;
        match self.audio_s {
            Some(s) => line(format_args!("moonshine: {} ({s:.2} s clip)", self.dir.display()))?,
            None => line(format_args!(
                "moonshine: no model at {} (run tools/moonshine/fetch.sh or pass --model-dir)",
                self.dir.display()
            ))?,
        }
        line(format_args!(
            "\n{:>7}  {:>26}  {:>26}  {:>12}",
            "threads",
            format!("openWakeWord chunk ({} heads)", self.n_words),
            "Moonshine encoder",
            "decoder step"
        ))?;
        for r in &self.runs {
            let enc = match (r.encoder_ms, self.audio_s) {
                (Some(e), Some(s)) => format!("{e:.1} ms (RTF {:.4})", e / (s * 1e3)),
                _ => "-".to_string(),
            };
            let step = r.decoder_step_ms.map_or("-".to_string(), |d| format!("{d:.2} ms"));
            let wake = format!("{:.3} ms (RTF {:.4})", r.wake_chunk_ms, r.wake_chunk_ms / 80.0);
            line(format_args!("{:>7}  {wake:>26}  {enc:>26}  {step:>12}", r.threads))?;
        }
        line(format_args!(
            "\nSilero VAD: {:.3} ms per 32 ms window (RTF {:.4}), 1 thread",
            self.vad_window_ms,
            self.vad_window_ms / VAD_WINDOW_MS
        ))?;
        match &self.micro {
            Some(m) => {
                let steps: Vec<String> = m
                    .steps
                    .iter()
                    .map(|(name, n, t)| format!("{name} {t:.3} ms ({} ms of audio)", 10 * n))
                    .collect();
                line(format_args!("microWakeWord step: {}, 1 thread", steps.join(", ")))?;
                line(format_args!(
                    "microWakeWord, the {} on one stream: {:.3} ms per second of audio (RTF {:.4})",
                    m.steps.len(),
                    m.second_ms,
                    m.second_ms / 1e3
                ))?;
            }
            None => line(format_args!("microWakeWord: not built in (feature builtin-micro)"))?,
        }
        line(format_args!(
            "\nmedians; RTF = compute time / audio time (openWakeWord: per 80 ms chunk, all \
             heads; Moonshine: encoder per clip, plus one decoder step per token; Silero VAD: \
             one Vad::push of 512 samples; microWakeWord: one model's plan step, and \
             MicroDetector::push of 1 s with the frontend)"
        ))
    }
}
