/*
 * tvm-ffi's C ABI on this library, compiled against tvm-ffi's own header (c_tests/third_party:
 * the wheel's c_api.h): the layouts tvm-ffi code reads inline (object header, TVMFFIAny, small
 * strings, the string, shape, function and tensor cells), the functions over them, and one object
 * seen through both ABIs (docs/ARCHITECTURE.md, "Two ABIs, one object model"): a TVM 0.18 handle
 * is the tvm-ffi handle + 8.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include "tvm_test.h"

_Static_assert(sizeof(TVMFFIObject) == 24, "TVMFFIObject");
_Static_assert(offsetof(TVMFFIObject, type_index) == 8 && offsetof(TVMFFIObject, deleter) == 16,
               "TVMFFIObject fields");
_Static_assert(sizeof(TVMFFIAny) == 16 && offsetof(TVMFFIAny, v_int64) == 8, "TVMFFIAny");
_Static_assert(offsetof(TVMFFIAny, small_str_len) == 4, "small string length");
_Static_assert(sizeof(TVMFFIFunctionCell) == 16 && sizeof(TVMFFIShapeCell) == 16, "cells");

static TVMFFIByteArray bytes_of(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}
static int bytes_are(TVMFFIByteArray b, const char* want) {
  return b.size == strlen(want) && memcmp(b.data, want, b.size) == 0;
}
static void* cell_of(void* obj) { return (char*)obj + sizeof(TVMFFIObject); }
static int32_t type_of(void* obj) { return ((TVMFFIObject*)obj)->type_index; }
static uint32_t strong_count(void* obj) {
  return (uint32_t)(__atomic_load_n(&((TVMFFIObject*)obj)->combined_ref_count, __ATOMIC_RELAXED) & 0xffffffffu);
}

/* ---- a C function in tvm-ffi's convention ------------------------------------------------ */

static int contexts_deleted = 0;
static void delete_context(void* self) {
  CHECK(*(int*)self == 41);
  contexts_deleted++;
}

/* add(x, y): ints, or a tensor's first float plus y; "fail" as x raises a ValueError. */
static int add(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 2) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add takes 2 arguments");
    return -1;
  }
  int64_t y = args[1].v_int64;
  switch (args[0].type_index) {
    case kTVMFFIInt:
      result->type_index = kTVMFFIInt;
      result->zero_padding = 0;
      result->v_int64 = args[0].v_int64 + y;
      return 0;
    case kTVMFFITensor: {
      const DLTensor* t = (const DLTensor*)cell_of(args[0].v_obj);
      result->type_index = kTVMFFIFloat;
      result->zero_padding = 0;
      result->v_float64 = ((const float*)t->data)[0] + (double)y;
      return 0;
    }
    default:
      TVMFFIErrorSetRaisedFromCStr("ValueError", "add: bad first argument");
      return -1;
  }
}

static TVMFFIAny int_any(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof a);
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static void functions(void) {
  static int context = 41;
  TVMFFIObjectHandle f = NULL;
  REQUIRE_OK(TVMFFIFunctionCreate(&context, add, delete_context, &f));
  CHECK(type_of(f) == kTVMFFIFunction && strong_count(f) == 1);

  TVMFFIAny args[2] = {int_any(40), int_any(2)}, out;
  memset(&out, 0, sizeof out);
  CHECK_OK(TVMFFIFunctionCall(f, args, 2, &out));
  CHECK(out.type_index == kTVMFFIInt && out.v_int64 == 42);
  /* what tvm-ffi's inline code does: the cell's safe_call, with the object itself */
  TVMFFIFunctionCell* cell = (TVMFFIFunctionCell*)cell_of(f);
  out.v_int64 = 0;
  CHECK(cell->safe_call(f, args, 2, &out) == 0 && out.v_int64 == 42);

  /* a global: registered through tvm-ffi, found through both ABIs */
  TVMFFIByteArray name = bytes_of("test.ffi.add");
  CHECK_OK(TVMFFIFunctionSetGlobal(&name, f, 1));
  TVMFFIObjectHandle g = NULL;
  CHECK_OK(TVMFFIFunctionGetGlobal(&name, &g));
  CHECK(g == f && strong_count(f) == 3); /* ours, the registry's, g */
  TVMFunctionHandle legacy = NULL;
  CHECK_OK(TVMFuncGetGlobal("test.ffi.add", &legacy));
  CHECK((char*)legacy == (char*)f + 8);
  TVMValue v[2];
  int codes[2] = {kTVMArgInt, kTVMArgInt}, rcode = 0;
  TVMValue rv;
  v[0].v_int64 = 5;
  v[1].v_int64 = 6;
  CHECK_OK(TVMFuncCall(legacy, v, codes, 2, &rv, &rcode));
  CHECK(rcode == kTVMArgInt && rv.v_int64 == 11);
  CHECK_OK(TVMFuncFree(legacy));
  CHECK_OK(TVMFFIObjectDecRef(g));

  /* an error raised by the callee comes back from the call */
  TVMFFIAny bad[2] = {int_any(0), int_any(0)};
  bad[0].type_index = kTVMFFINone;
  CHECK(TVMFFIFunctionCall(f, bad, 2, &out) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "ValueError: add: bad first argument");
  CHECK(TVMFFIFunctionCall(NULL, args, 2, &out) == -1);

  TVMFFIByteArray missing = bytes_of("test.ffi.no_such_function");
  TVMFFIObjectHandle none = (void*)1;
  CHECK_OK(TVMFFIFunctionGetGlobal(&missing, &none));
  CHECK(none == NULL);
  CHECK_OK(TVMFFIObjectDecRef(f));
  CHECK(contexts_deleted == 0); /* the registry still holds it */
}

