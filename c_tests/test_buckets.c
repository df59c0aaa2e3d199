/*
 * Bucketed executors from C (TVMGraphExecutorCreateBucketed): one model compiled at batch 1, 2
 * and 4 behind one TVMGraphExecutor*. Every batch from 1 to 4 goes through the ordinary
 * SetInput / Run / GetOutputInfo / GetOutput calls and is checked against the arithmetic; the
 * bucket picked is the smallest covering one; the padded rows hold pad_value. Errors: shapes past
 * the largest bucket or off on a static axis (naming the input, axis, extent and limit), versions
 * whose weights or shapes disagree, bad options, NULL arguments, the calls a bucketed executor
 * does not support (and the bucket queries a plain one refuses); and TVMBucketExtents.
 *
 * Model: y = (a + b) * w with a, b [n, 4] and the weight w [1] = 2, over the elementwise kernels of
 * tests/fixtures/kernels.c (test_kernels), each version a GraphExecutorFactory made by TVM's
 * global `tvm.graph_executor_factory.create`.
 */
#include <stdint.h>
#include <stdio.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_KERNELS_SO
#error "TVM_TEST_KERNELS_SO must be defined by the build"
#endif

static void* KERNELS;

/* The add-mul graph at batch n (storage: one slot per entry). */
static void graph_json(char* buf, size_t size, int n, const char* b_name) {
  snprintf(buf, size,
           "{\"nodes\": [{\"op\": \"null\", \"name\": \"a\", \"inputs\": []}, {\"op\": \"null\", \"name\": \"%s\", "
           "\"inputs\": []},"
           "{\"op\": \"tvm_op\", \"name\": \"add\", \"attrs\": {\"func_name\": \"tvmgen_default_fused_add\", "
           "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[0, 0, 0], [1, 0, 0]]},"
           "{\"op\": \"null\", \"name\": \"w\", \"inputs\": []},"
           "{\"op\": \"tvm_op\", \"name\": \"mul\", \"attrs\": {\"func_name\": \"tvmgen_default_fused_multiply\", "
           "\"num_inputs\": \"2\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[2, 0, 0], [3, 0, 0]]}],"
           "\"arg_nodes\": [0, 1, 3], \"heads\": [[4, 0, 0]], \"node_row_ptr\": [0, 1, 2, 3, 4, 5],"
           "\"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\", \"float32\", \"float32\", \"float32\"]],"
           "\"storage_id\": [\"list_int\", [0, 1, 2, 3, 4]],"
           "\"shape\": [\"list_shape\", [[%d, 4], [%d, 4], [%d, 4], [1], [%d, 4]]]}}",
           b_name, n, n, n, n);
}

/* A factory module of the model at batch n with weight value w. */
static void* factory(int n, float w, const char* b_name) {
  static char json[4096];
  graph_json(json, sizeof json, n, b_name);
  int64_t shape[1] = {1};
  TVMArrayHandle weight = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &weight));
  REQUIRE_OK(TVMArrayCopyFromBytes(weight, &w, sizeof w));
  TVMFunctionHandle create = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("tvm.graph_executor_factory.create", &create));
  REQUIRE(create != NULL);
  TVMValue args[5], ret;
  int codes[5] = {kTVMStr, kTVMModuleHandle, kTVMStr, kTVMStr, kTVMNDArrayHandle}, ret_code = 0;
  args[0].v_str = json;
  args[1].v_handle = KERNELS;
  args[2].v_str = "default";
  args[3].v_str = "w";
  args[4].v_handle = weight;
  REQUIRE_OK(TVMFuncCall(create, args, codes, 5, &ret, &ret_code));
  REQUIRE(ret_code == kTVMModuleHandle);
  CHECK_OK(TVMArrayFree(weight));
  CHECK_OK(TVMFuncFree(create));
  return ret.v_handle;
}

/* A host float32 tensor [rows, 4] over 64-byte aligned memory. */
typedef struct {
  DLTensor t;
  int64_t shape[2];
  float data[64] __attribute__((aligned(64)));
} Rows;

