//! The C API through its extern functions: results equal to the Rust library's (wake scores
//! and VAD probabilities bit for bit, VAD segments as `speech_segments` gives them), and
//! every misuse an error status rather than a crash.

use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};

use neon_audio::i16_to_f32;
use neon_capi::*;
use neon_models::exec_plan::Family;
use neon_models::moonshine::transcriber::Transcriber;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::session::SessionOptions;
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{speech_segments, SegmentConfig, SpeechSegment, SpeechSegmenter};

/// The chunk openWakeWord scores (80 ms).
const CHUNK: usize = 1280;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read_wav(path: &Path) -> Vec<i16> {
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!((r.spec().sample_rate, r.spec().channels), (16_000, 1));
    r.samples::<i16>().map(Result::unwrap).collect()
}

fn jarvis() -> Vec<i16> {
    read_wav(&repo().join("models/openwakeword/clips/hey_jarvis.wav"))
}

fn text(p: *const c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: the library returns NUL-terminated strings valid until the next call.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
}

fn last_error() -> String {
    text(neon_last_error())
}

/// A wake detector over `models` with no session options.
fn wake(models: &[&str], threshold: f32) -> (NeonStatus, *mut NeonWake) {
    let names: Vec<CString> = models.iter().map(|m| CString::new(*m).unwrap()).collect();
    let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut out = null_mut();
    // SAFETY: `ptrs` holds `models.len()` NUL-terminated strings; `out` is writable.
    let status =
        unsafe { neon_wake_new(ptrs.as_ptr(), ptrs.len(), threshold, null(), 0, &mut out) };
    (status, out)
}

fn scores(w: *const NeonWake) -> Vec<f32> {
    let mut n = 0;
    // SAFETY: a NULL buffer with capacity 0 asks for the count.
    assert_eq!(unsafe { neon_wake_scores(w, null_mut(), 0, &mut n) }, NeonStatus::BufferTooSmall);
    let mut out = vec![0.0; n];
    // SAFETY: `out` has room for `n` scores.
    assert_eq!(unsafe { neon_wake_scores(w, out.as_mut_ptr(), n, &mut n) }, NeonStatus::Ok);
    out
}

