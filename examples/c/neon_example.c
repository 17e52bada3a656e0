/* The neon C API on WAV files: wake-word detection with every built-in openWakeWord model,
 * then with the microWakeWord model okay_nabu on a second file (the same calls: only the
 * handle's creation differs), voice activity (Silero VAD: its speech segments) on a third
 * and, when a Moonshine model directory is given, transcription of a fourth.
 *
 *   neon_example WAKE.wav OKAY_NABU.wav VAD.wav [MODEL_DIR SPEECH.wav]
 *
 * Files must be 16 kHz mono 16-bit PCM. Exits non-zero on any error. */
#include <stdio.h>
#include <stdlib.h>

#include "neon.h"
#include "wav.h"

#define CHUNK 1280 /* 80 ms: one openWakeWord score per push (microWakeWord: any size) */
#define VAD_PIECE 1600 /* 100 ms: any size works; a push completes at most 4 windows */
/* Room for a push's (or the finish's) results: one probability per window it completes,
 * at most 3 segments per window plus 2 at the finish. */
#define VAD_WINDOWS (VAD_PIECE / NEON_VAD_WINDOW_SAMPLES + 1)
#define VAD_SEGMENTS (3 * VAD_WINDOWS + 2)

static int fail(const char *what, neon_status status, const char *message) {
    fprintf(stderr, "neon_example: %s: %s: %s\n", what, neon_status_string(status),
            message ? message : "");
    return 1;
}

/* micro = 0: every built-in openWakeWord model, threshold 0.5; 1: microWakeWord's okay_nabu
 * (its own cutoff) */
static int wake(const char *path, int micro) {
    static const char *const okay_nabu[] = {"okay_nabu"};
    char err[256];
    int16_t *samples = NULL;
    size_t n = 0, models = 0, i, found = 0;
    neon_wake *w = NULL;
    neon_detection detections[16];
    neon_status s;
    if (wav_read_16k_mono(path, &samples, &n, err, sizeof err) != 0) {
        fprintf(stderr, "neon_example: %s\n", err);
        return 1;
    }
    if (micro)
        s = neon_wake_new_micro(okay_nabu, 1, &w);
    else /* no model names: every built-in model; no session options */
        s = neon_wake_new(NULL, 0, 0.5f, NULL, 0, &w);
    if (s != NEON_STATUS_OK) {
        free(samples);
        return fail(micro ? "neon_wake_new_micro" : "neon_wake_new", s, neon_last_error());
    }
    s = neon_wake_model_count(w, &models);
    for (i = 0; s == NEON_STATUS_OK && i + CHUNK <= n; i += CHUNK) {
        size_t k, hits = 0;
        s = neon_wake_push(w, samples + i, CHUNK);
        if (s == NEON_STATUS_OK)
            s = neon_wake_detections(w, detections, sizeof detections / sizeof *detections,
                                     &hits);
        for (k = 0; s == NEON_STATUS_OK && k < hits; k++) {
            printf("wake %8.2f s  %-18s %.3f\n", detections[k].time_s,
                   neon_wake_model_name(w, detections[k].model), detections[k].score);
            found++;
        }
    }
    free(samples);
    if (s != NEON_STATUS_OK) {
        int rc = fail("wake detection", s, neon_wake_error(w));
        neon_wake_free(w);
        return rc;
    }
    printf("%zu detection(s) with %zu models in %s\n", found, models, path);
    neon_wake_free(w);
    return 0;
}

/* The results of the last push or finish: prints the segments it decided, counts windows. */
static neon_status vad_results(neon_vad *v, size_t *windows, size_t *speech_windows,
                               size_t *segments, double *speech_s) {
    float p[VAD_WINDOWS];
    neon_vad_segment seg[VAD_SEGMENTS];
    size_t n = 0, i;
    neon_status s = neon_vad_probabilities(v, p, VAD_WINDOWS, &n);
    for (i = 0; s == NEON_STATUS_OK && i < n; i++) *speech_windows += p[i] >= 0.5f;
    *windows += n;
    if (s == NEON_STATUS_OK) s = neon_vad_segments(v, seg, VAD_SEGMENTS, &n);
    for (i = 0; s == NEON_STATUS_OK && i < n; i++) {
        printf("vad  %8.2f s  %8.2f s  speech\n", seg[i].start_s, seg[i].end_s);
        *speech_s += seg[i].end_s - seg[i].start_s;
        (*segments)++;
    }
    return s;
}

