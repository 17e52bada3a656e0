//! Host timing of the four official microWakeWord models, in the format of
//! `tools/microwakeword/bench_peer.py` (pymicro-wakeword 2.5.0 and its libtensorflowlite_c),
//! so `benches/micro-peers.sh` can run both in one session, alternating rounds, and print
//! `| workload | ours | peer | ours/peer |` rows without parsing criterion's output.
//!
//! Input, per model `m`: its own recording of wyoming-microwakeword's test
//! (`models/tests/data/microwakeword/<m>.wav`) followed by 16,000 zero samples, as
//! `tools/microwakeword/goldens.py` streams it; the reference is
//! `models/microwakeword/goldens/<m>.safetensors` (`input.<m>` [S, N, 40] int8: the
//! quantised features of each step, `output.<m>` [S] uint8). Workloads:
//! - `step`: the model step alone, `StreamPlan::run` on one step's int8 input with the
//!   carried state (what the peer's `TfLiteInterpreterInvoke` computes), each call timed on
//!   its own (`Instant`, and the process CPU time around it); reported: the median wall
//!   time per step and the mean CPU time per step (`step CPU`: what a loaded machine's
//!   preemptions do not inflate), in microseconds;
//! - `push`: `MicroDetector::push` of the whole padded clip in chunks of 1,024 samples
//!   (frontend, quantisation, model steps, window: what `neon serve --engine micro` runs per
//!   model); reported: the process CPU time (`CLOCK_PROCESS_CPUTIME_ID`) per second of audio
//!   in microseconds, the median over the passes.
//!
//! `step` runs on `--backend` (default `best`: `BackendKind::best()`, the best `X86` level
//! of the CPU on x86-64), named in the output; `push` runs on the backend `MicroDetector`
//! itself picks. Every pass starts a fresh stream (state zeroed, allocated outside the
//! timed calls); the first timed pass of each workload is checked against the golden
//! outputs (equal bits). One warm-up pass, then `--passes` passes (default 20).
//!
//! Usage: `time_micro [--passes N] [--backend best|portable|x86-avx2|x86-avx512]
//! [--json FILE]`. Needs the feature `micro` of neon-benches (run from the repository root).

use std::time::Instant;

use neon_benches::timing::{cpu_seconds, load_average};
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::{resolve, MicroWord};
use neon_runtime::exec::stream::StreamPlan;
use neon_runtime::{Backend, BackendKind, WithBackend};
use safetensors::SafeTensors;

/// The official models, in table order.
const MODELS: [&str; 4] = ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"];
/// Zero samples goldens.py appends to each clip.
const PAD: usize = 16_000;
/// Samples per `push` (a Wyoming client's usual chunk).
const CHUNK: usize = 1024;
/// Features per frame.
const FEATURES: usize = 40;

/// One model's golden: the padded clip, the step inputs and the step outputs.
struct Golden {
    audio: Vec<i16>,
    inputs: Vec<Vec<i8>>,
    outputs: Vec<u8>,
}

fn golden(model: &str) -> Golden {
    let path = format!("models/microwakeword/goldens/{model}.safetensors");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e} (run from the root)"));
    let st = SafeTensors::deserialize(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
    let input = st.tensor(&format!("input.{model}")).expect("input tensor");
    let output = st.tensor(&format!("output.{model}")).expect("output tensor");
    let step = input.shape()[1] * FEATURES;
    let inputs = input.data().chunks_exact(step).map(|c| c.iter().map(|&b| b as i8).collect());
    let wav = format!("models/tests/data/microwakeword/{model}.wav");
    let mut audio =
        neon_benches::wav_i16(&std::fs::read(&wav).unwrap_or_else(|e| panic!("{wav}: {e}")));
    audio.resize(audio.len() + PAD, 0);
    Golden { audio, inputs: inputs.collect(), outputs: output.data().to_vec() }
}

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The step workload on backend `B`.
struct Step<'a> {
    plan: &'a StreamPlan,
    golden: &'a Golden,
    passes: usize,
}

