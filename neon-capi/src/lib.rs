//! The C API of neon: openWakeWord wake-word detection and Moonshine speech recognition
//! behind opaque handles, for programs in C (or anything with a C FFI).
//!
//! The header is `include/neon.h`, generated from this file by cbindgen (`tests/header.rs`
//! checks that the committed header is current; `NEON_UPDATE_HEADER=1 cargo test -p neon-capi
//! --test header` rewrites it).
//!
//! # Rules
//! - Every function returns a [`NeonStatus`] (except the few that return a string or a
//!   count, documented as such). Nothing panics across the boundary: a panic inside is caught
//!   and reported as [`NeonStatus::Panic`].
//! - Pointers are checked: NULL is [`NeonStatus::NullPointer`], a pointer not aligned for its
//!   type is [`NeonStatus::MisalignedPointer`]. An output buffer may be NULL only when its
//!   capacity is 0 (to ask for the size needed).
//! - Handles are created by `neon_wake_new` / `neon_transcriber_open` and released by
//!   `neon_wake_free` / `neon_transcriber_close` (NULL is a no-op there). Live handles are kept
//!   in a registry; a handle that is not in it (already freed, never created, or a handle of
//!   the other kind) is [`NeonStatus::UnknownHandle`], never a crash. The check is by address:
//!   when a later `neon_*_new` happens to return the address of a freed handle, the old
//!   pointer refers to the new handle and cannot be told apart.
//! - A handle may be moved between threads but must not be used by two threads at once.
//! - Strings are UTF-8 and NUL-terminated. Strings returned by the library are owned by it:
//!   a handle's strings stay valid until the next call on that handle (model names until the
//!   handle is freed), [`neon_last_error`]'s until the next failing call on the same thread.
//! - Errors: the message of the last failed call on a handle is `neon_wake_error` /
//!   `neon_transcriber_error`; every failed call, with or without a handle, also sets the
//!   calling thread's [`neon_last_error`]. Successful calls leave both untouched.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{LazyLock, Mutex, MutexGuard};

use neon_models::audio::i16_to_f32;
use neon_models::moonshine::segment::split;
use neon_models::moonshine::transcriber::Transcriber;
use neon_models::moonshine::MAX_SAMPLES;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::trigger::Trigger;
use neon_models::session::SessionOptions;
use neon_models::Error;

/// Sample rate of every input (Hz).
const RATE: u64 = 16_000;

/// Samples during which a model cannot fire again after a detection (1 s, as `neon wake`).
const REFRACTORY: u64 = RATE;

/// The result of every call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeonStatus {
    /// Success.
    Ok = 0,
    /// A required pointer was NULL.
    NullPointer = 1,
    /// A pointer was not aligned for its type (e.g. an `int16_t *` at an odd address).
    MisalignedPointer = 2,
    /// An argument is out of range or malformed: a length, a threshold, an unknown model name,
    /// a bad session option, a string that is not UTF-8, non-finite samples.
    InvalidArgument = 3,
    /// A model or weights file is malformed or cannot run.
    Model = 4,
    /// A file could not be read.
    Io = 5,
    /// An output buffer is too small; the size needed was stored.
    BufferTooSmall = 6,
    /// The handle is not live: already freed (use after free), never created, or of the
    /// other kind.
    UnknownHandle = 7,
    /// A panic inside the library was caught (a bug: please report it with the message).
    Panic = 8,
}

/// One wake-word detection.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NeonDetection {
    /// Index of the model (as for `neon_wake_model_name`).
    pub model: usize,
    /// End of the audio that produced the score, in seconds since the stream started (or
    /// since the last `neon_wake_reset`).
    pub time_s: f64,
    /// The score that crossed the threshold.
    pub score: f32,
}

/// A wake-word detector (opaque): the models, their triggers and the last push's results.
pub struct NeonWake {
    detector: WakeDetector,
    names: Vec<CString>,
    triggers: Vec<Trigger>,
    scores: Vec<f32>,
    detections: Vec<NeonDetection>,
    /// Samples pushed since construction or the last reset.
    samples: u64,
    error: Mutex<CString>,
}