/* ---- strings, shapes, tensors ------------------------------------------------------------- */

static void strings(void) {
  TVMFFIByteArray small = bytes_of("hi"), big = bytes_of("a string longer than seven bytes");
  TVMFFIAny s;
  CHECK_OK(TVMFFIStringFromByteArray(&small, &s));
  CHECK(s.type_index == kTVMFFISmallStr && s.small_str_len == 2 && memcmp(s.v_bytes, "hi", 2) == 0);
  CHECK_OK(TVMFFIStringFromByteArray(&big, &s));
  REQUIRE(s.type_index == kTVMFFIStr);
  const TVMFFIByteArray* cell = (const TVMFFIByteArray*)cell_of(s.v_obj);
  CHECK(cell->size == big.size && memcmp(cell->data, big.data, big.size) == 0);
  CHECK_OK(TVMFFIObjectDecRef(s.v_obj));
  CHECK_OK(TVMFFIBytesFromByteArray(&big, &s));
  CHECK(s.type_index == kTVMFFIBytes);
  CHECK_OK(TVMFFIObjectDecRef(s.v_obj));

  /* a raw C string view becomes an owned string */
  TVMFFIAny view, owned;
  memset(&view, 0, sizeof view);
  view.type_index = kTVMFFIRawStr;
  view.v_c_str = "owned at last, and long";
  CHECK_OK(TVMFFIAnyViewToOwnedAny(&view, &owned));
  REQUIRE(owned.type_index == kTVMFFIStr);
  CHECK(strcmp(((const TVMFFIByteArray*)cell_of(owned.v_obj))->data, view.v_c_str) == 0);
  CHECK_OK(TVMFFIObjectDecRef(owned.v_obj));

  DLDataType t;
  TVMFFIByteArray name = bytes_of("float32x4");
  CHECK_OK(TVMFFIDataTypeFromString(&name, &t));
  CHECK(t.code == kDLFloat && t.bits == 32 && t.lanes == 4);
  CHECK_OK(TVMFFIDataTypeToString(&t, &s));
  REQUIRE(s.type_index == kTVMFFIStr);
  CHECK_STREQ(((const TVMFFIByteArray*)cell_of(s.v_obj))->data, "float32x4");
  CHECK_OK(TVMFFIObjectDecRef(s.v_obj));
  name = bytes_of("floaty");
  CHECK(TVMFFIDataTypeFromString(&name, &t) == -1);
  /* tvm-ffi's spelling: DLPack 1.x codes, bool as 8 bits, aliases */
  name = bytes_of("fp8_e4m3fn");
  CHECK_OK(TVMFFIDataTypeFromString(&name, &t));
  CHECK(t.code == kDLFloat8_e4m3fn && t.bits == 8 && t.lanes == 1);
  CHECK_OK(TVMFFIDataTypeToString(&t, &s));
  REQUIRE(s.type_index == kTVMFFIStr);
  CHECK(bytes_are(*(const TVMFFIByteArray*)cell_of(s.v_obj), "float8_e4m3fn"));
  CHECK_OK(TVMFFIObjectDecRef(s.v_obj));
  name = bytes_of("bool");
  CHECK_OK(TVMFFIDataTypeFromString(&name, &t));
  CHECK(t.code == kDLBool && t.bits == 8 && t.lanes == 1);

  int32_t index = -1;
  TVMFFIByteArray key = bytes_of("ffi.Tensor");
  CHECK_OK(TVMFFITypeKeyToIndex(&key, &index));
  CHECK(index == kTVMFFITensor);
  key = bytes_of("runtime.NDArray"); /* TVM 0.18's key names the same type */
  CHECK_OK(TVMFFITypeKeyToIndex(&key, &index));
  CHECK(index == kTVMFFITensor);
  key = bytes_of("no.such.Type");
  CHECK(TVMFFITypeKeyToIndex(&key, &index) == -1);
}

