/*
 * The request pipeline from C (TVMPipelineCreate / Submit / SubmitWithCallback / Wait /
 * GetTrace / Free) on TVM 0.18's seed004 model (four [10,2] float32 inputs x1, y1, x2, y2; two
 * independent adds, then a multiply):
 *
 *   - TVM's recorded output through the pipeline, bit for bit (default options and explicit);
 *   - 4 pthreads each submitting 250 requests with different inputs to ONE pipeline, several
 *     outstanding at a time, each output equal bit for bit to a synchronous executor's;
 *   - callbacks: each called exactly once, with status 0 and its outputs written;
 *   - a request reporting through its callback cannot be waited for;
 *   - every misuse an error naming the problem (options, handles, tensors, ids, trace, frees);
 *   - freeing with requests in flight: every callback called exactly once before the free
 *     returns, finished (right outputs) or cancelled; a run where cancellation is certain;
 *   - trace=1: the Chrome trace has a lane per stream of each group and every stage.
 *
 * Run under ThreadSanitizer by scripts/tsan.sh (both modes). Data handed to callbacks is
 * published with a pthread mutex the callback takes first, so even with an uninstrumented library
 * (tsan.sh c-only mode) the hand-over is visible to TSan.
 *
 * Paths come from CMake: TVM_TEST_SEED004_SO, TVM_TEST_SEED004_DATA_DIR, TVM_TEST_KERNELS_SO.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#ifndef TVM_TEST_SEED004_SO
#error "TVM_TEST_SEED004_SO must be defined by the build"
#endif

#define NUM_INPUTS 4
#define NUM_ELEMS 20
#define NBYTES (NUM_ELEMS * sizeof(float))
#define ALLOC_BYTES 128 /* NBYTES rounded up to the 64-byte alignment */

#define THREADS 4
#define PER_THREAD 250
#define OUTSTANDING 6
#define VARIANTS (THREADS * PER_THREAD)

static const char* INPUT_NAMES[NUM_INPUTS] = {"x1", "y1", "x2", "y2"};
static float IN[NUM_INPUTS][NUM_ELEMS];
static float WANT[NUM_ELEMS];
/* REF[v]: the synchronous executor's output for input variant v (REF[0] is TVM's WANT). */
static float REF[VARIANTS][NUM_ELEMS];

static void read_floats(const char* name, float* out, size_t n) {
  size_t size = 0;
  char* bytes = tvm_test_read_file(TVM_TEST_SEED004_DATA_DIR, name, &size);
  REQUIRE(size == n * sizeof(float));
  memcpy(out, bytes, size);
  free(bytes);
}

/* Input `i` of variant `v`: TVM's recorded input for v = 0, else a scaled and shifted copy. */
static float input_value(int v, int i, int j) {
  if (v == 0) return IN[i][j];
  return IN[i][j] * (1.0f + (float)v / 128.0f) - (float)(v % 7) * 0.375f + (float)i * 0.125f;
}

/* ---- tensors --------------------------------------------------------------------------------- */

static const int64_t SHAPE[2] = {10, 2};

static float* alloc_floats(void) {
  float* p = (float*)aligned_alloc(64, ALLOC_BYTES);
  REQUIRE(p != NULL);
  memset(p, 0, ALLOC_BYTES);
  return p;
}

static DLTensor describe(float* data) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = (int64_t*)SHAPE;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

/* One request's tensors: the DLTensor arrays passed to submit, and their data. */
typedef struct {
  DLTensor in[NUM_INPUTS];
  DLTensor out;
  float* in_data[NUM_INPUTS];
  float* out_data;
} Req;

static void req_init(Req* r) {
  for (int i = 0; i < NUM_INPUTS; ++i) {
    r->in_data[i] = alloc_floats();
    r->in[i] = describe(r->in_data[i]);
  }
  r->out_data = alloc_floats();
  r->out = describe(r->out_data);
}

/* Inputs of variant `v`; the output filled with NaNs, so an unwritten output never matches. */
static void req_fill(Req* r, int v) {
  for (int i = 0; i < NUM_INPUTS; ++i)
    for (int j = 0; j < NUM_ELEMS; ++j) r->in_data[i][j] = input_value(v, i, j);
  memset(r->out_data, 0xff, NBYTES);
}

static void req_free(Req* r) {
  for (int i = 0; i < NUM_INPUTS; ++i) free(r->in_data[i]);
  free(r->out_data);
}