fn detections(w: *const NeonWake) -> Vec<NeonDetection> {
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
// Under qemu a transcription of this clip takes about a minute and a half, and the C API's
// code is the same on every target: models/tests/moonshine_golden.rs checks `Transcriber`
// (the NEON kernels) on aarch64, and examples/c/run.sh --aarch64 runs the C library's wake
// path there.
#[cfg_attr(target_arch = "aarch64", ignore = "host only: ~90 s under qemu")]
fn transcription_matches_the_library() {
    let dir = repo().join("models/moonshine");
    if !dir.join("base-en.safetensors").exists() {
        eprintln!(
            "SKIPPED: no Moonshine model at {} (run tools/moonshine/fetch.sh)",
            dir.display()
        );
        return;
    }
    let samples = read_wav(&dir.join("clips/open_the_door.wav"));
    let floats: Vec<f32> = samples.iter().map(|&v| i16_to_f32(v)).collect();
    let mut reference = Transcriber::open(&dir, &SessionOptions::default()).unwrap();
    let want = reference.transcribe(&floats).unwrap().text;
    assert!(want.to_lowercase().contains("door"), "{want}");

    let c_dir = CString::new(dir.to_str().unwrap()).unwrap();
    let mut t = null_mut();
    // SAFETY: a NUL-terminated directory, no options, `t` writable.
    let status = unsafe { neon_transcriber_open(c_dir.as_ptr(), null(), 0, &mut t) };
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let mut buffer = vec![0 as c_char; 256];
    let mut len = 0;
    // SAFETY: `t` is live, `buffer` has room for 256 bytes.
    let status = unsafe {
        neon_transcribe_i16(t, samples.as_ptr(), samples.len(), buffer.as_mut_ptr(), 256, &mut len)
    };
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    assert_eq!(text(buffer.as_ptr()), want);
    assert_eq!(len, want.len());

    // f32 input (the same text) into a buffer one byte short of the NUL: the size needed,
    // an empty string, the text kept by the handle. (One transcription for both checks:
    // they are slow under qemu.)
    // SAFETY: `buffer` has room for `want.len()` bytes.
    let status = unsafe {
        neon_transcribe_f32(
            t,
            floats.as_ptr(),
            floats.len(),
            buffer.as_mut_ptr(),
            want.len(),
            &mut len,
        )
    };
    assert_eq!((status, len), (NeonStatus::BufferTooSmall, want.len() + 1));
    assert_eq!(text(buffer.as_ptr()), "");
    // SAFETY: `t` is live.
    assert_eq!(text(unsafe { neon_transcriber_text(t) }), want);
    assert!(text(unsafe { neon_transcriber_error(t) }).contains("bytes"));

    // SAFETY: the pointers are valid, NULL or misaligned, which the library checks.
    unsafe {
        let bad = [0.0, f32::NAN];
        let status = neon_transcribe_f32(t, bad.as_ptr(), 2, buffer.as_mut_ptr(), 256, &mut len);
        assert_eq!(status, NeonStatus::InvalidArgument);
        let status = neon_transcribe_i16(t, null(), 0, buffer.as_mut_ptr(), 256, &mut len);
        assert_eq!(status, NeonStatus::NullPointer);
        let odd = samples.as_ptr().cast::<u8>().add(1).cast::<i16>();
        let status = neon_transcribe_i16(t, odd, 10, buffer.as_mut_ptr(), 256, &mut len);
        assert_eq!(status, NeonStatus::MisalignedPointer);
        let status =
            neon_transcribe_i16(t, samples.as_ptr(), 10, buffer.as_mut_ptr(), 256, null_mut());
        assert_eq!(status, NeonStatus::NullPointer);
        assert_eq!(neon_transcriber_close(t), NeonStatus::Ok);
        let status =
            neon_transcribe_i16(t, samples.as_ptr(), 10, buffer.as_mut_ptr(), 256, &mut len);
        assert_eq!(status, NeonStatus::UnknownHandle);
        assert!(neon_transcriber_text(t).is_null());
        assert_eq!(neon_transcriber_close(t), NeonStatus::UnknownHandle);
    }
}

#[test]
fn transcriber_open_errors() {
    let mut t = null_mut();
    let missing = CString::new("/no/such/moonshine").unwrap();
    // SAFETY: NUL-terminated strings, `t` writable.
    let status = unsafe { neon_transcriber_open(missing.as_ptr(), null(), 0, &mut t) };
    assert_eq!(status, NeonStatus::Io, "{}", last_error());
    assert!(t.is_null());
    let option = CString::new("moonshine_asr.int8=nine").unwrap();
    let options = [option.as_ptr()];
    // SAFETY: as above.
    let status = unsafe { neon_transcriber_open(missing.as_ptr(), options.as_ptr(), 1, &mut t) };
    assert_eq!(status, NeonStatus::InvalidArgument, "{}", last_error());
    assert!(last_error().contains("int8"), "{}", last_error());
}

// --- Silero VAD -------------------------------------------------------------------------

/// A VAD handle with `options` and `config` (NULL when `None`).
fn vad(options: &[&str], config: Option<&NeonVadConfig>) -> (NeonStatus, *mut NeonVad) {
    let options: Vec<CString> = options.iter().map(|o| CString::new(*o).unwrap()).collect();
    let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let config = config.map_or(null(), |c| c as *const NeonVadConfig);
    let mut out = null_mut();
    // SAFETY: `ptrs` holds NUL-terminated strings, `config` is NULL or valid, `out` writable.
    let status = unsafe { neon_vad_new(ptrs.as_ptr(), ptrs.len(), config, &mut out) };
    (status, out)
}

/// The probabilities of the last push or finish (asking for the count first).
fn vad_probabilities(v: *const NeonVad) -> Vec<f32> {
    let mut n = 0;
    // SAFETY: a NULL buffer with capacity 0 asks for the count.
    let status = unsafe { neon_vad_probabilities(v, null_mut(), 0, &mut n) };
    assert_eq!(status, if n == 0 { NeonStatus::Ok } else { NeonStatus::BufferTooSmall });
    let mut out = vec![f32::NAN; n];
    // SAFETY: `out` has room for `n` values.
    assert_eq!(unsafe { neon_vad_probabilities(v, out.as_mut_ptr(), n, &mut n) }, NeonStatus::Ok);
    assert_eq!(n, out.len());
    out
}

/// The segments of the last push or finish.
fn vad_segments(v: *const NeonVad) -> Vec<NeonVadSegment> {
    let mut out =
        vec![NeonVadSegment { start_s: 0.0, end_s: 0.0, start_sample: 0, end_sample: 0 }; 8];
    let mut n = 0;
    // SAFETY: `out` has room for 8 segments.
    let status = unsafe { neon_vad_segments(v, out.as_mut_ptr(), out.len(), &mut n) };
    assert_eq!(status, NeonStatus::Ok);
    out.truncate(n);
    out
}

/// `neon_vad_speaking`: the start of the open segment in seconds, if one is open.
fn vad_speaking(v: *const NeonVad) -> Option<f64> {
    let (mut speaking, mut since) = (-1, -1.0);
    // SAFETY: both outputs are writable.
    assert_eq!(unsafe { neon_vad_speaking(v, &mut speaking, &mut since) }, NeonStatus::Ok);
    assert!(speaking == 0 || speaking == 1);
    (speaking == 1).then_some(since).or_else(|| {
        assert_eq!(since, 0.0);
        None
    })
}

fn c_segment(s: SpeechSegment) -> NeonVadSegment {
    NeonVadSegment {
        start_s: s.start as f64 / 16_000.0,
        end_s: s.end as f64 / 16_000.0,
        start_sample: s.start,
        end_sample: s.end,
    }
}

fn bits(p: &[f32]) -> Vec<u32> {
    p.iter().map(|p| p.to_bits()).collect()
}

fn jfk() -> Vec<i16> {
    read_wav(&repo().join("models/speech/clips/jfk_ask_not.wav"))
}

/// `neon_models`' probabilities of `samples` (pushed at once, then finished) on the backend
/// `options` select.
fn library_probabilities(samples: &[f32], options: &[&str]) -> Vec<f32> {
    let backend =
        SessionOptions::from_pairs(options).unwrap().backend(Family::SileroVad, "network");
    let mut vad = Vad::new(VadModel::builtin().unwrap(), backend).unwrap();
    let mut out = Vec::new();
    vad.push(samples, |p| out.push(p)).unwrap();
    vad.finish(|p| out.push(p)).unwrap();
    out
}

/// Streams `samples` through `v` in pieces of `sizes` (cycled) with `push`, then finishes,
/// checking each push's results against a `SpeechSegmenter` fed the same probabilities
/// (segments as it releases them, `neon_vad_speaking` as its open segment). Returns every
/// probability and segment.
fn stream<T>(
    v: *mut NeonVad,
    samples: &[T],
    sizes: &[usize],
    config: &SegmentConfig,
    push: unsafe extern "C" fn(*mut NeonVad, *const T, usize) -> NeonStatus,
) -> (Vec<f32>, Vec<NeonVadSegment>) {
    let mut reference = SpeechSegmenter::new(config).unwrap();
    let (mut probabilities, mut segments) = (Vec::new(), Vec::new());
    // The last push's (or, with the stream's length, the finish's) results, checked
    // against the reference fed its probabilities.
    let check = |reference: &mut SpeechSegmenter,
                 probabilities: &mut Vec<f32>,
                 segments: &mut Vec<NeonVadSegment>,
                 end: Option<u64>| {
        let got = vad_probabilities(v);
        let mut want = Vec::new();
        for &p in &got {
            want.extend(reference.push(p).map(c_segment));
        }
        if let Some(total) = end {
            want.extend(reference.finish(total).unwrap().map(c_segment));
        }
        let decided = vad_segments(v);
        assert_eq!(decided, want, "after {} windows", probabilities.len() + got.len());
        probabilities.extend(got);
        segments.extend(decided);
    };
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= samples.len() {
            break;
        }
        let piece = &samples[at..(at + n).min(samples.len())];
        // SAFETY: `v` is live, `piece` holds `piece.len()` samples.
        assert_eq!(unsafe { push(v, piece.as_ptr(), piece.len()) }, NeonStatus::Ok);
        at += piece.len();
        let before = probabilities.len();
        check(&mut reference, &mut probabilities, &mut segments, None);
        assert!(probabilities.len() - before <= piece.len() / NEON_VAD_WINDOW_SAMPLES + 1);
        let open = reference.open_segment().map(|s| s.start as f64 / 16_000.0);
        assert_eq!(vad_speaking(v), open, "at sample {at}");
    }
    // SAFETY: `v` is live.
    assert_eq!(unsafe { neon_vad_finish(v) }, NeonStatus::Ok);
    check(&mut reference, &mut probabilities, &mut segments, Some(samples.len() as u64));
    assert_eq!(vad_speaking(v), None);
    (probabilities, segments)
}

