/*
 * What every kernel of the demo models shares (examples/demo/kernels.c, seq_kernels.c): TVM's
 * compiled-kernel ABI as its LLVM backend emits it.
 *
 *   - the context pointers the runtime fills in at load time (__TVMAPISetLastError,
 *     __TVMBackendParallelLaunch, ...), so a library has no undefined references to the runtime;
 *   - argument checks (count, type codes, dtype, ndim, shape, strides, byte_offset, device) the
 *     way make_packed_api.cc / arg_binder.cc do, failing with __TVMAPISetLastError + return -1;
 *   - the split of a parallel loop's iterations by task.
 *
 * Included once per library (it defines the exported context pointers).
 */
#ifndef DEMO_KERNEL_ABI_H
#define DEMO_KERNEL_ABI_H

#include <tvm/runtime/c_backend_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

/* Context pointers: zero-initialised here, filled by the runtime when it loads the library. */
EXPORT void* __tvm_module_ctx = NULL;
EXPORT void (*__TVMAPISetLastError)(const char*) = NULL;
EXPORT int (*__TVMBackendParallelLaunch)(FTVMParallelLambda, void*, int) = NULL;
EXPORT int (*__TVMBackendParallelBarrier)(int, TVMParallelGroupEnv*) = NULL;
EXPORT void* (*__TVMBackendAllocWorkspace)(int, int, uint64_t, int, int) = NULL;
EXPORT int (*__TVMBackendFreeWorkspace)(int, int, void*) = NULL;
EXPORT int (*__TVMBackendGetFuncFromEnv)(void*, const char*, TVMFunctionHandle*) = NULL;
EXPORT int (*__TVMFuncCall)(TVMFunctionHandle, TVMValue*, int*, int, TVMValue*, int*) = NULL;

/* ------------------------------------------------------------------------------------------ */
/* Argument checking (messages modelled on TVM's generated asserts).                           */

static _Thread_local char err_buf[512];

static int fail(const char* msg) {
  __TVMAPISetLastError(msg);
  return -1;
}

/* Checks argument `i` is a float32 CPU tensor of exactly `shape` (compact, byte_offset 0, data
 * non-NULL, same device_id as argument 0). Returns the tensor, or NULL with the error set. */
static const DLTensor* tensor_arg(const TVMValue* args, const int* codes, int i, const char* fn, int ndim,
                                  const int64_t* shape) {
  int code = codes[i];
  if (code != kTVMOpaqueHandle && code != kTVMNDArrayHandle && code != kTVMDLTensorHandle &&
      code != kTVMNullptr) {
    snprintf(err_buf, sizeof err_buf,
             "Assert fail: p%d_code == 3 || p%d_code == 13 || p%d_code == 7 || p%d_code == 4, %s: Expect "
             "arg[%d] to be pointer",
             i, i, i, i, fn, i);
    fail(err_buf);
    return NULL;
  }
  const DLTensor* t = (const DLTensor*)args[i].v_handle;
  if (t == NULL) {
    snprintf(err_buf, sizeof err_buf, "Assert fail: p%d != NULL, %s: arg[%d] is a NULL tensor", i, fn, i);
    fail(err_buf);
    return NULL;
  }
  if (t->ndim != ndim) {
    snprintf(err_buf, sizeof err_buf, "Assert fail: %d == p%d.ndim, %s.p%d.ndim is expected to equal %d, got %d",
             ndim, i, fn, i, ndim, (int)t->ndim);
    fail(err_buf);
    return NULL;
  }
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    snprintf(err_buf, sizeof err_buf,
             "Assert fail: p%d.dtype == float32, %s.p%d.dtype is expected to be float32 (got code %d bits %d "
             "lanes %d)",
             i, fn, i, t->dtype.code, t->dtype.bits, t->dtype.lanes);
    fail(err_buf);
    return NULL;
  }
  for (int d = 0; d < ndim; ++d) {
    if (t->shape[d] != shape[d]) {
      snprintf(err_buf, sizeof err_buf,
               "Assert fail: %lld == p%d.shape[%d], Argument %s.p%d.shape[%d] has an unmatched value: expected "
               "%lld, got %lld",
               (long long)shape[d], i, d, fn, i, d, (long long)shape[d], (long long)t->shape[d]);
      fail(err_buf);
      return NULL;
    }
  }
  if (t->strides != NULL) {
    int64_t expect = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && t->strides[d] != expect) {
        snprintf(err_buf, sizeof err_buf, "Assert fail: %s.p%d.strides: expected to be compact array", fn, i);
        fail(err_buf);
        return NULL;
      }
      expect *= shape[d];
    }
  }
  if (t->byte_offset != 0) {
    snprintf(err_buf, sizeof err_buf,
             "Assert fail: p%d.byte_offset == 0, Argument %s.p%d.byte_offset has an unmatched value: expected 0",
             i, fn, i);
    fail(err_buf);
    return NULL;
  }
  if (t->device.device_type != kDLCPU) {
    snprintf(err_buf, sizeof err_buf,
             "Assert fail: 1 == p%d.device_type, Argument %s.p%d.device_type has an unmatched value: expected 1, "
             "got %d",
             i, fn, i, (int)t->device.device_type);
    fail(err_buf);
    return NULL;
  }
  if (i > 0) {
    const DLTensor* t0 = (const DLTensor*)args[0].v_handle;
    if (t->device.device_id != t0->device.device_id) {
      snprintf(err_buf, sizeof err_buf,
               "Assert fail: dev_id == p%d.device_id, Argument %s.p%d.device_id has an unmatched value", i, fn,
               i);
      fail(err_buf);
      return NULL;
    }
  }
  if (t->data == NULL) {
    snprintf(err_buf, sizeof err_buf, "Assert fail: p%d != NULL, %s.p%d is expected to have non-NULL data pointer",
             i, fn, i);
    fail(err_buf);
    return NULL;
  }
  return t;
}

static int check_num_args(const TVMValue* args, const int* codes, int num_args, int expected, const char* fn) {
  if (num_args != expected) {
    snprintf(err_buf, sizeof err_buf, "Assert fail: num_args == %d, %s: num_args should be %d, got %d", expected,
             fn, expected, num_args);
    return fail(err_buf);
  }
  if (args == NULL || codes == NULL) {
    snprintf(err_buf, sizeof err_buf, "Assert fail: args != NULL && arg_type_ids != NULL, %s: args pointer is NULL",
             fn);
    return fail(err_buf);
  }
  return 0;
}

static int64_t chunk_begin(int64_t n, int task_id, int num_task) {
  int64_t chunk = (n + num_task - 1) / num_task;
  int64_t b = chunk * task_id;
  return b < n ? b : n;
}

static int64_t chunk_end(int64_t n, int task_id, int num_task) {
  int64_t chunk = (n + num_task - 1) / num_task;
  int64_t e = chunk * (task_id + 1);
  return e < n ? e : n;
}

#endif /* DEMO_KERNEL_ABI_H */
