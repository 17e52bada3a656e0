//! Voice activity: Silero VAD's speech probabilities and silero-vad's speech segments
//! (`get_speech_timestamps`, decided while the audio streams in) behind a `neon_vad` handle.
//!
//! A handle owns a [`Vad`] stream (about 14 KB of buffers) and a [`SpeechSegmenter`]; the
//! prepared weights (about 1.2 MB) are shared by every live handle and freed with the last
//! one. Each push or finish replaces the handle's results (the probabilities of the windows
//! it completed, the segments it decided) in buffers the handle reuses: pushes of a steady
//! size allocate nothing after the first, and the buffers never hold more than the largest
//! push's results.

use std::ffi::{c_char, c_int, CString};
use std::sync::{Arc, Mutex, Weak};

use crate::i16_to_f32;
use neon_models::exec_plan::Family;
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{SegmentConfig, SegmentError, SpeechSegment, SpeechSegmenter};
use neon_models::vad::{SAMPLE_RATE, WINDOW};

use crate::args::{check_finite, check_ptr, input, output, parse_options, store};
use crate::handle::{free_handle, handle_error, impl_handle, on_handle, register, Kind};
use crate::status::{run, Failure, NeonStatus, Result};

/// Samples per Silero VAD window (32 ms at 16 kHz): one speech probability per window. A
/// push of `n` samples completes at most `n / NEON_VAD_WINDOW_SAMPLES + 1` windows, and a
/// finish at most one.
pub const NEON_VAD_WINDOW_SAMPLES: usize = 512;
const _: () = assert!(NEON_VAD_WINDOW_SAMPLES == WINDOW);

/// The segment rule's parameters: silero-vad's `get_speech_timestamps` (6.2.3) and its
/// defaults, which `neon_vad_config_default` fills in. Durations are converted to samples at
/// 16 samples per millisecond, as silero-vad does.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NeonVadConfig {
    /// Speech threshold, a probability in [0, 1] (default 0.5; silero-vad `threshold`): a
    /// window at or above it starts speech.
    pub threshold: f64,
    /// Silence threshold in [0, threshold]: inside speech only windows below it count as
    /// silence (silero-vad `neg_threshold`). Negative (the default, -1) means silero-vad's
    /// default, max(threshold - 0.15, 0.01).
    pub neg_threshold: f64,
    /// Shortest speech kept, in ms (default 250; silero-vad `min_speech_duration_ms`).
    pub min_speech_ms: u32,
    /// Silence that ends speech, in ms (default 100; silero-vad `min_silence_duration_ms`).
    pub min_silence_ms: u32,
    /// Padding added on each side of a segment, in ms (default 30; silero-vad
    /// `speech_pad_ms`); segments closer than twice this share the gap instead.
    pub speech_pad_ms: u32,
    /// Only silences longer than this (ms) may cut speech at `max_speech_s` (default 98;
    /// silero-vad `min_silence_at_max_speech`).
    pub min_silence_at_max_speech_ms: u32,
    /// Longest speech segment, in seconds: longer speech is cut, at a silence if it had one
    /// (silero-vad `max_speech_duration_s`). 0 or INFINITY (the default 0) means no limit.
    pub max_speech_s: f64,
    /// Non-zero (the default 1): cut over-long speech at its longest silence; 0: at the
    /// latest one long enough, silero-vad's legacy rule (silero-vad
    /// `use_max_poss_sil_at_max_speech`).
    pub use_max_poss_sil_at_max_speech: c_int,
}