static int vad(const char *path) {
    char err[256];
    int16_t *samples = NULL;
    size_t n = 0, i, windows = 0, speech_windows = 0, segments = 0;
    double speech_s = 0.0, since_s = 0.0;
    int speaking = 0, was_speaking = 0;
    neon_vad *v = NULL;
    neon_vad_config config;
    neon_status s;
    if (wav_read_16k_mono(path, &samples, &n, err, sizeof err) != 0) {
        fprintf(stderr, "neon_example: %s\n", err);
        return 1;
    }
    /* silero-vad's defaults (passing NULL is the same); change fields here */
    neon_vad_config_default(&config);
    s = neon_vad_new(NULL, 0, &config, &v);
    if (s != NEON_STATUS_OK) {
        free(samples);
        return fail("neon_vad_new", s, neon_last_error());
    }
    for (i = 0; s == NEON_STATUS_OK && i < n; i += VAD_PIECE) {
        s = neon_vad_push_i16(v, samples + i, n - i < VAD_PIECE ? n - i : VAD_PIECE);
        if (s == NEON_STATUS_OK)
            s = vad_results(v, &windows, &speech_windows, &segments, &speech_s);
        if (s == NEON_STATUS_OK) s = neon_vad_speaking(v, &speaking, &since_s);
        if (s == NEON_STATUS_OK && speaking && !was_speaking)
            printf("vad  %8.2f s  speech starts (its segment from %.2f s)\n",
                   (double)(i + VAD_PIECE < n ? i + VAD_PIECE : n) / 16000.0, since_s);
        was_speaking = speaking;
    }
    /* the last partial window, and a segment still open; the handle starts a new stream */
    if (s == NEON_STATUS_OK) s = neon_vad_finish(v);
    if (s == NEON_STATUS_OK) s = vad_results(v, &windows, &speech_windows, &segments, &speech_s);
    free(samples);
    if (s != NEON_STATUS_OK) {
        int rc = fail("voice activity", s, neon_vad_error(v));
        neon_vad_free(v);
        return rc;
    }
    printf("%zu speech segment(s), %.2f s of speech, %zu of %zu windows at p >= 0.5 in %s\n",
           segments, speech_s, speech_windows, windows, path);
    neon_vad_free(v);
    return 0;
}

static int transcribe(const char *model_dir, const char *path) {
    char err[256], text[1024];
    int16_t *samples = NULL;
    size_t n = 0, len = 0;
    neon_transcriber *t = NULL;
    neon_status s;
    if (wav_read_16k_mono(path, &samples, &n, err, sizeof err) != 0) {
        fprintf(stderr, "neon_example: %s\n", err);
        return 1;
    }
    s = neon_transcriber_open(model_dir, NULL, 0, &t);
    if (s != NEON_STATUS_OK) {
        free(samples);
        return fail("neon_transcriber_open", s, neon_last_error());
    }
    s = neon_transcribe_i16(t, samples, n, text, sizeof text, &len);
    free(samples);
    if (s == NEON_STATUS_BUFFER_TOO_SMALL) {
        /* the text is kept by the handle: read it there instead */
        printf("text: %s\n", neon_transcriber_text(t));
    } else if (s != NEON_STATUS_OK) {
        int rc = fail("neon_transcribe_i16", s, neon_transcriber_error(t));
        neon_transcriber_close(t);
        return rc;
    } else {
        printf("text: %s\n", text);
    }
    neon_transcriber_close(t);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: %s WAKE.wav OKAY_NABU.wav VAD.wav [MODEL_DIR SPEECH.wav]\n",
                argv[0]);
        return 2;
    }
    if (wake(argv[1], 0) != 0) return 1;
    if (wake(argv[2], 1) != 0) return 1;
    if (vad(argv[3]) != 0) return 1;
    if (argc == 6 && transcribe(argv[4], argv[5]) != 0) return 1;
    return 0;
}
