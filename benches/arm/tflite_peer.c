/* tflite_peer: the TFLite peer of benches/arm/tflite.sh, an aarch64 program that runs .tflite
 * models through TFLite's C library (libtensorflowlite_c.so of pymicro-wakeword 2.5.0's aarch64
 * wheel: TFLite 2.17.1, loaded with dlopen) under the insn-count plugin, with the region markers
 * of our bench binaries (benches/src/bin/insn_*.rs) around the counted steps.
 *
 *   tflite_peer LIB STEPS WARM MODEL:IN:OUT[:D0xD1x...] [MODEL:IN:OUT[:SHAPE] ...]
 *
 * LIB: the path of libtensorflowlite_c.so. Each MODEL gets its own interpreter on one thread
 * (TfLiteInterpreterOptionsSetNumThreads(1)); SHAPE, when given, resizes its input tensor 0
 * first (e.g. 1x1760 for openWakeWord's melspectrogram). IN holds STEPS records of input
 * tensor 0's byte size; OUT receives STEPS records of output tensor 0's bytes. A step runs the
 * models in the order given: copy record s of IN into input 0, invoke, copy output 0 out (a
 * model's state, such as microWakeWord's stream variables, carries over from step to step).
 * In steps WARM..STEPS-1 the i-th model's copy in, invoke and copy out run inside region i
 * (1-based; svc #0 with x8 = 0x5A5A0 / 0x5A5A1, x0 = i, as count-insns.sh --region counts:
 * its total is the sum, its report has each region's count), so the count is the work of
 * STEPS - WARM steps; loading, allocation and the warm-up steps are not counted. Exit status 1
 * with a message on failure.
 *
 * Only the C API functions used are declared, with the signatures of TFLite's
 * tensorflow/lite/core/c/c_api.h; they are resolved by name with dlsym. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"

typedef struct TfLiteModel TfLiteModel;
typedef struct TfLiteInterpreter TfLiteInterpreter;
typedef struct TfLiteInterpreterOptions TfLiteInterpreterOptions;
typedef struct TfLiteTensor TfLiteTensor;

static struct {
  TfLiteModel* (*model_create_from_file)(const char*);
  TfLiteInterpreterOptions* (*options_create)(void);
  void (*options_set_num_threads)(TfLiteInterpreterOptions*, int32_t);
  TfLiteInterpreter* (*interpreter_create)(const TfLiteModel*, const TfLiteInterpreterOptions*);
  int (*resize_input)(TfLiteInterpreter*, int32_t, const int*, int32_t);
  int (*allocate)(TfLiteInterpreter*);
  TfLiteTensor* (*input)(const TfLiteInterpreter*, int32_t);
  const TfLiteTensor* (*output)(const TfLiteInterpreter*, int32_t);
  int (*copy_from)(TfLiteTensor*, const void*, size_t);
  int (*copy_to)(const TfLiteTensor*, void*, size_t);
  int (*invoke)(TfLiteInterpreter*);
  size_t (*byte_size)(const TfLiteTensor*);
} api;

#define MAX_MODELS 8
#define MAX_DIMS 8

struct stage {
  TfLiteInterpreter* it;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  unsigned char* inputs; /* STEPS records of in_bytes */
  unsigned char* outputs; /* STEPS records of out_bytes */
  size_t in_bytes, out_bytes;
  const char* out_path;
};

