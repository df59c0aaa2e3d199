/*
 * TVM's graph-executor module API, reached only through packed functions
 * (TVMModGetFunction / TVMFuncCall / TVMFuncGetGlobal), as TVM's C++ and Python front ends use
 * it, on TVM 0.18's mlp model:
 *
 *   factory module (export_library output): "default"(dev), get_graph_json, get_graph_params
 *   executor module: set_input (by name or index, DLTensor* or NDArray), set_input_zero_copy,
 *     set_output_zero_copy, run, get_output (1 and 2 args), get_input, get_num_inputs,
 *     get_num_outputs, get_input_index, get_output_index, get_input_info, get_output_info,
 *     run_from_inputs, load_params, share_params, debug_get_output, run_individual, profile,
 *     profile_chrome_trace
 *   global tvm.graph_executor.create(json, lib, dev_type, dev_id)
 *   containers inspected with runtime.MapGetItem/MapSize/MapCount, runtime.ArraySize/ArrayGetItem,
 *     runtime.GetShapeTupleSize/GetShapeTupleElem, runtime.GetFFIString
 *
 * Paths come from CMake: TVM_TEST_MLP_SO, TVM_TEST_KERNELS_SO, TVM_TEST_MLP_DATA_DIR.
 */
#include <math.h>
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

static float X[16];
static float WANT[8];
static char* GRAPH_JSON;
static char* PARAMS;
static size_t PARAMS_SIZE;

/* ---- tensors --------------------------------------------------------------------------------- */

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
  memset(&x->t, 0, sizeof x->t);
  x->t.data = x->data;
  x->t.device.device_type = kDLCPU;
  x->t.ndim = ndim;
  x->t.dtype.code = kDLFloat;
  x->t.dtype.bits = 32;
  x->t.dtype.lanes = 1;
  x->t.shape = x->shape;
}

static void tensor_free(Tensor* x) { free(x->data); }

static const int64_t SHAPE_X[2] = {2, 8};
static const int64_t SHAPE_OUT[2] = {2, 4};

/* An NDArray (TVMArrayAlloc) holding `values`. */
static DLTensor* ndarray(int ndim, const int64_t* shape, const float* values) {
  DLTensor* a = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, ndim, kDLFloat, 32, 1, kDLCPU, 0, &a));
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= (size_t)shape[i];
  if (values) REQUIRE_OK(TVMArrayCopyFromBytes(a, (void*)values, n * sizeof(float)));
  return a;
}

static const float* f32(const DLTensor* t) {
  return (const float*)((const char*)t->data + t->byte_offset);
}

static int all_close(const float* got, const float* want, int n, float tol) {
  for (int i = 0; i < n; ++i) {
    if (!(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])))) {
      fprintf(stderr, "    element %d: got %.9g, want %.9g\n", i, (double)got[i], (double)want[i]);
      return 0;
    }
  }
  return 1;
}

static int shape_eq(const DLTensor* t, int ndim, const int64_t* want) {
  if (t->ndim != ndim) return 0;
  for (int i = 0; i < ndim; ++i)
    if (t->shape[i] != want[i]) return 0;
  return 1;
}

/* ---- packed calls ---------------------------------------------------------------------------- */

typedef struct {
  TVMValue v[16];
  int c[16];
  int n;
} Args;

static Args* args0(Args* a) {
  a->n = 0;
  return a;
}
static Args* arg_int(Args* a, int64_t x) {
  a->v[a->n].v_int64 = x;
  a->c[a->n++] = kTVMArgInt;
  return a;
}
static Args* arg_float(Args* a, double x) {
  a->v[a->n].v_float64 = x;
  a->c[a->n++] = kTVMArgFloat;
  return a;
}
static Args* arg_str(Args* a, const char* s) {
  a->v[a->n].v_str = s;
  a->c[a->n++] = kTVMStr;
  return a;
}
static Args* arg_handle(Args* a, void* h, int code) {
  a->v[a->n].v_handle = h;
  a->c[a->n++] = code;
  return a;
}
static Args* arg_tensor(Args* a, DLTensor* t) { return arg_handle(a, t, kTVMDLTensorHandle); }
static Args* arg_nd(Args* a, DLTensor* t) { return arg_handle(a, t, kTVMNDArrayHandle); }
static Args* arg_mod(Args* a, void* m) { return arg_handle(a, m, kTVMModuleHandle); }
static Args* arg_obj(Args* a, void* o) { return arg_handle(a, o, kTVMObjectHandle); }
static Args* arg_bytes(Args* a, TVMByteArray* b) { return arg_handle(a, b, kTVMBytes); }
static Args* arg_dev(Args* a, int type, int id) {
  a->v[a->n].v_device.device_type = (DLDeviceType)type;
  a->v[a->n].v_device.device_id = id;
  a->c[a->n++] = kDLDevice;
  return a;
}

typedef struct {
  TVMValue v;
  int code;
} Ret;

static int call(void* f, Args* a, Ret* r) {
  r->code = kTVMNullptr;
  r->v.v_handle = NULL;
  return TVMFuncCall(f, a->v, a->c, a->n, &r->v, &r->code);
}

/* A function of a module; exits when absent (the caller frees it with TVMFuncFree). */
static void* func_of(void* mod, const char* name) {
  void* f = NULL;
  REQUIRE_OK(TVMModGetFunction(mod, name, 0, &f));
  if (f == NULL) fprintf(stderr, "module has no function `%s`\n", name);
  REQUIRE(f != NULL);
  return f;
}

