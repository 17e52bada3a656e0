/* Runs a .tflite model step by step through the TFLite C library and prints every output
 * tensor's bytes after each step, for arm64_check.sh (built for x86-64 and for aarch64, and
 * linked against the libtensorflowlite_c.so of the matching pymicro-wakeword 2.5.0 wheel).
 *
 *   step_driver MODEL INPUTS STEP_BYTES > OUT
 *
 * INPUTS holds the int8 input of consecutive steps, STEP_BYTES each. For every step the
 * driver copies one step into input tensor 0, invokes, and writes output tensors 0..n-1 in
 * order to stdout. The interpreter is created as pymicro-wakeword creates it
 * (TfLiteInterpreterCreate(model, NULL)). Only the C API functions used are declared here;
 * their signatures are those of TFLite's tensorflow/lite/core/c/c_api.h. Exit status 1 with a
 * message on any failure. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct TfLiteModel TfLiteModel;
typedef struct TfLiteInterpreter TfLiteInterpreter;
typedef struct TfLiteTensor TfLiteTensor;

TfLiteModel* TfLiteModelCreateFromFile(const char* path);
TfLiteInterpreter* TfLiteInterpreterCreate(const TfLiteModel* model, const void* options);
int TfLiteInterpreterAllocateTensors(TfLiteInterpreter* interpreter);
TfLiteTensor* TfLiteInterpreterGetInputTensor(const TfLiteInterpreter* interpreter, int32_t i);
int32_t TfLiteInterpreterGetOutputTensorCount(const TfLiteInterpreter* interpreter);
const TfLiteTensor* TfLiteInterpreterGetOutputTensor(const TfLiteInterpreter* interpreter,
                                                     int32_t i);
int TfLiteTensorCopyFromBuffer(TfLiteTensor* tensor, const void* data, size_t size);
int TfLiteInterpreterInvoke(TfLiteInterpreter* interpreter);
size_t TfLiteTensorByteSize(const TfLiteTensor* tensor);
void* TfLiteTensorData(const TfLiteTensor* tensor);

static int fail(const char* what) {
  fprintf(stderr, "step_driver: %s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) return fail("usage: step_driver MODEL INPUTS STEP_BYTES");
  const size_t step_bytes = (size_t)strtoul(argv[3], NULL, 10);
  TfLiteModel* model = TfLiteModelCreateFromFile(argv[1]);
  if (model == NULL) return fail("cannot load the model");
  TfLiteInterpreter* it = TfLiteInterpreterCreate(model, NULL);
  if (it == NULL || TfLiteInterpreterAllocateTensors(it) != 0)
    return fail("cannot create the interpreter");
  TfLiteTensor* input = TfLiteInterpreterGetInputTensor(it, 0);
  if (step_bytes == 0 || TfLiteTensorByteSize(input) != step_bytes)
    return fail("STEP_BYTES is not the input tensor's size");
  FILE* f = fopen(argv[2], "rb");
  if (f == NULL) return fail("cannot open INPUTS");
  unsigned char* buf = malloc(step_bytes);
  if (buf == NULL) return fail("out of memory");
  const int32_t outputs = TfLiteInterpreterGetOutputTensorCount(it);
  while (fread(buf, 1, step_bytes, f) == step_bytes) {
    if (TfLiteTensorCopyFromBuffer(input, buf, step_bytes) != 0) return fail("copy in failed");
    if (TfLiteInterpreterInvoke(it) != 0) return fail("invoke failed");
    for (int32_t i = 0; i < outputs; ++i) {
      const TfLiteTensor* t = TfLiteInterpreterGetOutputTensor(it, i);
      const size_t n = TfLiteTensorByteSize(t);
      if (fwrite(TfLiteTensorData(t), 1, n, stdout) != n) return fail("write failed");
    }
  }
  fclose(f);
  free(buf);
  return 0;
}
