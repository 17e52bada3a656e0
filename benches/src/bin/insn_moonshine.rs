//! Instruction-count workloads for Moonshine base-en end to end (the converted model of
//! `models/moonshine/`, written by `tools/moonshine/fetch.sh`): the encoder on a short clip
//! and one cached decoder step with beckett.wav's 413-frame memory.
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region is counted. Loading and preparing the weights (62 MB), reading
//! beckett.wav and everything a workload does before its region (encoding, the tokens before
//! the measured step) are not counted; the checks after it are not either.
//!
//! Usage: `insn_moonshine WORKLOAD [portable]` with WORKLOAD one of
//! - `encoder SECONDS`: `Transcriber::encode` of the first `SECONDS` (a decimal number; 10
//!   or more: the whole 9.96 s clip) of beckett.wav: the stem, 8 layers, the final norm and the
//!   cross-attention keys and values of the 8 decoder layers (`encode` computes those once
//!   per utterance). 2 s = 32,000 samples = 82 frames. `encoder SECONDS THREADS` runs it on
//!   a worker team of `THREADS` threads that parks without spinning (a deterministic count;
//!   count it with `count-insns.sh --percpu`, the region then includes every thread);
//! - `encoder-dot SECONDS [THREADS]`: the same encode with the encoder's int8 GEMMs on the
//!   int8-activation path (`Transcriber::set_encoder_path(QuantPath::Dot)`, session option
//!   `moonshine_asr.encoder_int8=dot`: `sdot` on cores with the dot-product extension);
//! - `encoder-mmla SECONDS [THREADS]`: the same with `QuantPath::Mmla`
//!   (`moonshine_asr.encoder_int8=mmla`: the GEMMs on `smmla` on cores with the int8
//!   matrix-multiply extension, qemu's `max`; the same bits as `encoder-dot`);
//! - `step [POSITION]`: encode the whole clip (413 frames, not counted), feed beckett's
//!   greedy tokens `0..POSITION` (default 7, not counted), then count one
//!   `Transcriber::decode_step` of token `POSITION` (self-attention over `POSITION + 1` keys,
//!   cross-attention over 413 frames, the 32768-wide LM head); its argmax is checked
//!   against the golden next token;
//! - `step-dot [POSITION]`: the same step on the decoder's int8-activation path
//!   (`moonshine_asr.int8=dot`, [`QuantPath::Dot`]: `sdot` on cores with the dot-product
//!   extension such as neoverse-n1, the portable evaluation of the same arithmetic elsewhere,
//!   e.g. cortex-a53); the tokens before it are fed on that path too, and the same next token
//!   is checked.
//!
//! FLOPs (in `insn-count.sh`, from `neon_benches::moonshine::encoder_macs` and `step_macs`):
//! 2 x the multiply-adds of convs, linears and attention (`q · k` and `p · v`). On aarch64
//! the backend is `Neon` (or `Portable` with the last argument `portable`).

use neon_benches::moonshine::{beckett, encoder_macs, open, prefill, step_macs};
use neon_benches::moonshine::{BECKETT_FRAMES, BECKETT_TOKENS};
use neon_benches::{region_start, region_stop};
use neon_models::moonshine::transcriber::argmax;
use neon_models::moonshine::SAMPLE_RATE;
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::{Backend, Portable, Team, TeamOptions};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

const USAGE: &str =
    "usage: insn_moonshine encoder|encoder-dot|encoder-mmla SECONDS [THREADS] | step[-dot] [POSITION]  [portable]";

/// A workload and its parameters: samples, threads and the int8 GEMM path for the encoder,
/// the position and the decoder's int8 path for the step.
enum Workload {
    Encoder(usize, usize, QuantPath),
    Step(usize, QuantPath),
}

fn parse(args: &[String]) -> Option<Workload> {
    match args.first()?.as_str() {
        name @ ("encoder" | "encoder-dot" | "encoder-mmla") => {
            let seconds: f64 = args.get(1)?.parse().ok()?;
            let threads = args.get(2).map_or(Some(1), |t| t.parse().ok().filter(|&n| n >= 1))?;
            let samples = (seconds * SAMPLE_RATE as f64).round() as usize;
            let path = match name {
                "encoder" => QuantPath::Widening,
                "encoder-dot" => QuantPath::Dot,
                _ => QuantPath::Mmla,
            };
            Some(Workload::Encoder(samples, threads, path))
        }
        step @ ("step" | "step-dot") => {
            let position = args.get(1).map_or(Some(7), |p| p.parse().ok())?;
            let path = if step == "step" { QuantPath::Widening } else { QuantPath::Dot };
            (position + 1 < BECKETT_TOKENS.len()).then_some(Workload::Step(position, path))
        }
        _ => None,
    }
}

/// Runs the workload on backend `B`; returns a checksum of the outputs.
fn run<B: Backend>(workload: &Workload) -> Result<f32, String> {
    let mut t = open::<B>()?;
    let audio = beckett()?;
    Ok(match *workload {
        Workload::Encoder(samples, threads, path) => {
            let samples = &audio[..samples.min(audio.len())];
            t.set_encoder_path(path);
            // Parked, not spinning, between dispatches: a deterministic count.
            let team = Team::with_options(threads, TeamOptions { spin: false })
                .map_err(|e| e.to_string())?;
            region_start(1);
            let frames = t.encode_in(&team, samples).map_err(|e| e.to_string())?;
            region_stop(1);
            let (stem, layers, cross) = encoder_macs(samples.len());
            eprintln!("encoder: {} samples, {frames} frames, {} FLOPs", samples.len(), {
                2 * (stem + layers + cross)
            });
            t.encoder_output().iter().sum()
        }
        Workload::Step(position, path) => {
            t.set_decoder_path(path);
            let frames = t.encode(&audio).map_err(|e| e.to_string())?;
            assert_eq!(frames, BECKETT_FRAMES);
            prefill(&mut t, position);
            region_start(1);
            let logits = t.decode_step(BECKETT_TOKENS[position]).map_err(|e| e.to_string())?;
            region_stop(1);
            let next = argmax(logits);
            assert_eq!(next, BECKETT_TOKENS[position + 1], "step {position}: next token");
            eprintln!(
                "step at position {position} ({path:?}): {} FLOPs",
                2 * step_macs(position, frames)
            );
            logits.iter().sum()
        }
    })
}

fn main() {
    neon_benches::parsed_main("insn_moonshine", USAGE, parse, run::<Portable>, run::<Fast>);
}