static int output_is(const Req* r, const float* want) {
  return memcmp(r->out_data, want, NBYTES) == 0;
}

static int submit(TVMPipeline* p, Req* r, uint64_t* id) {
  return TVMPipelineSubmit(p, r->in, NUM_INPUTS, &r->out, 1, id);
}

/* ---- helpers --------------------------------------------------------------------------------- */

static const DLDevice CPU = {kDLCPU, 0};

static TVMPipeline* create(void* factory, const char* options) {
  TVMPipeline* p = NULL;
  REQUIRE_OK(TVMPipelineCreate(factory, &CPU, 1, options, &p));
  REQUIRE(p != NULL);
  return p;
}

/* A deadline `seconds` from now, for pthread_cond_timedwait. */
static struct timespec deadline_in(int seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += seconds;
  return ts;
}

/* The synchronous executor's output for every variant, computed before any pipeline exists. */
static void compute_references(void* factory) {
  TVMGraphExecutor* g = NULL;
  REQUIRE_OK(TVMGraphExecutorCreateFromFactory(factory, &CPU, 1, &g));
  Req r;
  req_init(&r);
  for (int v = 0; v < VARIANTS; ++v) {
    req_fill(&r, v);
    for (int i = 0; i < NUM_INPUTS; ++i)
      REQUIRE_OK(TVMGraphExecutorSetInput(g, INPUT_NAMES[i], &r.in[i]));
    REQUIRE_OK(TVMGraphExecutorRun(g));
    REQUIRE_OK(TVMGraphExecutorGetOutput(g, 0, &r.out));
    memcpy(REF[v], r.out_data, NBYTES);
  }
  req_free(&r);
  CHECK_OK(TVMGraphExecutorFree(g));
  /* The references are TVM's output for its own inputs, and the variants really differ. */
  REQUIRE(memcmp(REF[0], WANT, NBYTES) == 0);
  CHECK(memcmp(REF[1], REF[0], NBYTES) != 0);
  CHECK(memcmp(REF[VARIANTS - 1], REF[VARIANTS - 2], NBYTES) != 0);
}

/* ---- TVM's output ---------------------------------------------------------------------------- */

static void test_tvms_output(void* factory) {
  const char* cases[] = {NULL, "", "core_groups=1,threads_per_group=1,in_flight=1",
                         "core_groups=2,threads_per_group=1,in_flight=4",
                         "core_groups=2,threads_per_group=2,in_flight=3"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    TVMPipeline* p = create(factory, cases[c]);
    Req r[3];
    uint64_t id[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      req_init(&r[k]);
      req_fill(&r[k], 0);
      CHECK_OK(submit(p, &r[k], &id[k]));
    }
    CHECK(id[0] != 0 && id[0] != id[1] && id[1] != id[2] && id[0] != id[2]);
    for (int k = 0; k < 3; ++k) {
      CHECK_OK(TVMPipelineWait(p, id[k]));
      if (!CHECK(output_is(&r[k], WANT)))
        fprintf(stderr, "    options \"%s\", request %d\n", cases[c] ? cases[c] : "(NULL)", k);
      req_free(&r[k]);
    }
    CHECK_OK(TVMPipelineFree(p));
  }
}

/* ---- 4 threads, one pipeline ----------------------------------------------------------------- */

typedef struct {
  TVMPipeline* p;
  int thread;
  uint64_t ids[PER_THREAD];
} Submitter;

static void* submitter_body(void* arg) {
  Submitter* s = (Submitter*)arg;
  Req slot[OUTSTANDING];
  int variant[OUTSTANDING];
  uint64_t id[OUTSTANDING];
  int wrong = 0;
  for (int k = 0; k < OUTSTANDING; ++k) req_init(&slot[k]);
  /* Request k uses slot k % OUTSTANDING: before reusing a slot, wait for its previous request,
   * so OUTSTANDING requests of this thread are in the pipeline at a time. */
  for (int k = 0; k < PER_THREAD + OUTSTANDING; ++k) {
    int n = k % OUTSTANDING;
    if (k >= OUTSTANDING) {
      if (!CHECK_OK(TVMPipelineWait(s->p, id[n]))) ++wrong;
      else if (!output_is(&slot[n], REF[variant[n]])) ++wrong;
    }
    if (k < PER_THREAD) {
      variant[n] = s->thread * PER_THREAD + k;
      req_fill(&slot[n], variant[n]);
      id[n] = 0;
      /* A failed submit leaves nothing to wait for: stop the test. */
      if (!CHECK_OK(submit(s->p, &slot[n], &id[n]))) tvm_test_abort(__FILE__, __LINE__);
      s->ids[k] = id[n];
    }
  }
  if (!CHECK(wrong == 0))
    fprintf(stderr, "    thread %d: %d of %d requests wrong\n", s->thread, wrong, PER_THREAD);
  for (int k = 0; k < OUTSTANDING; ++k) req_free(&slot[k]);
  return NULL;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return (x > y) - (x < y);
}