#[test]
fn vad_matches_the_library_for_any_chunking_and_starts_over_after_finish() {
    let config = SegmentConfig::DEFAULT;
    for clip in [jfk(), jarvis()] {
        let floats: Vec<f32> = clip.iter().map(|&v| i16_to_f32(v)).collect();
        let want = library_probabilities(&floats, &[]);
        let want_segments: Vec<_> = speech_segments(&want, floats.len() as u64, &config)
            .unwrap()
            .into_iter()
            .map(c_segment)
            .collect();
        assert!(!want_segments.is_empty());

        let (status, v) = vad(&[], None);
        assert_eq!(status, NeonStatus::Ok, "{}", last_error());
        let sizes = [1, 100, 511, 512, 513, 1600, 4000, 7];
        let (p, s) = stream(v, &clip, &sizes, &config, neon_vad_push_i16);
        assert_eq!(bits(&p), bits(&want));
        assert_eq!(s, want_segments);

        // finish started a new stream: f32 in one push gives the same, times from 0.
        let (p, s) = stream(v, &floats, &[floats.len()], &config, neon_vad_push_f32);
        assert_eq!(bits(&p), bits(&want));
        assert_eq!(s, want_segments);

        // A reset drops half a stream and its results.
        // SAFETY: `v` is live; `clip` holds its samples.
        unsafe {
            assert_eq!(neon_vad_push_i16(v, clip.as_ptr(), clip.len() / 2), NeonStatus::Ok);
            assert_eq!(neon_vad_reset(v), NeonStatus::Ok);
        }
        assert!(vad_probabilities(v).is_empty() && vad_segments(v).is_empty());
        assert_eq!(vad_speaking(v), None);
        let (p, s) = stream(v, &clip, &[3000], &config, neon_vad_push_i16);
        assert_eq!(bits(&p), bits(&want));
        assert_eq!(s, want_segments);

        // finish without samples: no window, no segment.
        // SAFETY: `v` is live.
        assert_eq!(unsafe { neon_vad_finish(v) }, NeonStatus::Ok);
        assert!(vad_probabilities(v).is_empty() && vad_segments(v).is_empty());
        // SAFETY: `v` is live; freed once.
        assert_eq!(unsafe { neon_vad_free(v) }, NeonStatus::Ok);
    }
}

