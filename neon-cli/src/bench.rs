//! `neon bench`: times on this machine the workloads of the aarch64 peer tables
//! (`benches/arm-peers.sh`; BENCHMARKS.md, "aarch64 peers: ONNX Runtime" and "aarch64 peers:
//! TFLite"), one row each with the tables' names: Silero VAD per 32 ms window, openWakeWord
//! per 80 ms chunk (the whole-window embedding with hey_jarvis, and `WakeDetector::push`
//! with the five built-in heads), each official microWakeWord model per step and the four on
//! one stream, the sanoTTS decoder per second of audio, the Moonshine encoder on 2 s and on
//! beckett.wav and one decoder step (position 7, 413 frames; the `dot` path too when
//! `moonshine_asr.int8=dot`). It reports the CPU, its features and the backends chosen, in
//! a form users can paste into an issue (a markdown table, or `--json`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use neon_models::exec_plan::Family;
use neon_models::microwakeword::builtin as micro_builtin;
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::MicroWord;
use neon_models::moonshine::files::paths;
use neon_models::moonshine::reference::{
    prefill_in, BECKETT_FRAMES, BECKETT_SAMPLES, BECKETT_TOKENS, SHORT_SAMPLES, STEP_POSITION,
};
use neon_models::moonshine::transcriber::{MoonshineModel, Transcriber};
use neon_models::moonshine::{encoder_frames, SAMPLE_RATE};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::EmbeddingMode;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::sanotts::synthetic::{hidden_states, prepared_voice, SECOND_FRAMES};
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::HOP;
use neon_models::session::{quant_path_name, SessionOptions};
use neon_models::vad::detector::Vad;
use neon_models::vad::WINDOW;
use neon_runtime::ops::quant::QuantPath;
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
    /// Directory of the Moonshine model, as for `neon transcribe` (its rows are skipped
    /// when absent; the beckett.wav row when the directory has no beckett.wav).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// The second thread count timed for the workloads that run on a worker team
    /// (openWakeWord, sanoTTS, Moonshine; default: the cores the OS offers, at most 4); the
    /// first is always 1.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Seconds spent on each row (at least 3 timed calls each, after one untimed): more
    /// gives steadier medians.
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    seconds: f64,
    /// Only these workloads, comma-separated: groups vad, oww, micro, sanotts, moonshine,
    /// or rows oww_chunk, oww_heads, micro_step, micro_stream, ms_encoder_2,
    /// ms_encoder_beckett, ms_step (default: all).
    #[arg(long, value_name = "LIST")]
    only: Option<String>,
    #[command(flatten)]
    session: SessionArgs,
}

/// The rows `--only` selects: (key, group). The keys of the Moonshine, sanoTTS and VAD rows
/// are those of `benches/arm/ort.sh`'s `ONLY`.
const WORKLOADS: [(&str, &str); 9] = [
    ("vad", "vad"),
    ("oww_chunk", "oww"),
    ("oww_heads", "oww"),
    ("micro_step", "micro"),
    ("micro_stream", "micro"),
    ("sanotts", "sanotts"),
    ("ms_encoder_2", "moonshine"),
    ("ms_encoder_beckett", "moonshine"),
    ("ms_step", "moonshine"),
];

