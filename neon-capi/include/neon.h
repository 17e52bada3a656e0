/* neon C API: wake-word detection (openWakeWord, microWakeWord), Moonshine speech recognition and Silero VAD.
 * Generated from neon-capi/src/ by cbindgen (neon-capi/tests/header.rs); do not edit. */

#ifndef NEON_H
#define NEON_H

#include <stddef.h>
#include <stdint.h>

// Samples per Silero VAD window (32 ms at 16 kHz): one speech probability per window. A
// push of `n` samples completes at most `n / NEON_VAD_WINDOW_SAMPLES + 1` windows, and a
// finish at most one.
#define NEON_VAD_WINDOW_SAMPLES 512

// The result of every call.
typedef enum {
  // Success.
  NEON_STATUS_OK = 0,
  // A required pointer was NULL.
  NEON_STATUS_NULL_POINTER = 1,
  // A pointer was not aligned for its type (e.g. an `int16_t *` at an odd address).
  NEON_STATUS_MISALIGNED_POINTER = 2,
  // An argument is out of range or malformed: a length, a threshold, an unknown model name,
  // a bad session option or VAD configuration, a string that is not UTF-8, non-finite
  // samples.
  NEON_STATUS_INVALID_ARGUMENT = 3,
  // A model or weights file is malformed or cannot run.
  NEON_STATUS_MODEL = 4,
  // A file could not be read.
  NEON_STATUS_IO = 5,
  // An output buffer is too small; the size needed was stored.
  NEON_STATUS_BUFFER_TOO_SMALL = 6,
  // The handle is not live: already freed (use after free), never created, or of
  // another kind.
  NEON_STATUS_UNKNOWN_HANDLE = 7,
  // A panic inside the library was caught (a bug: please report it with the message,
  // which is in `neon_last_error()`; nothing is printed).
  NEON_STATUS_PANIC = 8,
  // The handle is in use by a call on another thread (one call at a time per handle);
  // nothing was done and the handle is unchanged (its error message too: the reason is
  // in the calling thread's `neon_last_error()`). Retry later, or give each thread its
  // own handle.
  NEON_STATUS_BUSY = 9,
} neon_status;

// A Moonshine transcriber (opaque): the model, its buffers, its threads and the last text.
typedef struct neon_transcriber neon_transcriber;

// A voice-activity detector (opaque): a Silero VAD stream, the segment rule and the last
// push's results.
typedef struct neon_vad neon_vad;

// A wake-word detector (opaque): the models, their triggers and the last push's results.
typedef struct neon_wake neon_wake;

// Wake-word models loaded once (opaque, immutable): the speech-embedding network and the
// heads, shared by every wake handle created from it with `neon_wake_new_shared`.
typedef struct neon_wake_models neon_wake_models;

// One wake-word detection.
typedef struct {
  // Index of the model (as for `neon_wake_model_name`).
  size_t model;
  // End of the audio that produced the score, in seconds since the stream started (or
  // since the last `neon_wake_reset`).
  double time_s;
  // The score that crossed the threshold (microWakeWord: the probability, rounded to
  // f32, that was above the model's cutoff).
  float score;
} neon_detection;

// The segment rule's parameters: silero-vad's `get_speech_timestamps` (6.2.3) and its
// defaults, which `neon_vad_config_default` fills in. Durations are converted to samples at
// 16 samples per millisecond, as silero-vad does.
typedef struct {
  // Speech threshold, a probability in [0, 1] (default 0.5; silero-vad `threshold`): a
  // window at or above it starts speech.
  double threshold;
  // Silence threshold in [0, threshold]: inside speech only windows below it count as
  // silence (silero-vad `neg_threshold`). Negative (the default, -1) means silero-vad's
  // default, max(threshold - 0.15, 0.01).
  double neg_threshold;
  // Shortest speech kept, in ms (default 250; silero-vad `min_speech_duration_ms`).
  uint32_t min_speech_ms;
  // Silence that ends speech, in ms (default 100; silero-vad `min_silence_duration_ms`).
  uint32_t min_silence_ms;
  // Padding added on each side of a segment, in ms (default 30; silero-vad
  // `speech_pad_ms`); segments closer than twice this share the gap instead.
  uint32_t speech_pad_ms;
  // Only silences longer than this (ms) may cut speech at `max_speech_s` (default 98;
  // silero-vad `min_silence_at_max_speech`).
  uint32_t min_silence_at_max_speech_ms;
  // Longest speech segment, in seconds: longer speech is cut, at a silence if it had one
  // (silero-vad `max_speech_duration_s`). 0 or INFINITY (the default 0) means no limit.
  double max_speech_s;
  // Non-zero (the default 1): cut over-long speech at its longest silence; 0: at the
  // latest one long enough, silero-vad's legacy rule (silero-vad
  // `use_max_poss_sil_at_max_speech`).
  int use_max_poss_sil_at_max_speech;
} neon_vad_config;

