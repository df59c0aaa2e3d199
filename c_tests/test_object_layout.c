/*
 * Object layouts as code compiled against TVM 0.18's headers reads them, over this runtime's one
 * object model (docs/ARCHITECTURE.md, "Two ABIs, one object model"). Every object is a tvm-ffi
 * object (24-byte header: combined reference count, type index, deleter taking flags), and a TVM
 * 0.18 handle points 8 bytes into it, where TVM 0.18's 16-byte header lines up: its type_index
 * and deleter fields fall on tvm-ffi's, and its payload on tvm-ffi's payload. So the payload
 * fields 0.18 code reads directly stay where TVM 0.18 put them (include/tvm/runtime/object.h,
 * ndarray.h, container/string.h, shape_tuple.h, array.h):
 *
 *   StringObj      {Object; const char* data; uint64_t size}     data NUL-terminated
 *   ShapeTupleObj  {Object; const int64_t* data; uint64_t size}
 *   ArrayNode      {Object; int64_t size_; int64_t capacity_}    then size_ Object* items inline
 *   NDArray        {Object; DLTensor dl_tensor; void* manager_ctx; ShapeTupleObj* shape_}
 *
 * What differs from TVM 0.18: the header's type_index holds tvm-ffi's index (TVMObjectGetTypeIndex
 * gives 0.18's), and the reference count is tvm-ffi's, 8 bytes before the handle (0.18's counter
 * field is tvm-ffi's padding). Objects made here are built as foreign tvm-ffi code builds them
 * (tvm-ffi header, deleter taking flags) and handed over as 0.18 handles; the runtime reads them
 * through the same fields and releases them through that deleter (in the default mode: the
 * checked-handle mode refuses objects the runtime did not make).
 */
#include <stddef.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

/* tvm-ffi's TVMFFIObject, which every object starts with. */
typedef struct {
  uint64_t combined_ref_count; /* strong count in the low 32 bits, weak in the high 32 */
  int32_t type_index;
  uint32_t padding;
  void (*deleter)(void* self, int flags);
} FFIHeader;

/* TVM 0.18's view of the same header, 8 bytes in: what a 0.18 handle points to. */
typedef struct ObjectHeader {
  uint32_t type_index; /* tvm-ffi's index */
  uint32_t ffi_padding;
  void (*deleter)(void* self, int flags);
} ObjectHeader;

typedef struct {
  ObjectHeader header;
  const char* data;
  uint64_t size;
} StringObj;

typedef struct {
  ObjectHeader header;
  const int64_t* data;
  uint64_t size;
} ShapeTupleObj;

typedef struct {
  ObjectHeader header;
  int64_t size;
  int64_t capacity;
  ObjectHeader* items[];
} ArrayNode;

typedef struct {
  ObjectHeader header;
  DLTensor dl_tensor;
  void* manager_ctx;
  ShapeTupleObj* shape;
} NDArrayContainer;

_Static_assert(sizeof(FFIHeader) == 24, "tvm-ffi object header");
_Static_assert(sizeof(ObjectHeader) == 16, "TVM 0.18's object header");
_Static_assert(offsetof(StringObj, data) == 16 && offsetof(StringObj, size) == 24, "StringObj");
_Static_assert(offsetof(ShapeTupleObj, data) == 16 && offsetof(ShapeTupleObj, size) == 24,
               "ShapeTupleObj");
_Static_assert(offsetof(ArrayNode, size) == 16 && offsetof(ArrayNode, capacity) == 24 &&
                   offsetof(ArrayNode, items) == 32,
               "ArrayNode");
_Static_assert(offsetof(NDArrayContainer, dl_tensor) == 16 &&
                   offsetof(NDArrayContainer, manager_ctx) == 64 &&
                   offsetof(NDArrayContainer, shape) == 72,
               "NDArray container");

/* TVM 0.18's type indices, and tvm-ffi's for the same types (what the header holds). */
enum { kString = 3, kArray = 4, kMap = 5, kShapeTuple = 6 };
enum { kFFIString = 65, kFFIShape = 69, kLegacyArray = 128, kLegacyMap = 129 };

