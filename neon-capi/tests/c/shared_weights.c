/* Wake handles sharing one copy of the weights (built and run by tests/c_programs.rs):
 *
 *  - a detector from neon_wake_new_shared scores the hey_jarvis clip bit for bit as one from
 *    neon_wake_new (every built-in model), and detects hey_jarvis;
 *  - freeing the models handle first leaves its detectors working;
 *  - memory: N detectors over one models handle (MODE shared) or with their own weights
 *    (MODE private), as resident set growth (from /proc/self/statm), each pushed once.
 *
 *   shared_weights WAKE.wav MODE N
 *
 * Prints "MODE: N handles: X MB (...)"; exits non-zero on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "neon.h"
#include "check.h"
#include "wav.h"

#define CHUNK 1280
#define MAX_MODELS 16

/* Resident set size in KB. */
static long rss_kb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f && fscanf(f, "%ld %ld", &pages, &resident) == 2, "cannot read /proc/self/statm");
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Pushes the clip to every handle of `w` (n of them) chunk by chunk, checking that their
 * scores agree bit for bit; returns the number of hey_jarvis detections of w[0]. */
static int push_all(neon_wake **w, size_t n, const int16_t *samples, size_t len) {
    int found = 0;
    for (size_t i = 0; i + CHUNK <= len; i += CHUNK) {
        float first[MAX_MODELS], scores[MAX_MODELS];
        size_t count = 0, k;
        for (k = 0; k < n; k++) {
            neon_status s = neon_wake_push(w[k], samples + i, CHUNK);
            CHECK(s == NEON_STATUS_OK, "push: %s", neon_last_error());
            s = neon_wake_scores(w[k], k ? scores : first, MAX_MODELS, &count);
            CHECK(s == NEON_STATUS_OK, "scores: %s", neon_last_error());
            CHECK(k == 0 || memcmp(first, scores, count * sizeof *scores) == 0,
                  "handle %zu scores differ from handle 0's at sample %zu", k, i);
        }
        neon_detection d[MAX_MODELS];
        size_t hits = 0;
        CHECK(neon_wake_detections(w[0], d, MAX_MODELS, &hits) == NEON_STATUS_OK, "detections");
        for (k = 0; k < hits; k++)
            found += strcmp(neon_wake_model_name(w[0], d[k].model), "hey_jarvis_v0.1") == 0;
    }
    return found;
}

int main(int argc, char **argv) {
    char err[256];
    int16_t *samples = NULL;
    size_t len = 0;
    CHECK(argc == 4 && (!strcmp(argv[2], "shared") || !strcmp(argv[2], "private")),
          "usage: shared_weights WAKE.wav shared|private N");
    int shared = !strcmp(argv[2], "shared");
    size_t n = (size_t)atol(argv[3]);
    CHECK(n >= 1, "N >= 1");
    CHECK(wav_read_16k_mono(argv[1], &samples, &len, err, sizeof err) == 0, "%s", err);

    /* Equal scores: a private detector, and two shared ones of which the second outlives
     * its models handle. */
    neon_wake_models *models = NULL;
    neon_wake *w[3];
    CHECK(neon_wake_new(NULL, 0, 0.5f, NULL, 0, &w[0]) == NEON_STATUS_OK, "%s",
          neon_last_error());
    CHECK(neon_wake_models_open(NULL, 0, &models) == NEON_STATUS_OK, "%s", neon_last_error());
    CHECK(neon_wake_new_shared(models, 0.5f, NULL, 0, &w[1]) == NEON_STATUS_OK, "%s",
          neon_last_error());
    CHECK(neon_wake_new_shared(models, 0.5f, NULL, 0, &w[2]) == NEON_STATUS_OK, "%s",
          neon_last_error());
    CHECK(neon_wake_models_free(models) == NEON_STATUS_OK, "models free");
    CHECK(neon_wake_models_free(models) == NEON_STATUS_UNKNOWN_HANDLE, "second models free");
    neon_wake *late = NULL;
    CHECK(neon_wake_new_shared(models, 0.5f, NULL, 0, &late) == NEON_STATUS_UNKNOWN_HANDLE &&
              late == NULL,
          "new_shared on a freed models handle");
    models = NULL;
    int found = push_all(w, 3, samples, len);
    CHECK(found > 0, "no hey_jarvis detection");
    for (int k = 0; k < 3; k++)
        CHECK(neon_wake_free(w[k]) == NEON_STATUS_OK, "free");
    printf("shared and private detectors score alike: %d hey_jarvis detection(s)\n", found);

    /* Memory: resident set growth per detector. (One kind per process: freed memory stays
     * in the allocator and would be reused by the next kind unseen.) */
    neon_wake **many = malloc(n * sizeof *many);
    long before = rss_kb(), opened = before;
    if (shared) {
        CHECK(neon_wake_models_open(NULL, 0, &models) == NEON_STATUS_OK, "%s",
              neon_last_error());
        opened = rss_kb();
    }
    for (size_t k = 0; k < n; k++) {
        neon_status s = shared ? neon_wake_new_shared(models, 0.5f, NULL, 0, &many[k])
                               : neon_wake_new(NULL, 0, 0.5f, NULL, 0, &many[k]);
        CHECK(s == NEON_STATUS_OK, "%s", neon_last_error());
    }
    long made = rss_kb();
    /* Every one of them runs (one push each), with the models handle gone (NULL: a no-op). */
    CHECK(neon_wake_models_free(models) == NEON_STATUS_OK, "models free");
    for (size_t k = 0; k < n; k++)
        CHECK(neon_wake_push(many[k], samples, CHUNK) == NEON_STATUS_OK, "%s",
              neon_last_error());
    long pushed = rss_kb();
    for (size_t k = 0; k < n; k++)
        CHECK(neon_wake_free(many[k]) == NEON_STATUS_OK, "free");
    printf("%s: %zu handles: %.1f MB (weights loaded once: %ld KB; per handle: %.1f KB, "
           "%.1f KB after a push)\n",
           shared ? "shared" : "private", n, (double)(pushed - before) / 1024.0, opened - before,
           (double)(made - opened) / (double)n, (double)(pushed - opened) / (double)n);
    free(many);
    free(samples);
    printf("shared weights: ok\n");
    return 0;
}