static void test_threads(void* factory) {
  TVMPipeline* p = create(factory, "core_groups=2,threads_per_group=1,in_flight=4");
  static Submitter subs[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) {
    subs[t].p = p;
    subs[t].thread = t;
    REQUIRE(pthread_create(&threads[t], NULL, submitter_body, &subs[t]) == 0);
  }
  for (int t = 0; t < THREADS; ++t) REQUIRE(pthread_join(threads[t], NULL) == 0);
  /* Every request got its own id, increasing within each thread. */
  static uint64_t all[VARIANTS];
  int increasing = 1;
  for (int t = 0; t < THREADS; ++t) {
    for (int k = 0; k < PER_THREAD; ++k) {
      all[t * PER_THREAD + k] = subs[t].ids[k];
      if (k > 0 && subs[t].ids[k] <= subs[t].ids[k - 1]) increasing = 0;
    }
  }
  CHECK(increasing);
  qsort(all, VARIANTS, sizeof all[0], cmp_u64);
  int distinct = all[0] != 0;
  for (int k = 1; k < VARIANTS; ++k) distinct &= all[k] != all[k - 1];
  CHECK(distinct);
  /* Every request was waited for: no id is left to wait for. */
  CHECK_FAIL(TVMPipelineWait(p, all[VARIANTS / 2]), "is unknown");
  CHECK_OK(TVMPipelineFree(p));
}

/* ---- callbacks ------------------------------------------------------------------------------- */

/* One mutex for every callback test: the callbacks lock it before touching anything, and the
 * slots are published to them under it (slots_new), so TSan sees each hand-over even when the
 * library's own synchronisation is invisible to it. */
static pthread_mutex_t MU = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t CV = PTHREAD_COND_INITIALIZER;

/* What the callbacks of one test report, under MU. */
typedef struct {
  int calls;     /* callbacks so far */
  int cancelled; /* of which with status -1 */
  int gate_open; /* for gated_callback */
  int gate_timed_out;
} Board;

typedef struct {
  Board* board;
  Req req;
  int variant;
  uint64_t id;         /* from submit (main thread) */
  atomic_int calls;    /* callbacks for this request */
  uint64_t cb_request; /* the callback's arguments, under MU */
  int cb_status;
  char cb_error[512];
  int cb_output_ok;
} Slot;

static void board_init(Board* b) {
  pthread_mutex_lock(&MU);
  b->calls = b->cancelled = b->gate_open = b->gate_timed_out = 0;
  pthread_mutex_unlock(&MU);
}

static Slot* slots_new(Board* b, int n, int first_variant) {
  Slot* s = (Slot*)calloc((size_t)n, sizeof(Slot));
  REQUIRE(s != NULL);
  pthread_mutex_lock(&MU);
  for (int k = 0; k < n; ++k) {
    s[k].board = b;
    s[k].variant = (first_variant + k) % VARIANTS;
    req_init(&s[k].req);
    req_fill(&s[k].req, s[k].variant);
    atomic_init(&s[k].calls, 0);
  }
  /* Unlocking publishes the slots to the callbacks, which lock MU before reading them. */
  pthread_mutex_unlock(&MU);
  return s;
}

static void slots_free(Slot* s, int n) {
  for (int k = 0; k < n; ++k) req_free(&s[k].req);
  free(s);
}

static void on_done(uint64_t request, int status, const char* error, void* user_data) {
  Slot* s = (Slot*)user_data;
  pthread_mutex_lock(&MU); /* first: the slot was published under MU */
  Board* b = s->board;
  atomic_fetch_add(&s->calls, 1);
  s->cb_request = request;
  s->cb_status = status;
  snprintf(s->cb_error, sizeof s->cb_error, "%s", error ? error : "(NULL)");
  /* The outputs are written when the callback runs. */
  s->cb_output_ok = status == 0 && output_is(&s->req, REF[s->variant]);
  b->calls++;
  if (status != 0) b->cancelled++;
  pthread_cond_broadcast(&CV);
  pthread_mutex_unlock(&MU);
}