/* Call module function `name` once (looked up and freed around the call). */
static int mcall(void* mod, const char* name, Args* a, Ret* r) {
  void* f = func_of(mod, name);
  int rc = call(f, a, r);
  TVMFuncFree(f);
  return rc;
}

static void* G_MAP_GET, *G_MAP_SIZE, *G_MAP_COUNT, *G_ARRAY_SIZE, *G_ARRAY_GET, *G_SHAPE_SIZE,
    *G_SHAPE_ELEM, *G_FFI_STRING, *G_CREATE;

static void* global(const char* name) {
  void* f = NULL;
  REQUIRE_OK(TVMFuncGetGlobal(name, &f));
  if (f == NULL) fprintf(stderr, "no global `%s`\n", name);
  REQUIRE(f != NULL);
  return f;
}

static int64_t int_of(void* f, Args* a) {
  Ret r;
  if (!CHECK_OK(call(f, a, &r))) return -999;
  CHECK(r.code == kTVMArgInt);
  return r.v.v_int64;
}

static int64_t map_size(void* map) {
  Args a;
  return int_of(G_MAP_SIZE, arg_obj(args0(&a), map));
}

/* runtime.MapGetItem(map, key): the value and its code, or code -1 on failure. */
static Ret map_get(void* map, const char* key) {
  Args a;
  Ret r;
  if (!CHECK_OK(call(G_MAP_GET, arg_str(arg_obj(args0(&a), map), key), &r))) r.code = -1;
  return r;
}

/* Frees whatever an object-valued return holds. */
static void free_ret(Ret* r) {
  if (r->code == kTVMNDArrayHandle)
    CHECK_OK(TVMArrayFree((DLTensor*)r->v.v_handle));
  else if (r->code == kTVMObjectHandle)
    CHECK_OK(TVMObjectFree(r->v.v_handle));
  else if (r->code == kTVMModuleHandle)
    CHECK_OK(TVMModFree(r->v.v_handle));
  else if (r->code == kTVMPackedFuncHandle)
    CHECK_OK(TVMFuncFree(r->v.v_handle));
  r->code = kTVMNullptr;
}

/* Whether a ShapeTuple object equals `want`. */
static int shape_tuple_is(void* tuple, int ndim, const int64_t* want) {
  Args a;
  if (int_of(G_SHAPE_SIZE, arg_obj(args0(&a), tuple)) != ndim) return 0;
  for (int i = 0; i < ndim; ++i)
    if (int_of(G_SHAPE_ELEM, arg_int(arg_obj(args0(&a), tuple), i)) != want[i]) return 0;
  return 1;
}

/* A string value (kTVMStr, or a runtime.String object), copied into buf. */
static const char* string_value(Ret* r, char* buf, size_t cap) {
  if (r->code == kTVMStr) {
    snprintf(buf, cap, "%s", r->v.v_str);
    return buf;
  }
  if (r->code == kTVMObjectHandle) {
    Args a;
    Ret s;
    if (CHECK_OK(call(G_FFI_STRING, arg_obj(args0(&a), r->v.v_handle), &s)) && CHECK(s.code == kTVMStr)) {
      snprintf(buf, cap, "%s", s.v.v_str);
      return buf;
    }
  }
  return NULL;
}

/* ---- executor helpers ------------------------------------------------------------------------ */

static void* load_module(const char* path) {
  void* m = NULL;
  REQUIRE_OK(TVMModLoadFromFile(path, "", &m));
  REQUIRE(m != NULL);
  return m;
}

static void* create_default(void* factory) {
  Args a;
  Ret r;
  void* f = func_of(factory, "default");
  REQUIRE_OK(call(f, arg_dev(args0(&a), kDLCPU, 0), &r));
  TVMFuncFree(f);
  REQUIRE(r.code == kTVMModuleHandle);
  REQUIRE(r.v.v_handle != NULL);
  return r.v.v_handle;
}

/* set_input("x"), run, get_output(0, out) == output_0.bin */
static void run_and_check_at(void* ex, int line) {
  Tensor x, out;
  tensor_init(&x, 2, SHAPE_X, X);
  tensor_init(&out, 2, SHAPE_OUT, NULL);
  Args a;
  Ret r;
  int ok = CHECK_OK(mcall(ex, "set_input", arg_tensor(arg_str(args0(&a), "x"), &x.t), &r)) &&
           CHECK_OK(mcall(ex, "run", args0(&a), &r)) &&
           CHECK_OK(mcall(ex, "get_output", arg_tensor(arg_int(args0(&a), 0), &out.t), &r));
  if (ok && !CHECK(all_close(out.data, WANT, 8, 1e-5f)))
    fprintf(stderr, "    (run_and_check called from line %d)\n", line);
  tensor_free(&x);
  tensor_free(&out);
}
#define run_and_check(ex) run_and_check_at((ex), __LINE__)

/* The data pointer of get_input(name). */
static void* input_data(void* ex, const char* name) {
  Args a;
  Ret r;
  if (!CHECK_OK(mcall(ex, "get_input", arg_str(args0(&a), name), &r)) || !CHECK(r.code == kTVMNDArrayHandle))
    return NULL;
  void* p = ((DLTensor*)r.v.v_handle)->data;
  free_ret(&r);
  return p;
}

