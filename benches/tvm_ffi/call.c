/* A packed call from C through tvm-ffi's C API, on whichever libtvm_ffi this is linked to (the
 * real one or this runtime): a C function made with TVMFFIFunctionCreate, called with two ints
 * through TVMFFIFunctionCall. Prints one JSON line: nanoseconds per call (median of batches). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, add, NULL, &f) != 0) return 1;
  TVMFFIAny args[2], out;
  memset(args, 0, sizeof args);
  args[0].type_index = args[1].type_index = kTVMFFIInt;
  args[1].v_int64 = 1;
  enum { kBatch = 100000, kMaxBatches = 4096 };
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
  printf("{\"call_ns\": %.2f, \"batches\": %d}\n", per_call[batches / 2], batches);
  TVMFFIObjectDecRef(f);
  return 0;
}