// One speech segment, padding included: `start..end` of the stream (from its start: the
// handle's creation, the last `neon_vad_finish` or `neon_vad_reset`).
typedef struct {
  // Start in seconds (`start_sample / 16000`).
  double start_s;
  // End in seconds (`end_sample / 16000`).
  double end_s;
  // First sample of the segment.
  uint64_t start_sample;
  // One past its last sample (at most the samples pushed).
  uint64_t end_sample;
} neon_vad_segment;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The message of the last failed call on the calling thread ("" when none failed yet).
// Owned by the library; valid until the next failing call on this thread. Never NULL.
const char *neon_last_error(void);

// A short English description of a status code (a `neon_status` value; a static string,
// never NULL; "unknown status" for a value that is not one).
const char *neon_status_string(int status);

// Creates a wake-word detector with its own copy of the weights and stores it in `*out`
// (to run many detectors over one copy, see `neon_wake_models_open`).
//
// `models`: `n_models` built-in model names (`hey_jarvis`, `hey_jarvis_v0.1`, `alexa`, ...)
// or paths to converted safetensors heads (named after the file stem; names must be
// unique); `n_models` 0 (with `models` NULL or not) loads every built-in model.
// `threshold`: the score, in (0, 1], at or above which a model fires (0.5 is openWakeWord's
// default); a model cannot fire again within 1 s of a detection. `session_options`:
// `n_options` `KEY=VALUE` strings, as `neon wake --session-option` (NULL when 0): only
// `openwakeword.*` keys (an option of another model family is refused, as by the CLI).
//
// Errors: `NEON_STATUS_INVALID_ARGUMENT` for an unknown model, a bad option or threshold,
// `NEON_STATUS_IO` / `NEON_STATUS_MODEL` for an unreadable or malformed head file; `*out`
// is then left unchanged and the message is in `neon_last_error()`.
//
// # Safety
// `models` and `session_options` must point to `n_models` / `n_options` pointers to
// NUL-terminated strings (when their count is not 0); `out` must be writable.
neon_status neon_wake_new(const char *const *models,
                          size_t n_models,
                          float threshold,
                          const char *const *session_options,
                          size_t n_options,
                          neon_wake **out);

// Loads wake-word models once, to be shared by any number of detectors
// (`neon_wake_new_shared`), and stores them in `*out`. `models` and `n_models` as for
// `neon_wake_new` (0: every built-in model).
//
// The weights (the speech-embedding network, about 1.3 MB prepared, and the heads) are
// held once, by reference count: each detector created from the handle adds only its own
// buffers (about 250 KB with the built-in models), and the weights go when the models
// handle and the last detector using them are freed, in any order. The handle is
// immutable: any number of threads may use it at once.
//
// Errors: as `neon_wake_new`; `*out` is then left unchanged.
//
// # Safety
// `models` must point to `n_models` pointers to NUL-terminated strings (when `n_models` is
// not 0); `out` must be writable.
neon_status neon_wake_models_open(const char *const *models,
                                  size_t n_models,
                                  neon_wake_models **out);

// Creates a wake-word detector over the shared weights of `models` (from
// `neon_wake_models_open`) and stores it in `*out`; `threshold` and `session_options` as
// for `neon_wake_new`. The detector scores as one from `neon_wake_new` with the same
// models, bit for bit, and is used and freed the same way; it keeps the weights alive,
// so `models` may be freed first.
//
// Errors: `NEON_STATUS_UNKNOWN_HANDLE` when `models` is not a live models handle; as
// `neon_wake_new` for the threshold and options. `*out` is then left unchanged.
//
// # Safety
// `session_options` must point to `n_options` pointers to NUL-terminated strings (when
// `n_options` is not 0); `out` must be writable.
neon_status neon_wake_new_shared(const neon_wake_models *models,
                                 float threshold,
                                 const char *const *session_options,
                                 size_t n_options,
                                 neon_wake **out);