/* An int-returning module function. */
static int64_t mint(void* mod, const char* name, Args* a) {
  Ret r;
  if (!CHECK_OK(mcall(mod, name, a, &r))) return -999;
  CHECK(r.code == kTVMArgInt);
  return r.v.v_int64;
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_factory(void* factory) {
  Args a;
  Ret r;
  void* f = NULL;
  CHECK_OK(TVMModGetFunction(factory, "default", 1, &f));
  CHECK(f != NULL);
  TVMFuncFree(f);
  /* Unknown names give a NULL handle, not an error. */
  f = (void*)0x1;
  CHECK_OK(TVMModGetFunction(factory, "no_such_function", 0, &f));
  CHECK(f == NULL);
  f = (void*)0x1;
  CHECK_OK(TVMModGetFunction(factory, "no_such_function", 1, &f));
  CHECK(f == NULL);
  /* The kernels are the factory's import. */
  f = NULL;
  CHECK_OK(TVMModGetFunction(factory, MLP_KERNEL_0, 1, &f));
  CHECK(f != NULL);
  TVMFuncFree(f);

  /* get_graph_json is TVM's graph.json, byte for byte. */
  if (CHECK_OK(mcall(factory, "get_graph_json", args0(&a), &r)) && CHECK(r.code == kTVMStr))
    CHECK(strcmp(r.v.v_str, GRAPH_JSON) == 0);

  /* get_graph_params: a Map of the p0, p1, p2 NDArrays. */
  if (CHECK_OK(mcall(factory, "get_graph_params", args0(&a), &r)) && CHECK(r.code == kTVMObjectHandle)) {
    void* map = r.v.v_handle;
    CHECK(map_size(map) == 3);
    static const int64_t s0[] = {2, 8, 8}, s1[] = {1, 16}, s2[] = {1, 16, 4};
    const char* names[3] = {"p0", "p1", "p2"};
    const int64_t* shapes[3] = {s0, s1, s2};
    const int ndims[3] = {3, 2, 3};
    for (int i = 0; i < 3; ++i) {
      Ret p = map_get(map, names[i]);
      if (CHECK(p.code == kTVMNDArrayHandle)) {
        const DLTensor* t = (const DLTensor*)p.v.v_handle;
        CHECK(shape_eq(t, ndims[i], shapes[i]));
        CHECK(t->dtype.code == kDLFloat && t->dtype.bits == 32);
        free_ret(&p);
      }
    }
    Args c;
    Ret none;
    CHECK(int_of(G_MAP_COUNT, arg_str(arg_obj(args0(&c), map), "x")) == 0);
    CHECK(int_of(G_MAP_COUNT, arg_str(arg_obj(args0(&c), map), "p1")) == 1);
    CHECK_FAIL(call(G_MAP_GET, arg_str(arg_obj(args0(&c), map), "x"), &none), "key `x` is not in the map");
    free_ret(&r);
  }

  /* "default" takes DLDevice arguments. */
  CHECK_FAIL(mcall(factory, "default", arg_int(args0(&a), 1), &r), "expected DLDevice");
  CHECK_FAIL(mcall(factory, "default", arg_str(args0(&a), "cpu"), &r), "expected DLDevice");
  CHECK_FAIL(mcall(factory, "default", args0(&a), &r), "device");
  /* An executor from "default" runs with the factory's weights. */
  void* ex = create_default(factory);
  run_and_check(ex);
  CHECK_OK(TVMModFree(ex));
}

static void test_executor_functions(void* factory) {
  void* ex = create_default(factory);
  Args a;
  Ret r;

  CHECK(mint(ex, "get_num_inputs", args0(&a)) == 4);
  CHECK(mint(ex, "get_num_outputs", args0(&a)) == 1);
  CHECK(mint(ex, "get_input_index", arg_str(args0(&a), "x")) == 0);
  CHECK(mint(ex, "get_input_index", arg_str(args0(&a), "p0")) == 1);
  CHECK(mint(ex, "get_input_index", arg_str(args0(&a), "p2")) == 3);
  CHECK(mint(ex, "get_input_index", arg_str(args0(&a), "nope")) == -1);
  CHECK(mint(ex, "get_output_index", arg_str(args0(&a), MLP_OUTPUT_NAME)) == 0);
  CHECK(mint(ex, "get_output_index", arg_str(args0(&a), "nope")) == -1);

  /* set_input: by name and by index, with DLTensor* and NDArray arguments. All four give the
   * same numbers. */
  Tensor x, out;
  tensor_init(&x, 2, SHAPE_X, X);
  tensor_init(&out, 2, SHAPE_OUT, NULL);
  DLTensor* xnd = ndarray(2, SHAPE_X, X);
  for (int form = 0; form < 4; ++form) {
    args0(&a);
    if (form & 1) arg_int(&a, 0);
    else arg_str(&a, "x");
    if (form & 2) arg_nd(&a, xnd);
    else arg_tensor(&a, &x.t);
    memset(out.data, 0, 32);
    if (CHECK_OK(mcall(ex, "set_input", &a, &r)) && CHECK_OK(mcall(ex, "run", args0(&a), &r)) &&
        CHECK_OK(mcall(ex, "get_output", arg_tensor(arg_int(args0(&a), 0), &out.t), &r))) {
      if (!CHECK(all_close(out.data, WANT, 8, 1e-5f))) fprintf(stderr, "    set_input form %d\n", form);
    }
  }

  /* get_output(i) (one argument) returns an NDArray sharing the executor's output memory;
   * get_output(name) works too. */
  Ret o;
  if (CHECK_OK(mcall(ex, "get_output", arg_int(args0(&a), 0), &o)) && CHECK(o.code == kTVMNDArrayHandle)) {
    DLTensor* t = (DLTensor*)o.v.v_handle;
    CHECK(shape_eq(t, 2, SHAPE_OUT));
    CHECK(all_close(f32(t), WANT, 8, 1e-5f));
    Ret o2;
    if (CHECK_OK(mcall(ex, "get_output", arg_str(args0(&a), MLP_OUTPUT_NAME), &o2)) &&
        CHECK(o2.code == kTVMNDArrayHandle)) {
      CHECK(((DLTensor*)o2.v.v_handle)->data == t->data);
      free_ret(&o2);
    }
    /* Run on 2x: the held output array sees the new numbers. */
    float x2[16];
    for (int i = 0; i < 16; ++i) x2[i] = 2.0f * X[i];
    DLTensor* x2nd = ndarray(2, SHAPE_X, x2);
    CHECK_OK(mcall(ex, "set_input", arg_nd(arg_str(args0(&a), "x"), x2nd), &r));
    CHECK_OK(mcall(ex, "run", args0(&a), &r));
    CHECK_OK(mcall(ex, "get_output", arg_tensor(arg_int(args0(&a), 0), &out.t), &r));
    CHECK(memcmp(out.data, WANT, 32) != 0);
    CHECK(memcmp(out.data, f32(t), 32) == 0);
    /* get_input returns what was set. */
    Ret in;
    if (CHECK_OK(mcall(ex, "get_input", arg_str(args0(&a), "x"), &in)) && CHECK(in.code == kTVMNDArrayHandle)) {
      CHECK(shape_eq((DLTensor*)in.v.v_handle, 2, SHAPE_X));
      CHECK(memcmp(f32((DLTensor*)in.v.v_handle), x2, sizeof x2) == 0);
      free_ret(&in);
    }
    CHECK_OK(TVMArrayFree(x2nd));
    free_ret(&o);
  }
  /* get_input by index: a weight. */
  static const int64_t s_p0[3] = {2, 8, 8};
  if (CHECK_OK(mcall(ex, "get_input", arg_int(args0(&a), 1), &r)) && CHECK(r.code == kTVMNDArrayHandle)) {
    CHECK(shape_eq((DLTensor*)r.v.v_handle, 3, s_p0));
    free_ret(&r);
  }
  run_and_check(ex);

  /* get_input_info / get_output_info: {"shape": {name: ShapeTuple}, "dtype": {name: str}};
   * weights that came with the factory are not listed. */
  if (CHECK_OK(mcall(ex, "get_input_info", args0(&a), &r)) && CHECK(r.code == kTVMObjectHandle)) {
    void* info = r.v.v_handle;
    CHECK(map_size(info) == 2);
    Ret shapes = map_get(info, "shape");
    Ret dtypes = map_get(info, "dtype");
    if (CHECK(shapes.code == kTVMObjectHandle)) {
      CHECK(map_size(shapes.v.v_handle) == 1);
      Args c;
      CHECK(int_of(G_MAP_COUNT, arg_str(arg_obj(args0(&c), shapes.v.v_handle), "p0")) == 0);
      Ret sx = map_get(shapes.v.v_handle, "x");
      if (CHECK(sx.code == kTVMObjectHandle)) CHECK(shape_tuple_is(sx.v.v_handle, 2, SHAPE_X));
      free_ret(&sx);
    }
    if (CHECK(dtypes.code == kTVMObjectHandle)) {
      CHECK(map_size(dtypes.v.v_handle) == 1);
      Ret dx = map_get(dtypes.v.v_handle, "x");
      char buf[64];
      CHECK_STREQ(string_value(&dx, buf, sizeof buf), "float32");
      free_ret(&dx);
    }
    free_ret(&shapes);
    free_ret(&dtypes);
    free_ret(&r);
  }
  if (CHECK_OK(mcall(ex, "get_output_info", args0(&a), &r)) && CHECK(r.code == kTVMObjectHandle)) {
    void* info = r.v.v_handle;
    Ret shapes = map_get(info, "shape");
    Ret dtypes = map_get(info, "dtype");
    if (CHECK(shapes.code == kTVMObjectHandle)) {
      CHECK(map_size(shapes.v.v_handle) == 1);
      Ret so = map_get(shapes.v.v_handle, MLP_OUTPUT_NAME);
      if (CHECK(so.code == kTVMObjectHandle)) CHECK(shape_tuple_is(so.v.v_handle, 2, SHAPE_OUT));
      free_ret(&so);
    }
    if (CHECK(dtypes.code == kTVMObjectHandle)) {
      Ret d = map_get(dtypes.v.v_handle, MLP_OUTPUT_NAME);
      char buf[64];
      CHECK_STREQ(string_value(&d, buf, sizeof buf), "float32");
      free_ret(&d);
    }
    free_ret(&shapes);
    free_ret(&dtypes);
    free_ret(&r);
  }

  /* run_from_inputs(dev_type, dev_id, name_or_index, tensor, ...) -> Array of output copies. */
  if (CHECK_OK(mcall(ex, "run_from_inputs", arg_tensor(arg_str(arg_int(arg_int(args0(&a), kDLCPU), 0), "x"), &x.t), &r)) &&
      CHECK(r.code == kTVMObjectHandle)) {
    void* arr = r.v.v_handle;
    Args c;
    CHECK(int_of(G_ARRAY_SIZE, arg_obj(args0(&c), arr)) == 1);
    Ret item;
    if (CHECK_OK(call(G_ARRAY_GET, arg_int(arg_obj(args0(&c), arr), 0), &item)) &&
        CHECK(item.code == kTVMNDArrayHandle)) {
      DLTensor* t = (DLTensor*)item.v.v_handle;
      CHECK(shape_eq(t, 2, SHAPE_OUT));
      CHECK(t->device.device_type == kDLCPU);
      CHECK(all_close(f32(t), WANT, 8, 1e-5f));
      /* A copy, not the executor's output memory. */
      Ret live;
      if (CHECK_OK(mcall(ex, "get_output", arg_int(args0(&a), 0), &live))) {
        CHECK(((DLTensor*)live.v.v_handle)->data != t->data);
        free_ret(&live);
      }
      free_ret(&item);
    }
    CHECK_FAIL(call(G_ARRAY_GET, arg_int(arg_obj(args0(&c), arr), 1), &item), "array index 1 out of range");
    free_ret(&r);
  }
  /* by index, with an NDArray */
  if (CHECK_OK(mcall(ex, "run_from_inputs", arg_nd(arg_int(arg_int(arg_int(args0(&a), kDLCPU), 0), 0), xnd), &r)) &&
      CHECK(r.code == kTVMObjectHandle)) {
    Args c;
    Ret item;
    if (CHECK_OK(call(G_ARRAY_GET, arg_int(arg_obj(args0(&c), r.v.v_handle), 0), &item)) &&
        CHECK(item.code == kTVMNDArrayHandle)) {
      CHECK(all_close(f32((DLTensor*)item.v.v_handle), WANT, 8, 1e-5f));
      free_ret(&item);
    }
    free_ret(&r);
  }
  CHECK_FAIL(mcall(ex, "run_from_inputs", arg_str(arg_int(arg_int(args0(&a), kDLCPU), 0), "x"), &r),
             "run_from_inputs expects");
  run_and_check(ex);

  /* Zero-copy through the module functions. */
  {
    void* zx = create_default(factory);
    Tensor zin, zout;
    tensor_init(&zin, 2, SHAPE_X, X);
    tensor_init(&zout, 2, SHAPE_OUT, NULL);
    CHECK_OK(mcall(zx, "set_input_zero_copy", arg_tensor(arg_str(args0(&a), "x"), &zin.t), &r));
    CHECK_OK(mcall(zx, "set_output_zero_copy", arg_tensor(arg_int(args0(&a), 0), &zout.t), &r));
    CHECK_OK(mcall(zx, "run", args0(&a), &r));
    CHECK(all_close(zout.data, WANT, 8, 1e-5f));
    /* by output name; then in-place input changes are seen by the next run */
    Tensor zout2;
    tensor_init(&zout2, 2, SHAPE_OUT, NULL);
    CHECK_OK(mcall(zx, "set_output_zero_copy", arg_tensor(arg_str(args0(&a), MLP_OUTPUT_NAME), &zout2.t), &r));
    for (int i = 0; i < 16; ++i) zin.data[i] = X[i] * 2.0f;
    CHECK_OK(mcall(zx, "run", args0(&a), &r));
    CHECK(memcmp(zout2.data, WANT, 32) != 0);
    CHECK(all_close(zout.data, WANT, 8, 1e-5f)); /* the old buffer is no longer written */
    /* misaligned is rejected */
    Tensor mis;
    static const int64_t s32[1] = {32};
    tensor_init(&mis, 1, s32, NULL);
    mis.t.ndim = 2;
    mis.shape[0] = 2;
    mis.shape[1] = 8;
    mis.t.data = mis.data + 1;
    CHECK_FAIL(mcall(zx, "set_input_zero_copy", arg_tensor(arg_int(args0(&a), 0), &mis.t), &r), "64-byte aligned");
    CHECK_FAIL(mcall(zx, "set_input_zero_copy", arg_tensor(arg_str(args0(&a), "nope"), &zin.t), &r), "no input named `nope`");
    CHECK_FAIL(mcall(zx, "set_output_zero_copy", arg_tensor(arg_str(args0(&a), "nope"), &zout.t), &r), "no output named `nope`");
    tensor_free(&mis);
    memcpy(zin.data, X, sizeof X);
    CHECK_OK(mcall(zx, "run", args0(&a), &r));
    CHECK(all_close(zout2.data, WANT, 8, 1e-5f));
    CHECK_OK(TVMModFree(zx));
    tensor_free(&zin);
    tensor_free(&zout);
    tensor_free(&zout2);
  }

  /* Debug functions. */
  Ret h1, h2;
  if (CHECK_OK(mcall(ex, "debug_get_output", arg_int(args0(&a), 3), &h1)) && CHECK(h1.code == kTVMNDArrayHandle)) {
    static const int64_t s_hidden[2] = {2, 16};
    const DLTensor* t = (const DLTensor*)h1.v.v_handle;
    CHECK(shape_eq(t, 2, s_hidden));
    int nonneg = 1, positive = 0;
    for (int i = 0; i < 32; ++i) {
      nonneg &= f32(t)[i] >= 0.0f;
      positive |= f32(t)[i] > 0.0f;
    }
    CHECK(nonneg && positive); /* relu output */
    if (CHECK_OK(mcall(ex, "debug_get_output", arg_str(args0(&a), MLP_KERNEL_0), &h2)) &&
        CHECK(h2.code == kTVMNDArrayHandle)) {
      CHECK(memcmp(f32((DLTensor*)h2.v.v_handle), f32(t), 32 * sizeof(float)) == 0);
      free_ret(&h2);
    }
    free_ret(&h1);
  }
  memset(out.data, 0, 32);
  CHECK_OK(mcall(ex, "debug_get_output", arg_tensor(arg_int(args0(&a), 5), &out.t), &r));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  CHECK_FAIL(mcall(ex, "debug_get_output", arg_int(args0(&a), 99), &r), "node index 99 out of range");
  CHECK_FAIL(mcall(ex, "debug_get_output", arg_str(args0(&a), "nope"), &r), "no node named `nope`");

  /* run_individual(number, repeat, min_repeat_ms): bytes = i64 node count, then per node
   * `repeat` f64 seconds; input nodes (0, 1, 2, 4) take no time. */
  if (CHECK_OK(mcall(ex, "run_individual", arg_int(arg_int(arg_int(args0(&a), 2), 3), 0), &r)) &&
      CHECK(r.code == kTVMBytes)) {
    const TVMByteArray* b = (const TVMByteArray*)r.v.v_handle;
    if (CHECK(b->size == 8 + 6 * 3 * 8)) {
      int64_t n_nodes;
      memcpy(&n_nodes, b->data, 8);
      CHECK(n_nodes == 6);
      int zeros_ok = 1, ops_ok = 1;
      for (int node = 0; node < 6; ++node) {
        for (int rep = 0; rep < 3; ++rep) {
          double s;
          memcpy(&s, b->data + 8 + (node * 3 + rep) * 8, 8);
          if (node == 3 || node == 5) ops_ok &= isfinite(s) && s > 0.0 && s < 1.0;
          else zeros_ok &= s == 0.0;
        }
      }
      CHECK(zeros_ok);
      CHECK(ops_ok);
    }
  }
  if (CHECK_OK(mcall(ex, "profile", args0(&a), &r)) && CHECK(r.code == kTVMStr)) {
    CHECK_CONTAINS(r.v.v_str, MLP_KERNEL_0);
    CHECK_CONTAINS(r.v.v_str, MLP_KERNEL_1);
  }
  if (CHECK_OK(mcall(ex, "profile_chrome_trace", args0(&a), &r)) && CHECK(r.code == kTVMStr)) {
    CHECK_CONTAINS(r.v.v_str, "\"traceEvents\"");
    CHECK_CONTAINS(r.v.v_str, MLP_KERNEL_1);
  }
  run_and_check(ex);

  /* Arrays handed out keep their memory alive after the executor is gone. */
  Ret held_out, held_p0, params;
  CHECK_OK(mcall(ex, "get_output", arg_int(args0(&a), 0), &held_out));
  CHECK_OK(mcall(ex, "get_input", arg_str(args0(&a), "p0"), &held_p0));
  CHECK_OK(TVMModFree(ex));
  CHECK(held_out.code == kTVMNDArrayHandle && all_close(f32((DLTensor*)held_out.v.v_handle), WANT, 8, 1e-5f));
  if (CHECK_OK(mcall(factory, "get_graph_params", args0(&a), &params)) && CHECK(held_p0.code == kTVMNDArrayHandle)) {
    Ret p0 = map_get(params.v.v_handle, "p0");
    if (CHECK(p0.code == kTVMNDArrayHandle))
      CHECK(memcmp(f32((DLTensor*)p0.v.v_handle), f32((DLTensor*)held_p0.v.v_handle), 128 * sizeof(float)) == 0);
    free_ret(&p0);
    free_ret(&params);
  }
  free_ret(&held_out);
  free_ret(&held_p0);

  CHECK_OK(TVMArrayFree(xnd));
  tensor_free(&x);
  tensor_free(&out);
}

/* tvm.graph_executor.create(json, lib, 1, 0) + load_params / share_params. */
static void test_create_load_share(void* factory, void* kernels) {
  Args a;
  Ret r;
  TVMByteArray params = {PARAMS, PARAMS_SIZE};
  REQUIRE_OK(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), 0), &r));
  REQUIRE(r.code == kTVMModuleHandle);
  void* ex = r.v.v_handle;
  CHECK(mint(ex, "get_num_inputs", args0(&a)) == 4);
  /* Before load_params no input is a weight: get_input_info lists all four. */
  if (CHECK_OK(mcall(ex, "get_input_info", args0(&a), &r))) {
    Ret shapes = map_get(r.v.v_handle, "shape");
    CHECK(map_size(shapes.v.v_handle) == 4);
    free_ret(&shapes);
    free_ret(&r);
  }
  CHECK_OK(mcall(ex, "load_params", arg_bytes(args0(&a), &params), &r));
  run_and_check(ex);
  if (CHECK_OK(mcall(ex, "get_input_info", args0(&a), &r))) {
    Ret shapes = map_get(r.v.v_handle, "shape");
    CHECK(map_size(shapes.v.v_handle) == 1);
    free_ret(&shapes);
    free_ret(&r);
  }
  TVMByteArray cut = {PARAMS, PARAMS_SIZE - 3};
  CHECK_FAIL(mcall(ex, "load_params", arg_bytes(args0(&a), &cut), &r), "truncated");
  run_and_check(ex);
  CHECK_FAIL(mcall(ex, "load_params", arg_int(args0(&a), 3), &r), "expected bytes");
  run_and_check(ex);

  /* share_params: a second executor without weights uses those of the first. */
  REQUIRE_OK(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), 0), &r));
  void* ex2 = r.v.v_handle;
  CHECK_OK(mcall(ex2, "share_params", arg_bytes(arg_mod(args0(&a), ex), &params), &r));
  void* p0a = input_data(ex, "p0");
  void* p0b = input_data(ex2, "p0");
  CHECK(p0a != NULL && p0a == p0b);
  CHECK(input_data(ex, "p2") == input_data(ex2, "p2"));
  CHECK(input_data(ex, "x") != input_data(ex2, "x"));
  run_and_check(ex2);
  /* Writing a shared weight in one gives it a private copy: the other is unaffected. */
  static const int64_t s_p0[3] = {2, 8, 8};
  float zeros[128];
  memset(zeros, 0, sizeof zeros);
  Tensor z;
  tensor_init(&z, 3, s_p0, zeros);
  CHECK_OK(mcall(ex2, "set_input", arg_tensor(arg_str(args0(&a), "p0"), &z.t), &r));
  CHECK(input_data(ex2, "p0") != p0a);
  run_and_check(ex);
  Tensor x, out;
  tensor_init(&x, 2, SHAPE_X, X);
  tensor_init(&out, 2, SHAPE_OUT, NULL);
  CHECK_OK(mcall(ex2, "set_input", arg_tensor(arg_str(args0(&a), "x"), &x.t), &r));
  CHECK_OK(mcall(ex2, "run", args0(&a), &r));
  CHECK_OK(mcall(ex2, "get_output", arg_tensor(arg_int(args0(&a), 0), &out.t), &r));
  CHECK(memcmp(out.data, WANT, 32) != 0);
  tensor_free(&z);
  /* share_params with itself is a no-op; with a non-executor it is an error. */
  CHECK_OK(mcall(ex, "share_params", arg_bytes(arg_mod(args0(&a), ex), &params), &r));
  run_and_check(ex);
  CHECK_FAIL(mcall(ex, "share_params", arg_bytes(arg_mod(args0(&a), factory), &params), &r), "not a graph executor");
  CHECK_FAIL(mcall(ex, "share_params", arg_bytes(arg_int(args0(&a), 0), &params), &r), "argument 0");
  /* Between an executor of the factory and one from create: the same graph. */
  void* fx = create_default(factory);
  REQUIRE_OK(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), 0), &r));
  void* ex3 = r.v.v_handle;
  CHECK_OK(mcall(ex3, "share_params", arg_bytes(arg_mod(args0(&a), fx), &params), &r));
  CHECK(input_data(ex3, "p1") == input_data(fx, "p1"));
  run_and_check(ex3);
  CHECK_OK(TVMModFree(ex3));
  CHECK_OK(TVMModFree(fx));
  run_and_check(ex);

  /* The weights stay alive with the executor that borrowed them. */
  void* ex4;
  REQUIRE_OK(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), 0), &r));
  ex4 = r.v.v_handle;
  CHECK_OK(mcall(ex4, "share_params", arg_bytes(arg_mod(args0(&a), ex), &params), &r));
  CHECK_OK(TVMModFree(ex));
  run_and_check(ex4);
  CHECK_OK(TVMModFree(ex4));
  CHECK_OK(TVMModFree(ex2));
  tensor_free(&x);
  tensor_free(&out);
}