/// The selected row keys of `--only` (every key without it).
struct Selection(Vec<&'static str>);

impl Selection {
    /// Parses `--only`: comma-separated keys and groups of [`WORKLOADS`].
    fn parse(only: Option<&str>) -> Result<Self, String> {
        let Some(list) = only else {
            return Ok(Self(WORKLOADS.iter().map(|(k, _)| *k).collect()));
        };
        let mut keys = Vec::new();
        for item in list.split(',').map(str::trim) {
            let matched: Vec<&'static str> = WORKLOADS
                .iter()
                .filter(|(k, g)| *k == item || *g == item)
                .map(|(k, _)| *k)
                .collect();
            if matched.is_empty() {
                let mut names: Vec<&str> = WORKLOADS.iter().map(|(_, g)| *g).collect();
                names.dedup();
                for (key, _) in WORKLOADS {
                    if !names.contains(&key) {
                        names.push(key);
                    }
                }
                return Err(format!(
                    "--only: unknown workload `{item}` (one of: {})",
                    names.join(", ")
                ));
            }
            for key in matched {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        Ok(Self(keys))
    }

    fn has(&self, key: &str) -> bool {
        self.0.contains(&key)
    }

    fn any(&self, group: &str) -> bool {
        WORKLOADS.iter().any(|(k, g)| *g == group && self.has(k))
    }
}

/// What every row's measurement needs: the session, the rows asked for, the worker teams
/// (1 thread, then the second count) and the time spent per row (s).
struct Setup<'a> {
    options: &'a SessionOptions,
    only: &'a Selection,
    teams: &'a [Team],
    seconds: f64,
}

/// One measured row: a workload of the peer tables at one thread count.
struct Row {
    key: &'static str,
    workload: String,
    threads: usize,
    /// Median time of one call (ms).
    ms: f64,
    /// Audio one call processes (ms), for the real-time factor; `None` for a decoder step.
    audio_ms: Option<f64>,
}

/// The rows measured and the selected ones skipped, with why.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    skipped: Vec<(&'static str, String)>,
}

impl Rows {
    fn push(
        &mut self,
        key: &'static str,
        workload: String,
        threads: usize,
        ms: f64,
        audio_ms: Option<f64>,
    ) {
        self.rows.push(Row { key, workload, threads, ms, audio_ms });
    }

    /// Puts each workload's rows (one per thread count) together, workloads in the order
    /// they were first measured.
    fn group(&mut self) {
        let mut order: Vec<String> = Vec::new();
        for r in &self.rows {
            if !order.contains(&r.workload) {
                order.push(r.workload.clone());
            }
        }
        self.rows.sort_by_key(|r| order.iter().position(|w| *w == r.workload));
    }
}

pub fn run(args: &BenchArgs) -> Result<(), String> {
    check_in("--seconds", args.seconds, OpenClosed(0.0, 600.0))?;
    let only = Selection::parse(args.only.as_deref())?;
    let options = args.session.options(
        &[Family::OpenWakeWord, Family::MoonshineAsr, Family::SanoTts, Family::SileroVad],
        None,
    )?;
    let second = args.threads.unwrap_or_else(crate::default_threads);
    let mut counts = vec![1];
    if second != 1 {
        counts.push(second);
    }
    let teams = counts.iter().map(|&n| crate::team(Some(n))).collect::<Result<Vec<_>, _>>()?;
    let dir = crate::transcribe::model_dir(args.model_dir.as_deref());
    let s = args.seconds;
    let mut rows = Rows::default();
    if only.has("vad") {
        let ms = time_vad(&mut crate::vad::vad(&options)?, s)?;
        rows.push("vad", "Silero VAD, one 32 ms window".into(), 1, ms, Some(VAD_WINDOW_MS));
    }
    let setup = Setup { options: &options, only: &only, teams: &teams, seconds: s };
    if only.any("oww") {
        time_wake(&setup, &mut rows)?;
    }
    if only.any("micro") {
        time_micro(&setup, &mut rows)?;
    }
    if only.has("sanotts") {
        time_sanotts(&setup, &mut rows)?;
    }
    let beckett = dir.join("beckett.wav");
    let mut moonshine = None;
    if only.any("moonshine") {
        if paths(&dir).0.is_file() {
            let model = MoonshineModel::open(&dir).map_err(|e| e.to_string())?;
            let mut t = Transcriber::new(model, &options).map_err(|e| e.to_string())?;
            let (clip, is_beckett) = clip(&beckett)?;
            let clip = Clip { samples: &clip, is_beckett };
            time_moonshine(&mut t, clip, &setup, &mut rows)?;
            moonshine = Some(is_beckett);
        } else {
            for key in ["ms_encoder_2", "ms_encoder_beckett", "ms_step"]
                .into_iter()
                .filter(|k| only.has(k))
            {
                rows.skipped.push((key, format!("no Moonshine model at {}", dir.display())));
            }
        }
    }
    if moonshine == Some(false) && only.has("ms_encoder_beckett") {
        rows.skipped.push(("ms_encoder_beckett", format!("no {}", beckett.display())));
    }
    rows.group();
    let report = Report { options: &options, rows, dir, moonshine, seconds: s };
    if args.json {
        line(format_args!("{}", report.json()))
    } else {
        report.print()
    }
}

/// beckett.wav when the model directory has it (`tools/moonshine/fetch.sh` puts it there),
/// else as many samples of a deterministic chirp (the encoder's and the step's time do not
/// depend on the content): either way 413 encoder frames for the step's memory. The flag
/// says whether the samples are beckett.wav's.
fn clip(beckett: &Path) -> Result<(Vec<f32>, bool), String> {
    if beckett.is_file() {
        let audio = neon_audio::Audio::open(beckett).map_err(|e| e.to_string())?;
        if encoder_frames(audio.samples.len()) != BECKETT_FRAMES {
            return Err(format!(
                "{}: {} samples, expected beckett.wav's {BECKETT_SAMPLES}",
                beckett.display(),
                audio.samples.len()
            ));
        }
        return Ok((audio.samples, true));
    }
    let chirp = |i: usize| (0.1 * (i as f64 * (0.01 + i as f64 * 1e-7)).sin()) as f32;
    Ok(((0..BECKETT_SAMPLES).map(chirp).collect(), false))
}

/// The Moonshine rows' audio: 413 encoder frames of beckett.wav or of a chirp ([`clip`]).
#[derive(Clone, Copy)]
struct Clip<'a> {
    samples: &'a [f32],
    is_beckett: bool,
}

