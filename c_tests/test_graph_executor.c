/*
 * Our graph-executor C API (TVMGraphExecutor*, and the CRT-named aliases) on TVM 0.18's mlp
 * model: a library packed like export_library output (mlp_model: kernels + TVM's
 * __tvm_dev_mblob), and the graph.json + kernel library + params.bin trio (test_kernels).
 *
 * Numbers, model description, zero-copy, profiling, error paths (each followed by a valid run
 * that must still give the right numbers), handle liveness, and 4 threads running executors of
 * one factory against a single-threaded reference, bit for bit.
 *
 * Paths come from CMake: TVM_TEST_MLP_SO, TVM_TEST_KERNELS_SO, TVM_TEST_MLP_DATA_DIR.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_MLP_SO
#error "TVM_TEST_MLP_SO must be defined by the build"
#endif

#define MLP_KERNEL_0 "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu"
#define MLP_KERNEL_1 "tvmgen_default_fused_nn_contrib_dense_pack"
#define MLP_OUTPUT_NAME MLP_KERNEL_1

/* ---- data files ------------------------------------------------------------------------------ */

static char* read_data(const char* name, size_t* size) {
  return tvm_test_read_file(TVM_TEST_MLP_DATA_DIR, name, size);
}

static float X[16];   /* input_x.bin  (2x8) */
static float WANT[8]; /* output_0.bin (2x4) */
static char* GRAPH_JSON;
static char* PARAMS;
static size_t PARAMS_SIZE;

static void load_data(void) {
  size_t n = 0;
  char* x = read_data("input_x.bin", &n);
  REQUIRE(n == sizeof X);
  memcpy(X, x, sizeof X);
  free(x);
  char* w = read_data("output_0.bin", &n);
  REQUIRE(n == sizeof WANT);
  memcpy(WANT, w, sizeof WANT);
  free(w);
  GRAPH_JSON = read_data("graph.json", NULL);
  PARAMS = read_data("params.bin", &PARAMS_SIZE);
}

/* ---- tensors --------------------------------------------------------------------------------- */

/* A host float32 tensor over 64-byte aligned memory from aligned_alloc. Not movable once
 * initialised (t.shape points into the struct). */
typedef struct {
  DLTensor t;
  int64_t shape[4];
  float* data;
} Tensor;

static void tensor_init(Tensor* x, int ndim, const int64_t* shape, const float* values) {
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    x->shape[i] = shape[i];
    n *= (size_t)shape[i];
  }
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  x->data = (float*)aligned_alloc(64, bytes);
  REQUIRE(x->data != NULL);
  memset(x->data, 0, bytes);
  if (values) memcpy(x->data, values, n * sizeof(float));
  x->t.data = x->data;
  x->t.device.device_type = kDLCPU;
  x->t.device.device_id = 0;
  x->t.ndim = ndim;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
  x->t.strides = NULL;
  x->t.byte_offset = 0;
}

static void tensor_free(Tensor* x) {
  free(x->data);
  x->data = NULL;
}

static void input_x(Tensor* x) {
  const int64_t shape[2] = {2, 8};
  tensor_init(x, 2, shape, X);
}

static void output_buf(Tensor* x) {
  const int64_t shape[2] = {2, 4};
  tensor_init(x, 2, shape, NULL);
}

/* Same tolerance rule as the Rust tests: |got - want| <= tol * (1 + |want|). */
static int all_close(const float* got, const float* want, int n, float tol) {
  for (int i = 0; i < n; ++i) {
    if (!(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])))) {
      fprintf(stderr, "    element %d: got %.9g, want %.9g\n", i, (double)got[i], (double)want[i]);
      return 0;
    }
  }
  return 1;
}

/* ---- helpers --------------------------------------------------------------------------------- */

static void* load_module(const char* path) {
  void* m = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "", &m));
  REQUIRE(m != NULL);
  return m;
}

static TVMGraphExecutor* from_factory(void* factory) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(factory, &dev, 1, &g));
  REQUIRE(g != NULL);
  return g;
}

/* SetInput("x") from input_x.bin, Run, GetOutput(0) == output_0.bin. */
static void run_and_check_at(TVMGraphExecutor* g, int line) {
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  int ok = CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t)) && CHECK_OK(TVMGraphExecutorRun(g)) &&
           CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  if (ok && !CHECK(all_close(out.data, WANT, 8, 1e-5f)))
    fprintf(stderr, "    (run_and_check called from line %d)\n", line);
  tensor_free(&x);
  tensor_free(&out);
}
#define run_and_check(g) run_and_check_at((g), __LINE__)

static int shape_is(const TVMTensorInfo* info, int ndim, const int64_t* want) {
  if (info->ndim != ndim || info->shape == NULL) return 0;
  for (int i = 0; i < ndim; ++i)
    if (info->shape[i] != want[i]) return 0;
  return 1;
}