static FFIHeader* ffi_header(const ObjectHeader* h) { return (FFIHeader*)((char*)h - 8); }
static int32_t strong_count(const ObjectHeader* h) {
  return (int32_t)(ffi_header(h)->combined_ref_count & 0xffffffffu);
}
/* TVM 0.18's type index of an object, as its C API gives it. */
static unsigned type_of(ObjectHeader* h) {
  unsigned t = 0;
  return CHECK_OK(TVMObjectGetTypeIndex(h, &t)) ? t : 9999u;
}

/* ---- calling globals ------------------------------------------------------------------------ */

static TVMValue call(const char* name, TVMValue* args, int* codes, int n, int* out_code) {
  TVMFunctionHandle f = NULL;
  TVMValue rv;
  rv.v_handle = NULL;
  *out_code = -1;
  if (!CHECK_OK(TVMFuncGetGlobal(name, &f)) || !CHECK(f != NULL)) return rv;
  if (!CHECK_OK(TVMFuncCall(f, args, codes, n, &rv, out_code))) *out_code = -1;
  TVMFuncFree(f);
  return rv;
}

/* An object returned by `name`, NULL (and a failed check) for anything else. */
static ObjectHeader* call_object(const char* name, TVMValue* args, int* codes, int n) {
  int code = -1;
  TVMValue rv = call(name, args, codes, n, &code);
  return CHECK(code == kTVMObjectHandle) ? (ObjectHeader*)rv.v_handle : NULL;
}

static int64_t call_int(const char* name, ObjectHeader* obj, int64_t i, int n) {
  TVMValue a[2];
  int c[2] = {kTVMObjectHandle, kTVMArgInt}, code = -1;
  a[0].v_handle = obj;
  a[1].v_int64 = i;
  TVMValue rv = call(name, a, c, n, &code);
  return CHECK(code == kTVMArgInt) ? rv.v_int64 : -1;
}

static int string_is(const ObjectHeader* obj, const char* want) {
  const StringObj* s = (const StringObj*)obj;
  size_t n = strlen(want);
  return obj != NULL && obj->type_index == kFFIString && s->data != NULL && s->size == n &&
         memcmp(s->data, want, n) == 0 && s->data[n] == '\0';
}

/* ---- objects made here, as foreign tvm-ffi code makes them --------------------------------- */

static int foreign_freed = 0;
static void free_foreign(void* self, int flags) {
  CHECK(flags == 3); /* strong and weak at once: no weak reference was taken */
  foreign_freed++;
  free(self);
}

/* A block of `size` bytes whose first 24 are a tvm-ffi header; returns its 0.18 handle. */
static ObjectHeader* foreign_object(size_t size, int32_t ffi_type_index) {
  FFIHeader* h = calloc(1, size);
  REQUIRE(h != NULL);
  *h = (FFIHeader){((uint64_t)1 << 32) | 1, ffi_type_index, 0, free_foreign};
  return (ObjectHeader*)((char*)h + 8);
}

static ObjectHeader* foreign_string(const char* data, uint64_t size) {
  ObjectHeader* h = foreign_object(8 + sizeof(StringObj), kFFIString);
  StringObj* s = (StringObj*)h;
  s->data = data;
  s->size = size;
  return h;
}

/* ---- the tests ------------------------------------------------------------------------------- */

static void strings_made_by_the_runtime(void) {
  const char* texts[] = {"hello", "", "a longer string, with spaces"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; ++i) {
    TVMValue a;
    int c = kTVMStr;
    a.v_str = texts[i];
    ObjectHeader* s = call_object("runtime.String", &a, &c, 1);
    if (!CHECK(string_is(s, texts[i]))) fprintf(stderr, "    string \"%s\"\n", texts[i]);
    if (s) CHECK(strong_count(s) == 1 && type_of(s) == kString);
    TVMObjectFree(s);
  }
}

