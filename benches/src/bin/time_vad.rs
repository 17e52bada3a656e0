//! Host timing of Silero VAD per 512-sample window (32 ms of audio) on one thread, in the
//! format of `tools/silero_vad/bench_peer.py` (ONNX Runtime), so `benches/vad-peer.sh` can
//! run both in one session, alternating, and print the ratio without parsing criterion's
//! output.
//!
//! The input is the peer's: the windows of `models/moonshine/clips/train_numbers.wav`
//! (embedded; 183 windows, the last zero-padded) in order, the stream restarted (state and
//! context zeroed) at every pass over the clip, as `OnnxWrapper` feeds a new clip. Workloads:
//! - `push`: `Vad::push` of each window's 512 samples (what `neon vad` runs per window: the
//!   finiteness check, the copy into the stream's input, one backend dispatch, the plan, the
//!   context shift; the probability handed to a closure);
//! - `run`: the compiled plan alone, `SileroVad::run` on the window's 576 inputs (64 samples
//!   of context, then the 512 new ones) and the carried `[2, 128]` state: what the peer's
//!   `session.run` computes;
//!
//! Each call is timed on its own (`Instant`, about 20 ns of overhead); after one warm-up
//! pass, `--passes` passes (default 30) are timed: the median (10th and 90th percentiles,
//! minimum) per window over all calls, and the process CPU time per window over the passes
//! (`CLOCK_PROCESS_CPUTIME_ID`, as Python's `time.process_time`: on a shared machine the
//! compute time, wall time also counting the waits for a core). The first timed pass is
//! checked against ONNX Runtime's probabilities (`models/vad/goldens/train_numbers.json`,
//! within 1e-4). Weights prepared and buffers allocated beforehand; no allocation per call.
//!
//! Usage: `time_vad [--passes N] [--backends best portable x86-avx2 x86-avx512]
//! [--workloads push run] [--json FILE]` (defaults: backends `best portable`,
//! workloads `push run`).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use neon_benches::timing::{cpu_seconds, load_average};
use neon_benches::vad::{clip, golden, windows, INPUT, STATE};
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::network::{SileroVad, SileroVadWorkspace};
use neon_models::vad::WINDOW;
use neon_runtime::{Backend, BackendKind, WithBackend};

/// Milliseconds of audio per window.
const WINDOW_MS: f64 = 32.0;

/// The `q` quantile of sorted `v` (linear interpolation, as numpy's default).
fn quantile(v: &[f64], q: f64) -> f64 {
    let at = q * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
}

/// One measured case.
struct Timing {
    name: String,
    /// Per-call wall times in seconds, sorted.
    calls: Vec<f64>,
    /// Process CPU seconds per window over the timed passes.
    cpu: f64,
    max_diff: f32,
}

impl Timing {
    fn line(&self) -> String {
        let us = |s: f64| s * 1e6;
        let med = quantile(&self.calls, 0.5);
        format!(
            "{}: {:.2} us per window (p10 {:.2}, p90 {:.2}, min {:.2}; real-time factor {:.5}; \
             process CPU {:.2} us; {} calls; max |p - ONNX Runtime| {:.1e})",
            self.name,
            us(med),
            us(quantile(&self.calls, 0.1)),
            us(quantile(&self.calls, 0.9)),
            us(self.calls[0]),
            med * 1e3 / WINDOW_MS,
            us(self.cpu),
            self.calls.len(),
            self.max_diff,
        )
    }

    fn json(&self) -> String {
        let us = |s: f64| s * 1e6;
        format!(
            "{{\"name\": \"{}\", \"median_us\": {:.4}, \"p10_us\": {:.4}, \"p90_us\": {:.4}, \
             \"min_us\": {:.4}, \"cpu_us\": {:.4}, \"calls\": {}, \"max_abs_diff\": {:e}}}",
            self.name,
            us(quantile(&self.calls, 0.5)),
            us(quantile(&self.calls, 0.1)),
            us(quantile(&self.calls, 0.9)),
            us(self.calls[0]),
            us(self.cpu),
            self.calls.len(),
            self.max_diff,
        )
    }
}

struct Case<'a> {
    model: Arc<VadModel>,
    samples: &'a [f32],
    inputs: &'a [[f32; INPUT]],
    golden: &'a [f32],
    passes: usize,
    workloads: &'a [String],
}

impl WithBackend for Case<'_> {
    type Output = Vec<Timing>;

    fn run<B: Backend>(self) -> Vec<Timing> {
        self.workloads.iter().map(|w| time::<B>(&self, w)).collect()
    }
}