/// silero-vad 6.2.3's defaults ([`SegmentConfig::DEFAULT`]), as `neon_vad_config_default`
/// fills them in. (Not an associated constant: cbindgen would write it to the header.)
const DEFAULT_CONFIG: NeonVadConfig = NeonVadConfig {
    threshold: SegmentConfig::DEFAULT.threshold,
    neg_threshold: -1.0,
    min_speech_ms: SegmentConfig::DEFAULT.min_speech_duration_ms,
    min_silence_ms: SegmentConfig::DEFAULT.min_silence_duration_ms,
    speech_pad_ms: SegmentConfig::DEFAULT.speech_pad_ms,
    min_silence_at_max_speech_ms: SegmentConfig::DEFAULT.min_silence_at_max_speech_ms,
    max_speech_s: 0.0,
    use_max_poss_sil_at_max_speech: 1,
};

impl NeonVadConfig {
    /// The segmenter's configuration these parameters stand for (not validated yet):
    /// a negative `neg_threshold` is `None`, a `max_speech_s` of 0 is infinity.
    pub fn segment_config(&self) -> SegmentConfig {
        SegmentConfig {
            threshold: self.threshold,
            // NaN is kept (and refused by the validation).
            neg_threshold: if self.neg_threshold < 0.0 { None } else { Some(self.neg_threshold) },
            min_speech_duration_ms: self.min_speech_ms,
            min_silence_duration_ms: self.min_silence_ms,
            speech_pad_ms: self.speech_pad_ms,
            max_speech_duration_s: if self.max_speech_s == 0.0 {
                f64::INFINITY
            } else {
                self.max_speech_s
            },
            min_silence_at_max_speech_ms: self.min_silence_at_max_speech_ms,
            use_max_poss_sil_at_max_speech: self.use_max_poss_sil_at_max_speech != 0,
        }
    }
}

impl Default for NeonVadConfig {
    /// silero-vad 6.2.3's defaults, as `neon_vad_config_default` fills them in.
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

/// One speech segment, padding included: `start..end` of the stream (from its start: the
/// handle's creation, the last `neon_vad_finish` or `neon_vad_reset`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NeonVadSegment {
    /// Start in seconds (`start_sample / 16000`).
    pub start_s: f64,
    /// End in seconds (`end_sample / 16000`).
    pub end_s: f64,
    /// First sample of the segment.
    pub start_sample: u64,
    /// One past its last sample (at most the samples pushed).
    pub end_sample: u64,
}

impl From<SpeechSegment> for NeonVadSegment {
    fn from(s: SpeechSegment) -> Self {
        NeonVadSegment {
            start_s: seconds(s.start),
            end_s: seconds(s.end),
            start_sample: s.start,
            end_sample: s.end,
        }
    }
}

/// Seconds of `samples` at 16 kHz (unrounded).
fn seconds(samples: u64) -> f64 {
    samples as f64 / SAMPLE_RATE as f64
}

/// A voice-activity detector (opaque): a Silero VAD stream, the segment rule and the last
/// push's results.
pub struct NeonVad {
    vad: Vad,
    segmenter: SpeechSegmenter,
    /// Samples pushed since the stream started.
    samples: u64,
    /// The probabilities of the windows the last push or finish completed.
    probabilities: Vec<f32>,
    /// The segments the last push or finish decided.
    segments: Vec<NeonVadSegment>,
    error: CString,
}

impl_handle!(NeonVad, Kind::Vad);

impl NeonVad {
    /// Back to the start of a stream, without results.
    fn reset(&mut self) {
        self.vad.reset();
        self.segmenter.reset();
        self.samples = 0;
        self.probabilities.clear();
        self.segments.clear();
    }

    /// Before a push or a finish, whatever its outcome: the last call's results go.
    fn begin(&mut self) {
        self.probabilities.clear();
        self.segments.clear();
    }

    /// Starts a push ([`begin`](Self::begin)) of the `n` samples at `samples`, returned as
    /// a slice, with room for their probabilities (one allocation at most).
    ///
    /// # Safety
    /// As [`input`].
    unsafe fn begin_push<'a, T>(&mut self, samples: *const T, n: usize) -> Result<&'a [T]> {
        self.begin();
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { input(samples, n, "samples")? };
        self.probabilities.reserve(samples.len() / WINDOW + 1);
        Ok(samples)
    }

