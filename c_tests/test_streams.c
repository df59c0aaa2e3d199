/*
 * Asynchronous CPU streams and events through the C API.
 *
 * The NULL stream is synchronous (a copy on it is done on return, as in TVM); a stream made by
 * TVMStreamCreate runs its copies in order on a worker thread of its own, so the caller
 * synchronizes (stream, event, or another stream waiting on it) before reading. The copies here
 * are large (64 MiB) so that queued work is still running when the next call is made: a missing
 * wait shows up as wrong data, not as luck.
 *
 * Parts: NULL-stream copies; copies on a created stream with TVMStreamQuery; ordering between
 * streams through events and TVMStreamStreamSynchronize; event semantics; 4 threads x 500
 * rounds of chained copies (run under TSan by scripts/tsan.sh); misuse of every stream and
 * event function; a stream freed with copies queued.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

#define BIG_WORDS ((int64_t)16 * 1024 * 1024) /* 64 MiB of uint32 */
#define BIG_BYTES ((size_t)BIG_WORDS * 4)
/* Copies queued ahead of the one under test, so that it is still pending when the test goes
 * on: three 64 MiB copies take tens of milliseconds (far longer under the sanitizers). */
#define DELAY_COPIES 3

static const DLDevice cpu = {kDLCPU, 0};

/* Word i of the pattern for `seed`: two seeds differ in every word, and a zeroed buffer
 * matches a pattern in at most one word. */
static void fill(void* p, size_t words, uint32_t seed) {
  uint32_t* w = (uint32_t*)p;
  uint32_t key = (seed + 1u) * 0x9E3779B9u;
  for (size_t i = 0; i < words; ++i) w[i] = (uint32_t)i ^ key;
}

static DLTensor* array(int64_t words) {
  DLTensor* t = NULL;
  REQUIRE_OK(TVMArrayAlloc(&words, 1, kDLUInt, 32, 1, kDLCPU, 0, &t));
  return t;
}

static int same(const DLTensor* a, const DLTensor* b, size_t bytes) {
  return memcmp(a->data, b->data, bytes) == 0;
}

/* A copy through either entry point: TVMArrayCopyFromTo or TVMDeviceCopyDataFromTo. */
static int copy(DLTensor* from, DLTensor* to, TVMStreamHandle s, int via_device_api) {
  return via_device_api ? TVMDeviceCopyDataFromTo(from, to, s) : TVMArrayCopyFromTo(from, to, s);
}

/* Queue DELAY_COPIES big copies between x and y on `s`. */
static void queue_delay(DLTensor* x, DLTensor* y, TVMStreamHandle s) {
  for (int i = 0; i < DELAY_COPIES; ++i) CHECK_OK(copy(i % 2 ? y : x, i % 2 ? x : y, s, i % 2));
}

static int stream_done(TVMStreamHandle s) {
  int d = -1;
  if (!CHECK_OK(TVMStreamQuery(kDLCPU, 0, s, &d))) return -1;
  CHECK(d == 0 || d == 1);
  return d;
}

static int event_done(void* ev) {
  int d = -1;
  if (!CHECK_OK(TVMEventQuery(kDLCPU, 0, ev, &d))) return -1;
  CHECK(d == 0 || d == 1);
  return d;
}

/* Big buffers shared by the single-threaded parts. */
static DLTensor *A, *B, *C, *X, *Y;

static void zero(DLTensor* t) { memset(t->data, 0, BIG_BYTES); }

/* ---- the NULL stream: synchronous, as in TVM --------------------------------------------- */
static void test_null_stream(void) {
  TVMStreamHandle s = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s));
  for (int via = 0; via < 2; ++via) {
    zero(B);
    CHECK_OK(copy(A, B, NULL, via));
    CHECK(same(A, B, BIG_BYTES)); /* no synchronize: done on return */
  }
  CHECK(stream_done(NULL) == 1);
  CHECK_OK(TVMSynchronize(kDLCPU, 0, NULL));
  /* TVMSetStream does not make NULL-stream copies asynchronous. */
  CHECK_OK(TVMSetStream(kDLCPU, 0, s));
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, C, NULL));
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMSetStream(kDLCPU, 0, NULL));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
}