#[test]
fn vad_config_is_silero_vads_get_speech_timestamps() {
    let mut defaults = NeonVadConfig { threshold: 0.0, ..NeonVadConfig::default() };
    // SAFETY: `defaults` is writable.
    assert_eq!(unsafe { neon_vad_config_default(&mut defaults) }, NeonStatus::Ok);
    assert_eq!(defaults, NeonVadConfig::default());
    assert_eq!(defaults.segment_config(), SegmentConfig::DEFAULT);

    let clip = jfk();
    let floats: Vec<f32> = clip.iter().map(|&v| i16_to_f32(v)).collect();
    let probabilities = library_probabilities(&floats, &[]);
    let d = defaults;
    let cases = [
        (
            NeonVadConfig { threshold: 0.3, min_silence_ms: 300, speech_pad_ms: 100, ..d },
            SegmentConfig {
                threshold: 0.3,
                min_silence_duration_ms: 300,
                speech_pad_ms: 100,
                ..SegmentConfig::DEFAULT
            },
        ),
        (
            NeonVadConfig { neg_threshold: 0.2, min_speech_ms: 1000, ..d },
            SegmentConfig {
                neg_threshold: Some(0.2),
                min_speech_duration_ms: 1000,
                ..SegmentConfig::DEFAULT
            },
        ),
        (
            NeonVadConfig { max_speech_s: 1.0, min_silence_at_max_speech_ms: 50, ..d },
            SegmentConfig {
                max_speech_duration_s: 1.0,
                min_silence_at_max_speech_ms: 50,
                ..SegmentConfig::DEFAULT
            },
        ),
        (
            NeonVadConfig { max_speech_s: 1.5, use_max_poss_sil_at_max_speech: 0, ..d },
            SegmentConfig {
                max_speech_duration_s: 1.5,
                use_max_poss_sil_at_max_speech: false,
                ..SegmentConfig::DEFAULT
            },
        ),
        (NeonVadConfig { max_speech_s: f64::INFINITY, ..d }, SegmentConfig::DEFAULT),
    ];
    let mut distinct = Vec::new();
    for (c, want) in cases {
        assert_eq!(c.segment_config(), want);
        let want: Vec<_> = speech_segments(&probabilities, floats.len() as u64, &want)
            .unwrap()
            .into_iter()
            .map(c_segment)
            .collect();
        let (status, v) = vad(&[], Some(&c));
        assert_eq!(status, NeonStatus::Ok, "{}", last_error());
        let (p, s) = stream(v, &clip, &[4096], &c.segment_config(), neon_vad_push_i16);
        assert_eq!(bits(&p), bits(&probabilities));
        assert_eq!(s, want, "{c:?}");
        if !distinct.contains(&s) {
            distinct.push(s);
        }
        // SAFETY: `v` is live.
        assert_eq!(unsafe { neon_vad_free(v) }, NeonStatus::Ok);
    }
    assert!(distinct.len() >= 4, "the settings should change the segments: {distinct:?}");

    // Invalid settings: INVALID_ARGUMENT with the segmenter's message, no handle.
    let bad = [
        (NeonVadConfig { threshold: 1.5, ..d }, "threshold 1.5"),
        (NeonVadConfig { threshold: f64::NAN, ..d }, "threshold NaN"),
        (NeonVadConfig { neg_threshold: 0.6, ..d }, "neg_threshold 0.6"),
        (NeonVadConfig { neg_threshold: f64::NAN, ..d }, "neg_threshold NaN"),
        (NeonVadConfig { max_speech_s: -1.0, ..d }, "max_speech_duration_s -1"),
        (NeonVadConfig { max_speech_s: f64::NAN, ..d }, "max_speech_duration_s NaN"),
    ];
    for (c, message) in bad {
        let (status, v) = vad(&[], Some(&c));
        assert_eq!(status, NeonStatus::InvalidArgument, "{c:?}");
        assert!(v.is_null());
        assert!(last_error().contains(message), "{}", last_error());
    }
}