static void rows_init(Rows* x, int64_t rows, int64_t cols) {
  memset(x, 0, sizeof *x);
  x->shape[0] = rows;
  x->shape[1] = cols;
  x->t.data = x->data;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = 2;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
}

static TVMGraphExecutor* bucketed(const char* options) {
  void* f[3] = {factory(4, 2.f, "b"), factory(1, 2.f, "b"), factory(2, 2.f, "b")};
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateBucketed((const TVMModuleHandle*)f, 3, &dev, 1, options, &g));
  /* The executor keeps what it needs: the factories may go. */
  for (int i = 0; i < 3; ++i) CHECK_OK(TVMModFree(f[i]));
  return g;
}

static void test_every_batch(void) {
  TVMGraphExecutor* g = bucketed(NULL);
  uint32_t n = 0;
  CHECK_OK(TVMGraphExecutorGetNumBuckets(g, &n));
  CHECK(n == 3);
  for (uint32_t b = 0; b < n; ++b) {
    const int64_t* shape = NULL;
    int32_t ndim = 0;
    CHECK_OK(TVMGraphExecutorGetBucketInputShape(g, b, 0, &shape, &ndim));
    CHECK(ndim == 2 && shape[0] == (1 << b) && shape[1] == 4);
  }
  /* Before any request: the largest bucket's shapes. The pointer stays valid; its values follow
     the requests. */
  TVMTensorInfo first;
  CHECK_OK(TVMGraphExecutorGetInputInfo(g, 0, &first));
  CHECK(first.ndim == 2 && first.shape[0] == 4);
  const uint32_t want_bucket[5] = {0, 0, 1, 2, 2};
  for (int rows = 1; rows <= 4; ++rows) {
    Rows a, b, y;
    rows_init(&a, rows, 4);
    rows_init(&b, rows, 4);
    rows_init(&y, rows, 4);
    for (int i = 0; i < rows * 4; ++i) {
      a.data[i] = (float)(i + rows);
      b.data[i] = 0.25f * (float)i;
    }
    CHECK_OK(TVMGraphExecutorSetInput(g, "a", &a.t));
    CHECK_OK(TVMGraphExecutorSetInputByIndex(g, 1, &b.t));
    uint32_t bucket = 99;
    CHECK_OK(TVMGraphExecutorGetCurrentBucket(g, &bucket));
    CHECK(bucket == want_bucket[rows]);
    CHECK_OK(TVMGraphExecutorRun(g));
    TVMTensorInfo info;
    CHECK_OK(TVMGraphExecutorGetOutputInfo(g, 0, &info));
    CHECK(info.ndim == 2 && info.shape[0] == rows && info.shape[1] == 4);
    CHECK(info.nbytes == (size_t)rows * 16);
    CHECK_OK(TVMGraphExecutorGetInputInfo(g, 0, &info));
    CHECK(info.shape[0] == rows && !info.is_param);
    CHECK(info.shape == first.shape && first.shape[0] == rows);
    CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &y.t));
    int same = 1;
    for (int i = 0; i < rows * 4; ++i) same &= y.data[i] == (a.data[i] + b.data[i]) * 2.f;
    CHECK(same);
  }
  CHECK_OK(TVMGraphExecutorFree(g));
}

/* A run of 3 rows in the batch-4 bucket computes the pad rows too: (pad + pad) * 2. */
static void test_pad_value(void) {
  TVMGraphExecutor* g = bucketed("pad_value=1.5");
  Rows a, y;
  rows_init(&a, 3, 4);
  rows_init(&y, 3, 4);
  CHECK_OK(TVMGraphExecutorSetInput(g, "a", &a.t));
  CHECK_OK(TVMGraphExecutorSetInput(g, "b", &a.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &y.t));
  int zeros = 1;
  for (int i = 0; i < 12; ++i) zeros &= y.data[i] == 0.f;
  CHECK(zeros);
  CHECK_OK(TVMGraphExecutorFree(g));
}

