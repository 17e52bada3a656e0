//! openWakeWord handles: detections and scores equal to the library's, too small buffers, bad
//! arguments, use after free, shared models.

use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};

use neon_capi::*;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::session::SessionOptions;

use super::{jarvis, last_error, repo, text};

/// The chunk openWakeWord scores (80 ms).
const CHUNK: usize = 1280;

/// A wake detector over `models` with no session options.
pub(crate) fn wake(models: &[&str], threshold: f32) -> (NeonStatus, *mut NeonWake) {
    let names: Vec<CString> = models.iter().map(|m| CString::new(*m).unwrap()).collect();
    let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut out = null_mut();
    // SAFETY: `ptrs` holds `models.len()` NUL-terminated strings; `out` is writable.
    let status =
        unsafe { neon_wake_new(ptrs.as_ptr(), ptrs.len(), threshold, null(), 0, &mut out) };
    (status, out)
}

pub(crate) fn scores(w: *const NeonWake) -> Vec<f32> {
    let mut n = 0;
    // SAFETY: a NULL buffer with capacity 0 asks for the count.
    assert_eq!(unsafe { neon_wake_scores(w, null_mut(), 0, &mut n) }, NeonStatus::BufferTooSmall);
    let mut out = vec![0.0; n];
    // SAFETY: `out` has room for `n` scores.
    assert_eq!(unsafe { neon_wake_scores(w, out.as_mut_ptr(), n, &mut n) }, NeonStatus::Ok);
    out
}

pub(crate) fn detections(w: *const NeonWake) -> Vec<NeonDetection> {
    let mut out = vec![NeonDetection { model: 0, time_s: 0.0, score: 0.0 }; 8];
    let mut n = 0;
    // SAFETY: `out` has room for 8 detections.
    let status = unsafe { neon_wake_detections(w, out.as_mut_ptr(), out.len(), &mut n) };
    assert_eq!(status, NeonStatus::Ok);
    out.truncate(n);
    out
}

#[test]
fn every_builtin_model_detects_hey_jarvis_with_the_library_scores() {
    let (status, w) = wake(&[], 0.5);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let mut count = 0;
    // SAFETY: `w` is live, `count` writable.
    assert_eq!(unsafe { neon_wake_model_count(w, &mut count) }, NeonStatus::Ok);
    assert_eq!(count, builtin::HEADS.len());
    // SAFETY: `w` is live.
    let names: Vec<String> =
        (0..count).map(|i| text(unsafe { neon_wake_model_name(w, i) })).collect();
    assert_eq!(names, builtin::HEADS.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>());
    // SAFETY: `w` is live; index out of range gives NULL.
    assert!(unsafe { neon_wake_model_name(w, count) }.is_null());
    assert!(last_error().contains("out of range"), "{}", last_error());

    let words = builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let mut reference =
        WakeDetector::with_builtin_embedding(words, &SessionOptions::default()).unwrap();
    let samples = jarvis();
    let jarvis = names.iter().position(|n| n == "hey_jarvis_v0.1").unwrap();
    let mut found = Vec::new();
    for (i, chunk) in samples.chunks_exact(CHUNK).enumerate() {
        // SAFETY: `w` is live; `chunk` holds `CHUNK` samples.
        let status = unsafe { neon_wake_push(w, chunk.as_ptr(), chunk.len()) };
        assert_eq!(status, NeonStatus::Ok);
        let want = reference.push(chunk).unwrap();
        let got = scores(w);
        assert_eq!(
            got.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
            "chunk {i}"
        );
        for d in detections(w) {
            assert_eq!(d.score, got[d.model]);
            assert_eq!(d.time_s, ((i + 1) * CHUNK) as f64 / 16_000.0);
            found.push(d);
        }
    }
    assert!(found.iter().any(|d| d.model == jarvis), "no hey_jarvis detection: {found:?}");
    assert!(found.iter().all(|d| d.model == jarvis), "other models fired: {found:?}");

    // After a reset the stream starts again: the same detections at the same times.
    // SAFETY: `w` is live.
    assert_eq!(unsafe { neon_wake_reset(w) }, NeonStatus::Ok);
    assert!(scores(w).iter().all(|&s| s == 0.0));
    let mut again = Vec::new();
    for chunk in samples.chunks_exact(CHUNK) {
        // SAFETY: as above.
        assert_eq!(unsafe { neon_wake_push(w, chunk.as_ptr(), chunk.len()) }, NeonStatus::Ok);
        again.extend(detections(w));
    }
    assert_eq!(again, found);
    // SAFETY: `w` is live; freed once.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);
}