/// Times `workload` on backend `B`: one warm-up pass, then `passes` timed ones.
fn time<B: Backend>(c: &Case<'_>, workload: &str) -> Timing {
    let n = c.inputs.len();
    let mut calls = Vec::with_capacity(c.passes * n);
    let mut probs = vec![0.0f32; n];
    let mut cpu = 0.0;
    let mut max_diff = 0.0f32;
    let pass = |probs: &mut Vec<f32>, calls: &mut Vec<f64>, cpu: &mut f64| match workload {
        "push" => {
            // A new stream per pass (allocated outside the timed calls).
            let mut vad = Vad::new(c.model.clone(), B::KIND).unwrap();
            let c0 = cpu_seconds();
            for (k, window) in c.samples.chunks_exact(WINDOW).enumerate() {
                let t0 = Instant::now();
                vad.push(window, |p| probs[k] = p).unwrap();
                calls.push(t0.elapsed().as_secs_f64());
            }
            *cpu += cpu_seconds() - c0;
        }
        _ => {
            let mut state = [0.0f32; STATE];
            let mut ws = Box::new(SileroVadWorkspace::new());
            let mut p = [0.0f32];
            let c0 = cpu_seconds();
            for (k, x) in c.inputs.iter().enumerate() {
                let t0 = Instant::now();
                SileroVad::run::<B, _>(&c.model.weights, x, &mut p, &mut state, &mut ws).unwrap();
                calls.push(t0.elapsed().as_secs_f64());
                probs[k] = p[0];
            }
            *cpu += cpu_seconds() - c0;
        }
    };
    pass(&mut probs, &mut Vec::with_capacity(n), &mut 0.0);
    for i in 0..c.passes {
        pass(&mut probs, &mut calls, &mut cpu);
        if i == 0 {
            for (a, b) in probs.iter().zip(c.golden) {
                max_diff = max_diff.max((a - b).abs());
            }
            assert!(max_diff <= 1e-4, "{workload} on {}: {max_diff} from ONNX Runtime", B::NAME);
        }
    }
    calls.sort_by(f64::total_cmp);
    Timing {
        name: format!("neon {} ({workload}, 1 thread)", B::NAME),
        calls,
        cpu: cpu / (c.passes * n) as f64,
        max_diff,
    }
}

fn backend(name: &str) -> Option<BackendKind> {
    match name {
        "best" => Some(BackendKind::best()),
        _ => BackendKind::ALL.into_iter().find(|k| k.name() == name),
    }
}

fn main() {
    let usage = || -> ! {
        eprintln!(
            "usage: time_vad [--passes N] [--backends best portable x86-avx2 x86-avx512] \
             [--workloads push run] [--json FILE]"
        );
        std::process::exit(2);
    };
    let (mut passes, mut json) = (30usize, None::<String>);
    let mut backends = vec!["best".to_string(), "portable".to_string()];
    let mut workloads = vec!["push".to_string(), "run".to_string()];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let list = |i: usize| -> Vec<String> {
            args[i + 1..].iter().take_while(|v| !v.starts_with("--")).cloned().collect()
        };
        match args[i].as_str() {
            "--passes" => {
                passes = args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| usage());
                i += 2;
            }
            "--json" => {
                json = Some(args.get(i + 1).cloned().unwrap_or_else(|| usage()));
                i += 2;
            }
            "--backends" => {
                backends = list(i);
                i += 1 + backends.len();
            }
            "--workloads" => {
                workloads = list(i);
                i += 1 + workloads.len();
            }
            _ => usage(),
        }
    }
    let kinds: Vec<BackendKind> =
        backends.iter().map(|b| backend(b).unwrap_or_else(|| usage())).collect();
    if passes == 0
        || kinds.is_empty()
        || workloads.is_empty()
        || !workloads.iter().all(|w| ["push", "run"].contains(&w.as_str()))
    {
        usage();
    }
    let mut kinds_unique: Vec<BackendKind> = Vec::new();
    for k in kinds {
        if !kinds_unique.contains(&k) {
            kinds_unique.push(k);
        }
    }

    let samples = clip();
    let inputs = windows(&samples);
    let golden = golden();
    assert_eq!(golden.len(), inputs.len());
    let model = VadModel::builtin().expect("the embedded weights load");
    let load = load_average();
    println!(
        "# Silero VAD, neon: {} windows of {} per pass, median per window over {passes} passes \
         after 1 warm-up pass, load average {load} at start",
        inputs.len(),
        neon_benches::vad::CLIP,
    );
    let mut results = Vec::new();
    for kind in kinds_unique {
        let case = Case {
            model: model.clone(),
            samples: &samples,
            inputs: &inputs,
            golden: &golden,
            passes,
            workloads: &workloads,
        };
        match kind.with(case) {
            Ok(timings) => {
                for t in timings {
                    println!("{}", t.line());
                    results.push(t);
                }
            }
            Err(e) => eprintln!("time_vad: {e}"),
        }
    }
    if let Some(path) = json {
        let mut out = String::new();
        write!(
            out,
            "{{\"side\": \"neon\", \"windows\": {}, \"passes\": {passes}, \"load\": \"{load}\", \
             \"results\": [",
            inputs.len()
        )
        .unwrap();
        let items: Vec<String> = results.iter().map(Timing::json).collect();
        out += &items.join(", ");
        out += "]}\n";
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