impl NeonWake {
    /// Back to the state after construction.
    fn reset(&mut self) {
        self.detector.reset();
        self.triggers.iter_mut().for_each(Trigger::reset);
        self.scores.fill(0.0);
        self.detections.clear();
        self.samples = 0;
    }
}

/// A Moonshine transcriber (opaque): the model, its buffers and the last text.
pub struct NeonTranscriber {
    transcriber: Transcriber,
    text: CString,
    /// Reused between calls: the audio converted to f32.
    audio: Vec<f32>,
    error: Mutex<CString>,
}

/// Which kind of handle an address holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Wake,
    Transcriber,
}

/// Addresses of the live handles.
static LIVE: LazyLock<Mutex<HashMap<usize, Kind>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn live() -> MutexGuard<'static, HashMap<usize, Kind>> {
    // The map stays consistent under a panic (single inserts and removes): ignore poisoning.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A failed call: its status and message.
struct Failure {
    status: NeonStatus,
    message: String,
}

impl Failure {
    fn new(status: NeonStatus, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }
}

type Result<T, E = Failure> = std::result::Result<T, E>;

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::Weights { .. } | Error::Runtime(_) => NeonStatus::Model,
            Error::Io { .. } => NeonStatus::Io,
            _ => NeonStatus::InvalidArgument,
        };
        Failure::new(status, e.to_string())
    }
}

/// `message` as a C string (interior NULs, which the library never writes, become spaces).
fn c_string(message: &str) -> CString {
    CString::new(message.replace('\0', " ")).unwrap_or_default()
}

fn set_last_error(message: &str) {
    LAST_ERROR.with(|e| *e.borrow_mut() = c_string(message));
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown payload".into());
    format!("panic inside neon: {what}")
}

/// Runs `body`, turning a panic into a [`NeonStatus::Panic`] failure.
fn catch(body: impl FnOnce() -> Result<()>) -> Result<()> {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(Failure::new(NeonStatus::Panic, panic_message(&*payload))))
}

/// The status of `result`; a failure sets the thread's last error and, when `error` is
/// given, the handle's.
fn report(result: Result<()>, error: Option<&Mutex<CString>>) -> NeonStatus {
    let Err(failure) = result else { return NeonStatus::Ok };
    set_last_error(&failure.message);
    if let Some(error) = error {
        *error.lock().unwrap_or_else(|e| e.into_inner()) = c_string(&failure.message);
    }
    failure.status
}

/// Runs `body`, catching panics; a failure sets the thread's last error.
fn run(body: impl FnOnce() -> Result<()>) -> NeonStatus {
    report(catch(body), None)
}

/// Checks that `p` is non-NULL and aligned for `T`.
fn check_ptr<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Failure::new(NeonStatus::NullPointer, format!("{what} is NULL")));
    }
    if !p.is_aligned() {
        return Err(Failure::new(
            NeonStatus::MisalignedPointer,
            format!(
                "{what} ({p:p}) is not aligned to {} bytes for its type",
                std::mem::align_of::<T>()
            ),
        ));
    }
    Ok(())
}

/// Checks that `n` values of `T` fit in an allocation (Rust slices are at most `isize::MAX`
/// bytes).
fn check_len<T>(n: usize, what: &str) -> Result<()> {
    if n.checked_mul(std::mem::size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(Failure::new(
            NeonStatus::InvalidArgument,
            format!("{what}: length {n} is larger than any buffer"),
        ));
    }
    Ok(())
}

/// `n` values at `p` as a slice, after checking the pointer and the length.
///
/// # Safety
/// When `p` is non-NULL and aligned, it must point to `n` initialised values that stay valid
/// and unmodified for `'a`.
unsafe fn input<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    check_ptr(p, what)?;
    check_len::<T>(n, what)?;
    // SAFETY: `p` is non-NULL and aligned (checked), `n * size_of::<T>()` fits in `isize`
    // (checked) and the caller guarantees `n` valid values for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Stores `v` through `p` after checking the pointer.
///
/// # Safety
/// When `p` is non-NULL and aligned, it must be valid for a write of `T`.
unsafe fn store<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    check_ptr(p, what)?;
    // SAFETY: non-NULL and aligned (checked); the caller guarantees it is writable.
    unsafe { p.write(v) };
    Ok(())
}