/* on_done, then block (on the pipeline's thread) until the board's gate opens, at most 60 s. */
static void gated_callback(uint64_t request, int status, const char* error, void* user_data) {
  on_done(request, status, error, user_data);
  Board* b = ((Slot*)user_data)->board;
  struct timespec until = deadline_in(60);
  pthread_mutex_lock(&MU);
  while (!b->gate_open) {
    if (pthread_cond_timedwait(&CV, &MU, &until) == ETIMEDOUT) {
      b->gate_timed_out = 1;
      break;
    }
  }
  pthread_mutex_unlock(&MU);
}

static void open_gate(Board* b) {
  pthread_mutex_lock(&MU);
  b->gate_open = 1;
  pthread_cond_broadcast(&CV);
  pthread_mutex_unlock(&MU);
}

/* Wait (at most 120 s) until the board has seen `n` callbacks; returns whether it did. */
static int await_calls(Board* b, int n) {
  struct timespec until = deadline_in(120);
  pthread_mutex_lock(&MU);
  int timed_out = 0;
  while (b->calls < n && !timed_out)
    timed_out = pthread_cond_timedwait(&CV, &MU, &until) == ETIMEDOUT;
  int reached = b->calls >= n;
  pthread_mutex_unlock(&MU);
  return reached;
}

static int submit_cb(TVMPipeline* p, Slot* s, TVMPipelineCallback cb) {
  return TVMPipelineSubmitWithCallback(p, s->req.in, NUM_INPUTS, &s->req.out, 1, cb, s, &s->id);
}

/* Each slot's callback called exactly once, with its request id; those with status 0
 * (`*finished`) with their outputs right and an empty error, the others (`*cancelled`) with -1
 * and an error naming their request as cancelled. Call when every callback should be done. */
static void check_reports(Board* b, Slot* s, int n, int* finished, int* cancelled) {
  pthread_mutex_lock(&MU);
  int once = 1, ids = 1, ok = 1, cancel_text = 1, f = 0, c = 0;
  for (int k = 0; k < n; ++k) {
    if (atomic_load(&s[k].calls) != 1) {
      once = 0;
      continue;
    }
    ids &= s[k].cb_request == s[k].id;
    if (s[k].cb_status == 0) {
      ++f;
      ok &= s[k].cb_output_ok && s[k].cb_error[0] == '\0';
    } else {
      ++c;
      char want[96];
      snprintf(want, sizeof want, "request %" PRIu64 " was cancelled", s[k].id);
      if (s[k].cb_status != -1 || strstr(s[k].cb_error, want) == NULL) {
        if (cancel_text)
          fprintf(stderr, "    request %" PRIu64 ": status %d, error \"%s\"\n", s[k].id,
                  s[k].cb_status, s[k].cb_error);
        cancel_text = 0;
      }
    }
  }
  CHECK(b->calls == n);
  pthread_mutex_unlock(&MU);
  CHECK(once);
  CHECK(ids);
  CHECK(ok);
  CHECK(cancel_text);
  *finished = f;
  *cancelled = c;
}

static void test_callbacks(void* factory) {
  enum { N = 300 };
  Board b;
  board_init(&b);
  Slot* s = slots_new(&b, N, 0); /* the first with TVM's own inputs */
  TVMPipeline* p = create(factory, "core_groups=2,threads_per_group=1,in_flight=4");
  for (int k = 0; k < N; ++k) REQUIRE_OK(submit_cb(p, &s[k], on_done));
  REQUIRE(await_calls(&b, N));
  int finished = 0, cancelled = 0;
  check_reports(&b, s, N, &finished, &cancelled);
  CHECK(finished == N && cancelled == 0);
  CHECK(s[0].cb_output_ok && output_is(&s[0].req, WANT));
  /* A callback request is forgotten once reported. */
  CHECK_FAIL(TVMPipelineWait(p, s[N - 1].id), "is unknown");
  CHECK_OK(TVMPipelineFree(p));
  /* No callback after the free. */
  pthread_mutex_lock(&MU);
  CHECK(b.calls == N);
  pthread_mutex_unlock(&MU);
  slots_free(s, N);
}

