/*
 * ort_peer: ONNX Runtime's aarch64 C library (onnxruntime-node 1.30.0's
 * libonnxruntime.so.1, loaded with dlopen) running the workloads of our instruction-count
 * bench binaries, with the same region markers, under qemu-aarch64 and
 * ../shared/tools/insn-count (benches/arm/ort.sh drives it).
 *
 * usage:
 *   ort_peer LIB vad MODEL WAV K GOLDEN
 *       Silero VAD: streams the windows of WAV (16 kHz mono int16, / 32768, zero-padded to
 *       whole 512-sample windows) as silero-vad's OnnxWrapper feeds them (input [1, 576]:
 *       64 samples of context, then the window; state [2, 1, 128] carried; sr int64 16000);
 *       windows 0..K-1 unmarked, window K inside region 1. Exit 1 unless its probability is
 *       within 1e-4 of GOLDEN (the tolerance of insn_vad and models/tests/vad.rs).
 *   ort_peer LIB run MODEL SPEC
 *       One session.run on the inputs SPEC lists, once unmarked (the first run's lazy
 *       set-up), then once inside region 1; exit 1 unless every output SPEC lists is within
 *       its tolerance of the expected values. SPEC lines (paths relative to SPEC's folder):
 *         in NAME f32|i64|bool FILE D0 D1 ...   raw little-endian values, shape D0 x D1 ...
 *         out NAME FILE TOL                     expected f32 values; max |got - want| <= TOL
 *         out NAME FILE TOL l2                  |got - want| / |want| <= TOL (Euclidean norms)
 *         out NAME - -                          fetched, not checked
 *
 * The session as the host peers open theirs (tools/NAME/): CPU provider, one intra-op and one
 * inter-op thread, sequential execution, every graph optimisation (ORT_ENABLE_ALL).
 *
 * The C API is used through the function table OrtGetApiBase()->GetApi(version) returns;
 * the slots below are the positions of those functions in ONNX Runtime's `OrtApi` struct
 * (stable across versions: the struct only grows at its end).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"

typedef void Status; /* OrtStatus*: NULL on success */
typedef void *Handle;

/* Positions in OrtApi (ONNX Runtime's onnxruntime_c_api.h). */
enum {
    GET_ERROR_MESSAGE = 2,
    CREATE_ENV = 3,
    CREATE_SESSION = 7,
    RUN = 9,
    CREATE_SESSION_OPTIONS = 10,
    SET_SESSION_EXECUTION_MODE = 13,
    SET_GRAPH_OPTIMIZATION_LEVEL = 23,
    SET_INTRA_OP_NUM_THREADS = 24,
    SET_INTER_OP_NUM_THREADS = 25,
    SESSION_GET_INPUT_COUNT = 30,
    SESSION_GET_OUTPUT_COUNT = 31,
    SESSION_GET_INPUT_NAME = 36,
    SESSION_GET_OUTPUT_NAME = 37,
    CREATE_TENSOR_WITH_DATA = 49,
    GET_TENSOR_MUTABLE_DATA = 51,
    GET_TENSOR_SHAPE_ELEMENT_COUNT = 64,
    GET_TENSOR_TYPE_AND_SHAPE = 65,
    CREATE_CPU_MEMORY_INFO = 69,
    GET_ALLOCATOR_WITH_DEFAULT_OPTIONS = 78,
    RELEASE_VALUE = 96,
    RELEASE_TENSOR_TYPE_AND_SHAPE_INFO = 99,
};
/* The API version asked for: 1.30.0 serves every version up to its own. */
#define API_VERSION 22
/* Enum values of the C API. */
#define ELEMENT_FLOAT 1
#define ELEMENT_INT64 7
#define ELEMENT_BOOL 9
#define LOGGING_WARNING 2
#define ORT_SEQUENTIAL 0
#define ORT_ENABLE_ALL 99
#define ARENA_ALLOCATOR 1
#define MEM_TYPE_DEFAULT 0

typedef struct {
    const void *(*get_api)(uint32_t version);
    const char *(*get_version_string)(void);
} ApiBase;

static void *const *api;
static Handle memory_info;

#define FN(slot, type) ((type)api[slot])


static void die(const char *what) {
    fprintf(stderr, "ort_peer: %s\n", what);
    exit(1);
}

static void check(Status *s, const char *what) {
    if (s) {
        const char *m = FN(GET_ERROR_MESSAGE, const char *(*)(Status *))(s);
        fprintf(stderr, "ort_peer: %s: %s\n", what, m);
        exit(1);
    }
}