/// Copies `values` to `out` (capacity `cap`) and stores their count in `*n`; a too small
/// buffer is [`NeonStatus::BufferTooSmall`] (with `*n` still set). `out` may be NULL when
/// `cap` is 0.
///
/// # Safety
/// `n` as for [`store`]; a non-NULL aligned `out` must be valid for `cap` writes of `T`.
unsafe fn output<T: Copy>(values: &[T], out: *mut T, cap: usize, n: *mut usize) -> Result<()> {
    check_ptr(n, "the count pointer")?;
    if !(out.is_null() && cap == 0) {
        check_ptr(out, "the output buffer")?;
        check_len::<T>(cap, "the output buffer")?;
    }
    // SAFETY: `n` is non-NULL and aligned (checked), writable by the caller's contract.
    unsafe { n.write(values.len()) };
    if cap < values.len() {
        return Err(Failure::new(
            NeonStatus::BufferTooSmall,
            format!("the output buffer holds {cap} values, {} are needed", values.len()),
        ));
    }
    if !values.is_empty() {
        // SAFETY: `out` is non-NULL (cap >= len > 0 excludes the NULL case) and aligned
        // (checked), valid for `cap >= values.len()` writes by the caller's contract, and
        // cannot overlap `values`, which the library owns.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    }
    Ok(())
}

/// The `n` strings at `p` (which may be NULL when `n` is 0).
///
/// # Safety
/// A non-NULL aligned `p` must point to `n` pointers, each NULL or a NUL-terminated string.
unsafe fn strings(p: *const *const c_char, n: usize, what: &str) -> Result<Vec<String>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the caller guarantees `n` readable pointers at `p` (when non-NULL and aligned,
    // which `input` checks).
    let ptrs = unsafe { input(p, n, what)? };
    ptrs.iter()
        .enumerate()
        .map(|(i, &s)| {
            if s.is_null() {
                return Err(Failure::new(NeonStatus::NullPointer, format!("{what}[{i}] is NULL")));
            }
            // SAFETY: non-NULL; the caller guarantees a NUL-terminated string.
            let s = unsafe { CStr::from_ptr(s) };
            s.to_str().map(str::to_string).map_err(|_| {
                Failure::new(NeonStatus::InvalidArgument, format!("{what}[{i}] is not UTF-8"))
            })
        })
        .collect()
}

/// Session options from `KEY=VALUE` strings.
///
/// # Safety
/// As [`strings`].
unsafe fn parse_options(p: *const *const c_char, n: usize) -> Result<SessionOptions> {
    // SAFETY: forwarded contract.
    let pairs = unsafe { strings(p, n, "session_options")? };
    Ok(SessionOptions::from_pairs(pairs)?)
}

/// Checks that `h` is a live handle of `kind`.
fn check_handle<T>(h: *const T, kind: Kind) -> Result<()> {
    check_ptr(h, "the handle")?;
    match live().get(&(h as usize)) {
        Some(&k) if k == kind => Ok(()),
        Some(_) => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not a {kind:?} handle"),
        )),
        None => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not live (freed, or never created)"),
        )),
    }
}

/// Checks that `h` is a live handle of `kind` and removes it from the registry (under one
/// lock, so two threads freeing one handle cannot both succeed).
fn unregister<T>(h: *const T, kind: Kind) -> Result<()> {
    check_ptr(h, "the handle")?;
    let mut live = live();
    match live.get(&(h as usize)) {
        Some(&k) if k == kind => {
            live.remove(&(h as usize));
            Ok(())
        }
        _ => Err(Failure::new(
            NeonStatus::UnknownHandle,
            format!("the handle {h:p} is not a live {kind:?} handle (already freed?)"),
        )),
    }
}

