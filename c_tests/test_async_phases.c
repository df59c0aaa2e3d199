/*
 * The graph executor's asynchronous phases from C: TVMGraphExecutorSetInputAsync (h2d),
 * TVMGraphExecutorRunAsync (compute) and TVMGraphExecutorGetOutputAsync (d2h) on streams made
 * by TVMStreamCreate, TVMGraphExecutorSynchronize, and events of the user's own
 * (TVMEventRecord / TVMStreamWaitEvent / TVMEventSynchronize).
 *
 * Models: TVM 0.18's mlp (mlp_model: kernels + TVM's blob), and graphs written here over the
 * kernels of tests/fixtures/kernels.c (test_kernels): a chain of 64 adds on 64K floats (a slow
 * run, for hazards and for freeing with stages in flight) and a node whose kernel always fails.
 * Requests go through three streams with double-buffered host tensors and no events ordering
 * the stages; every output is compared bit for bit with the synchronous executor's. Also two
 * threads with executors and streams of their own (run under ThreadSanitizer by scripts/tsan.sh),
 * and misuse: bad streams, NULL tensors and executors, bad indices, wrong shapes.
 *
 * Paths come from CMake: TVM_TEST_MLP_SO, TVM_TEST_KERNELS_SO, TVM_TEST_MLP_DATA_DIR.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_MLP_SO
#error "TVM_TEST_MLP_SO must be defined by the build"
#endif

static float X[16];   /* mlp input_x.bin (2x8) */
static float WANT[8]; /* mlp output_0.bin (2x4) */

/* ---- tensors and streams --------------------------------------------------------------------- */

/* A host float32 tensor over 64-byte aligned memory. Not movable once initialised. */
typedef struct {
  DLTensor t;
  int64_t shape[2];
  float* data;
  size_t n;
} Tensor;

static void tensor_init(Tensor* x, int64_t rows, int64_t cols, const float* values) {
  x->shape[0] = rows;
  x->shape[1] = cols;
  x->n = (size_t)(rows * cols);
  size_t bytes = (x->n * sizeof(float) + 63) / 64 * 64;
  x->data = (float*)aligned_alloc(64, bytes);
  REQUIRE(x->data != NULL);
  memset(x->data, 0, bytes);
  if (values) memcpy(x->data, values, x->n * sizeof(float));
  memset(&x->t, 0, sizeof x->t);
  x->t.data = x->data;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = 2;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
}

static void tensor_free(Tensor* x) {
  free(x->data);
  x->data = NULL;
}

static void* stream_new(void) {
  void* s = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s));
  return s;
}

static void* event_new(void) {
  void* e = NULL;
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &e));
  return e;
}

static TVMGraphExecutor* from_factory(void* factory) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(factory, &dev, 1, &g));
  return g;
}

static TVMGraphExecutor* from_json(const char* json, void* kernels) {
  DLDevice dev = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreate(json, kernels, &dev, 1, &g));
  return g;
}

/* ---- the mlp model --------------------------------------------------------------------------- */

/* Input of request r: the recorded input, scaled per request. */
static void mlp_input(int r, float* x) {
  for (int i = 0; i < 16; ++i) x[i] = X[i] * (1.0f + 0.03125f * (float)r);
}

/* What the synchronous executor computes for requests 0..n-1 (n x 8 floats). */
static float* mlp_references(void* factory, int n) {
  TVMGraphExecutor* g = from_factory(factory);
  float* want = (float*)malloc(sizeof(float) * 8 * (size_t)n);
  REQUIRE(want != NULL);
  Tensor x, out;
  tensor_init(&x, 2, 8, NULL);
  tensor_init(&out, 2, 4, NULL);
  for (int r = 0; r < n; ++r) {
    mlp_input(r, x.data);
    REQUIRE_OK(TVMGraphExecutorSetInput(g, "x", &x.t));
    REQUIRE_OK(TVMGraphExecutorRun(g));
    REQUIRE_OK(TVMGraphExecutorGetOutput(g, 0, &out.t));
    memcpy(want + 8 * r, out.data, sizeof(float) * 8);
  }
  tensor_free(&x);
  tensor_free(&out);
  CHECK_OK(TVMGraphExecutorFree(g));
  return want;
}

/* n requests through h2d / compute / d2h on `s` (three streams, or one thrice), two host input
 * and output tensors used in turn, the host waiting for a tensor's last copy with an event
 * before reusing it. Returns the number of outputs that differ from `want`. */