static void strings_made_here(void) {
  /* Not NUL-terminated at `size`, as TVM's Rust bindings make them: only `size` bytes count. */
  foreign_freed = 0;
  ObjectHeader* s = foreign_string("keyXYZ", 3);
  TVMValue a;
  int c = kTVMObjectHandle, code = -1;
  a.v_handle = s;
  TVMValue rv = call("runtime.GetFFIString", &a, &c, 1, &code);
  CHECK(code == kTVMStr);
  if (code == kTVMStr) CHECK_STREQ(rv.v_str, "key");

  /* Stored in a runtime Map and read back: the same object, kept alive by the map. */
  TVMValue m_args[2];
  int m_codes[2] = {kTVMStr, kTVMObjectHandle};
  m_args[0].v_str = "k";
  m_args[1].v_handle = s;
  ObjectHeader* map = call_object("runtime.Map", m_args, m_codes, 2);
  CHECK(map != NULL && map->type_index == kLegacyMap && type_of(map) == kMap);
  CHECK(strong_count(s) == 2);
  m_args[0].v_handle = map;
  m_codes[0] = kTVMObjectHandle;
  m_args[1].v_str = "k";
  m_codes[1] = kTVMStr;
  ObjectHeader* got = call_object("runtime.MapGetItem", m_args, m_codes, 2);
  CHECK(got == s);
  TVMObjectFree(got);
  TVMObjectFree(s);
  CHECK(foreign_freed == 0);
  TVMObjectFree(map); /* the last reference: the runtime calls our deleter */
  CHECK(foreign_freed == 1);

  /* A NULL data pointer with a non-zero size is refused, naming the type. */
  s = foreign_string(NULL, 4);
  a.v_handle = s;
  TVMFunctionHandle f = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("runtime.GetFFIString", &f));
  CHECK_FAIL(TVMFuncCall(f, &a, &c, 1, &rv, &code), "runtime.String");
  TVMFuncFree(f);
  TVMObjectFree(s);
}

