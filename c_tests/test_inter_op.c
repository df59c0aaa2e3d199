/*
 * Inter-op parallelism from C, on TVM 0.18's seed004 model (two independent adds, then a
 * multiply): TVMGraphExecutorCreateFromFactoryWithOptions / TVMGraphExecutorCreateWithOptions
 * with every option, TVM's recorded output bit for bit, bad options as errors naming the key,
 * and 4 threads each running a parallel executor of one factory (run under ThreadSanitizer by
 * scripts/tsan.sh).
 *
 * Paths come from CMake: TVM_TEST_SEED004_SO, TVM_TEST_SEED004_DATA_DIR, TVM_TEST_KERNELS_SO.
 */
#include <pthread.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_SEED004_SO
#error "TVM_TEST_SEED004_SO must be defined by the build"
#endif

static const char* INPUTS[4] = {"x1", "y1", "x2", "y2"};
static float IN[4][20];
static float WANT[20];
static char* GRAPH_JSON;

static char* read_data(const char* name, size_t* size) {
  return tvm_test_read_file(TVM_TEST_SEED004_DATA_DIR, name, size);
}

static void read_floats(const char* name, float* out, size_t n) {
  size_t size = 0;
  char* bytes = read_data(name, &size);
  REQUIRE(size == n * sizeof(float));
  memcpy(out, bytes, size);
  free(bytes);
}

typedef struct {
  DLTensor t;
  int64_t shape[2];
  float* data;
} Tensor;

static void tensor_init(Tensor* x, const float* values) {
  x->shape[0] = 10;
  x->shape[1] = 2;
  x->data = (float*)aligned_alloc(64, 128);
  REQUIRE(x->data != NULL);
  memset(x->data, 0, 128);
  if (values) memcpy(x->data, values, sizeof(float) * 20);
  x->t.data = x->data;
  x->t.device.device_type = kDLCPU;
  x->t.device.device_id = 0;
  x->t.ndim = 2;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
  x->t.strides = NULL;
  x->t.byte_offset = 0;
}

/* Set the four inputs, run, and compare the output with TVM's bytes; returns 1 when equal. */
static int run_and_compare(TVMGraphExecutor* g) {
  Tensor in[4], out;
  for (int i = 0; i < 4; ++i) {
    tensor_init(&in[i], IN[i]);
    if (TVMGraphExecutorSetInput(g, INPUTS[i], &in[i].t) != 0) return 0;
  }
  tensor_init(&out, NULL);
  int ok = TVMGraphExecutorRun(g) == 0 && TVMGraphExecutorGetOutput(g, 0, &out.t) == 0 &&
           memcmp(out.data, WANT, sizeof WANT) == 0;
  for (int i = 0; i < 4; ++i) free(in[i].data);
  free(out.data);
  return ok;
}

static TVMGraphExecutor* with_options(void* factory, const char* options) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, options, &g));
  return g;
}

static void test_options_give_tvms_output(void* factory, void* kernels) {
  const char* cases[] = {NULL,
                         "",
                         "inter_op_threads=2",
                         "inter_op_threads=2,intra_op_threads=1,memory_plan=parallel",
                         "inter_op_threads=4,memory_plan=tvm"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    TVMGraphExecutor* g = with_options(factory, cases[c]);
    for (int r = 0; r < 10; ++r) CHECK(run_and_compare(g));
    CHECK_OK(TVMGraphExecutorFree(g));
  }
  /* The graph JSON + kernel library route, with params loaded afterwards (seed004 has none). */
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  CHECK_OK(TVMGraphExecutorCreateWithOptions(GRAPH_JSON, kernels, &dev, 1,
                                             "inter_op_threads=2,memory_plan=parallel", &g));
  if (g != NULL) {
    CHECK(run_and_compare(g));
    CHECK_OK(TVMGraphExecutorFree(g));
  }
}

static void test_bad_options(void* factory, void* kernels) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, "inter_op_threads=0", &g),
             "option `inter_op_threads`");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, "intra_op_threads=x", &g),
             "option `intra_op_threads`");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, "memory_plan=best", &g),
             "option `memory_plan`");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, "threads=2", &g),
             "unknown option `threads`");
  CHECK_FAIL(TVMGraphExecutorCreateWithOptions(GRAPH_JSON, kernels, &dev, 1, "inter_op_threads", &g),
             "is not key=value");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, NULL, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 0, NULL, &g), "num_devices");
  CHECK(g == NULL);
}

static void test_schedule_dot(void* factory) {
  TVMGraphExecutor* g = with_options(factory, "inter_op_threads=2");
  const char* dot = NULL;
  CHECK_OK(TVMGraphExecutorScheduleDot(g, &dot));
  CHECK_CONTAINS(dot, "digraph schedule {");
  CHECK_CONTAINS(dot, "op0 -> op2");
  CHECK_CONTAINS(dot, "op1 -> op2");
  CHECK_FAIL(TVMGraphExecutorScheduleDot(g, NULL), "argument `out` is NULL");
  CHECK_OK(TVMGraphExecutorFree(g));
}

/* ---- threads --------------------------------------------------------------------------------- */

static void* factory_for_threads;

static void* thread_body(void* arg) {
  (void)arg;
  TVMGraphExecutor* g = with_options(factory_for_threads, "inter_op_threads=2,intra_op_threads=1");
  for (int r = 0; r < 200; ++r) {
    if (!run_and_compare(g)) {
      CHECK(0 && "a parallel run differed from TVM's output");
      break;
    }
  }
  CHECK_OK(TVMGraphExecutorFree(g));
  return NULL;
}

static void test_threads(void* factory) {
  factory_for_threads = factory;
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) REQUIRE(pthread_create(&threads[i], NULL, thread_body, NULL) == 0);
  for (int i = 0; i < 4; ++i) REQUIRE(pthread_join(threads[i], NULL) == 0);
}

int main(void) {
  for (int i = 0; i < 4; ++i) {
    char name[64];
    snprintf(name, sizeof name, "input_%s.bin", INPUTS[i]);
    read_floats(name, IN[i], 20);
  }
  read_floats("output_0.bin", WANT, 20);
  GRAPH_JSON = read_data("graph.json", NULL);
  void* factory = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_SEED004_SO, "", &factory));
  void* kernels = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &kernels));

  test_options_give_tvms_output(factory, kernels);
  test_bad_options(factory, kernels);
  test_schedule_dot(factory);
  test_threads(factory);

  CHECK_OK(TVMModFree(factory));
  CHECK_OK(TVMModFree(kernels));
  free(GRAPH_JSON);
  return tvm_test_summary("test_inter_op");
}