static int mlp_pipeline(void* factory, void* const s[3], int n, const float* want) {
  TVMGraphExecutor* g = from_factory(factory);
  Tensor in[2], out[2];
  void* done[2];
  for (int k = 0; k < 2; ++k) {
    tensor_init(&in[k], 2, 8, NULL);
    tensor_init(&out[k], 2, 4, NULL);
    done[k] = event_new();
  }
  int bad = 0;
  for (int r = 0; r < n + 2; ++r) {
    int k = r % 2;
    if (r >= 2) {
      CHECK_OK(TVMEventSynchronize(kDLCPU, 0, done[k]));
      if (memcmp(out[k].data, want + 8 * (r - 2), sizeof(float) * 8) != 0) ++bad;
    }
    if (r < n) {
      mlp_input(r, in[k].data);
      CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &in[k].t, s[0]));
      CHECK_OK(TVMGraphExecutorRunAsync(g, s[1]));
      CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out[k].t, s[2]));
      CHECK_OK(TVMEventRecord(kDLCPU, 0, done[k], s[2]));
    }
  }
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  CHECK_OK(TVMGraphExecutorFree(g));
  for (int k = 0; k < 2; ++k) {
    tensor_free(&in[k]);
    tensor_free(&out[k]);
    CHECK_OK(TVMEventFree(kDLCPU, 0, done[k]));
  }
  return bad;
}

static void test_tvms_output(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  void *h2d = stream_new(), *compute = stream_new(), *d2h = stream_new();
  Tensor x, out;
  tensor_init(&x, 2, 8, X);
  tensor_init(&out, 2, 4, NULL);
  CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &x.t, h2d));
  CHECK_OK(TVMGraphExecutorRunAsync(g, compute));
  CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out.t, d2h));
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  int close = 1;
  for (int i = 0; i < 8; ++i) close &= fabsf(out.data[i] - WANT[i]) <= 1e-5f * (1.0f + fabsf(WANT[i]));
  CHECK(close);
  CHECK_OK(TVMGraphExecutorFree(g));
  tensor_free(&x);
  tensor_free(&out);
  CHECK_OK(TVMStreamFree(kDLCPU, 0, h2d));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, compute));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, d2h));
}

static void test_pipelines(void* factory) {
  enum { N = 200 };
  float* want = mlp_references(factory, N);
  void* three[3] = {stream_new(), stream_new(), stream_new()};
  CHECK(mlp_pipeline(factory, three, N, want) == 0);
  void* one[3] = {three[0], three[0], three[0]};
  CHECK(mlp_pipeline(factory, one, N, want) == 0);
  for (int k = 0; k < 3; ++k) CHECK_OK(TVMStreamFree(kDLCPU, 0, three[k]));
  free(want);
}

/* The user's own ordering: each input is produced on a `prep` stream (a copy from a staging
 * tensor) that the executor knows nothing of; the h2d stream waits for it with an event. */
static void test_user_events(void* factory) {
  enum { N = 50 };
  float* want = mlp_references(factory, N);
  TVMGraphExecutor* g = from_factory(factory);
  void *prep = stream_new(), *h2d = stream_new(), *compute = stream_new(), *d2h = stream_new();
  void *ready = event_new(), *done[2] = {event_new(), event_new()};
  Tensor staging[2], in[2], out[2];
  for (int k = 0; k < 2; ++k) {
    tensor_init(&staging[k], 2, 8, NULL);
    tensor_init(&in[k], 2, 8, NULL);
    tensor_init(&out[k], 2, 4, NULL);
  }
  int bad = 0;
  for (int r = 0; r < N + 2; ++r) {
    int k = r % 2;
    if (r >= 2) {
      CHECK_OK(TVMEventSynchronize(kDLCPU, 0, done[k]));
      if (memcmp(out[k].data, want + 8 * (r - 2), sizeof(float) * 8) != 0) ++bad;
    }
    if (r < N) {
      mlp_input(r, staging[k].data);
      CHECK_OK(TVMDeviceCopyDataFromTo(&staging[k].t, &in[k].t, prep));
      CHECK_OK(TVMEventRecord(kDLCPU, 0, ready, prep));
      CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, h2d, ready));
      CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &in[k].t, h2d));
      CHECK_OK(TVMGraphExecutorRunAsync(g, compute));
      CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out[k].t, d2h));
      CHECK_OK(TVMEventRecord(kDLCPU, 0, done[k], d2h));
    }
  }
  CHECK(bad == 0);
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  CHECK_OK(TVMGraphExecutorFree(g));
  for (int k = 0; k < 2; ++k) {
    tensor_free(&staging[k]);
    tensor_free(&in[k]);
    tensor_free(&out[k]);
    CHECK_OK(TVMEventFree(kDLCPU, 0, done[k]));
  }
  CHECK_OK(TVMEventFree(kDLCPU, 0, ready));
  void* streams[4] = {prep, h2d, compute, d2h};
  for (int k = 0; k < 4; ++k) CHECK_OK(TVMStreamFree(kDLCPU, 0, streams[k]));
  free(want);
}

