//! The sanoTTS decoder gives the same bits on any worker team: whole-utterance decoding and
//! streaming on teams of 1, 2, 3, 4 and 7 threads against the serial run (every backend on
//! the host; NEON under qemu, on shorter utterances).

mod common;

use common::sanotts::{first_difference, voice};
use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::Vocoder;
use neon_runtime::{Backend, Parallel, Serial, Team};

/// Team sizes checked against the serial run.
const THREADS: [usize; 5] = [1, 2, 3, 4, 7];

/// Frames decoded whole; the streamed utterance (pushes of 13 frames) is shorter under qemu.
#[cfg(not(target_arch = "aarch64"))]
const FRAMES: (usize, usize) = (333, 120);
#[cfg(target_arch = "aarch64")]
const FRAMES: (usize, usize) = (64, 45);

fn streamed(v: &mut Vocoder, par: &dyn Parallel, hidden: &[f32], t: usize) -> Vec<f32> {
    let mut audio = Vec::new();
    let mut out = vec![0.0; 128 * 64];
    for from in (0..t).step_by(13) {
        let to = (from + 13).min(t);
        let chunk: Vec<f32> =
            hidden.chunks_exact(t).flat_map(|row| row[from..to].iter().copied()).collect();
        let k = v.push_in(par, &chunk, to - from, &mut out).unwrap();
        audio.extend_from_slice(&out[..k]);
    }
    let k = v.finish_in(par, &mut out).unwrap();
    audio.extend_from_slice(&out[..k]);
    audio
}

fn same_bits_on_any_team<B: Backend>() {
    let (_, weights) = voice();
    let mut d = Decoder::on::<B>(weights.clone()).unwrap();
    let mut v = Vocoder::on::<B>(weights.clone()).unwrap();
    let (t, ts) = FRAMES;
    let hidden = hidden_states(t);
    let mut want = vec![0.0; 128 * t];
    d.decode_in(&Serial, &hidden, t, &mut want).unwrap();
    let hs = hidden_states(ts);
    let want_stream = streamed(&mut v, &Serial, &hs, ts);
    for n in THREADS {
        let team = Team::new(n).unwrap();
        let mut got = vec![0.0; 128 * t];
        d.decode_in(&team, &hidden, t, &mut got).unwrap();
        assert_eq!(first_difference(&got, &want), None, "{} decode, {n} threads", B::NAME);
        let got = streamed(&mut v, &team, &hs, ts);
        assert_eq!(first_difference(&got, &want_stream), None, "{} stream, {n} threads", B::NAME);
    }
}

host_and_neon_tests!(same_bits_on_any_team);