static int is_float32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_factory_describes_and_runs(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  run_and_check(g);

  int32_t n_in = -1, n_out = -1;
  CHECK_OK(TVMGraphExecutorGetNumInputs(g, &n_in));
  CHECK_OK(TVMGraphExecutorGetNumOutputs(g, &n_out));
  CHECK(n_in == 4);
  CHECK(n_out == 1);

  const char* names[4] = {"x", "p0", "p1", "p2"};
  for (int32_t i = 0; i < 4; ++i) {
    int32_t idx = -1;
    CHECK_OK(TVMGraphExecutorGetInputIndex(g, names[i], &idx));
    CHECK(idx == i);
  }
  int32_t idx = -1;
  CHECK_OK(TVMGraphExecutorGetOutputIndex(g, MLP_OUTPUT_NAME, &idx));
  CHECK(idx == 0);
  idx = -1;
  CHECK_OK(TVMGraphExecutorGetOutputIndex(g, MLP_OUTPUT_NAME ":0", &idx));
  CHECK(idx == 0);

  /* Inputs: x is data, the weights are params (they came with the factory). */
  static const int64_t s_x[] = {2, 8}, s_p0[] = {2, 8, 8}, s_p1[] = {1, 16}, s_p2[] = {1, 16, 4};
  static const int64_t* shapes[4] = {s_x, s_p0, s_p1, s_p2};
  static const int ndims[4] = {2, 3, 2, 3};
  static const size_t nbytes[4] = {64, 512, 64, 256};
  for (int32_t i = 0; i < 4; ++i) {
    TVMTensorInfo info;
    memset(&info, 0, sizeof info);
    if (!CHECK_OK(TVMGraphExecutorGetInputInfo(g, i, &info))) continue;
    CHECK_STREQ(info.name, names[i]);
    CHECK(shape_is(&info, ndims[i], shapes[i]));
    CHECK(is_float32(info.dtype));
    CHECK(info.nbytes == nbytes[i]);
    CHECK(info.is_param == (i == 0 ? 0 : 1));
  }
  TVMTensorInfo oinfo;
  memset(&oinfo, 0, sizeof oinfo);
  if (CHECK_OK(TVMGraphExecutorGetOutputInfo(g, 0, &oinfo))) {
    static const int64_t s_out[] = {2, 4};
    CHECK_STREQ(oinfo.name, MLP_OUTPUT_NAME);
    CHECK(shape_is(&oinfo, 2, s_out));
    CHECK(is_float32(oinfo.dtype));
    CHECK(oinfo.nbytes == 32);
    CHECK(oinfo.is_param == 0);
    /* The name from the info round-trips through GetOutputIndex. */
    idx = -1;
    CHECK_OK(TVMGraphExecutorGetOutputIndex(g, oinfo.name, &idx));
    CHECK(idx == 0);
  }

  /* SetInputByIndex is SetInput by another name. */
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  CHECK_OK(TVMGraphExecutorSetInputByIndex(g, 0, &x.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));

  /* Outputs are a function of the input: doubling x changes them, restoring it restores them. */
  for (int i = 0; i < 16; ++i) x.data[i] = 2.0f * X[i];
  CHECK_OK(TVMGraphExecutorSetInputByIndex(g, 0, &x.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  CHECK(memcmp(out.data, WANT, sizeof WANT) != 0);
  run_and_check(g);
  tensor_free(&x);
  tensor_free(&out);

  /* Two executors of one factory are independent: writing a weight in one (copy on write)
   * leaves the other alone, and LoadParams restores it. */
  TVMGraphExecutor* h = from_factory(factory);
  CHECK(h != g);
  run_and_check(h);
  {
    static const int64_t s_p1[2] = {1, 16};
    float zeros[16];
    memset(zeros, 0, sizeof zeros);
    Tensor p1, o;
    tensor_init(&p1, 2, s_p1, zeros);
    output_buf(&o);
    Tensor xx;
    input_x(&xx);
    for (int i = 0; i < 16; ++i) p1.data[i] = 100.0f;
    CHECK_OK(TVMGraphExecutorSetInput(g, "p1", &p1.t));
    CHECK_OK(TVMGraphExecutorSetInput(g, "x", &xx.t));
    CHECK_OK(TVMGraphExecutorRun(g));
    CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &o.t));
    CHECK(memcmp(o.data, WANT, 32) != 0);
    run_and_check(h);
    TVMGraphExecutor* fresh = from_factory(factory);
    run_and_check(fresh);
    CHECK_OK(TVMGraphExecutorFree(fresh));
    CHECK_OK(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE));
    run_and_check(g);
    tensor_free(&p1);
    tensor_free(&o);
    tensor_free(&xx);
  }
  /* Two devices (both the CPU) are accepted. */
  {
    DLDevice devs[2] = {{kDLCPU, 0}, {kDLCPU, 0}};
    TVMGraphExecutor* two = NULL;
    if (CHECK_OK(TVMGraphExecutorCreateFromFactory(factory, devs, 2, &two))) {
      run_and_check(two);
      CHECK_OK(TVMGraphExecutorFree(two));
    }
  }
  CHECK_OK(TVMGraphExecutorFree(h));
  run_and_check(g);
  CHECK_OK(TVMGraphExecutorFree(g));
}