static void shape_tuples(void) {
  TVMValue a[3];
  int c[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  a[0].v_int64 = 2;
  a[1].v_int64 = -3;
  a[2].v_int64 = 1LL << 40;
  ObjectHeader* obj = call_object("runtime.ShapeTuple", a, c, 3);
  const ShapeTupleObj* t = (const ShapeTupleObj*)obj;
  REQUIRE(t != NULL);
  CHECK(obj->type_index == kFFIShape && type_of(obj) == kShapeTuple);
  CHECK(t->size == 3 && t->data != NULL);
  if (t->size == 3 && t->data) CHECK(t->data[0] == 2 && t->data[1] == -3 && t->data[2] == 1LL << 40);
  TVMObjectFree(obj);

  obj = call_object("runtime.ShapeTuple", a, c, 0);
  t = (const ShapeTupleObj*)obj;
  CHECK(t != NULL && t->size == 0 && t->data != NULL); /* an address C may hold, even when empty */
  TVMObjectFree(obj);

  /* One made here is read by the runtime through the same fields. */
  static const int64_t dims[4] = {7, 8, 9, 10};
  struct {
    FFIHeader ffi;
    const int64_t* data;
    uint64_t size;
  } mine = {{((uint64_t)1 << 32) | 1, kFFIShape, 0, NULL}, dims, 4};
  ObjectHeader* handle = (ObjectHeader*)((char*)&mine + 8);
  CHECK(call_int("runtime.GetShapeTupleSize", handle, 0, 1) == 4);
  CHECK(call_int("runtime.GetShapeTupleElem", handle, 2, 2) == 9);
  CHECK(strong_count(handle) == 1);
}

static void arrays_and_map_items(void) {
  TVMValue a[4];
  int c[4] = {kTVMStr, kTVMStr, kTVMStr, kTVMStr};
  a[0].v_str = "k1";
  a[1].v_str = "v1";
  a[2].v_str = "k2";
  a[3].v_str = "v2";
  ObjectHeader* arr = call_object("runtime.Array", a, c, 2);
  const ArrayNode* node = (const ArrayNode*)arr;
  REQUIRE(node != NULL);
  CHECK(arr->type_index == kLegacyArray && type_of(arr) == kArray);
  CHECK(node->size == 2 && node->capacity >= 2);
  if (node->size == 2) CHECK(string_is(node->items[0], "k1") && string_is(node->items[1], "v1"));
  TVMObjectFree(arr);

  ObjectHeader* map = call_object("runtime.Map", a, c, 4);
  REQUIRE(map != NULL);
  TVMValue m;
  int mc = kTVMObjectHandle;
  m.v_handle = map;
  ObjectHeader* items = call_object("runtime.MapItems", &m, &mc, 1);
  node = (const ArrayNode*)items;
  REQUIRE(node != NULL);
  CHECK(type_of(items) == kArray && node->size == 4);
  for (int64_t i = 0; i + 1 < node->size; i += 2) { /* key, value, key, value */
    const StringObj* k = (const StringObj*)node->items[i];
    int one = string_is(node->items[i], "k1") && string_is(node->items[i + 1], "v1");
    int two = string_is(node->items[i], "k2") && string_is(node->items[i + 1], "v2");
    if (!CHECK(one || two)) fprintf(stderr, "    item %lld: key %s\n", (long long)i, k->data);
  }
  CHECK(call_int("runtime.ArraySize", items, 0, 1) == 4);
  TVMObjectFree(items);
  TVMObjectFree(map);

  /* An ArrayNode made here (with a NULL item, which TVM's arrays may hold) read by the runtime. */
  foreign_freed = 0;
  ArrayNode* mine = (ArrayNode*)foreign_object(8 + sizeof(ArrayNode) + 3 * sizeof(ObjectHeader*), kLegacyArray);
  mine->size = mine->capacity = 3;
  mine->items[0] = foreign_string("first", 5);
  mine->items[1] = NULL;
  mine->items[2] = foreign_string("third!", 5);
  CHECK(call_int("runtime.ArraySize", &mine->header, 0, 1) == 3);
  TVMValue g[2];
  int gc[2] = {kTVMObjectHandle, kTVMArgInt}, code = -1;
  g[0].v_handle = mine;
  g[1].v_int64 = 2;
  ObjectHeader* third = call_object("runtime.ArrayGetItem", g, gc, 2);
  CHECK(third == mine->items[2]);
  TVMObjectFree(third);
  g[1].v_int64 = 1;
  call("runtime.ArrayGetItem", g, gc, 2, &code);
  CHECK(code == kTVMNullptr);
  CHECK(strong_count(mine->items[0]) == 1 && strong_count(mine->items[2]) == 1);
  free_foreign(ffi_header(mine->items[0]), 3);
  free_foreign(ffi_header(mine->items[2]), 3);
  free_foreign(ffi_header(&mine->header), 3);
  CHECK(foreign_freed == 3);
}

static void ndarray_shape(void) {
  int64_t shape[3] = {2, 3, 5};
  for (int ndim = 0; ndim <= 3; ndim += 3) {
    TVMArrayHandle h = NULL;
    REQUIRE_OK(TVMArrayAlloc(shape, ndim, kDLFloat, 32, 1, kDLCPU, 0, &h));
    const NDArrayContainer* nd = (const NDArrayContainer*)((char*)h - 16);
    const ShapeTupleObj* st = nd->shape;
    CHECK(&nd->dl_tensor == h);
    REQUIRE(st != NULL);
    CHECK(type_of((ObjectHeader*)st) == kShapeTuple && st->size == (uint64_t)ndim);
    CHECK(st->data == h->shape); /* dl_tensor.shape points into shape_, as in TVM */
    for (int i = 0; i < ndim; ++i) CHECK(st->data[i] == shape[i]);
    CHECK_OK(TVMArrayFree(h));
  }
}

int main(void) {
  /* The checked-handle mode (which the test harness turns on) refuses every object the runtime
   * did not make, by design; objects made here are what this program hands it, so it runs in the
   * default mode. The mode is read when the first object is made. */
  setenv("TVM_RUNTIME_CHECK_HANDLES", "0", 1);
  strings_made_by_the_runtime();
  strings_made_here();
  shape_tuples();
  arrays_and_map_items();
  ndarray_shape();
  return tvm_test_summary("test_object_layout");
}