static void test_errors(void* factory, void* kernels) {
  Args a;
  Ret r;
  void* ex = create_default(factory);
  Tensor x, out;
  tensor_init(&x, 2, SHAPE_X, X);
  tensor_init(&out, 2, SHAPE_OUT, NULL);

  /* Unknown function names: a NULL handle, and success. */
  void* f = (void*)0x1;
  CHECK_OK(TVMModGetFunction(ex, "no_such_function", 0, &f));
  CHECK(f == NULL);
  f = (void*)0x1;
  CHECK_OK(TVMFuncGetGlobal("tvm.graph_executor.no_such_function", &f));
  CHECK(f == NULL);

  /* Wrong argument types. */
  CHECK_FAIL(mcall(ex, "set_input", arg_int(arg_str(args0(&a), "x"), 3), &r), "expected DLTensor*");
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_float(args0(&a), 1.5), &x.t), &r), "expected int");
  CHECK_FAIL(mcall(ex, "set_input", arg_str(args0(&a), "x"), &r), "argument 1 requested but only 1 given");
  CHECK_FAIL(mcall(ex, "get_output", arg_float(args0(&a), 0.0), &r), "expected int");
  CHECK_FAIL(mcall(ex, "get_input_index", arg_int(args0(&a), 0), &r), "expected str");
  CHECK_FAIL(mcall(ex, "run_individual", arg_str(args0(&a), "2"), &r), "expected int");
  run_and_check(ex);

  /* Wrong shapes, dtypes, names and indices. */
  Tensor wrong;
  static const int64_t s82[2] = {8, 2};
  tensor_init(&wrong, 2, s82, X);
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_str(args0(&a), "x"), &wrong.t), &r),
             "expected shape [2, 8], got [8, 2]");
  wrong.shape[0] = 2;
  wrong.shape[1] = 8;
  wrong.t.dtype.code = kDLInt;
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_int(args0(&a), 0), &wrong.t), &r),
             "expected dtype float32, got int32");
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_str(args0(&a), "y"), &x.t), &r), "no input named `y`");
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_int(args0(&a), 4), &x.t), &r), "input index 4 out of range");
  CHECK_FAIL(mcall(ex, "set_input", arg_tensor(arg_int(args0(&a), -1), &x.t), &r), "input index -1 is negative");
  CHECK_FAIL(mcall(ex, "get_output", arg_int(args0(&a), 1), &r), "output index 1 out of range");
  CHECK_FAIL(mcall(ex, "get_output", arg_str(args0(&a), "nope"), &r), "no output named `nope`");
  CHECK_FAIL(mcall(ex, "get_output", arg_tensor(arg_int(args0(&a), 0), &x.t), &r), "expected shape [2, 4], got [2, 8]");
  CHECK_FAIL(mcall(ex, "get_input", arg_str(args0(&a), "nope"), &r), "no input named `nope`");
  CHECK_FAIL(mcall(ex, "get_input", arg_int(args0(&a), 7), &r), "input index 7 out of range");
  tensor_free(&wrong);
  run_and_check(ex);

  /* tvm.graph_executor.create: argument count and types, bad JSON, missing kernels. */
  CHECK_FAIL(call(G_CREATE, arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), &r),
             "expects at least 4 arguments, got 3");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_str(arg_str(args0(&a), GRAPH_JSON), "lib"), kDLCPU), 0), &r),
             "argument 1");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), kernels), kDLCPU), 0), kDLCPU), &r),
             "(device_type, device_id) int pairs");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_int(args0(&a), 7), kernels), kDLCPU), 0), &r), "expected str");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), "not json"), kernels), kDLCPU), 0), &r),
             "graph JSON: not valid JSON");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), "{\"nodes\": ["), kernels), kDLCPU), 0), &r),
             "graph JSON: not valid JSON");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), "[1, 2]"), kernels), kDLCPU), 0), &r),
             "top level must be an object");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), "{}"), kernels), kDLCPU), 0), &r),
             "missing `nodes`");
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), "{\"nodes\": [], \"bogus\": 1}"), kernels), kDLCPU), 0), &r),
             "unknown top-level key `bogus`");
  /* The executor module has none of the kernels. */
  CHECK_FAIL(call(G_CREATE, arg_int(arg_int(arg_mod(arg_str(args0(&a), GRAPH_JSON), ex), kDLCPU), 0), &r),
             "which the module does not provide");
  run_and_check(ex);

  /* Functions keep their module alive. */
  void* run = func_of(ex, "run");
  void* get_output = func_of(ex, "get_output");
  void* set_input = func_of(ex, "set_input");
  CHECK_OK(TVMModFree(ex));
  memset(out.data, 0, 32);
  CHECK_OK(call(set_input, arg_tensor(arg_str(args0(&a), "x"), &x.t), &r));
  CHECK_OK(call(run, args0(&a), &r));
  CHECK_OK(call(get_output, arg_tensor(arg_int(args0(&a), 0), &out.t), &r));
  CHECK(all_close(out.data, WANT, 8, 1e-5f));
  TVMFuncFree(run);
  TVMFuncFree(get_output);
  TVMFuncFree(set_input);
  tensor_free(&x);
  tensor_free(&out);
}