static void test_zero_copy(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  CHECK(((uintptr_t)x.data % 64) == 0 && ((uintptr_t)out.data % 64) == 0);
  CHECK_OK(TVMGraphExecutorSetInputZeroCopy(g, 0, &x.t));
  CHECK_OK(TVMGraphExecutorSetOutputZeroCopy(g, 0, &out.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));

  /* The executor reads the caller's buffer on every run: writing it in place is an input. */
  memset(out.data, 0, 32);
  for (int i = 0; i < 16; ++i) x.data[i] = 3.0f * X[i];
  CHECK_OK(TVMGraphExecutorRun(g));
  Tensor copy_out;
  output_buf(&copy_out);
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &copy_out.t));
  CHECK(memcmp(copy_out.data, out.data, 32) == 0); /* GetOutput sees the zero-copy output */
  CHECK(memcmp(out.data, WANT, 32) != 0);
  /* ...and the numbers equal those of a copying executor on the same input. */
  {
    TVMGraphExecutor* ref = from_factory(factory);
    Tensor ref_out;
    output_buf(&ref_out);
    CHECK_OK(TVMGraphExecutorSetInput(ref, "x", &x.t));
    CHECK_OK(TVMGraphExecutorRun(ref));
    CHECK_OK(TVMGraphExecutorGetOutput(ref, 0, &ref_out.t));
    CHECK(memcmp(ref_out.data, out.data, 32) == 0);
    tensor_free(&ref_out);
    CHECK_OK(TVMGraphExecutorFree(ref));
  }
  tensor_free(&copy_out);
  memcpy(x.data, X, sizeof X);

  /* Misaligned memory is rejected: through byte_offset and through the data pointer. */
  Tensor mis;
  const int64_t shape_big[1] = {32};
  tensor_init(&mis, 1, shape_big, NULL);
  mis.shape[0] = 2;
  mis.shape[1] = 8;
  mis.t.ndim = 2;
  memcpy(mis.data + 1, X, sizeof X);
  mis.t.byte_offset = 4;
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &mis.t), "64-byte aligned");
  mis.t.byte_offset = 0;
  mis.t.data = mis.data + 1;
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &mis.t), "64-byte aligned");
  /* The same for an output buffer (shape [2, 4], 8 bytes past an aligned address). */
  mis.shape[0] = 2;
  mis.shape[1] = 4;
  mis.t.data = (char*)mis.data + 8;
  CHECK_FAIL(TVMGraphExecutorSetOutputZeroCopy(g, 0, &mis.t), "64-byte aligned");
  /* Wrong shape/dtype/device for zero-copy. */
  Tensor bad;
  const int64_t s82[2] = {8, 2};
  tensor_init(&bad, 2, s82, X);
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &bad.t), "expected shape [2, 8], got [8, 2]");
  bad.shape[0] = 2;
  bad.shape[1] = 8;
  bad.t.device.device_type = kDLCUDA;
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &bad.t), "expected device cpu(0), got cuda(0)");
  bad.t.device.device_type = kDLCPU;
  bad.t.dtype.code = kDLInt;
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &bad.t), "expected dtype float32, got int32");
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 4, &x.t), "input index 4 out of range");
  CHECK_FAIL(TVMGraphExecutorSetOutputZeroCopy(g, 1, &out.t), "output index 1 out of range");
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, NULL), "is NULL");
  tensor_free(&bad);
  tensor_free(&mis);

  /* After the rejected calls the original zero-copy buffers are still the ones in use. */
  memset(out.data, 0, 32);
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  /* GetOutput into the very buffer the output is bound to copies onto itself. */
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  /* SetInput with the bound buffer itself as the source. */
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  CHECK_OK(TVMGraphExecutorFree(g));
  tensor_free(&x);
  tensor_free(&out);
}

static void test_profile(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  Tensor x;
  input_x(&x);
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
  const char* text = NULL;
  if (CHECK_OK(TVMGraphExecutorProfile(g, 0, &text)) && CHECK(text != NULL)) {
    CHECK_CONTAINS(text, MLP_KERNEL_0);
    CHECK_CONTAINS(text, MLP_KERNEL_1);
    CHECK_CONTAINS(text, "over 2 ops");
  }
  text = NULL;
  if (CHECK_OK(TVMGraphExecutorProfile(g, 1, &text)) && CHECK(text != NULL)) {
    if (!CHECK(strncmp(text, "{\"traceEvents\"", 14) == 0))
      fprintf(stderr, "    Chrome trace starts with: %.60s\n", text);
    CHECK_CONTAINS(text, "\"traceEvents\":[");
    CHECK_CONTAINS(text, "\"ph\":\"X\"");
    CHECK_CONTAINS(text, MLP_KERNEL_0);
    CHECK_CONTAINS(text, MLP_KERNEL_1);
    size_t len = strlen(text);
    CHECK(len > 0 && text[len - 1] == '}');
  }
  const char* keep = text;
  CHECK_FAIL(TVMGraphExecutorProfile(g, 2, &text), "profile format 2 is unknown");
  CHECK(text == keep); /* a failed call leaves *out alone */
  CHECK_FAIL(TVMGraphExecutorProfile(g, 0, NULL), "is NULL");
  /* A profiled run is a run: the output is there. */
  Tensor out;
  output_buf(&out);
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  run_and_check(g);
  tensor_free(&out);
  tensor_free(&x);
  CHECK_OK(TVMGraphExecutorFree(g));
}

