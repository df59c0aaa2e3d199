/*
 * Acceptance test: written purely against TVM v0.18's public <tvm/runtime/c_runtime_api.h>, the
 * way a TVM user would write it: it includes no header of this project and uses only plain C.
 *
 * One expectation is stricter than stock TVM: Apache TVM's registry leaks the entry erased by
 * TVMFuncRemoveGlobal (registry.cc keeps `Registry*` objects forever), so there the callback's
 * finalizer would never run; this runtime releases it, and the test checks that it does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>

static int g_checks = 0;
static int g_failures = 0;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    g_checks++;                                                                         \
    if (!(cond)) {                                                                      \
      g_failures++;                                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
    }                                                                                   \
  } while (0)

#define CHECK_OK(call)                                                                  \
  do {                                                                                  \
    int rc_ = (call);                                                                   \
    g_checks++;                                                                         \
    if (rc_ != 0) {                                                                     \
      const char* e_ = TVMGetLastError();                                               \
      g_failures++;                                                                     \
      fprintf(stderr, "%s:%d: CHECK_OK failed: %s returned %d: %s\n", __FILE__, __LINE__, \
              #call, rc_, e_ ? e_ : "(no error message)");                              \
    }                                                                                   \
  } while (0)

/* Stop when a set-up step fails: what follows would dereference its results. */
#define REQUIRE(cond)                                                                   \
  do {                                                                                  \
    int before_ = g_failures;                                                           \
    CHECK(cond);                                                                        \
    if (g_failures != before_) {                                                        \
      fprintf(stderr, "test_compat_api: stopping after a failed requirement\n");       \
      return 1;                                                                         \
    }                                                                                   \
  } while (0)

/* ---- the callback under test ------------------------------------------------------------- */

typedef struct {
  int calls;
  int finalized;
  void* finalized_with;
} Resource;

static void finalize_resource(void* resource_handle) {
  Resource* r = (Resource*)resource_handle;
  r->finalized++;
  r->finalized_with = resource_handle;
}

static float sum_f32(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  const float* p = (const float*)((const char*)t->data + t->byte_offset);
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += p[i];
  return s;
}

static int is_f32_cpu(const DLTensor* t) {
  return t != NULL && t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1 &&
         t->device.device_type == kDLCPU && t->strides == NULL;
}

/*
 * weighted_sum(int k, float w, str tag, DLTensor* x, NDArray y)
 *   = k * sum(x) + w * sum(y) + strlen(tag)
 * Fails (with a message) on any unexpected argument.
 */
static int weighted_sum(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                        void* resource_handle) {
  Resource* r = (Resource*)resource_handle;
  r->calls++;
  if (num_args != 5) {
    TVMAPISetLastError("weighted_sum: expected 5 arguments");
    return -1;
  }
  if (type_codes[0] != kTVMArgInt || type_codes[1] != kTVMArgFloat || type_codes[2] != kTVMStr ||
      type_codes[3] != kTVMDLTensorHandle || type_codes[4] != kTVMNDArrayHandle) {
    TVMAPISetLastError("weighted_sum: unexpected argument type codes");
    return -1;
  }
  if (strcmp(args[2].v_str, "tvm-compat") != 0) {
    TVMAPISetLastError("weighted_sum: unexpected tag string");
    return -1;
  }
  const DLTensor* x = (const DLTensor*)args[3].v_handle;
  const DLTensor* y = (const DLTensor*)args[4].v_handle;
  if (!is_f32_cpu(x) || !is_f32_cpu(y)) {
    TVMAPISetLastError("weighted_sum: tensors must be compact float32 on CPU");
    return -1;
  }
  double result = (double)args[0].v_int64 * sum_f32(x) + args[1].v_float64 * sum_f32(y) +
                  (double)strlen(args[2].v_str);
  TVMValue rv;
  int rcode = kTVMArgFloat;
  rv.v_float64 = result;
  return TVMCFuncSetReturn(ret, &rv, &rcode, 1);
}

static int is_aligned64(const void* p) { return ((uintptr_t)p % 64) == 0; }