/* ---- a slow run: a chain of adds ------------------------------------------------------------- */

enum { CHAIN_OPS = 64, CHAIN_LEN = 65536 };

/* Text growing in a fixed buffer (the chain's JSON is well under its size). */
typedef struct {
  char text[64 * 1024];
  size_t len;
} Text;

static void append(Text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(Text* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->text + t->len, sizeof t->text - t->len, fmt, ap);
  va_end(ap);
  REQUIRE(n >= 0 && (size_t)n < sizeof t->text - t->len);
  t->len += (size_t)n;
}

/* x, then add_k = add_{k-1} + x for k = 1..CHAIN_OPS (ping-pong storage): the output is
 * (CHAIN_OPS + 1) * x, exactly for small integers. */
static char* chain_json(void) {
  Text* t = (Text*)calloc(1, sizeof(Text));
  REQUIRE(t != NULL);
  append(t, "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []}");
  for (int k = 1; k <= CHAIN_OPS; ++k)
    append(t,
           ", {\"op\": \"tvm_op\", \"name\": \"add_%d\", \"inputs\": [[%d, 0, 0], [0, 0, 0]], \"attrs\": "
           "{\"num_outputs\": \"1\", \"num_inputs\": \"2\", \"flatten_data\": \"0\", "
           "\"func_name\": \"tvmgen_default_fused_add\"}}",
           k, k - 1);
  append(t, "], \"arg_nodes\": [0], \"heads\": [[%d, 0, 0]], \"attrs\": {\"dltype\": [\"list_str\", [", CHAIN_OPS);
  for (int k = 0; k <= CHAIN_OPS; ++k) append(t, "%s\"float32\"", k ? ", " : "");
  append(t, "]], \"storage_id\": [\"list_int\", [0");
  for (int k = 1; k <= CHAIN_OPS; ++k) append(t, ", %d", 1 + k % 2);
  append(t, "]], \"shape\": [\"list_shape\", [");
  for (int k = 0; k <= CHAIN_OPS; ++k) append(t, "%s[1, %d]", k ? ", " : "", CHAIN_LEN);
  append(t, "]]}, \"node_row_ptr\": [0");
  for (int k = 1; k <= CHAIN_OPS + 1; ++k) append(t, ", %d", k);
  append(t, "]}");
  return (char*)t; /* the text is the struct's first member */
}

static void chain_input(Tensor* x, int value) {
  for (size_t i = 0; i < x->n; ++i) x->data[i] = (float)(value + (int)(i % 7));
}

/* Whether `out` is the chain's output for chain_input(value). */
static int chain_output_is(const Tensor* out, int value) {
  for (size_t i = 0; i < out->n; ++i)
    if (out->data[i] != (float)((CHAIN_OPS + 1) * (value + (int)(i % 7)))) return 0;
  return 1;
}

/* The next request's input is queued on the h2d stream while the current run is pending: the
 * copy must wait for that run (it reads the input), on the device side. */
static void test_next_input_while_a_slow_run_is_pending(void* kernels, const char* json) {
  TVMGraphExecutor* g = from_json(json, kernels);
  void *h2d = stream_new(), *compute = stream_new(), *d2h = stream_new();
  Tensor in[2], out[2];
  for (int k = 0; k < 2; ++k) {
    tensor_init(&in[k], 1, CHAIN_LEN, NULL);
    tensor_init(&out[k], 1, CHAIN_LEN, NULL);
  }
  for (int round = 0; round < 8; ++round) {
    for (int k = 0; k < 2; ++k) {
      chain_input(&in[k], round * 2 + k);
      CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &in[k].t, h2d));
      CHECK_OK(TVMGraphExecutorRunAsync(g, compute));
      CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out[k].t, d2h));
    }
    CHECK_OK(TVMGraphExecutorSynchronize(g));
    for (int k = 0; k < 2; ++k) CHECK(chain_output_is(&out[k], round * 2 + k));
  }
  CHECK_OK(TVMGraphExecutorFree(g));
  for (int k = 0; k < 2; ++k) {
    tensor_free(&in[k]);
    tensor_free(&out[k]);
  }
  CHECK_OK(TVMStreamFree(kDLCPU, 0, h2d));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, compute));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, d2h));
}