static void test_errors(void* factory, void* kernels) {
  TVMGraphExecutor* g = from_factory(factory);
  Tensor x;
  input_x(&x);

  /* Wrong shape, dtype and device, with expected vs got. */
  Tensor wrong;
  const int64_t s82[2] = {8, 2};
  tensor_init(&wrong, 2, s82, X);
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", &wrong.t), "expected shape [2, 8], got [8, 2]");
  run_and_check(g);
  wrong.shape[0] = 2;
  wrong.shape[1] = 8;
  wrong.t.dtype.code = kDLInt;
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", &wrong.t), "expected dtype float32, got int32");
  run_and_check(g);
  wrong.t.ndim = 1;
  wrong.shape[0] = 16;
  wrong.t.dtype.code = kDLFloat;
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", &wrong.t), "expected shape [2, 8], got [16]");
  run_and_check(g);
  wrong.t.ndim = 2;
  wrong.shape[0] = 2;
  wrong.shape[1] = 8;
  wrong.t.dtype.bits = 64;
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", &wrong.t), "expected dtype float32, got float64");
  wrong.t.dtype.bits = 32;
  wrong.t.device.device_type = kDLCUDA;
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &wrong.t), "expected device cpu(0), got cuda(0)");
  CHECK(TVMGraphExecutorSetInput(g, "x", &wrong.t) == -1); /* no CUDA here: any error will do */
  run_and_check(g);
  wrong.t.device.device_type = kDLCPU;
  /* Strides: compact ones are accepted, others rejected. */
  int64_t strides[2] = {8, 1};
  wrong.t.strides = strides;
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &wrong.t));
  strides[0] = 1;
  strides[1] = 2;
  CHECK(TVMGraphExecutorSetInput(g, "x", &wrong.t) == -1);
  CHECK(TVMGraphExecutorSetInputZeroCopy(g, 0, &wrong.t) == -1);
  wrong.t.strides = NULL;
  run_and_check(g);
  /* A weight with the wrong shape. */
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "p0", &wrong.t), "expected shape [2, 8, 8], got [2, 8]");
  run_and_check(g);
  tensor_free(&wrong);

  /* Outputs into the wrong tensor. */
  Tensor out25;
  const int64_t s25[2] = {2, 5};
  tensor_init(&out25, 2, s25, NULL);
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 0, &out25.t), "expected shape [2, 4], got [2, 5]");
  out25.shape[1] = 4;
  out25.t.dtype.code = kDLUInt;
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 0, &out25.t), "expected dtype float32, got uint32");
  tensor_free(&out25);
  run_and_check(g);

  /* Unknown names. */
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "y", &x.t), "no input named `y` (inputs: x, p0, p1, p2)");
  int32_t idx = 77;
  CHECK_FAIL(TVMGraphExecutorGetInputIndex(g, "nope", &idx), "no input named `nope`");
  CHECK(idx == 77);
  CHECK_FAIL(TVMGraphExecutorGetOutputIndex(g, "nope", &idx), "no output named `nope`");
  CHECK_FAIL(TVMGraphExecutorGetOutputIndex(g, MLP_OUTPUT_NAME ":1", &idx), "no output named");
  CHECK_FAIL(TVMGraphExecutorGetInputIndex(g, "", &idx), "no input named ``");
  run_and_check(g);

  /* Indices out of range. */
  CHECK_FAIL(TVMGraphExecutorSetInputByIndex(g, 9, &x.t), "input index 9 out of range");
  CHECK_FAIL(TVMGraphExecutorSetInputByIndex(g, 4, &x.t), "input index 4 out of range");
  CHECK_FAIL(TVMGraphExecutorSetInputByIndex(g, -1, &x.t), "input index -1 is negative");
  Tensor out;
  output_buf(&out);
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 1, &out.t), "output index 1 out of range");
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, -1, &out.t), "output index -1 is negative");
  TVMTensorInfo info;
  CHECK_FAIL(TVMGraphExecutorGetInputInfo(g, 4, &info), "input index 4 out of range (the graph has 4 inputs)");
  CHECK_FAIL(TVMGraphExecutorGetInputInfo(g, -1, &info), "input index -1 is negative");
  CHECK_FAIL(TVMGraphExecutorGetOutputInfo(g, 1, &info), "output index 1 out of range (the graph has 1 output)");
  run_and_check(g);

  /* NULL pointers. */
  int32_t n = 0;
  CHECK_FAIL(TVMGraphExecutorRun(NULL), "argument `g` (graph executor) is NULL");
  CHECK_FAIL(TVMGraphExecutorGetNumInputs(NULL, &n), "argument `g` (graph executor) is NULL");
  CHECK_FAIL(TVMGraphExecutorGetNumInputs(g, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetNumOutputs(g, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorSetInput(g, NULL, &x.t), "argument `name` is NULL");
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", NULL), "argument `data` is NULL");
  CHECK_FAIL(TVMGraphExecutorSetInputByIndex(g, 0, NULL), "argument `data` is NULL");
  CHECK_FAIL(TVMGraphExecutorSetOutputZeroCopy(g, 0, NULL), "argument `data` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 0, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetOutput(NULL, 0, &out.t), "is NULL");
  CHECK_FAIL(TVMGraphExecutorGetInputIndex(g, NULL, &idx), "argument `name` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetInputIndex(g, "x", NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetOutputIndex(g, NULL, &idx), "argument `name` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetInputInfo(g, 0, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetOutputInfo(g, 0, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, NULL, 16), "argument `data` is NULL");
  CHECK_FAIL(TVMGraphExecutorLoadParams(NULL, PARAMS, PARAMS_SIZE), "is NULL");
  tensor_free(&out);
  run_and_check(g);

  /* Params blobs: truncated (at every length short of the whole), garbage, empty. */
  int truncated_ok = 1;
  for (size_t len = 0; len < PARAMS_SIZE; len += (len < 64 ? 1 : 37)) {
    if (TVMGraphExecutorLoadParams(g, PARAMS, len) != -1) {
      fprintf(stderr, "    LoadParams accepted a params blob truncated to %zu of %zu bytes\n", len,
              PARAMS_SIZE);
      truncated_ok = 0;
    }
  }
  CHECK(truncated_ok);
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE - 3), "truncated");
  run_and_check(g);
  char garbage[64];
  memset(garbage, 0x5a, sizeof garbage);
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, garbage, sizeof garbage), "magic");
  run_and_check(g);
  /* The factory's own params reloaded: same numbers. */
  CHECK_OK(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE));
  run_and_check(g);

  /* Creation errors. */
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* h = (TVMGraphExecutor*)0x1;
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(factory, &dev, 0, &h), "`num_devices` is 0");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(factory, NULL, 1, &h), "argument `devices` is NULL");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(factory, &dev, 1, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(NULL, &dev, 1, &h), "factory");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(kernels, &dev, 1, &h), "is not a GraphExecutorFactory");
  CHECK_FAIL(TVMGraphExecutorCreate(GRAPH_JSON, kernels, &dev, 0, &h), "`num_devices` is 0");
  CHECK_FAIL(TVMGraphExecutorCreate(NULL, kernels, &dev, 1, &h), "argument `graph_json` is NULL");
  CHECK_FAIL(TVMGraphExecutorCreate(GRAPH_JSON, NULL, &dev, 1, &h), "module");
  CHECK_FAIL(TVMGraphExecutorCreate("{\"nodes\": [", kernels, &dev, 1, &h), "graph JSON: not valid JSON");
  CHECK_FAIL(TVMGraphExecutorCreate("not json", kernels, &dev, 1, &h), "graph JSON: not valid JSON");
  CHECK_FAIL(TVMGraphExecutorCreate("{}", kernels, &dev, 1, &h), "graph JSON: missing `nodes`");
  /* A device without a device API here. */
  DLDevice cuda = {kDLCUDA, 0};
  CHECK_FAIL(TVMGraphExecutorCreateFromFactory(factory, &cuda, 1, &h), "cuda");
  CHECK_FAIL(TVMGraphExecutorCreate(GRAPH_JSON, kernels, &cuda, 1, &h), "cuda");
  /* A graph whose kernel the module lacks names both. */
  {
    size_t len = strlen(GRAPH_JSON);
    char* renamed = (char*)malloc(len + 1);
    REQUIRE(renamed != NULL);
    memcpy(renamed, GRAPH_JSON, len + 1);
    /* "func_name": "tvmgen_default_fused_nn_contrib_dense_pack" -> ..._pacX (same length) */
    char* p = strstr(renamed, "\"func_name\": \"" MLP_KERNEL_1 "\"");
    REQUIRE(p != NULL);
    p[strlen("\"func_name\": \"" MLP_KERNEL_1) - 1] = 'X';
    CHECK_FAIL(TVMGraphExecutorCreate(renamed, kernels, &dev, 1, &h),
               "tvmgen_default_fused_nn_contrib_dense_pacX");
    free(renamed);
  }
  CHECK(h == (TVMGraphExecutor*)0x1); /* failures leave *out alone */
  run_and_check(g);

  tensor_free(&x);
  CHECK_OK(TVMGraphExecutorFree(g));
}