/* ---- copies on a created stream ------------------------------------------------------------ */
static void test_stream_copies(void) {
  TVMStreamHandle s = NULL;
  void* ev = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev));
  CHECK(s != NULL && ev != NULL);
  CHECK(stream_done(s) == 1); /* nothing queued yet */

  /* In order on one stream: A -> B by TVMArrayCopyFromTo, then B -> C by
   * TVMDeviceCopyDataFromTo must see B's new contents. */
  zero(B);
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s));
  CHECK_OK(TVMDeviceCopyDataFromTo(B, C, s));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s));
  CHECK(stream_done(s) == 1);
  CHECK(same(A, B, BIG_BYTES));
  CHECK(same(A, C, BIG_BYTES));

  /* TVMStreamQuery while copies run: the copies are queued, not done, so busy must be seen at
   * least once in a few tries (each queues four 64 MiB copies right before querying); a stream
   * reported idle has run everything, including the event recorded last. */
  int busy_seen = 0;
  for (int attempt = 0; attempt < 5 && !busy_seen; ++attempt) {
    queue_delay(X, Y, s);
    CHECK_OK(TVMArrayCopyFromTo(A, B, s));
    if (stream_done(s) == 0) busy_seen = 1;
    CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s));
    int q = stream_done(s);
    int e = event_done(ev);
    CHECK(q != 1 || e == 1);
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s));
    CHECK(stream_done(s) == 1);
    CHECK(event_done(ev) == 1);
  }
  if (!CHECK(busy_seen)) fprintf(stderr, "    TVMStreamQuery never reported a busy stream\n");

  /* Polling alone is enough: once TVMStreamQuery (or TVMEventQuery) says done, the data is
   * there without a synchronize. */
  for (int via_event = 0; via_event < 2; ++via_event) {
    zero(C);
    queue_delay(X, Y, s);
    CHECK_OK(TVMDeviceCopyDataFromTo(A, C, s));
    CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s));
    int d = 0, rc;
    for (;;) {
      rc = via_event ? TVMEventQuery(kDLCPU, 0, ev, &d) : TVMStreamQuery(kDLCPU, 0, s, &d);
      if (rc != 0 || d) break;
      sched_yield();
    }
    CHECK_OK(rc);
    CHECK(same(A, C, BIG_BYTES));
  }
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s));

  /* Byte offsets are honoured on a stream: the second half of A into a half-sized tensor. */
  {
    int64_t half = BIG_WORDS / 2;
    DLTensor from = *A, to = *B;
    from.shape = &half;
    from.byte_offset = BIG_BYTES / 2;
    to.shape = &half;
    zero(B);
    CHECK_OK(TVMDeviceCopyDataFromTo(&from, &to, s));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s));
    CHECK(memcmp(B->data, (char*)A->data + BIG_BYTES / 2, BIG_BYTES / 2) == 0);
    static const char zeros[4096];
    CHECK(memcmp((char*)B->data + BIG_BYTES / 2, zeros, sizeof zeros) == 0); /* untouched */
  }

  CHECK_OK(TVMEventFree(kDLCPU, 0, ev));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
}