    /// Feeds finite `samples` (results appended). A failure (not expected: the plan
    /// refusing its buffers) starts the stream over.
    fn feed(&mut self, samples: &[f32]) -> Result<()> {
        let (probabilities, segmenter, segments) =
            (&mut self.probabilities, &mut self.segmenter, &mut self.segments);
        let fed = self.vad.push(samples, |p| {
            probabilities.push(p);
            segments.extend(segmenter.push(p).map(NeonVadSegment::from));
        });
        if let Err(e) = fed {
            self.reset();
            return Err(e.into());
        }
        self.samples += samples.len() as u64;
        Ok(())
    }

    /// Ends the stream (results appended) and starts a new one, whatever happens.
    fn finish(&mut self) -> Result<()> {
        let (probabilities, segmenter, segments) =
            (&mut self.probabilities, &mut self.segmenter, &mut self.segments);
        let finished = self.vad.finish(|p| {
            probabilities.push(p);
            segments.extend(segmenter.push(p).map(NeonVadSegment::from));
        });
        let result = match finished {
            Ok(()) => match self.segmenter.finish(self.samples) {
                Ok(rest) => {
                    self.segments.extend(rest.map(NeonVadSegment::from));
                    Ok(())
                }
                Err(e) => Err(Failure::new(NeonStatus::Model, e.to_string())),
            },
            Err(e) => Err(e.into()),
        };
        self.vad.reset();
        self.segmenter.reset();
        self.samples = 0;
        if result.is_err() {
            self.probabilities.clear();
            self.segments.clear();
        }
        result
    }
}

/// The weights every live handle shares (dropped with the last handle).
static MODEL: Mutex<Weak<VadModel>> = Mutex::new(Weak::new());

/// The shared weights, prepared when no live handle holds them.
fn shared_model() -> Result<Arc<VadModel>> {
    let mut cached = MODEL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(model) = cached.upgrade() {
        return Ok(model);
    }
    let model = VadModel::builtin()?;
    *cached = Arc::downgrade(&model);
    Ok(model)
}

fn config_failure(e: SegmentError) -> Failure {
    Failure::new(NeonStatus::InvalidArgument, format!("neon_vad_config: {e}"))
}

/// Fills `*out` with the defaults (silero-vad's): threshold 0.5, neg_threshold -1 (that is,
/// max(threshold - 0.15, 0.01)), min_speech_ms 250, min_silence_ms 100, speech_pad_ms 30,
/// min_silence_at_max_speech_ms 98, max_speech_s 0 (no limit),
/// use_max_poss_sil_at_max_speech 1.
///
/// # Safety
/// `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_config_default(out: *mut NeonVadConfig) -> NeonStatus {
    // SAFETY: the caller's contract on `out`.
    run(|| unsafe { store(out, DEFAULT_CONFIG, "out") })
}

