/*
 * Error state: TVMGetLastError is per thread and NULL until set, messages have TVM's
 * `Kind: message` shape, TVMAPISetLastError round-trips, callback errors propagate through
 * TVMFuncCall, NULL arguments are rejected with a message naming the argument, and the process
 * keeps working afterwards.
 */
#include <ctype.h>
#include <pthread.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

/* `Kind: message` where Kind is a non-empty identifier ([A-Za-z0-9_]+). */
static int has_kind_prefix(const char* msg) {
  if (msg == NULL) return 0;
  const char* p = msg;
  while (*p && (isalnum((unsigned char)*p) || *p == '_')) ++p;
  return p != msg && p[0] == ':' && p[1] == ' ';
}

/* ---- thread helpers ------------------------------------------------------------------------ */

typedef struct {
  int fresh_was_null;      /* TVMGetLastError() was NULL before anything happened */
  int saw_main_error;      /* the main thread's message was visible here (must not be) */
  int own_roundtrip_ok;    /* this thread's own message round-tripped */
  int failed_call_rc;      /* rc of a failing call made on this thread */
  int failed_call_named;   /* its message names the argument */
  char own_after[128];     /* this thread's message at the end */
} ThreadResult;

static void* fresh_thread(void* arg) {
  ThreadResult* r = (ThreadResult*)arg;
  const char* e = TVMGetLastError();
  r->fresh_was_null = (e == NULL);
  r->saw_main_error = (e != NULL && strstr(e, "main-thread-error") != NULL);
  TVMAPISetLastError("thread-own-error 7");
  e = TVMGetLastError();
  r->own_roundtrip_ok = (e != NULL && strcmp(e, "thread-own-error 7") == 0);
  r->failed_call_rc = TVMFuncGetGlobal("x", NULL);
  e = TVMGetLastError();
  r->failed_call_named = (e != NULL && strstr(e, "`out`") != NULL);
  snprintf(r->own_after, sizeof r->own_after, "%s", e ? e : "(NULL)");
  return NULL;
}

static void* untouched_thread(void* arg) {
  int* was_null = (int*)arg;
  *was_null = (TVMGetLastError() == NULL);
  return NULL;
}

/* ---- callbacks ----------------------------------------------------------------------------- */

/* Sets the message given as its first (string) argument and fails. */
static int fail_with_message(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)ret;
  (void)res;
  if (n == 1 && codes[0] == kTVMStr) {
    TVMAPISetLastError(args[0].v_str);
  } else {
    TVMAPISetLastError("fail_with_message: bad arguments");
  }
  return -1;
}

/* Fails without setting any message. */
static int fail_silently(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)args;
  (void)codes;
  (void)n;
  (void)ret;
  (void)res;
  return -1;
}

/* Calls the function passed as argument 0 with argument 1, returning its result or error. */
static int call_nested(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n != 2 || codes[0] != kTVMPackedFuncHandle) {
    TVMAPISetLastError("call_nested: bad arguments");
    return -1;
  }
  TVMValue rv;
  int rc;
  if (TVMFuncCall(args[0].v_handle, &args[1], &codes[1], 1, &rv, &rc) != 0) {
    return -1; /* the inner error is still this thread's last error */
  }
  return TVMCFuncSetReturn(ret, &rv, &rc, 1);
}

/* Returns its integer argument times 2. */
static int twice(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("ValueError: twice: expected one int");
    return -1;
  }
  TVMValue v;
  int c = kTVMArgInt;
  v.v_int64 = args[0].v_int64 * 2;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

/* Stand-ins for Py_IncRef / Py_DecRef: count per object. */
static int fake_py_refs = 0;
static int fake_py_incs = 0;
static int fake_py_decs = 0;
static void fake_inc_ref(void* obj) {
  if (obj) {
    fake_py_refs++;
    fake_py_incs++;
  }
}
static void fake_dec_ref(void* obj) {
  if (obj) {
    fake_py_refs--;
    fake_py_decs++;
  }
}

/* Sets a "Python" error object (resource handle) and fails, as the Python frontend does. */
static int fail_with_python_error(TVMValue* args, int* codes, int n, TVMRetValueHandle ret,
                                  void* res) {
  (void)args;
  (void)codes;
  (void)n;
  (void)ret;
  TVMAPISetLastPythonError(res);
  return -1;
}