/* ---- ordering between streams -------------------------------------------------------------- */
static void test_cross_stream_order(void) {
  TVMStreamHandle s1 = NULL, s2 = NULL;
  void* ev = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s1));
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s2));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev));

  /* A -> B on s1 (behind other copies), event, s2 waits, B -> C on s2; only s2 is
   * synchronized. Without the wait, s2 would copy B while it is still zero. */
  for (int via = 0; via < 2; ++via) {
    zero(B);
    zero(C);
    queue_delay(X, Y, s1);
    CHECK_OK(copy(A, B, s1, via));
    CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1));
    CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, s2, ev));
    CHECK_OK(copy(B, C, s2, !via));
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
    CHECK(same(A, C, BIG_BYTES));
    CHECK(event_done(ev) == 1); /* s2 got past its wait, so the mark was reached */
    CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));
  }

  /* The same through TVMStreamStreamSynchronize(s1, s2). */
  zero(B);
  zero(C);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, s1, s2));
  CHECK_OK(TVMDeviceCopyDataFromTo(B, C, s2));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));

  /* The NULL stream as the waiting side: the host waits, so a NULL-stream copy made right after
   * sees s1's work. */
  zero(B);
  zero(C);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, s1, NULL));
  CHECK_OK(TVMArrayCopyFromTo(B, C, NULL));
  CHECK(same(A, C, BIG_BYTES));
  zero(B);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, NULL, ev));
  CHECK(event_done(ev) == 1);
  CHECK(same(A, B, BIG_BYTES));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));

  /* A NULL source stream has nothing pending: no wait, and s2 keeps working. */
  CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, NULL, s2));
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, C, s2));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
  CHECK(same(A, C, BIG_BYTES));

  CHECK_OK(TVMEventFree(kDLCPU, 0, ev));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s1));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s2));
}

/* ---- events -------------------------------------------------------------------------------- */
static void test_events(void) {
  TVMStreamHandle s1 = NULL, s2 = NULL;
  void *ev = NULL, *ev2 = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s1));
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s2));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev2));
  CHECK(ev != ev2);

  /* Never recorded: reached; synchronizing and waiting on it return at once. */
  CHECK(event_done(ev) == 1);
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, NULL, ev));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, s2, ev));
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, C, s2));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
  CHECK(same(A, C, BIG_BYTES));

  /* TVMEventSynchronize waits for the copies before the mark, and only that is needed. */
  zero(B);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1));
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK(event_done(ev) == 1);
  CHECK(same(A, B, BIG_BYTES));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));

  /* Recorded on the NULL stream: reached at once. Re-recording replaces the earlier mark, so an
   * event recorded behind pending copies and then on the NULL stream is reached now. */
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev2, NULL));
  CHECK(event_done(ev2) == 1);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev2, s1));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev2, NULL));
  CHECK(event_done(ev2) == 1);
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));

  /* Re-recording an event that a stream already waits on: the wait (for the mark behind the
   * copy into B) still orders s2's copy, and the new mark is reached in its turn. */
  zero(B);
  zero(C);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, s2, ev));
  CHECK_OK(TVMArrayCopyFromTo(B, C, s2));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev2, s2));
  queue_delay(X, Y, s1);
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1)); /* a second mark, further down s1 */
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev2));
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK(event_done(ev) == 1);
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));

  /* Freeing an event that a stream waits on: the wait still holds. */
  zero(B);
  zero(C);
  queue_delay(X, Y, s1);
  CHECK_OK(TVMArrayCopyFromTo(A, B, s1));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s1));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, s2, ev));
  CHECK_OK(TVMEventFree(kDLCPU, 0, ev));
  CHECK_OK(TVMArrayCopyFromTo(B, C, s2));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s1));

  CHECK_OK(TVMEventFree(kDLCPU, 0, ev2));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s1));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s2));
}

/* ---- a stream freed while copies are queued ------------------------------------------------ */

/* Polls `ev` for up to `seconds`: whether it was reached. Used where a lost task would make
 * TVMEventSynchronize hang, so that the test fails with a message instead of a timeout. */
static int reached_within(void* ev, int seconds) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int d = 0, rc = TVMEventQuery(kDLCPU, 0, ev, &d);
    if (rc != 0) return CHECK_OK(rc);
    if (d) return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= seconds) {
      fprintf(stderr, "    event not reached after %d s: queued work was lost\n", seconds);
      return 0;
    }
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
}

