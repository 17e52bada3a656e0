/* neon C API: openWakeWord wake-word detection and Moonshine speech recognition.
 * Generated from neon-capi/src/ by cbindgen (neon-capi/tests/header.rs); do not edit. */

#ifndef NEON_H
#define NEON_H

#include <stddef.h>
#include <stdint.h>

// The result of every call.
typedef enum {
  // Success.
  NEON_STATUS_OK = 0,
  // A required pointer was NULL.
  NEON_STATUS_NULL_POINTER = 1,
  // A pointer was not aligned for its type (e.g. an `int16_t *` at an odd address).
  NEON_STATUS_MISALIGNED_POINTER = 2,
  // An argument is out of range or malformed: a length, a threshold, an unknown model name,
  // a bad session option, a string that is not UTF-8, non-finite samples.
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
  // A panic inside the library was caught (a bug: please report it with the message).
  NEON_STATUS_PANIC = 8,
} neon_status;

// A Moonshine transcriber (opaque): the model, its buffers and the last text.
typedef struct neon_transcriber neon_transcriber;

// A wake-word detector (opaque): the models, their triggers and the last push's results.
typedef struct neon_wake neon_wake;

// One wake-word detection.
typedef struct {
  // Index of the model (as for `neon_wake_model_name`).
  size_t model;
  // End of the audio that produced the score, in seconds since the stream started (or
  // since the last `neon_wake_reset`).
  double time_s;
  // The score that crossed the threshold.
  float score;
} neon_detection;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The message of the last failed call on the calling thread ("" when none failed yet).
// Owned by the library; valid until the next failing call on this thread. Never NULL.
const char *neon_last_error(void);

// A short English description of a status code (a `neon_status` value; a static string,
// never NULL; "unknown status" for a value that is not one).
const char *neon_status_string(int status);

// Creates a wake-word detector and stores it in `*out`.
//
// `models`: `n_models` built-in model names (`hey_jarvis`, `hey_jarvis_v0.1`, `alexa`, ...)
// or paths to converted safetensors heads (named after the file stem; names must be
// unique); `n_models` 0 (with `models` NULL or not) loads every built-in model.
// `threshold`: the score, in (0, 1], at or above which a model fires (0.5 is openWakeWord's
// default); a model cannot fire again within 1 s of a detection. `session_options`:
// `n_options` `KEY=VALUE` strings, as `neon wake --session-option` (NULL when 0).
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

// Feeds `n` samples (16 kHz mono int16) and computes one score per model and the
// detections of this push (`neon_wake_scores`, `neon_wake_detections`). Push 1280 samples
// (80 ms) at a time for one score per 80 ms as openWakeWord: a push completing no 80 ms
// chunk repeats the previous scores, one completing several reports their maximum. The
// first 5 chunks score 0 (warm-up). `n` may be 0; `samples` must not be NULL.
//
// # Safety
// `wake` must be a handle from `neon_wake_new` (a freed one is reported as
// `NEON_STATUS_UNKNOWN_HANDLE`) not used by another thread during the call; `samples` must
// point to `n` readable values.
neon_status neon_wake_push(neon_wake *wake, const int16_t *samples, size_t n);

// Copies the scores of the last push (one per model, in model order; zeros before the first
// push) to `out` (room for `cap`) and stores their number in `*n`. With `cap` too small,
// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
//
// # Safety
// `wake` as for `neon_wake_push`; `out` must be writable for `cap` values, `n` writable.
neon_status neon_wake_scores(const neon_wake *wake, float *out, size_t cap, size_t *n);

// Copies the detections of the last push (at most one per model) to `out` (room for `cap`)
// and stores their number in `*n` (0 when nothing fired). With `cap` too small,
// `NEON_STATUS_BUFFER_TOO_SMALL` (`*n` is still set); `out` may be NULL when `cap` is 0.
// A buffer of `neon_wake_model_count` entries is always enough.
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
// freed; NULL for an invalid handle or index (the reason is in `neon_last_error()`).
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
// handle, valid until the next call on it. NULL when `wake` is not a live handle.
//
// # Safety
// `wake` as for `neon_wake_push`.
const char *neon_wake_error(const neon_wake *wake);

// Frees `wake`; NULL is a no-op (`NEON_STATUS_OK`). Freeing it again (or any pointer that
// is not a live wake handle) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash.
//
// # Safety
// `wake` must not be in use by another thread; afterwards no string it returned is valid.
neon_status neon_wake_free(neon_wake *wake);

// Opens the Moonshine model in `model_dir` (`base-en.safetensors` and `tokenizer.bin`, as
// written by `tools/moonshine/fetch.sh`) and stores a transcriber in `*out`.
// `session_options`: `n_options` `KEY=VALUE` strings, as `neon transcribe
// --session-option` (NULL when 0). A transcriber owns about 82 MB of buffers besides the
// 62 MB of weights and runs on the calling thread.
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
// `t` must be a handle from `neon_transcriber_open` not used by another thread during the
// call; `samples` must point to `n` readable values, `text` must be writable for `cap`
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

// The text of the last successful transcription on `t`, or of the last one that did not fit
// its buffer ("" before any). Owned by the handle, valid until the next call on it. NULL
// when `t` is not a live handle.
//
// # Safety
// `t` as for `neon_transcribe_f32`.
const char *neon_transcriber_text(const neon_transcriber *t);

// The message of the last failed call on `t` ("" when none failed). Owned by the handle,
// valid until the next call on it. NULL when `t` is not a live handle.
//
// # Safety
// `t` as for `neon_transcribe_f32`.
const char *neon_transcriber_error(const neon_transcriber *t);

// Frees `t`; NULL is a no-op (`NEON_STATUS_OK`). Closing it again (or any pointer that is
// not a live transcriber) is `NEON_STATUS_UNKNOWN_HANDLE`, not a crash.
//
// # Safety
// `t` must not be in use by another thread; afterwards no string it returned is valid.
neon_status neon_transcriber_close(neon_transcriber *t);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* NEON_H */