/// Milliseconds of audio per VAD window (512 samples at 16 kHz).
const VAD_WINDOW_MS: f64 = 1e3 * WINDOW as f64 / SAMPLE_RATE as f64;

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

fn elapsed_ms(start: Instant) -> f64 {
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
        Ok(elapsed_ms(t0))
    })
}

/// The openWakeWord rows: `WakeDetector::push` of one 1280-sample chunk in steady state
/// (pseudo-random audio, after 20 chunks; the second stage of hey_jarvis does not run on
/// it, as on the peer rows' chunk 20), with hey_jarvis alone and the whole-window embedding
/// (`oww_chunk`: mel + embedding + head, what the peer computes per chunk), and with the five
/// built-in heads and the session's embedding mode (`oww_heads`), on each team.
fn time_wake(setup: &Setup, rows: &mut Rows) -> Result<(), String> {
    let Setup { options, only, teams, seconds } = *setup;
    if builtin::HEADS.is_empty() {
        for key in ["oww_chunk", "oww_heads"].into_iter().filter(|k| only.has(k)) {
            rows.skipped.push((key, "no built-in heads (feature builtin-heads)".into()));
        }
        return Ok(());
    }
    let mut whole = options.clone();
    whole.set("openwakeword.embedding_mode", "full").map_err(|e| e.to_string())?;
    let mode = match options.embedding_mode() {
        EmbeddingMode::Incremental => "incremental embedding",
        EmbeddingMode::Full => "whole-window embedding",
    };
    let runs: [(&'static str, &SessionOptions, Vec<&str>, String); 2] = [
        (
            "oww_chunk",
            &whole,
            vec!["hey_jarvis_v0.1"],
            "openWakeWord chunk (80 ms): mel + embedding + hey_jarvis".into(),
        ),
        (
            "oww_heads",
            options,
            builtin::HEADS.iter().map(|(n, _)| *n).collect(),
            format!(
                "openWakeWord chunk (80 ms), {} heads: ours WakeDetector::push ({mode})",
                number_word(builtin::HEADS.len())
            ),
        ),
    ];
    for (key, options, heads, name) in runs {
        if !only.has(key) {
            continue;
        }
        let words = heads
            .iter()
            .map(|n| builtin::wake_word(n).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut d =
            WakeDetector::with_builtin_embedding(words, options).map_err(|e| e.to_string())?;
        for team in teams {
            let ms = time_push(&mut d, team, seconds)?;
            rows.push(key, name.clone(), team.threads(), ms, Some(80.0));
        }
    }
    Ok(())
}

/// Median time of one `push` of a 1280-sample chunk in steady state (pseudo-random audio,
/// after the warm-up pushes).
fn time_push(d: &mut WakeDetector, team: &Team, seconds: f64) -> Result<f64, String> {
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
        Ok(elapsed_ms(t0))
    })
}

