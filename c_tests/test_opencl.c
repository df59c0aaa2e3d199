/*
 * Models compiled for OpenCL through the C API alone, on the machine's OpenCL platform (PoCL in
 * CI): TVM 0.18's graph models with the graph executor's C API on device {kDLOpenCL, 0} (from
 * the export_library .so's factory and from graph JSON + kernel library + params; inputs set from
 * host memory, outputs read into host memory; the device also as the option `device=opencl:0`),
 * and an apache-tvm 0.27 Relax VM model initialized on OpenCL with the host as its second device;
 * outputs against the expected files (numpy's, or TVM 0.18's CPU build). A device the platform lacks is an error naming it. Without an OpenCL
 * platform the program says it skipped and passes; without the TVM 0.18 data (../shared beside
 * the checkout) that part says it skipped.
 *
 * The data comes from the build: TVM_TEST_OPENCL_018_DIR (TVM 0.18's mlp and cnn) and
 * TVM_TEST_OPENCL_027_DIR (tests/data/opencl-0.27).
 */
#include <math.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_OPENCL_018_DIR
#error "TVM_TEST_OPENCL_018_DIR must be defined by the build"
#endif
#ifndef TVM_TEST_OPENCL_027_DIR
#error "TVM_TEST_OPENCL_027_DIR must be defined by the build"
#endif

static const DLDevice kOpenCL = {kDLOpenCL, 0};

/* The float32 file dir/name: its values and count. */
static float* floats(const char* dir, const char* name, size_t* n) {
  size_t size = 0;
  float* v = (float*)tvm_test_read_file(dir, name, &size);
  *n = size / sizeof(float);
  return v;
}

/* The largest absolute difference between `a` and the float32 file dir/name (n values). */
static float max_error(const float* a, const char* dir, const char* name, size_t n) {
  size_t m = 0;
  float* want = floats(dir, name, &m);
  float err = m == n ? 0.0f : INFINITY;
  for (size_t i = 0; i < n && i < m; ++i) err = fmaxf(err, fabsf(a[i] - want[i]));
  free(want);
  return err;
}

/* A host DLTensor over `data`. */
static DLTensor host_tensor(float* data, int64_t* shape, int ndim) {
  DLTensor t = {data, {kDLCPU, 0}, ndim, {kDLFloat, 32, 1}, shape, NULL, 0};
  return t;
}

/* kExist of opencl:0, through TVM's own global. */
static int opencl_exists(void) {
  TVMFunctionHandle attr = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("runtime.GetDeviceAttr", &attr));
  TVMValue args[3], ret;
  int codes[3] = {kDLInt, kDLInt, kDLInt}, code = 0;
  args[0].v_int64 = kDLOpenCL;
  args[1].v_int64 = 0;
  args[2].v_int64 = 0; /* kExist */
  REQUIRE_OK(TVMFuncCall(attr, args, codes, 3, &ret, &code));
  return code == kDLInt && ret.v_int64 == 1;
}

/* Set `input`, run, read output 0 (n floats) and compare with output_0.bin. */
static void run_graph(TVMGraphExecutor* g, const char* dir, const char* input, int64_t* in_shape, int in_ndim,
                      int64_t* out_shape, size_t n) {
  char file[64];
  snprintf(file, sizeof file, "input_%s.bin", input);
  size_t count = 0;
  float* x = floats(dir, file, &count);
  float* y = (float*)calloc(n, sizeof(float));
  DLTensor in = host_tensor(x, in_shape, in_ndim), out = host_tensor(y, out_shape, 2);
  CHECK_OK(TVMGraphExecutorSetInput(g, input, &in));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out));
  float err = max_error(y, dir, "output_0.bin", n);
  printf("  %s: max error %g\n", dir, err);
  CHECK(err < 1e-5f);
  free(x);
  free(y);
}