static void test_freed_handles(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  run_and_check(g);
  TVMGraphExecutor* other = from_factory(factory);
  CHECK_OK(TVMGraphExecutorFree(g));

  /* Use after free and double free are detected, not crashes. */
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  int32_t n = -1;
  TVMTensorInfo info;
  const char* text = NULL;
  CHECK_FAIL(TVMGraphExecutorRun(g), "not live");
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "x", &x.t), "not live");
  CHECK_FAIL(TVMGraphExecutorSetInputByIndex(g, 0, &x.t), "not live");
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &x.t), "not live");
  CHECK_FAIL(TVMGraphExecutorSetOutputZeroCopy(g, 0, &out.t), "not live");
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 0, &out.t), "not live");
  CHECK_FAIL(TVMGraphExecutorGetNumInputs(g, &n), "not live");
  CHECK_FAIL(TVMGraphExecutorGetNumOutputs(g, &n), "not live");
  CHECK_FAIL(TVMGraphExecutorGetInputIndex(g, "x", &n), "not live");
  CHECK_FAIL(TVMGraphExecutorGetOutputIndex(g, MLP_OUTPUT_NAME, &n), "not live");
  CHECK_FAIL(TVMGraphExecutorGetInputInfo(g, 0, &info), "not live");
  CHECK_FAIL(TVMGraphExecutorGetOutputInfo(g, 0, &info), "not live");
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE), "not live");
  CHECK_FAIL(TVMGraphExecutorProfile(g, 0, &text), "not live");
  CHECK_FAIL(TVMGraphExecutorFree(g), "not live");
  CHECK_FAIL(TVMGraphExecutorFree(g), "not live");
  /* A pointer that was never an executor. */
  int not_an_executor = 0;
  CHECK_FAIL(TVMGraphExecutorRun((TVMGraphExecutor*)&not_an_executor), "not live");
  CHECK_FAIL(TVMGraphExecutorFree((TVMGraphExecutor*)&not_an_executor), "not live");
  /* CRT names too. */
  CHECK(TVMGraphExecutor_GetNumInputs(g) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "not live");
  TVMGraphExecutor* alias = g;
  CHECK_FAIL(TVMGraphExecutor_Release(&alias), "not live");
  CHECK(alias == g); /* a failed release leaves the pointer alone */

  CHECK_OK(TVMGraphExecutorFree(NULL)); /* NULL is a no-op */
  /* The other executor of the factory was not disturbed. */
  run_and_check(other);
  CHECK_OK(TVMGraphExecutorFree(other));
  tensor_free(&x);
  tensor_free(&out);
}

