/* Concurrent misuse of one handle through the C API (built and run by tests/c_programs.rs,
 * which also checks that nothing reached stderr):
 *
 *  1. two threads pushing to one wake handle at once: every call is NEON_STATUS_OK or
 *     NEON_STATUS_BUSY (never a caught panic), and BUSY does happen;
 *  2. a call that finds the handle in use by another thread's long call is BUSY;
 *  3. freeing a wake / VAD handle while another thread is inside a push on it: the free
 *     succeeds, the push completes, and the handle is gone afterwards (no use after free).
 *
 * Prints one line per part; exits non-zero on the first failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "neon.h"
#include "check.h"

#define CHUNK 1280
#define LONG_SAMPLES (16000 * 20) /* 20 s: a push of it takes a while */

static int16_t *audio; /* LONG_SAMPLES of deterministic noise */

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static neon_wake *new_wake(void) {
    const char *models[] = {"hey_jarvis"};
    neon_wake *w = NULL;
    neon_status s = neon_wake_new(models, 1, 0.5f, NULL, 0, &w);
    CHECK(s == NEON_STATUS_OK, "neon_wake_new: %s", neon_last_error());
    return w;
}

/* Part 1: both threads push chunks to one handle. */
struct hammer {
    neon_wake *w;
    atomic_int *go;
    int ok, busy, other;
    neon_status other_status;
    char other_message[256];
};

static void *hammer(void *arg) {
    struct hammer *h = arg;
    while (!atomic_load(h->go)) {
    }
    for (int i = 0; i < 400; i++) {
        const int16_t *chunk = audio + (size_t)(i % (LONG_SAMPLES / CHUNK)) * CHUNK;
        neon_status s = neon_wake_push(h->w, chunk, CHUNK);
        if (s == NEON_STATUS_OK) {
            h->ok++;
        } else if (s == NEON_STATUS_BUSY) {
            h->busy++;
        } else {
            if (h->other++ == 0) {
                h->other_status = s;
                snprintf(h->other_message, sizeof h->other_message, "%s", neon_last_error());
            }
        }
    }
    return NULL;
}

static void two_threads_push(void) {
    neon_wake *w = new_wake();
    atomic_int go = 0;
    struct hammer a = {w, &go, 0, 0, 0, NEON_STATUS_OK, ""}, b = a;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, hammer, &a);
    pthread_create(&tb, NULL, hammer, &b);
    atomic_store(&go, 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.other == 0 && b.other == 0, "%d + %d calls failed with neither OK nor BUSY: %s: %s",
          a.other, b.other, neon_status_string(a.other ? a.other_status : b.other_status),
          a.other ? a.other_message : b.other_message);
    CHECK(a.ok + b.ok > 0, "no push succeeded");
    /* The handle is intact: a push on it alone succeeds. */
    CHECK(neon_wake_push(w, audio, CHUNK) == NEON_STATUS_OK, "%s", neon_last_error());
    CHECK(neon_wake_free(w) == NEON_STATUS_OK, "free");
    printf("two threads pushing: %d ok, %d busy\n", a.ok + b.ok, a.busy + b.busy);
}

/* Parts 2 and 3: one thread inside a long push. */
struct long_push {
    neon_wake *w;
    neon_vad *v;
    atomic_int started, done;
    neon_status status;
};

static void *long_push(void *arg) {
    struct long_push *p = arg;
    atomic_store(&p->started, 1);
    p->status = p->w ? neon_wake_push(p->w, audio, LONG_SAMPLES)
                     : neon_vad_push_i16(p->v, audio, LONG_SAMPLES);
    atomic_store(&p->done, 1);
    return NULL;
}

static void busy_during_a_long_push(void) {
    neon_wake *w = new_wake();
    int busy = 0, rounds = 0;
    for (; busy == 0 && rounds < 20; rounds++) {
        struct long_push p = {w, NULL, 0, 0, NEON_STATUS_OK};
        pthread_t t;
        pthread_create(&t, NULL, long_push, &p);
        while (!atomic_load(&p.started)) {
        }
        while (!atomic_load(&p.done) && busy == 0) {
            size_t n = 0;
            neon_status s = neon_wake_model_count(w, &n);
            if (s == NEON_STATUS_BUSY) {
                busy++;
                CHECK(strstr(neon_last_error(), "in use by another thread") != NULL,
                      "BUSY message: %s", neon_last_error());
                /* A pointer-returning call on a busy handle: NULL, the reason in
                 * neon_last_error(). */
                const char *e = neon_wake_error(w);
                CHECK(e == NULL || atomic_load(&p.done), "neon_wake_error on a busy handle");
            } else {
                CHECK(s == NEON_STATUS_OK && n == 1, "model count: %s", neon_status_string(s));
            }
        }
        pthread_join(t, NULL);
        CHECK(p.status == NEON_STATUS_OK, "the long push: %s", neon_status_string(p.status));
    }
    CHECK(busy > 0, "no call found the handle busy in %d rounds", rounds);
    CHECK(neon_wake_free(w) == NEON_STATUS_OK, "free");
    printf("a call during another thread's push: busy (round %d)\n", rounds);
}

static void free_during_a_push(int vad) {
    for (int round = 0; round < 5; round++) {
        struct long_push p = {NULL, NULL, 0, 0, NEON_STATUS_OK};
        if (vad) {
            neon_status s = neon_vad_new(NULL, 0, NULL, &p.v);
            CHECK(s == NEON_STATUS_OK, "neon_vad_new: %s", neon_last_error());
        } else {
            p.w = new_wake();
        }
        pthread_t t;
        pthread_create(&t, NULL, long_push, &p);
        while (!atomic_load(&p.started)) {
        }
        sleep_ms(5); /* well inside the push */
        neon_status s = vad ? neon_vad_free(p.v) : neon_wake_free(p.w);
        CHECK(s == NEON_STATUS_OK, "free during a push: %s", neon_status_string(s));
        /* Freed: every later call is UNKNOWN_HANDLE, a second free too. */
        s = vad ? neon_vad_free(p.v) : neon_wake_free(p.w);
        CHECK(s == NEON_STATUS_UNKNOWN_HANDLE, "second free: %s", neon_status_string(s));
        s = vad ? neon_vad_push_i16(p.v, audio, CHUNK) : neon_wake_push(p.w, audio, CHUNK);
        CHECK(s == NEON_STATUS_UNKNOWN_HANDLE, "push after free: %s", neon_status_string(s));
        pthread_join(t, NULL);
        /* The push in flight finished on memory that stayed valid. */
        CHECK(p.status == NEON_STATUS_OK, "the push in flight: %s: %s",
              neon_status_string(p.status), neon_last_error());
    }
    printf("free during a %s push: ok\n", vad ? "VAD" : "wake");
}

int main(void) {
    audio = malloc(LONG_SAMPLES * sizeof *audio);
    uint32_t x = 12345;
    for (size_t i = 0; i < LONG_SAMPLES; i++) {
        x = x * 1664525u + 1013904223u;
        audio[i] = (int16_t)(((int32_t)(x >> 16) - 32768) / 8);
    }
    two_threads_push();
    busy_during_a_long_push();
    free_during_a_push(0);
    free_during_a_push(1);
    free(audio);
    printf("concurrency: ok\n");
    return 0;
}