#[test]
fn too_small_buffers_report_the_count() {
    let (status, w) = wake(&["hey_jarvis", "alexa"], 0.5);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let mut one = [0.0f32; 1];
    let mut n = 0;
    // SAFETY: `one` has room for 1 score.
    let status = unsafe { neon_wake_scores(w, one.as_mut_ptr(), 1, &mut n) };
    assert_eq!((status, n), (NeonStatus::BufferTooSmall, 2));
    // SAFETY: `w` is live.
    let message = text(unsafe { neon_wake_error(w) });
    assert!(message.contains("2 are needed"), "{message}");
    assert_eq!(message, last_error());
    // SAFETY: NULL with a non-zero capacity is an error, not a write.
    let status = unsafe { neon_wake_scores(w, null_mut(), 2, &mut n) };
    assert_eq!(status, NeonStatus::NullPointer);
    // SAFETY: `w` is live.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);
}

#[test]
fn bad_arguments_are_errors() {
    let (status, w) = wake(&["hey_nobody"], 0.5);
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(w.is_null());
    assert!(last_error().contains("hey_nobody"), "{}", last_error());

    let (status, _) = wake(&["hey_jarvis", "hey_jarvis_v0.1"], 0.5);
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(last_error().contains("already loaded"), "{}", last_error());

    for threshold in [0.0, -1.0, 1.5, f32::NAN] {
        assert_eq!(wake(&["hey_jarvis"], threshold).0, NeonStatus::InvalidArgument);
    }

    let missing = repo().join("no/such/head.safetensors");
    assert_eq!(wake(&[missing.to_str().unwrap()], 0.5).0, NeonStatus::InvalidArgument);
    let not_weights = repo().join("Cargo.toml");
    assert_eq!(wake(&[not_weights.to_str().unwrap()], 0.5).0, NeonStatus::Model);

    let mut out = null_mut();
    for option in
        ["openwakeword.no_such_key=1", "no_equals_sign", "openwakeword.embedding_mode=half"]
    {
        let option = CString::new(option).unwrap();
        let options = [option.as_ptr()];
        // SAFETY: one NUL-terminated option; no models (every built-in one).
        let status = unsafe { neon_wake_new(null(), 0, 0.5, options.as_ptr(), 1, &mut out) };
        assert_eq!(status, NeonStatus::InvalidArgument, "{option:?}");
        assert!(out.is_null());
    }
    let good = CString::new("openwakeword.embedding_mode=full").unwrap();
    let options = [good.as_ptr()];
    // SAFETY: as above.
    let status = unsafe { neon_wake_new(null(), 0, 0.5, options.as_ptr(), 1, &mut out) };
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    // SAFETY: `out` is live.
    assert_eq!(unsafe { neon_wake_free(out) }, NeonStatus::Ok);

    // NULL pointers.
    // SAFETY: every pointer is either valid or NULL, which the library checks.
    unsafe {
        assert_eq!(neon_wake_new(null(), 0, 0.5, null(), 0, null_mut()), NeonStatus::NullPointer);
        assert_eq!(neon_wake_new(null(), 1, 0.5, null(), 0, &mut out), NeonStatus::NullPointer);
        let names = [null()];
        assert_eq!(
            neon_wake_new(names.as_ptr(), 1, 0.5, null(), 0, &mut out),
            NeonStatus::NullPointer
        );
        assert_eq!(neon_wake_push(null_mut(), [0i16].as_ptr(), 1), NeonStatus::NullPointer);
        let mut n = 0;
        assert_eq!(neon_wake_model_count(null(), &mut n), NeonStatus::NullPointer);
        assert!(neon_wake_model_name(null(), 0).is_null());
        assert!(neon_wake_error(null()).is_null());
        assert_eq!(neon_wake_reset(null_mut()), NeonStatus::NullPointer);
        assert_eq!(
            neon_transcriber_open(null(), null(), 0, &mut null_mut()),
            NeonStatus::NullPointer
        );
    }

    let (status, w) = wake(&["hey_jarvis"], 0.5);
    assert_eq!(status, NeonStatus::Ok);
    let buffer = [0i16; 4];
    // SAFETY: the pointers are valid or NULL / misaligned, which the library checks.
    unsafe {
        assert_eq!(neon_wake_push(w, null(), 0), NeonStatus::NullPointer);
        // An int16 pointer at an odd address.
        let odd = buffer.as_ptr().cast::<u8>().add(1).cast::<i16>();
        assert_eq!(neon_wake_push(w, odd, 2), NeonStatus::MisalignedPointer);
        assert!(text(neon_wake_error(w)).contains("not aligned"));
        assert_eq!(neon_wake_push(w, buffer.as_ptr(), usize::MAX), NeonStatus::InvalidArgument);
        assert_eq!(neon_wake_model_count(w, null_mut()), NeonStatus::NullPointer);
        let mut counts = [0usize; 2];
        let odd = counts.as_mut_ptr().cast::<u8>().add(1).cast::<usize>();
        assert_eq!(neon_wake_model_count(w, odd), NeonStatus::MisalignedPointer);
        let misaligned_handle = w.cast::<u8>().add(1).cast::<NeonWake>();
        assert_eq!(neon_wake_reset(misaligned_handle), NeonStatus::MisalignedPointer);
        assert_eq!(neon_wake_push(w, buffer.as_ptr(), buffer.len()), NeonStatus::Ok);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
    }
}