/// The kernels of microWakeWord's model steps: `MicroDetector`'s choice, the best this CPU
/// runs ([`BackendKind::best`]).
fn micro_backend() -> BackendKind {
    BackendKind::best()
}

/// The microWakeWord rows (one thread; skipped without feature `builtin-micro`): each
/// official model's plan step on pseudo-random int8 input (after 20 warm-up steps: the int8
/// kernels' time does not depend on the values), N frames of 10 ms each (`micro_step`), and
/// `MicroDetector::push` of 1 s of pseudo-random audio with the four models, frontend
/// included (after 1 s of warm-up; `micro_stream`).
fn time_micro(setup: &Setup, rows: &mut Rows) -> Result<(), String> {
    let Setup { only, seconds, .. } = *setup;
    let words = micro_builtin::names()
        .map(|n| neon_models::microwakeword::word::resolve(n).map_err(|e| e.to_string()))
        .collect::<Result<Vec<MicroWord>, _>>()?;
    if words.is_empty() {
        for key in ["micro_step", "micro_stream"].into_iter().filter(|k| only.has(k)) {
            rows.skipped.push((key, "no built-in models (feature builtin-micro)".into()));
        }
        return Ok(());
    }
    for w in words.iter().filter(|_| only.has("micro_step")) {
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
            Ok(elapsed_ms(t0))
        };
        for _ in 0..20 {
            step()?;
        }
        let ms = median(seconds, step)?;
        let name = format!("microWakeWord {}, one step ({} ms)", w.name(), 10 * n);
        rows.push("micro_step", name, 1, ms, Some(10.0 * n as f64));
    }
    if !only.has("micro_stream") {
        return Ok(());
    }
    let count = words.len();
    let mut detector = MicroDetector::new(words);
    let mut seed = 0x2545_f491u32;
    let mut audio = vec![0i16; SAMPLE_RATE];
    let mut next = move || {
        audio.iter_mut().for_each(|s| *s = (xorshift(&mut seed) >> 20) as i16 - 2048);
        audio.clone()
    };
    detector.push(&next(), |_| {}).map_err(|e| e.to_string())?;
    let ms = median(seconds, || {
        let a = next();
        let t0 = Instant::now();
        detector.push(&a, |_| {}).map_err(|e| e.to_string())?;
        Ok(elapsed_ms(t0))
    })?;
    let name = format!("microWakeWord, the {} on one stream, 1 s of audio", number_word(count));
    rows.push("micro_stream", name, 1, ms, Some(1e3));
    Ok(())
}

/// The sanoTTS row on each team: `Decoder::decode` of 1 s of audio (125 frames of the
/// seeded hidden states, the built-in synthetic voice), network and iSTFT.
fn time_sanotts(setup: &Setup, rows: &mut Rows) -> Result<(), String> {
    let Setup { options, teams, seconds, .. } = *setup;
    let weights = prepared_voice().map_err(|e| e.to_string())?;
    let mut d = Decoder::with_backend(weights, options.backend(Family::SanoTts, "decoder"))
        .map_err(|e| e.to_string())?;
    let hidden = hidden_states(SECOND_FRAMES);
    let mut audio = vec![0.0; HOP * SECOND_FRAMES];
    for team in teams {
        let ms = median(seconds, || {
            let t0 = Instant::now();
            d.decode_in(team, &hidden, SECOND_FRAMES, &mut audio).map_err(|e| e.to_string())?;
            Ok(elapsed_ms(t0))
        })?;
        let name = format!("sanoTTS decoder, 1 s of audio ({SECOND_FRAMES} frames)");
        rows.push("sanotts", name, team.threads(), ms, Some(1e3));
    }
    Ok(())
}

