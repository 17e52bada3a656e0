//! Wake-word detection behind a `neon_wake` handle: openWakeWord models (`neon_wake_new`,
//! `neon_wake_new_shared`) or microWakeWord models (`neon_wake_new_micro`, the engine in
//! `wake_micro`). Every other `neon_wake_*` function works the same on both engines: one
//! push, scores and detections loop serves either.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use neon_models::exec_plan::Family;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::{SharedEmbedding, WakeWord};
use neon_models::openwakeword::selection::{builtin_embedding, WakeDetector};
use neon_models::openwakeword::session::WakeSession;
use neon_models::openwakeword::trigger::Trigger;
use neon_models::Error;

use crate::args::{check_ptr, input, output, parse_options, store, strings};
use crate::handle::{
    free_handle, handle_error, impl_handle, on_handle, register, register_shared, shared_handle,
    Kind,
};
use crate::status::{c_string, run, Failure, NeonStatus, Result};
use crate::wake_micro::MicroStream;
use crate::RATE;

/// Samples during which a model cannot fire again after a detection (1 s, as `neon wake`),
/// for both engines.
pub(crate) const REFRACTORY: u64 = RATE;

/// One wake-word detection.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NeonDetection {
    /// Index of the model (as for `neon_wake_model_name`).
    pub model: usize,
    /// End of the audio that produced the score, in seconds since the stream started (or
    /// since the last `neon_wake_reset`).
    pub time_s: f64,
    /// The score that crossed the threshold (microWakeWord: the probability, rounded to
    /// f32, that was above the model's cutoff).
    pub score: f32,
}

impl NeonDetection {
    /// Model `model`'s detection at the end of the audio's sample `end_sample` (16 kHz).
    pub(crate) fn new(model: usize, end_sample: u64, score: f32) -> Self {
        NeonDetection { model, time_s: end_sample as f64 / RATE as f64, score }
    }
}

/// The detector behind a wake handle.
pub(crate) enum Engine {
    /// openWakeWord models with their triggers (`neon_wake_new`, `neon_wake_new_shared`).
    OpenWakeWord(WakeSession),
    /// microWakeWord models (`neon_wake_new_micro`; boxed: the frontend makes it about 1.2 KB).
    Micro(Box<MicroStream>),
}

/// A wake-word detector (opaque): the models, their triggers and the last push's results.
pub struct NeonWake {
    engine: Engine,
    names: Vec<CString>,
    detections: Vec<NeonDetection>,
    error: CString,
}

impl NeonWake {
    /// Back to the state after construction.
    fn reset(&mut self) {
        match &mut self.engine {
            Engine::OpenWakeWord(session) => session.reset(),
            Engine::Micro(stream) => stream.reset(),
        }
        self.detections.clear();
    }

    /// The scores of the last push, one per model.
    fn scores(&self) -> &[f32] {
        match &self.engine {
            Engine::OpenWakeWord(session) => session.scores(),
            Engine::Micro(stream) => stream.scores(),
        }
    }
}

/// Registers a wake handle over `engine`, whose models are named `names` in order, and
/// stores it in `*out`.
///
/// # Safety
/// `out`, when non-NULL and aligned, must be writable.
pub(crate) unsafe fn register_wake<'a>(
    engine: Engine,
    names: impl Iterator<Item = &'a str>,
    out: *mut *mut NeonWake,
) -> Result<()> {
    check_ptr(out, "out")?;
    let names: Vec<CString> = names.map(c_string).collect();
    let wake = NeonWake {
        engine,
        detections: Vec::with_capacity(names.len()),
        names,
        error: CString::default(),
    };
    // SAFETY: `out` is checked (so `store` cannot fail after registering) and writable by
    // the contract.
    unsafe { store(out, register(wake), "out") }
}

/// The models of `n_models` names or paths at `models`, each read by `load`, or every
/// built-in model (`builtin`, in its order) for none; two models of one name (`name`) are
/// refused.
///
/// # Safety
/// As `neon_wake_new` for `models` and `n_models`.
pub(crate) unsafe fn load_words<'a, W>(
    models: *const *const c_char,
    n_models: usize,
    builtin: impl IntoIterator<Item = &'a str>,
    load: impl Fn(&str) -> std::result::Result<W, Error>,
    name: impl Fn(&W) -> &str,
) -> Result<Vec<W>> {
    // SAFETY: the caller's contract on `models`.
    let names = unsafe { strings(models, n_models, "models")? };
    let names: Vec<String> =
        if names.is_empty() { builtin.into_iter().map(str::to_string).collect() } else { names };
    if names.is_empty() {
        return Err(Failure::new(
            NeonStatus::InvalidArgument,
            "this build has no built-in wake-word models: pass model paths",
        ));
    }
    let mut words: Vec<W> = Vec::with_capacity(names.len());
    for n in &names {
        let word = load(n)?;
        if words.iter().any(|w| name(w) == name(&word)) {
            return Err(Failure::new(
                NeonStatus::InvalidArgument,
                format!("model {n}: a model named `{}` is already loaded", name(&word)),
            ));
        }
        words.push(word);
    }
    Ok(words)
}

