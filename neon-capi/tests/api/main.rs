//! The C API through its extern functions: results equal to the Rust library's (wake scores
//! and VAD probabilities bit for bit, VAD segments as `speech_segments` gives them), and
//! every misuse an error status rather than a crash. By handle: `wake` (openWakeWord),
//! `micro` (microWakeWord wake handles), `transcriber`, `vad`; here the helpers they share
//! and the session options of another family.

mod micro;
mod transcriber;
mod vad;
mod wake;

use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};
use std::ptr::{null, null_mut};

use neon_capi::*;

use vad::vad;

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