/// Creates a voice-activity detector (Silero VAD, built in) and stores it in `*out`.
///
/// `session_options`: `n_options` `KEY=VALUE` strings, as `neon vad --session-option` (NULL
/// when 0), e.g. `silero_vad.exec_plan={"network":{"impl":"portable"}}`: only
/// `silero_vad.*` keys (an option of another model family is refused). `config`: the
/// segment rule (NULL for the defaults, as `neon_vad_config_default`).
///
/// Errors: `NEON_STATUS_INVALID_ARGUMENT` for a bad option or configuration (the message
/// names the parameter); `*out` is then left unchanged and the message is in
/// `neon_last_error()`.
///
/// # Safety
/// `session_options` must point to `n_options` pointers to NUL-terminated strings (when
/// `n_options` is not 0); `config` must be NULL or readable; `out` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_new(
    session_options: *const *const c_char,
    n_options: usize,
    config: *const NeonVadConfig,
    out: *mut *mut NeonVad,
) -> NeonStatus {
    run(|| {
        check_ptr(out, "out")?;
        let config = if config.is_null() {
            DEFAULT_CONFIG
        } else {
            check_ptr(config, "config")?;
            // SAFETY: non-NULL and aligned (checked), readable by the caller's contract.
            unsafe { config.read() }
        };
        let segmenter = SpeechSegmenter::new(&config.segment_config()).map_err(config_failure)?;
        // SAFETY: the caller's contract on `session_options`.
        let options = unsafe { parse_options(session_options, n_options, &[Family::SileroVad])? };
        let vad = Vad::new(shared_model()?, options.backend(Family::SileroVad, "network"))?;
        let v = NeonVad {
            vad,
            segmenter,
            samples: 0,
            probabilities: Vec::new(),
            segments: Vec::new(),
            error: CString::default(),
        };
        // SAFETY: `out` is checked (so `store` cannot fail after registering) and writable by
        // the contract.
        unsafe { store(out, register(v), "out") }
    })
}

/// Feeds `n` samples of 16 kHz mono audio in [-1, 1], in pieces of any size (`n` may be 0;
/// `samples` must not be NULL). Afterwards `neon_vad_probabilities` gives the speech
/// probability of each 512-sample window this push completed (the same for any split of
/// the audio into pushes) and `neon_vad_segments` the segments it decided; both replace the
/// previous push's. A NaN or infinite sample is `NEON_STATUS_INVALID_ARGUMENT`: nothing of
/// this push is used (the stream is as before it). After a failed push there are no
/// results.
///
/// # Safety
/// `vad` should be a handle from `neon_vad_new` (a freed one is reported as
/// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread as
/// `NEON_STATUS_BUSY`); `samples` must point to `n` readable values.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_push_f32(
    vad: *mut NeonVad,
    samples: *const f32,
    n: usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `vad` and `samples`.
    unsafe {
        push(vad, samples, n, |v, samples| {
            check_finite(samples, ": nothing was pushed")?;
            v.feed(samples)
        })
    }
}

/// `neon_vad_push_f32` on int16 samples (16 kHz mono; converted as `x / 32768`, without
/// allocating).
///
/// # Safety
/// As `neon_vad_push_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_push_i16(
    vad: *mut NeonVad,
    samples: *const i16,
    n: usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `vad` and `samples`.
    unsafe {
        push(vad, samples, n, |v, samples| {
            let mut floats = [0.0f32; WINDOW];
            for piece in samples.chunks(WINDOW) {
                let floats = &mut floats[..piece.len()];
                floats.iter_mut().zip(piece).for_each(|(f, &s)| *f = i16_to_f32(s));
                v.feed(floats)?;
            }
            Ok(())
        })
    }
}

/// A push on the handle `vad` of the `n` samples at `samples`
/// ([`begin_push`](NeonVad::begin_push)), then `feed(vad, samples)`: the conversion and
/// checks of `neon_vad_push_f32` or `neon_vad_push_i16`.
///
/// # Safety
/// As `neon_vad_push_f32`, `samples` pointing to `n` readable `T`.
unsafe fn push<T>(
    vad: *mut NeonVad,
    samples: *const T,
    n: usize,
    feed: impl FnOnce(&mut NeonVad, &[T]) -> Result<()>,
) -> NeonStatus {
    let body = |v: &mut NeonVad| {
        // SAFETY: the caller's contract on `samples`.
        let samples = unsafe { v.begin_push(samples, n)? };
        feed(v, samples)
    };
    on_handle(vad, body)
}

/// Ends the stream: a partial last window is zero-padded to 512 samples (as silero-vad pads
/// a clip's end) and a segment still open ends with the stream (its length is the samples
/// pushed). The probability of that last window and the remaining segments replace the
/// results, as a push's. The handle then starts a new stream (as after `neon_vad_reset`,
/// times from 0 again) while keeping these results until the next call that changes them.
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_finish(vad: *mut NeonVad) -> NeonStatus {
    let body = |v: &mut NeonVad| {
        v.begin();
        v.finish()
    };
    on_handle(vad, body)
}