static void test_free_with_queued_work(void) {
  TVMStreamHandle s = NULL, s2 = NULL;
  void* ev = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s));
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s2));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev));
  zero(B);
  zero(C);
  /* A -> X -> Y -> B chained on s, an event behind them, s2 waiting on it for B -> C; then s
   * is freed at once. Everything queued still runs. */
  CHECK_OK(TVMArrayCopyFromTo(A, X, s));
  CHECK_OK(TVMDeviceCopyDataFromTo(X, Y, s));
  CHECK_OK(TVMArrayCopyFromTo(Y, B, s));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s));
  CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, s2, ev));
  CHECK_OK(TVMArrayCopyFromTo(B, C, s2));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
  REQUIRE(reached_within(ev, 60));
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK(same(A, B, BIG_BYTES));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, s2));
  CHECK(same(A, C, BIG_BYTES));
  /* And freeing the other stream right after queuing on it. */
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, C, s2));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, s2));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s2));
  REQUIRE(reached_within(ev, 60));
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK(event_done(ev) == 1);
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMEventFree(kDLCPU, 0, ev));
}

/* ---- misuse -------------------------------------------------------------------------------- */

/* Every function taking a stream, given `bad`: each fails with `text` in the error, and no copy
 * touches its destination. `ev` is a live event. */
static void check_bad_stream(TVMStreamHandle bad, void* ev, const char* text) {
  int64_t n = 4;
  uint32_t src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
  DLTensor a = {src, cpu, 1, {kDLUInt, 32, 1}, &n, NULL, 0};
  DLTensor b = {dst, cpu, 1, {kDLUInt, 32, 1}, &n, NULL, 0};
  int done = 7;
  CHECK_FAIL(TVMSetStream(kDLCPU, 0, bad), text);
  CHECK_FAIL(TVMSynchronize(kDLCPU, 0, bad), text);
  CHECK_FAIL(TVMStreamStreamSynchronize(kDLCPU, 0, bad, NULL), text);
  CHECK_FAIL(TVMStreamStreamSynchronize(kDLCPU, 0, NULL, bad), text);
  CHECK_FAIL(TVMStreamQuery(kDLCPU, 0, bad, &done), text);
  CHECK(done == 7);
  CHECK_FAIL(TVMEventRecord(kDLCPU, 0, ev, bad), text);
  CHECK_FAIL(TVMStreamWaitEvent(kDLCPU, 0, bad, ev), text);
  CHECK_FAIL(TVMDeviceCopyDataFromTo(&a, &b, bad), text);
  CHECK_FAIL(TVMArrayCopyFromTo(&a, &b, bad), text);
  CHECK(dst[0] == 0 && dst[3] == 0);
  CHECK_FAIL(TVMStreamFree(kDLCPU, 0, bad), text);
}

/* Every function taking an event, given `bad`. */
static void check_bad_event(void* bad, TVMStreamHandle s, const char* text) {
  int done = 7;
  CHECK_FAIL(TVMEventRecord(kDLCPU, 0, bad, s), text);
  CHECK_FAIL(TVMEventRecord(kDLCPU, 0, bad, NULL), text);
  CHECK_FAIL(TVMStreamWaitEvent(kDLCPU, 0, s, bad), text);
  CHECK_FAIL(TVMStreamWaitEvent(kDLCPU, 0, NULL, bad), text);
  CHECK_FAIL(TVMEventSynchronize(kDLCPU, 0, bad), text);
  CHECK_FAIL(TVMEventQuery(kDLCPU, 0, bad, &done), text);
  CHECK(done == 7);
}

