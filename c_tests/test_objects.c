/*
 * Object system: the static type table (key <-> index), derivation, and reference counting of
 * function, module and array objects through TVMObjectRetain / TVMObjectFree.
 */
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"


static int finalized = 0;
static void on_finalize(void* res) {
  (void)res;
  finalized++;
}

static int square(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("square: expected one int");
    return -1;
  }
  TVMValue v;
  int c = kTVMArgInt;
  v.v_int64 = args[0].v_int64 * args[0].v_int64;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

static int64_t call_square(TVMFunctionHandle f, int64_t x, int* ok) {
  TVMValue a, rv;
  int c = kTVMArgInt, rc = -1;
  a.v_int64 = x;
  *ok = TVMFuncCall(f, &a, &c, 1, &rv, &rc) == 0 && rc == kTVMArgInt;
  return *ok ? rv.v_int64 : 0;
}

int main(void) {
  /* ---- key <-> index ------------------------------------------------------------------------ */
  struct {
    const char* key;
    unsigned index;
  } statics[] = { /* TVM 0.18's keys: Array and Map have no "runtime." prefix */
      {"runtime.Object", 0}, {"runtime.Module", 1},      {"runtime.NDArray", 2},
      {"runtime.String", 3}, {"Array", 4},               {"Map", 5},
      {"runtime.ShapeTuple", 6}, {"runtime.PackedFunc", 7},
  };
  for (size_t i = 0; i < sizeof statics / sizeof statics[0]; ++i) {
    unsigned idx = 12345;
    CHECK_OK(TVMObjectTypeKey2Index(statics[i].key, &idx));
    if (!CHECK(idx == statics[i].index)) fprintf(stderr, "    key %s -> %u\n", statics[i].key, idx);
    char* key = NULL;
    CHECK_OK(TVMObjectTypeIndex2Key(statics[i].index, &key));
    CHECK_STREQ(key, statics[i].key);
    free(key); /* malloc'ed by the runtime */
  }
  {
    unsigned idx = 12345;
    CHECK_FAIL(TVMObjectTypeKey2Index("test.objects.NoSuchType", &idx), "test.objects.NoSuchType");
    CHECK(idx == 12345);
    CHECK_FAIL(TVMObjectTypeKey2Index("", &idx), "");
    char* key = (char*)&idx;
    CHECK(TVMObjectTypeIndex2Key(100000, &key) == -1);
    CHECK_CONTAINS(TVMGetLastError(), "100000");
    /* two separate calls give two separate allocations */
    char* k1 = NULL;
    char* k2 = NULL;
    CHECK_OK(TVMObjectTypeIndex2Key(2, &k1));
    CHECK_OK(TVMObjectTypeIndex2Key(2, &k2));
    CHECK(k1 != NULL && k2 != NULL && k1 != k2);
    CHECK_STREQ(k1, "runtime.NDArray");
    if (k1) k1[0] = 'X'; /* writable, ours */
    CHECK_STREQ(k2, "runtime.NDArray");
    free(k1);
    free(k2);
  }

  /* ---- derivation --------------------------------------------------------------------------- */
  {
    int d = -1;
    CHECK_OK(TVMObjectDerivedFrom(2, 2, &d));
    CHECK(d == 1);
    d = -1;
    CHECK_OK(TVMObjectDerivedFrom(2, 0, &d)); /* everything derives from runtime.Object */
    CHECK(d == 1);
    d = -1;
    CHECK_OK(TVMObjectDerivedFrom(7, 0, &d));
    CHECK(d == 1);
    d = -1;
    CHECK_OK(TVMObjectDerivedFrom(2, 1, &d)); /* NDArray is not a Module */
    CHECK(d == 0);
    d = -1;
    CHECK_OK(TVMObjectDerivedFrom(0, 7, &d)); /* the root is not a PackedFunc */
    CHECK(d == 0);
    d = -1;
    CHECK_OK(TVMObjectDerivedFrom(1, 7, &d));
    CHECK(d == 0);
  }

  /* ---- function objects: retain keeps them callable, free drops them ------------------------- */
  {
    TVMFunctionHandle f = NULL;
    finalized = 0;
    REQUIRE_OK(TVMFuncCreateFromCFunc(square, NULL, on_finalize, &f));
    REQUIRE(f != NULL);
    unsigned ti = 0;
    CHECK_OK(TVMObjectGetTypeIndex(f, &ti));
    CHECK(ti == 7);
    CHECK(tvm_test_refcount(f) == 1);
    int ok = 0;
    CHECK(call_square(f, 12, &ok) == 144 && ok);

    CHECK_OK(TVMObjectRetain(f));
    CHECK_OK(TVMObjectRetain(f));
    CHECK(tvm_test_refcount(f) == 3);
    CHECK_OK(TVMFuncFree(f));
    CHECK(tvm_test_refcount(f) == 2);
    CHECK(call_square(f, -7, &ok) == 49 && ok);
    CHECK_OK(TVMObjectFree(f));
    CHECK(tvm_test_refcount(f) == 1);
    CHECK(finalized == 0);
    CHECK(call_square(f, 3, &ok) == 9 && ok);
    CHECK_OK(TVMObjectFree(f)); /* TVMObjectFree works on function objects */
    CHECK(finalized == 1);
  }

  /* ---- module objects ----------------------------------------------------------------------- */
  {
    TVMFunctionHandle syslib = NULL;
    REQUIRE_OK(TVMFuncGetGlobal("runtime.SystemLib", &syslib));
    REQUIRE(syslib != NULL);
    unsigned ti = 0;
    CHECK_OK(TVMObjectGetTypeIndex(syslib, &ti));
    CHECK(ti == 7);
    TVMValue a, rv;
    int c = kTVMStr, rc = -1;
    a.v_str = "objtest_";
    CHECK_OK(TVMFuncCall(syslib, &a, &c, 1, &rv, &rc));
    REQUIRE(rc == kTVMModuleHandle && rv.v_handle != NULL);
    TVMModuleHandle m = rv.v_handle;
    CHECK_OK(TVMObjectGetTypeIndex(m, &ti));
    CHECK(ti == 1);
    int32_t base = tvm_test_refcount(m);
    CHECK(base >= 1);
    CHECK_OK(TVMObjectRetain(m));
    CHECK(tvm_test_refcount(m) == base + 1);
    CHECK_OK(TVMModFree(m));
    CHECK(tvm_test_refcount(m) == base);
    TVMFunctionHandle none = (TVMFunctionHandle)&ti;
    CHECK_OK(TVMModGetFunction(m, "does_not_exist", 1, &none));
    CHECK(none == NULL);
    CHECK_OK(TVMObjectFree(m));
    CHECK_OK(TVMFuncFree(syslib));
  }

  /* ---- NDArray objects ---------------------------------------------------------------------- */
  {
    int64_t s[1] = {3};
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(s, 1, kDLInt, 64, 1, kDLCPU, 0, &h));
    void* obj = (char*)h - 16;
    unsigned ti = 0;
    CHECK_OK(TVMObjectGetTypeIndex(obj, &ti));
    CHECK(ti == 2);
    char* key = NULL;
    CHECK_OK(TVMObjectTypeIndex2Key(ti, &key));
    CHECK_STREQ(key, "runtime.NDArray");
    free(key);
    int d = 0;
    CHECK_OK(TVMObjectDerivedFrom(ti, 0, &d));
    CHECK(d == 1);
    CHECK_OK(TVMObjectRetain(obj));
    CHECK_OK(TVMArrayFree(h));
    int64_t v[3] = {1, 2, 3}, back[3] = {0};
    CHECK_OK(TVMArrayCopyFromBytes(h, v, sizeof v));
    CHECK_OK(TVMArrayCopyToBytes(h, back, sizeof back));
    CHECK(back[2] == 3);
    CHECK_OK(TVMObjectFree(obj));
  }

  /* ---- NULL is tolerated by Retain/Free ----------------------------------------------------- */
  CHECK_OK(TVMObjectRetain(NULL));
  CHECK_OK(TVMObjectFree(NULL));

  return tvm_test_summary("test_objects");
}