/// Registers a new handle and returns its address.
/// The last error message of handle `h` of `kind` (NULL when `h` is not a live handle of
/// that kind): the buffer `error` picks from the handle.
///
/// # Safety
/// `h` is not being freed by another thread.
unsafe fn handle_error<T>(
    h: *const T,
    kind: Kind,
    error: impl FnOnce(&T) -> &Mutex<CString>,
) -> *const c_char {
    if run(|| check_handle(h, kind)) != NeonStatus::Ok {
        return std::ptr::null();
    }
    // SAFETY: `h` is live, hence a valid `T`; no concurrent free (contract).
    let h = unsafe { &*h };
    // The buffer outlives the guard: it is replaced only by a later failing call.
    error(h).lock().unwrap_or_else(|e| e.into_inner()).as_ptr()
}

/// Frees handle `h` of `kind`; NULL is a no-op, a pointer that is not a live handle of that
/// kind is `UnknownHandle`.
///
/// # Safety
/// `h` is not in use by another thread.
unsafe fn free_handle<T>(h: *mut T, kind: Kind) -> NeonStatus {
    if h.is_null() {
        return NeonStatus::Ok;
    }
    run(|| {
        unregister(h, kind)?;
        // SAFETY: `h` was live, i.e. created by `Box::into_raw` in `register` and not freed
        // since (it is now removed from the registry, so this runs once).
        drop(unsafe { Box::from_raw(h) });
        Ok(())
    })
}

fn register<T>(value: T, kind: Kind) -> *mut T {
    let p = Box::into_raw(Box::new(value));
    live().insert(p as usize, kind);
    p
}

/// Runs `body` on the wake handle `h` (shared).
///
/// # Safety
/// A live `h` must not be used mutably by another thread during the call.
unsafe fn on_wake(h: *const NeonWake, body: impl FnOnce(&NeonWake) -> Result<()>) -> NeonStatus {
    // Check the handle first (outside the handle's error state, which does not exist yet).
    let status = run(|| check_handle(h, Kind::Wake));
    if status != NeonStatus::Ok {
        return status;
    }
    // SAFETY: `h` is live (registered by `register` from a `Box`, not yet freed), so it
    // points to a valid `NeonWake`; the caller guarantees no concurrent mutable use.
    let w = unsafe { &*h };
    report(catch(|| body(w)), Some(&w.error))
}

/// Runs `body` on the wake handle `h` (exclusive).
///
/// # Safety
/// A live `h` must not be used by another thread during the call.
unsafe fn on_wake_mut(
    h: *mut NeonWake,
    body: impl FnOnce(&mut NeonWake) -> Result<()>,
) -> NeonStatus {
    let status = run(|| check_handle(h, Kind::Wake));
    if status != NeonStatus::Ok {
        return status;
    }
    // SAFETY: `h` is live, so it points to a valid `NeonWake` created from a `Box` (a
    // mutable pointer); the caller guarantees exclusive use during the call.
    let w = unsafe { &mut *h };
    let result = catch(|| body(&mut *w));
    report(result, Some(&w.error))
}

/// Runs `body` on the transcriber handle `h` (exclusive).
///
/// # Safety
/// A live `h` must not be used by another thread during the call.
unsafe fn on_transcriber(
    h: *mut NeonTranscriber,
    body: impl FnOnce(&mut NeonTranscriber) -> Result<()>,
) -> NeonStatus {
    let status = run(|| check_handle(h, Kind::Transcriber));
    if status != NeonStatus::Ok {
        return status;
    }
    // SAFETY: `h` is live, so it points to a valid `NeonTranscriber` created from a `Box`;
    // the caller guarantees exclusive use during the call.
    let t = unsafe { &mut *h };
    let result = catch(|| body(&mut *t));
    report(result, Some(&t.error))
}