/* TVMGraphExecutorCreate(graph.json, blob-less kernel library) + LoadParams(params.bin). */
static void test_trio(void* factory, void* kernels) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreate(GRAPH_JSON, kernels, &dev, 1, &g));
  REQUIRE(g != NULL);
  int32_t n = -1;
  CHECK_OK(TVMGraphExecutorGetNumInputs(g, &n));
  CHECK(n == 4);
  CHECK_OK(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE));
  run_and_check(g);
  /* Loaded weights are params in the info. */
  TVMTensorInfo info;
  if (CHECK_OK(TVMGraphExecutorGetInputInfo(g, 2, &info))) {
    CHECK_STREQ(info.name, "p1");
    CHECK(info.is_param == 1);
  }
  if (CHECK_OK(TVMGraphExecutorGetInputInfo(g, 0, &info))) CHECK(info.is_param == 0);

  /* Bit for bit what the factory's executor computes. */
  Tensor x, a, b;
  input_x(&x);
  output_buf(&a);
  output_buf(&b);
  TVMGraphExecutor* f = from_factory(factory);
  for (int k = 0; k < 16; ++k) x.data[k] = X[k] * -1.5f;
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
  CHECK_OK(TVMGraphExecutorSetInput(f, "x", &x.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorRun(f));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &a.t));
  CHECK_OK(TVMGraphExecutorGetOutput(f, 0, &b.t));
  CHECK(memcmp(a.data, b.data, 32) == 0);
  CHECK_OK(TVMGraphExecutorFree(f));

  /* A truncated params blob is an error naming the problem; the executor still works. */
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE - 3), "truncated");
  run_and_check(g);
  CHECK_FAIL(TVMGraphExecutorLoadParams(g, PARAMS, 20), "truncated");
  run_and_check(g);
  CHECK_OK(TVMGraphExecutorFree(g));

  /* Order does not matter: the data input first, then the weights. */
  REQUIRE_OK(TVMGraphExecutorCreate(GRAPH_JSON, kernels, &dev, 1, &g));
  memcpy(x.data, X, sizeof X);
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
  CHECK_OK(TVMGraphExecutorLoadParams(g, PARAMS, PARAMS_SIZE));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &a.t));
  CHECK(all_close(a.data, WANT, 8, 1e-5f));
  CHECK_OK(TVMGraphExecutorFree(g));

  tensor_free(&x);
  tensor_free(&a);
  tensor_free(&b);
}