/* A request that reports through its callback cannot be waited for. Made certain with one
 * context: the first request's callback blocks the pipeline's d2h thread until the gate opens,
 * so the second request cannot finish before the wait. */
static void test_callback_request_cannot_be_waited_for(void* factory) {
  Board b;
  board_init(&b);
  Slot* s = slots_new(&b, 2, 40);
  TVMPipeline* p = create(factory, "core_groups=1,threads_per_group=1,in_flight=1");
  REQUIRE_OK(submit_cb(p, &s[0], gated_callback));
  REQUIRE_OK(submit_cb(p, &s[1], on_done));
  CHECK_FAIL(TVMPipelineWait(p, s[1].id), "reports through its callback; it cannot be waited for");
  open_gate(&b);
  REQUIRE(await_calls(&b, 2));
  int finished = 0, cancelled = 0;
  check_reports(&b, s, 2, &finished, &cancelled);
  CHECK(finished == 2);
  CHECK(!b.gate_timed_out);
  CHECK_OK(TVMPipelineFree(p));
  slots_free(s, 2);
}

/* ---- free with requests in flight ------------------------------------------------------------ */

static void test_free_in_flight(void* factory) {
  enum { N = 200, ROUNDS = 3 };
  for (int round = 0; round < ROUNDS; ++round) {
    Board b;
    board_init(&b);
    Slot* s = slots_new(&b, N, 100 * round);
    TVMPipeline* p = create(factory, "core_groups=2,threads_per_group=1,in_flight=2");
    for (int k = 0; k < N; ++k) REQUIRE_OK(submit_cb(p, &s[k], on_done));
    CHECK_OK(TVMPipelineFree(p));
    /* Every callback has been called by the time the free returns. */
    int finished = 0, cancelled = 0;
    check_reports(&b, s, N, &finished, &cancelled);
    CHECK(finished + cancelled == N);
    slots_free(s, N);
  }
}

static void* open_gate_after_a_cancel(void* arg) {
  Board* b = (Board*)arg;
  struct timespec until = deadline_in(60);
  pthread_mutex_lock(&MU);
  int timed_out = 0;
  while (b->cancelled == 0 && !timed_out)
    timed_out = pthread_cond_timedwait(&CV, &MU, &until) == ETIMEDOUT;
  b->gate_open = 1;
  pthread_cond_broadcast(&CV);
  pthread_mutex_unlock(&MU);
  CHECK(!timed_out);
  return NULL;
}

/* With the d2h thread held by a blocking callback, at most in_flight requests start before the
 * free: the free must cancel the rest (and only then can the gate open), finish the started. */
static void test_free_cancels_queued_requests(void* factory) {
  enum { N = 201 };
  Board b;
  board_init(&b);
  Slot* s = slots_new(&b, N, 300);
  TVMPipeline* p = create(factory, "core_groups=1,threads_per_group=1,in_flight=2");
  REQUIRE_OK(submit_cb(p, &s[0], gated_callback));
  for (int k = 1; k < N; ++k) REQUIRE_OK(submit_cb(p, &s[k], on_done));
  pthread_t helper;
  REQUIRE(pthread_create(&helper, NULL, open_gate_after_a_cancel, &b) == 0);
  CHECK_OK(TVMPipelineFree(p));
  REQUIRE(pthread_join(helper, NULL) == 0);
  int finished = 0, cancelled = 0;
  check_reports(&b, s, N, &finished, &cancelled);
  CHECK(s[0].cb_status == 0);
  /* The blocker and at most two more started; all others were queued when freed. */
  if (!CHECK(cancelled >= N - 3 && finished >= 1))
    fprintf(stderr, "    %d finished, %d cancelled\n", finished, cancelled);
  CHECK(!b.gate_timed_out);
  slots_free(s, N);
}

/* ---- misuse ---------------------------------------------------------------------------------- */