static void shapes_and_tensors(void) {
  /* a runtime global called through tvm-ffi returns a shape whose cell is read inline */
  TVMFFIByteArray name = bytes_of("runtime.ShapeTuple");
  TVMFFIObjectHandle f = NULL;
  REQUIRE_OK(TVMFFIFunctionGetGlobal(&name, &f));
  REQUIRE(f != NULL);
  TVMFFIAny dims[3] = {int_any(2), int_any(3), int_any(5)}, out = {0};
  REQUIRE_OK(TVMFFIFunctionCall(f, dims, 3, &out));
  REQUIRE(out.type_index == kTVMFFIShape);
  const TVMFFIShapeCell* shape = (const TVMFFIShapeCell*)cell_of(out.v_obj);
  CHECK(shape->size == 3 && shape->data[0] == 2 && shape->data[1] == 3 && shape->data[2] == 5);
  /* a result slot that still holds an object (a C++ caller's reused Any, as TVM's time
     evaluator passes) is assigned to: the new value written, the held one released */
  TVMFFIAny held = out;
  CHECK_OK(TVMFFIObjectIncRef(held.v_obj));
  REQUIRE_OK(TVMFFIFunctionCall(f, dims, 3, &out));
  CHECK(out.type_index == kTVMFFIShape && out.v_obj != held.v_obj && strong_count(held.v_obj) == 1);
  CHECK(((const TVMFFIShapeCell*)cell_of(out.v_obj))->data[2] == 5);
  CHECK_OK(TVMFFIObjectDecRef(held.v_obj));
  CHECK_OK(TVMFFIObjectDecRef(out.v_obj));
  CHECK_OK(TVMFFIObjectDecRef(f));

  /* an array made through TVM 0.18's API is an ffi.Tensor, its DLTensor 24 bytes in */
  int64_t sh[1] = {4};
  TVMArrayHandle arr = NULL;
  REQUIRE_OK(TVMArrayAlloc(sh, 1, kDLFloat, 32, 1, kDLCPU, 0, &arr));
  ((float*)arr->data)[0] = 1.5f;
  void* tensor = (char*)arr - sizeof(TVMFFIObject);
  CHECK(type_of(tensor) == kTVMFFITensor && (DLTensor*)cell_of(tensor) == arr);
  static int context = 41;
  TVMFFIObjectHandle add_f = NULL;
  REQUIRE_OK(TVMFFIFunctionCreate(&context, add, NULL, &add_f));
  TVMFFIAny args[2] = {int_any(0), int_any(2)};
  args[0].type_index = kTVMFFITensor;
  args[0].v_obj = (TVMFFIObject*)tensor;
  CHECK_OK(TVMFFIFunctionCall(add_f, args, 2, &out));
  CHECK(out.type_index == kTVMFFIFloat && out.v_float64 == 3.5);
  CHECK_OK(TVMFFIObjectDecRef(add_f));
  CHECK(strong_count(tensor) == 1);
  CHECK_OK(TVMArrayFree(arr));
}

/* ---- one function shared by threads: counts stay exact ------------------------------------ */

enum { kThreads = 4, kRounds = 5000 };

static void* hammer(void* f) {
  TVMFFIAny args[2] = {int_any(1), int_any(1)}, out;
  for (int i = 0; i < kRounds; ++i) {
    if (TVMFFIObjectIncRef(f) != 0) return (void*)1;
    if (TVMFFIFunctionCall(f, args, 2, &out) != 0 || out.v_int64 != 2) return (void*)1;
    if (TVMFFIObjectDecRef(f) != 0) return (void*)1;
  }
  return NULL;
}

static void threads(void) {
  static int context = 41;
  int deleted_before = contexts_deleted;
  TVMFFIObjectHandle f = NULL;
  REQUIRE_OK(TVMFFIFunctionCreate(&context, add, delete_context, &f));
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) REQUIRE(pthread_create(&t[i], NULL, hammer, f) == 0);
  for (int i = 0; i < kThreads; ++i) {
    void* failed = NULL;
    pthread_join(t[i], &failed);
    CHECK(failed == NULL);
  }
  CHECK(strong_count(f) == 1 && contexts_deleted == deleted_before);
  CHECK_OK(TVMFFIObjectDecRef(f));
  CHECK(contexts_deleted == deleted_before + 1);
}

/* ---- errors --------------------------------------------------------------------------------- */

static const TVMFFIErrorCell* error_cell(void* e) { return (const TVMFFIErrorCell*)cell_of(e); }

static void errors(void) {
  /* an error the callee raised comes out as an ffi.Error with its kind and message */
  static int context = 41;
  TVMFFIObjectHandle f = NULL, e = NULL;
  REQUIRE_OK(TVMFFIFunctionCreate(&context, add, NULL, &f));
  TVMFFIAny args[1] = {int_any(1)}, out;
  CHECK(TVMFFIFunctionCall(f, args, 1, &out) == -1);
  TVMFFIErrorMoveFromRaised(&e);
  REQUIRE(e != NULL);
  CHECK(type_of(e) == kTVMFFIError);
  CHECK(bytes_are(error_cell(e)->kind, "TypeError") && bytes_are(error_cell(e)->message, "add takes 2 arguments"));
  CHECK_OK(TVMFFIObjectDecRef(e));
  CHECK_OK(TVMFFIObjectDecRef(f));

  /* one made and raised here comes back as the same object, cause chain and all */
  TVMFFIByteArray kind = bytes_of("ValueError"), msg = bytes_of("outer"), bt = bytes_of("");
  TVMFFIObjectHandle cause = NULL, outer = NULL, back = NULL;
  REQUIRE_OK(TVMFFIErrorCreate(&kind, &msg, &bt, &cause));
  msg = bytes_of("outer, caused by the first");
  REQUIRE_OK(TVMFFIErrorCreateWithCauseAndExtraContext(&kind, &msg, &bt, cause, NULL, &outer));
  CHECK(error_cell(outer)->cause_chain == cause && strong_count(cause) == 2);
  TVMFFIErrorSetRaised(outer);
  CHECK_CONTAINS(TVMGetLastError(), "ValueError: outer, caused by the first");
  TVMFFIErrorMoveFromRaised(&back);
  CHECK(back == outer);
  TVMFFIObjectHandle again = (void*)1;
  TVMFFIErrorMoveFromRaised(&again); /* moved out: the text alone gives a new object */
  CHECK(again != NULL && again != outer && bytes_are(error_cell(again)->kind, "ValueError"));
  CHECK_OK(TVMFFIObjectDecRef(again));

  /* the backtrace is updated in place, replaced or appended */
  TVMFFIByteArray more = bytes_of("frame 2\n");
  error_cell(outer)->update_backtrace(outer, &more, kTVMFFIBacktraceUpdateModeReplace);
  error_cell(outer)->update_backtrace(outer, &more, kTVMFFIBacktraceUpdateModeAppend);
  CHECK(bytes_are(error_cell(outer)->backtrace, "frame 2\nframe 2\n"));
  CHECK_OK(TVMFFIObjectDecRef(back));
  CHECK_OK(TVMFFIObjectDecRef(outer));
  CHECK(strong_count(cause) == 1);
  CHECK_OK(TVMFFIObjectDecRef(cause));

  const TVMFFIByteArray* trace = TVMFFIBacktrace("model.cc", 12, "Run", 0);
  REQUIRE(trace != NULL);
  CHECK(bytes_are(*trace, "  File \"model.cc\", line 12, in Run\n"));
}