static int fail(const char* what, const char* detail) {
  fprintf(stderr, "tflite_peer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

static int resolve(void* lib) {
#define SYM(field, name)                                 \
  *(void**)(&api.field) = dlsym(lib, name);              \
  if (api.field == NULL) return fail("missing symbol", name);
  SYM(model_create_from_file, "TfLiteModelCreateFromFile");
  SYM(options_create, "TfLiteInterpreterOptionsCreate");
  SYM(options_set_num_threads, "TfLiteInterpreterOptionsSetNumThreads");
  SYM(interpreter_create, "TfLiteInterpreterCreate");
  SYM(resize_input, "TfLiteInterpreterResizeInputTensor");
  SYM(allocate, "TfLiteInterpreterAllocateTensors");
  SYM(input, "TfLiteInterpreterGetInputTensor");
  SYM(output, "TfLiteInterpreterGetOutputTensor");
  SYM(copy_from, "TfLiteTensorCopyFromBuffer");
  SYM(copy_to, "TfLiteTensorCopyToBuffer");
  SYM(invoke, "TfLiteInterpreterInvoke");
  SYM(byte_size, "TfLiteTensorByteSize");
#undef SYM
  return 0;
}

/* Reads the whole file at path into a new buffer of exactly want bytes. */
static unsigned char* read_exact(const char* path, size_t want) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  unsigned char* buf = malloc(want + 1);
  size_t got = buf ? fread(buf, 1, want + 1, f) : 0;
  fclose(f);
  if (buf == NULL || got != want) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* spec: MODEL:IN:OUT[:SHAPE] (modified in place). */
static int open_stage(char* spec, size_t steps, struct stage* st) {
  char* model_path = strtok(spec, ":");
  char* in_path = strtok(NULL, ":");
  st->out_path = strtok(NULL, ":");
  char* shape = strtok(NULL, ":");
  if (model_path == NULL || in_path == NULL || st->out_path == NULL)
    return fail("a stage is MODEL:IN:OUT[:SHAPE]", spec);
  TfLiteModel* model = api.model_create_from_file(model_path);
  if (model == NULL) return fail("cannot load the model", model_path);
  TfLiteInterpreterOptions* options = api.options_create();
  if (options == NULL) return fail("cannot create the options", model_path);
  api.options_set_num_threads(options, 1);
  st->it = api.interpreter_create(model, options);
  if (st->it == NULL) return fail("cannot create the interpreter", model_path);
  if (shape != NULL) {
    int dims[MAX_DIMS];
    int32_t n = 0;
    for (char* d = strtok(shape, "x"); d != NULL; d = strtok(NULL, "x")) {
      if (n == MAX_DIMS) return fail("too many dimensions", model_path);
      dims[n++] = atoi(d);
    }
    if (api.resize_input(st->it, 0, dims, n) != 0) return fail("cannot resize", model_path);
  }
  if (api.allocate(st->it) != 0) return fail("cannot allocate the tensors", model_path);
  st->in = api.input(st->it, 0);
  st->out = api.output(st->it, 0);
  if (st->in == NULL || st->out == NULL) return fail("no input or output 0", model_path);
  st->in_bytes = api.byte_size(st->in);
  st->out_bytes = api.byte_size(st->out);
  st->inputs = read_exact(in_path, steps * st->in_bytes);
  if (st->inputs == NULL) return fail("IN is not STEPS records of the input's size", in_path);
  st->outputs = calloc(steps, st->out_bytes);
  if (st->outputs == NULL) return fail("out of memory", NULL);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 5 || argc - 4 > MAX_MODELS)
    return fail("usage: tflite_peer LIB STEPS WARM MODEL:IN:OUT[:SHAPE] ...", NULL);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) return fail("cannot load the library", dlerror());
  if (resolve(lib) != 0) return 1;
  const size_t steps = strtoul(argv[2], NULL, 10), warm = strtoul(argv[3], NULL, 10);
  if (steps == 0 || warm >= steps) return fail("want 0 <= WARM < STEPS", NULL);
  struct stage stages[MAX_MODELS];
  const int n = argc - 4;
  for (int i = 0; i < n; ++i)
    if (open_stage(argv[4 + i], steps, &stages[i]) != 0) return 1;
  for (size_t s = 0; s < steps; ++s) {
    for (int i = 0; i < n; ++i) {
      struct stage* st = &stages[i];
      const uint64_t id = (uint64_t)i + 1;
      if (s >= warm) REGION_START(id);
      const int failed =
          api.copy_from(st->in, st->inputs + s * st->in_bytes, st->in_bytes) != 0 ||
          api.invoke(st->it) != 0 ||
          api.copy_to(st->out, st->outputs + s * st->out_bytes, st->out_bytes) != 0;
      if (s >= warm) REGION_STOP(id);
      if (failed) return fail("a step failed", NULL);
    }
  }
  for (int i = 0; i < n; ++i) {
    FILE* f = fopen(stages[i].out_path, "wb");
    if (f == NULL ||
        fwrite(stages[i].outputs, stages[i].out_bytes, steps, f) != steps || fclose(f) != 0)
      return fail("cannot write", stages[i].out_path);
  }
  return 0;
}