static void load(const char *lib) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) die(dlerror());
    const ApiBase *(*base)(void) = (const ApiBase *(*)(void))dlsym(h, "OrtGetApiBase");
    if (!base) die("no OrtGetApiBase");
    const ApiBase *b = base();
    api = (void *const *)b->get_api(API_VERSION);
    if (!api) die("GetApi refused the API version");
    fprintf(stderr, "ONNX Runtime %s\n", b->get_version_string());
    check(FN(CREATE_CPU_MEMORY_INFO, Status *(*)(int, int, Handle *))(ARENA_ALLOCATOR,
                                                                       MEM_TYPE_DEFAULT,
                                                                       &memory_info),
          "CreateCpuMemoryInfo");
}

/* A session on MODEL with the options of the file's header comment. */
static Handle session(const char *model) {
    Handle env, opts, s;
    check(FN(CREATE_ENV, Status *(*)(int, const char *, Handle *))(LOGGING_WARNING, "ort_peer",
                                                                   &env),
          "CreateEnv");
    check(FN(CREATE_SESSION_OPTIONS, Status *(*)(Handle *))(&opts), "CreateSessionOptions");
    check(FN(SET_INTRA_OP_NUM_THREADS, Status *(*)(Handle, int))(opts, 1), "intra-op threads");
    check(FN(SET_INTER_OP_NUM_THREADS, Status *(*)(Handle, int))(opts, 1), "inter-op threads");
    check(FN(SET_SESSION_EXECUTION_MODE, Status *(*)(Handle, int))(opts, ORT_SEQUENTIAL),
          "execution mode");
    check(FN(SET_GRAPH_OPTIMIZATION_LEVEL, Status *(*)(Handle, int))(opts, ORT_ENABLE_ALL),
          "optimisation level");
    check(FN(CREATE_SESSION, Status *(*)(Handle, const char *, Handle, Handle *))(env, model,
                                                                                  opts, &s),
          model);
    return s;
}

/* The session's input (out = 0) or output (out = 1) names. */
static char **names(Handle s, int out, size_t *n) {
    Handle alloc;
    check(FN(GET_ALLOCATOR_WITH_DEFAULT_OPTIONS, Status *(*)(Handle *))(&alloc), "allocator");
    check(FN(out ? SESSION_GET_OUTPUT_COUNT : SESSION_GET_INPUT_COUNT,
             Status *(*)(Handle, size_t *))(s, n),
          "name count");
    char **v = calloc(*n, sizeof *v);
    for (size_t i = 0; i < *n; i++)
        check(FN(out ? SESSION_GET_OUTPUT_NAME : SESSION_GET_INPUT_NAME,
                 Status *(*)(Handle, size_t, Handle, char **))(s, i, alloc, &v[i]),
              "name");
    return v;
}

static size_t find(char **v, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0) return i;
    fprintf(stderr, "ort_peer: the model has no input or output %s\n", name);
    exit(1);
}

/* A tensor over `data` (not copied): element type `type`, `rank` dims. */
static Handle tensor(void *data, size_t bytes, const int64_t *dims, size_t rank, int type) {
    Handle v;
    check(FN(CREATE_TENSOR_WITH_DATA,
             Status *(*)(Handle, void *, size_t, const int64_t *, size_t, int, Handle *))(
              memory_info, data, bytes, dims, rank, type, &v),
          "CreateTensorWithDataAsOrtValue");
    return v;
}

static float *floats(Handle v, size_t *n) {
    void *p;
    Handle info;
    check(FN(GET_TENSOR_MUTABLE_DATA, Status *(*)(Handle, void **))(v, &p), "tensor data");
    check(FN(GET_TENSOR_TYPE_AND_SHAPE, Status *(*)(Handle, Handle *))(v, &info), "shape");
    check(FN(GET_TENSOR_SHAPE_ELEMENT_COUNT, Status *(*)(Handle, size_t *))(info, n), "count");
    FN(RELEASE_TENSOR_TYPE_AND_SHAPE_INFO, void (*)(Handle))(info);
    return p;
}

static void release(Handle v) { FN(RELEASE_VALUE, void (*)(Handle))(v); }

/* session.run with every output allocated by ONNX Runtime (as the Python API's run). */
static void run(Handle s, char **in_names, Handle *in, size_t n_in, char **out_names,
                Handle *out, size_t n_out) {
    memset(out, 0, n_out * sizeof *out);
    check(FN(RUN, Status *(*)(Handle, Handle, const char *const *, const Handle *, size_t,
                              const char *const *, size_t, Handle *))(
              s, NULL, (const char *const *)in_names, in, n_in,
              (const char *const *)out_names, n_out, out),
          "Run");
}

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ort_peer: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*len ? *len : 1);
    if (fread(p, 1, *len, f) != *len) die("short read");
    fclose(f);
    return p;
}