#[test]
fn vad_session_options_pick_the_backend() {
    let clip = jarvis();
    let floats: Vec<f32> = clip.iter().map(|&v| i16_to_f32(v)).collect();
    let option = r#"silero_vad.exec_plan={"network":{"impl":"portable"}}"#;
    let want = library_probabilities(&floats, &[option]);
    let (status, v) = vad(&[option], None);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let (p, _) = stream(v, &clip, &[1280], &SegmentConfig::DEFAULT, neon_vad_push_i16);
    assert_eq!(bits(&p), bits(&want));
    // SAFETY: `v` is live.
    assert_eq!(unsafe { neon_vad_free(v) }, NeonStatus::Ok);

    for option in ["silero_vad.exec_plan=portable", "silero_vad.no_such_key=1", "no_equals"] {
        let (status, v) = vad(&[option], None);
        assert_eq!(status, NeonStatus::InvalidArgument, "{option}");
        assert!(v.is_null());
    }
}

#[test]
fn vad_misuse_is_reported() {
    let clip = jfk();
    let floats: Vec<f32> = clip.iter().map(|&v| i16_to_f32(v)).collect();
    let want = library_probabilities(&floats, &[]);
    let config = NeonVadConfig::default();
    let mut out = null_mut();
    // SAFETY: every pointer is valid, NULL or misaligned, which the library checks.
    unsafe {
        assert_eq!(neon_vad_new(null(), 0, null(), null_mut()), NeonStatus::NullPointer);
        assert_eq!(neon_vad_new(null(), 1, null(), &mut out), NeonStatus::NullPointer);
        let configs = [config; 2];
        let odd = configs.as_ptr().cast::<u8>().add(4).cast::<NeonVadConfig>();
        assert_eq!(neon_vad_new(null(), 0, odd, &mut out), NeonStatus::MisalignedPointer);
        assert_eq!(neon_vad_config_default(null_mut()), NeonStatus::NullPointer);
        assert!(out.is_null());
    }
    let (status, v) = vad(&[], Some(&config));
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let half = floats.len() / 2;
    let mut n = 0;
    // SAFETY: as above; `v` is live until freed.
    unsafe {
        assert_eq!(neon_vad_push_f32(v, null(), 0), NeonStatus::NullPointer);
        assert_eq!(neon_vad_push_i16(v, null(), 0), NeonStatus::NullPointer);
        let odd = clip.as_ptr().cast::<u8>().add(1).cast::<i16>();
        assert_eq!(neon_vad_push_i16(v, odd, 10), NeonStatus::MisalignedPointer);
        assert!(text(neon_vad_error(v)).contains("not aligned"));
        let odd = floats.as_ptr().cast::<u8>().add(2).cast::<f32>();
        assert_eq!(neon_vad_push_f32(v, odd, 10), NeonStatus::MisalignedPointer);
        assert_eq!(neon_vad_push_f32(v, floats.as_ptr(), usize::MAX), NeonStatus::InvalidArgument);

        // NaN or infinity anywhere: nothing of that push is used, no results.
        assert_eq!(neon_vad_push_f32(v, floats.as_ptr(), half), NeonStatus::Ok);
        let first = vad_probabilities(v);
        assert_eq!(first.len(), half / 512);
        for bad in [f32::NAN, f32::INFINITY] {
            let mut piece = floats[half..half + 700].to_vec();
            piece[650] = bad;
            let status = neon_vad_push_f32(v, piece.as_ptr(), piece.len());
            assert_eq!(status, NeonStatus::InvalidArgument);
            assert!(text(neon_vad_error(v)).contains("samples[650]"), "{}", last_error());
            assert_eq!(text(neon_vad_error(v)), last_error());
            assert!(vad_probabilities(v).is_empty() && vad_segments(v).is_empty());
        }

        // Too small buffers store the count; NULL is allowed only with capacity 0.
        let rest = &floats[half..];
        assert_eq!(neon_vad_push_f32(v, rest.as_ptr(), rest.len()), NeonStatus::Ok);
        let k = vad_probabilities(v).len();
        assert!(k > 1);
        let mut one = [0.0f32; 1];
        let status = neon_vad_probabilities(v, one.as_mut_ptr(), 1, &mut n);
        assert_eq!((status, n), (NeonStatus::BufferTooSmall, k));
        assert!(text(neon_vad_error(v)).contains(&format!("{k} are needed")));
        assert_eq!(neon_vad_probabilities(v, null_mut(), 4, &mut n), NeonStatus::NullPointer);
        assert_eq!(
            neon_vad_probabilities(v, one.as_mut_ptr(), 1, null_mut()),
            NeonStatus::NullPointer
        );
        let mut two = [0.0f32; 3];
        let odd = two.as_mut_ptr().cast::<u8>().add(1).cast::<f32>();
        assert_eq!(neon_vad_probabilities(v, odd, 2, &mut n), NeonStatus::MisalignedPointer);
        let segments = vad_segments(v);
        assert!(!segments.is_empty(), "the second half of the clip ends segments");
        let status = neon_vad_segments(v, null_mut(), 0, &mut n);
        assert_eq!((status, n), (NeonStatus::BufferTooSmall, segments.len()));
        let mut counts = [0usize; 2];
        let odd = counts.as_mut_ptr().cast::<u8>().add(1).cast::<usize>();
        assert_eq!(neon_vad_segments(v, null_mut(), 0, odd), NeonStatus::MisalignedPointer);
        let (mut speaking, mut since) = (0, 0.0);
        assert_eq!(neon_vad_speaking(v, null_mut(), &mut since), NeonStatus::NullPointer);
        assert_eq!(neon_vad_speaking(v, &mut speaking, null_mut()), NeonStatus::NullPointer);
        // The failed calls changed nothing: the results are still there, and the stream
        // (the failed pushes left out) gives the library's probabilities.
        assert_eq!(vad_segments(v), segments);
        let second = vad_probabilities(v);
        assert_eq!(neon_vad_finish(v), NeonStatus::Ok);
        assert_eq!(bits(&[first, second, vad_probabilities(v)].concat()), bits(&want));

        // Use after free, a pointer that never was a handle, a handle of another kind.
        assert_eq!(neon_vad_free(v), NeonStatus::Ok);
        assert_eq!(neon_vad_push_i16(v, clip.as_ptr(), 512), NeonStatus::UnknownHandle);
        assert!(last_error().contains("not live"), "{}", last_error());
        assert_eq!(neon_vad_push_f32(v, floats.as_ptr(), 512), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_probabilities(v, null_mut(), 0, &mut n), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_segments(v, null_mut(), 0, &mut n), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_speaking(v, &mut speaking, &mut since), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_finish(v), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_reset(v), NeonStatus::UnknownHandle);
        assert!(neon_vad_error(v).is_null());
        assert_eq!(neon_vad_free(v), NeonStatus::UnknownHandle);
        assert_eq!(neon_vad_free(null_mut()), NeonStatus::Ok);
        assert_eq!(neon_vad_reset(null_mut()), NeonStatus::NullPointer);
        let misaligned = v.cast::<u8>().add(1).cast::<NeonVad>();
        assert_eq!(neon_vad_finish(misaligned), NeonStatus::MisalignedPointer);
        let mut fake = [0u64; 8];
        let fake = fake.as_mut_ptr().cast::<NeonVad>();
        assert_eq!(neon_vad_push_i16(fake, clip.as_ptr(), 512), NeonStatus::UnknownHandle);
        let (_, w) = wake(&["alexa"], 0.5);
        assert_eq!(neon_vad_push_i16(w.cast(), clip.as_ptr(), 512), NeonStatus::UnknownHandle);
        assert!(last_error().contains("not a Vad handle"), "{}", last_error());
        assert_eq!(neon_vad_free(w.cast()), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
    }
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

/// A session option of a model family the handle does not run is refused, as the CLI
/// refuses it (`neon wake --session-option moonshine_asr.int8=dot`).
#[test]
fn session_options_of_another_family_are_refused() {
    let wake_with = |option: &CStr| {
        let options = [option.as_ptr()];
        let mut w = null_mut();
        // SAFETY: one NUL-terminated option; `w` is writable.
        let status = unsafe { neon_wake_new(null(), 0, 0.5, options.as_ptr(), 1, &mut w) };
        (status, w)
    };
    let (status, w) = wake_with(c"moonshine_asr.int8=dot");
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(w.is_null());
    let message = last_error();
    assert!(
        message.contains("moonshine_asr.int8") && message.contains("openwakeword"),
        "{message}"
    );
    let (status, w) = wake_with(c"silero_vad.exec_plan=default");
    assert_eq!(status, NeonStatus::InvalidArgument, "{}", last_error());
    assert!(w.is_null());
    // Its own family's options are taken.
    let (status, w) = wake_with(c"openwakeword.embedding_mode=full");
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    // SAFETY: `w` is live.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);

    let options = [c"openwakeword.embedding_mode=full".as_ptr()];
    let mut t = null_mut();
    // SAFETY: NUL-terminated strings; `t` is writable. The options are checked before the
    // files are read.
    let status =
        unsafe { neon_transcriber_open(c"models/moonshine".as_ptr(), options.as_ptr(), 1, &mut t) };
    assert_eq!(status, NeonStatus::InvalidArgument, "{}", last_error());
    assert!(last_error().contains("moonshine_asr"), "{}", last_error());
    assert!(t.is_null());

    let (status, v) = vad(&["moonshine_asr.exec_plan=default"], None);
    assert_eq!(status, NeonStatus::InvalidArgument, "{}", last_error());
    assert!(v.is_null());
    assert!(last_error().contains("silero_vad"), "{}", last_error());
}

/// `neon_transcriber_set_threads`: the same text on 2 threads as on the calling thread; 0 is
/// `neon transcribe`'s default; out-of-range counts are refused and change nothing.
#[test]
#[cfg_attr(target_arch = "aarch64", ignore = "host only: ~90 s under qemu")]
fn transcriber_threads() {
    let dir = repo().join("models/moonshine");
    if !dir.join("base-en.safetensors").exists() {
        eprintln!("SKIPPED: no Moonshine model at {}", dir.display());
        return;
    }
    let samples = read_wav(&dir.join("clips/open_the_door.wav"));
    let c_dir = CString::new(dir.to_str().unwrap()).unwrap();
    let mut t = null_mut();
    // SAFETY: a NUL-terminated directory, no options, `t` writable.
    let status = unsafe { neon_transcriber_open(c_dir.as_ptr(), null(), 0, &mut t) };
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let threads = |t| {
        let mut n = 0;
        // SAFETY: `t` is live, `n` writable.
        assert_eq!(unsafe { neon_transcriber_threads(t, &mut n) }, NeonStatus::Ok);
        n
    };
    let transcribe = |t| {
        let mut buffer = vec![0 as c_char; 256];
        let mut len = 0;
        // SAFETY: `t` is live, `buffer` has room for 256 bytes.
        let status = unsafe {
            neon_transcribe_i16(
                t,
                samples.as_ptr(),
                samples.len(),
                buffer.as_mut_ptr(),
                256,
                &mut len,
            )
        };
        assert_eq!(status, NeonStatus::Ok, "{}", last_error());
        text(buffer.as_ptr())
    };
    assert_eq!(threads(t), 1);
    let one = transcribe(t);
    assert!(one.to_lowercase().contains("door"), "{one}");
    // SAFETY: `t` is live (and, below, a wake handle of the wrong kind).
    unsafe {
        assert_eq!(neon_transcriber_set_threads(t, 2), NeonStatus::Ok);
        assert_eq!(threads(t), 2);
        assert_eq!(transcribe(t), one);
        assert_eq!(neon_transcriber_set_threads(t, 65), NeonStatus::InvalidArgument);
        assert!(last_error().contains("at most 64"), "{}", last_error());
        assert_eq!(threads(t), 2);
        assert_eq!(neon_transcriber_set_threads(t, 0), NeonStatus::Ok);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads(t), cores.min(4));
        assert_eq!(neon_transcriber_set_threads(t, 1), NeonStatus::Ok);
        assert_eq!(threads(t), 1);
        assert_eq!(neon_transcriber_threads(t, null_mut()), NeonStatus::NullPointer);
        let (_, w) = wake(&["alexa"], 0.5);
        assert_eq!(neon_transcriber_set_threads(w.cast(), 2), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
        assert_eq!(neon_transcriber_close(t), NeonStatus::Ok);
        assert_eq!(neon_transcriber_set_threads(t, 2), NeonStatus::UnknownHandle);
    }
}
