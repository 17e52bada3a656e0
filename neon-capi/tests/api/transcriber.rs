//! Moonshine transcriber handles: the library's transcript, open errors, threads.

use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};

use neon_audio::i16_to_f32;
use neon_capi::*;
use neon_models::moonshine::transcriber::Transcriber;
use neon_models::session::SessionOptions;

use super::wake::wake;
use super::{last_error, read_wav, repo, text};

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