impl WithBackend for Step<'_> {
    /// Median wall and mean CPU microseconds per step.
    type Output = (f64, f64);

    fn run<B: Backend>(self) -> (f64, f64) {
        let mut calls = Vec::with_capacity(self.passes * self.golden.inputs.len());
        let mut cpu = 0.0;
        let mut scratch = self.plan.scratch();
        for pass in 0..=self.passes {
            let mut state = self.plan.state();
            for (k, x) in self.golden.inputs.iter().enumerate() {
                let (c0, t0) = (cpu_seconds(), Instant::now());
                let y = self.plan.run::<B, i8, u8>(&mut state, &mut scratch, x).unwrap()[0];
                let dt = t0.elapsed().as_secs_f64();
                let dc = cpu_seconds() - c0;
                if pass == 1 {
                    assert_eq!(y, self.golden.outputs[k], "step {k} on {}", B::NAME);
                }
                if pass > 0 {
                    calls.push(dt);
                    cpu += dc;
                }
            }
        }
        let n = calls.len() as f64;
        (median(&mut calls) * 1e6, cpu / n * 1e6)
    }
}

/// Median process CPU microseconds per second of audio of `MicroDetector::push`.
fn push(word: &MicroWord, g: &Golden, passes: usize) -> f64 {
    let seconds = g.audio.len() as f64 / 16_000.0;
    let mut per_pass = Vec::with_capacity(passes);
    let mut outputs = Vec::with_capacity(g.outputs.len());
    for pass in 0..=passes {
        let mut det = MicroDetector::new(vec![word.clone()]);
        outputs.clear();
        let c0 = cpu_seconds();
        for chunk in g.audio.chunks(CHUNK) {
            det.push(chunk, |e| outputs.push(e.decision.output)).unwrap();
        }
        let cpu = cpu_seconds() - c0;
        if pass == 1 {
            assert_eq!(outputs, g.outputs, "MicroDetector::push of {}", word.name());
        }
        if pass > 0 {
            per_pass.push(cpu / seconds * 1e6);
        }
    }
    median(&mut per_pass)
}

fn main() {
    let usage = || -> ! {
        eprintln!(
            "usage: time_micro [--passes N] [--backend best|portable|x86-avx2|x86-avx512] \
             [--json FILE]"
        );
        std::process::exit(2);
    };
    let (mut passes, mut json, mut backend) = (20usize, None::<String>, "best".to_string());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--passes" => passes = value.parse().unwrap_or_else(|_| usage()),
            "--json" => json = Some(value),
            "--backend" => backend = value,
            _ => usage(),
        }
    }
    let kind = match backend.as_str() {
        "best" => BackendKind::best(),
        b => BackendKind::ALL.into_iter().find(|k| k.name() == b).unwrap_or_else(|| usage()),
    };
    if passes == 0 {
        usage();
    }
    let load = load_average();
    println!(
        "# microWakeWord, neon: step on {}, push on MicroDetector's own backend; medians over \
         {passes} passes after 1 warm-up pass, load average {load} at start",
        kind.name()
    );
    let mut results = Vec::new();
    for model in MODELS {
        let word = resolve(model).unwrap_or_else(|e| panic!("{model}: {e}"));
        let g = golden(model);
        let (step, step_cpu) = kind
            .with(Step { plan: word.plan(), golden: &g, passes })
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        let push = push(&word, &g, passes);
        println!(
            "{model}: step {step:.2} us (median per step; CPU {step_cpu:.2} us, mean; {} steps \
             per pass); push {push:.1} us CPU per second of audio ({:.2} s per pass); outputs \
             equal to the golden",
            g.inputs.len(),
            g.audio.len() as f64 / 16_000.0,
        );
        results.push(format!(
            "{{\"name\": \"step {model}\", \"us\": {step:.4}}}, \
             {{\"name\": \"step CPU {model}\", \"us\": {step_cpu:.4}}}, \
             {{\"name\": \"push {model}\", \"us\": {push:.4}}}"
        ));
    }
    if let Some(path) = json {
        let out = format!(
            "{{\"side\": \"neon\", \"backend\": \"{}\", \"passes\": {passes}, \"load\": \
             \"{load}\", \"results\": [{}]}}\n",
            kind.name(),
            results.join(", ")
        );
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