// Frees the models handle `models`; NULL is a no-op (`NEON_STATUS_OK`), a pointer that is
// not a live models handle `NEON_STATUS_UNKNOWN_HANDLE`. Detectors created from it stay
// valid: they hold the weights, which go with the last of them.
//
// # Safety
// None beyond the pointer being a handle or not.
neon_status neon_wake_models_free(neon_wake_models *models);

// Feeds `n` samples (16 kHz mono int16) and computes one score per model and the
// detections of this push (`neon_wake_scores`, `neon_wake_detections`). Push 1280 samples
// (80 ms) at a time for one score per 80 ms as openWakeWord: a push completing no 80 ms
// chunk repeats the previous scores, one completing several reports their maximum. The
// first 5 chunks score 0 (warm-up). A microWakeWord handle (`neon_wake_new_micro`) takes
// pushes of any size alike. `n` may be 0; `samples` must not be NULL.
//
// # Safety
// `wake` should be a handle from `neon_wake_new` (a freed one is reported as
// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread as
// `NEON_STATUS_BUSY`); `samples` must point to `n` readable values.
neon_status neon_wake_push(neon_wake *wake, const int16_t *samples, size_t n);

// Copies the scores of the last push (one per model, in model order; zeros before the first
// push) to `out` (room for `cap`) and stores their number in `*n`. With `cap` too small,
// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
//
// # Safety
// `wake` as for `neon_wake_push`; `out` must be writable for `cap` values, `n` writable.
neon_status neon_wake_scores(const neon_wake *wake, float *out, size_t cap, size_t *n);

// Copies the detections of the last push (at most one per model; for a microWakeWord
// handle, one per model and second of audio pushed) to `out` (room for `cap`) and stores
// their number in `*n` (0 when nothing fired). With `cap` too small,
// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
// A buffer of `neon_wake_model_count` entries is always enough for pushes of up to 1 s.
//
// # Safety
// `wake` as for `neon_wake_push`; `out` must be writable for `cap` values, `n` writable.
neon_status neon_wake_detections(const neon_wake *wake, neon_detection *out, size_t cap, size_t *n);

// Stores the number of models of `wake` in `*n`.
//
// # Safety
// `wake` as for `neon_wake_push`; `n` must be writable.
neon_status neon_wake_model_count(const neon_wake *wake, size_t *n);

// The name of model `i` (e.g. `hey_jarvis_v0.1`), owned by the handle and valid until it is
// freed; NULL for an invalid handle or index, or a handle busy in a call on another
// thread (the reason is in `neon_last_error()`).
//
// # Safety
// `wake` as for `neon_wake_push`.
const char *neon_wake_model_name(const neon_wake *wake, size_t i);

// Back to the state after construction: a new stream (times restart at 0), scores zero,
// no detections.
//
// # Safety
// `wake` as for `neon_wake_push`.
neon_status neon_wake_reset(neon_wake *wake);

// The message of the last failed call on `wake` ("" when none failed). Owned by the
// handle, valid until the next call on it. NULL when `wake` is not a live handle or is
// busy in a call on another thread (the reason in `neon_last_error()`).
//
// # Safety
// `wake` as for `neon_wake_push`.
const char *neon_wake_error(const neon_wake *wake);

// Frees `wake`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
// is not a live wake handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Freeing a
// handle while another thread is inside a call on it is safe: the handle is gone at once
// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
// memory is released when it returns.
//
// # Safety
// None beyond the pointer being a handle or not; afterwards no string it returned is
// valid.
neon_status neon_wake_free(neon_wake *wake);