/* ---- DLPack -------------------------------------------------------------------------------- */

static int producer_deleted = 0;
static void producer_deleter(DLManagedTensorVersioned* self) {
  CHECK(self->manager_ctx == &producer_deleted);
  producer_deleted++;
}

static void dlpack(void) {
  /* a producer's 2x3 float tensor (64-byte aligned), and its transpose as strides */
  static float data[6] __attribute__((aligned(64))) = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3}, t_shape[2] = {3, 2}, t_strides[2] = {1, 3};
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = DLPACK_MAJOR_VERSION;
  m.manager_ctx = &producer_deleted;
  m.deleter = producer_deleter;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = kDLCPU;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = shape;

  TVMFFIObjectHandle t = NULL;
  REQUIRE_OK(TVMFFITensorFromDLPackVersioned(&m, 64, 1, &t));
  CHECK(type_of(t) == kTVMFFITensor);
  const DLTensor* dl = (const DLTensor*)cell_of(t);
  CHECK(dl->data == data && dl->ndim == 2 && dl->shape[1] == 3);

  /* out again as a versioned tensor: the same memory, the tensor kept alive by it */
  DLManagedTensorVersioned* back = NULL;
  CHECK_OK(TVMFFITensorToDLPackVersioned(t, &back));
  REQUIRE(back != NULL);
  CHECK(back->version.major == 1 && back->dl_tensor.data == data && strong_count(t) == 2);
  back->deleter(back);
  CHECK(strong_count(t) == 1);
  DLManagedTensor* plain = NULL;
  CHECK_OK(TVMFFITensorToDLPack(t, &plain));
  REQUIRE(plain != NULL);
  CHECK(plain->dl_tensor.data == data);
  plain->deleter(plain);

  /* an unsafe view: the second row, keeping the source alive */
  DLTensor row = *dl;
  int64_t row_shape[1] = {3};
  row.ndim = 1;
  row.shape = row_shape;
  row.byte_offset = 3 * sizeof(float);
  TVMFFIObjectHandle view = NULL;
  CHECK_OK(TVMFFITensorCreateUnsafeView(t, &row, &view));
  REQUIRE(view != NULL);
  CHECK(strong_count(t) == 2);
  CHECK_OK(TVMFFIObjectDecRef(t));
  CHECK(producer_deleted == 0);
  const DLTensor* v = (const DLTensor*)cell_of(view);
  CHECK(((const float*)((const char*)v->data + v->byte_offset))[2] == 5.0f && v->shape[0] == 3);
  CHECK_OK(TVMFFIObjectDecRef(view));
  CHECK(producer_deleted == 1); /* the last reference ran the producer's deleter, once */

  /* strided: refused when contiguity is required, kept with its strides otherwise */
  m.dl_tensor.shape = t_shape;
  m.dl_tensor.strides = t_strides;
  CHECK(TVMFFITensorFromDLPackVersioned(&m, 0, 1, &t) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "contiguous");
  REQUIRE_OK(TVMFFITensorFromDLPackVersioned(&m, 0, 0, &t));
  dl = (const DLTensor*)cell_of(t);
  CHECK(dl->strides != NULL && dl->strides[0] == 1 && dl->strides[1] == 3);
  CHECK_OK(TVMFFIObjectDecRef(t));
  CHECK(producer_deleted == 2);
  /* misaligned data is refused when an alignment is asked for */
  m.dl_tensor.strides = NULL;
  m.dl_tensor.shape = shape;
  m.dl_tensor.data = data + 1;
  m.dl_tensor.shape[1] = 2;
  CHECK(TVMFFITensorFromDLPackVersioned(&m, 64, 0, &t) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "aligned");
  CHECK(producer_deleted == 2); /* refused: the producer still owns it */
  CHECK(TVMFFITensorToDLPack(NULL, &plain) == -1);
}

/* ---- a tensor made by foreign tvm-ffi code -------------------------------------------------- */

/* what tvm-ffi's C++ headers lay out for a tensor: the header, the DLTensor, then their own
 * fields (here a marker this runtime must not touch), with their own deleter */
typedef struct {
  TVMFFIObject header;
  DLTensor tensor;
  int64_t own_field;
  float data[4];
  int64_t shape[1];
} ForeignTensor;

