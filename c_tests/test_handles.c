/*
 * Checked handles (TVM_RUNTIME_CHECK_HANDLES=1): stale and made-up module, function, NDArray
 * and object handles are errors naming the handle, never a crash or a release of someone else's
 * object, and the process keeps working. The program switches the mode on itself (before its
 * first TVM call), so it checks the same thing when run by hand.
 */
#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>

#include "tvm_test.h"

#ifndef TVM_TEST_KERNELS_SO
#error "TVM_TEST_KERNELS_SO must be defined by the build"
#endif

#define NOT_LIVE "is not live (freed already, or not created by this runtime)"

static void* const INVENTED = (void*)0x10;
static void* const INVENTED_HIGH = (void*)0x7f0000001000;

static int answer(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)args;
  (void)codes;
  (void)n;
  TVMValue v;
  int c = kTVMArgInt;
  v.v_int64 = (int64_t)(intptr_t)res;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

static int64_t call_int(TVMFunctionHandle f) {
  TVMValue rv;
  int rc = -1;
  if (TVMFuncCall(f, NULL, NULL, 0, &rv, &rc) != 0 || rc != kTVMArgInt) return -1;
  return rv.v_int64;
}

/* runtime.ModuleGetTypeKey(m): calls a global with a module argument. */
static int type_key_of(void* m, int code, char* out, size_t size) {
  TVMFunctionHandle f = NULL;
  if (TVMFuncGetGlobal("runtime.ModuleGetTypeKey", &f) != 0 || f == NULL) return -1;
  TVMValue a, rv;
  int c = code, rc = -1;
  a.v_handle = m;
  int status = TVMFuncCall(f, &a, &c, 1, &rv, &rc);
  TVMFuncFree(f);
  if (status == 0 && rc == kTVMStr) snprintf(out, size, "%s", rv.v_str);
  return status;
}

static void test_modules(void) {
  void* a = NULL;
  void* b = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &a));
  CHECK_OK(TVMModFree(a));
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &b));
  /* a second free of `a`, with a new module made since: an error, and `b` is untouched */
  CHECK_FAIL(TVMModFree(a), NOT_LIVE);
  CHECK_FAIL(TVMModFree(a), "module handle 0x");
  void* f = (void*)1;
  CHECK_FAIL(TVMModGetFunction(a, "tvmgen_default_fused_add", 0, &f), NOT_LIVE);
  CHECK(f == (void*)1);
  char key[64] = "";
  CHECK_FAIL(type_key_of(a, kTVMModuleHandle, key, sizeof key), NOT_LIVE);
  CHECK_OK(type_key_of(b, kTVMModuleHandle, key, sizeof key));
  CHECK(key[0] != 0);
  CHECK_OK(TVMModGetFunction(b, "tvmgen_default_fused_add", 0, &f));
  CHECK(f != NULL && f != (void*)1);
  if (f != NULL && f != (void*)1) CHECK_OK(TVMFuncFree(f));
  /* made-up handles */
  CHECK_FAIL(TVMModGetFunction(INVENTED, "x", 0, &f), "module handle 0x10 " NOT_LIVE);
  CHECK_FAIL(TVMModGetFunction(INVENTED_HIGH, "x", 0, &f), NOT_LIVE);
  CHECK_FAIL(TVMModFree(INVENTED), "module handle 0x10 " NOT_LIVE);
  CHECK_FAIL(TVMModImport(b, INVENTED), NOT_LIVE);
  CHECK_FAIL(TVMModImport(INVENTED, b), NOT_LIVE);
  CHECK_OK(TVMModFree(b));
  CHECK_FAIL(TVMModFree(b), NOT_LIVE);
}

static void test_functions(void) {
  TVMFunctionHandle f1 = NULL, f2 = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(answer, (void*)(intptr_t)1, NULL, &f1));
  CHECK(call_int(f1) == 1);
  CHECK_OK(TVMFuncFree(f1));
  REQUIRE_OK(TVMFuncCreateFromCFunc(answer, (void*)(intptr_t)2, NULL, &f2));
  CHECK_FAIL(TVMFuncFree(f1), "function handle 0x");
  CHECK_FAIL(TVMFuncFree(f1), NOT_LIVE);
  TVMValue rv;
  int rc;
  CHECK_FAIL(TVMFuncCall(f1, NULL, NULL, 0, &rv, &rc), NOT_LIVE);
  CHECK(call_int(f2) == 2); /* the new function is untouched */
  CHECK_FAIL(TVMFuncCall(INVENTED, NULL, NULL, 0, &rv, &rc), "function handle 0x10 " NOT_LIVE);
  CHECK_FAIL(TVMFuncCall(INVENTED_HIGH, NULL, NULL, 0, &rv, &rc), NOT_LIVE);
  CHECK_FAIL(TVMFuncFree(INVENTED), NOT_LIVE);
  CHECK_FAIL(TVMFuncRegisterGlobal("test_handles.stale", f1, 1), NOT_LIVE);
  /* a stale function passed as an argument */
  TVMValue a;
  int c = kTVMPackedFuncHandle;
  a.v_handle = f1;
  CHECK_FAIL(TVMCbArgToReturn(&a, &c), NOT_LIVE);
  CHECK_OK(TVMFuncFree(f2));
}