int main(void) {
  /* ---- C callback as a global function ---------------------------------------------------- */
  Resource res = {0, 0, NULL};
  TVMFunctionHandle f = NULL;
  CHECK_OK(TVMFuncCreateFromCFunc(weighted_sum, &res, finalize_resource, &f));
  REQUIRE(f != NULL);
  CHECK_OK(TVMFuncRegisterGlobal("compat_test.weighted_sum", f, 0));

  TVMFunctionHandle g = NULL;
  CHECK_OK(TVMFuncGetGlobal("compat_test.weighted_sum", &g));
  REQUIRE(g != NULL);

  /* x: a DLTensor on the stack over a local buffer; 1+2+...+6 = 21 */
  float xbuf[6] = {1, 2, 3, 4, 5, 6};
  int64_t xshape[2] = {2, 3};
  DLTensor x;
  memset(&x, 0, sizeof x);
  x.data = xbuf;
  x.device.device_type = kDLCPU;
  x.device.device_id = 0;
  x.ndim = 2;
  x.dtype.code = kDLFloat;
  x.dtype.bits = 32;
  x.dtype.lanes = 1;
  x.shape = xshape;
  x.strides = NULL;
  x.byte_offset = 0;

  /* y: an NDArray from TVMArrayAlloc; 0.5+1.5+2.5+3.5 = 8 */
  int64_t yshape[1] = {4};
  TVMArrayHandle y = NULL;
  CHECK_OK(TVMArrayAlloc(yshape, 1, kDLFloat, 32, 1, kDLCPU, 0, &y));
  REQUIRE(y != NULL);
  CHECK(is_aligned64(y->data));
  CHECK(y->ndim == 1 && y->shape[0] == 4 && y->strides == NULL && y->byte_offset == 0);
  CHECK(y->dtype.code == kDLFloat && y->dtype.bits == 32 && y->dtype.lanes == 1);
  CHECK(y->device.device_type == kDLCPU && y->device.device_id == 0);
  float ybuf[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  CHECK_OK(TVMArrayCopyFromBytes(y, ybuf, sizeof ybuf));

  TVMValue args[5];
  int codes[5];
  args[0].v_int64 = 3;
  codes[0] = kTVMArgInt;
  args[1].v_float64 = 0.25;
  codes[1] = kTVMArgFloat;
  args[2].v_str = "tvm-compat";
  codes[2] = kTVMStr;
  args[3].v_handle = &x;
  codes[3] = kTVMDLTensorHandle;
  args[4].v_handle = y;
  codes[4] = kTVMNDArrayHandle;

  TVMValue rv;
  int rcode = -1;
  CHECK_OK(TVMFuncCall(g, args, codes, 5, &rv, &rcode));
  /* 3*21 + 0.25*8 + strlen("tvm-compat")=10  ->  63 + 2 + 10 = 75 */
  CHECK(rcode == kTVMArgFloat);
  CHECK(rcode == kTVMArgFloat && rv.v_float64 == 75.0);
  CHECK(res.calls == 1);

  /* Same call through the original handle, with different scalars: 2*21 + 4*8 + 10 = 84 */
  args[0].v_int64 = 2;
  args[1].v_float64 = 4.0;
  rcode = -1;
  CHECK_OK(TVMFuncCall(f, args, codes, 5, &rv, &rcode));
  CHECK(rcode == kTVMArgFloat && rv.v_float64 == 84.0);
  CHECK(res.calls == 2);

  /* The callback's error reaches the caller. */
  args[2].v_str = "wrong tag";
  CHECK(TVMFuncCall(g, args, codes, 5, &rv, &rcode) == -1);
  {
    const char* e = TVMGetLastError();
    CHECK(e != NULL && strstr(e, "unexpected tag string") != NULL);
  }
  args[2].v_str = "tvm-compat";

  /* ---- NDArray copies ---------------------------------------------------------------------- */
  int64_t shape23[2] = {2, 3};
  TVMArrayHandle a = NULL, b = NULL;
  CHECK_OK(TVMArrayAlloc(shape23, 2, kDLFloat, 32, 1, kDLCPU, 0, &a));
  CHECK_OK(TVMArrayAlloc(shape23, 2, kDLFloat, 32, 1, kDLCPU, 0, &b));
  REQUIRE(a != NULL && b != NULL);
  CHECK(a != b && a->data != b->data);
  CHECK(is_aligned64(a->data) && is_aligned64(b->data));
  float src[6] = {-1.5f, 0.0f, 2.25f, 1e10f, -3.0f, 42.0f};
  float back[6] = {0};
  CHECK_OK(TVMArrayCopyFromBytes(a, src, sizeof src));
  CHECK(memcmp(a->data, src, sizeof src) == 0);
  CHECK_OK(TVMArrayCopyFromTo(a, b, NULL));
  CHECK_OK(TVMArrayCopyToBytes(b, back, sizeof back));
  CHECK(memcmp(back, src, sizeof src) == 0);
  /* A stack DLTensor is a valid copy source/target too. */
  CHECK_OK(TVMArrayCopyFromTo(&x, a, NULL));
  CHECK_OK(TVMArrayCopyToBytes(a, back, sizeof back));
  CHECK(back[0] == 1.0f && back[5] == 6.0f);
  /* Wrong byte count is rejected and leaves a process that still works. */
  CHECK(TVMArrayCopyFromBytes(a, src, sizeof src - 4) == -1);
  CHECK(TVMGetLastError() != NULL);

  /* int64 array, 3-d, exact round trip */
  int64_t shape3d[3] = {2, 2, 2};
  TVMArrayHandle c = NULL;
  CHECK_OK(TVMArrayAlloc(shape3d, 3, kDLInt, 64, 1, kDLCPU, 0, &c));
  REQUIRE(c != NULL);
  CHECK(is_aligned64(c->data));
  int64_t ivals[8] = {1, -2, 3, -4, 5, -6, 7, INT64_MAX};
  int64_t iback[8] = {0};
  CHECK_OK(TVMArrayCopyFromBytes(c, ivals, sizeof ivals));
  CHECK_OK(TVMArrayCopyToBytes(c, iback, sizeof iback));
  CHECK(memcmp(ivals, iback, sizeof ivals) == 0);

  CHECK_OK(TVMArrayFree(a));
  CHECK_OK(TVMArrayFree(b));
  CHECK_OK(TVMArrayFree(c));
  CHECK_OK(TVMArrayFree(y));

  /* ---- release the function: finalizer runs after the last reference goes ------------------ */
  CHECK_OK(TVMFuncFree(g));
  CHECK(res.finalized == 0);
  CHECK_OK(TVMFuncFree(f));
  CHECK(res.finalized == 0); /* the registry still holds it */
  CHECK_OK(TVMFuncRemoveGlobal("compat_test.weighted_sum"));
  /* (stock TVM leaks removed registry entries; this runtime releases them) */
  CHECK(res.finalized == 1);
  CHECK(res.finalized_with == &res);
  TVMFunctionHandle gone = (TVMFunctionHandle)&res;
  CHECK_OK(TVMFuncGetGlobal("compat_test.weighted_sum", &gone));
  CHECK(gone == NULL);

  if (g_failures == 0) {
    printf("test_compat_api: %d checks passed\n", g_checks);
    return 0;
  }
  printf("test_compat_api: %d of %d checks FAILED\n", g_failures, g_checks);
  return 1;
}