static int foreign_tensors_freed = 0;
static void free_foreign_tensor(void* self, int flags) {
  CHECK(flags == kTVMFFIObjectDeleterFlagBitMaskBoth);
  CHECK(((ForeignTensor*)self)->own_field == 4242);
  foreign_tensors_freed++;
  free(self);
}

static TVMFFIAny call_global(const char* name, TVMFFIAny* args, int n) {
  TVMFFIByteArray b = bytes_of(name);
  TVMFFIObjectHandle f = NULL;
  TVMFFIAny out;
  memset(&out, 0, sizeof out);
  REQUIRE_OK(TVMFFIFunctionGetGlobal(&b, &f));
  REQUIRE(f != NULL);
  CHECK_OK(TVMFFIFunctionCall(f, args, n, &out));
  TVMFFIObjectDecRef(f);
  return out;
}

static void foreign_tensor(void) {
  ForeignTensor* t = calloc(1, sizeof *t);
  REQUIRE(t != NULL);
  t->header.combined_ref_count = ((uint64_t)1 << 32) | 1;
  t->header.type_index = kTVMFFITensor;
  t->header.deleter = free_foreign_tensor;
  t->own_field = 4242;
  for (int i = 0; i < 4; i++) t->data[i] = 0.5f * (float)i;
  t->shape[0] = 4;
  t->tensor.data = t->data;
  t->tensor.device.device_type = kDLCPU;
  t->tensor.ndim = 1;
  t->tensor.dtype.code = kDLFloat;
  t->tensor.dtype.bits = 32;
  t->tensor.dtype.lanes = 1;
  t->tensor.shape = t->shape;

  /* saved with the runtime's params writer and read back: the foreign tensor's numbers */
  TVMFFIAny kv[2];
  memset(kv, 0, sizeof kv);
  kv[0].type_index = kTVMFFIRawStr;
  kv[0].v_c_str = "w";
  kv[1].type_index = kTVMFFITensor;
  kv[1].v_obj = &t->header;
  TVMFFIAny map = call_global("runtime.Map", kv, 2);
  REQUIRE(map.type_index >= kTVMFFIStaticObjectBegin);
  TVMFFIAny saved = call_global("runtime.SaveParams", &map, 1);
  CHECK_OK(TVMFFIObjectDecRef(map.v_obj));
  REQUIRE(saved.type_index == kTVMFFIBytes);
  TVMFFIAny loaded = call_global("runtime.LoadParams", &saved, 1);
  CHECK_OK(TVMFFIObjectDecRef(saved.v_obj));
  kv[0] = loaded;
  kv[1].type_index = kTVMFFIRawStr;
  kv[1].v_c_str = "w";
  TVMFFIAny w = call_global("runtime.MapGetItem", kv, 2);
  REQUIRE(w.type_index == kTVMFFITensor);
  const DLTensor* back = (const DLTensor*)cell_of(w.v_obj);
  CHECK(back->shape[0] == 4 && ((const float*)back->data)[3] == 1.5f && back->data != t->data);
  CHECK_OK(TVMFFIObjectDecRef(w.v_obj));
  CHECK_OK(TVMFFIObjectDecRef(loaded.v_obj));
  /* exported through DLPack: the foreign tensor's own memory, kept alive until the deleter
   * (in the checked-handle mode too: a readable header without the runtime's mark is taken as
   * a foreign object) */
  DLManagedTensorVersioned* out = NULL;
  CHECK_OK(TVMFFITensorToDLPackVersioned(&t->header, &out));
  REQUIRE(out != NULL);
  CHECK(out->dl_tensor.data == t->data && out->dl_tensor.shape[0] == 4 && strong_count(t) == 2);
  out->deleter(out);
  CHECK(foreign_tensors_freed == 0 && strong_count(t) == 1); /* the runtime let go of it */
  /* its maker releases it as tvm-ffi's headers do, inline (TVMFFIObjectDecRef would too, but
   * the checked-handle mode this test runs under refuses objects the runtime did not make) */
  if (__atomic_fetch_sub(&t->header.combined_ref_count, 1, __ATOMIC_ACQ_REL) == (((uint64_t)1 << 32) | 1)) {
    t->header.deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
  }
  CHECK(foreign_tensors_freed == 1);
}

/* ---- ffi.Array and the sentinel objects ---------------------------------------------------- */