// Creates a microWakeWord detector and stores it in `*out`. It is a `neon_wake` handle:
// `neon_wake_push`, `neon_wake_scores`, `neon_wake_detections`, `neon_wake_model_count`,
// `neon_wake_model_name`, `neon_wake_reset`, `neon_wake_error` and `neon_wake_free` work on
// it as on one from `neon_wake_new`.
//
// `models`: `n_models` built-in model names (`alexa`, `hey_jarvis`, `hey_mycroft`,
// `okay_nabu`) or paths to a user's model: its `.tflite` (with the `.json` of the same stem
// beside it, when there is one) or its `.json`; a model is named after its file stem
// (names must be unique). `n_models` 0 (with `models` NULL or not) loads every built-in
// model.
//
// The models run as pymicro-wakeword 2.5.0 runs them: a step every N feature frames of
// 10 ms (N from the model's input, 3 for the built-in models: a step per 30 ms of audio,
// whatever the push sizes), and a model detects when the mean of its last
// `sliding_window_size` outputs is strictly above its `probability_cutoff` (both from its
// JSON: 0.85 to 0.97 for the built-in models; no threshold argument). A detection is
// reported when the model detects and has not fired within the last 2 s of audio
// (wyoming-microwakeword's default: a decision stays positive for up to 1.2 s of an
// utterance), with the probability as its score and the end of the step's audio as its
// time; a push of more than 2 s can report a model more than once (a buffer of
// `neon_wake_model_count` entries is enough for pushes up to 2 s). `neon_wake_scores`
// gives per model the highest probability of the steps the last push completed (the
// previous scores when it completed none); the first `sliding_window_size` - 1 steps of a
// stream score 0.
//
// Errors: `NEON_STATUS_INVALID_ARGUMENT` for a name that is neither a built-in model nor
// a file, or two models of one name; `NEON_STATUS_IO` for a file that cannot be read;
// `NEON_STATUS_MODEL` for a file that is not a microWakeWord streaming model this library
// runs (truncated, corrupt, an unsupported operator) or a malformed JSON. `*out` is then
// left unchanged and the one-line message is in `neon_last_error()`.
//
// # Safety
// `models` must point to `n_models` pointers to NUL-terminated strings (when `n_models` is
// not 0); `out` must be writable.
neon_status neon_wake_new_micro(const char *const *models, size_t n_models, neon_wake **out);

// Opens the Moonshine model in `model_dir` (`base-en.safetensors` and `tokenizer.bin`, as
// written by `tools/moonshine/fetch.sh`) and stores a transcriber in `*out`.
// `session_options`: `n_options` `KEY=VALUE` strings, as `neon transcribe
// --session-option` (NULL when 0): only `moonshine_asr.*` keys (an option of another model
// family is refused, as by the CLI). A transcriber owns about 82 MB of buffers besides the
// 62 MB of weights and runs on the calling thread (more threads:
// `neon_transcriber_set_threads`).
//
// Errors: `NEON_STATUS_IO` for missing or unreadable files, `NEON_STATUS_MODEL` for
// malformed ones, `NEON_STATUS_INVALID_ARGUMENT` for a bad option; `*out` is then left
// unchanged and the message is in `neon_last_error()`.
//
// # Safety
// `model_dir` must be a NUL-terminated string, `session_options` must point to `n_options`
// pointers to NUL-terminated strings (when `n_options` is not 0); `out` must be writable.
neon_status neon_transcriber_open(const char *model_dir,
                                  const char *const *session_options,
                                  size_t n_options,
                                  neon_transcriber **out);

// Transcribes `n` samples of 16 kHz mono audio in [-1, 1] (any length: audio over 30 s is
// cut at pauses into segments, transcribed one after another and joined with a space) and
// copies the text, NUL-terminated, to `text` (room for `cap` bytes). On success `*len` is
// the text's length in bytes without the NUL. When `cap` is too small the status is
// `NEON_STATUS_BUFFER_TOO_SMALL`, `*len` is the size needed including the NUL, `text` gets
// an empty string (when `cap` > 0) and the text stays available from
// `neon_transcriber_text`. `text` may be NULL when `cap` is 0. Non-finite samples are
// `NEON_STATUS_INVALID_ARGUMENT`.
//
// # Safety
// `t` should be a handle from `neon_transcriber_open` (a freed one is
// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread `NEON_STATUS_BUSY`);
// `samples` must point to `n` readable values, `text` must be writable for `cap`
// bytes, `len` writable.
neon_status neon_transcribe_f32(neon_transcriber *t,
                                const float *samples,
                                size_t n,
                                char *text,
                                size_t cap,
                                size_t *len);