static void test_crt_names(void* kernels) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* c = NULL;
  REQUIRE_OK(TVMGraphExecutor_Create(GRAPH_JSON, kernels, &dev, &c));
  REQUIRE(c != NULL);
  CHECK(TVMGraphExecutor_GetNumInputs(c) == 4);
  CHECK(TVMGraphExecutor_GetNumOutputs(c) == 1);
  CHECK(TVMGraphExecutor_GetInputIndex(c, "x") == 0);
  CHECK(TVMGraphExecutor_GetInputIndex(c, "p2") == 3);
  CHECK(TVMGraphExecutor_GetInputIndex(c, "nope") == -1);
  CHECK_CONTAINS(TVMGetLastError(), "no input named `nope`");
  CHECK_OK(TVMGraphExecutor_LoadParams(c, PARAMS, (uint32_t)PARAMS_SIZE));
  CHECK(TVMGraphExecutor_LoadParams(c, PARAMS, (uint32_t)PARAMS_SIZE - 3) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "truncated");

  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  TVMAPISetLastError("marker: no error yet");
  TVMGraphExecutor_SetInput(c, "x", &x.t);
  TVMGraphExecutor_Run(c);
  CHECK_STREQ(TVMGetLastError(), "marker: no error yet"); /* void calls that succeed set nothing */
  CHECK_OK(TVMGraphExecutor_GetOutput(c, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));

  /* The void calls report errors through the last error. */
  Tensor wrong;
  const int64_t s82[2] = {8, 2};
  tensor_init(&wrong, 2, s82, X);
  TVMAPISetLastError("marker");
  TVMGraphExecutor_SetInput(c, "x", &wrong.t);
  CHECK_CONTAINS(TVMGetLastError(), "expected shape [2, 8], got [8, 2]");
  TVMAPISetLastError("marker");
  TVMGraphExecutor_Run(NULL);
  CHECK_CONTAINS(TVMGetLastError(), "is NULL");
  CHECK(TVMGraphExecutor_GetNumInputs(NULL) == -1);
  CHECK(TVMGraphExecutor_GetNumOutputs(NULL) == -1);
  CHECK(TVMGraphExecutor_GetInputIndex(NULL, "x") == -1);
  CHECK(TVMGraphExecutor_GetOutput(c, 3, &out.t) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "output index 3 out of range");
  tensor_free(&wrong);

  /* Still correct after the errors. */
  memset(out.data, 0, 32);
  TVMGraphExecutor_SetInput(c, "x", &x.t);
  TVMGraphExecutor_Run(c);
  CHECK_OK(TVMGraphExecutor_GetOutput(c, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));

  CHECK_OK(TVMGraphExecutor_Release(&c));
  CHECK(c == NULL);
  CHECK_OK(TVMGraphExecutor_Release(&c)); /* *executor NULL: no-op */
  CHECK_FAIL(TVMGraphExecutor_Release(NULL), "argument `executor` is NULL");

  /* TVMGraphExecutor_Create checks its arguments like TVMGraphExecutorCreate. */
  c = NULL;
  CHECK(TVMGraphExecutor_Create(NULL, kernels, &dev, &c) == -1);
  CHECK(TVMGraphExecutor_Create(GRAPH_JSON, kernels, NULL, &c) == -1);
  CHECK(c == NULL);
  tensor_free(&x);
  tensor_free(&out);
}

/* ---- threads --------------------------------------------------------------------------------- */

enum { N_THREADS = 4, N_RUNS = 200 };

static float REF[N_THREADS][N_RUNS][8];

static float scale_of(int tid, int iter) { return (float)(tid + 1) + 0.03125f * (float)iter; }

typedef struct {
  void* factory;
  int tid;
  int mismatches;
  int failures;
} Worker;

static void* worker_main(void* arg) {
  Worker* w = (Worker*)arg;
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  if (TVMGraphExecutorCreateFromFactory(w->factory, &dev, 1, &g) != 0) {
    fprintf(stderr, "    thread %d: create failed: %s\n", w->tid, tvm_test_last_error());
    w->failures++;
    return NULL;
  }
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  for (int it = 0; it < N_RUNS; ++it) {
    float s = scale_of(w->tid, it);
    for (int k = 0; k < 16; ++k) x.data[k] = X[k] * s;
    if (TVMGraphExecutorSetInput(g, "x", &x.t) != 0 || TVMGraphExecutorRun(g) != 0 ||
        TVMGraphExecutorGetOutput(g, 0, &out.t) != 0) {
      fprintf(stderr, "    thread %d run %d failed: %s\n", w->tid, it, tvm_test_last_error());
      w->failures++;
      continue;
    }
    if (memcmp(out.data, REF[w->tid][it], sizeof REF[0][0]) != 0) {
      if (w->mismatches == 0)
        fprintf(stderr, "    thread %d run %d: output differs from the reference (%.9g vs %.9g)\n",
                w->tid, it, (double)out.data[0], (double)REF[w->tid][it][0]);
      w->mismatches++;
    }
  }
  if (TVMGraphExecutorFree(g) != 0) w->failures++;
  tensor_free(&x);
  tensor_free(&out);
  return NULL;
}