/* Free with a slow run and the copies around it still queued: free waits for them, so the output
 * is there (and the host tensors may go) once it returns. */
static void test_free_with_stages_in_flight(void* kernels, const char* json) {
  TVMGraphExecutor* g = from_json(json, kernels);
  void *h2d = stream_new(), *compute = stream_new(), *d2h = stream_new();
  Tensor in, out;
  tensor_init(&in, 1, CHAIN_LEN, NULL);
  tensor_init(&out, 1, CHAIN_LEN, NULL);
  chain_input(&in, 3);
  CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &in.t, h2d));
  CHECK_OK(TVMGraphExecutorRunAsync(g, compute));
  CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out.t, d2h));
  CHECK_OK(TVMGraphExecutorFree(g));
  CHECK(chain_output_is(&out, 3));
  tensor_free(&in);
  tensor_free(&out);
  CHECK_OK(TVMStreamFree(kDLCPU, 0, h2d));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, compute));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, d2h));
}

/* ---- a failing kernel ------------------------------------------------------------------------ */

static const char* FAILING_JSON =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
    " {\"op\": \"tvm_op\", \"name\": \"failing_node\", \"inputs\": [[0, 0, 0]], \"attrs\": {\"num_outputs\": \"1\","
    " \"num_inputs\": \"1\", \"flatten_data\": \"0\", \"func_name\": \"test_failing_parallel\"}}],"
    " \"arg_nodes\": [0], \"heads\": [[1, 0, 0]], \"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
    " \"storage_id\": [\"list_int\", [0, 1]], \"shape\": [\"list_shape\", [[2, 8], [2, 8]]]},"
    " \"node_row_ptr\": [0, 1, 2]}";

static void test_failing_run(void* kernels) {
  TVMGraphExecutor* g = from_json(FAILING_JSON, kernels);
  void* s = stream_new();
  Tensor x, out;
  tensor_init(&x, 2, 8, X);
  tensor_init(&out, 2, 8, NULL);
  /* Queued: reported by Synchronize, naming the node, then cleared. */
  CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &x.t, s));
  CHECK_OK(TVMGraphExecutorRunAsync(g, s));
  CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out.t, s));
  CHECK_FAIL(TVMGraphExecutorSynchronize(g), "node `failing_node`");
  CHECK_CONTAINS(TVMGetLastError(), "task failed on purpose");
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  /* Or by the next synchronous call, once. */
  CHECK_OK(TVMGraphExecutorRunAsync(g, s));
  int32_t n = -1;
  CHECK_FAIL(TVMGraphExecutorGetNumInputs(g, &n), "node `failing_node`");
  CHECK_OK(TVMGraphExecutorGetNumInputs(g, &n));
  CHECK(n == 1);
  /* On the NULL stream the run is now, and its call returns the error. */
  CHECK_FAIL(TVMGraphExecutorRunAsync(g, NULL), "node `failing_node`");
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  /* The copies still work. */
  CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &x.t, s));
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  /* Free drops a queued failure. */
  CHECK_OK(TVMGraphExecutorRunAsync(g, s));
  CHECK_OK(TVMGraphExecutorFree(g));
  tensor_free(&x);
  tensor_free(&out);
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
}

/* ---- misuse ---------------------------------------------------------------------------------- */