static void arrays(void) {
  TVMFFIAny items[3];
  memset(items, 0, sizeof items);
  items[0] = int_any(7);
  items[1].type_index = kTVMFFIRawStr;
  items[1].v_c_str = "a string longer than seven";
  items[2].type_index = kTVMFFIFloat;
  items[2].v_float64 = 2.5;
  TVMFFIAny arr = call_global("ffi.Array", items, 3);
  REQUIRE(arr.type_index == kTVMFFIArray);
  /* the sequence cell, read inline as tvm-ffi's headers do */
  const TVMFFISeqCell* seq = (const TVMFFISeqCell*)cell_of(arr.v_obj);
  REQUIRE(seq->size == 3 && seq->capacity >= 3);
  const TVMFFIAny* e = (const TVMFFIAny*)seq->data;
  CHECK(e[0].type_index == kTVMFFIInt && e[0].v_int64 == 7);
  CHECK(e[1].type_index == kTVMFFIStr && bytes_are(*(const TVMFFIByteArray*)cell_of(e[1].v_obj), items[1].v_c_str));
  CHECK(e[2].type_index == kTVMFFIFloat && e[2].v_float64 == 2.5);

  TVMFFIAny get[2] = {arr, int_any(1)};
  TVMFFIAny second = call_global("ffi.ArrayGetItem", get, 2);
  CHECK(second.type_index == kTVMFFIStr && second.v_obj == e[1].v_obj);
  CHECK_OK(TVMFFIObjectDecRef(second.v_obj));
  TVMFFIAny size = call_global("ffi.ArraySize", &arr, 1);
  CHECK(size.type_index == kTVMFFIInt && size.v_int64 == 3);
  get[1] = int_any(7);
  TVMFFIAny has = call_global("ffi.ArrayContains", get, 2);
  CHECK(has.type_index == kTVMFFIBool && has.v_int64 == 1);
  get[1] = int_any(8);
  has = call_global("ffi.ArrayContains", get, 2);
  CHECK(has.type_index == kTVMFFIBool && has.v_int64 == 0);
  CHECK_OK(TVMFFIObjectDecRef(arr.v_obj));

  /* the global names, through the functor tvm-ffi's frontends list them with */
  TVMFFIAny lister = call_global("ffi.FunctionListGlobalNamesFunctor", NULL, 0);
  REQUIRE(lister.type_index == kTVMFFIFunction);
  TVMFFIAny minus_one = int_any(-1), count = {0};
  REQUIRE_OK(TVMFFIFunctionCall(lister.v_obj, &minus_one, 1, &count));
  int found = 0;
  for (int64_t i = 0; i < count.v_int64; i++) {
    TVMFFIAny idx = int_any(i), n = {0};
    if (!CHECK_OK(TVMFFIFunctionCall(lister.v_obj, &idx, 1, &n))) break;
    TVMFFIByteArray text = n.type_index == kTVMFFISmallStr ? (TVMFFIByteArray){n.v_bytes, n.small_str_len}
                                                           : *(const TVMFFIByteArray*)cell_of(n.v_obj);
    found += bytes_are(text, "ffi.ArraySize");
    if (n.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(n.v_obj);
  }
  CHECK(count.v_int64 > 50 && found == 1);
  TVMFFIObjectDecRef(lister.v_obj);

  TVMFFIAny k1 = call_global("ffi.GetKwargsObject", NULL, 0), k2 = call_global("ffi.GetKwargsObject", NULL, 0);
  TVMFFIAny missing = call_global("ffi.GetInvalidObject", NULL, 0);
  CHECK(k1.type_index == kTVMFFIObject && k1.v_obj == k2.v_obj && missing.v_obj != k1.v_obj);
  TVMFFIObjectDecRef(k1.v_obj);
  TVMFFIObjectDecRef(k2.v_obj);
  TVMFFIObjectDecRef(missing.v_obj);
}

/* ---- the type registry and reflection ----------------------------------------------------- */

static int get_int64(void* field, TVMFFIAny* result) {
  *result = int_any(*(int64_t*)field);
  return 0;
}

static void types_and_reflection(void) {
  TVMFFIByteArray key = bytes_of("test.ffi.Point"), sub_key = bytes_of("test.ffi.Point3");
  int32_t point = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 2, 1, kTVMFFIObject);
  REQUIRE(point >= kTVMFFIDynObjectBegin);
  int32_t sub = TVMFFITypeGetOrAllocIndex(&sub_key, -1, 2, 0, 1, point);
  CHECK(sub == point + 1); /* a slot the parent kept for its subtypes */
  CHECK(TVMFFITypeGetOrAllocIndex(&key, -1, 1, 2, 1, kTVMFFIObject) == point);
  TVMFFIByteArray unknown = bytes_of("test.ffi.NotYet");
  CHECK(TVMFFITypeGetOrAllocIndex(&unknown, -1, 1, 0, 1, -2) == -2); /* a lookup only */
  unsigned legacy_index = 0; /* TVM 0.18's API numbers a registered type the same */
  CHECK_OK(TVMObjectTypeKey2Index("test.ffi.Point3", &legacy_index));
  CHECK((int32_t)legacy_index == sub);

  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(sub);
  REQUIRE(info != NULL);
  CHECK(info->type_index == sub && info->type_depth == 2 && bytes_are(info->type_key, "test.ffi.Point3"));
  CHECK(info->type_ancestors[0]->type_index == kTVMFFIObject);
  CHECK(info->type_ancestors[1]->type_index == point && bytes_are(info->type_ancestors[1]->type_key, "test.ffi.Point"));
  CHECK(TVMFFIGetTypeInfo(-5) == NULL);

  TVMFFIFieldInfo field;
  memset(&field, 0, sizeof field);
  field.name = bytes_of("x");
  field.doc = bytes_of("the x coordinate");
  field.size = 8;
  field.alignment = 8;
  field.offset = 24;
  field.getter = get_int64;
  field.flags = kTVMFFIFieldFlagBitMaskHasDefault;
  field.default_value_or_factory = int_any(7);
  field.field_static_type_index = kTVMFFIInt;
  CHECK_OK(TVMFFITypeRegisterField(point, &field));
  CHECK(TVMFFITypeRegisterField(point, &field) == -1); /* the same name twice */
  info = TVMFFIGetTypeInfo(point);
  REQUIRE(info->num_fields == 1);
  CHECK(bytes_are(info->fields[0].name, "x") && info->fields[0].default_value_or_factory.v_int64 == 7);
  int64_t x = 41;
  TVMFFIAny got;
  CHECK(info->fields[0].getter(&x, &got) == 0 && got.v_int64 == 41);

  static int context = 41;
  TVMFFIObjectHandle norm = NULL;
  REQUIRE_OK(TVMFFIFunctionCreate(&context, add, NULL, &norm));
  TVMFFIMethodInfo method;
  memset(&method, 0, sizeof method);
  method.name = bytes_of("test.ffi.Point.norm");
  method.method.type_index = kTVMFFIFunction;
  method.method.v_obj = (TVMFFIObject*)norm;
  CHECK_OK(TVMFFITypeRegisterMethod(point, &method));
  CHECK(strong_count(norm) == 2); /* the type's information holds it */
  info = TVMFFIGetTypeInfo(point);
  CHECK(info->num_methods == 1 && info->methods[0].method.v_obj == (TVMFFIObject*)norm);
  CHECK_OK(TVMFFIFunctionSetGlobalFromMethodInfo(&method, 0));
  TVMFFIObjectHandle g = NULL;
  CHECK_OK(TVMFFIFunctionGetGlobal(&method.name, &g));
  CHECK(g == norm);
  CHECK_OK(TVMFFIObjectDecRef(g));
  CHECK_OK(TVMFFIObjectDecRef(norm));

  TVMFFITypeMetadata meta = {bytes_of("a point"), NULL, 32, kTVMFFISEqHashKindTreeNode};
  CHECK_OK(TVMFFITypeRegisterMetadata(point, &meta));
  CHECK(TVMFFITypeRegisterMetadata(point, &meta) == -1);
  CHECK(TVMFFIGetTypeInfo(point)->metadata->total_size == 32);

  /* a type attribute column, read by type index */
  TVMFFIByteArray attr = bytes_of("__test_repr__");
  TVMFFIAny repr;
  CHECK_OK(TVMFFIStringFromByteArray(&key, &repr)); /* an ffi.String: the column holds it */
  CHECK(TVMFFIGetTypeAttrColumn(&attr) == NULL);
  TVMFFIByteArray builtin = bytes_of("__ffi_repr__"); /* a column tvm-ffi's library starts with */
  const TVMFFITypeAttrColumn* repr_column = TVMFFIGetTypeAttrColumn(&builtin);
  CHECK(repr_column != NULL && repr_column->size >= 0);
  CHECK_OK(TVMFFITypeRegisterAttr(sub, &attr, &repr));
  CHECK(TVMFFITypeRegisterAttr(sub, &attr, &repr) == -1);
  const TVMFFITypeAttrColumn* column = TVMFFIGetTypeAttrColumn(&attr);
  REQUIRE(column != NULL && column->size > sub - column->begin_index);
  const TVMFFIAny* v = &column->data[sub - column->begin_index];
  CHECK(v->type_index == kTVMFFIStr && v->v_obj == repr.v_obj && strong_count(repr.v_obj) == 2);
  CHECK(column->data[point - column->begin_index].type_index == kTVMFFINone);
  CHECK_OK(TVMFFIObjectDecRef(repr.v_obj));
}

