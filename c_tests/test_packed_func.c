/*
 * Packed functions: every kind of return value, ownership of returned objects, string/bytes
 * buffer semantics, TVMCbArgToReturn, the global registry, and wrong-handle-type errors.
 */
#include <pthread.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

/* TVM 0.18's type index of an object, from the C API (the header holds tvm-ffi's). */
static uint32_t type_index_of_object(void* obj) {
  unsigned t = 0;
  return TVMObjectGetTypeIndex(obj, &t) == 0 ? t : 9999u;
}
/* An NDArray handle points 16 bytes into its object. */
static void* object_of_array(TVMArrayHandle h) { return (char*)h - 16; }

/* ---- a callback that returns whatever its first argument names ----------------------------- */

static int finalized_count = 0;
static void count_finalize(void* res) {
  (void)res;
  finalized_count++;
}

static int add_one(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("add_one: expected one int");
    return -1;
  }
  TVMValue v;
  int c = kTVMArgInt;
  v.v_int64 = args[0].v_int64 + 1;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

static int returner(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n < 1 || codes[0] != kTVMStr) {
    TVMAPISetLastError("returner: first argument must name what to return");
    return -1;
  }
  const char* what = args[0].v_str;
  TVMValue v;
  int c;
  if (strcmp(what, "int") == 0) {
    v.v_int64 = 123456789012LL;
    c = kTVMArgInt;
  } else if (strcmp(what, "negint") == 0) {
    v.v_int64 = INT64_MIN;
    c = kTVMArgInt;
  } else if (strcmp(what, "float") == 0) {
    v.v_float64 = -2.5e-3;
    c = kTVMArgFloat;
  } else if (strcmp(what, "bool") == 0) {
    v.v_int64 = 1;
    c = kTVMArgBool;
  } else if (strcmp(what, "str") == 0) {
    /* copied by TVMCFuncSetReturn: we scribble over our buffer afterwards */
    char buf[32];
    snprintf(buf, sizeof buf, "hello, %s", n > 1 && codes[1] == kTVMStr ? args[1].v_str : "packed");
    v.v_str = buf;
    c = kTVMStr;
    int rc = TVMCFuncSetReturn(ret, &v, &c, 1);
    memset(buf, '#', sizeof buf - 1);
    return rc;
  } else if (strcmp(what, "latin1") == 0) {
    /* C strings are byte strings: not necessarily UTF-8 */
    v.v_str = "caf\xe9 \xff\xfe end";
    c = kTVMStr;
  } else if (strcmp(what, "bytes") == 0) {
    char raw[5] = {'a', 'b', '\0', 'c', 'd'};
    TVMByteArray arr = {raw, sizeof raw};
    v.v_handle = &arr;
    c = kTVMBytes;
    int rc = TVMCFuncSetReturn(ret, &v, &c, 1);
    memset(raw, 0, sizeof raw);
    return rc;
  } else if (strcmp(what, "dtype") == 0) {
    v.v_type.code = (uint8_t)args[1].v_int64;
    v.v_type.bits = (uint8_t)args[2].v_int64;
    v.v_type.lanes = (uint16_t)args[3].v_int64;
    c = kTVMDataType;
  } else if (strcmp(what, "device") == 0) {
    v.v_device.device_type = kDLCPU;
    v.v_device.device_id = 3;
    c = kDLDevice;
  } else if (strcmp(what, "handle") == 0) {
    v.v_handle = (void*)(uintptr_t)0x1234;
    c = kTVMOpaqueHandle;
  } else if (strcmp(what, "null") == 0) {
    v.v_handle = NULL;
    c = kTVMNullptr;
  } else if (strcmp(what, "none") == 0) {
    return 0; /* sets nothing */
  } else if (strcmp(what, "arg") == 0) {
    /* return argument 1 as it is: objects gain a reference, the caller keeps its own */
    return TVMCFuncSetReturn(ret, &args[1], &codes[1], 1);
  } else if (strcmp(what, "new_array") == 0) {
    int64_t shape[1] = {3};
    TVMArrayHandle h = NULL;
    if (TVMArrayAlloc(shape, 1, kDLFloat, 64, 1, kDLCPU, 0, &h) != 0) return -1;
    double vals[3] = {1.25, -2.5, 1e300};
    if (TVMArrayCopyFromBytes(h, vals, sizeof vals) != 0) return -1;
    v.v_handle = h;
    c = kTVMNDArrayHandle;
    int rc = TVMCFuncSetReturn(ret, &v, &c, 1);
    TVMArrayFree(h); /* drop ours: the caller's reference is the only one left */
    return rc;
  } else if (strcmp(what, "new_func") == 0) {
    TVMFunctionHandle f = NULL;
    if (TVMFuncCreateFromCFunc(add_one, NULL, count_finalize, &f) != 0) return -1;
    v.v_handle = f;
    c = kTVMPackedFuncHandle;
    int rc = TVMCFuncSetReturn(ret, &v, &c, 1);
    TVMFuncFree(f);
    return rc;
  } else {
    TVMAPISetLastError("returner: unknown request");
    return -1;
  }
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