static void test_bad_create(void* factory, void* kernels) {
  TVMPipeline* p = NULL;
  static const struct {
    const char* options;
    const char* error;
  } bad[] = {
      {"groups=2", "unknown option `groups`"},
      {"core_groups=0", "option `core_groups`"},
      {"core_groups=two", "option `core_groups`"},
      {"threads_per_group=0", "option `threads_per_group`"},
      {"threads_per_group=x", "option `threads_per_group`"},
      {"in_flight=0", "option `in_flight`"},
      {"in_flight=1,core_groups=2", "option `in_flight`"},
      {"cpus=0-1;2-x", "option `cpus`"},
      {"cpus=3-1", "option `cpus`"},
      {"cpus=0;1,core_groups=3", "option `cpus`"},
      {"trace=maybe", "option `trace`"},
      {"trace", "`trace` is not key=value"},
      {"trace=1,trace=0", "`trace` is given twice"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    if (!CHECK_FAIL(TVMPipelineCreate(factory, &CPU, 1, bad[k].options, &p), bad[k].error))
      fprintf(stderr, "    options \"%s\"\n", bad[k].options);
  }
  CHECK_FAIL(TVMPipelineCreate(NULL, &CPU, 1, NULL, &p), "argument `factory`");
  CHECK_CONTAINS(TVMGetLastError(), "NULL");
  CHECK_FAIL(TVMPipelineCreate(kernels, &CPU, 1, NULL, &p), "is not a GraphExecutorFactory");
  CHECK_FAIL(TVMPipelineCreate(factory, &CPU, 0, NULL, &p), "`num_devices` is 0");
  CHECK_FAIL(TVMPipelineCreate(factory, NULL, 1, NULL, &p), "argument `devices` is NULL");
  CHECK_FAIL(TVMPipelineCreate(factory, &CPU, 1, NULL, NULL), "argument `out` is NULL");
  CHECK(p == NULL);
}

static void test_bad_calls(void* factory) {
  TVMPipeline* p = create(factory, "core_groups=1,threads_per_group=1,in_flight=2");
  Req r;
  req_init(&r);
  req_fill(&r, 0);
  uint64_t id = 0;

  /* Counts. */
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 3, &r.out, 1, &id),
             "submit: 3 input tensors given, the model takes 4 (x1, y1, x2, y2)");
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 0, &r.out, 1, &id), "0 input tensors given");
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, &r.out, 0, &id),
             "submit: 0 output tensors given, the model has 1");
  DLTensor two_outs[2] = {r.out, r.out};
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, two_outs, 2, &id), "2 output tensors given, the model has 1");
  CHECK_FAIL(TVMPipelineSubmit(p, NULL, 4, &r.out, 1, &id), "argument `inputs` is NULL but its length is 4");
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, NULL, 1, &id), "argument `outputs` is NULL but its length is 1");

  /* Shapes, dtypes, layout, data. */
  DLTensor ins[NUM_INPUTS];
  static const int64_t transposed[2] = {2, 10};
  static const int64_t flat[1] = {20};
  memcpy(ins, r.in, sizeof ins);
  ins[2].shape = (int64_t*)transposed;
  CHECK_FAIL(TVMPipelineSubmit(p, ins, 4, &r.out, 1, &id),
             "submit: input `x2`: expected shape [10, 2], got [2, 10]");
  memcpy(ins, r.in, sizeof ins);
  ins[1].dtype.bits = 64;
  CHECK_FAIL(TVMPipelineSubmit(p, ins, 4, &r.out, 1, &id),
             "submit: input `y1`: expected dtype float32, got float64");
  memcpy(ins, r.in, sizeof ins);
  ins[0].dtype.code = kDLInt;
  CHECK_FAIL(TVMPipelineSubmit(p, ins, 4, &r.out, 1, &id),
             "submit: input `x1`: expected dtype float32, got int32");
  memcpy(ins, r.in, sizeof ins);
  static const int64_t strides[2] = {1, 10};
  ins[3].strides = (int64_t*)strides;
  CHECK_FAIL(TVMPipelineSubmit(p, ins, 4, &r.out, 1, &id), "is strided");
  memcpy(ins, r.in, sizeof ins);
  ins[3].data = NULL;
  CHECK_FAIL(TVMPipelineSubmit(p, ins, 4, &r.out, 1, &id), "submit: input `y2`: data pointer is NULL");
  DLTensor out = r.out;
  out.ndim = 1;
  out.shape = (int64_t*)flat;
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, &out, 1, &id), "expected shape [10, 2], got [20]");
  CHECK_CONTAINS(TVMGetLastError(), "submit: output `");
  out = r.out;
  out.dtype.bits = 16;
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, &out, 1, &id), "expected dtype float32, got float16");

  /* Out-parameters, callbacks, handles. */
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, &r.out, 1, NULL), "argument `out_request` is NULL");
  CHECK_FAIL(TVMPipelineSubmitWithCallback(p, r.in, 4, &r.out, 1, NULL, NULL, &id),
             "`callback` is NULL");
  CHECK_FAIL(TVMPipelineSubmitWithCallback(p, r.in, 4, &r.out, 1, on_done, NULL, NULL),
             "argument `out_request` is NULL");
  CHECK_FAIL(TVMPipelineSubmit(NULL, r.in, 4, &r.out, 1, &id), "pipeline handle `p` is NULL");
  CHECK_FAIL(TVMPipelineWait(NULL, 1), "pipeline handle `p` is NULL");
  int not_a_pipeline = 0;
  CHECK_FAIL(TVMPipelineWait((TVMPipeline*)&not_a_pipeline, 1), "is not live");
  CHECK_FAIL(TVMPipelineFree((TVMPipeline*)&not_a_pipeline), "is not live");

  /* Ids. */
  CHECK_FAIL(TVMPipelineWait(p, 999999), "request 999999 is unknown");
  CHECK_FAIL(TVMPipelineWait(p, 0), "request 0 is unknown");
  /* None of the failed submits queued anything: the pipeline still gives TVM's output. */
  CHECK_OK(submit(p, &r, &id));
  CHECK_OK(TVMPipelineWait(p, id));
  CHECK(output_is(&r, WANT));
  char want[96];
  snprintf(want, sizeof want,
           "request %" PRIu64 " is unknown (never submitted, or already waited for)", id);
  CHECK_FAIL(TVMPipelineWait(p, id), want);

  /* Trace without trace=1. */
  const char* json = NULL;
  CHECK_FAIL(TVMPipelineGetTrace(p, &json), "trace=1");
  CHECK(json == NULL);
  size_t size = 0;
  CHECK_FAIL(TVMPipelineGetTraceInto(p, NULL, 0, &size), "trace=1");
  CHECK_FAIL(TVMPipelineGetTraceInto(p, NULL, 0, NULL), "argument `out_size` is NULL");

  /* Use after free, double free. */
  CHECK_OK(TVMPipelineFree(p));
  CHECK_FAIL(TVMPipelineSubmit(p, r.in, 4, &r.out, 1, &id), "is not live");
  CHECK_FAIL(TVMPipelineSubmitWithCallback(p, r.in, 4, &r.out, 1, on_done, NULL, &id), "is not live");
  CHECK_FAIL(TVMPipelineWait(p, id), "is not live");
  CHECK_FAIL(TVMPipelineGetTrace(p, &json), "is not live");
  CHECK_FAIL(TVMPipelineFree(p), "is not live (freed twice?)");
  CHECK_OK(TVMPipelineFree(NULL));
  req_free(&r);
}