/* ---- the environment, opaque objects, big integers ---------------------------------------- */

static int opaque_freed = 0;
static void free_opaque(void* handle) { opaque_freed += *(int*)handle; }

static int signals_checked = 0, gil_held = 0;
static int check_signals(void) {
  signals_checked++;
  return gil_held ? 0 : -1; /* checked with the GIL held, or it "raises" */
}
static void* gil_ensure(void) {
  gil_held = 1;
  return &gil_held;
}
static void gil_release(void* state) {
  CHECK(state == &gil_held);
  gil_held = 0;
}

static int alloc_calls = 0;
static void alloc_deleter(DLManagedTensorVersioned* self) {
  free(self->dl_tensor.data);
  free(self->dl_tensor.shape);
  free(self);
}
/* a DLPack allocator a framework would install */
static int framework_alloc(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                           void (*set_error)(void*, const char*, const char*)) {
  alloc_calls++;
  if (prototype->ndim > 4) {
    set_error(error_ctx, "ValueError", "framework_alloc: at most 4 dims");
    return -1;
  }
  DLManagedTensorVersioned* m = calloc(1, sizeof *m);
  REQUIRE(m != NULL);
  m->version.major = DLPACK_MAJOR_VERSION;
  m->deleter = alloc_deleter;
  m->dl_tensor = *prototype;
  m->dl_tensor.shape = calloc((size_t)prototype->ndim + 1, sizeof(int64_t));
  memcpy(m->dl_tensor.shape, prototype->shape, (size_t)prototype->ndim * sizeof(int64_t));
  m->dl_tensor.strides = NULL;
  m->dl_tensor.byte_offset = 0;
  m->dl_tensor.data = aligned_alloc(64, 64 * 16);
  *out = m;
  return 0;
}