static void test_misuse(void) {
  TVMStreamHandle s = NULL, live = NULL;
  void *ev = NULL, *dead_ev = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &s));
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &live));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ev));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &dead_ev));

  /* A freed stream: the error names it as not live (freed twice for a second free). */
  CHECK_OK(TVMStreamFree(kDLCPU, 0, s));
  check_bad_stream(s, ev, "is not a live cpu stream");
  CHECK_FAIL(TVMStreamFree(kDLCPU, 0, s), "freed twice?");
  {
    char addr[32];
    snprintf(addr, sizeof addr, "%p", s);
    CHECK_FAIL(TVMSynchronize(kDLCPU, 0, s), addr); /* the error names the handle */
  }
  CHECK_FAIL(TVMStreamStreamSynchronize(kDLCPU, 0, live, s), "is not a live cpu stream");
  CHECK_FAIL(TVMStreamStreamSynchronize(kDLCPU, 0, s, live), "is not a live cpu stream");

  /* A bogus pointer: rejected without being dereferenced. */
  int not_a_stream = 0;
  check_bad_stream(&not_a_stream, ev, "is not a live cpu stream");
  CHECK(not_a_stream == 0);
  /* An event handle is not a stream handle, nor the other way round. */
  check_bad_stream(ev, ev, "is not a live cpu stream");
  check_bad_event(live, live, "is not a live cpu event");

  /* NULL out-pointers. */
  CHECK_FAIL(TVMStreamCreate(kDLCPU, 0, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMEventCreate(kDLCPU, 0, NULL), "argument `out` is NULL");
  CHECK_FAIL(TVMStreamQuery(kDLCPU, 0, live, NULL), "argument `out_done` is NULL");
  CHECK_FAIL(TVMStreamQuery(kDLCPU, 0, NULL, NULL), "argument `out_done` is NULL");
  CHECK_FAIL(TVMEventQuery(kDLCPU, 0, ev, NULL), "argument `out_done` is NULL");

  /* The NULL event: an error everywhere but TVMEventFree (a no-op, like free(NULL)). */
  check_bad_event(NULL, live, "event handle is NULL");
  CHECK_OK(TVMEventFree(kDLCPU, 0, NULL));

  /* A freed event, and a bogus one. */
  CHECK_OK(TVMEventFree(kDLCPU, 0, dead_ev));
  check_bad_event(dead_ev, live, "is not a live cpu event");
  CHECK_FAIL(TVMEventFree(kDLCPU, 0, dead_ev), "freed twice?");
  int not_an_event = 0;
  check_bad_event(&not_an_event, live, "is not a live cpu event");
  CHECK_FAIL(TVMEventFree(kDLCPU, 0, &not_an_event), "is not a live cpu event");
  CHECK(not_an_event == 0);

  /* Devices without a device API: the error names the device. */
  void* h = NULL;
  int done = 7;
  CHECK_FAIL(TVMEventCreate(kDLCUDA, 0, &h), "cuda");
  CHECK(h == NULL);
  CHECK_FAIL(TVMStreamQuery(kDLCUDA, 0, NULL, &done), "cuda");
  CHECK_FAIL(TVMEventQuery(kDLCUDA, 0, ev, &done), "cuda");
  CHECK(done == 7);

  /* After all that, the live handles still work. */
  zero(C);
  CHECK_OK(TVMArrayCopyFromTo(A, C, live));
  CHECK_OK(TVMEventRecord(kDLCPU, 0, ev, live));
  CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ev));
  CHECK(same(A, C, BIG_BYTES));
  CHECK_OK(TVMEventFree(kDLCPU, 0, ev));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, live));
}

/* ---- stress: threads with their own streams and events ------------------------------------- */
#define STRESS_THREADS 4
#define STRESS_ROUNDS 500
#define STRESS_WORDS ((int64_t)4 * 1024) /* 16 KiB */
#define STRESS_BYTES ((size_t)STRESS_WORDS * 4)

/* Each round: fill src; src -> mid on sa; sb waits (event, or TVMStreamStreamSynchronize every
 * fourth round); mid -> dst on sb; event eb; sa waits on eb; dst -> back on sa; event ea. The
 * host waits for ea (TVMSynchronize, TVMEventSynchronize or polling TVMEventQuery, by turns),
 * then every buffer must hold this round's pattern. */
