/*
 * Object layouts as TVM 0.18's headers define them. Code compiled against TVM's headers (its C++
 * containers' inline accessors, its Rust bindings) reads the fields of String, ShapeTuple, Array
 * and NDArray objects directly instead of calling the runtime, so those fields must be where
 * TVM puts them. The structs below are TVM's layouts (include/tvm/runtime/object.h, ndarray.h,
 * container/string.h, shape_tuple.h, array.h) written out in C:
 *
 *   StringObj      {Object; const char* data; uint64_t size}     data NUL-terminated
 *   ShapeTupleObj  {Object; const int64_t* data; uint64_t size}
 *   ArrayNode      {Object; int64_t size_; int64_t capacity_}    then size_ Object* items inline
 *   NDArray        {Object; DLTensor dl_tensor; void* manager_ctx; ShapeTupleObj* shape_}
 *
 * Objects made by the runtime are read through them, and objects made here (with their own
 * deleter, as foreign code makes them) are handed to the runtime, which must read them the same
 * way and release them through that deleter (in the default mode: the checked-handle mode refuses
 * objects the runtime did not make).
 */
#include <stddef.h>
#include <stdint.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

typedef struct ObjectHeader {
  uint32_t type_index;
  int32_t ref_counter;
  void (*deleter)(struct ObjectHeader* self);
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

_Static_assert(sizeof(ObjectHeader) == 16, "object header");
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

enum { kString = 3, kArray = 4, kMap = 5, kShapeTuple = 6 };

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
  return obj != NULL && obj->type_index == kString && s->data != NULL && s->size == n &&
         memcmp(s->data, want, n) == 0 && s->data[n] == '\0';
}

/* ---- objects made here, as foreign code makes them ------------------------------------------ */

static int foreign_freed = 0;
static void free_foreign(ObjectHeader* self) {
  foreign_freed++;
  free(self);
}

static ObjectHeader* foreign_string(const char* data, uint64_t size) {
  StringObj* s = calloc(1, sizeof *s);
  REQUIRE(s != NULL);
  *s = (StringObj){{kString, 1, free_foreign}, data, size};
  return &s->header;
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
    if (s) CHECK(s->ref_counter == 1);
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
  CHECK(map != NULL && map->type_index == kMap);
  CHECK(s->ref_counter == 2);
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
  CHECK(obj->type_index == kShapeTuple);
  CHECK(t->size == 3 && t->data != NULL);
  if (t->size == 3 && t->data) CHECK(t->data[0] == 2 && t->data[1] == -3 && t->data[2] == 1LL << 40);
  TVMObjectFree(obj);

  obj = call_object("runtime.ShapeTuple", a, c, 0);
  t = (const ShapeTupleObj*)obj;
  CHECK(t != NULL && t->size == 0 && t->data != NULL); /* an address C may hold, even when empty */
  TVMObjectFree(obj);

  /* One made here is read by the runtime through the same fields. */
  static const int64_t dims[4] = {7, 8, 9, 10};
  ShapeTupleObj mine = {{kShapeTuple, 1, NULL}, dims, 4};
  CHECK(call_int("runtime.GetShapeTupleSize", &mine.header, 0, 1) == 4);
  CHECK(call_int("runtime.GetShapeTupleElem", &mine.header, 2, 2) == 9);
  CHECK(mine.header.ref_counter == 1);
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
  CHECK(arr->type_index == kArray);
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
  CHECK(items->type_index == kArray && node->size == 4);
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
  ArrayNode* mine = calloc(1, sizeof *mine + 3 * sizeof(ObjectHeader*));
  REQUIRE(mine != NULL);
  mine->header = (ObjectHeader){kArray, 1, free_foreign};
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
  CHECK(mine->items[0]->ref_counter == 1 && mine->items[2]->ref_counter == 1);
  free_foreign(mine->items[0]);
  free_foreign(mine->items[2]);
  free_foreign(&mine->header);
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
    CHECK(st->header.type_index == kShapeTuple && st->size == (uint64_t)ndim);
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