impl_handle!(NeonWake, Kind::Wake);

/// Wake-word models loaded once (opaque, immutable): the speech-embedding network and the
/// heads, shared by every wake handle created from it with `neon_wake_new_shared`.
pub struct NeonWakeModels {
    embedding: SharedEmbedding,
    words: Vec<WakeWord>,
}

/// The models of `n_models` names or paths at `models` (every built-in model for none), with
/// the built-in embedding network, for a handle to be stored in `*out`: `out` is checked
/// first, so nothing is loaded for a bad one.
///
/// # Safety
/// As `neon_wake_new` for `models` and `n_models`.
unsafe fn load_models<T>(
    models: *const *const c_char,
    n_models: usize,
    out: *mut *mut T,
) -> Result<NeonWakeModels> {
    check_ptr(out, "out")?;
    let heads = builtin::HEADS.iter().map(|(n, _)| *n);
    // SAFETY: the caller's contract on `models`.
    let words = unsafe { load_words(models, n_models, heads, builtin::wake_word, WakeWord::name)? };
    Ok(NeonWakeModels { embedding: builtin_embedding()?, words })
}

/// A wake handle over `models` (sharing its weights) with `threshold` and the session
/// options at `session_options`, registered and stored in `*out`.
///
/// # Safety
/// As `neon_wake_new` for `session_options`, `n_options` and `out`.
unsafe fn new_wake(
    models: &NeonWakeModels,
    threshold: f32,
    session_options: *const *const c_char,
    n_options: usize,
    out: *mut *mut NeonWake,
) -> Result<()> {
    check_ptr(out, "out")?;
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(Failure::new(
            NeonStatus::InvalidArgument,
            format!("threshold must be in (0, 1], got {threshold}"),
        ));
    }
    // SAFETY: the caller's contract on `session_options`.
    let options = unsafe { parse_options(session_options, n_options, &[Family::OpenWakeWord])? };
    let detector =
        WakeDetector::new(Arc::clone(&models.embedding), models.words.clone(), &options)?;
    let session = WakeSession::new(detector, Trigger::new(threshold, REFRACTORY));
    let names = models.words.iter().map(WakeWord::name);
    // SAFETY: the caller's contract on `out`.
    unsafe { register_wake(Engine::OpenWakeWord(session), names, out) }
}

/// Creates a wake-word detector with its own copy of the weights and stores it in `*out`
/// (to run many detectors over one copy, see `neon_wake_models_open`).
///
/// `models`: `n_models` built-in model names (`hey_jarvis`, `hey_jarvis_v0.1`, `alexa`, ...)
/// or paths to converted safetensors heads (named after the file stem; names must be
/// unique); `n_models` 0 (with `models` NULL or not) loads every built-in model.
/// `threshold`: the score, in (0, 1], at or above which a model fires (0.5 is openWakeWord's
/// default); a model cannot fire again within 1 s of a detection. `session_options`:
/// `n_options` `KEY=VALUE` strings, as `neon wake --session-option` (NULL when 0): only
/// `openwakeword.*` keys (an option of another model family is refused, as by the CLI).
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
        // SAFETY: the caller's contract on `models`.
        let models = unsafe { load_models(models, n_models, out)? };
        // SAFETY: the caller's contract on `session_options` and `out`.
        unsafe { new_wake(&models, threshold, session_options, n_options, out) }
    })
}

/// Loads wake-word models once, to be shared by any number of detectors
/// (`neon_wake_new_shared`), and stores them in `*out`. `models` and `n_models` as for
/// `neon_wake_new` (0: every built-in model).
///
/// The weights (the speech-embedding network, about 1.3 MB prepared, and the heads) are
/// held once, by reference count: each detector created from the handle adds only its own
/// buffers (about 250 KB with the built-in models), and the weights go when the models
/// handle and the last detector using them are freed, in any order. The handle is
/// immutable: any number of threads may use it at once.
///
/// Errors: as `neon_wake_new`; `*out` is then left unchanged.
///
/// # Safety
/// `models` must point to `n_models` pointers to NUL-terminated strings (when `n_models` is
/// not 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_models_open(
    models: *const *const c_char,
    n_models: usize,
    out: *mut *mut NeonWakeModels,
) -> NeonStatus {
    run(|| {
        // SAFETY: the caller's contract on `models`.
        let models = unsafe { load_models(models, n_models, out)? };
        // SAFETY: `out` is checked (so `store` cannot fail after registering) and writable by
        // the contract.
        unsafe { store(out, register_shared(models, Kind::WakeModels), "out") }
    })
}

