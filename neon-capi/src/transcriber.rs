//! Speech recognition: a Moonshine model behind a `neon_transcriber` handle.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use crate::i16_to_f32;
use neon_models::exec_plan::Family;
use neon_models::moonshine::segment::split;
use neon_models::moonshine::transcriber::Transcriber;
use neon_models::moonshine::MAX_SAMPLES;
use neon_runtime::Team;

use crate::args::{check_buffer, check_finite, check_ptr, input, parse_options, store};
use crate::handle::{
    free_handle, handle_error, handle_string, impl_handle, on_handle, register, Kind,
};
use crate::status::{c_string, run, Failure, NeonStatus, Result};

/// Most threads `neon_transcriber_set_threads` takes.
const MAX_THREADS: usize = 64;
/// Most threads the default (`threads` 0) uses, as `neon transcribe`.
const DEFAULT_MAX_THREADS: usize = 4;

/// A Moonshine transcriber (opaque): the model, its buffers, its threads and the last text.
pub struct NeonTranscriber {
    transcriber: Transcriber,
    /// The worker team of `neon_transcriber_set_threads` (`None`: the calling thread only).
    team: Option<Team>,
    text: CString,
    /// Reused between calls: the audio converted to f32.
    audio: Vec<f32>,
    error: CString,
}

impl_handle!(NeonTranscriber, Kind::Transcriber);

/// Opens the Moonshine model in `model_dir` (`base-en.safetensors` and `tokenizer.bin`, as
/// written by `tools/moonshine/fetch.sh`) and stores a transcriber in `*out`.
/// `session_options`: `n_options` `KEY=VALUE` strings, as `neon transcribe
/// --session-option` (NULL when 0): only `moonshine_asr.*` keys (an option of another model
/// family is refused, as by the CLI). A transcriber owns about 82 MB of buffers besides the
/// 62 MB of weights and runs on the calling thread (more threads:
/// `neon_transcriber_set_threads`).
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
        let options =
            unsafe { parse_options(session_options, n_options, &[Family::MoonshineAsr])? };
        let transcriber = Transcriber::open(Path::new(dir), &options)?;
        let t = NeonTranscriber {
            transcriber,
            team: None,
            text: CString::default(),
            audio: Vec::new(),
            error: CString::default(),
        };
        // SAFETY: `out` is checked (so `store` cannot fail after registering) and writable by
        // the contract.
        unsafe { store(out, register(t), "out") }
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
    check_buffer(text, cap, len, "text", "len")?;
    let mut segments = split(&t.audio, MAX_SAMPLES);
    if segments.is_empty() {
        segments.push(0..0); // no samples: one padded segment, as the CLI
    }
    let mut texts = Vec::new();
    for range in segments {
        let transcript = match &t.team {
            Some(team) => t.transcriber.transcribe_in(team, &t.audio[range])?,
            None => t.transcriber.transcribe(&t.audio[range])?,
        };
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

/// A sample type `neon_transcribe_*` takes: its checks and its conversion to f32.
trait Sample: Copy {
    /// Refuses samples the model cannot take.
    fn check(samples: &[Self]) -> Result<()>;
    /// The sample in [-1, 1].
    fn to_f32(self) -> f32;
}

impl Sample for f32 {
    fn check(samples: &[f32]) -> Result<()> {
        check_finite(samples, "")
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Sample for i16 {
    fn check(_: &[i16]) -> Result<()> {
        Ok(())
    }
    fn to_f32(self) -> f32 {
        i16_to_f32(self)
    }
}

/// The call of `neon_transcribe_f32` / `neon_transcribe_i16` on the handle `t`: the `n`
/// samples at `samples`, checked and converted to f32 ([`Sample`]), replace `t.audio`,
/// which is then transcribed into `text` (room for `cap` bytes; the length in `*len`).
///
/// # Safety
/// As [`neon_transcribe_f32`] for `samples`, `n`, `text`, `cap` and `len`.
unsafe fn transcribe_samples<T: Sample>(
    t: *mut NeonTranscriber,
    (samples, n): (*const T, usize),
    (text, cap, len): (*mut c_char, usize, *mut usize),
) -> NeonStatus {
    let body = |t: &mut NeonTranscriber| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        T::check(samples)?;
        t.audio.clear();
        t.audio.extend(samples.iter().map(|&v| v.to_f32()));
        // SAFETY: the caller's contract on `text`, `cap` and `len`.
        unsafe { transcribe(t, text, cap, len) }
    };
    on_handle(t, body)
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
/// `t` should be a handle from `neon_transcriber_open` (a freed one is
/// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread `NEON_STATUS_BUSY`);
/// `samples` must point to `n` readable values, `text` must be writable for `cap`
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
    // SAFETY: the caller's contract on `t`, `samples`, `text`, `cap` and `len`.
    unsafe { transcribe_samples(t, (samples, n), (text, cap, len)) }
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
    // SAFETY: the caller's contract on `t`, `samples`, `text`, `cap` and `len`.
    unsafe { transcribe_samples(t, (samples, n), (text, cap, len)) }
}

/// Sets the threads the transcriptions of `t` run on: `threads` in all, the calling thread
/// included (`threads - 1` worker threads that the handle starts now and keeps until it is
/// freed). 1 is the calling thread only, as after `neon_transcriber_open`; 0 is the default
/// of `neon transcribe`: the cores available to the process, at most 4. The text is the
/// same for any number of threads.
///
/// Errors: `NEON_STATUS_INVALID_ARGUMENT` for `threads` above 64, `NEON_STATUS_MODEL` when
/// the system refuses a thread; the handle keeps its previous threads then.
///
/// # Safety
/// `t` as for `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_set_threads(
    t: *mut NeonTranscriber,
    threads: usize,
) -> NeonStatus {
    let body = |t: &mut NeonTranscriber| {
        let n = match threads {
            0 => {
                std::thread::available_parallelism().map_or(1, |n| n.get()).min(DEFAULT_MAX_THREADS)
            }
            n if n > MAX_THREADS => {
                return Err(Failure::new(
                    NeonStatus::InvalidArgument,
                    format!("threads must be at most {MAX_THREADS} (0: the default), got {n}"),
                ))
            }
            n => n,
        };
        // Stop the old workers first (a lower count must not briefly hold both teams).
        t.team = None;
        if n > 1 {
            t.team = Some(Team::new(n).map_err(|e| {
                Failure::new(NeonStatus::Model, format!("cannot start {n} threads: {e}"))
            })?);
        }
        Ok(())
    };
    on_handle(t, body)
}

/// The number of threads the transcriptions of `t` run on (the calling thread included)
/// is stored in `*threads`.
///
/// # Safety
/// `t` as for `neon_transcribe_f32`; `threads` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_threads(
    t: *const NeonTranscriber,
    threads: *mut usize,
) -> NeonStatus {
    let body = |t: &mut NeonTranscriber| {
        let n = t.team.as_ref().map_or(1, Team::threads);
        // SAFETY: the caller's contract on `threads`.
        unsafe { store(threads, n, "threads") }
    };
    on_handle(t, body)
}