/// The message of the last failed call on the calling thread ("" when none failed yet).
/// Owned by the library; valid until the next failing call on this thread. Never NULL.
#[no_mangle]
pub extern "C" fn neon_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// A short English description of a status code (a `neon_status` value; a static string,
/// never NULL; "unknown status" for a value that is not one).
#[no_mangle]
pub extern "C" fn neon_status_string(status: c_int) -> *const c_char {
    const ALL: [NeonStatus; 9] = [
        NeonStatus::Ok,
        NeonStatus::NullPointer,
        NeonStatus::MisalignedPointer,
        NeonStatus::InvalidArgument,
        NeonStatus::Model,
        NeonStatus::Io,
        NeonStatus::BufferTooSmall,
        NeonStatus::UnknownHandle,
        NeonStatus::Panic,
    ];
    let s: &'static CStr = match ALL.into_iter().find(|&s| s as c_int == status) {
        Some(NeonStatus::Ok) => c"ok",
        Some(NeonStatus::NullPointer) => c"null pointer",
        Some(NeonStatus::MisalignedPointer) => c"misaligned pointer",
        Some(NeonStatus::InvalidArgument) => c"invalid argument",
        Some(NeonStatus::Model) => c"model or weights error",
        Some(NeonStatus::Io) => c"I/O error",
        Some(NeonStatus::BufferTooSmall) => c"buffer too small",
        Some(NeonStatus::UnknownHandle) => c"unknown handle (freed or never created)",
        Some(NeonStatus::Panic) => c"panic inside the library",
        None => c"unknown status",
    };
    s.as_ptr()
}

/// Creates a wake-word detector and stores it in `*out`.
///
/// `models`: `n_models` built-in model names (`hey_jarvis`, `hey_jarvis_v0.1`, `alexa`, ...)
/// or paths to converted safetensors heads (named after the file stem; names must be
/// unique); `n_models` 0 (with `models` NULL or not) loads every built-in model.
/// `threshold`: the score, in (0, 1], at or above which a model fires (0.5 is openWakeWord's
/// default); a model cannot fire again within 1 s of a detection. `session_options`:
/// `n_options` `KEY=VALUE` strings, as `neon wake --session-option` (NULL when 0).
///
/// Errors: `NEON_STATUS_INVALID_ARGUMENT` for an unknown model, a bad option or threshold,
/// `NEON_STATUS_IO` / `NEON_STATUS_MODEL` for an unreadable or malformed head file; `*out`
/// is then left unchanged and the message is in `neon_last_error()`.
///
/// # Safety
/// `models` and `session_options` must point to `n_models` / `n_options` pointers to
/// NUL-terminated strings (when their count is not 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_new(
    models: *const *const c_char,
    n_models: usize,
    threshold: f32,
    session_options: *const *const c_char,
    n_options: usize,
    out: *mut *mut NeonWake,
) -> NeonStatus {
    run(|| {
        check_ptr(out, "out")?;
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(Failure::new(
                NeonStatus::InvalidArgument,
                format!("threshold must be in (0, 1], got {threshold}"),
            ));
        }
        // SAFETY: the caller's contract on `models` and `session_options`.
        let names = unsafe { strings(models, n_models, "models")? };
        // SAFETY: as above.
        let options = unsafe { parse_options(session_options, n_options)? };
        let names: Vec<String> = if names.is_empty() {
            if builtin::HEADS.is_empty() {
                return Err(Failure::new(
                    NeonStatus::InvalidArgument,
                    "this build has no built-in wake-word models: pass model paths",
                ));
            }
            builtin::HEADS.iter().map(|(n, _)| n.to_string()).collect()
        } else {
            names
        };
        let mut words = Vec::with_capacity(names.len());
        for n in &names {
            let word = builtin::wake_word(n)?;
            if words
                .iter()
                .any(|w: &neon_models::openwakeword::detector::WakeWord| w.name() == word.name())
            {
                return Err(Failure::new(
                    NeonStatus::InvalidArgument,
                    format!("model {n}: a model named `{}` is already loaded", word.name()),
                ));
            }
            words.push(word);
        }
        let names = words.iter().map(|w| c_string(w.name())).collect::<Vec<_>>();
        let count = words.len();
        let detector = WakeDetector::with_builtin_embedding(words, &options)?;
        let wake = NeonWake {
            detector,
            names,
            triggers: vec![Trigger::new(threshold, REFRACTORY); count],
            scores: vec![0.0; count],
            detections: Vec::with_capacity(count),
            samples: 0,
            error: Mutex::new(CString::default()),
        };
        let p = register(wake, Kind::Wake);
        // SAFETY: `out` is non-NULL and aligned (checked) and writable by the contract.
        unsafe { out.write(p) };
        Ok(())
    })
}