static TVMFunctionHandle g_returner;

static int call_returner(const char* what, TVMValue* rv, int* rc) {
  TVMValue a;
  int c = kTVMStr;
  a.v_str = what;
  *rc = -12345;
  return TVMFuncCall(g_returner, &a, &c, 1, rv, rc);
}

static int call_returner2(const char* what, TVMValue arg, int code, TVMValue* rv, int* rc) {
  TVMValue a[2];
  int c[2] = {kTVMStr, code};
  a[0].v_str = what;
  a[1] = arg;
  *rc = -12345;
  return TVMFuncCall(g_returner, a, c, 2, rv, rc);
}

static const char* dtype_string(int code, int bits, int lanes) {
  TVMValue a[4], rv;
  int c[4] = {kTVMStr, kTVMArgInt, kTVMArgInt, kTVMArgInt}, rc = -1;
  a[0].v_str = "dtype";
  a[1].v_int64 = code;
  a[2].v_int64 = bits;
  a[3].v_int64 = lanes;
  if (TVMFuncCall(g_returner, a, c, 4, &rv, &rc) != 0 || rc != kTVMStr) return NULL;
  return rv.v_str;
}

/* Calls the function in argument 0 with the remaining arguments and returns its result as is:
 * a string result is handed straight from the inner call's buffer to TVMCFuncSetReturn. */
static int forward(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n < 1 || codes[0] != kTVMPackedFuncHandle) {
    TVMAPISetLastError("forward: argument 0 must be a function");
    return -1;
  }
  TVMValue rv;
  int rc = kTVMNullptr;
  if (TVMFuncCall(args[0].v_handle, args + 1, codes + 1, n - 1, &rv, &rc) != 0) return -1;
  int status = TVMCFuncSetReturn(ret, &rv, &rc, 1);
  /* objects: TVMCFuncSetReturn took its own reference; drop the one the inner call gave us */
  if (rc == kTVMNDArrayHandle) TVMArrayFree((TVMArrayHandle)rv.v_handle);
  if (rc == kTVMPackedFuncHandle) TVMFuncFree(rv.v_handle);
  if (rc == kTVMModuleHandle) TVMModFree(rv.v_handle);
  return status;
}

/* Many threads calling string-returning functions at once: each must see its own results. */
#define STRESS_THREADS 8
#define STRESS_ITERS 2000
typedef struct {
  int id;
  int bad;
  TVMFunctionHandle fwd;
} StressArg;

static void* stress_thread(void* p) {
  StressArg* s = (StressArg*)p;
  char want[64];
  for (int i = 0; i < STRESS_ITERS; ++i) {
    char tag[32];
    snprintf(tag, sizeof tag, "t%d-i%d", s->id, i);
    snprintf(want, sizeof want, "hello, %s", tag);
    TVMValue a[3], rv;
    int c[3] = {kTVMPackedFuncHandle, kTVMStr, kTVMStr}, rc = -1;
    a[0].v_handle = g_returner;
    a[1].v_str = "str";
    a[2].v_str = tag;
    /* alternate direct and forwarded calls */
    int status = (i % 2) ? TVMFuncCall(g_returner, a + 1, c + 1, 2, &rv, &rc)
                         : TVMFuncCall(s->fwd, a, c, 3, &rv, &rc);
    if (status != 0 || rc != kTVMStr || strcmp(rv.v_str, want) != 0) s->bad++;
    if (i % 97 == 0) {
      int n = 0;
      const char** names = NULL;
      if (TVMFuncListGlobalNames(&n, &names) != 0 || n < 1) s->bad++;
    }
  }
  return NULL;
}