/// Copies the speech probabilities (in [0, 1], one per 512-sample window, in order) of the
/// windows the last push or finish completed to `out` (room for `cap`) and stores their
/// number in `*n` (0 when it completed none). With `cap` too small,
/// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
/// After a push of `k` samples, `k / NEON_VAD_WINDOW_SAMPLES + 1` values are always enough.
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`; `out` must be writable for `cap` values, `n` writable.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_probabilities(
    vad: *const NeonVad,
    out: *mut f32,
    cap: usize,
    n: *mut usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `out` and `n`.
    on_handle(vad, |v| unsafe { output(&v.probabilities, out, cap, n) })
}

/// Copies the speech segments the last push or finish decided (final: each is reported
/// once, in order, as soon as nothing that follows can change it, about 130 ms after its
/// end with the defaults) to `out` (room for `cap`) and stores their number in `*n`
/// (usually 0). With `cap` too small, `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set);
/// `out` may be NULL when `cap` is 0. At most 3 per window completed, plus 2 at a finish.
/// Together, a stream's segments are silero-vad's `get_speech_timestamps` on the whole
/// audio.
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`; `out` must be writable for `cap` values, `n` writable.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_segments(
    vad: *const NeonVad,
    out: *mut NeonVadSegment,
    cap: usize,
    n: *mut usize,
) -> NeonStatus {
    // SAFETY: the caller's contract on `out` and `n`.
    on_handle(vad, |v| unsafe { output(&v.segments, out, cap, n) })
}

/// Whether speech is in progress: `*speaking` is 1 while a run of speech is open (it
/// started, and has neither ended nor been dropped as too short), else 0. `*since_s` is
/// then the start (in seconds, padding included) its segment will have if it is kept, else
/// 0. A segment that has ended can still be waiting to be reported (`*speaking` is already
/// 0).
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`; `speaking` and `since_s` must be writable.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_speaking(
    vad: *const NeonVad,
    speaking: *mut c_int,
    since_s: *mut f64,
) -> NeonStatus {
    let body = |v: &mut NeonVad| {
        check_ptr(speaking, "speaking")?;
        check_ptr(since_s, "since_s")?;
        let open = v.segmenter.open_segment().map(|s| s.start);
        // SAFETY: both are non-NULL and aligned (checked), writable by the contract.
        unsafe {
            speaking.write(c_int::from(open.is_some()));
            since_s.write(open.map_or(0.0, seconds));
        }
        Ok(())
    };
    on_handle(vad, body)
}

/// Back to the start of a stream (times restart at 0), without results: the pending
/// samples, the network's state and an open segment are dropped.
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_reset(vad: *mut NeonVad) -> NeonStatus {
    let body = |v: &mut NeonVad| {
        v.reset();
        Ok(())
    };
    on_handle(vad, body)
}

/// The message of the last failed call on `vad` ("" when none failed). Owned by the
/// handle, valid until the next call on it. NULL when `vad` is not a live handle or is
/// busy in a call on another thread (the reason in `neon_last_error()`).
///
/// # Safety
/// `vad` as for `neon_vad_push_f32`.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_error(vad: *const NeonVad) -> *const c_char {
    handle_error(vad)
}

/// Frees `vad`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
/// is not a live VAD handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Freeing a
/// handle while another thread is inside a call on it is safe: the handle is gone at once
/// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
/// memory is released when it returns.
///
/// # Safety
/// None beyond the pointer being a handle or not; afterwards no string it returned is
/// valid.
#[no_mangle]
pub unsafe extern "C" fn neon_vad_free(vad: *mut NeonVad) -> NeonStatus {
    free_handle(vad, Kind::Vad)
}
