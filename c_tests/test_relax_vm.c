/*
 * The Relax VM through the C API alone, as a C program drives TVM's module functions:
 * TVMModLoadFromFile on a TVM 0.18 relax.build library, "vm_load_executable" and
 * "vm_initialization" by TVMModGetFunction + TVMFuncCall, "main" (and "second") on NDArrays,
 * a tuple result read with the globals runtime.ArraySize / runtime.ArrayGetItem, a dynamic
 * shape; every output against the one TVM recorded. Bad calls fail with a message and leave
 * the VM usable. Every handle is freed (the sanitizers and valgrind run this program too).
 *
 * The data comes from the build: TVM_TEST_RELAX_DATA_DIR (tests/data/relax-0.18); apache-tvm
 * 0.27's mlp and tuple (tvm-ffi kernels) from relax-0.27 beside it.
 */
#include <math.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_RELAX_DATA_DIR
#error "TVM_TEST_RELAX_DATA_DIR must be defined by the build"
#endif

/* ---- small helpers over the C API ----------------------------------------------------------- */

static void* get_function(void* mod, const char* name) {
  void* f = NULL;
  REQUIRE_OK(TVMModGetFunction(mod, name, 0, &f));
  REQUIRE(f != NULL);
  return f;
}

static void* get_global(const char* name) {
  void* f = NULL;
  REQUIRE_OK(TVMFuncGetGlobal(name, &f));
  REQUIRE(f != NULL);
  return f;
}

/* Call `f` with `n` NDArrays; the result and its type code. */
static int call_arrays(void* f, DLTensor** arrays, int n, TVMValue* ret, int* code) {
  TVMValue args[4];
  int codes[4];
  for (int i = 0; i < n; ++i) {
    args[i].v_handle = arrays[i];
    codes[i] = kTVMNDArrayHandle;
  }
  return TVMFuncCall(f, args, codes, n, ret, code);
}

/* An NDArray of `shape` holding the float32 file `dir/name`. */
static DLTensor* array_from_file(const char* dir, const char* name, const int64_t* shape, int ndim) {
  size_t size = 0;
  char* bytes = tvm_test_read_file(dir, name, &size);
  DLTensor* t = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, ndim, kDLFloat, 32, 1, kDLCPU, 0, &t));
  REQUIRE_OK(TVMArrayCopyFromBytes(t, bytes, size));
  free(bytes);
  return t;
}

/* Whether `t` has `shape` and holds (within 1e-5 relative) the float32 file `dir/name`. */
static int matches_file(DLTensor* t, const char* dir, const char* name, const int64_t* shape, int ndim) {
  int ok = t->ndim == ndim && t->dtype.code == kDLFloat && t->dtype.bits == 32;
  for (int i = 0; ok && i < ndim; ++i) ok = t->shape[i] == shape[i];
  if (!ok) return 0;
  size_t size = 0;
  float* want = (float*)tvm_test_read_file(dir, name, &size);
  float* got = (float*)malloc(size);
  REQUIRE(got != NULL);
  REQUIRE_OK(TVMArrayCopyToBytes(t, got, size));
  for (size_t i = 0; ok && i < size / sizeof(float); ++i) {
    ok = fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i]));
    if (!ok) fprintf(stderr, "  %s element %zu: got %.9g, want %.9g\n", name, i, got[i], want[i]);
  }
  free(got);
  free(want);
  return ok;
}

/* The VM module of the library `model` of the data set in `set_dir` (loaded,
 * vm_load_executable, vm_initialization(cpu, 0, allocator)). */
static void* load_vm_in(const char* set_dir, const char* model, int allocator, void** lib_out) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/lib.so", set_dir, model);
  void* lib = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "so", &lib));
  void* load = get_function(lib, "vm_load_executable");
  TVMValue ret;
  int code = 0;
  REQUIRE_OK(TVMFuncCall(load, NULL, NULL, 0, &ret, &code));
  REQUIRE(code == kTVMModuleHandle);
  TVMFuncFree(load);
  void* vm = ret.v_handle;
  void* init = get_function(vm, "vm_initialization");
  TVMValue args[3];
  int codes[3] = {kDLInt, kDLInt, kDLInt};
  args[0].v_int64 = kDLCPU;
  args[1].v_int64 = 0;
  args[2].v_int64 = allocator;
  REQUIRE_OK(TVMFuncCall(init, args, codes, 3, &ret, &code));
  TVMFuncFree(init);
  *lib_out = lib;
  return vm;
}

static void* load_vm(const char* model, int allocator, void** lib_out) {
  return load_vm_in(TVM_TEST_RELAX_DATA_DIR, model, allocator, lib_out);
}

/* ---- the models ----------------------------------------------------------------------------- */