// `neon_transcribe_f32` on int16 samples (16 kHz mono; converted as `x / 32768`).
//
// # Safety
// As `neon_transcribe_f32`.
neon_status neon_transcribe_i16(neon_transcriber *t,
                                const int16_t *samples,
                                size_t n,
                                char *text,
                                size_t cap,
                                size_t *len);

// Sets the threads the transcriptions of `t` run on: `threads` in all, the calling thread
// included (`threads - 1` worker threads that the handle starts now and keeps until it is
// freed). 1 is the calling thread only, as after `neon_transcriber_open`; 0 is the default
// of `neon transcribe`: the cores available to the process, at most 4. The text is the
// same for any number of threads.
//
// Errors: `NEON_STATUS_INVALID_ARGUMENT` for `threads` above 64, `NEON_STATUS_MODEL` when
// the system refuses a thread; the handle keeps its previous threads then.
//
// # Safety
// `t` as for `neon_transcribe_f32`.
neon_status neon_transcriber_set_threads(neon_transcriber *t, size_t threads);

// The number of threads the transcriptions of `t` run on (the calling thread included)
// is stored in `*threads`.
//
// # Safety
// `t` as for `neon_transcribe_f32`; `threads` must be writable.
neon_status neon_transcriber_threads(const neon_transcriber *t, size_t *threads);

// The text of the last successful transcription on `t`, or of the last one that did not fit
// its buffer ("" before any). Owned by the handle, valid until the next call on it. NULL
// when `t` is not a live handle or is busy in a call on another thread (the reason in
// `neon_last_error()`).
//
// # Safety
// `t` as for `neon_transcribe_f32`.
const char *neon_transcriber_text(const neon_transcriber *t);

// The message of the last failed call on `t` ("" when none failed). Owned by the handle,
// valid until the next call on it. NULL when `t` is not a live handle or is busy in a
// call on another thread (the reason in `neon_last_error()`).
//
// # Safety
// `t` as for `neon_transcribe_f32`.
const char *neon_transcriber_error(const neon_transcriber *t);

// Frees `t`; NULL is a no-op (`NEON_STATUS_OK`). Closing it again (or any pointer that is
// not a live transcriber) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Closing a
// transcriber while another thread is inside a call on it is safe: it is gone at once
// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
// memory is released when it returns.
//
// # Safety
// None beyond the pointer being a handle or not; afterwards no string it returned is
// valid.
neon_status neon_transcriber_close(neon_transcriber *t);

// Fills `*out` with the defaults (silero-vad's): threshold 0.5, neg_threshold -1 (that is,
// max(threshold - 0.15, 0.01)), min_speech_ms 250, min_silence_ms 100, speech_pad_ms 30,
// min_silence_at_max_speech_ms 98, max_speech_s 0 (no limit),
// use_max_poss_sil_at_max_speech 1.
//
// # Safety
// `out` must be writable.
neon_status neon_vad_config_default(neon_vad_config *out);

// Creates a voice-activity detector (Silero VAD, built in) and stores it in `*out`.
//
// `session_options`: `n_options` `KEY=VALUE` strings, as `neon vad --session-option` (NULL
// when 0), e.g. `silero_vad.exec_plan={"network":{"impl":"portable"}}`: only
// `silero_vad.*` keys (an option of another model family is refused). `config`: the
// segment rule (NULL for the defaults, as `neon_vad_config_default`).
//
// Errors: `NEON_STATUS_INVALID_ARGUMENT` for a bad option or configuration (the message
// names the parameter); `*out` is then left unchanged and the message is in
// `neon_last_error()`.
//
// # Safety
// `session_options` must point to `n_options` pointers to NUL-terminated strings (when
// `n_options` is not 0); `config` must be NULL or readable; `out` must be writable.
neon_status neon_vad_new(const char *const *session_options,
                         size_t n_options,
                         const neon_vad_config *config,
                         neon_vad **out);