static uint32_t le32(const unsigned char *p) {
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The samples of a 16 kHz mono 16-bit PCM WAV file as int16 / 32768. */
static float *wav(const char *path, size_t *n) {
    size_t len;
    unsigned char *b = read_file(path, &len);
    if (len < 12 || memcmp(b, "RIFF", 4) || memcmp(b + 8, "WAVE", 4)) die("not a WAV file");
    size_t at = 12;
    int fmt_ok = 0;
    while (at + 8 <= len) {
        uint32_t size = le32(b + at + 4);
        const unsigned char *c = b + at + 8;
        if (!memcmp(b + at, "fmt ", 4))
            fmt_ok = (c[0] | c[1] << 8) == 1 && (c[2] | c[3] << 8) == 1 && le32(c + 4) == 16000 &&
                     (c[14] | c[15] << 8) == 16;
        if (!memcmp(b + at, "data", 4)) {
            if (!fmt_ok) die("not 16 kHz mono int16 PCM");
            if (size > len - at - 8) size = (uint32_t)(len - at - 8);
            *n = size / 2;
            float *s = malloc(*n * sizeof *s);
            for (size_t i = 0; i < *n; i++)
                s[i] = (float)(int16_t)(c[2 * i] | c[2 * i + 1] << 8) / 32768.0f;
            free(b);
            return s;
        }
        at += 8 + size + (size & 1);
    }
    die("WAV without data");
    return NULL;
}

#define VAD_WINDOW 512
#define VAD_CONTEXT 64
#define VAD_STATE (2 * 128)

static int vad(const char *model, const char *path, long k, double golden) {
    size_t n;
    float *samples = wav(path, &n);
    size_t windows = (n + VAD_WINDOW - 1) / VAD_WINDOW;
    if (k < 0 || (size_t)k >= windows) die("window out of range");
    /* The context then the samples, zero-padded at the end to whole windows. */
    float *padded = calloc(VAD_CONTEXT + windows * VAD_WINDOW, sizeof *padded);
    memcpy(padded + VAD_CONTEXT, samples, n * sizeof *samples);

    Handle s = session(model);
    size_t n_in, n_out;
    char **in_names = names(s, 0, &n_in), **out_names = names(s, 1, &n_out);
    if (n_in != 3 || n_out != 2) die("not Silero VAD's inputs and outputs");
    size_t i_x = find(in_names, n_in, "input"), i_state = find(in_names, n_in, "state");
    size_t i_sr = find(in_names, n_in, "sr"), o_p = find(out_names, n_out, "output");
    size_t o_state = find(out_names, n_out, "stateN");

    float x[VAD_CONTEXT + VAD_WINDOW], state[VAD_STATE] = {0};
    int64_t sr = 16000;
    const int64_t x_dims[] = {1, VAD_CONTEXT + VAD_WINDOW}, state_dims[] = {2, 1, 128};
    Handle in[3], out[2];
    in[i_x] = tensor(x, sizeof x, x_dims, 2, ELEMENT_FLOAT);
    in[i_state] = tensor(state, sizeof state, state_dims, 3, ELEMENT_FLOAT);
    in[i_sr] = tensor(&sr, sizeof sr, NULL, 0, ELEMENT_INT64);
    float p = NAN;
    for (long w = 0; w <= k; w++) {
        memcpy(x, padded + w * VAD_WINDOW, sizeof x);
        if (w == k) REGION_START(1);
        run(s, in_names, in, n_in, out_names, out, n_out);
        if (w == k) REGION_STOP(1);
        size_t len;
        float *v = floats(out[o_state], &len);
        if (len != VAD_STATE) die("state of another size");
        memcpy(state, v, sizeof state);
        p = floats(out[o_p], &len)[0];
        release(out[0]);
        release(out[1]);
    }
    if (!(fabs(p - golden) <= 1e-4)) {
        fprintf(stderr, "ort_peer vad: window %ld: %.7f, golden %.7f\n", k, p, golden);
        return 1;
    }
    fprintf(stderr, "vad: window %ld, p = %.7f (golden %.7f)\n", k, p, golden);
    return 0;
}

#define MAX_VALUES 64

/* `run`: see the header comment. */
static int run_spec(const char *model, const char *spec) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", spec);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else strcpy(dir, "./");
    FILE *f = fopen(spec, "r");
    if (!f) die("cannot open the spec");

    char *in_names[MAX_VALUES], *out_names[MAX_VALUES], *want_files[MAX_VALUES];
    double tol[MAX_VALUES];
    int l2[MAX_VALUES];
    Handle in[MAX_VALUES], out[MAX_VALUES];
    size_t n_in = 0, n_out = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        char *save, *kind = strtok_r(line, " \t\n", &save);
        if (!kind || kind[0] == '#') continue;
        char *name = strtok_r(NULL, " \t\n", &save);
        if (!name) die("spec line without a name");
        if (!strcmp(kind, "in")) {
            if (n_in == MAX_VALUES) die("too many inputs");
            char *type = strtok_r(NULL, " \t\n", &save), *file = strtok_r(NULL, " \t\n", &save);
            if (!type || !file) die("spec: in NAME TYPE FILE DIMS...");
            int64_t dims[16];
            size_t rank = 0, count = 1;
            for (char *d; (d = strtok_r(NULL, " \t\n", &save)) && rank < 16;) {
                dims[rank] = atoll(d);
                count *= (size_t)dims[rank++];
            }
            int elem;
            size_t size;
            if (!strcmp(type, "f32")) elem = ELEMENT_FLOAT, size = 4;
            else if (!strcmp(type, "i64")) elem = ELEMENT_INT64, size = 8;
            else if (!strcmp(type, "bool")) elem = ELEMENT_BOOL, size = 1;
            else die("input type: f32, i64 or bool");
            char path[8192];
            snprintf(path, sizeof path, "%s%s", dir, file);
            size_t len;
            void *data = read_file(path, &len);
            if (len != count * size) {
                fprintf(stderr, "ort_peer: %s: %zu bytes, the shape needs %zu\n", path, len,
                        count * size);
                return 1;
            }
            in_names[n_in] = strdup(name);
            in[n_in++] = tensor(data, len, dims, rank, elem);
        } else if (!strcmp(kind, "out")) {
            if (n_out == MAX_VALUES) die("too many outputs");
            char *file = strtok_r(NULL, " \t\n", &save), *t = strtok_r(NULL, " \t\n", &save);
            char *mode = strtok_r(NULL, " \t\n", &save);
            if (!file || !t) die("spec: out NAME FILE TOL [l2]");
            l2[n_out] = mode && !strcmp(mode, "l2");
            char path[8192];
            snprintf(path, sizeof path, "%s%s", dir, file);
            out_names[n_out] = strdup(name);
            want_files[n_out] = strcmp(file, "-") ? strdup(path) : NULL;
            tol[n_out++] = atof(t);
        } else {
            die("spec: lines are `in ...` or `out ...`");
        }
    }
    fclose(f);

    Handle s = session(model);
    run(s, in_names, in, n_in, out_names, out, n_out);
    for (size_t i = 0; i < n_out; i++) release(out[i]);
    REGION_START(1);
    run(s, in_names, in, n_in, out_names, out, n_out);
    REGION_STOP(1);
    int bad = 0;
    for (size_t i = 0; i < n_out; i++) {
        if (!want_files[i]) continue;
        size_t n, len;
        const float *got = floats(out[i], &n);
        const float *want = read_file(want_files[i], &len);
        if (len != n * sizeof(float)) {
            fprintf(stderr, "ort_peer: %s: %zu values, expected %zu\n", out_names[i], n,
                    len / sizeof(float));
            bad = 1;
            continue;
        }
        double max = 0, diff2 = 0, want2 = 0;
        for (size_t j = 0; j < n; j++) {
            double d = fabs((double)got[j] - want[j]);
            if (!(d <= max)) max = d; /* NaN propagates */
            diff2 += d * d;
            want2 += (double)want[j] * want[j];
        }
        double err = l2[i] ? sqrt(diff2 / want2) : max;
        fprintf(stderr, "%s: %zu values, %s = %.3g (tolerance %.3g)\n", out_names[i], n,
                l2[i] ? "relative L2 of ORT - expected" : "max |ORT - expected|", err, tol[i]);
        if (!(err <= tol[i])) bad = 1;
    }
    return bad;
}

int main(int argc, char **argv) {
    if (argc >= 7 && !strcmp(argv[2], "vad")) {
        load(argv[1]);
        return vad(argv[3], argv[4], atol(argv[5]), atof(argv[6]));
    }
    if (argc == 5 && !strcmp(argv[2], "run")) {
        load(argv[1]);
        return run_spec(argv[3], argv[4]);
    }
    fprintf(stderr, "usage: ort_peer LIB vad MODEL WAV K GOLDEN | ort_peer LIB run MODEL SPEC\n");
    return 2;
}