static void test_misuse(void* factory) {
  TVMGraphExecutor* g = from_factory(factory);
  void* s = stream_new();
  Tensor x, out, wrong;
  tensor_init(&x, 2, 8, X);
  tensor_init(&out, 2, 4, NULL);
  tensor_init(&wrong, 2, 7, NULL);
  void* bogus = (void*)(uintptr_t)0x1234;
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, &x.t, bogus), "is not a live cpu stream");
  CHECK_FAIL(TVMGraphExecutorRunAsync(g, bogus), "is not a live cpu stream");
  CHECK_FAIL(TVMGraphExecutorGetOutputAsync(g, 0, &out.t, bogus), "is not a live cpu stream");
  void* freed = stream_new();
  CHECK_OK(TVMStreamFree(kDLCPU, 0, freed));
  CHECK_FAIL(TVMGraphExecutorRunAsync(g, freed), "is not a live cpu stream");

  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, NULL, s), "argument `data` is NULL");
  CHECK_FAIL(TVMGraphExecutorGetOutputAsync(g, 0, NULL, s), "argument `out` is NULL");
  CHECK_FAIL(TVMGraphExecutorRunAsync(NULL, s), "argument `g` (graph executor) is NULL");
  CHECK_FAIL(TVMGraphExecutorSynchronize(NULL), "argument `g` (graph executor) is NULL");

  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 4, &x.t, s), "input index 4 out of range");
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, -2, &x.t, s), "input index -2 is negative");
  CHECK_FAIL(TVMGraphExecutorGetOutputAsync(g, 1, &out.t, s), "output index 1 out of range");
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, &wrong.t, s), "expected shape [2, 8], got [2, 7]");
  CHECK_FAIL(TVMGraphExecutorGetOutputAsync(g, 0, &wrong.t, s), "get_output_async");
  x.t.dtype.bits = 64;
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, &x.t, s), "expected dtype float32, got float64");
  x.t.dtype.bits = 32;
  x.t.data = NULL;
  CHECK_FAIL(TVMGraphExecutorSetInputAsync(g, 0, &x.t, s), "data pointer is NULL");
  x.t.data = x.data;

  /* Nothing was queued by the failed calls; a request still gives TVM's numbers. */
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  CHECK_OK(TVMGraphExecutorSetInputAsync(g, 0, &x.t, s));
  CHECK_OK(TVMGraphExecutorRunAsync(g, s));
  CHECK_OK(TVMGraphExecutorGetOutputAsync(g, 0, &out.t, s));
  CHECK_OK(TVMGraphExecutorSynchronize(g));
  CHECK(fabsf(out.data[0] - WANT[0]) <= 1e-5f * (1.0f + fabsf(WANT[0])));

  CHECK_OK(TVMGraphExecutorFree(g));
  CHECK_FAIL(TVMGraphExecutorRunAsync(g, s), "is not live");
  CHECK_FAIL(TVMGraphExecutorSynchronize(g), "is not live");
  tensor_free(&x);
  tensor_free(&out);
  tensor_free(&wrong);
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
}

/* ---- threads --------------------------------------------------------------------------------- */

typedef struct {
  void* factory;
  const float* want;
  int bad;
} ThreadArgs;

static void* thread_body(void* arg) {
  ThreadArgs* a = (ThreadArgs*)arg;
  void* s[3] = {stream_new(), stream_new(), stream_new()};
  a->bad = mlp_pipeline(a->factory, s, 60, a->want);
  for (int k = 0; k < 3; ++k) CHECK_OK(TVMStreamFree(kDLCPU, 0, s[k]));
  return NULL;
}

static void test_threads(void* factory) {
  float* want = mlp_references(factory, 60);
  pthread_t threads[2];
  ThreadArgs args[2];
  for (int i = 0; i < 2; ++i) {
    args[i] = (ThreadArgs){factory, want, -1};
    REQUIRE(pthread_create(&threads[i], NULL, thread_body, &args[i]) == 0);
  }
  for (int i = 0; i < 2; ++i) {
    REQUIRE(pthread_join(threads[i], NULL) == 0);
    CHECK(args[i].bad == 0);
  }
  free(want);
}

int main(void) {
  size_t n = 0;
  char* x = tvm_test_read_file(TVM_TEST_MLP_DATA_DIR, "input_x.bin", &n);
  REQUIRE(n == sizeof X);
  memcpy(X, x, sizeof X);
  free(x);
  char* w = tvm_test_read_file(TVM_TEST_MLP_DATA_DIR, "output_0.bin", &n);
  REQUIRE(n == sizeof WANT);
  memcpy(WANT, w, sizeof WANT);
  free(w);
  void *factory = NULL, *kernels = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_MLP_SO, "", &factory));
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &kernels));
  char* chain = chain_json();

  test_tvms_output(factory);
  test_pipelines(factory);
  test_user_events(factory);
  test_next_input_while_a_slow_run_is_pending(kernels, chain);
  test_free_with_stages_in_flight(kernels, chain);
  test_failing_run(kernels);
  test_misuse(factory);
  test_threads(factory);

  free(chain);
  CHECK_OK(TVMModFree(factory));
  CHECK_OK(TVMModFree(kernels));
  return tvm_test_summary("test_async_phases");
}
