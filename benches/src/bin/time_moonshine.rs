//! Host timing of Moonshine base-en on beckett.wav, in the format of
//! `tools/moonshine/bench_peers.py` (ONNX Runtime), so `benches/moonshine-peers.sh` can run
//! both in one session and print ratios without parsing criterion's output.
//!
//! Workloads (the same as the peer script's; medians of `reps` timed calls after one warm-up
//! call, `std::time::Instant`):
//! - `encoder`: `Transcriber::encode` of the 159,414 samples (413 frames), cross-attention
//!   keys and values of the 8 decoder layers included (ONNX Runtime computes those in its
//!   first decoder step);
//! - `step`: one cached `decode_step` at position 7 (fed `BECKETT_TOKENS[7]`; before each,
//!   decoding restarts and the 7 tokens before it are fed untimed);
//! - `first_logits`: `encode` + `decode_step(BOS)`: audio to the first logits;
//! - `transcribe`: `encode` + greedy decoding to EOS (15 steps), without the detokenisation.
//!
//! The backend `neon transcribe` runs, `BackendKind::best()` (`Neon` on aarch64, the best
//! `X86` level of the CPU on x86-64, named in the output), chosen once; one thread, weights prepared beforehand, no allocation in the timed calls but
//! `transcribe`'s token vector.
//!
//! Usage: `time_moonshine [--json PATH] [--scale X]` (`--scale` multiplies every repetition
//! count: 0.2 for a quick look). Exits with status 2, after a message, when the model is
//! missing (`tools/moonshine/fetch.sh` creates it).

use std::time::Instant;

use neon_benches::moonshine::{beckett, open, prefill, BECKETT_TOKENS, STEP_POSITION};
use neon_models::moonshine::transcriber::Transcriber;
use neon_models::moonshine::{BOS, EOS};
use neon_runtime::{Backend, BackendKind, WithBackend};

/// Repetitions per workload (before `--scale`).
const REPS: [(&str, usize); 4] =
    [("encoder", 15), ("step", 200), ("first_logits", 15), ("transcribe", 7)];

/// Median, quartiles and minimum of timed calls (ms).
struct Stats {
    median: f64,
    q1: f64,
    q3: f64,
    min: f64,
    n: usize,
}

impl Stats {
    fn new(mut times: Vec<f64>) -> Self {
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        Stats { median: at(0.5), q1: at(0.25), q3: at(0.75), min: times[0], n: times.len() }
    }

    fn json(&self) -> String {
        format!(
            "{{\"median_ms\": {:.4}, \"q1_ms\": {:.4}, \"q3_ms\": {:.4}, \"min_ms\": {:.4}, \"n\": {}}}",
            self.median, self.q1, self.q3, self.min, self.n
        )
    }
}

/// Times `reps` calls of `f` (after one untimed call); `f` returns the time it measured.
fn repeat(reps: usize, mut f: impl FnMut() -> f64) -> Vec<f64> {
    f();
    (0..reps).map(|_| f()).collect()
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn greedy<B: Backend>(t: &mut Transcriber<B>, tokens: &mut Vec<u32>) {
    t.greedy(BECKETT_TOKENS.len(), tokens).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut json = None;
    let mut scale = 1.0f64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = it.next().cloned(),
            "--scale" => scale = it.next().and_then(|s| s.parse().ok()).unwrap_or(1.0),
            _ => {
                eprintln!("usage: time_moonshine [--json PATH] [--scale X]");
                std::process::exit(2);
            }
        }
    }
    BackendKind::best().with(Time { json, scale }).unwrap();
}

/// The timings, on the backend chosen at run time.
struct Time {
    /// Where to write the JSON results.
    json: Option<String>,
    /// Multiplies every repetition count.
    scale: f64,
}

impl WithBackend for Time {
    type Output = ();

    fn run<B: Backend>(self) {
        time::<B>(self.json, self.scale);
    }
}

fn time<B: Backend>(json: Option<String>, scale: f64) {
    let model = open::<B>().and_then(|t| Ok((t, beckett()?)));
    let (mut t, samples) = match model {
        Ok(m) => m,
        Err(e) => {
            eprintln!("time_moonshine: {e}");
            std::process::exit(2);
        }
    };
    let reps = |name: &str| {
        let n = REPS.iter().find(|(w, _)| *w == name).unwrap().1;
        ((n as f64 * scale).round() as usize).max(3)
    };

    // The greedy sequence is the golden one, so the step position is ONNX Runtime's.
    let frames = t.encode(&samples).unwrap();
    let mut tokens = Vec::with_capacity(64);
    greedy(&mut t, &mut tokens);
    assert_eq!(tokens, BECKETT_TOKENS, "beckett transcript");

    let encoder = repeat(reps("encoder"), || {
        let start = Instant::now();
        t.encode(&samples).unwrap();
        ms(start)
    });
    let step = repeat(reps("step"), || {
        prefill(&mut t, STEP_POSITION);
        let start = Instant::now();
        t.decode_step(BECKETT_TOKENS[STEP_POSITION]).unwrap();
        ms(start)
    });
    let first_logits = repeat(reps("first_logits"), || {
        let start = Instant::now();
        t.encode(&samples).unwrap();
        t.decode_step(BOS).unwrap();
        ms(start)
    });
    let transcribe = repeat(reps("transcribe"), || {
        let start = Instant::now();
        t.encode(&samples).unwrap();
        greedy(&mut t, &mut tokens);
        let spent = ms(start);
        assert_eq!(tokens.last(), Some(&EOS));
        spent
    });

    let rows = [
        ("encoder", Stats::new(encoder)),
        ("step", Stats::new(step)),
        ("first_logits", Stats::new(first_logits)),
        ("transcribe", Stats::new(transcribe)),
    ];
    println!(
        "neon Moonshine base-en, {}, beckett.wav ({} samples, {frames} frames), 1 thread",
        B::NAME,
        samples.len()
    );
    println!("{:<14} {:>10} {:>10} {:>10} {:>6}", "workload", "median ms", "q1", "q3", "n");
    for (name, s) in &rows {
        println!("{name:<14} {:>10.3} {:>10.3} {:>10.3} {:>6}", s.median, s.q1, s.q3, s.n);
    }
    let results: Vec<String> = rows.iter().map(|(n, s)| format!("\"{n}\": {}", s.json())).collect();
    let out = format!(
        "{{\"runtime\": \"neon\", \"backend\": \"{}\", \"clip\": \"beckett.wav\", \
         \"samples\": {}, \"frames\": {frames}, \"step_position\": {STEP_POSITION}, \
         \"step_token\": {}, \"results\": {{\"neon\": {{{}}}}}}}\n",
        B::NAME,
        samples.len(),
        BECKETT_TOKENS[STEP_POSITION],
        results.join(", ")
    );
    if let Some(path) = json {
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