static void test_requests_out_of_range(void) {
  TVMGraphExecutor* g = bucketed(NULL);
  Rows x;
  rows_init(&x, 5, 4);
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "a", &x.t), "set_input `a` axis 0: extent 5 is beyond the largest bucket's 4");
  rows_init(&x, 2, 3);
  CHECK_FAIL(TVMGraphExecutorSetInput(g, "b", &x.t), "set_input `b` axis 1: extent 3, but this axis is static: 4");
  rows_init(&x, 2, 4);
  Rows y;
  rows_init(&y, 4, 4);
  CHECK_OK(TVMGraphExecutorSetInput(g, "a", &x.t));
  CHECK_OK(TVMGraphExecutorSetInput(g, "b", &x.t));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_FAIL(TVMGraphExecutorGetOutput(g, 0, &y.t), "expected dtype float32 and shape [2, 4] (the last run's)");
  rows_init(&x, 3, 4);
  CHECK_OK(TVMGraphExecutorSetInput(g, "a", &x.t));
  CHECK_FAIL(TVMGraphExecutorRun(g), "follows input `a` axis 0 (3) and input `b` axis 0 (2)");
  CHECK_FAIL(TVMGraphExecutorSetInputZeroCopy(g, 0, &x.t), "not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorRunAsync(g, NULL), "not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorGetBucketInputShape(g, 3, 0, NULL, NULL), "argument `shape` is NULL");
  const int64_t* shape = NULL;
  int32_t ndim = 0;
  CHECK_FAIL(TVMGraphExecutorGetBucketInputShape(g, 3, 0, &shape, &ndim), "bucket 3 out of range");
  CHECK_FAIL(TVMGraphExecutorGetBucketInputShape(g, 0, 7, &shape, &ndim), "input index 7 out of range");
  CHECK_OK(TVMGraphExecutorFree(g));
}

/* Calls only one kind of executor has: the other kind refuses each, naming the call. */
static void test_calls_of_one_kind(void) {
  TVMGraphExecutor* g = bucketed(NULL);
  Rows x;
  rows_init(&x, 2, 4);
  const char* dot = NULL;
  CHECK_FAIL(TVMGraphExecutorSetOutputZeroCopy(g, 0, &x.t),
             "TVMGraphExecutorSetOutputZeroCopy is not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, &x.t, NULL),
             "TVMGraphExecutorSetInputAsync is not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorGetOutputAsync(g, 0, &x.t, NULL),
             "TVMGraphExecutorGetOutputAsync is not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorSynchronize(g),
             "TVMGraphExecutorSynchronize is not supported on a bucketed executor");
  CHECK_FAIL(TVMGraphExecutorScheduleDot(g, &dot),
             "TVMGraphExecutorScheduleDot is not supported on a bucketed executor");
  CHECK_OK(TVMGraphExecutorFree(g));

  void* f = factory(2, 2.f, "b");
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* plain = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(f, &dev, 1, &plain));
  uint32_t n = 7;
  CHECK_FAIL(TVMGraphExecutorGetNumBuckets(plain, &n), "graph executor is not bucketed");
  CHECK_FAIL(TVMGraphExecutorGetCurrentBucket(plain, &n), "graph executor is not bucketed");
  const int64_t* shape = NULL;
  int32_t ndim = 0;
  CHECK_FAIL(TVMGraphExecutorGetBucketInputShape(plain, 0, 0, &shape, &ndim), "graph executor is not bucketed");
  CHECK(n == 7);
  CHECK_OK(TVMGraphExecutorSynchronize(plain));
  CHECK_OK(TVMGraphExecutorFree(plain));
  CHECK_OK(TVMModFree(f));
}

static void expect_refused(void* f0, void* f1, const char* options, const char* message) {
  void* f[2] = {f0, f1};
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = (TVMGraphExecutor*)0x1;
  CHECK_FAIL(TVMGraphExecutorCreateBucketed((const TVMModuleHandle*)f, 2, &dev, 1, options, &g), message);
}