/* ---- thread-local string buffers ----------------------------------------------------------- */

static void* string_on_other_thread(void* arg) {
  int* ok = (int*)arg;
  TVMValue rv;
  int rc;
  TVMValue a;
  a.v_str = "other-thread";
  *ok = call_returner2("str", a, kTVMStr, &rv, &rc) == 0 && rc == kTVMStr &&
        strcmp(rv.v_str, "hello, other-thread") == 0;
  return NULL;
}

/* ---- TVMCbArgToReturn ------------------------------------------------------------------------ */

/* For argument 0 (any type): convert it with TVMCbArgToReturn and return it. Records what
 * happened in `CbResult` (resource handle). */
typedef struct {
  int convert_rc;
  int code_before, code_after;
  int32_t ref_before, ref_after;
  char error[256];
} CbResult;

static int cbarg_to_return(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  CbResult* r = (CbResult*)res;
  if (n != 1) {
    TVMAPISetLastError("cbarg_to_return: expected one argument");
    return -1;
  }
  TVMValue v = args[0];
  int c = codes[0];
  void* obj = NULL;
  if (c == kTVMNDArrayHandle) obj = object_of_array((TVMArrayHandle)v.v_handle);
  if (c == kTVMPackedFuncHandle || c == kTVMModuleHandle || c == kTVMObjectHandle) obj = v.v_handle;
  r->code_before = c;
  r->ref_before = obj ? tvm_test_refcount(obj) : -1;
  r->convert_rc = TVMCbArgToReturn(&v, &c);
  r->code_after = c;
  r->ref_after = obj ? tvm_test_refcount(obj) : -1;
  if (r->convert_rc != 0) {
    snprintf(r->error, sizeof r->error, "%s", TVMGetLastError() ? TVMGetLastError() : "");
    return 0; /* report through the resource, not as a failure */
  }
  r->error[0] = '\0';
  int rc = TVMCFuncSetReturn(ret, &v, &c, 1);
  /* TVMCbArgToReturn gave us a reference of our own: drop it */
  if (c == kTVMNDArrayHandle) TVMArrayFree((TVMArrayHandle)v.v_handle);
  if (c == kTVMPackedFuncHandle) TVMFuncFree(v.v_handle);
  if (c == kTVMModuleHandle) TVMModFree(v.v_handle);
  if (c == kTVMObjectHandle) TVMObjectFree(v.v_handle);
  return rc;
}

/* TVMCFuncSetReturn with num_ret != 1 must fail; records the results. */
typedef struct {
  int rc0, rc2, rc1;
  char error[256];
} NumRetResult;

static int bad_num_ret(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)args;
  (void)codes;
  (void)n;
  NumRetResult* r = (NumRetResult*)res;
  TVMValue v[2];
  int c[2] = {kTVMArgInt, kTVMArgInt};
  v[0].v_int64 = 1;
  v[1].v_int64 = 2;
  r->rc2 = TVMCFuncSetReturn(ret, v, c, 2);
  snprintf(r->error, sizeof r->error, "%s", TVMGetLastError() ? TVMGetLastError() : "");
  r->rc0 = TVMCFuncSetReturn(ret, v, c, 0);
  r->rc1 = TVMCFuncSetReturn(ret, &v[1], &c[1], 1);
  return 0;
}