#[test]
fn use_after_free_and_wrong_handles_are_detected() {
    let (status, w) = wake(&["hey_jarvis"], 0.5);
    assert_eq!(status, NeonStatus::Ok);
    let samples = [0i16; CHUNK];
    let mut n = 0;
    // SAFETY: after the free, every call must check the registry before touching `w`.
    unsafe {
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
        assert_eq!(neon_wake_push(w, samples.as_ptr(), CHUNK), NeonStatus::UnknownHandle);
        assert!(last_error().contains("not live"), "{}", last_error());
        assert_eq!(neon_wake_scores(w, null_mut(), 0, &mut n), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_model_count(w, &mut n), NeonStatus::UnknownHandle);
        assert!(neon_wake_model_name(w, 0).is_null());
        assert!(neon_wake_error(w).is_null());
        assert_eq!(neon_wake_reset(w), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(w), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(null_mut()), NeonStatus::Ok);
        assert_eq!(neon_transcriber_close(null_mut()), NeonStatus::Ok);

        // A pointer that was never a handle, and a handle of the other kind.
        let mut fake = [0u64; 8];
        let fake = fake.as_mut_ptr().cast::<NeonWake>();
        assert_eq!(neon_wake_push(fake, samples.as_ptr(), CHUNK), NeonStatus::UnknownHandle);
        let (_, w) = wake(&["alexa"], 0.5);
        let mut len = 0;
        let status =
            neon_transcribe_i16(w.cast(), samples.as_ptr(), CHUNK, null_mut(), 0, &mut len);
        assert_eq!(status, NeonStatus::UnknownHandle);
        assert_eq!(neon_transcriber_close(w.cast()), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
    }
    let name = text(neon_status_string(NeonStatus::UnknownHandle as std::ffi::c_int));
    assert_eq!(name, "unknown handle (freed or never created)");
    assert_eq!(text(neon_status_string(42)), "unknown status");
}

#[test]
fn shared_wake_models_misuse_is_reported() {
    let mut models = null_mut();
    let mut w = null_mut();
    // SAFETY: every pointer is NULL, a live handle, or a freed one the registry reports.
    unsafe {
        assert_eq!(neon_wake_models_open(null(), 0, null_mut()), NeonStatus::NullPointer);
        let bad = [c"no_such_model".as_ptr()];
        assert_eq!(
            neon_wake_models_open(bad.as_ptr(), 1, &mut models),
            NeonStatus::InvalidArgument
        );
        assert!(models.is_null());
        assert_eq!(neon_wake_new_shared(null(), 0.5, null(), 0, &mut w), NeonStatus::NullPointer);
        let names = [c"hey_jarvis".as_ptr()];
        assert_eq!(neon_wake_models_open(names.as_ptr(), 1, &mut models), NeonStatus::Ok);
        assert_eq!(
            neon_wake_new_shared(models, 0.0, null(), 0, &mut w),
            NeonStatus::InvalidArgument
        );
        assert!(w.is_null());
        assert_eq!(neon_wake_new_shared(models, 0.5, null(), 0, &mut w), NeonStatus::Ok);
        // A wake handle is not a models handle, and the other way round.
        let mut other = null_mut();
        assert_eq!(
            neon_wake_new_shared(w.cast(), 0.5, null(), 0, &mut other),
            NeonStatus::UnknownHandle
        );
        assert_eq!(neon_wake_free(models.cast()), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_models_free(w.cast()), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_models_free(models), NeonStatus::Ok);
        assert_eq!(neon_wake_models_free(null_mut()), NeonStatus::Ok);
        let mut n = 0;
        assert_eq!(neon_wake_model_count(w, &mut n), NeonStatus::Ok);
        assert_eq!(n, 1);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
    }
}
