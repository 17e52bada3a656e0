//! Host timing of Moonshine base-en on beckett.wav (or a 30 s clip of it), in the format of
//! `tools/moonshine/bench_peers.py` (ONNX Runtime), so `benches/moonshine-peers.sh` can run
//! both in one session and print ratios without parsing criterion's output.
//!
//! Workloads (the same as the peer script's; medians of `reps` timed calls after one warm-up
//! call, `std::time::Instant`):
//! - `encoder`: `Transcriber::encode` of the 159,414 samples (413 frames), cross-attention
//!   keys and values of the 8 decoder layers included (ONNX Runtime computes those in its
//!   first decoder step);
//! - `step`: one cached `decode_step` at position 7 (fed `BECKETT_TOKENS[7]`; before each,
//!   decoding restarts and the 7 tokens before it are fed untimed, on the same team);
//! - `cross_kv`: the 8 layers' cross-attention keys and values alone (the `CrossKv` plans
//!   on the encoder output, part of `encoder`), so `encoder - cross_kv` is the encoder
//!   network ONNX Runtime's encoder graph runs (`bench_peers.py --compare` prints it);
//! - `first_logits`: `encode` + `decode_step(BOS)`: audio to the first logits;
//! - `transcribe`: `encode` + greedy decoding to EOS (15 steps), without the detokenisation.
//!
//! The backend `neon transcribe` runs, `BackendKind::best()` (`Neon` on aarch64, the best
//! `X86` level of the CPU on x86-64, named in the output), chosen once; weights prepared
//! beforehand, no allocation in the timed calls but `transcribe`'s token vector.
//!
//! Usage: `time_moonshine [--json PATH] [--scale X] [--threads N] [--clip beckett|beckett30]`:
//! `--scale` multiplies every repetition count (0.2 for a quick look); `--threads` runs every
//! workload on a worker team of `N` threads (default 1: serial); `--clip beckett30` is
//! beckett.wav three times in a row (478,242 samples, 29.9 s, 1,245 frames: the 30 s
//! segment bound), whose greedy tokens are written to the JSON for the peer to compare
//! (beckett's are checked against the golden ones). Exits with status 2, after a message,
//! when the model is missing (`tools/moonshine/fetch.sh` creates it).

use std::time::Instant;

use neon_benches::moonshine::{beckett, open, prefill_in, BECKETT_TOKENS, STEP_POSITION};
use neon_models::moonshine::decoder::{CrossKv, CrossKvWorkspace};
use neon_models::moonshine::transcriber::{token_budget, Transcriber};
use neon_models::moonshine::{BOS, EOS};
use neon_runtime::{Backend, BackendKind, Parallel, RunOptions, Serial, Team, WithBackend};

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

fn greedy(t: &mut Transcriber, par: &dyn Parallel, budget: usize, tokens: &mut Vec<u32>) {
    t.greedy_in(par, budget, tokens).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut time = Time { json: None, scale: 1.0, threads: 1, clip: "beckett".into() };
    let mut it = args.iter();
    let usage = || -> ! {
        eprintln!(
            "usage: time_moonshine [--json PATH] [--scale X] [--threads N] [--clip beckett|beckett30]"
        );
        std::process::exit(2);
    };
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--json" => time.json = Some(value()),
            "--scale" => time.scale = value().parse().unwrap_or_else(|_| usage()),
            "--threads" => time.threads = value().parse().unwrap_or_else(|_| usage()),
            "--clip" => time.clip = value(),
            _ => usage(),
        }
    }
    if time.threads == 0 || !["beckett", "beckett30"].contains(&time.clip.as_str()) {
        usage();
    }
    BackendKind::best().with(time).unwrap();
}

/// The timings, on the backend chosen at run time.
struct Time {
    /// Where to write the JSON results.
    json: Option<String>,
    /// Multiplies every repetition count.
    scale: f64,
    /// Threads of the worker team (1: serial).
    threads: usize,
    /// `beckett` or `beckett30`.
    clip: String,
}

impl WithBackend for Time {
    type Output = ();

    fn run<B: Backend>(self) {
        time::<B>(self);
    }
}