int main(void) {
  REQUIRE_OK(TVMFuncCreateFromCFunc(returner, NULL, NULL, &g_returner));
  TVMValue rv;
  int rc;

  /* ---- POD results --------------------------------------------------------------------------- */
  CHECK_OK(call_returner("int", &rv, &rc));
  CHECK(rc == kTVMArgInt && rv.v_int64 == 123456789012LL);
  CHECK_OK(call_returner("negint", &rv, &rc));
  CHECK(rc == kTVMArgInt && rv.v_int64 == INT64_MIN);
  CHECK_OK(call_returner("float", &rv, &rc));
  CHECK(rc == kTVMArgFloat && rv.v_float64 == -2.5e-3);
  CHECK_OK(call_returner("bool", &rv, &rc));
  CHECK(rc == kTVMArgBool && rv.v_int64 == 1);
  CHECK_OK(call_returner("device", &rv, &rc));
  CHECK(rc == kDLDevice && rv.v_device.device_type == kDLCPU && rv.v_device.device_id == 3);
  CHECK_OK(call_returner("handle", &rv, &rc));
  CHECK(rc == kTVMOpaqueHandle && rv.v_handle == (void*)(uintptr_t)0x1234);
  CHECK_OK(call_returner("null", &rv, &rc));
  CHECK(rc == kTVMNullptr);
  CHECK_OK(call_returner("none", &rv, &rc));
  CHECK(rc == kTVMNullptr);

  /* ---- strings: copied, thread-local, valid until the next string-returning call ------------ */
  CHECK_OK(call_returner("str", &rv, &rc));
  CHECK(rc == kTVMStr);
  const char* s1 = rc == kTVMStr ? rv.v_str : NULL;
  CHECK_STREQ(s1, "hello, packed");
  /* a non-string result does not disturb the buffer */
  CHECK_OK(call_returner("int", &rv, &rc));
  CHECK_STREQ(s1, "hello, packed");
  /* another thread's string result does not disturb this thread's */
  {
    pthread_t t;
    int ok = 0;
    REQUIRE(pthread_create(&t, NULL, string_on_other_thread, &ok) == 0);
    pthread_join(t, NULL);
    CHECK(ok);
    CHECK_STREQ(s1, "hello, packed");
  }
  {
    TVMValue a;
    a.v_str = "second";
    CHECK_OK(call_returner2("str", a, kTVMStr, &rv, &rc));
    CHECK(rc == kTVMStr);
    CHECK_STREQ(rc == kTVMStr ? rv.v_str : NULL, "hello, second"); /* s1 is now stale */
  }

  /* strings are returned byte for byte (TVM's std::string), UTF-8 or not */
  CHECK_OK(call_returner("latin1", &rv, &rc));
  CHECK(rc == kTVMStr);
  CHECK_STREQ(rc == kTVMStr ? rv.v_str : NULL, "caf\xe9 \xff\xfe end");

  /* ---- bytes: thread-local TVMByteArray; TVMByteArrayFree on it is a no-op ------------------- */
  CHECK_OK(call_returner("bytes", &rv, &rc));
  CHECK(rc == kTVMBytes);
  if (rc == kTVMBytes) {
    TVMByteArray* ba = (TVMByteArray*)rv.v_handle;
    CHECK(ba != NULL && ba->size == 5 && memcmp(ba->data, "ab\0cd", 5) == 0);
    CHECK_OK(TVMByteArrayFree(ba));
    CHECK_OK(TVMByteArrayFree(ba)); /* still a no-op */
    CHECK(ba->size == 5 && memcmp(ba->data, "ab\0cd", 5) == 0);
  }

  /* ---- DLDataType results come back as strings ---------------------------------------------- */
  CHECK_STREQ(dtype_string(kDLFloat, 32, 1), "float32");
  CHECK_STREQ(dtype_string(kDLInt, 8, 4), "int8x4");
  CHECK_STREQ(dtype_string(kDLUInt, 1, 1), "bool");
  CHECK_STREQ(dtype_string(kDLUInt, 16, 1), "uint16");
  CHECK_STREQ(dtype_string(kDLFloat, 16, 1), "float16");
  CHECK_STREQ(dtype_string(kDLBfloat, 16, 1), "bfloat16");
  CHECK_STREQ(dtype_string(kDLOpaqueHandle, 64, 1), "handle");

  /* ---- objects come back as owned references -------------------------------------------------- */
  {
    int64_t shape[2] = {2, 2};
    TVMArrayHandle arr = NULL;
    REQUIRE_OK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &arr));
    void* obj = object_of_array(arr);
    CHECK(tvm_test_refcount(obj) == 1);
    TVMValue a;
    a.v_handle = arr;
    CHECK_OK(call_returner2("arg", a, kTVMNDArrayHandle, &rv, &rc));
    CHECK(rc == kTVMNDArrayHandle && rv.v_handle == arr);
    CHECK(tvm_test_refcount(obj) == 2);
    CHECK_OK(TVMArrayFree((TVMArrayHandle)rv.v_handle));
    CHECK(tvm_test_refcount(obj) == 1);
    /* a stack DLTensor (code 7) is passed through as a borrowed pointer */
    DLTensor t = *arr;
    a.v_handle = &t;
    CHECK_OK(call_returner2("arg", a, kTVMDLTensorHandle, &rv, &rc));
    CHECK(rc == kTVMDLTensorHandle && rv.v_handle == &t);
    CHECK(tvm_test_refcount(obj) == 1);
    CHECK_OK(TVMArrayFree(arr));
  }
  {
    /* a new array made inside the callback survives the callback's own free */
    CHECK_OK(call_returner("new_array", &rv, &rc));
    CHECK(rc == kTVMNDArrayHandle);
    if (rc == kTVMNDArrayHandle) {
      TVMArrayHandle h = (TVMArrayHandle)rv.v_handle;
      CHECK(tvm_test_refcount(object_of_array(h)) == 1);
      CHECK(h->ndim == 1 && h->shape[0] == 3 && h->dtype.bits == 64);
      double back[3] = {0, 0, 0};
      CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
      CHECK(back[0] == 1.25 && back[1] == -2.5 && back[2] == 1e300);
      CHECK_OK(TVMArrayFree(h));
    }
  }
  {
    /* function: passed in and returned (+1), and a new one made inside the callback */
    TVMValue a;
    a.v_handle = g_returner;
    int32_t before = tvm_test_refcount(g_returner);
    CHECK_OK(call_returner2("arg", a, kTVMPackedFuncHandle, &rv, &rc));
    CHECK(rc == kTVMPackedFuncHandle && rv.v_handle == g_returner);
    CHECK(tvm_test_refcount(g_returner) == before + 1);
    CHECK_OK(TVMFuncFree(rv.v_handle));
    CHECK(tvm_test_refcount(g_returner) == before);

    finalized_count = 0;
    CHECK_OK(call_returner("new_func", &rv, &rc));
    CHECK(rc == kTVMPackedFuncHandle);
    CHECK(finalized_count == 0);
    if (rc == kTVMPackedFuncHandle) {
      TVMFunctionHandle nf = rv.v_handle;
      CHECK(tvm_test_refcount(nf) == 1);
      CHECK(type_index_of_object(nf) == 7);
      TVMValue x;
      int xc = kTVMArgInt, r2 = -1;
      x.v_int64 = 41;
      CHECK_OK(TVMFuncCall(nf, &x, &xc, 1, &rv, &r2));
      CHECK(r2 == kTVMArgInt && rv.v_int64 == 42);
      CHECK_OK(TVMFuncFree(nf));
      CHECK(finalized_count == 1);
    }
  }
  TVMModuleHandle mod = NULL;
  {
    /* module: from runtime.SystemLib, passed in and returned (+1) */
    TVMFunctionHandle syslib = NULL;
    REQUIRE_OK(TVMFuncGetGlobal("runtime.SystemLib", &syslib));
    REQUIRE(syslib != NULL);
    int mrc = -1;
    CHECK_OK(TVMFuncCall(syslib, NULL, NULL, 0, &rv, &mrc));
    REQUIRE(mrc == kTVMModuleHandle && rv.v_handle != NULL);
    mod = rv.v_handle;
    CHECK(type_index_of_object(mod) == 1);
    int32_t before = tvm_test_refcount(mod);
    TVMValue a;
    a.v_handle = mod;
    CHECK_OK(call_returner2("arg", a, kTVMModuleHandle, &rv, &rc));
    CHECK(rc == kTVMModuleHandle && rv.v_handle == mod);
    CHECK(tvm_test_refcount(mod) == before + 1);
    CHECK_OK(TVMModFree(rv.v_handle));
    CHECK(tvm_test_refcount(mod) == before);
    CHECK_OK(TVMFuncFree(syslib));
  }

  /* ---- forwarding results through a nested call ------------------------------------------- */
  {
    TVMFunctionHandle fwd = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(forward, NULL, NULL, &fwd));
    TVMValue a[3];
    int c[3] = {kTVMPackedFuncHandle, kTVMStr, kTVMStr};
    a[0].v_handle = g_returner;
    a[1].v_str = "str";
    a[2].v_str = "nested";
    CHECK_OK(TVMFuncCall(fwd, a, c, 3, &rv, &rc));
    CHECK(rc == kTVMStr);
    CHECK_STREQ(rc == kTVMStr ? rv.v_str : NULL, "hello, nested");
    a[1].v_str = "bytes";
    CHECK_OK(TVMFuncCall(fwd, a, c, 2, &rv, &rc));
    CHECK(rc == kTVMBytes);
    if (rc == kTVMBytes) {
      TVMByteArray* ba = (TVMByteArray*)rv.v_handle;
      CHECK(ba->size == 5 && memcmp(ba->data, "ab\0cd", 5) == 0);
    }
    a[1].v_str = "new_array";
    CHECK_OK(TVMFuncCall(fwd, a, c, 2, &rv, &rc));
    CHECK(rc == kTVMNDArrayHandle);
    if (rc == kTVMNDArrayHandle) {
      TVMArrayHandle h = (TVMArrayHandle)rv.v_handle;
      CHECK(tvm_test_refcount(object_of_array(h)) == 1);
      CHECK(((double*)h->data)[1] == -2.5);
      CHECK_OK(TVMArrayFree(h));
    }

    /* concurrent calls from many threads */
    pthread_t threads[STRESS_THREADS];
    StressArg sargs[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; ++i) {
      sargs[i].id = i;
      sargs[i].bad = 0;
      sargs[i].fwd = fwd;
      REQUIRE(pthread_create(&threads[i], NULL, stress_thread, &sargs[i]) == 0);
    }
    int bad = 0;
    for (int i = 0; i < STRESS_THREADS; ++i) {
      pthread_join(threads[i], NULL);
      bad += sargs[i].bad;
    }
    CHECK(bad == 0);
    CHECK(tvm_test_refcount(g_returner) == 1);
    CHECK_OK(TVMFuncFree(fwd));
  }

  /* ---- TVMCbArgToReturn --------------------------------------------------------------------- */
  {
    CbResult r;
    TVMFunctionHandle cbf = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(cbarg_to_return, &r, NULL, &cbf));
    TVMValue a;
    int c;

    /* NDArray: gains a reference, keeps its code; the caller ends up with one owned reference */
    int64_t shape[1] = {8};
    TVMArrayHandle arr = NULL;
    REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLInt, 8, 1, kDLCPU, 0, &arr));
    memset(&r, 0, sizeof r);
    a.v_handle = arr;
    c = kTVMNDArrayHandle;
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == 0 && r.code_after == kTVMNDArrayHandle);
    CHECK(r.ref_before == 1 && r.ref_after == 2);
    CHECK(rc == kTVMNDArrayHandle && rv.v_handle == arr);
    CHECK(tvm_test_refcount(object_of_array(arr)) == 2);
    CHECK_OK(TVMArrayFree(arr));
    CHECK(tvm_test_refcount(object_of_array(arr)) == 1);
    CHECK_OK(TVMArrayFree(arr));

    /* function */
    memset(&r, 0, sizeof r);
    a.v_handle = g_returner;
    c = kTVMPackedFuncHandle;
    int32_t before = tvm_test_refcount(g_returner);
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == 0 && r.code_after == kTVMPackedFuncHandle);
    CHECK(r.ref_after == r.ref_before + 1);
    CHECK(rc == kTVMPackedFuncHandle && rv.v_handle == g_returner);
    CHECK(tvm_test_refcount(g_returner) == before + 1);
    CHECK_OK(TVMFuncFree(rv.v_handle));

    /* module */
    memset(&r, 0, sizeof r);
    a.v_handle = mod;
    c = kTVMModuleHandle;
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == 0 && r.code_after == kTVMModuleHandle);
    CHECK(r.ref_after == r.ref_before + 1);
    CHECK(rc == kTVMModuleHandle && rv.v_handle == mod);
    CHECK_OK(TVMModFree(rv.v_handle));

    /* rvalue reference (code 14): the object is moved out, the caller's slot becomes NULL */
    {
      TVMFunctionHandle victim = NULL;
      finalized_count = 0;
      REQUIRE_OK(TVMFuncCreateFromCFunc(add_one, NULL, count_finalize, &victim));
      void* slot = victim;
      memset(&r, 0, sizeof r);
      a.v_handle = &slot;
      c = kTVMObjectRValueRefArg;
      CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
      CHECK(r.convert_rc == 0);
      CHECK(r.code_after == kTVMPackedFuncHandle);
      CHECK(slot == NULL); /* moved */
      CHECK(rc == kTVMPackedFuncHandle && rv.v_handle == victim);
      /* our reference moved into the callee and on to the result: exactly one remains */
      CHECK(tvm_test_refcount(victim) == 1);
      CHECK(finalized_count == 0);
      CHECK_OK(TVMFuncFree(rv.v_handle));
      CHECK(finalized_count == 1);
    }

    /* POD: unchanged */
    memset(&r, 0, sizeof r);
    a.v_int64 = 77;
    c = kTVMArgInt;
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == 0 && r.code_after == kTVMArgInt);
    CHECK(rc == kTVMArgInt && rv.v_int64 == 77);

    /* str and bytes cannot be converted */
    memset(&r, 0, sizeof r);
    a.v_str = "not convertible";
    c = kTVMStr;
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == -1);
    CHECK(r.code_after == kTVMStr);
    CHECK_CONTAINS(r.error, "TypeError");
    TVMByteArray ba = {"xy", 2};
    memset(&r, 0, sizeof r);
    a.v_handle = &ba;
    c = kTVMBytes;
    CHECK_OK(TVMFuncCall(cbf, &a, &c, 1, &rv, &rc));
    CHECK(r.convert_rc == -1);
    CHECK_CONTAINS(r.error, "TypeError");
    CHECK_OK(TVMFuncFree(cbf));
  }

  /* ---- TVMCFuncSetReturn with num_ret != 1 ----------------------------------------------------- */
  {
    NumRetResult r;
    memset(&r, 0, sizeof r);
    TVMFunctionHandle f = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(bad_num_ret, &r, NULL, &f));
    CHECK_OK(TVMFuncCall(f, NULL, NULL, 0, &rv, &rc));
    CHECK(r.rc2 == -1);
    CHECK(r.rc0 == -1);
    CHECK_CONTAINS(r.error, "2");
    CHECK(r.rc1 == 0);
    CHECK(rc == kTVMArgInt && rv.v_int64 == 2);
    CHECK_OK(TVMFuncFree(f));
  }

  /* ---- registry ------------------------------------------------------------------------------- */
  {
    TVMFunctionHandle f1 = NULL, f2 = NULL, got = NULL;
    finalized_count = 0;
    REQUIRE_OK(TVMFuncCreateFromCFunc(add_one, NULL, count_finalize, &f1));
    REQUIRE_OK(TVMFuncCreateFromCFunc(returner, NULL, NULL, &f2));
    CHECK_OK(TVMFuncRegisterGlobal("pf_test.fn", f1, 0));
    CHECK_FAIL(TVMFuncRegisterGlobal("pf_test.fn", f2, 0), "pf_test.fn");
    /* still the first function */
    CHECK_OK(TVMFuncGetGlobal("pf_test.fn", &got));
    REQUIRE(got != NULL);
    CHECK(got == f1);
    TVMValue x;
    int xc = kTVMArgInt;
    x.v_int64 = 9;
    CHECK_OK(TVMFuncCall(got, &x, &xc, 1, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == 10);
    CHECK_OK(TVMFuncFree(got));
    CHECK_OK(TVMFuncFree(f1)); /* only the registry holds f1 now */
    CHECK(finalized_count == 0);

    /* listing */
    int n = 0;
    const char** names = NULL;
    CHECK_OK(TVMFuncListGlobalNames(&n, &names));
    int found_fn = 0, found_syslib = 0;
    for (int i = 0; i < n; ++i) {
      if (strcmp(names[i], "pf_test.fn") == 0) found_fn++;
      if (strcmp(names[i], "runtime.SystemLib") == 0) found_syslib++;
    }
    CHECK(n >= 2);
    CHECK(found_fn == 1);
    CHECK(found_syslib == 1);

    /* override replaces the old function; this runtime also releases it (stock TVM leaks the
     * replaced Registry entry, so there the finalizer would not run) */
    CHECK_OK(TVMFuncRegisterGlobal("pf_test.fn", f2, 1));
    CHECK(finalized_count == 1);
    got = NULL;
    CHECK_OK(TVMFuncGetGlobal("pf_test.fn", &got));
    CHECK(got == f2);
    CHECK_OK(call_returner("int", &rv, &rc)); /* f2 is the same callback as g_returner */
    if (got) {
      TVMValue a;
      int ac = kTVMStr;
      a.v_str = "int";
      CHECK_OK(TVMFuncCall(got, &a, &ac, 1, &rv, &rc));
      CHECK(rc == kTVMArgInt && rv.v_int64 == 123456789012LL);
      CHECK_OK(TVMFuncFree(got));
    }

    /* remove: later lookups give NULL (and succeed) */
    CHECK_OK(TVMFuncRemoveGlobal("pf_test.fn"));
    got = (TVMFunctionHandle)&n;
    CHECK_OK(TVMFuncGetGlobal("pf_test.fn", &got));
    CHECK(got == NULL);
    CHECK_OK(TVMFuncRemoveGlobal("pf_test.fn")); /* absent: no error */
    CHECK_OK(TVMFuncListGlobalNames(&n, &names));
    found_fn = 0;
    for (int i = 0; i < n; ++i) {
      if (strcmp(names[i], "pf_test.fn") == 0) found_fn++;
    }
    CHECK(found_fn == 0);
    /* our own handle to f2 is still good */
    {
      TVMValue a;
      int ac = kTVMStr;
      a.v_str = "bool";
      CHECK_OK(TVMFuncCall(f2, &a, &ac, 1, &rv, &rc));
      CHECK(rc == kTVMArgBool && rv.v_int64 == 1);
    }
    CHECK_OK(TVMFuncFree(f2));
  }

  /* ---- wrong handle types -------------------------------------------------------------------- */
  {
    int64_t shape[1] = {4};
    TVMArrayHandle arr = NULL;
    REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &arr));
    /* not an object's address: a TypeError, or in the checked mode "... is not live" */
    CHECK_FAIL(TVMFuncCall(arr, NULL, NULL, 0, &rv, &rc), "handle 0x");
    CHECK_FAIL(TVMFuncCall(object_of_array(arr), NULL, NULL, 0, &rv, &rc), "TypeError");
    CHECK_FAIL(TVMFuncCall(mod, NULL, NULL, 0, &rv, &rc), "TypeError");
    CHECK_FAIL(TVMFuncFree(mod), "TypeError");
    CHECK_FAIL(TVMModFree(g_returner), "TypeError");
    CHECK_FAIL(TVMModGetFunction(g_returner, "x", 0, &rv.v_handle), "TypeError");
    CHECK_FAIL(TVMFuncRegisterGlobal("pf_test.not_a_func", mod, 0), "TypeError");
    CHECK_FAIL(TVMArrayFree((TVMArrayHandle)((char*)g_returner + 16)), "TypeError");
    /* nothing was released by the failed calls */
    CHECK(tvm_test_refcount(object_of_array(arr)) == 1);
    CHECK(tvm_test_refcount(g_returner) == 1);
    CHECK_OK(TVMArrayFree(arr));
  }

  /* ---- calling with no arguments, NULL arrays ------------------------------------------------ */
  {
    TVMValue a;
    int ac = kTVMArgInt;
    a.v_int64 = 1;
    CHECK_FAIL(TVMFuncCall(g_returner, NULL, NULL, 0, &rv, &rc), "returner");
    CHECK_FAIL(TVMFuncCall(g_returner, &a, &ac, 1, &rv, &rc), "returner");
  }

  CHECK_OK(TVMModFree(mod));
  CHECK_OK(TVMFuncFree(g_returner));
  return tvm_test_summary("test_packed_func");
}