/// Feeds `n` samples (16 kHz mono int16) and computes one score per model and the
/// detections of this push (`neon_wake_scores`, `neon_wake_detections`). Push 1280 samples
/// (80 ms) at a time for one score per 80 ms as openWakeWord: a push completing no 80 ms
/// chunk repeats the previous scores, one completing several reports their maximum. The
/// first 5 chunks score 0 (warm-up). `n` may be 0; `samples` must not be NULL.
///
/// # Safety
/// `wake` must be a handle from `neon_wake_new` (a freed one is reported as
/// `NEON_STATUS_UNKNOWN_HANDLE`) not used by another thread during the call; `samples` must
/// point to `n` readable values.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_push(
    wake: *mut NeonWake,
    samples: *const i16,
    n: usize,
) -> NeonStatus {
    let body = |w: &mut NeonWake| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        let pushed = w.detector.push(samples).map(|scores| w.scores.copy_from_slice(scores));
        if let Err(e) = pushed {
            w.reset(); // the detector reset itself: start the stream over
            return Err(e.into());
        }
        w.samples += samples.len() as u64;
        w.detections.clear();
        for (model, (trigger, &score)) in w.triggers.iter_mut().zip(&w.scores).enumerate() {
            if let Some(d) = trigger.update(score, w.samples) {
                let time_s = d.end_sample as f64 / RATE as f64;
                w.detections.push(NeonDetection { model, time_s, score: d.score });
            }
        }
        Ok(())
    };
    // SAFETY: the caller's contract on `wake`.
    unsafe { on_wake_mut(wake, body) }
}

/// Copies the scores of the last push (one per model, in model order; zeros before the first
/// push) to `out` (room for `cap`) and stores their number in `*n`. With `cap` too small,
/// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
///
/// # Safety
/// `wake` as for `neon_wake_push`; `out` must be writable for `cap` values, `n` writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_scores(
    wake: *const NeonWake,
    out: *mut f32,
    cap: usize,
    n: *mut usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `wake`, `out` and `n`.
    unsafe { on_wake(wake, |w| output(&w.scores, out, cap, n)) }
}

/// Copies the detections of the last push (at most one per model) to `out` (room for `cap`)
/// and stores their number in `*n` (0 when nothing fired). With `cap` too small,
/// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
/// A buffer of `neon_wake_model_count` entries is always enough.
///
/// # Safety
/// `wake` as for `neon_wake_push`; `out` must be writable for `cap` values, `n` writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_detections(
    wake: *const NeonWake,
    out: *mut NeonDetection,
    cap: usize,
    n: *mut usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `wake`, `out` and `n`.
    unsafe { on_wake(wake, |w| output(&w.detections, out, cap, n)) }
}

/// Stores the number of models of `wake` in `*n`.
///
/// # Safety
/// `wake` as for `neon_wake_push`; `n` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_model_count(wake: *const NeonWake, n: *mut usize) -> NeonStatus {
    // SAFETY: the caller's contract on `wake` and `n`.
    unsafe { on_wake(wake, |w| store(n, w.names.len(), "n")) }
}

/// The name of model `i` (e.g. `hey_jarvis_v0.1`), owned by the handle and valid until it is
/// freed; NULL for an invalid handle or index (the reason is in `neon_last_error()`).
///
/// # Safety
/// `wake` as for `neon_wake_push`.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_model_name(wake: *const NeonWake, i: usize) -> *const c_char {
    let mut name = std::ptr::null();
    let body = |w: &NeonWake| {
        let n = w.names.get(i).ok_or_else(|| {
            Failure::new(
                NeonStatus::InvalidArgument,
                format!("model index {i} out of range ({} models)", w.names.len()),
            )
        })?;
        name = n.as_ptr();
        Ok(())
    };
    // SAFETY: the caller's contract on `wake`.
    unsafe { on_wake(wake, body) };
    name
}

/// Back to the state after construction: a new stream (times restart at 0), scores zero,
/// no detections.
///
/// # Safety
/// `wake` as for `neon_wake_push`.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_reset(wake: *mut NeonWake) -> NeonStatus {
    let body = |w: &mut NeonWake| {
        w.reset();
        Ok(())
    };
    // SAFETY: the caller's contract on `wake`.
    unsafe { on_wake_mut(wake, body) }
}

