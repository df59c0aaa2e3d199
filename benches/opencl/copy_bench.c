/* Host<->device copy bandwidth on OpenCL device 0, side by side in one run: this runtime's C API
 * (TVMArrayCopyFromBytes / TVMArrayCopyToBytes on an array TVMArrayAlloc put on kDLOpenCL) against
 * the OpenCL calls themselves (blocking clEnqueueWriteBuffer / clEnqueueReadBuffer on a buffer of
 * the same size, same platform). Alternating rounds, median of each; prints GB/s and ours/direct.
 * Built and run by benches/opencl/copy_bench.sh. On PoCL the device is CPU code: a "copy" is a
 * memcpy inside the same process. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tvm_runtime.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

#define ROUNDS 15
#define CHECK(c)                                              \
  do {                                                        \
    if (!(c)) {                                               \
      fprintf(stderr, "failed: %s (%s)\n", #c, TVMGetLastError()); \
      return 1;                                               \
    }                                                         \
  } while (0)

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_uint n = 0;
  if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0) {
    printf("skipped: no OpenCL platform\n");
    return 0;
  }
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) == CL_SUCCESS);
  cl_int err;
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
  printf("%10s %14s %14s %14s %14s %10s %10s\n", "bytes", "h2d ours GB/s", "h2d direct", "d2h ours GB/s", "d2h direct",
         "h2d ratio", "d2h ratio");
  size_t sizes[] = {64 << 10, 1 << 20, 16 << 20, 64 << 20};
  for (int s = 0; s < 4; ++s) {
    size_t bytes = sizes[s];
    char* host = malloc(bytes);
    memset(host, 1, bytes);
    int64_t shape[1] = {(int64_t)bytes};
    DLTensor* arr = NULL;
    CHECK(TVMArrayAlloc(shape, 1, 1, 8, 1, 4, 0, &arr) == 0);
    cl_mem mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    double t[4][ROUNDS];
    for (int r = 0; r < ROUNDS; ++r) {
      double t0 = now();
      CHECK(TVMArrayCopyFromBytes(arr, host, bytes) == 0);
      double t1 = now();
      CHECK(clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL) == CL_SUCCESS);
      double t2 = now();
      CHECK(TVMArrayCopyToBytes(arr, host, bytes) == 0);
      double t3 = now();
      CHECK(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL) == CL_SUCCESS);
      double t4 = now();
      t[0][r] = t1 - t0, t[1][r] = t2 - t1, t[2][r] = t3 - t2, t[3][r] = t4 - t3;
    }
    double gbs[4];
    for (int k = 0; k < 4; ++k) {
      qsort(t[k], ROUNDS, sizeof(double), cmp);
      gbs[k] = bytes / t[k][ROUNDS / 2] / 1e9;
    }
    printf("%10zu %14.2f %14.2f %14.2f %14.2f %10.2f %10.2f\n", bytes, gbs[0], gbs[1], gbs[2], gbs[3], gbs[0] / gbs[1],
           gbs[2] / gbs[3]);
    clReleaseMemObject(mem);
    TVMArrayFree(arr);
    free(host);
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return 0;
}
