//! Streaming vocoding ([`Vocoder`]) equals whole-utterance decoding ([`Decoder`]) bit for
//! bit: pushes of 1, 3 and 17 frames and a seeded random mix (0 to 60 frames), block sizes
//! 1 and 8, on every backend (under qemu NEON only); the look-ahead is exactly 21 frames (19 of receptive field,
//! 2 of iSTFT overlap) in every push after the first 44 frames, at most 3 more before; an
//! utterance longer than the plan's 2000 frames streams (host
//! only: against the f64 reference, and two chunkings bit for bit); reset and reuse; bad
//! input is refused with the vocoder unchanged.

mod common;

use common::sanotts::{first_difference, voice};
use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::{Vocoder, LOOKAHEAD};
use neon_models::Error;
use neon_runtime::{Backend, Portable};
use rand::{Rng, SeedableRng};

/// `[192, t]` → the columns `from..to` as their own `[192, to - from]`.
fn columns(hidden: &[f32], t: usize, from: usize, to: usize) -> Vec<f32> {
    hidden.chunks_exact(t).flat_map(|row| row[from..to].iter().copied()).collect()
}

/// Streams `hidden` `[192, t]` in pushes of `sizes` (cycled), then finishes; checks every
/// push's count against the look-ahead rule and returns the samples.
fn stream(v: &mut Vocoder, hidden: &[f32], t: usize, sizes: &[usize]) -> Vec<f32> {
    let mut audio = Vec::new();
    let mut at = 0;
    let mut out = vec![0.0; 128 * (2000 + v.block())];
    for &n in sizes.iter().cycle() {
        if at == t {
            break;
        }
        let n = n.min(t - at);
        let k = v.push(&columns(hidden, t, at, at + n), n, &mut out).unwrap();
        audio.extend_from_slice(&out[..k]);
        let before = at;
        at += n;
        // The look-ahead: with block 1 exactly 21 frames in every push after the first 44
        // frames, at most 3 more before; a block b holds back at most b - 1 more.
        let (emitted, ready) = (audio.len() / 128, at.saturating_sub(LOOKAHEAD));
        assert_eq!(audio.len() % 128, 0);
        assert!(emitted <= ready, "after {at} frames: {emitted} frames out");
        assert!(ready - emitted < v.block() + 3, "after {at} frames: {emitted} frames out");
        if v.block() == 1 && before >= 44 {
            assert_eq!(emitted, ready, "after {at} frames");
        }
    }
    let k = v.finish(&mut out).unwrap();
    audio.extend_from_slice(&out[..k]);
    assert_eq!(audio.len(), 128 * t);
    audio
}

fn streaming_equals_whole<B: Backend>() {
    let (_, weights) = voice();
    let mut d = Decoder::on::<B>(weights.clone()).unwrap();
    let mut v = Vocoder::on::<B>(weights.clone()).unwrap();
    let mut r = rand::rngs::SmallRng::seed_from_u64(0x5eed);
    let mixed: Vec<usize> = (0..64).map(|_| r.gen_range(0..=60)).collect();
    // Under qemu fewer lengths (pushing one frame at a time runs ~40 network frames per
    // frame); 50 still reaches the steady look-ahead (after 44 frames).
    let frames: &[usize] =
        if cfg!(target_arch = "aarch64") { &[1, 50] } else { &[1, 5, 22, 30, 97, 250] };
    for &t in frames {
        let hidden = hidden_states(t);
        let mut want = vec![0.0; 128 * t];
        d.decode(&hidden, t, &mut want).unwrap();
        for sizes in [&[1][..], &[3], &[17], &mixed] {
            let got = stream(&mut v, &hidden, t, sizes);
            if let Some(i) = first_difference(&got, &want) {
                panic!(
                    "{} T = {t}, pushes {:?}: sample {i}: {} vs {}",
                    B::NAME,
                    &sizes[..sizes.len().min(4)],
                    got[i],
                    want[i]
                );
            }
        }
    }
    // Block 8: fewer windows, the same bits.
    let mut v = Vocoder::on::<B>(weights.clone()).unwrap().with_block(8).unwrap();
    let t = if cfg!(target_arch = "aarch64") { 50 } else { 97 };
    let hidden = hidden_states(t);
    let mut want = vec![0.0; 128 * t];
    d.decode(&hidden, t, &mut want).unwrap();
    for sizes in [&[1][..], &[3], &mixed] {
        assert_eq!(first_difference(&stream(&mut v, &hidden, t, sizes), &want), None);
    }
}

host_and_neon_tests!(streaming_equals_whole);

/// An utterance of 2300 frames (over the plan's 2000) streams: pushes of 700 and a random
/// mix give the same bits, within 1e-4 of the f64 reference (measured ~1e-6). Host only:
/// the reference of 2300 frames would take minutes under qemu.
#[cfg(not(target_arch = "aarch64"))]
#[test]
fn longer_than_the_plan() {
    use common::sanotts::{reference_audio, relative_l2};
    let (tensors, weights) = voice();
    let mut v = Vocoder::on::<neon_runtime::FastBackend>(weights.clone()).unwrap();
    let t = 2300;
    let hidden = hidden_states(t);
    let a = stream(&mut v, &hidden, t, &[700]);
    let mut r = rand::rngs::SmallRng::seed_from_u64(7);
    let mixed: Vec<usize> = (0..50).map(|_| r.gen_range(1..=300)).collect();
    let b = stream(&mut v, &hidden, t, &mixed);
    assert_eq!(first_difference(&a, &b), None);
    let err = relative_l2(&a, &reference_audio(tensors, &hidden, t));
    println!("T = {t} streamed: relative L2 {err:.2e}");
    assert!(err <= 1e-4, "{err}");
}

/// Reset abandons an utterance; bad input changes nothing.
#[test]
fn reset_and_errors() {
    let (_, weights) = voice();
    let mut v = Vocoder::on::<Portable>(weights.clone()).unwrap();
    let t = 40;
    let hidden = hidden_states(t);
    let want = stream(&mut v, &hidden, t, &[7]);
    let mut out = vec![0.0; 128 * 64];
    // Half an utterance of other frames, then reset.
    let other = hidden_states(30);
    v.push(&other, 30, &mut out).unwrap();
    v.reset();
    // Errors leave the vocoder as it was.
    let chunk = columns(&hidden, t, 0, 10);
    let msg = |e: Error| e.to_string();
    assert!(msg(v.push(&chunk[1..], 10, &mut out).unwrap_err()).contains("hidden values"));
    let mut nan = chunk.clone();
    nan[5] = f32::NAN;
    assert!(msg(v.push(&nan, 10, &mut out).unwrap_err()).contains("NaN"));
    assert!(msg(v.push(&chunk, 10, &mut out[..128 * 9]).unwrap_err()).contains("output samples"));
    assert!(msg(v.finish(&mut out[..10]).unwrap_err()).contains("output samples"));
    assert_eq!(v.frames(), 0);
    assert!(Vocoder::on::<Portable>(weights.clone()).unwrap().with_block(0).is_err());
    assert!(Vocoder::on::<Portable>(weights.clone()).unwrap().with_block(1960).is_err());
    assert_eq!(first_difference(&stream(&mut v, &hidden, t, &[7]), &want), None);
    // An empty utterance gives no samples.
    assert_eq!(v.finish(&mut out).unwrap(), 0);
}