/// The message of the last failed call on `wake` ("" when none failed). Owned by the
/// handle, valid until the next call on it. NULL when `wake` is not a live handle.
///
/// # Safety
/// `wake` as for `neon_wake_push`.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_error(wake: *const NeonWake) -> *const c_char {
    // SAFETY: the caller's contract on `wake`.
    unsafe { handle_error(wake, Kind::Wake, |w| &w.error) }
}

/// Frees `wake`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
/// is not a live wake handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash.
///
/// # Safety
/// `wake` must not be in use by another thread; afterwards no string it returned is valid.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_free(wake: *mut NeonWake) -> NeonStatus {
    // SAFETY: the caller's contract on `wake`.
    unsafe { free_handle(wake, Kind::Wake) }
}

/// Opens the Moonshine model in `model_dir` (`base-en.safetensors` and `tokenizer.bin`, as
/// written by `tools/moonshine/fetch.sh`) and stores a transcriber in `*out`.
/// `session_options`: `n_options` `KEY=VALUE` strings, as `neon transcribe
/// --session-option` (NULL when 0). A transcriber owns about 82 MB of buffers besides the
/// 62 MB of weights and runs on the calling thread.
///
/// Errors: `NEON_STATUS_IO` for missing or unreadable files, `NEON_STATUS_MODEL` for
/// malformed ones, `NEON_STATUS_INVALID_ARGUMENT` for a bad option; `*out` is then left
/// unchanged and the message is in `neon_last_error()`.
///
/// # Safety
/// `model_dir` must be a NUL-terminated string, `session_options` must point to `n_options`
/// pointers to NUL-terminated strings (when `n_options` is not 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_open(
    model_dir: *const c_char,
    session_options: *const *const c_char,
    n_options: usize,
    out: *mut *mut NeonTranscriber,
) -> NeonStatus {
    run(|| {
        check_ptr(out, "out")?;
        check_ptr(model_dir, "model_dir")?;
        // SAFETY: non-NULL; the caller guarantees a NUL-terminated string.
        let dir = unsafe { CStr::from_ptr(model_dir) }
            .to_str()
            .map_err(|_| Failure::new(NeonStatus::InvalidArgument, "model_dir is not UTF-8"))?;
        // SAFETY: the caller's contract on `session_options`.
        let options = unsafe { parse_options(session_options, n_options)? };
        let transcriber = Transcriber::open(Path::new(dir), &options)?;
        let t = NeonTranscriber {
            transcriber,
            text: CString::default(),
            audio: Vec::new(),
            error: Mutex::new(CString::default()),
        };
        let p = register(t, Kind::Transcriber);
        // SAFETY: `out` is non-NULL and aligned (checked) and writable by the contract.
        unsafe { out.write(p) };
        Ok(())
    })
}

