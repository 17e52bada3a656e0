//! The sanoTTS decoder allocates nothing per call, on any thread: whole-utterance decoding,
//! the network alone, and streaming pushes and finishes, serially and on a worker team. A
//! process-wide counting allocator (`tests/support/process_alloc.rs`: this binary holds this
//! one test and no test harness, so nothing else allocates meanwhile; a per-thread counter
//! would not see the team's workers).

#[path = "../../tests/support/process_alloc.rs"]
mod process_alloc;

mod common;

use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::Vocoder;
use neon_runtime::{BackendKind, Serial, Team};
use process_alloc::allocations;

fn decoding_and_streaming_allocate_nothing() {
    let (_, weights) = common::sanotts::voice();
    let backend = BackendKind::best();
    let team = Team::new(3).unwrap();
    let mut d = Decoder::with_backend(weights.clone(), backend).unwrap();
    let t = 50;
    let hidden = hidden_states(t);
    let mut audio = vec![0.0; 128 * t];
    d.decode_in(&team, &hidden, t, &mut audio).unwrap(); // warm-up: the workers have run once
    let (r, n) = allocations(|| d.decode(&hidden, t, &mut audio));
    r.unwrap();
    assert_eq!(n, 0, "decode allocated");
    let (r, n) = allocations(|| d.decode_in(&team, &hidden, t, &mut audio));
    r.unwrap();
    assert_eq!(n, 0, "decode on a team allocated");
    let (r, n) = allocations(|| d.network_in(&Serial, &hidden, t).map(<[f32]>::len));
    assert_eq!(r.unwrap(), 514 * t);
    assert_eq!(n, 0, "network allocated");

    let mut v = Vocoder::with_backend(weights.clone(), backend).unwrap();
    let chunks: Vec<Vec<f32>> = (0..t)
        .step_by(5)
        .map(|f| hidden.chunks_exact(t).flat_map(|row| row[f..f + 5].iter().copied()).collect())
        .collect();
    let mut out = vec![0.0; 128 * 64];
    for (i, chunk) in chunks.iter().enumerate() {
        let par: &dyn neon_runtime::Parallel = if i % 2 == 0 { &Serial } else { &team };
        let (r, n) = allocations(|| v.push_in(par, chunk, 5, &mut out));
        r.unwrap();
        assert_eq!(n, 0, "push {i} allocated");
    }
    let (r, n) = allocations(|| v.finish_in(&team, &mut out));
    r.unwrap();
    assert_eq!(n, 0, "finish allocated");
}

/// `harness = false` (Cargo.toml): see `process_alloc`.
fn main() {
    decoding_and_streaming_allocate_nothing();
    process_alloc::report_passed();
}