int main(void) {
  size_t n = 0;
  char* buf = read_data("input_x.bin", &n);
  REQUIRE(n == sizeof X);
  memcpy(X, buf, sizeof X);
  free(buf);
  buf = read_data("output_0.bin", &n);
  REQUIRE(n == sizeof WANT);
  memcpy(WANT, buf, sizeof WANT);
  free(buf);
  GRAPH_JSON = read_data("graph.json", NULL);
  PARAMS = read_data("params.bin", &PARAMS_SIZE);

  G_MAP_GET = global("runtime.MapGetItem");
  G_MAP_SIZE = global("runtime.MapSize");
  G_MAP_COUNT = global("runtime.MapCount");
  G_ARRAY_SIZE = global("runtime.ArraySize");
  G_ARRAY_GET = global("runtime.ArrayGetItem");
  G_SHAPE_SIZE = global("runtime.GetShapeTupleSize");
  G_SHAPE_ELEM = global("runtime.GetShapeTupleElem");
  G_FFI_STRING = global("runtime.GetFFIString");
  G_CREATE = global("tvm.graph_executor.create");

  void* factory = load_module(TVM_TEST_MLP_SO);
  void* kernels = load_module(TVM_TEST_KERNELS_SO);

  test_factory(factory);
  test_executor_functions(factory);
  test_create_load_share(factory, kernels);
  test_errors(factory, kernels);

  CHECK_OK(TVMModFree(factory));
  CHECK_OK(TVMModFree(kernels));
  void* globals[] = {G_MAP_GET, G_MAP_SIZE, G_MAP_COUNT, G_ARRAY_SIZE, G_ARRAY_GET,
                     G_SHAPE_SIZE, G_SHAPE_ELEM, G_FFI_STRING, G_CREATE};
  for (size_t i = 0; i < sizeof globals / sizeof globals[0]; ++i) CHECK_OK(TVMFuncFree(globals[i]));
  free(GRAPH_JSON);
  free(PARAMS);
  return tvm_test_summary("test_graph_module");
}