fn time<B: Backend>(Time { json, scale, threads, clip }: Time) {
    let model = open::<B>().and_then(|t| Ok((t, beckett()?)));
    let (mut t, mut samples) = match model {
        Ok(m) => m,
        Err(e) => {
            eprintln!("time_moonshine: {e}");
            std::process::exit(2);
        }
    };
    if clip == "beckett30" {
        samples = samples.repeat(3);
    }
    let team = (threads > 1).then(|| Team::new(threads).expect("worker team"));
    let par: &dyn Parallel = match &team {
        Some(team) => team,
        None => &Serial,
    };
    let budget = token_budget(samples.len());
    let reps = |name: &str| {
        let n = REPS.iter().find(|(w, _)| *w == name).unwrap().1;
        ((n as f64 * scale).round() as usize).max(3)
    };

    // beckett: the greedy sequence is the golden one, so the step position is ONNX
    // Runtime's. Both sides time the step of beckett30 on beckett's first tokens too (its
    // own greedy sequence differs from the sixth token on; the step's cost does not depend
    // on the token values).
    let frames = t.encode_in(par, &samples).unwrap();
    let mut tokens = Vec::with_capacity(budget + 2);
    greedy(&mut t, par, budget, &mut tokens);
    if clip == "beckett" {
        assert_eq!(tokens, BECKETT_TOKENS, "beckett transcript");
    }
    let golden_tokens = tokens.clone();

    let encoder = repeat(reps("encoder"), || {
        let start = Instant::now();
        t.encode_in(par, &samples).unwrap();
        ms(start)
    });
    // The cross-attention keys and values alone (inside `encoder` above), on the encoder
    // output the timed calls left: `encoder - cross_kv` is the encoder network that ONNX
    // Runtime's encoder graph runs.
    let model = std::sync::Arc::clone(t.model());
    let enc = t.encoder_output().to_vec();
    let (mut keys, mut values) = (vec![0.0; enc.len()], vec![0.0; enc.len()]);
    let mut ws = Box::new(CrossKvWorkspace::new());
    let cross_kv = repeat(reps("encoder"), || {
        let o = RunOptions::new().with_parallel(par);
        let start = Instant::now();
        for cross in &model.weights.cross_kv {
            CrossKv::run_with::<B, _, _>(cross, &enc, &mut keys, &mut values, frames, &mut ws, o)
                .unwrap();
        }
        ms(start)
    });
    let step = repeat(reps("step"), || {
        prefill_in(&mut t, par, STEP_POSITION);
        let start = Instant::now();
        t.decode_step_in(par, BECKETT_TOKENS[STEP_POSITION]).unwrap();
        ms(start)
    });
    let first_logits = repeat(reps("first_logits"), || {
        let start = Instant::now();
        t.encode_in(par, &samples).unwrap();
        t.decode_step_in(par, BOS).unwrap();
        ms(start)
    });
    let transcribe = repeat(reps("transcribe"), || {
        let start = Instant::now();
        t.encode_in(par, &samples).unwrap();
        greedy(&mut t, par, budget, &mut tokens);
        let spent = ms(start);
        assert_eq!(tokens.last(), Some(&EOS));
        spent
    });
    assert_eq!(tokens, golden_tokens, "the same tokens every time");

    let rows = [
        ("encoder", Stats::new(encoder)),
        ("cross_kv", Stats::new(cross_kv)),
        ("step", Stats::new(step)),
        ("first_logits", Stats::new(first_logits)),
        ("transcribe", Stats::new(transcribe)),
    ];
    println!(
        "neon Moonshine base-en, {}, {clip} ({} samples, {frames} frames), {threads} thread(s)",
        B::NAME,
        samples.len()
    );
    println!("{:<14} {:>10} {:>10} {:>10} {:>6}", "workload", "median ms", "q1", "q3", "n");
    for (name, s) in &rows {
        println!("{name:<14} {:>10.3} {:>10.3} {:>10.3} {:>6}", s.median, s.q1, s.q3, s.n);
    }
    let results: Vec<String> = rows.iter().map(|(n, s)| format!("\"{n}\": {}", s.json())).collect();
    let ids: Vec<String> = tokens.iter().map(u32::to_string).collect();
    let out = format!(
        "{{\"runtime\": \"neon\", \"backend\": \"{}\", \"clip\": \"{clip}\", \
         \"threads\": {threads}, \"samples\": {}, \"frames\": {frames}, \
         \"step_position\": {STEP_POSITION}, \"step_token\": {}, \"tokens\": [{}], \
         \"results\": {{\"neon\": {{{}}}}}}}\n",
        B::NAME,
        samples.len(),
        BECKETT_TOKENS[STEP_POSITION],
        ids.join(", "),
        results.join(", ")
    );
    if let Some(path) = json {
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
}