static void test_threads(void* factory) {
  /* Reference outputs, computed on this thread by one executor. */
  TVMGraphExecutor* ref = from_factory(factory);
  Tensor x, out;
  input_x(&x);
  output_buf(&out);
  int ref_ok = 1;
  for (int t = 0; t < N_THREADS; ++t) {
    for (int it = 0; it < N_RUNS; ++it) {
      float s = scale_of(t, it);
      for (int k = 0; k < 16; ++k) x.data[k] = X[k] * s;
      ref_ok &= TVMGraphExecutorSetInput(ref, "x", &x.t) == 0 && TVMGraphExecutorRun(ref) == 0 &&
                TVMGraphExecutorGetOutput(ref, 0, &out.t) == 0;
      memcpy(REF[t][it], out.data, sizeof REF[t][it]);
    }
  }
  REQUIRE(ref_ok);
  /* Sanity: scale 1 is the TVM output. */
  CHECK(all_close(REF[0][0], WANT, 8, 1e-5f));
  CHECK(memcmp(REF[0][1], REF[0][0], sizeof REF[0][0]) != 0);
  tensor_free(&x);
  tensor_free(&out);

  Worker workers[N_THREADS];
  pthread_t threads[N_THREADS];
  for (int t = 0; t < N_THREADS; ++t) {
    workers[t].factory = factory;
    workers[t].tid = t;
    workers[t].mismatches = 0;
    workers[t].failures = 0;
    REQUIRE(pthread_create(&threads[t], NULL, worker_main, &workers[t]) == 0);
  }
  for (int t = 0; t < N_THREADS; ++t) REQUIRE(pthread_join(threads[t], NULL) == 0);
  for (int t = 0; t < N_THREADS; ++t) {
    CHECK(workers[t].failures == 0);
    CHECK(workers[t].mismatches == 0);
  }
  /* The reference executor is untouched by all that. */
  run_and_check(ref);
  CHECK_OK(TVMGraphExecutorFree(ref));
}

/* One executor used by two threads at once: the documented behaviour is that a call while
 * another thread is inside a call fails (it does not block, and nothing breaks). */
typedef struct {
  TVMGraphExecutor* g;
  int ok, busy, other;
} Contender;

static void* contend_main(void* arg) {
  Contender* c = (Contender*)arg;
  for (int i = 0; i < 2000; ++i) {
    if (TVMGraphExecutorRun(c->g) == 0) {
      c->ok++;
    } else if (strstr(tvm_test_last_error(), "in use by another thread") != NULL) {
      c->busy++;
    } else {
      if (c->other == 0) fprintf(stderr, "    unexpected error: %s\n", tvm_test_last_error());
      c->other++;
    }
  }
  return NULL;
}

static void test_one_executor_two_threads(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  Tensor x;
  input_x(&x);
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
  Contender c[2] = {{g, 0, 0, 0}, {g, 0, 0, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; ++i) REQUIRE(pthread_create(&t[i], NULL, contend_main, &c[i]) == 0);
  for (int i = 0; i < 2; ++i) REQUIRE(pthread_join(t[i], NULL) == 0);
  for (int i = 0; i < 2; ++i) {
    CHECK(c[i].other == 0);
    CHECK(c[i].ok + c[i].busy == 2000);
  }
  CHECK(c[0].ok + c[1].ok > 0);
  Tensor out;
  output_buf(&out);
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  tensor_free(&out);
  tensor_free(&x);
  CHECK_OK(TVMGraphExecutorFree(g));
}

int main(void) {
  load_data();
  void* factory = load_module(TVM_TEST_MLP_SO);
  void* kernels = load_module(TVM_TEST_KERNELS_SO);

  test_factory_describes_and_runs(factory);
  test_zero_copy(factory);
  test_profile(factory);
  test_errors(factory, kernels);
  test_freed_handles(factory);
  test_trio(factory, kernels);
  test_crt_names(kernels);
  test_threads(factory);
  test_one_executor_two_threads(factory);

  /* Executors keep their module alive: one created before the factory is freed still runs. */
  TVMGraphExecutor* g = from_factory(factory);
  CHECK_OK(TVMModFree(factory));
  CHECK_OK(TVMModFree(kernels));
  run_and_check(g);
  CHECK_OK(TVMGraphExecutorFree(g));

  free(GRAPH_JSON);
  free(PARAMS);
  return tvm_test_summary("test_graph_executor");
}
