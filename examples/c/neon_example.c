/* The neon C API on a WAV file: wake-word detection with every built-in model and, when a
 * Moonshine model directory is given, transcription of a second file.
 *
 *   neon_example WAKE.wav [MODEL_DIR SPEECH.wav]
 *
 * Files must be 16 kHz mono 16-bit PCM. Exits non-zero on any error. */
#include <stdio.h>
#include <stdlib.h>

#include "neon.h"
#include "wav.h"

#define CHUNK 1280 /* 80 ms: one openWakeWord score per push */

static int fail(const char *what, neon_status status, const char *message) {
    fprintf(stderr, "neon_example: %s: %s: %s\n", what, neon_status_string(status),
            message ? message : "");
    return 1;
}

static int wake(const char *path) {
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
    /* no model names: every built-in model; threshold 0.5; no session options */
    s = neon_wake_new(NULL, 0, 0.5f, NULL, 0, &w);
    if (s != NEON_STATUS_OK) {
        free(samples);
        return fail("neon_wake_new", s, neon_last_error());
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
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: %s WAKE.wav [MODEL_DIR SPEECH.wav]\n", argv[0]);
        return 2;
    }
    if (wake(argv[1]) != 0) return 1;
    if (argc == 4 && transcribe(argv[2], argv[3]) != 0) return 1;
    return 0;
}
