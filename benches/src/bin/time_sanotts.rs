//! Host timing of the sanoTTS decoder on one thread, in the format of
//! `tools/sanotts/bench_peer.py` (ONNX Runtime), so `benches/sanotts-peer.sh` can run both
//! in one session, alternating, without parsing criterion's output.
//!
//! Workloads, with the built-in synthetic voice (seed 0x5A70) on the test hidden states of
//! `--frames` frames (default 125 = 1 s of audio), serial (`Serial`: one thread):
//! - `decode`: `Decoder::decode` (the network, then the iSTFT): what the peer times;
//! - `network`: `Decoder::network_in` alone (the iSTFT's share is the difference).
//!
//! Each: 5 warm-up calls, then `--reps` timed calls (default 50); prints the median (min,
//! max) wall time per second of audio, the real-time factor and the median process CPU time
//! per second of audio (`CLOCK_PROCESS_CPUTIME_ID`, as Python's `time.process_time`: on a
//! shared machine the compute time, wall time also counting the waits for a core). The
//! backend is `neon vocode`'s, `BackendKind::best()`, named in the output; weights prepared
//! beforehand, no allocation in the timed calls.
//!
//! Usage: `time_sanotts [--frames T] [--reps N] [--workloads decode network]`.

use std::time::Instant;

use neon_benches::sanotts::{weights, SECOND};
use neon_benches::timing::{cpu_seconds, load_average};
use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_runtime::{Backend, BackendKind, Serial, WithBackend};

const WARMUP: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

struct Args {
    frames: usize,
    reps: usize,
    workloads: Vec<String>,
}

impl WithBackend for Args {
    type Output = ();

    fn run<B: Backend>(self) {
        time::<B>(self);
    }
}

fn time<B: Backend>(a: Args) {
    let t = a.frames;
    let seconds = t as f64 / SECOND as f64;
    let hidden = hidden_states(t);
    let mut d = Decoder::on::<B>(weights()).unwrap();
    let mut audio = vec![0.0; 128 * t];
    for w in &a.workloads {
        let mut call = || match w.as_str() {
            "decode" => d.decode(&hidden, t, &mut audio).unwrap(),
            _ => drop(d.network_in(&Serial, &hidden, t).unwrap()),
        };
        for _ in 0..WARMUP {
            call();
        }
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        for _ in 0..a.reps {
            let (c0, t0) = (cpu_seconds(), Instant::now());
            call();
            wall.push(t0.elapsed().as_secs_f64());
            cpu.push(cpu_seconds() - c0);
        }
        let per = |s: f64| s / seconds * 1e3;
        let lo = per(wall.iter().copied().fold(f64::INFINITY, f64::min));
        let hi = per(wall.iter().copied().fold(0.0, f64::max));
        let med = per(median(wall));
        println!(
            "neon {} ({w}, 1 thread): {med:.2} ms per second of audio (min {lo:.2}, max {hi:.2}; \
             real-time factor {:.4}; process CPU {:.2} ms)",
            B::NAME,
            med / 1e3,
            per(median(cpu)),
        );
    }
}

fn main() {
    let mut a = Args { frames: SECOND, reps: 50, workloads: vec!["decode".into()] };
    let usage = || -> ! {
        eprintln!("usage: time_sanotts [--frames T] [--reps N] [--workloads decode network]");
        std::process::exit(2);
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value =
            |i: usize| args.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or_else(|| usage());
        match args[i].as_str() {
            "--frames" => a.frames = value(i),
            "--reps" => a.reps = value(i),
            "--workloads" => {
                a.workloads =
                    args[i + 1..].iter().take_while(|v| !v.starts_with("--")).cloned().collect();
                i += a.workloads.len().saturating_sub(1);
            }
            _ => usage(),
        }
        i += 2;
    }
    let known = |w: &String| w == "decode" || w == "network";
    if !(1..=2000).contains(&a.frames)
        || a.reps == 0
        || a.workloads.is_empty()
        || !a.workloads.iter().all(known)
    {
        usage();
    }
    println!(
        "# sanoTTS decoder, neon: T = {} frames ({} s of audio), median of {} runs after {WARMUP} \
         warm-up runs, load average {} at start",
        a.frames,
        seconds_of(a.frames),
        a.reps,
        load_average(),
    );
    BackendKind::best().with(a).unwrap();
}

fn seconds_of(frames: usize) -> f64 {
    frames as f64 / SECOND as f64
}