static void test_inconsistent_versions(void) {
  void* one = factory(1, 2.f, "b");
  void* two = factory(2, 2.f, "b");
  void* other_weight = factory(2, 3.f, "b");
  void* renamed = factory(2, 2.f, "c");
  void* one_again = factory(1, 2.f, "b");
  expect_refused(one, other_weight, NULL, "factory 0 and factory 1 differ: weight `w` has other values");
  expect_refused(one, renamed, NULL, "input 1 is `b` in one and `c` in the other");
  expect_refused(one, one_again, NULL, "factory 0 and factory 1 have the same input shapes");
  expect_refused(one, two, "pad_value=x", "option `pad_value`");
  expect_refused(one, two, "padding=1", "unknown option `padding`");
  expect_refused(one, KERNELS, NULL, "is not a GraphExecutorFactory");
  expect_refused(one, NULL, NULL, "factories[1]");
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  CHECK_FAIL(TVMGraphExecutorCreateBucketed(NULL, 2, &dev, 1, NULL, &g), "argument `factories` is NULL");
  CHECK_FAIL(TVMGraphExecutorCreateBucketed(NULL, 0, &dev, 1, NULL, &g), "no versions");
  void* f[1] = {one};
  CHECK_FAIL(TVMGraphExecutorCreateBucketed((const TVMModuleHandle*)f, 1, &dev, 1, NULL, NULL), "argument `out`");
  DLDevice gpu = {kDLCUDA, 0};
  CHECK_FAIL(TVMGraphExecutorCreateBucketed((const TVMModuleHandle*)f, 1, &gpu, 1, NULL, &g), "not supported");
  CHECK_FAIL(TVMGraphExecutorCreateBucketedFromManifest("/nonexistent/model.buckets", &dev, 1, NULL, &g),
             "bucket manifest `/nonexistent/model.buckets`");
  uint32_t n = 0;
  TVMGraphExecutor* plain = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(one, &dev, 1, &plain));
  CHECK_FAIL(TVMGraphExecutorGetNumBuckets(plain, &n), "not bucketed");
  CHECK_OK(TVMGraphExecutorFree(plain));
  void* all[5] = {one, two, other_weight, renamed, one_again};
  for (int i = 0; i < 5; ++i) CHECK_OK(TVMModFree(all[i]));
}

static void test_bucket_extents(void) {
  int64_t out[16];
  uint32_t n = 0;
  CHECK_OK(TVMBucketExtents(1, 100, NULL, out, 16, &n));
  CHECK(n == 8 && out[0] == 1 && out[1] == 2 && out[6] == 64 && out[7] == 100);
  CHECK_OK(TVMBucketExtents(1, 100, "policy=uniform,step=32", out, 16, &n));
  CHECK(n == 4 && out[0] == 32 && out[3] == 100);
  CHECK_OK(TVMBucketExtents(1, 1000, "policy=log,base=10", NULL, 0, &n));
  CHECK(n == 4);
  CHECK_FAIL(TVMBucketExtents(1, 1000, "policy=log,base=10", out, 2, &n), "argument `capacity` is 2");
  CHECK_FAIL(TVMBucketExtents(1, 10, "policy=uniform", out, 16, &n), "option `step` is required");
  CHECK_FAIL(TVMBucketExtents(0, 10, NULL, out, 16, &n), "range 0..=10");
  CHECK_FAIL(TVMBucketExtents(1, 10, NULL, out, 16, NULL), "argument `num_out` is NULL");
}

int main(void) {
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &KERNELS));
  test_every_batch();
  test_pad_value();
  test_requests_out_of_range();
  test_calls_of_one_kind();
  test_inconsistent_versions();
  test_bucket_extents();
  CHECK_OK(TVMModFree(KERNELS));
  return tvm_test_summary("test_buckets");
}