static void* stress_thread(void* arg) {
  int id = (int)(intptr_t)arg;
  TVMStreamHandle sa = NULL, sb = NULL;
  void *ea = NULL, *eb = NULL;
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &sa));
  REQUIRE_OK(TVMStreamCreate(kDLCPU, 0, &sb));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &ea));
  REQUIRE_OK(TVMEventCreate(kDLCPU, 0, &eb));
  DLTensor* src = array(STRESS_WORDS);
  DLTensor* mid = array(STRESS_WORDS);
  DLTensor* dst = array(STRESS_WORDS);
  DLTensor* back = array(STRESS_WORDS);
  int bad_rounds = 0;
  for (int r = 0; r < STRESS_ROUNDS; ++r) {
    int via = r % 2;
    fill(src->data, STRESS_WORDS, (uint32_t)(id * 100000 + r));
    int ok = CHECK_OK(copy(src, mid, sa, via));
    if (r % 4 == 3) {
      ok &= CHECK_OK(TVMStreamStreamSynchronize(kDLCPU, 0, sa, sb));
    } else {
      ok &= CHECK_OK(TVMEventRecord(kDLCPU, 0, ea, sa));
      ok &= CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, sb, ea));
    }
    ok &= CHECK_OK(copy(mid, dst, sb, !via));
    ok &= CHECK_OK(TVMEventRecord(kDLCPU, 0, eb, sb));
    ok &= CHECK_OK(TVMStreamWaitEvent(kDLCPU, 0, sa, eb));
    ok &= CHECK_OK(copy(dst, back, sa, via));
    ok &= CHECK_OK(TVMEventRecord(kDLCPU, 0, ea, sa));
    switch (r % 3) {
      case 0:
        ok &= CHECK_OK(TVMSynchronize(kDLCPU, 0, sa));
        break;
      case 1:
        ok &= CHECK_OK(TVMEventSynchronize(kDLCPU, 0, ea));
        break;
      default: {
        int d = 0, rc = 0;
        while ((rc = TVMEventQuery(kDLCPU, 0, ea, &d)) == 0 && !d) sched_yield();
        ok &= CHECK_OK(rc);
      }
    }
    if (!ok) break; /* the API failed: the error is printed, the data would only add noise */
    int good = same(src, mid, STRESS_BYTES) && same(src, dst, STRESS_BYTES) &&
               same(src, back, STRESS_BYTES);
    if (!CHECK(good)) {
      fprintf(stderr, "    thread %d round %d: mid %d dst %d back %d\n", id, r,
              same(src, mid, STRESS_BYTES), same(src, dst, STRESS_BYTES),
              same(src, back, STRESS_BYTES));
      if (++bad_rounds == 5) break;
    }
  }
  CHECK_OK(TVMSynchronize(kDLCPU, 0, sa));
  CHECK_OK(TVMSynchronize(kDLCPU, 0, sb));
  CHECK_OK(TVMArrayFree(src));
  CHECK_OK(TVMArrayFree(mid));
  CHECK_OK(TVMArrayFree(dst));
  CHECK_OK(TVMArrayFree(back));
  CHECK_OK(TVMEventFree(kDLCPU, 0, ea));
  CHECK_OK(TVMEventFree(kDLCPU, 0, eb));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, sa));
  CHECK_OK(TVMStreamFree(kDLCPU, 0, sb));
  return NULL;
}

static void test_stress(void) {
  pthread_t threads[STRESS_THREADS];
  for (int i = 0; i < STRESS_THREADS; ++i)
    REQUIRE(pthread_create(&threads[i], NULL, stress_thread, (void*)(intptr_t)i) == 0);
  for (int i = 0; i < STRESS_THREADS; ++i) REQUIRE(pthread_join(threads[i], NULL) == 0);
}

int main(void) {
  A = array(BIG_WORDS);
  B = array(BIG_WORDS);
  C = array(BIG_WORDS);
  X = array(BIG_WORDS);
  Y = array(BIG_WORDS);
  fill(A->data, BIG_WORDS, 1);
  fill(X->data, BIG_WORDS, 2);

  test_null_stream();
  test_stream_copies();
  test_cross_stream_order();
  test_events();
  test_free_with_queued_work();
  test_misuse();
  test_stress();

  CHECK_OK(TVMArrayFree(A));
  CHECK_OK(TVMArrayFree(B));
  CHECK_OK(TVMArrayFree(C));
  CHECK_OK(TVMArrayFree(X));
  CHECK_OK(TVMArrayFree(Y));
  return tvm_test_summary("test_streams");
}
