//! Silero VAD handles: probabilities and segments equal to the library's for any chunking, the
//! configuration, the backend, misuse.

use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};

use neon_audio::i16_to_f32;
use neon_capi::*;
use neon_models::exec_plan::Family;
use neon_models::session::SessionOptions;
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{speech_segments, SegmentConfig, SpeechSegment, SpeechSegmenter};

use super::wake::wake;
use super::{jarvis, last_error, read_wav, repo, text};

/// A VAD handle with `options` and `config` (NULL when `None`).
pub(crate) fn vad(options: &[&str], config: Option<&NeonVadConfig>) -> (NeonStatus, *mut NeonVad) {
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
