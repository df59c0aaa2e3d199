/*
 * tvm-ffi objects shared across threads, through tvm-ffi's C ABI alone (compiled against the
 * wheel's c_api.h): run under AddressSanitizer and ThreadSanitizer by scripts/asan.sh and
 * scripts/tsan.sh. Threads share
 *   - immutable objects (an ffi.Array, an ffi.Map, strings, a tensor): references taken and
 *     dropped, items read, the tensor exported to DLPack and released, on every thread;
 *   - mutable containers (an ffi.List, an ffi.Dict): appends, inserts and reads from all threads
 *     at once, every write accounted for at the end;
 *   - functions: one made from C on the main thread, called by all; one made on each thread and
 *     handed to the others through the shared Dict;
 *   - errors: raised and taken back on each thread (an error slot per thread).
 * Every count is checked exact at the end and every object is freed (LeakSanitizer).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <tvm/ffi/c_api.h>

#include "tvm_test.h"

enum { kThreads = 4, kRounds = 400 };

static TVMFFIAny int_any(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof a);
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny str_any(const char* s) {
  TVMFFIAny a;
  memset(&a, 0, sizeof a);
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static int is_object(const TVMFFIAny* a) { return a->type_index >= kTVMFFIStaticObjectBegin; }

static void release(TVMFFIAny* a) {
  if (is_object(a) && a->v_obj != NULL) TVMFFIObjectDecRef(a->v_obj);
  memset(a, 0, sizeof *a);
}

/* Global functions, looked up once on the main thread. */
static TVMFFIObjectHandle g_array, g_array_get, g_map, g_map_get, g_list, g_list_append, g_list_size,
    g_list_get, g_dict, g_dict_set, g_dict_get, g_dict_size;

static TVMFFIObjectHandle global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  REQUIRE_OK(TVMFFIFunctionGetGlobal(&b, &f));
  REQUIRE(f != NULL);
  return f;
}

/* Call f; 0 on success with *out owned. */
static int call(TVMFFIObjectHandle f, TVMFFIAny* args, int n, TVMFFIAny* out) {
  memset(out, 0, sizeof *out);
  return TVMFFIFunctionCall(f, args, n, out);
}

/* The text of a string value (small or an ffi.String). */
static int text_is(const TVMFFIAny* a, const char* want) {
  size_t n = strlen(want);
  if (a->type_index == kTVMFFISmallStr) return a->small_str_len == n && memcmp(a->v_bytes, want, n) == 0;
  if (a->type_index != kTVMFFIStr) return 0;
  const TVMFFIByteArray* b = (const TVMFFIByteArray*)((const char*)a->v_obj + sizeof(TVMFFIObject));
  return b->size == n && memcmp(b->data, want, n) == 0;
}

/* times3(x) = 3x, a C function every thread calls through one shared function object. */
static int times3(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "times3 takes one int");
    return -1;
  }
  *result = int_any(args[0].v_int64 * 3);
  return 0;
}

/* plus(x) = x + *self: made on each thread, with that thread's context. */
static int plus(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "plus takes one int");
    return -1;
  }
  *result = int_any(args[0].v_int64 + *(const int64_t*)self);
  return 0;
}

/* What the threads share (read-only after set-up) and what each owns. */
typedef struct {
  TVMFFIAny array, map, list, dict, tensor;
  TVMFFIObjectHandle times3;
  pthread_barrier_t barrier;
} Shared;

typedef struct {
  Shared* shared;
  int id;
  int64_t offset; /* plus()'s context */
} Worker;

static const char* kWords[3] = {"alpha", "a string longer than a small one", "gamma"};

/* Read the shared immutable objects: references, items, the tensor through DLPack. */
static int read_immutable(const Shared* s, int round) {
  if (TVMFFIObjectIncRef(s->array.v_obj) != 0 || TVMFFIObjectIncRef(s->map.v_obj) != 0) return 0;
  TVMFFIAny args[2] = {s->array, int_any(round % 3)}, out;
  int ok = call(g_array_get, args, 2, &out) == 0 && text_is(&out, kWords[round % 3]);
  release(&out);
  args[0] = s->map;
  args[1] = str_any(kWords[round % 3]);
  ok = ok && call(g_map_get, args, 2, &out) == 0 && out.type_index == kTVMFFIInt && out.v_int64 == round % 3;
  DLManagedTensorVersioned* dl = NULL;
  ok = ok && TVMFFITensorToDLPackVersioned(s->tensor.v_obj, &dl) == 0 && dl != NULL &&
       ((const float*)dl->dl_tensor.data)[round % 4] == (float)(round % 4);
  if (dl != NULL && dl->deleter != NULL) dl->deleter(dl);
  ok = ok && TVMFFIObjectDecRef(s->array.v_obj) == 0 && TVMFFIObjectDecRef(s->map.v_obj) == 0;
  return ok;
}