/// Creates a wake-word detector over the shared weights of `models` (from
/// `neon_wake_models_open`) and stores it in `*out`; `threshold` and `session_options` as
/// for `neon_wake_new`. The detector scores as one from `neon_wake_new` with the same
/// models, bit for bit, and is used and freed the same way; it keeps the weights alive,
/// so `models` may be freed first.
///
/// Errors: `NEON_STATUS_UNKNOWN_HANDLE` when `models` is not a live models handle; as
/// `neon_wake_new` for the threshold and options. `*out` is then left unchanged.
///
/// # Safety
/// `session_options` must point to `n_options` pointers to NUL-terminated strings (when
/// `n_options` is not 0); `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_new_shared(
    models: *const NeonWakeModels,
    threshold: f32,
    session_options: *const *const c_char,
    n_options: usize,
    out: *mut *mut NeonWake,
) -> NeonStatus {
    run(|| {
        let models = shared_handle(models, Kind::WakeModels)?;
        // SAFETY: the caller's contract on `session_options` and `out`.
        unsafe { new_wake(&models, threshold, session_options, n_options, out) }
    })
}

/// Frees the models handle `models`; NULL is a no-op (`NEON_STATUS_OK`), a pointer that is
/// not a live models handle `NEON_STATUS_UNKNOWN_HANDLE`. Detectors created from it stay
/// valid: they hold the weights, which go with the last of them.
///
/// # Safety
/// None beyond the pointer being a handle or not.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_models_free(models: *mut NeonWakeModels) -> NeonStatus {
    free_handle(models, Kind::WakeModels)
}

/// Feeds `n` samples (16 kHz mono int16) and computes one score per model and the
/// detections of this push (`neon_wake_scores`, `neon_wake_detections`). Push 1280 samples
/// (80 ms) at a time for one score per 80 ms as openWakeWord: a push completing no 80 ms
/// chunk repeats the previous scores, one completing several reports their maximum. The
/// first 5 chunks score 0 (warm-up). A microWakeWord handle (`neon_wake_new_micro`) takes
/// pushes of any size alike. `n` may be 0; `samples` must not be NULL.
///
/// # Safety
/// `wake` should be a handle from `neon_wake_new` (a freed one is reported as
/// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread as
/// `NEON_STATUS_BUSY`); `samples` must point to `n` readable values.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_push(
    wake: *mut NeonWake,
    samples: *const i16,
    n: usize,
) -> NeonStatus {
    let body = |w: &mut NeonWake| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        w.detections.clear();
        // On an error the engine starts the stream over.
        match &mut w.engine {
            Engine::OpenWakeWord(session) => {
                session.push(samples)?;
                let found = session.detections().iter();
                w.detections
                    .extend(found.map(|d| NeonDetection::new(d.model, d.end_sample, d.score)));
            }
            Engine::Micro(stream) => stream.push(samples, &mut w.detections)?,
        }
        Ok(())
    };
    on_handle(wake, body)
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
    // SAFETY: the caller's contract on `out` and `n`.
    on_handle(wake, |w| unsafe { output(w.scores(), out, cap, n) })
}

/// Copies the detections of the last push (at most one per model; for a microWakeWord
/// handle, one per model and second of audio pushed) to `out` (room for `cap`) and stores
/// their number in `*n` (0 when nothing fired). With `cap` too small,
/// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
/// A buffer of `neon_wake_model_count` entries is always enough for pushes of up to 1 s.
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
    // SAFETY: the caller's contract on `out` and `n`.
    on_handle(wake, |w| unsafe { output(&w.detections, out, cap, n) })
}

/// Stores the number of models of `wake` in `*n`.
///
/// # Safety
/// `wake` as for `neon_wake_push`; `n` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_model_count(wake: *const NeonWake, n: *mut usize) -> NeonStatus {
    // SAFETY: the caller's contract on `n`.
    on_handle(wake, |w| unsafe { store(n, w.names.len(), "n") })
}

/// The name of model `i` (e.g. `hey_jarvis_v0.1`), owned by the handle and valid until it is
/// freed; NULL for an invalid handle or index, or a handle busy in a call on another
/// thread (the reason is in `neon_last_error()`).
///
/// # Safety
/// `wake` as for `neon_wake_push`.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_model_name(wake: *const NeonWake, i: usize) -> *const c_char {
    let mut name = std::ptr::null();
    let body = |w: &mut NeonWake| {
        let n = w.names.get(i).ok_or_else(|| {
            Failure::new(
                NeonStatus::InvalidArgument,
                format!("model index {i} out of range ({} models)", w.names.len()),
            )
        })?;
        name = n.as_ptr();
        Ok(())
    };
    on_handle(wake, body);
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
    on_handle(wake, body)
}

/// The message of the last failed call on `wake` ("" when none failed). Owned by the
/// handle, valid until the next call on it. NULL when `wake` is not a live handle or is
/// busy in a call on another thread (the reason in `neon_last_error()`).
///
/// # Safety
/// `wake` as for `neon_wake_push`.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_error(wake: *const NeonWake) -> *const c_char {
    handle_error(wake)
}

/// Frees `wake`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
/// is not a live wake handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Freeing a
/// handle while another thread is inside a call on it is safe: the handle is gone at once
/// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
/// memory is released when it returns.
///
/// # Safety
/// None beyond the pointer being a handle or not; afterwards no string it returned is
/// valid.
#[no_mangle]
pub unsafe extern "C" fn neon_wake_free(wake: *mut NeonWake) -> NeonStatus {
    free_handle(wake, Kind::Wake)
}