static void mlp(int allocator) {
  const char* dir = TVM_TEST_RELAX_DATA_DIR "/mlp";
  void* lib = NULL;
  void* vm = load_vm("mlp", allocator, &lib);
  void* main_fn = get_function(vm, "main");
  const int64_t xshape[2] = {4, 32}, yshape[2] = {4, 10};
  DLTensor* x = array_from_file(dir, "input_0.bin", xshape, 2);
  for (int run = 0; run < 3; ++run) {
    TVMValue ret;
    int code = 0;
    CHECK_OK(call_arrays(main_fn, &x, 1, &ret, &code));
    REQUIRE(code == kTVMNDArrayHandle);
    CHECK(matches_file((DLTensor*)ret.v_handle, dir, "output_0.bin", yshape, 2));
    CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
  }

  /* Bad calls: the message says what was wrong; the VM still runs afterwards. */
  TVMValue ret;
  int code = 0;
  CHECK_FAIL(call_arrays(main_fn, &x, 0, &ret, &code), "main expects 1 arguments");
  DLTensor* pair[2] = {x, x};
  CHECK_FAIL(call_arrays(main_fn, pair, 2, &ret, &code), "but 2 arguments were provided");
  const int64_t wrong_shape[2] = {5, 32};
  DLTensor* wrong = NULL;
  REQUIRE_OK(TVMArrayAlloc(wrong_shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &wrong));
  CHECK_FAIL(call_arrays(main_fn, &wrong, 1, &ret, &code), "shape[0] is 5 but 4 is required");
  CHECK_OK(TVMArrayFree(wrong));
  REQUIRE_OK(TVMArrayAlloc(xshape, 2, kDLFloat, 64, 1, kDLCPU, 0, &wrong));
  CHECK_FAIL(call_arrays(main_fn, &wrong, 1, &ret, &code), "float32 but get float64");
  CHECK_OK(TVMArrayFree(wrong));
  void* missing = (void*)1;
  CHECK_OK(TVMModGetFunction(vm, "no_such_function", 0, &missing));
  CHECK(missing == NULL);
  CHECK_OK(call_arrays(main_fn, &x, 1, &ret, &code));
  CHECK(code == kTVMNDArrayHandle && matches_file((DLTensor*)ret.v_handle, dir, "output_0.bin", yshape, 2));
  CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));

  CHECK_OK(TVMArrayFree(x));
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));
}

/* main(x, y) = (x + y, sum(x * y, axis=1)): a runtime Array of two NDArrays. */
static void tuple(void) {
  const char* dir = TVM_TEST_RELAX_DATA_DIR "/tuple";
  void* lib = NULL;
  void* vm = load_vm("tuple", 2, &lib);
  void* main_fn = get_function(vm, "main");
  const int64_t shape[2] = {4, 8}, sum_shape[1] = {4};
  DLTensor* xy[2] = {array_from_file(dir, "input_0.bin", shape, 2), array_from_file(dir, "input_1.bin", shape, 2)};
  TVMValue ret;
  int code = 0;
  REQUIRE_OK(call_arrays(main_fn, xy, 2, &ret, &code));
  REQUIRE(code == kTVMObjectHandle);
  void* tuple_obj = ret.v_handle;

  void* size_fn = get_global("runtime.ArraySize");
  void* item_fn = get_global("runtime.ArrayGetItem");
  TVMValue args[2];
  int codes[2] = {kTVMObjectHandle, kDLInt};
  args[0].v_handle = tuple_obj;
  CHECK_OK(TVMFuncCall(size_fn, args, codes, 1, &ret, &code));
  CHECK(code == kDLInt && ret.v_int64 == 2);
  const char* files[2] = {"output_0.bin", "output_1.bin"};
  const int64_t* shapes[2] = {shape, sum_shape};
  for (int i = 0; i < 2; ++i) {
    args[1].v_int64 = i;
    CHECK_OK(TVMFuncCall(item_fn, args, codes, 2, &ret, &code));
    REQUIRE(code == kTVMNDArrayHandle);
    CHECK(matches_file((DLTensor*)ret.v_handle, dir, files[i], shapes[i], 2 - i));
    CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
  }
  CHECK_OK(TVMObjectFree(tuple_obj));
  CHECK_OK(TVMFuncFree(size_fn));
  CHECK_OK(TVMFuncFree(item_fn));
  CHECK_OK(TVMArrayFree(xy[0]));
  CHECK_OK(TVMArrayFree(xy[1]));
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));
}