/// The text of the last successful transcription on `t`, or of the last one that did not fit
/// its buffer ("" before any). Owned by the handle, valid until the next call on it. NULL
/// when `t` is not a live handle or is busy in a call on another thread (the reason in
/// `neon_last_error()`).
///
/// # Safety
/// `t` as for `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_text(t: *const NeonTranscriber) -> *const c_char {
    handle_string(t, |t| t.text.as_ptr())
}

/// The message of the last failed call on `t` ("" when none failed). Owned by the handle,
/// valid until the next call on it. NULL when `t` is not a live handle or is busy in a
/// call on another thread (the reason in `neon_last_error()`).
///
/// # Safety
/// `t` as for `neon_transcribe_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_error(t: *const NeonTranscriber) -> *const c_char {
    handle_error(t)
}

/// Frees `t`; NULL is a no-op (`NEON_STATUS_OK`). Closing it again (or any pointer that is
/// not a live transcriber) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Closing a
/// transcriber while another thread is inside a call on it is safe: it is gone at once
/// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
/// memory is released when it returns.
///
/// # Safety
/// None beyond the pointer being a handle or not; afterwards no string it returned is
/// valid.
#[no_mangle]
pub unsafe extern "C" fn neon_transcriber_close(t: *mut NeonTranscriber) -> NeonStatus {
    free_handle(t, Kind::Transcriber)
}