static void* python_error_on_thread(void* arg) {
  void** seen = (void**)arg;
  *seen = TVMGetLastPythonError();
  return NULL;
}

static int call_str(TVMFunctionHandle f, const char* s) {
  TVMValue v, rv;
  int c = kTVMStr, rc;
  v.v_str = s;
  return TVMFuncCall(f, &v, &c, 1, &rv, &rc);
}

int main(void) {
  /* ---- fresh state: NULL on the main thread and on a new thread ---------------------------- */
  CHECK(TVMGetLastError() == NULL);
  {
    pthread_t t;
    int was_null = 0;
    REQUIRE(pthread_create(&t, NULL, untouched_thread, &was_null) == 0);
    pthread_join(t, NULL);
    CHECK(was_null);
  }

  /* ---- message shape ----------------------------------------------------------------------- */
  TVMFunctionHandle dummy;
  CHECK_FAIL(TVMFuncGetGlobal("anything", NULL), "argument `out` is NULL");
  CHECK(has_kind_prefix(TVMGetLastError()));
  CHECK(strncmp(TVMGetLastError(), "ValueError: ", 12) == 0);
  {
    unsigned idx;
    CHECK_FAIL(TVMObjectTypeKey2Index("no.such.TypeKey", &idx), "no.such.TypeKey");
    CHECK(has_kind_prefix(TVMGetLastError()));
  }
  {
    int64_t shape[1] = {4};
    TVMArrayHandle h = NULL;
    CHECK_FAIL(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCUDA, 0, &h), "cuda");
    CHECK(has_kind_prefix(TVMGetLastError()));
    CHECK(h == NULL);
  }

  /* ---- TVMAPISetLastError round trip (stored verbatim) --------------------------------------- */
  TVMAPISetLastError("plain message without kind");
  CHECK_STREQ(TVMGetLastError(), "plain message without kind");
  TVMAPISetLastError("ValueError: with a kind");
  CHECK_STREQ(TVMGetLastError(), "ValueError: with a kind");
  TVMAPISetLastError("");
  CHECK_STREQ(TVMGetLastError(), "");
  /* messages are stored byte for byte, UTF-8 or not (TVM keeps a std::string) */
  TVMAPISetLastError("caf\xc3\xa9 ok");
  CHECK_STREQ(TVMGetLastError(), "caf\xc3\xa9 ok");
  TVMAPISetLastError("latin-1 caf\xe9 \xff");
  CHECK_STREQ(TVMGetLastError(), "latin-1 caf\xe9 \xff");
  {
    /* long message, copied (our buffer is overwritten afterwards) */
    char big[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "TVMError: ", 10);
    TVMAPISetLastError(big);
    big[20] = 'Y';
    const char* e = TVMGetLastError();
    CHECK(e != NULL && strlen(e) == sizeof big - 1 && e[20] == 'x');
  }

  /* ---- thread-locality ----------------------------------------------------------------------- */
  TVMAPISetLastError("main-thread-error 1");
  {
    pthread_t t;
    ThreadResult r;
    memset(&r, 0, sizeof r);
    REQUIRE(pthread_create(&t, NULL, fresh_thread, &r) == 0);
    pthread_join(t, NULL);
    CHECK(r.fresh_was_null);
    CHECK(!r.saw_main_error);
    CHECK(r.own_roundtrip_ok);
    CHECK(r.failed_call_rc == -1);
    CHECK(r.failed_call_named);
    CHECK_CONTAINS(r.own_after, "argument `out` is NULL");
  }
  /* the other thread's errors did not touch ours */
  CHECK_STREQ(TVMGetLastError(), "main-thread-error 1");

  /* ---- errors from callbacks propagate out of TVMFuncCall ------------------------------------ */
  TVMFunctionHandle failf = NULL, silentf = NULL, nestf = NULL, twicef = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(fail_with_message, NULL, NULL, &failf));
  REQUIRE_OK(TVMFuncCreateFromCFunc(fail_silently, NULL, NULL, &silentf));
  REQUIRE_OK(TVMFuncCreateFromCFunc(call_nested, NULL, NULL, &nestf));
  REQUIRE_OK(TVMFuncCreateFromCFunc(twice, NULL, NULL, &twicef));

  CHECK_FAIL(call_str(failf, "callback failed: code 17"), "callback failed: code 17");
  CHECK(has_kind_prefix(TVMGetLastError()));
  /* a message that already has a kind keeps it */
  CHECK_FAIL(call_str(failf, "IndexError: index 9 out of range"), "index 9 out of range");
  CHECK(strncmp(TVMGetLastError(), "IndexError: ", 12) == 0);
  /* failing without setting a message still fails, with a `Kind: message` error (TVM rethrows
   * whatever the slot holds; this runtime reports the missing message) */
  TVMAPISetLastError("stale message");
  {
    TVMValue rv;
    int rc;
    CHECK(TVMFuncCall(silentf, NULL, NULL, 0, &rv, &rc) == -1);
    const char* e = TVMGetLastError();
    CHECK(e != NULL && strlen(e) > 0);
    CHECK(has_kind_prefix(e));
  }
  /* nested: outer callback -> TVMFuncCall(inner) fails -> outer returns -1 -> message kept */
  {
    TVMValue a[2], rv;
    int c[2], rc;
    a[0].v_handle = failf;
    c[0] = kTVMPackedFuncHandle;
    a[1].v_str = "inner failure from depth 2";
    c[1] = kTVMStr;
    CHECK_FAIL(TVMFuncCall(nestf, a, c, 2, &rv, &rc), "inner failure from depth 2");
    /* nested success passes the value through */
    a[0].v_handle = twicef;
    a[1].v_int64 = 21;
    c[1] = kTVMArgInt;
    rc = -1;
    CHECK_OK(TVMFuncCall(nestf, a, c, 2, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == 42);
  }
  /* runtime-side errors inside the callee: type mismatch in a callback that checks codes */
  {
    TVMValue v, rv;
    int c = kTVMArgFloat, rc;
    v.v_float64 = 1.0;
    CHECK_FAIL(TVMFuncCall(twicef, &v, &c, 1, &rv, &rc), "twice: expected one int");
    CHECK(strncmp(TVMGetLastError(), "ValueError: ", 12) == 0);
  }

  /* ---- NULL arguments: -1 and a message naming the argument ---------------------------------- */
  {
    int64_t shape[1] = {4};
    TVMArrayHandle arr = NULL;
    TVMValue rv;
    int rc;
    unsigned idx;
    char* key = NULL;
    void* p = NULL;
    int n = 0;
    const char** names = NULL;
    int derived = 0;
    DLDevice cpu = {kDLCPU, 0};
    DLDataType f32 = {kDLFloat, 32, 1};
    TVMModuleHandle mod = NULL;
    DLManagedTensor* mt = NULL;

    CHECK_FAIL(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, NULL), "`out`");
    CHECK_FAIL(TVMArrayAlloc(NULL, 1, kDLFloat, 32, 1, kDLCPU, 0, &arr), "`shape`");
    CHECK_FAIL(TVMArrayCopyFromBytes(NULL, shape, 8), "`handle`");
    CHECK_FAIL(TVMArrayCopyToBytes(NULL, shape, 8), "`handle`");
    CHECK_FAIL(TVMArrayCopyFromTo(NULL, NULL, NULL), "`from`");
    CHECK_FAIL(TVMArrayToDLPack(NULL, &mt), "`from`");
    CHECK_FAIL(TVMArrayFromDLPack(NULL, &arr), "`from`");
    CHECK_FAIL(TVMFuncGetGlobal(NULL, &dummy), "`name`");
    CHECK_FAIL(TVMFuncRegisterGlobal(NULL, twicef, 0), "`name`");
    CHECK_FAIL(TVMFuncRegisterGlobal("test_errors.null_f", NULL, 0), "`f`");
    CHECK_FAIL(TVMFuncRemoveGlobal(NULL), "`name`");
    CHECK_FAIL(TVMFuncCall(twicef, NULL, NULL, 0, NULL, &rc), "`ret_val`");
    CHECK_FAIL(TVMFuncCall(twicef, NULL, NULL, 0, &rv, NULL), "`ret_type_code`");
    CHECK_FAIL(TVMFuncCall(NULL, NULL, NULL, 0, &rv, &rc), "`func`");
    CHECK_FAIL(TVMFuncCreateFromCFunc(twice, NULL, NULL, NULL), "`out`");
    CHECK_FAIL(TVMFuncCreateFromCFunc(NULL, NULL, NULL, &dummy), "`func`");
    CHECK_FAIL(TVMFuncListGlobalNames(NULL, &names), "`out_size`");
    CHECK_FAIL(TVMFuncListGlobalNames(&n, NULL), "`out_array`");
    CHECK_FAIL(TVMCFuncSetReturn(NULL, &rv, &rc, 1), "`ret`");
    CHECK_FAIL(TVMCbArgToReturn(NULL, &rc), "`value`");
    CHECK_FAIL(TVMCbArgToReturn(&rv, NULL), "`code`");
    CHECK_FAIL(TVMObjectTypeKey2Index(NULL, &idx), "`type_key`");
    CHECK_FAIL(TVMObjectTypeKey2Index("runtime.NDArray", NULL), "`out_tindex`");
    CHECK_FAIL(TVMObjectTypeIndex2Key(2, NULL), "`out_type_key`");
    CHECK_FAIL(TVMObjectGetTypeIndex(NULL, &idx), "`obj`");
    CHECK_FAIL(TVMObjectDerivedFrom(2, 0, NULL), "`is_derived`");
    CHECK_FAIL(TVMArrayGetTypeIndex(NULL, &idx), "`handle`");
    CHECK_FAIL(TVMModLoadFromFile(NULL, "", &mod), "`file_name`");
    CHECK_FAIL(TVMModLoadFromFile("x.so", "", NULL), "`out`");
    CHECK_FAIL(TVMModGetFunction(NULL, "f", 0, &dummy), "`mod`");
    CHECK_FAIL(TVMModImport(NULL, NULL), "`mod`");
    CHECK_FAIL(TVMStreamCreate(kDLCPU, 0, NULL), "`out`");
    CHECK_FAIL(TVMDeviceAllocDataSpace(cpu, 16, 64, f32, NULL), "`out_data`");
    CHECK_FAIL(TVMDeviceAllocDataSpaceWithScope(cpu, 1, shape, f32, "global", NULL), "`out_data`");
    CHECK_FAIL(TVMDeviceAllocDataSpaceWithScope(cpu, 1, NULL, f32, "global", &p), "`shape`");
    CHECK_FAIL(TVMDeviceCopyDataFromTo(NULL, NULL, NULL), "`from`");
    CHECK_FAIL(TVMBackendGetFuncFromEnv(NULL, "f", &dummy), "`mod_node`");
    CHECK_FAIL(TVMBackendRegisterSystemLibSymbol(NULL, NULL), "`name`");
    CHECK_FAIL(TVMBackendRegisterEnvCAPI(NULL, NULL), "`name`");
    CHECK_FAIL(TVMBackendRunOnce(NULL, NULL, NULL, 0), "`handle`");
    (void)key;
    (void)derived;
    (void)arr;
    /* Calls that tolerate NULL (as in TVM: the frees are TVMObjectFree underneath) */
    CHECK_OK(TVMArrayFree(NULL));
    CHECK_OK(TVMFuncFree(NULL));
    CHECK_OK(TVMModFree(NULL));
    CHECK_OK(TVMObjectRetain(NULL));
    CHECK_OK(TVMObjectFree(NULL));
    CHECK_OK(TVMByteArrayFree(NULL));
    TVMDLManagedTensorCallDeleter(NULL);
    CHECK_OK(TVMStreamFree(kDLCPU, 0, NULL));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, NULL));
  }

  /* ---- frontend (Python) error objects --------------------------------------------------------- */
  {
    static int py_exc_a, py_exc_b; /* stand-ins for PyObject* */
    CHECK_OK(TVMBackendRegisterEnvCAPI("Py_IncRef", (void*)fake_inc_ref));
    CHECK_OK(TVMBackendRegisterEnvCAPI("Py_DecRef", (void*)fake_dec_ref));
    CHECK(TVMGetLastPythonError() == NULL);
    TVMAPISetLastPythonError(&py_exc_a);
    CHECK(TVMGetLastPythonError() == &py_exc_a);
    CHECK(fake_py_refs == 1); /* the runtime holds a reference */
    {
      pthread_t t;
      void* seen = &py_exc_b;
      REQUIRE(pthread_create(&t, NULL, python_error_on_thread, &seen) == 0);
      pthread_join(t, NULL);
      CHECK(seen == NULL); /* thread-local */
    }
    /* replacing it releases the old one */
    TVMAPISetLastPythonError(&py_exc_b);
    CHECK(TVMGetLastPythonError() == &py_exc_b);
    CHECK(fake_py_refs == 1 && fake_py_incs == 2 && fake_py_decs == 1);
    TVMDropLastPythonError();
    CHECK(TVMGetLastPythonError() == NULL);
    CHECK(fake_py_refs == 0);
    TVMDropLastPythonError(); /* nothing stored: no-op */
    CHECK(fake_py_refs == 0);

    /* a callback failing with a Python error: the object reaches the caller */
    TVMFunctionHandle pyf = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(fail_with_python_error, &py_exc_a, NULL, &pyf));
    TVMValue rv;
    int rc;
    CHECK(TVMFuncCall(pyf, NULL, NULL, 0, &rv, &rc) == -1);
    CHECK(TVMGetLastPythonError() == &py_exc_a);
    CHECK(fake_py_refs == 1);

    /* The last error is one slot (TVM: a variant of {Python error, message}): storing a plain
     * error replaces the Python error, which is released. Otherwise the frontend, which asks
     * TVMGetLastPythonError first, would re-raise the stale Python exception for the new error. */
    TVMAPISetLastError("a later, unrelated error");
    CHECK(TVMGetLastPythonError() == NULL);
    CHECK(fake_py_refs == 0);
    CHECK_STREQ(TVMGetLastError(), "a later, unrelated error");
    /* same when the runtime itself fails after a Python error */
    CHECK(TVMFuncCall(pyf, NULL, NULL, 0, &rv, &rc) == -1);
    CHECK(TVMGetLastPythonError() == &py_exc_a);
    CHECK_FAIL(TVMFuncGetGlobal("x", NULL), "`out`");
    CHECK(TVMGetLastPythonError() == NULL);
    TVMDropLastPythonError();
    CHECK(fake_py_refs == 0);
    CHECK_OK(TVMFuncFree(pyf));
    CHECK_OK(TVMBackendRegisterEnvCAPI("Py_IncRef", NULL));
    CHECK_OK(TVMBackendRegisterEnvCAPI("Py_DecRef", NULL));
  }

  /* ---- the process survives and the API still works ------------------------------------------ */
  {
    TVMValue v, rv;
    int c = kTVMArgInt, rc = -1;
    v.v_int64 = -8;
    CHECK_OK(TVMFuncCall(twicef, &v, &c, 1, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == -16);
    int64_t shape[2] = {3, 1};
    TVMArrayHandle h = NULL;
    CHECK_OK(TVMArrayAlloc(shape, 2, kDLInt, 32, 1, kDLCPU, 0, &h));
    int32_t in[3] = {5, 6, 7}, out[3] = {0, 0, 0};
    if (h) {
      CHECK_OK(TVMArrayCopyFromBytes(h, in, sizeof in));
      CHECK_OK(TVMArrayCopyToBytes(h, out, sizeof out));
      CHECK(out[0] == 5 && out[1] == 6 && out[2] == 7);
      CHECK_OK(TVMArrayFree(h));
    }
    /* success does not clear the last error (as in TVM) */
    TVMAPISetLastError("sticky");
    CHECK_OK(TVMFuncCall(twicef, &v, &c, 1, &rv, &rc));
    CHECK_STREQ(TVMGetLastError(), "sticky");
  }

  CHECK_OK(TVMFuncFree(failf));
  CHECK_OK(TVMFuncFree(silentf));
  CHECK_OK(TVMFuncFree(nestf));
  CHECK_OK(TVMFuncFree(twicef));
  return tvm_test_summary("test_errors");
}