/* Write the shared mutable containers: a List append per round, a Dict entry per thread. */
static int write_mutable(const Shared* s, int id, int round) {
  TVMFFIAny args[3] = {s->list, int_any((int64_t)id * kRounds + round)}, out;
  int ok = call(g_list_append, args, 2, &out) == 0;
  release(&out);
  char key[32];
  snprintf(key, sizeof key, "thread-%d-round-%d", id, round % 8);
  args[0] = s->dict;
  args[1] = str_any(key);
  args[2] = int_any(round);
  ok = ok && call(g_dict_set, args, 3, &out) == 0;
  release(&out);
  args[1] = str_any(key);
  ok = ok && call(g_dict_get, args, 2, &out) == 0 && out.type_index == kTVMFFIInt && out.v_int64 == round;
  release(&out);
  return ok;
}

/* Errors: raised and taken back on this thread, untouched by the others' errors. */
static int raise_and_take(const Shared* s, int id, int round) {
  char msg[64];
  snprintf(msg, sizeof msg, "thread %d round %d", id, round);
  TVMFFIErrorSetRaisedFromCStr("ValueError", msg);
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) return 0;
  const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((const char*)err + sizeof(TVMFFIObject));
  int ok = cell->message.size == strlen(msg) && memcmp(cell->message.data, msg, cell->message.size) == 0;
  TVMFFIObjectDecRef(err);
  /* a failing call raises on this thread only */
  TVMFFIAny bad = str_any("not an int"), out;
  ok = ok && call(s->times3, &bad, 1, &out) == -1;
  err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  ok = ok && err != NULL;
  if (err != NULL) TVMFFIObjectDecRef(err);
  return ok;
}

/* Publish this thread's plus() in the shared Dict as "plus-<id>". */
static int publish_function(Worker* w) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(&w->offset, plus, NULL, &f) != 0) return 0;
  char key[16];
  snprintf(key, sizeof key, "plus-%d", w->id);
  TVMFFIAny fn;
  memset(&fn, 0, sizeof fn);
  fn.type_index = kTVMFFIFunction;
  fn.v_obj = (TVMFFIObject*)f;
  TVMFFIAny args[3] = {w->shared->dict, str_any(key), fn}, out;
  int ok = call(g_dict_set, args, 3, &out) == 0;
  release(&out);
  TVMFFIObjectDecRef(f); /* the Dict holds it now */
  return ok;
}

/* Call every thread's plus(), taken out of the Dict: functions made on other threads. */
static int call_published(const Shared* s, int round) {
  int ok = 1;
  for (int t = 0; t < kThreads && ok; ++t) {
    char key[16];
    snprintf(key, sizeof key, "plus-%d", t);
    TVMFFIAny args[2] = {s->dict, str_any(key)}, fn, out;
    ok = call(g_dict_get, args, 2, &fn) == 0 && fn.type_index == kTVMFFIFunction;
    TVMFFIAny x = int_any(round);
    ok = ok && call(fn.v_obj, &x, 1, &out) == 0 && out.v_int64 == round + 1000 * (t + 1);
    release(&fn);
  }
  TVMFFIAny x = int_any(round), out;
  return ok && call(s->times3, &x, 1, &out) == 0 && out.v_int64 == 3 * round;
}

static void* work(void* arg) {
  Worker* w = (Worker*)arg;
  const Shared* s = w->shared;
  int ok = publish_function(w);
  pthread_barrier_wait(&w->shared->barrier);
  for (int round = 0; round < kRounds && ok; ++round) {
    ok = read_immutable(s, round) && write_mutable(s, w->id, round) && raise_and_take(s, w->id, round) &&
         call_published(s, round);
  }
  return ok ? NULL : (void*)1;
}

/* ---- set-up: the shared objects -------------------------------------------------------------- */

static int tensor_deleted = 0;
static float tensor_data[4] = {0.0f, 1.0f, 2.0f, 3.0f};
static int64_t tensor_shape[1] = {4};

static void delete_tensor(DLManagedTensorVersioned* self) {
  tensor_deleted++;
  free(self);
}

static TVMFFIAny make_tensor(void) {
  DLManagedTensorVersioned* dl = calloc(1, sizeof *dl);
  REQUIRE(dl != NULL);
  dl->version.major = DLPACK_MAJOR_VERSION;
  dl->version.minor = DLPACK_MINOR_VERSION;
  dl->deleter = delete_tensor;
  dl->dl_tensor.data = tensor_data;
  dl->dl_tensor.device.device_type = kDLCPU;
  dl->dl_tensor.ndim = 1;
  dl->dl_tensor.dtype.code = kDLFloat;
  dl->dl_tensor.dtype.bits = 32;
  dl->dl_tensor.dtype.lanes = 1;
  dl->dl_tensor.shape = tensor_shape;
  TVMFFIObjectHandle h = NULL;
  REQUIRE_OK(TVMFFITensorFromDLPackVersioned(dl, 0, 0, &h));
  TVMFFIAny t;
  memset(&t, 0, sizeof t);
  t.type_index = kTVMFFITensor;
  t.v_obj = (TVMFFIObject*)h;
  return t;
}