/* ---- trace ----------------------------------------------------------------------------------- */

static int count(const char* s, const char* sub) {
  int n = 0;
  for (const char* q = s; (q = strstr(q, sub)) != NULL; q += strlen(sub)) ++n;
  return n;
}

/* The group of request `id`'s `stage` span in the trace, or -1 if the span is missing. */
static int span_group(const char* json, uint64_t id, const char* stage) {
  char name[64];
  snprintf(name, sizeof name, "\"request %" PRIu64 " %s\"", id, stage);
  const char* span = strstr(json, name);
  const char* group = span ? strstr(span, "\"group\":") : NULL;
  return group ? atoi(group + strlen("\"group\":")) : -1;
}

/* trace=1 over two groups. Group 0's d2h thread is held by a blocking callback while the
 * requests are submitted, so the first of them goes to group 0 and stays there, and the second
 * is certain to go to group 1: the trace shows both groups. */
static void test_trace(void* factory) {
  enum { N = 24 };
  static const char* STAGES[3] = {"h2d", "compute", "d2h"};
  TVMPipeline* p = create(factory, "core_groups=2,threads_per_group=1,in_flight=4,trace=1");
  Board b;
  board_init(&b);
  Slot* blocker = slots_new(&b, 1, 0);
  Req r[N];
  uint64_t id[N];
  for (int k = 0; k < N; ++k) {
    req_init(&r[k]);
    req_fill(&r[k], k);
  }
  REQUIRE_OK(submit_cb(p, blocker, gated_callback));
  REQUIRE(await_calls(&b, 1));
  for (int k = 0; k < N; ++k) REQUIRE_OK(submit(p, &r[k], &id[k]));
  open_gate(&b);
  int right = 0;
  for (int k = 0; k < N; ++k) {
    CHECK_OK(TVMPipelineWait(p, id[k]));
    right += output_is(&r[k], REF[k]);
  }
  CHECK(right == N);
  CHECK(!b.gate_timed_out);

  const char* json = NULL;
  CHECK_FAIL(TVMPipelineGetTrace(p, NULL), "argument `out_json` is NULL");
  REQUIRE_OK(TVMPipelineGetTrace(p, &json));
  REQUIRE(json != NULL);
  CHECK(strncmp(json, "{\"traceEvents\":[", 16) == 0);
  CHECK_CONTAINS(json, "\"displayTimeUnit\":\"ms\"");
  static const char* lanes[] = {"\"group 0 h2d\"", "\"group 0 compute\"", "\"group 0 d2h\"",
                                "\"group 1 h2d\"", "\"group 1 compute\"", "\"group 1 d2h\""};
  for (size_t k = 0; k < sizeof lanes / sizeof lanes[0]; ++k) CHECK_CONTAINS(json, lanes[k]);
  CHECK(count(json, "\"thread_name\"") == 6);
  /* One complete event per stage of each request (the blocker's too), all three in one group. */
  CHECK(count(json, "\"ph\":\"X\"") == 3 * (N + 1));
  int stages = 1;
  for (int k = -1; k < N; ++k) {
    uint64_t rid = k < 0 ? blocker->id : id[k];
    int g = span_group(json, rid, "h2d");
    for (int st = 0; st < 3; ++st) {
      char name[64];
      snprintf(name, sizeof name, "\"request %" PRIu64 " %s\"", rid, STAGES[st]);
      int n = count(json, name);
      int gs = span_group(json, rid, STAGES[st]);
      if (n != 1 || gs != g || g < 0 || g > 1) {
        fprintf(stderr, "    trace: %s appears %d times, group %d (h2d in %d)\n", name, n, gs, g);
        stages = 0;
      }
    }
  }
  CHECK(stages);
  CHECK(span_group(json, blocker->id, "compute") == 0);
  CHECK(span_group(json, id[0], "compute") == 0);
  CHECK(span_group(json, id[1], "compute") == 1);
  /* The text stays valid until this thread's next call, which sees the same requests. */
  size_t len = strlen(json);
  /* The caller's own copy: a size query, a short buffer (its first bytes, no NUL), then all. */
  size_t size = 0;
  CHECK_OK(TVMPipelineGetTraceInto(p, NULL, 0, &size));
  CHECK(size == len + 1);
  char* copy = malloc(size);
  REQUIRE(copy != NULL);
  memset(copy, 'x', size);
  CHECK_OK(TVMPipelineGetTraceInto(p, copy, 16, &size));
  CHECK(size == len + 1 && memcmp(copy, json, 16) == 0 && copy[16] == 'x');
  CHECK_OK(TVMPipelineGetTraceInto(p, copy, size, &size));
  CHECK(size == len + 1 && strcmp(copy, json) == 0);
  CHECK_FAIL(TVMPipelineGetTraceInto(p, NULL, 8, &size), "argument `buf` is NULL");
  const char* again = NULL;
  CHECK_OK(TVMPipelineGetTrace(p, &again));
  CHECK(again != NULL && strcmp(again, copy) == 0);
  free(copy);
  CHECK_OK(TVMPipelineFree(p));
  for (int k = 0; k < N; ++k) req_free(&r[k]);
  slots_free(blocker, 1);
}

int main(void) {
  for (int i = 0; i < NUM_INPUTS; ++i) {
    char name[64];
    snprintf(name, sizeof name, "input_%s.bin", INPUT_NAMES[i]);
    read_floats(name, IN[i], NUM_ELEMS);
  }
  read_floats("output_0.bin", WANT, NUM_ELEMS);
  void* factory = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_SEED004_SO, "", &factory));
  void* kernels = NULL;
  REQUIRE_OK(TVMModLoadFromFile(TVM_TEST_KERNELS_SO, "", &kernels));

  compute_references(factory);
  test_tvms_output(factory);
  test_threads(factory);
  test_callbacks(factory);
  test_callback_request_cannot_be_waited_for(factory);
  test_free_in_flight(factory);
  test_free_cancels_queued_requests(factory);
  test_bad_create(factory, kernels);
  test_bad_calls(factory);
  test_trace(factory);

  CHECK_OK(TVMModFree(factory));
  CHECK_OK(TVMModFree(kernels));
  return tvm_test_summary("test_pipeline");
}