static void environment(void) {
  /* streams: per device, per thread */
  void* old = (void*)1;
  CHECK(TVMFFIEnvGetStream(kDLCUDA, 0) == NULL);
  CHECK_OK(TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x1234, &old));
  CHECK(old == NULL && TVMFFIEnvGetStream(kDLCUDA, 0) == (void*)0x1234 && TVMFFIEnvGetStream(kDLCUDA, 1) == NULL);
  CHECK_OK(TVMFFIEnvSetStream(kDLCUDA, 0, NULL, &old));
  CHECK(old == (void*)0x1234);

  /* signals: none registered is fine; registered, checked holding the frontend's GIL */
  CHECK(TVMFFIEnvCheckSignals() == 0);
  CHECK(TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void*)gil_ensure) == 0);
  CHECK(TVMFFIEnvRegisterCAPI("PyGILState_Release", (void*)gil_release) == 0);
  CHECK(TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)check_signals) == 0);
  CHECK(TVMFFIEnvCheckSignals() == 0 && signals_checked == 1 && gil_held == 0);
  CHECK(TVMFFIEnvRegisterCAPI("Py_NoSuchThing", NULL) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "Unknown env API Py_NoSuchThing");

  /* tensors from the framework's allocator */
  int64_t shape[2] = {4, 8};
  DLTensor proto;
  memset(&proto, 0, sizeof proto);
  proto.ndim = 2;
  proto.shape = shape;
  proto.dtype.code = kDLFloat;
  proto.dtype.bits = 32;
  proto.dtype.lanes = 1;
  proto.device.device_type = kDLCPU;
  TVMFFIObjectHandle t = NULL;
  CHECK(TVMFFIEnvTensorAlloc(&proto, &t) == -1); /* none set yet */
  CHECK_OK(TVMFFIEnvSetDLPackManagedTensorAllocator(framework_alloc, 0, NULL));
  CHECK(TVMFFIEnvGetDLPackManagedTensorAllocator() == framework_alloc);
  REQUIRE_OK(TVMFFIEnvTensorAlloc(&proto, &t));
  CHECK(type_of(t) == kTVMFFITensor && ((DLTensor*)cell_of(t))->shape[1] == 8 && alloc_calls == 1);
  CHECK_OK(TVMFFIObjectDecRef(t));
  proto.ndim = 5;
  int64_t five[5] = {1, 1, 1, 1, 1};
  proto.shape = five;
  CHECK(TVMFFIEnvTensorAlloc(&proto, &t) == -1);
  CHECK_CONTAINS(TVMGetLastError(), "ValueError: framework_alloc: at most 4 dims");
  CHECK_OK(TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, NULL));

  /* an opaque object releases its handle with it */
  static int weight = 7;
  TVMFFIObjectHandle o = NULL;
  REQUIRE_OK(TVMFFIObjectCreateOpaque(&weight, kTVMFFIOpaquePyObject, free_opaque, &o));
  CHECK(type_of(o) == kTVMFFIOpaquePyObject && ((TVMFFIOpaqueObjectCell*)cell_of(o))->handle == &weight);
  CHECK_OK(TVMFFIObjectDecRef(o));
  CHECK(opaque_freed == 7);

  /* big integers: one word is an int, more an ffi.BigInt, redundant sign words dropped */
  int64_t words[3] = {5, 0, 0};
  TVMFFIByteArray content = {(const char*)words, sizeof words};
  TVMFFIAny v;
  CHECK_OK(TVMFFIBigIntFromByteArray(&content, &v));
  CHECK(v.type_index == kTVMFFIInt && v.v_int64 == 5);
  words[1] = 3;
  CHECK_OK(TVMFFIBigIntFromByteArray(&content, &v));
  REQUIRE(v.type_index == kTVMFFIBigInt);
  TVMFFIByteArray back = TVMFFIBigIntGetContentByteArray(&v);
  CHECK(back.size == 16 && memcmp(back.data, words, 16) == 0);
  CHECK_OK(TVMFFIObjectDecRef(v.v_obj));
  content.size = 5;
  CHECK(TVMFFIBigIntFromByteArray(&content, &v) == -1);

  /* the allocator slot a frontend fills is reported back */
  TVMFFICustomAllocator* before = TVMFFIGetCustomAllocator();
  static TVMFFICustomAllocator mine = {NULL, NULL};
  CHECK_OK(TVMFFISetCustomAllocator(&mine));
  CHECK(TVMFFIGetCustomAllocator() == &mine);
  CHECK_OK(TVMFFISetCustomAllocator(before));
}

/* ---- version and init-once ---------------------------------------------------------------- */

static int inits = 0;
static int make_handle(void** out) {
  inits++;
  *out = &inits;
  return 0;
}
static int drop_handle(void* h) { return h == &inits ? 0 : -1; }

static void version_and_init_once(void) {
  TVMFFIVersion v = {0, 0, 0};
  TVMFFIGetVersion(&v);
  CHECK(v.major == TVM_FFI_VERSION_MAJOR && v.minor == TVM_FFI_VERSION_MINOR);
  void* handle = NULL;
  CHECK_OK(TVMFFIHandleInitOnce(&handle, make_handle));
  CHECK_OK(TVMFFIHandleInitOnce(&handle, make_handle));
  CHECK(handle == &inits && inits == 1);
  CHECK_OK(TVMFFIHandleDeinitOnce(&handle, drop_handle));
  CHECK(handle == NULL);
}

int main(void) {
  functions();
  strings();
  shapes_and_tensors();
  threads();
  errors();
  dlpack();
  foreign_tensor();
  arrays();
  types_and_reflection();
  environment();
  version_and_init_once();
  return tvm_test_summary("test_tvm_ffi_abi");
}