static void make_shared(Shared* s) {
  TVMFFIAny words[3] = {str_any(kWords[0]), str_any(kWords[1]), str_any(kWords[2])};
  REQUIRE_OK(call(g_array, words, 3, &s->array));
  TVMFFIAny kv[6] = {words[0], int_any(0), words[1], int_any(1), words[2], int_any(2)};
  REQUIRE_OK(call(g_map, kv, 6, &s->map));
  REQUIRE_OK(call(g_list, NULL, 0, &s->list));
  REQUIRE_OK(call(g_dict, NULL, 0, &s->dict));
  REQUIRE(is_object(&s->array) && is_object(&s->map) && is_object(&s->list) && is_object(&s->dict));
  s->tensor = make_tensor();
  REQUIRE_OK(TVMFFIFunctionCreate(NULL, times3, NULL, &s->times3));
  REQUIRE(pthread_barrier_init(&s->barrier, NULL, kThreads) == 0);
}

/* After the threads: every append is in the List, once; every Dict entry is there. */
static void check_writes(const Shared* s) {
  TVMFFIAny args[2] = {s->list}, out;
  REQUIRE_OK(call(g_list_size, args, 1, &out));
  REQUIRE(out.v_int64 == kThreads * kRounds);
  static char seen[kThreads * kRounds];
  int dup = 0;
  for (int64_t i = 0; i < kThreads * kRounds; ++i) {
    args[1] = int_any(i);
    if (!CHECK_OK(call(g_list_get, args, 2, &out))) break;
    if (out.type_index != kTVMFFIInt || out.v_int64 < 0 || out.v_int64 >= kThreads * kRounds) {
      CHECK(0 && "a list item out of range");
      break;
    }
    dup += seen[out.v_int64]++ != 0;
  }
  CHECK(dup == 0);
  args[0] = s->dict;
  CHECK_OK(call(g_dict_size, args, 1, &out));
  CHECK(out.v_int64 == kThreads * 8 + kThreads); /* 8 keys a thread, plus one function each */
}

static void free_shared(Shared* s) {
  TVMFFIAny* owned[] = {&s->array, &s->map, &s->list, &s->dict, &s->tensor};
  for (size_t i = 0; i < sizeof owned / sizeof owned[0]; ++i) {
    uint64_t count = __atomic_load_n(&((TVMFFIObject*)owned[i]->v_obj)->combined_ref_count, __ATOMIC_RELAXED);
    CHECK((count & 0xffffffffu) == 1); /* every thread's references were given back */
    release(owned[i]);
  }
  CHECK(tensor_deleted == 1);
  CHECK_OK(TVMFFIObjectDecRef(s->times3));
  pthread_barrier_destroy(&s->barrier);
}

static void lookup_globals(void) {
  g_array = global("ffi.Array");
  g_array_get = global("ffi.ArrayGetItem");
  g_map = global("ffi.Map");
  g_map_get = global("ffi.MapGetItem");
  g_list = global("ffi.List");
  g_list_append = global("ffi.ListAppend");
  g_list_size = global("ffi.ListSize");
  g_list_get = global("ffi.ListGetItem");
  g_dict = global("ffi.Dict");
  g_dict_set = global("ffi.DictSetItem");
  g_dict_get = global("ffi.DictGetItem");
  g_dict_size = global("ffi.DictSize");
}

static void free_globals(void) {
  TVMFFIObjectHandle all[] = {g_array, g_array_get, g_map, g_map_get, g_list, g_list_append,
                              g_list_size, g_list_get, g_dict, g_dict_set, g_dict_get, g_dict_size};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) CHECK_OK(TVMFFIObjectDecRef(all[i]));
}

int main(void) {
  lookup_globals();
  static Shared shared;
  make_shared(&shared);
  Worker workers[kThreads];
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    workers[i] = (Worker){&shared, i, 1000 * (i + 1)};
    REQUIRE(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
  }
  for (int i = 0; i < kThreads; ++i) {
    void* failed = NULL;
    pthread_join(threads[i], &failed);
    CHECK(failed == NULL);
  }
  check_writes(&shared);
  free_shared(&shared);
  free_globals();
  return tvm_test_summary("test_tvm_ffi_threads");
}