/* x: (n, 16) -> (2n, 8), for each recorded n. */
static void dynamic_shape(void) {
  void* lib = NULL;
  void* vm = load_vm("dyn", 2, &lib);
  void* main_fn = get_function(vm, "main");
  const int64_t ns[3] = {1, 3, 8};
  for (int k = 0; k < 3; ++k) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/dyn/n%lld", TVM_TEST_RELAX_DATA_DIR, (long long)ns[k]);
    const int64_t xshape[2] = {ns[k], 16}, yshape[2] = {2 * ns[k], 8};
    DLTensor* x = array_from_file(dir, "input_0.bin", xshape, 2);
    TVMValue ret;
    int code = 0;
    CHECK_OK(call_arrays(main_fn, &x, 1, &ret, &code));
    CHECK(code == kTVMNDArrayHandle && matches_file((DLTensor*)ret.v_handle, dir, "output_0.bin", yshape, 2));
    if (code == kTVMNDArrayHandle) CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
    CHECK_OK(TVMArrayFree(x));
  }
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));
}

/* second(a, b) = softmax(main(a) @ b): a function other than main, calling main inside. */
static void second_function(void) {
  const char* dir = TVM_TEST_RELAX_DATA_DIR "/two_funcs/second";
  void* lib = NULL;
  void* vm = load_vm("two_funcs", 1, &lib);
  void* second = get_function(vm, "second");
  const int64_t ashape[2] = {4, 8}, bshape[2] = {8, 3}, yshape[2] = {4, 3};
  DLTensor* ab[2] = {array_from_file(dir, "input_0.bin", ashape, 2), array_from_file(dir, "input_1.bin", bshape, 2)};
  TVMValue ret;
  int code = 0;
  CHECK_OK(call_arrays(second, ab, 2, &ret, &code));
  CHECK(code == kTVMNDArrayHandle && matches_file((DLTensor*)ret.v_handle, dir, "output_0.bin", yshape, 2));
  if (code == kTVMNDArrayHandle) CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
  CHECK_OK(TVMArrayFree(ab[0]));
  CHECK_OK(TVMArrayFree(ab[1]));
  CHECK_OK(TVMFuncFree(second));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));
}

/* apache-tvm 0.27's libraries (tvm-ffi kernels): the mlp, and the tuple model's Array. */
static void tvm_ffi_libraries(void) {
  const char* mlp_dir = TVM_TEST_RELAX_DATA_DIR "/../relax-0.27/mlp";
  void* lib = NULL;
  void* vm = load_vm_in(TVM_TEST_RELAX_DATA_DIR "/../relax-0.27", "mlp", 2, &lib);
  void* main_fn = get_function(vm, "main");
  const int64_t xshape[2] = {4, 32}, yshape[2] = {4, 10};
  DLTensor* x = array_from_file(mlp_dir, "main0_in0.bin", xshape, 2);
  TVMValue ret;
  int code = 0;
  CHECK_OK(call_arrays(main_fn, &x, 1, &ret, &code));
  CHECK(code == kTVMNDArrayHandle && matches_file((DLTensor*)ret.v_handle, mlp_dir, "main0_out0.bin", yshape, 2));
  if (code == kTVMNDArrayHandle) CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
  CHECK_OK(TVMArrayFree(x));
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));

  const char* dir = TVM_TEST_RELAX_DATA_DIR "/../relax-0.27/tuple";
  vm = load_vm_in(TVM_TEST_RELAX_DATA_DIR "/../relax-0.27", "tuple", 2, &lib);
  main_fn = get_function(vm, "main");
  const int64_t shape[2] = {4, 8}, sum_shape[1] = {4};
  DLTensor* xy[2] = {array_from_file(dir, "main0_in0.bin", shape, 2), array_from_file(dir, "main0_in1.bin", shape, 2)};
  REQUIRE_OK(call_arrays(main_fn, xy, 2, &ret, &code));
  REQUIRE(code == kTVMObjectHandle);
  void* tuple_obj = ret.v_handle;
  void* item_fn = get_global("runtime.ArrayGetItem");
  TVMValue args[2];
  int codes[2] = {kTVMObjectHandle, kDLInt};
  args[0].v_handle = tuple_obj;
  const char* files[2] = {"main0_out0.bin", "main0_out1.bin"};
  const int64_t* shapes[2] = {shape, sum_shape};
  for (int i = 0; i < 2; ++i) {
    args[1].v_int64 = i;
    CHECK_OK(TVMFuncCall(item_fn, args, codes, 2, &ret, &code));
    REQUIRE(code == kTVMNDArrayHandle);
    CHECK(matches_file((DLTensor*)ret.v_handle, dir, files[i], shapes[i], 2 - i));
    CHECK_OK(TVMArrayFree((DLTensor*)ret.v_handle));
  }
  CHECK_OK(TVMObjectFree(tuple_obj));
  CHECK_OK(TVMFuncFree(item_fn));
  CHECK_OK(TVMArrayFree(xy[0]));
  CHECK_OK(TVMArrayFree(xy[1]));
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(lib));
}

int main(void) {
  tvm_ffi_libraries();
  mlp(2);
  mlp(1);
  tuple();
  dynamic_shape();
  second_function();
  return tvm_test_summary("test_relax_vm");
}