static void test_arrays(void) {
  int64_t shape[1] = {4};
  TVMArrayHandle a1 = NULL, a2 = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a1));
  CHECK_OK(TVMArrayFree(a1));
  REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a2));
  CHECK_FAIL(TVMArrayFree(a1), "NDArray handle 0x");
  CHECK_FAIL(TVMArrayFree(a1), NOT_LIVE);
  DLManagedTensor* dl = NULL;
  CHECK_FAIL(TVMArrayToDLPack(a1, &dl), NOT_LIVE);
  unsigned tindex = 0;
  CHECK_FAIL(TVMArrayGetTypeIndex(a1, &tindex), NOT_LIVE);
  CHECK_FAIL(TVMArrayFree((TVMArrayHandle)INVENTED), NOT_LIVE);
  CHECK_FAIL(TVMArrayFree((TVMArrayHandle)INVENTED_HIGH), NOT_LIVE);
  /* the new array is untouched */
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  CHECK_OK(TVMArrayCopyFromBytes(a2, in, sizeof in));
  CHECK_OK(TVMArrayCopyToBytes(a2, out, sizeof out));
  CHECK(out[3] == 4.0f);
  CHECK_OK(TVMArrayGetTypeIndex(a2, &tindex));
  CHECK_OK(TVMArrayFree(a2));
}

static void* make_map(void) {
  TVMFunctionHandle f = NULL;
  if (TVMFuncGetGlobal("runtime.Map", &f) != 0 || f == NULL) return NULL;
  TVMValue rv;
  int rc = -1;
  int status = TVMFuncCall(f, NULL, NULL, 0, &rv, &rc);
  TVMFuncFree(f);
  return status == 0 && rc == kTVMObjectHandle ? rv.v_handle : NULL;
}

static void test_objects(void) {
  void* o1 = make_map();
  REQUIRE(o1 != NULL);
  CHECK_OK(TVMObjectFree(o1));
  void* o2 = make_map();
  REQUIRE(o2 != NULL);
  CHECK_FAIL(TVMObjectFree(o1), "object handle 0x");
  CHECK_FAIL(TVMObjectFree(o1), NOT_LIVE);
  CHECK_FAIL(TVMObjectRetain(o1), NOT_LIVE);
  unsigned tindex = 0;
  CHECK_FAIL(TVMObjectGetTypeIndex(o1, &tindex), NOT_LIVE);
  CHECK_FAIL(TVMObjectGetTypeIndex(INVENTED, &tindex), "object handle 0x10 " NOT_LIVE);
  CHECK_FAIL(TVMObjectRetain(INVENTED_HIGH), NOT_LIVE);
  CHECK_FAIL(TVMObjectFree(INVENTED), NOT_LIVE);
  /* the new object is untouched */
  CHECK_OK(TVMObjectGetTypeIndex(o2, &tindex));
  CHECK_OK(TVMObjectRetain(o2));
  CHECK_OK(TVMObjectFree(o2));
  CHECK_OK(TVMObjectFree(o2));
  CHECK_FAIL(TVMObjectFree(o2), NOT_LIVE);
  /* a stale object passed to a function as an argument */
  TVMFunctionHandle f = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("runtime.MapGetItem", &f));
  TVMValue args[2];
  int codes[2] = {kTVMObjectHandle, kTVMArgInt};
  args[0].v_handle = o1;
  args[1].v_int64 = 0;
  TVMValue rv;
  int rc;
  CHECK_FAIL(TVMFuncCall(f, args, codes, 2, &rv, &rc), NOT_LIVE);
  CHECK_OK(TVMFuncFree(f));
}

int main(void) {
  /* Decided once, when the runtime makes its first object: before any TVM call. */
  setenv("TVM_RUNTIME_CHECK_HANDLES", "1", 1);
  test_modules();
  test_functions();
  test_arrays();
  test_objects();
  /* still working: a fresh round of everything */
  test_functions();
  test_arrays();
  return tvm_test_summary("test_handles");
}
