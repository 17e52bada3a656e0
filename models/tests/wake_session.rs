//! `WakeSession`, the one wake-word stream of the program, the server and the C API: its
//! detections are the detector's scores put through the triggers by hand, for both rules,
//! on a committed recording of "hey jarvis"; reset starts the stream and the triggers over.
//!
//! Host only: the session and the triggers are the same portable code on every architecture,
//! and both sides of each comparison run the same backend; the NEON detector's scores are
//! checked against the goldens under qemu by `oww_golden_stream.rs` and `threads.rs`. Under
//! qemu-aarch64 this test alone cost 59 s of CI's budget (nine passes over the clip).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use neon_models::openwakeword::builtin;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::session::{Detection, WakeSession};
use neon_models::openwakeword::stream::CHUNK;
use neon_models::openwakeword::trigger::{Rule, Trigger};
use neon_models::session::SessionOptions;

fn clip() -> Vec<i16> {
    let mut r = hound::WavReader::open(common::oww_path("clips/hey_jarvis.wav")).unwrap();
    let mut s: Vec<i16> = r.samples::<i16>().map(Result::unwrap).collect();
    // Twice, with a second of silence between: two utterances.
    let once = s.clone();
    s.extend(std::iter::repeat_n(0, 16_000));
    s.extend(once);
    s
}

fn detector() -> WakeDetector {
    let words = ["hey_jarvis", "alexa"].map(|n| builtin::wake_word(n).unwrap()).to_vec();
    WakeDetector::with_builtin_embedding(words, &SessionOptions::new()).unwrap()
}

/// The detections of `audio` pushed in 1280-sample chunks through a bare detector and one
/// trigger per model.
fn by_hand(audio: &[i16], trigger: Trigger) -> Vec<Detection> {
    let mut d = detector();
    let mut triggers = [trigger; 2];
    let mut out = Vec::new();
    let mut end = 0;
    for chunk in audio.chunks(CHUNK) {
        end += chunk.len() as u64;
        let scores = d.push(chunk).unwrap();
        for (model, (t, &s)) in triggers.iter_mut().zip(scores).enumerate() {
            if let Some(hit) = t.update(s, end) {
                out.push(Detection { model, end_sample: hit.end_sample, score: hit.score });
            }
        }
    }
    out
}

fn by_session(wake: &mut WakeSession, audio: &[i16]) -> Vec<Detection> {
    let mut out = Vec::new();
    for chunk in audio.chunks(CHUNK) {
        wake.push(chunk).unwrap();
        assert!(wake.unusable().is_empty());
        out.extend_from_slice(wake.detections());
    }
    out
}

#[test]
fn detections_are_the_triggers_over_the_scores_and_reset_starts_over() {
    let audio = clip();
    for trigger in [
        Trigger::new(0.5, 16_000),
        Trigger::with_rule(0.5, 32_000, Rule::Counted { level: 2 }),
        Trigger::with_rule(0.5, 0, Rule::Counted { level: 1 }),
    ] {
        let want = by_hand(&audio, trigger);
        assert!(want.iter().any(|d| d.model == 0), "{trigger:?}: no hey_jarvis: {want:?}");
        let mut wake = WakeSession::new(detector(), trigger);
        assert_eq!(by_session(&mut wake, &audio), want, "{trigger:?}");
        assert_eq!(wake.samples(), audio.len() as u64);
        wake.reset();
        assert_eq!((wake.samples(), wake.detections().len()), (0, 0));
        assert_eq!(by_session(&mut wake, &audio), want, "{trigger:?} after reset");
    }
}