// Feeds `n` samples of 16 kHz mono audio in [-1, 1], in pieces of any size (`n` may be 0;
// `samples` must not be NULL). Afterwards `neon_vad_probabilities` gives the speech
// probability of each 512-sample window this push completed (the same for any split of
// the audio into pushes) and `neon_vad_segments` the segments it decided; both replace the
// previous push's. A NaN or infinite sample is `NEON_STATUS_INVALID_ARGUMENT`: nothing of
// this push is used (the stream is as before it). After a failed push there are no
// results.
//
// # Safety
// `vad` should be a handle from `neon_vad_new` (a freed one is reported as
// `NEON_STATUS_UNKNOWN_HANDLE`, one inside a call on another thread as
// `NEON_STATUS_BUSY`); `samples` must point to `n` readable values.
neon_status neon_vad_push_f32(neon_vad *vad, const float *samples, size_t n);

// `neon_vad_push_f32` on int16 samples (16 kHz mono; converted as `x / 32768`, without
// allocating).
//
// # Safety
// As `neon_vad_push_f32`.
neon_status neon_vad_push_i16(neon_vad *vad, const int16_t *samples, size_t n);

// Ends the stream: a partial last window is zero-padded to 512 samples (as silero-vad pads
// a clip's end) and a segment still open ends with the stream (its length is the samples
// pushed). The probability of that last window and the remaining segments replace the
// results, as a push's. The handle then starts a new stream (as after `neon_vad_reset`,
// times from 0 again) while keeping these results until the next call that changes them.
//
// # Safety
// `vad` as for `neon_vad_push_f32`.
neon_status neon_vad_finish(neon_vad *vad);

// Copies the speech probabilities (in [0, 1], one per 512-sample window, in order) of the
// windows the last push or finish completed to `out` (room for `cap`) and stores their
// number in `*n` (0 when it completed none). With `cap` too small,
// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
// After a push of `k` samples, `k / NEON_VAD_WINDOW_SAMPLES + 1` values are always enough.
//
// # Safety
// `vad` as for `neon_vad_push_f32`; `out` must be writable for `cap` values, `n` writable.
neon_status neon_vad_probabilities(const neon_vad *vad, float *out, size_t cap, size_t *n);

// Copies the speech segments the last push or finish decided (final: each is reported
// once, in order, as soon as nothing that follows can change it, about 130 ms after its
// end with the defaults) to `out` (room for `cap`) and stores their number in `*n`
// (usually 0). With `cap` too small, `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set);
// `out` may be NULL when `cap` is 0. At most 3 per window completed, plus 2 at a finish.
// Together, a stream's segments are silero-vad's `get_speech_timestamps` on the whole
// audio.
//
// # Safety
// `vad` as for `neon_vad_push_f32`; `out` must be writable for `cap` values, `n` writable.
neon_status neon_vad_segments(const neon_vad *vad, neon_vad_segment *out, size_t cap, size_t *n);

// Whether speech is in progress: `*speaking` is 1 while a run of speech is open (it
// started, and has neither ended nor been dropped as too short), else 0. `*since_s` is
// then the start (in seconds, padding included) its segment will have if it is kept, else
// 0. A segment that has ended can still be waiting to be reported (`*speaking` is already
// 0).
//
// # Safety
// `vad` as for `neon_vad_push_f32`; `speaking` and `since_s` must be writable.
neon_status neon_vad_speaking(const neon_vad *vad, int *speaking, double *since_s);

// Back to the start of a stream (times restart at 0), without results: the pending
// samples, the network's state and an open segment are dropped.
//
// # Safety
// `vad` as for `neon_vad_push_f32`.
neon_status neon_vad_reset(neon_vad *vad);

// The message of the last failed call on `vad` ("" when none failed). Owned by the
// handle, valid until the next call on it. NULL when `vad` is not a live handle or is
// busy in a call on another thread (the reason in `neon_last_error()`).
//
// # Safety
// `vad` as for `neon_vad_push_f32`.
const char *neon_vad_error(const neon_vad *vad);

// Frees `vad`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
// is not a live VAD handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash. Freeing a
// handle while another thread is inside a call on it is safe: the handle is gone at once
// (later calls are `NEON_STATUS_UNKNOWN_HANDLE`), the call in flight completes, and the
// memory is released when it returns.
//
// # Safety
// None beyond the pointer being a handle or not; afterwards no string it returned is
// valid.
neon_status neon_vad_free(neon_vad *vad);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* NEON_H */