/// Transcribes `t.audio` (split at pauses into segments the encoder takes, texts joined by a
/// space) into `t.text` and copies it to `text`.
///
/// # Safety
/// As [`neon_transcribe_f32`] for `text`, `cap` and `len`.
unsafe fn transcribe(
    t: &mut NeonTranscriber,
    text: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> Result<()> {
    check_ptr(len, "len")?;
    if !(text.is_null() && cap == 0) {
        check_ptr(text, "text")?;
        check_len::<c_char>(cap, "text")?;
    }
    let mut segments = split(&t.audio, MAX_SAMPLES);
    if segments.is_empty() {
        segments.push(0..0); // no samples: one padded segment, as the CLI
    }
    let mut texts = Vec::new();
    for range in segments {
        let transcript = t.transcriber.transcribe(&t.audio[range])?;
        if !transcript.text.is_empty() {
            texts.push(transcript.text);
        }
    }
    t.text = c_string(&texts.join(" "));
    let bytes = t.text.as_bytes_with_nul();
    if cap < bytes.len() {
        // SAFETY: `len` is non-NULL and aligned (checked), writable by the contract.
        unsafe { len.write(bytes.len()) };
        if cap > 0 {
            // SAFETY: `text` is non-NULL (cap > 0) and valid for `cap` bytes (contract).
            unsafe { text.write(0) };
        }
        return Err(Failure::new(
            NeonStatus::BufferTooSmall,
            format!(
                "the text buffer holds {cap} bytes, {} are needed (the text is kept: \
                 neon_transcriber_text)",
                bytes.len()
            ),
        ));
    }
    // SAFETY: `text` is non-NULL (cap >= bytes.len() >= 1), valid for `cap` bytes (contract)
    // and cannot overlap the library's `t.text`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), text, bytes.len()) };
    // SAFETY: as above for `len`.
    unsafe { len.write(bytes.len() - 1) };
    Ok(())
}

/// Transcribes `n` samples of 16 kHz mono audio in [-1, 1] (any length: audio over 30 s is
/// cut at pauses into segments, transcribed one after another and joined with a space) and
/// copies the text, NUL-terminated, to `text` (room for `cap` bytes). On success `*len` is
/// the text's length in bytes without the NUL. When `cap` is too small the status is
/// `NEON_STATUS_BUFFER_TOO_SMALL`, `*len` is the size needed including the NUL, `text` gets
/// an empty string (when `cap` > 0) and the text stays available from
/// `neon_transcriber_text`. `text` may be NULL when `cap` is 0. Non-finite samples are
/// `NEON_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `t` must be a handle from `neon_transcriber_open` not used by another thread during the
/// call; `samples` must point to `n` readable values, `text` must be writable for `cap`
/// bytes, `len` writable.
#[no_mangle]
pub unsafe extern "C" fn neon_transcribe_f32(
    t: *mut NeonTranscriber,
    samples: *const f32,
    n: usize,
    text: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> NeonStatus {
    let body = |t: &mut NeonTranscriber| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        if let Some(i) = samples.iter().position(|x| !x.is_finite()) {
            return Err(Failure::new(
                NeonStatus::InvalidArgument,
                format!("samples[{i}] is not finite ({})", samples[i]),
            ));
        }
        t.audio.clear();
        t.audio.extend_from_slice(samples);
        // SAFETY: the caller's contract on `text`, `cap` and `len`.
        unsafe { transcribe(t, text, cap, len) }
    };
    // SAFETY: the caller's contract on `t`.
    unsafe { on_transcriber(t, body) }
}

/// `neon_transcribe_f32` on int16 samples (16 kHz mono; converted as `x / 32768`).
///
/// # Safety
/// As `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcribe_i16(
    t: *mut NeonTranscriber,
    samples: *const i16,
    n: usize,
    text: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> NeonStatus {
    let body = |t: &mut NeonTranscriber| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        t.audio.clear();
        t.audio.extend(samples.iter().map(|&v| i16_to_f32(v)));
        // SAFETY: the caller's contract on `text`, `cap` and `len`.
        unsafe { transcribe(t, text, cap, len) }
    };
    // SAFETY: the caller's contract on `t`.
    unsafe { on_transcriber(t, body) }
}

/// The text of the last successful transcription on `t`, or of the last one that did not fit
/// its buffer ("" before any). Owned by the handle, valid until the next call on it. NULL
/// when `t` is not a live handle.
///
/// # Safety
/// `t` as for `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_text(t: *const NeonTranscriber) -> *const c_char {
    if run(|| check_handle(t, Kind::Transcriber)) != NeonStatus::Ok {
        return std::ptr::null();
    }
    // SAFETY: `t` is live, hence a valid `NeonTranscriber`; no concurrent mutable use.
    unsafe { &*t }.text.as_ptr()
}

/// The message of the last failed call on `t` ("" when none failed). Owned by the handle,
/// valid until the next call on it. NULL when `t` is not a live handle.
///
/// # Safety
/// `t` as for `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_error(t: *const NeonTranscriber) -> *const c_char {
    // SAFETY: the caller's contract on `t`.
    unsafe { handle_error(t, Kind::Transcriber, |t| &t.error) }
}

/// Frees `t`; NULL is a no-op (`NEON_STATUS_OK`). Closing it again (or any pointer that is
/// not a live transcriber) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash.
///
/// # Safety
/// `t` must not be in use by another thread; afterwards no string it returned is valid.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_close(t: *mut NeonTranscriber) -> NeonStatus {
    // SAFETY: the caller's contract on `t`.
    unsafe { free_handle(t, Kind::Transcriber) }
}