/// The Moonshine rows on each team: the encoder on the first 2 s of `clip`
/// (`ms_encoder_2`) and on the whole of it when it is beckett.wav (`ms_encoder_beckett`),
/// and one decoder step at [`STEP_POSITION`] against `clip`'s 413 frames, fed beckett's
/// tokens (`ms_step`; on the widening int8 path, and on the session's when it is another).
fn time_moonshine(
    t: &mut Transcriber,
    Clip { samples: clip, is_beckett }: Clip<'_>,
    setup: &Setup,
    rows: &mut Rows,
) -> Result<(), String> {
    let Setup { options, only, teams, seconds } = *setup;
    let short = &clip[..SHORT_SAMPLES];
    let mut encoders = vec![(
        "ms_encoder_2",
        short,
        format!("Moonshine base-en encoder, 2 s ({} frames)", encoder_frames(SHORT_SAMPLES)),
    )];
    if only.has("ms_encoder_beckett") && is_beckett {
        encoders.push((
            "ms_encoder_beckett",
            clip,
            format!(
                "Moonshine base-en encoder, beckett.wav ({:.2} s, {BECKETT_FRAMES} frames)",
                clip.len() as f64 / SAMPLE_RATE as f64
            ),
        ));
    }
    let mut paths = vec![QuantPath::Widening];
    if options.int8() != QuantPath::Widening {
        paths.push(options.int8());
    }
    for team in teams {
        for (key, audio, name) in encoders.iter().filter(|(k, ..)| only.has(k)) {
            let ms = median(seconds, || {
                let t0 = Instant::now();
                t.encode_in(team, audio).map_err(|e| e.to_string())?;
                Ok(elapsed_ms(t0))
            })?;
            let audio_ms = 1e3 * audio.len() as f64 / SAMPLE_RATE as f64;
            rows.push(key, name.clone(), team.threads(), ms, Some(audio_ms));
        }
        if !only.has("ms_step") {
            continue;
        }
        let frames = t.encode_in(team, clip).map_err(|e| e.to_string())?;
        debug_assert_eq!(frames, BECKETT_FRAMES);
        for &path in &paths {
            t.set_decoder_path(path);
            let ms = median(seconds, || {
                prefill_in(t, team, STEP_POSITION);
                let t0 = Instant::now();
                t.decode_step_in(team, BECKETT_TOKENS[STEP_POSITION]).map_err(|e| e.to_string())?;
                Ok(elapsed_ms(t0))
            })?;
            let mut name = format!(
                "Moonshine base-en decoder step (position {STEP_POSITION}, {BECKETT_FRAMES} frames)"
            );
            if path != QuantPath::Widening {
                name.push_str(&format!(", {} path", quant_path_name(Some(path))));
            }
            rows.push("ms_step", name, team.threads(), ms, None);
        }
        t.set_decoder_path(options.int8());
    }
    Ok(())
}

/// `n` in words up to nine (the tables' "five heads", "the four on one stream").
fn number_word(n: usize) -> String {
    const WORDS: [&str; 10] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
    WORDS.get(n).map_or_else(|| n.to_string(), |w| w.to_string())
}

/// `x` with 3 significant digits (at least 0 and at most 6 decimals).
fn sig3(x: f64) -> String {
    let decimals = if x > 0.0 { (2 - x.log10().floor() as i32).clamp(0, 6) } else { 0 };
    format!("{x:.*}", decimals as usize)
}

/// A time per call in µs below 1 ms, in s from 1 s, else in ms; 3 significant digits.
fn time_text(ms: f64) -> String {
    if ms < 1.0 {
        format!("{} µs", sig3(ms * 1e3))
    } else if ms >= 1e3 {
        format!("{} s", sig3(ms / 1e3))
    } else {
        format!("{} ms", sig3(ms))
    }
}

struct Report<'a> {
    options: &'a SessionOptions,
    rows: Rows,
    dir: PathBuf,
    /// `Some(with beckett.wav)` when the Moonshine model was found and timed.
    moonshine: Option<bool>,
    seconds: f64,
}

