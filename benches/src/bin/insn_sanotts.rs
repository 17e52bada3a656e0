//! Instruction-count workloads for the sanoTTS decoder with the built-in synthetic voice
//! (seed 0x5A70) on the test hidden states.
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region is counted; generating and preparing the voice and the hidden
//! states are not.
//!
//! Usage: `insn_sanotts WORKLOAD FRAMES [CHUNK] [portable]` with WORKLOAD one of
//! - `decode FRAMES`: `Decoder::decode` of FRAMES frames (125 = 1 s of audio): the network
//!   and the iSTFT;
//! - `network FRAMES`: the network alone (`Decoder::network_in`), for FLOPs per instruction
//!   of the plan;
//! - `stream FRAMES CHUNK`: a `Vocoder` (block 1) fed pushes of CHUNK frames, then
//!   `finish` (each window recomputes its context frames).
//!
//! FLOPs (in `insn-count.sh`): 2 x `neon_benches::sanotts::MACS_PER_FRAME` (647,936) per
//! frame of the network, the context frames streaming recomputes not counted (so FLOPs per
//! instruction of `stream` is per useful FLOP). On aarch64 the backend is `Neon` (or
//! `Portable` with the last argument `portable`).

use neon_benches::sanotts::{chunks, weights, MACS_PER_FRAME};
use neon_benches::{region_start, region_stop};
use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::Vocoder;
use neon_runtime::{Backend, Portable, Serial};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

const USAGE: &str =
    "usage: insn_sanotts decode FRAMES | network FRAMES | stream FRAMES CHUNK  [portable]";

enum Workload {
    Decode(usize),
    Network(usize),
    Stream(usize, usize),
}

fn parse(args: &[String]) -> Option<Workload> {
    let frames: usize = args.get(1)?.parse().ok().filter(|&t| (1..=2000).contains(&t))?;
    match args.first()?.as_str() {
        "decode" => Some(Workload::Decode(frames)),
        "network" => Some(Workload::Network(frames)),
        "stream" => {
            let chunk = args.get(2)?.parse().ok().filter(|&c| c >= 1)?;
            Some(Workload::Stream(frames, chunk))
        }
        _ => None,
    }
}

/// Runs the workload on backend `B`; returns a checksum of the outputs.
fn run<B: Backend>(workload: &Workload) -> Result<f32, String> {
    let weights = weights();
    let e = |e: neon_models::Error| e.to_string();
    Ok(match *workload {
        Workload::Decode(t) | Workload::Network(t) => {
            let hidden = hidden_states(t);
            let mut d = Decoder::on::<B>(weights).map_err(e)?;
            let mut audio = vec![0.0; 128 * t];
            if let Workload::Network(_) = workload {
                region_start(1);
                let y = d.network_in(&Serial, &hidden, t).map_err(e)?;
                region_stop(1);
                eprintln!("network: {t} frames, {} FLOPs", 2 * MACS_PER_FRAME * t);
                y.iter().sum()
            } else {
                region_start(1);
                d.decode(&hidden, t, &mut audio).map_err(e)?;
                region_stop(1);
                eprintln!("decode: {t} frames, {} network FLOPs", 2 * MACS_PER_FRAME * t);
                audio.iter().sum()
            }
        }
        Workload::Stream(t, chunk) => {
            let hidden = hidden_states(t);
            let pieces = chunks(&hidden, t, chunk);
            let mut v = Vocoder::on::<B>(weights).map_err(e)?;
            let mut out = vec![0.0; v.max_push_samples(chunk).max(v.max_finish_samples())];
            let mut sum = 0.0f32;
            let mut samples = 0;
            region_start(1);
            for (piece, frames) in &pieces {
                let n = v.push(piece, *frames, &mut out).map_err(e)?;
                sum += out[..n].iter().sum::<f32>();
                samples += n;
            }
            let n = v.finish(&mut out).map_err(e)?;
            region_stop(1);
            sum += out[..n].iter().sum::<f32>();
            samples += n;
            assert_eq!(samples, 128 * t);
            eprintln!("stream: {t} frames in pushes of {chunk}");
            sum
        }
    })
}

fn main() {
    neon_benches::parsed_main("insn_sanotts", USAGE, parse, run::<Portable>, run::<Fast>);
}