static void graph_models_018(void) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/mlp", TVM_TEST_OPENCL_018_DIR);
  FILE* probe = fopen(dir, "r");
  if (!probe) {
    printf("  skipped TVM 0.18's OpenCL graph models: %s is not there\n", dir);
    return;
  }
  fclose(probe);
  int64_t x_shape[] = {4, 32}, y_shape[] = {4, 10}, data_shape[] = {1, 3, 32, 32}, p_shape[] = {1, 10};

  /* The export_library .so: its factory on the OpenCL device. */
  char path[600];
  snprintf(path, sizeof path, "%s/packed.so", dir);
  TVMModuleHandle factory = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "", &factory));
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(factory, &kOpenCL, 1, &g));
  run_graph(g, dir, "x", x_shape, 2, y_shape, 40);
  CHECK_OK(TVMGraphExecutorFree(g));
  /* The device as an option, the call's devices left at the default CPU. */
  DLDevice cpu = {kDLCPU, 0}, other = {kDLOpenCL, 1};
  REQUIRE_OK(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &cpu, 1, "device=opencl:0", &g));
  run_graph(g, dir, "x", x_shape, 2, y_shape, 40);
  CHECK_OK(TVMGraphExecutorFree(g));
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &other, 1, "device=opencl:0", &g),
             "give the device once");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &cpu, 1, "device=gpu:0", &g),
             "option `device`: unknown device kind `gpu`");
  DLDevice missing = {kDLOpenCL, 99};
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(factory, &missing, 1, &g), "opencl:99 does not exist");
  CHECK_OK(TVMModFree(factory));

  /* The legacy trio: graph JSON, kernel library, params. */
  snprintf(dir, sizeof dir, "%s/cnn", TVM_TEST_OPENCL_018_DIR);
  snprintf(path, sizeof path, "%s/lib.so", dir);
  TVMModuleHandle lib = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "", &lib));
  size_t size = 0;
  char* json = tvm_test_read_file(dir, "graph.json", &size);
  char* params = tvm_test_read_file(dir, "params.bin", &size);
  REQUIRE_OK(TVMGraphExecutorCreate(json, lib, &kOpenCL, 1, &g));
  CHECK_OK(TVMGraphExecutorLoadParams(g, params, size));
  run_graph(g, dir, "data", data_shape, 4, p_shape, 10);
  CHECK_OK(TVMGraphExecutorFree(g));
  CHECK_OK(TVMModFree(lib));
  free(json);
  free(params);
}

/* Call `f` with `n` arguments of the given codes; the result and its code. */
static int call(TVMFunctionHandle f, TVMValue* args, int* codes, int n, TVMValue* ret, int* code) {
  return TVMFuncCall(f, args, codes, n, ret, code);
}

static TVMFunctionHandle function(TVMModuleHandle m, const char* name) {
  TVMFunctionHandle f = NULL;
  REQUIRE_OK(TVMModGetFunction(m, name, 0, &f));
  REQUIRE(f != NULL);
  return f;
}

static void relax_vm_027(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/vm_mlp.so", TVM_TEST_OPENCL_027_DIR);
  TVMModuleHandle exec = NULL, vm = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "", &exec));
  TVMValue ret, args[6];
  int code = 0, codes[6];
  TVMFunctionHandle load = function(exec, "vm_load_executable");
  REQUIRE_OK(call(load, NULL, NULL, 0, &ret, &code));
  vm = ret.v_handle;
  /* (opencl, 0, pooled), (cpu, 0, pooled): the kernels' device first, the host last. */
  int64_t init[6] = {kDLOpenCL, 0, 2, kDLCPU, 0, 2};
  for (int i = 0; i < 6; ++i) {
    args[i].v_int64 = init[i];
    codes[i] = kDLInt;
  }
  TVMFunctionHandle initialize = function(vm, "vm_initialization");
  REQUIRE_OK(call(initialize, args, codes, 6, &ret, &code));

  size_t n = 0;
  float* x = floats(TVM_TEST_OPENCL_027_DIR, "vm_mlp.input.bin", &n);
  int64_t shape[] = {5, 32};
  TVMArrayHandle input = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLOpenCL, 0, &input));
  CHECK_OK(TVMArrayCopyFromBytes(input, x, n * sizeof(float)));
  args[0].v_handle = input;
  codes[0] = kTVMNDArrayHandle;
  TVMFunctionHandle main_fn = function(vm, "main");
  REQUIRE_OK(call(main_fn, args, codes, 1, &ret, &code));
  REQUIRE(code == kTVMNDArrayHandle);
  TVMArrayHandle y = ret.v_handle;
  CHECK(y->device.device_type == kDLOpenCL);
  float out[50];
  CHECK_OK(TVMArrayCopyToBytes(y, out, sizeof out));
  float err = max_error(out, TVM_TEST_OPENCL_027_DIR, "vm_mlp.output.bin", 50);
  printf("  vm_mlp on opencl:0: max error %g\n", err);
  CHECK(err < 1e-5f);

  CHECK_OK(TVMArrayFree(y));
  CHECK_OK(TVMArrayFree(input));
  CHECK_OK(TVMFuncFree(main_fn));
  CHECK_OK(TVMFuncFree(initialize));
  CHECK_OK(TVMFuncFree(load));
  CHECK_OK(TVMModFree(vm));
  CHECK_OK(TVMModFree(exec));
  free(x);
}

int main(void) {
  if (!opencl_exists()) {
    printf("test_opencl: skipped (no OpenCL platform with a device)\n");
    return 0;
  }
  graph_models_018();
  relax_vm_027();
  return tvm_test_summary("test_opencl");
}