impl Report<'_> {
    fn backends(&self) -> [(&'static str, String); 7] {
        let b = |f, c| self.options.backend(f, c).name().to_string();
        [
            ("openwakeword.embedding", b(Family::OpenWakeWord, "embedding")),
            ("moonshine_asr.encoder", b(Family::MoonshineAsr, "encoder")),
            ("moonshine_asr.decoder", b(Family::MoonshineAsr, "decoder")),
            ("moonshine_asr.int8", quant_path_name(Some(self.options.int8())).to_string()),
            ("sanotts.decoder", b(Family::SanoTts, "decoder")),
            ("silero_vad.network", b(Family::SileroVad, "network")),
            ("microwakeword.step", micro_backend().name().to_string()),
        ]
    }

    fn json(&self) -> Value {
        let cpu = crate::cpu::describe();
        let rows: Vec<Value> = self
            .rows
            .rows
            .iter()
            .map(|r| {
                json!({
                    "key": r.key,
                    "workload": r.workload,
                    "threads": r.threads,
                    "ms": r.ms,
                    "calls_per_s": 1e3 / r.ms,
                    "audio_ms": r.audio_ms,
                    "rtf": r.audio_ms.map(|a| r.ms / a),
                })
            })
            .collect();
        let skipped: Vec<Value> = self
            .rows
            .skipped
            .iter()
            .map(|(key, reason)| json!({ "key": key, "reason": reason }))
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
            "seconds_per_row": self.seconds,
            "moonshine_model": self.moonshine.map(|_| self.dir.display().to_string()),
            "rows": rows,
            "skipped": skipped,
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
        match self.moonshine {
            Some(true) => {
                line(format_args!("moonshine: {} (with beckett.wav)", self.dir.display()))?
            }
            Some(false) => line(format_args!(
                "moonshine: {} (no beckett.wav: the step's 413 frames are of a chirp)",
                self.dir.display()
            ))?,
            None if self.rows.skipped.iter().any(|(k, _)| k.starts_with("ms_")) => {
                line(format_args!(
                    "moonshine: no model at {} (run tools/moonshine/fetch.sh or pass --model-dir)",
                    self.dir.display()
                ))?
            }
            None => {}
        }
        line(format_args!("\n| workload | threads | time per call | calls/s | RTF |"))?;
        line(format_args!("|---|---:|---:|---:|---:|"))?;
        for r in &self.rows.rows {
            let rtf = r.audio_ms.map_or("".to_string(), |a| sig3(r.ms / a));
            line(format_args!(
                "| {} | {} | {} | {} | {rtf} |",
                r.workload,
                r.threads,
                time_text(r.ms),
                sig3(1e3 / r.ms)
            ))?;
        }
        for (key, reason) in &self.rows.skipped {
            line(format_args!("skipped {key}: {reason}"))?;
        }
        line(format_args!(
            "\nmedians of at least 3 calls over {} s per row; RTF = time per call / audio per \
             call; the workloads of BENCHMARKS.md's aarch64 peer tables (docs/benchmarks.md)",
            self.seconds
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{sig3, time_text, Selection};

    #[test]
    fn selection_and_formats() {
        assert_eq!(Selection::parse(None).unwrap().0.len(), 9);
        let s = Selection::parse(Some("vad,ms_step, oww")).unwrap();
        assert_eq!(s.0, ["vad", "ms_step", "oww_chunk", "oww_heads"]);
        assert!(s.any("moonshine") && !s.has("ms_encoder_2"));
        let e = Selection::parse(Some("vad,foo")).err().unwrap();
        assert!(e.starts_with("--only: unknown workload `foo` (one of: vad, oww, micro"), "{e}");
        assert_eq!(sig3(0.000_123_4), "0.000123");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(4321.0), "4321");
        assert_eq!(time_text(0.0691), "69.1 µs");
        assert_eq!(time_text(263.8), "264 ms");
        assert_eq!(time_text(1311.0), "1.31 s");
    }
}
