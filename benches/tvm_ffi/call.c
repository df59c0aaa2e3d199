/* tvm-ffi's C API from C, on whichever libtvm_ffi this is linked to (the real one or this
 * runtime), three loops, each timed as the median of batches for `seconds`:
 * - call: a C function made with TVMFFIFunctionCreate, called with two ints through
 *   TVMFFIFunctionCall;
 * - dlpack_in: a DLPack 1.x tensor (2-d float32, a deleter that counts) taken in with
 *   TVMFFITensorFromDLPackVersioned and released;
 * - dlpack_out: that tensor handed out with TVMFFITensorToDLPackVersioned and the result's
 *   deleter called.
 * Prints one JSON line: nanoseconds per operation. `call.c SECONDS call` runs the call loop
 * alone. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <tvm/ffi/c_api.h>

static int add(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  (void)n;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + args[1].v_int64;
  return 0;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum { kMaxBatches = 4096 };

/* The median over batches of `step(state)` run `batch` times, batches for `seconds`; NAN when a
 * step fails. */
static double timed(double seconds, int batch, int (*step)(void*), void* state) {
  static double per_op[kMaxBatches];
  int batches = 0;
  double end = now_ns() + seconds * 1e9;
  while (batches < kMaxBatches && now_ns() < end) {
    double t = now_ns();
    for (int i = 0; i < batch; i++) {
      if (step(state) != 0) return NAN;
    }
    per_op[batches++] = (now_ns() - t) / batch;
  }
  qsort(per_op, batches, sizeof per_op[0], cmp);
  return per_op[batches / 2];
}

static long deleted;
static void count_delete(DLManagedTensorVersioned* m) {
  (void)m;
  deleted++;
}

static int dlpack_in(void* state) {
  TVMFFIObjectHandle t;
  if (TVMFFITensorFromDLPackVersioned((DLManagedTensorVersioned*)state, 0, 0, &t) != 0) return 1;
  return TVMFFIObjectDecRef(t);
}

static int dlpack_out(void* state) {
  DLManagedTensorVersioned* m;
  if (TVMFFITensorToDLPackVersioned(state, &m) != 0) return 1;
  m->deleter(m);
  return 0;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, add, NULL, &f) != 0) return 1;
  TVMFFIAny args[2], out;
  memset(args, 0, sizeof args);
  args[0].type_index = args[1].type_index = kTVMFFIInt;
  args[1].v_int64 = 1;
  /* Inline rather than through `timed`: an indirect call per step would take as long as the
   * call measured. */
  enum { kBatch = 100000 };
  static double per_call[kMaxBatches];
  int batches = 0;
  double end = now_ns() + seconds * 1e9;
  while (batches < kMaxBatches && now_ns() < end) {
    double t = now_ns();
    for (int i = 0; i < kBatch; i++) {
      if (TVMFFIFunctionCall(f, args, 2, &out) != 0) return 1;
      args[0].v_int64 = out.v_int64;
    }
    per_call[batches++] = (now_ns() - t) / kBatch;
  }
  if (args[0].v_int64 != (int64_t)batches * kBatch) return 2; /* every call ran */
  qsort(per_call, batches, sizeof per_call[0], cmp);
  TVMFFIObjectDecRef(f);
  if (argc > 2 && strcmp(argv[2], "call") == 0) {
    printf("{\"call_ns\": %.2f, \"batches\": %d}\n", per_call[batches / 2], batches);
    return 0;
  }

  static float data[64] __attribute__((aligned(64)));
  int64_t shape[2] = {8, 8};
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = DLPACK_MAJOR_VERSION;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;
  m.deleter = count_delete;
  double in_ns = timed(seconds, 10000, dlpack_in, &m);
  TVMFFIObjectHandle t;
  if (TVMFFITensorFromDLPackVersioned(&m, 0, 0, &t) != 0) return 3;
  double out_ns = timed(seconds, 10000, dlpack_out, t);
  TVMFFIObjectDecRef(t);
  if (in_ns != in_ns || out_ns != out_ns || deleted == 0) return 4; /* every step ran, tensors freed */
  printf("{\"call_ns\": %.2f, \"dlpack_in_ns\": %.2f, \"dlpack_out_ns\": %.2f, \"batches\": %d}\n",
         per_call[batches / 2], in_ns, out_ns, batches);
  return 0;
}
