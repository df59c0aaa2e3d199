/*
 * Modules through the system library, with kernels written in C using TVM's backend calling
 * convention, plus the rest of the backend API (GetFuncFromEnv, workspaces, parallel launch,
 * barriers, RunOnce, EnvCAPI, AnyList) and TVMModLoadFromFile dispatch.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm_runtime.h>

#include "tvm_test.h"


/* ---- kernels ------------------------------------------------------------------------------- */

/* The module context slots the runtime fills in (one per system-library prefix). */
static void* a___tvm_module_ctx = NULL;
static void* b___tvm_module_ctx = NULL;
/* The `__tvm_module_ctx` of a prefix-less system library. */
static void* default___tvm_module_ctx = NULL;

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static float* f32_data(const DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }

/* Validate `n` float32 tensor arguments of equal size; on failure set the error like generated
 * code does and return 0. */
static int check_tensor_args(const char* kernel, TVMValue* args, int* codes, int num_args, int n) {
  char msg[256];
  if (num_args != n) {
    snprintf(msg, sizeof msg, "%s: expected %d arguments, got %d", kernel, n, num_args);
    TVMAPISetLastError(msg);
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    if (codes[i] != kTVMDLTensorHandle && codes[i] != kTVMNDArrayHandle) {
      snprintf(msg, sizeof msg, "%s: argument %d has type code %d, expected a tensor", kernel, i,
               codes[i]);
      TVMAPISetLastError(msg);
      return 0;
    }
    const DLTensor* t = (const DLTensor*)args[i].v_handle;
    if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1 ||
        t->device.device_type != kDLCPU || numel(t) != numel((const DLTensor*)args[0].v_handle)) {
      snprintf(msg, sizeof msg, "%s: argument %d must be float32 on cpu, same size", kernel, i);
      TVMAPISetLastError(msg);
      return 0;
    }
  }
  return 1;
}

/* a_addone(A, B): B = A + 1 */
static int a_addone(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                    int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  if (!check_tensor_args("addone", args, codes, num_args, 2)) return -1;
  const DLTensor* A = (const DLTensor*)args[0].v_handle;
  const DLTensor* B = (const DLTensor*)args[1].v_handle;
  int64_t n = numel(A);
  for (int64_t i = 0; i < n; ++i) f32_data(B)[i] = f32_data(A)[i] + 1.0f;
  return 0; /* void: out_ret_tcode untouched, as generated kernels do */
}

/* a_dot(A, B) -> float: sum(A*B) */
static int a_dot(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                 int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  if (!check_tensor_args("dot", args, codes, num_args, 2)) return -1;
  const DLTensor* A = (const DLTensor*)args[0].v_handle;
  const DLTensor* B = (const DLTensor*)args[1].v_handle;
  double s = 0;
  for (int64_t i = 0; i < numel(A); ++i) s += (double)f32_data(A)[i] * f32_data(B)[i];
  out_ret_value->v_float64 = s;
  *out_ret_tcode = kTVMArgFloat;
  return 0;
}

/* a_sum_ints(x...) -> int */
static int a_sum_ints(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                      int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  int64_t s = 0;
  for (int i = 0; i < num_args; ++i) {
    if (codes[i] != kTVMArgInt) {
      TVMAPISetLastError("sum_ints: all arguments must be int");
      return -1;
    }
    s += args[i].v_int64;
  }
  out_ret_value->v_int64 = s;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* a_fail(): always fails with a message */
static int a_fail(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                  int* out_ret_tcode, void* resource_handle) {
  (void)args;
  (void)codes;
  (void)num_args;
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  TVMAPISetLastError("a_fail: deliberate failure 42");
  return -1;
}

/* a_make_array(n) -> NDArray [0, 1, ..., n-1] as float32 (ownership goes to the caller) */
static int a_make_array(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                        int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  if (num_args != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("make_array: expected one int");
    return -1;
  }
  int64_t shape[1] = {args[0].v_int64};
  TVMArrayHandle h = NULL;
  if (TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &h) != 0) return -1;
  for (int64_t i = 0; i < shape[0]; ++i) ((float*)h->data)[i] = (float)i;
  out_ret_value->v_handle = h;
  *out_ret_tcode = kTVMNDArrayHandle;
  return 0;
}

/* a_call_env(x:int) -> int: calls the global "test_module.triple_plus_one" found through the
 * module context, caching the (borrowed) handle like generated code does. */
static TVMFunctionHandle cached_env_func = NULL;
static TVMFunctionHandle first_env_func = NULL;
static int a_call_env(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                      int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  if (num_args != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("call_env: expected one int");
    return -1;
  }
  if (cached_env_func == NULL) {
    if (TVMBackendGetFuncFromEnv(a___tvm_module_ctx, "test_module.triple_plus_one",
                                 &cached_env_func) != 0) {
      return -1;
    }
    if (first_env_func == NULL) first_env_func = cached_env_func;
  }
  TVMValue rv;
  int rc = kTVMNullptr;
  if (TVMFuncCall(cached_env_func, args, codes, 1, &rv, &rc) != 0) return -1;
  if (rc != kTVMArgInt) {
    TVMAPISetLastError("call_env: callee did not return an int");
    return -1;
  }
  out_ret_value->v_int64 = rv.v_int64;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* a_call_import(A, B): calls "mul2" found through the module's imports. */
static int a_call_import(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                         int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  static TVMFunctionHandle mul2 = NULL;
  if (mul2 == NULL && TVMBackendGetFuncFromEnv(a___tvm_module_ctx, "mul2", &mul2) != 0) {
    return -1; /* the runtime's error stays as this thread's last error */
  }
  TVMValue rv;
  int rc = kTVMNullptr;
  return TVMFuncCall(mul2, args, codes, num_args, &rv, &rc);
}

/* b_mul2(A, B): B = 2 * A */
static int b_mul2(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                  int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  if (!check_tensor_args("mul2", args, codes, num_args, 2)) return -1;
  const DLTensor* A = (const DLTensor*)args[0].v_handle;
  const DLTensor* B = (const DLTensor*)args[1].v_handle;
  for (int64_t i = 0; i < numel(A); ++i) f32_data(B)[i] = 2.0f * f32_data(A)[i];
  return 0;
}

/* b_neg(x:int) -> int */
static int b_neg(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                 int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  if (num_args != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("neg: expected one int");
    return -1;
  }
  out_ret_value->v_int64 = -args[0].v_int64;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/* a_par_addone(A, B): B = A + 1 computed the way generated parallel code does it: a parallel
 * launch with num_task = 0, each task taking a slice by penv->num_task and staging it through
 * a workspace buffer. */
typedef struct {
  const float* in;
  float* out;
  int64_t n;
} ParAddOne;

static int par_addone_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  ParAddOne* d = (ParAddOne*)cdata;
  int64_t nt = penv->num_task;
  int64_t chunk = (d->n + nt - 1) / nt;
  int64_t begin = task_id * chunk;
  int64_t end = begin + chunk < d->n ? begin + chunk : d->n;
  if (begin >= end) return 0;
  float* tmp = (float*)TVMBackendAllocWorkspace(kDLCPU, 0, (uint64_t)(end - begin) * sizeof(float),
                                                kDLFloat, 32);
  if (tmp == NULL) return -1;
  for (int64_t i = begin; i < end; ++i) tmp[i - begin] = d->in[i] + 1.0f;
  memcpy(d->out + begin, tmp, (size_t)(end - begin) * sizeof(float));
  return TVMBackendFreeWorkspace(kDLCPU, 0, tmp);
}

static int a_par_addone(TVMValue* args, int* codes, int num_args, TVMValue* out_ret_value,
                        int* out_ret_tcode, void* resource_handle) {
  (void)out_ret_value;
  (void)out_ret_tcode;
  (void)resource_handle;
  if (!check_tensor_args("par_addone", args, codes, num_args, 2)) return -1;
  ParAddOne d;
  d.in = f32_data((const DLTensor*)args[0].v_handle);
  d.out = f32_data((const DLTensor*)args[1].v_handle);
  d.n = numel((const DLTensor*)args[0].v_handle);
  return TVMBackendParallelLaunch(par_addone_task, &d, 0);
}

static const char a_main_name[] = "addone"; /* what `__tvm_main__` holds in LLVM output */

/* Library b registers itself before main, as `--system-lib` objects do from a static ctor. */
static int registered_before_main = 0;
__attribute__((constructor)) static void register_lib_b(void) {
  int rc = 0;
  rc |= TVMBackendRegisterSystemLibSymbol("b_mul2", (void*)b_mul2);
  rc |= TVMBackendRegisterSystemLibSymbol("b_neg", (void*)b_neg);
  rc |= TVMBackendRegisterSystemLibSymbol("b___tvm_module_ctx", &b___tvm_module_ctx);
  registered_before_main = (rc == 0);
}

static int register_lib_a(void) {
  int rc = 0;
  rc |= TVMBackendRegisterSystemLibSymbol("a_addone", (void*)a_addone);
  rc |= TVMBackendRegisterSystemLibSymbol("a_dot", (void*)a_dot);
  rc |= TVMBackendRegisterSystemLibSymbol("a_sum_ints", (void*)a_sum_ints);
  rc |= TVMBackendRegisterSystemLibSymbol("a_fail", (void*)a_fail);
  rc |= TVMBackendRegisterSystemLibSymbol("a_make_array", (void*)a_make_array);
  rc |= TVMBackendRegisterSystemLibSymbol("a_call_env", (void*)a_call_env);
  rc |= TVMBackendRegisterSystemLibSymbol("a_call_import", (void*)a_call_import);
  rc |= TVMBackendRegisterSystemLibSymbol("a_par_addone", (void*)a_par_addone);
  rc |= TVMBackendRegisterSystemLibSymbol("a___tvm_main__", (void*)a_main_name);
  rc |= TVMBackendRegisterSystemLibSymbol("a___tvm_module_ctx", &a___tvm_module_ctx);
  return rc;
}

/* ---- C globals used by the tests -------------------------------------------------------------- */

static int triple_plus_one(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)res;
  if (n != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("triple_plus_one: expected one int");
    return -1;
  }
  TVMValue v;
  int c = kTVMArgInt;
  v.v_int64 = 3 * args[0].v_int64 + 1;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

/* A module loader: runtime.SystemLib(<prefix in resource>) */
typedef struct {
  const char* prefix;
  int calls;
  char last_file[128];
  char last_format[64];
  int last_num_args;
} Loader;

static int load_testfmt(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  Loader* l = (Loader*)res;
  l->calls++;
  l->last_num_args = n;
  snprintf(l->last_file, sizeof l->last_file, "%s", n > 0 && codes[0] == kTVMStr ? args[0].v_str : "?");
  snprintf(l->last_format, sizeof l->last_format, "%s",
           n > 1 && codes[1] == kTVMStr ? args[1].v_str : "?");
  TVMFunctionHandle syslib = NULL;
  if (TVMFuncGetGlobal("runtime.SystemLib", &syslib) != 0 || syslib == NULL) return -1;
  TVMValue a, rv;
  int c = kTVMStr, rc = -1;
  a.v_str = l->prefix;
  int status = TVMFuncCall(syslib, &a, &c, 1, &rv, &rc);
  TVMFuncFree(syslib);
  if (status != 0) return -1;
  status = TVMCFuncSetReturn(ret, &rv, &rc, 1); /* adds a reference */
  TVMModFree(rv.v_handle);                       /* drop ours */
  return status;
}

/* ---- helpers --------------------------------------------------------------------------------- */

static TVMFunctionHandle g_syslib = NULL;

static TVMModuleHandle system_lib(const char* prefix) {
  TVMValue a, rv;
  int c = kTVMStr, rc = -1;
  a.v_str = prefix;
  if (TVMFuncCall(g_syslib, &a, &c, prefix ? 1 : 0, &rv, &rc) != 0) return NULL;
  return rc == kTVMModuleHandle ? rv.v_handle : NULL;
}

static int call2(TVMFunctionHandle f, void* a, int ca, void* b, int cb, TVMValue* rv, int* rc) {
  TVMValue args[2];
  int codes[2] = {ca, cb};
  args[0].v_handle = a;
  args[1].v_handle = b;
  *rc = -12345;
  return TVMFuncCall(f, args, codes, 2, rv, rc);
}

static int call_int(TVMFunctionHandle f, int64_t x, TVMValue* rv, int* rc) {
  TVMValue a;
  int c = kTVMArgInt;
  a.v_int64 = x;
  *rc = -12345;
  return TVMFuncCall(f, &a, &c, 1, rv, rc);
}

static TVMFunctionHandle get_func(TVMModuleHandle m, const char* name, int query_imports) {
  TVMFunctionHandle f = (TVMFunctionHandle)&g_syslib; /* poison: must be overwritten */
  if (TVMModGetFunction(m, name, query_imports, &f) != 0) return (TVMFunctionHandle)&g_syslib;
  return f;
}

/* ---- parallel lambdas ------------------------------------------------------------------------ */

typedef struct {
  int n;
  int64_t* out;
  atomic_int calls;
  atomic_int bad;
  int num_task_seen;
} ParSquare;

static int par_square(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  ParSquare* d = (ParSquare*)cdata;
  int nt = penv->num_task;
  if (nt < 1 || task_id < 0 || task_id >= nt) atomic_fetch_add(&d->bad, 1);
  if (task_id == 0) d->num_task_seen = nt; /* one writer: every task sees the same value */
  int chunk = (d->n + nt - 1) / nt;
  int begin = task_id * chunk;
  int end = begin + chunk < d->n ? begin + chunk : d->n;
  for (int i = begin; i < end; ++i) d->out[i] = (int64_t)i * i;
  atomic_fetch_add(&d->calls, 1);
  return 0;
}

typedef struct {
  int n;
  int64_t* data;
  int64_t totals[64];
  atomic_int barrier_rc;
  int num_task_seen;
} ParBarrier;

/* Phase 1: each task fills its slice; barrier; phase 2: each task sums everything. */
static int par_barrier(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  ParBarrier* d = (ParBarrier*)cdata;
  int nt = penv->num_task;
  if (task_id == 0) d->num_task_seen = nt;
  int chunk = (d->n + nt - 1) / nt;
  int begin = task_id * chunk;
  int end = begin + chunk < d->n ? begin + chunk : d->n;
  for (int i = begin; i < end; ++i) d->data[i] = i + 1;
  int rc = TVMBackendParallelBarrier(task_id, penv);
  if (rc != 0) atomic_fetch_add(&d->barrier_rc, 1);
  int64_t s = 0;
  for (int i = 0; i < d->n; ++i) s += d->data[i];
  if (task_id < 64) d->totals[task_id] = s;
  return 0;
}

static int par_fail(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  (void)penv;
  (void)cdata;
  (void)task_id;
  TVMAPISetLastError("task boom 7");
  return -1;
}

/* Each task allocates and frees a workspace on its own thread. */
static int par_workspace(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  (void)penv;
  atomic_int* bad = (atomic_int*)cdata;
  void* p = TVMBackendAllocWorkspace(kDLCPU, 0, 2048 + (uint64_t)task_id, kDLFloat, 32);
  if (p == NULL || ((uintptr_t)p % 64) != 0) {
    atomic_fetch_add(bad, 1);
    return 0;
  }
  memset(p, task_id & 0xff, 2048);
  if (TVMBackendFreeWorkspace(kDLCPU, 0, p) != 0) atomic_fetch_add(bad, 1);
  return 0;
}

static int once_fn(void* cdata) {
  (*(int*)cdata)++;
  return 7;
}

static int fake_check_signals(void) { return 0; }

int main(void) {
  CHECK(registered_before_main);
  REQUIRE_OK(register_lib_a());
  REQUIRE_OK(TVMFuncGetGlobal("runtime.SystemLib", &g_syslib));
  REQUIRE(g_syslib != NULL);

  TVMFunctionHandle tpo = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(triple_plus_one, NULL, NULL, &tpo));
  REQUIRE_OK(TVMFuncRegisterGlobal("test_module.triple_plus_one", tpo, 0));

  /* ---- modules per prefix ------------------------------------------------------------------- */
  CHECK(a___tvm_module_ctx == NULL);
  TVMModuleHandle mod_a = system_lib("a_");
  TVMModuleHandle mod_b = system_lib("b_");
  REQUIRE(mod_a != NULL && mod_b != NULL);
  CHECK(mod_a != mod_b);
  CHECK(a___tvm_module_ctx != NULL); /* filled in when the module was created */
  CHECK(b___tvm_module_ctx != NULL);
  CHECK(a___tvm_module_ctx != b___tvm_module_ctx);
  {
    unsigned ti = 0;
    CHECK_OK(TVMObjectGetTypeIndex(mod_a, &ti));
    CHECK(ti == 1);
    /* one module per prefix, cached */
    TVMModuleHandle again = system_lib("a_");
    CHECK(again == mod_a);
    if (again) CHECK_OK(TVMModFree(again));
    /* the type key of a system library module is "library" */
    TVMFunctionHandle type_key = NULL;
    CHECK_OK(TVMFuncGetGlobal("runtime.ModuleGetTypeKey", &type_key));
    if (type_key) {
      TVMValue a, rv;
      int c = kTVMModuleHandle, rc = -1;
      a.v_handle = mod_a;
      CHECK_OK(TVMFuncCall(type_key, &a, &c, 1, &rv, &rc));
      CHECK(rc == kTVMStr);
      CHECK_STREQ(rc == kTVMStr ? rv.v_str : NULL, "library");
      CHECK_OK(TVMFuncFree(type_key));
    }
  }

  /* ---- function lookup ---------------------------------------------------------------------- */
  TVMFunctionHandle addone = get_func(mod_a, "addone", 0);
  TVMFunctionHandle dot = get_func(mod_a, "dot", 0);
  TVMFunctionHandle sum_ints = get_func(mod_a, "sum_ints", 0);
  TVMFunctionHandle failk = get_func(mod_a, "fail", 0);
  TVMFunctionHandle make_array = get_func(mod_a, "make_array", 0);
  TVMFunctionHandle call_env = get_func(mod_a, "call_env", 0);
  TVMFunctionHandle call_import = get_func(mod_a, "call_import", 0);
  TVMFunctionHandle entry = get_func(mod_a, "__tvm_main__", 0);
  TVMFunctionHandle mul2_b = get_func(mod_b, "mul2", 0);
  REQUIRE(addone != NULL && addone != (TVMFunctionHandle)&g_syslib);
  REQUIRE(dot != NULL && sum_ints != NULL && failk != NULL && make_array != NULL);
  REQUIRE(call_env != NULL && call_import != NULL && mul2_b != NULL);
  REQUIRE(dot != (TVMFunctionHandle)&g_syslib && sum_ints != (TVMFunctionHandle)&g_syslib);
  REQUIRE(failk != (TVMFunctionHandle)&g_syslib && make_array != (TVMFunctionHandle)&g_syslib);
  REQUIRE(call_env != (TVMFunctionHandle)&g_syslib && call_import != (TVMFunctionHandle)&g_syslib);
  REQUIRE(mul2_b != (TVMFunctionHandle)&g_syslib);
  CHECK(entry != NULL && entry != (TVMFunctionHandle)&g_syslib);
  CHECK(get_func(mod_a, "no_such_kernel", 0) == NULL);
  CHECK(get_func(mod_a, "no_such_kernel", 1) == NULL);
  CHECK(get_func(mod_a, "mul2", 0) == NULL); /* b's kernel is not in a */
  CHECK(get_func(mod_b, "addone", 0) == NULL);
  /* as in TVM's SystemLibrary, a prefixed library looks up `prefix + name` and then the plain
   * name, so a full symbol name resolves from any prefix */
  {
    TVMFunctionHandle full = get_func(mod_b, "a_addone", 0);
    CHECK(full != NULL && full != (TVMFunctionHandle)&g_syslib);
    if (full != NULL && full != (TVMFunctionHandle)&g_syslib) CHECK_OK(TVMFuncFree(full));
  }
  {
    unsigned ti = 0;
    CHECK_OK(TVMObjectGetTypeIndex(addone, &ti));
    CHECK(ti == 7);
  }

  /* ---- kernels on real tensors ------------------------------------------------------------- */
  int64_t shape[2] = {2, 4};
  TVMArrayHandle A = NULL, B = NULL;
  REQUIRE_OK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &A));
  REQUIRE_OK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &B));
  float av[8] = {0.5f, 1.5f, -2.0f, 3.25f, 10.0f, -0.5f, 0.0f, 7.0f};
  float bv[8];
  CHECK_OK(TVMArrayCopyFromBytes(A, av, sizeof av));
  TVMValue rv;
  int rc;
  CHECK_OK(call2(addone, A, kTVMNDArrayHandle, B, kTVMNDArrayHandle, &rv, &rc));
  CHECK(rc == kTVMNullptr); /* void kernel */
  CHECK_OK(TVMArrayCopyToBytes(B, bv, sizeof bv));
  for (int i = 0; i < 8; ++i) CHECK(bv[i] == av[i] + 1.0f);
  /* through `__tvm_main__` (the entry function name is stored as a string symbol) */
  if (entry != NULL && entry != (TVMFunctionHandle)&g_syslib) {
    CHECK_OK(call2(entry, B, kTVMNDArrayHandle, B, kTVMNDArrayHandle, &rv, &rc));
    CHECK_OK(TVMArrayCopyToBytes(B, bv, sizeof bv));
    CHECK(bv[0] == 2.5f && bv[7] == 9.0f);
  }
  /* stack DLTensors with byte_offset (code 7) */
  {
    float in[10] = {99, 99, 1, 2, 3, 4, 5, 6, 7, 8};
    float out[8] = {0};
    int64_t s8[1] = {8};
    DLTensor x, y;
    memset(&x, 0, sizeof x);
    x.data = in;
    x.device.device_type = kDLCPU;
    x.ndim = 1;
    x.dtype.code = kDLFloat;
    x.dtype.bits = 32;
    x.dtype.lanes = 1;
    x.shape = s8;
    x.byte_offset = 2 * sizeof(float);
    y = x;
    y.data = out;
    y.byte_offset = 0;
    CHECK_OK(call2(mul2_b, &x, kTVMDLTensorHandle, &y, kTVMDLTensorHandle, &rv, &rc));
    CHECK(out[0] == 2.0f && out[7] == 16.0f);
    CHECK_OK(call2(dot, &x, kTVMDLTensorHandle, &y, kTVMDLTensorHandle, &rv, &rc));
    /* sum(i * 2i) for i=1..8 = 2 * 204 = 408 */
    CHECK(rc == kTVMArgFloat && rv.v_float64 == 408.0);
  }
  CHECK_OK(call2(dot, A, kTVMNDArrayHandle, A, kTVMNDArrayHandle, &rv, &rc));
  /* 0.25 + 2.25 + 4 + 10.5625 + 100 + 0.25 + 0 + 49 = 166.3125 */
  CHECK(rc == kTVMArgFloat && rv.v_float64 == 166.3125);
  {
    TVMValue a[4];
    int c[4] = {kTVMArgInt, kTVMArgInt, kTVMArgInt, kTVMArgInt};
    a[0].v_int64 = 1000000000000LL;
    a[1].v_int64 = -7;
    a[2].v_int64 = 30;
    a[3].v_int64 = 4;
    rc = -1;
    CHECK_OK(TVMFuncCall(sum_ints, a, c, 4, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == 1000000000027LL);
    CHECK_OK(TVMFuncCall(sum_ints, NULL, NULL, 0, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == 0);
  }
  /* errors from kernels */
  CHECK_FAIL(TVMFuncCall(failk, NULL, NULL, 0, &rv, &rc), "a_fail: deliberate failure 42");
  CHECK_FAIL(call2(addone, A, kTVMNDArrayHandle, NULL, kTVMArgInt, &rv, &rc),
             "addone: argument 1 has type code 0");
  {
    TVMValue a;
    int c = kTVMNDArrayHandle;
    a.v_handle = A;
    CHECK_FAIL(TVMFuncCall(addone, &a, &c, 1, &rv, &rc), "addone: expected 2 arguments, got 1");
  }
  /* a kernel returning an NDArray hands over ownership */
  CHECK_OK(call_int(make_array, 5, &rv, &rc));
  CHECK(rc == kTVMNDArrayHandle);
  if (rc == kTVMNDArrayHandle) {
    TVMArrayHandle h = (TVMArrayHandle)rv.v_handle;
    CHECK(tvm_test_refcount((char*)h - 16) == 1);
    CHECK(h->ndim == 1 && h->shape[0] == 5 && ((float*)h->data)[4] == 4.0f);
    CHECK_OK(TVMArrayFree(h));
  }

  /* ---- __tvm_module_ctx + TVMBackendGetFuncFromEnv ----------------------------------------- */
  CHECK_OK(call_int(call_env, 5, &rv, &rc));
  CHECK(rc == kTVMArgInt && rv.v_int64 == 16);
  CHECK_OK(call_int(call_env, -4, &rv, &rc));
  CHECK(rc == kTVMArgInt && rv.v_int64 == -11);
  {
    /* the borrowed handle is stable: asking again gives the same function */
    TVMFunctionHandle f = NULL;
    CHECK_OK(TVMBackendGetFuncFromEnv(a___tvm_module_ctx, "test_module.triple_plus_one", &f));
    CHECK(f != NULL && f == first_env_func);
    CHECK_FAIL(TVMBackendGetFuncFromEnv(a___tvm_module_ctx, "test_module.no_such_global", &f),
               "test_module.no_such_global");
  }
  /* "mul2" is neither a global nor in a's imports yet */
  CHECK_FAIL(call2(call_import, A, kTVMNDArrayHandle, B, kTVMNDArrayHandle, &rv, &rc), "mul2");

  /* ---- imports ------------------------------------------------------------------------------ */
  CHECK_OK(TVMModImport(mod_a, mod_b));
  {
    TVMFunctionHandle m2 = get_func(mod_a, "mul2", 1);
    CHECK(m2 != NULL && m2 != (TVMFunctionHandle)&g_syslib);
    CHECK(get_func(mod_a, "mul2", 0) == NULL);
    {
      TVMFunctionHandle own = get_func(mod_a, "addone", 1); /* own functions first */
      CHECK(own != NULL && own != (TVMFunctionHandle)&g_syslib);
      if (own != NULL && own != (TVMFunctionHandle)&g_syslib) CHECK_OK(TVMFuncFree(own));
    }
    if (m2 != NULL && m2 != (TVMFunctionHandle)&g_syslib) {
      CHECK_OK(call2(m2, A, kTVMNDArrayHandle, B, kTVMNDArrayHandle, &rv, &rc));
      CHECK_OK(TVMArrayCopyToBytes(B, bv, sizeof bv));
      for (int i = 0; i < 8; ++i) CHECK(bv[i] == 2.0f * av[i]);
      CHECK_OK(TVMFuncFree(m2));
    }
    /* kernels of a now reach b's kernels through GetFuncFromEnv */
    memset(bv, 0, sizeof bv);
    CHECK_OK(TVMArrayCopyFromBytes(B, bv, sizeof bv));
    CHECK_OK(call2(call_import, A, kTVMNDArrayHandle, B, kTVMNDArrayHandle, &rv, &rc));
    CHECK_OK(TVMArrayCopyToBytes(B, bv, sizeof bv));
    CHECK(bv[0] == 1.0f && bv[3] == 6.5f && bv[7] == 14.0f);
  }
  /* cycles are rejected */
  CHECK_FAIL(TVMModImport(mod_b, mod_a), "cycle");
  CHECK_FAIL(TVMModImport(mod_a, mod_a), "cycle");
  CHECK(get_func(mod_b, "addone", 1) == NULL);
  {
    TVMFunctionHandle isize = NULL;
    CHECK_OK(TVMFuncGetGlobal("runtime.ModuleImportsSize", &isize));
    if (isize) {
      TVMValue a;
      int c = kTVMModuleHandle;
      a.v_handle = mod_a;
      CHECK_OK(TVMFuncCall(isize, &a, &c, 1, &rv, &rc));
      CHECK(rc == kTVMArgInt && rv.v_int64 == 1);
      a.v_handle = mod_b;
      CHECK_OK(TVMFuncCall(isize, &a, &c, 1, &rv, &rc));
      CHECK(rc == kTVMArgInt && rv.v_int64 == 0);
      CHECK_OK(TVMFuncFree(isize));
    }
  }

  /* ---- the prefix-less system library gets its own context ------------------------------- */
  {
    CHECK_OK(TVMBackendRegisterSystemLibSymbol("__tvm_module_ctx", &default___tvm_module_ctx));
    TVMModuleHandle mod_default = system_lib(NULL);
    CHECK(mod_default != NULL);
    CHECK(mod_default != mod_a && mod_default != mod_b);
    CHECK(default___tvm_module_ctx != NULL);
    CHECK(default___tvm_module_ctx != a___tvm_module_ctx);
    TVMModuleHandle again = system_lib("");
    CHECK(again == mod_default); /* no argument and "" are the same prefix */
    if (again) CHECK_OK(TVMModFree(again));
    if (mod_default) CHECK_OK(TVMModFree(mod_default));
    /* a's kernels still find their globals through a's context */
    CHECK_OK(call_int(call_env, 2, &rv, &rc));
    CHECK(rc == kTVMArgInt && rv.v_int64 == 7);
  }

  /* ---- TVMModLoadFromFile ------------------------------------------------------------------- */
  {
    TVMModuleHandle m = NULL;
    CHECK_FAIL(TVMModLoadFromFile("model.unknownfmt", "", &m), "unknownfmt");
    CHECK(m == NULL);
    CHECK_FAIL(TVMModLoadFromFile("model.bin", "otherfmt", &m), "otherfmt");
    CHECK(TVMModLoadFromFile("no_extension", "", &m) == -1);

    Loader loader = {"b_", 0, "", "", 0};
    TVMFunctionHandle lf = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(load_testfmt, &loader, NULL, &lf));
    REQUIRE_OK(TVMFuncRegisterGlobal("runtime.module.loadfile_testfmt", lf, 0));
    CHECK_OK(TVMModLoadFromFile("dir/x.testfmt", "", &m));
    CHECK(loader.calls == 1);
    CHECK(loader.last_num_args == 2);
    CHECK_STREQ(loader.last_file, "dir/x.testfmt");
    CHECK_STREQ(loader.last_format, "");
    CHECK(m == mod_b); /* the loader returned runtime.SystemLib("b_") */
    if (m) {
      unsigned ti = 0;
      CHECK_OK(TVMObjectGetTypeIndex(m, &ti));
      CHECK(ti == 1);
      TVMFunctionHandle neg = get_func(m, "neg", 0);
      CHECK(neg != NULL && neg != (TVMFunctionHandle)&g_syslib);
      CHECK_OK(TVMModFree(m));
      /* functions stay valid after their module handle is freed */
      if (neg != NULL && neg != (TVMFunctionHandle)&g_syslib) {
        CHECK_OK(call_int(neg, 12, &rv, &rc));
        CHECK(rc == kTVMArgInt && rv.v_int64 == -12);
        CHECK_OK(TVMFuncFree(neg));
      }
    }
    /* explicit format */
    m = NULL;
    CHECK_OK(TVMModLoadFromFile("weights.bin", "testfmt", &m));
    CHECK(loader.calls == 2);
    CHECK_STREQ(loader.last_file, "weights.bin");
    CHECK_STREQ(loader.last_format, "testfmt");
    CHECK(m == mod_b);
    if (m) CHECK_OK(TVMModFree(m));
    /* errors from the loader propagate */
    loader.prefix = NULL;
    CHECK(TVMModLoadFromFile("y.testfmt", "", &m) == -1);

    /* dll/dylib/dso are loaded by the "so" loader */
    TVMFunctionHandle so_before = NULL;
    CHECK_OK(TVMFuncGetGlobal("runtime.module.loadfile_so", &so_before));
    Loader so_loader = {"a_", 0, "", "", 0};
    TVMFunctionHandle so_lf = NULL;
    REQUIRE_OK(TVMFuncCreateFromCFunc(load_testfmt, &so_loader, NULL, &so_lf));
    REQUIRE_OK(TVMFuncRegisterGlobal("runtime.module.loadfile_so", so_lf, 1));
    const char* files[3] = {"lib.dylib", "lib.dll", "lib.dso"};
    for (int i = 0; i < 3; ++i) {
      m = NULL;
      CHECK_OK(TVMModLoadFromFile(files[i], "", &m));
      CHECK(m == mod_a);
      CHECK_STREQ(so_loader.last_file, files[i]);
      if (m) CHECK_OK(TVMModFree(m));
    }
    CHECK(so_loader.calls == 3);
    if (so_before) {
      CHECK_OK(TVMFuncRegisterGlobal("runtime.module.loadfile_so", so_before, 1));
      CHECK_OK(TVMFuncFree(so_before));
    } else {
      CHECK_OK(TVMFuncRemoveGlobal("runtime.module.loadfile_so"));
    }
    CHECK_OK(TVMFuncFree(so_lf));
    CHECK_OK(TVMFuncRemoveGlobal("runtime.module.loadfile_testfmt"));
    CHECK_OK(TVMFuncFree(lf));
  }

  /* ---- workspaces --------------------------------------------------------------------------- */
  {
    void* p = TVMBackendAllocWorkspace(kDLCPU, 0, 100, kDLFloat, 32);
    void* q = TVMBackendAllocWorkspace(kDLCPU, 0, 5000, kDLInt, 8);
    void* r = TVMBackendAllocWorkspace(kDLCPU, 0, 0, kDLFloat, 32);
    CHECK(p != NULL && q != NULL && r != NULL);
    CHECK(((uintptr_t)p % 64) == 0 && ((uintptr_t)q % 64) == 0 && ((uintptr_t)r % 64) == 0);
    CHECK(p != q && q != r && p != r);
    if (p && q) {
      memset(p, 0x11, 100);
      memset(q, 0x22, 5000);
      CHECK(((unsigned char*)p)[99] == 0x11 && ((unsigned char*)q)[4999] == 0x22);
    }
    /* out of order */
    CHECK_OK(TVMBackendFreeWorkspace(kDLCPU, 0, p));
    CHECK_OK(TVMBackendFreeWorkspace(kDLCPU, 0, r));
    CHECK_OK(TVMBackendFreeWorkspace(kDLCPU, 0, q));
    /* many, LIFO */
    void* many[32];
    int ok = 1;
    for (int i = 0; i < 32; ++i) {
      many[i] = TVMBackendAllocWorkspace(kDLCPU, 0, (uint64_t)(64 * (i + 1)), kDLFloat, 32);
      if (many[i] == NULL || ((uintptr_t)many[i] % 64) != 0) ok = 0;
    }
    CHECK(ok);
    for (int i = 31; i >= 0; --i) CHECK_OK(TVMBackendFreeWorkspace(kDLCPU, 0, many[i]));
    /* unsupported device: NULL with the error set */
    CHECK(TVMBackendAllocWorkspace(kDLCUDA, 0, 64, kDLFloat, 32) == NULL);
    CHECK_CONTAINS(TVMGetLastError(), "cuda");
  }

  /* ---- parallel launch ---------------------------------------------------------------------- */
  {
    int requests[3] = {0, 1, 4};
    for (int k = 0; k < 3; ++k) {
      int64_t out[1000];
      for (int i = 0; i < 1000; ++i) out[i] = -1;
      ParSquare d;
      d.n = 1000;
      d.out = out;
      atomic_init(&d.calls, 0);
      atomic_init(&d.bad, 0);
      d.num_task_seen = 0;
      CHECK_OK(TVMBackendParallelLaunch(par_square, &d, requests[k]));
      CHECK(atomic_load(&d.bad) == 0);
      CHECK(d.num_task_seen >= 1);
      if (requests[k] > 0) CHECK(d.num_task_seen <= requests[k]);
      CHECK(atomic_load(&d.calls) == d.num_task_seen);
      int all = 1;
      for (int i = 0; i < 1000; ++i) all &= (out[i] == (int64_t)i * i);
      CHECK(all);
    }
  }
  {
    int64_t data[257];
    ParBarrier d;
    memset(&d, 0, sizeof d);
    d.n = 257;
    d.data = data;
    atomic_init(&d.barrier_rc, 0);
    for (int i = 0; i < 257; ++i) data[i] = 0;
    CHECK_OK(TVMBackendParallelLaunch(par_barrier, &d, 0));
    CHECK(atomic_load(&d.barrier_rc) == 0);
    CHECK(d.num_task_seen >= 1);
    int all = 1;
    for (int t = 0; t < d.num_task_seen && t < 64; ++t) all &= (d.totals[t] == 257 * 258 / 2);
    CHECK(all);
  }
  CHECK_FAIL(TVMBackendParallelLaunch(par_fail, NULL, 0), "task boom 7");
  {
    atomic_int bad;
    atomic_init(&bad, 0);
    CHECK_OK(TVMBackendParallelLaunch(par_workspace, &bad, 0));
    CHECK(atomic_load(&bad) == 0);
  }
  CHECK(TVMBackendParallelLaunch(NULL, NULL, 0) == -1);

  {
    /* a kernel that launches parallel work itself */
    TVMFunctionHandle par_addone = get_func(mod_a, "par_addone", 0);
    CHECK(par_addone != NULL && par_addone != (TVMFunctionHandle)&g_syslib);
    if (par_addone != NULL && par_addone != (TVMFunctionHandle)&g_syslib) {
      int64_t big[1] = {10007};
      TVMArrayHandle X = NULL, Y = NULL;
      REQUIRE_OK(TVMArrayAlloc(big, 1, kDLFloat, 32, 1, kDLCPU, 0, &X));
      REQUIRE_OK(TVMArrayAlloc(big, 1, kDLFloat, 32, 1, kDLCPU, 0, &Y));
      for (int64_t i = 0; i < big[0]; ++i) {
        ((float*)X->data)[i] = (float)i;
        ((float*)Y->data)[i] = -1.0f;
      }
      CHECK_OK(call2(par_addone, X, kTVMNDArrayHandle, Y, kTVMNDArrayHandle, &rv, &rc));
      CHECK(rc == kTVMNullptr);
      int all = 1;
      for (int64_t i = 0; i < big[0]; ++i) all &= (((float*)Y->data)[i] == (float)i + 1.0f);
      CHECK(all);
      CHECK_OK(TVMArrayFree(X));
      CHECK_OK(TVMArrayFree(Y));
      CHECK_OK(TVMFuncFree(par_addone));
    }
  }

  /* ---- RunOnce ------------------------------------------------------------------------------ */
  {
    void* handle = NULL;
    int count = 0;
    CHECK(TVMBackendRunOnce(&handle, once_fn, &count, 0) == 7);
    CHECK(count == 1);
    CHECK(handle != NULL);
    CHECK(TVMBackendRunOnce(&handle, once_fn, &count, 0) == 0);
    CHECK(TVMBackendRunOnce(&handle, once_fn, &count, 0) == 0);
    CHECK(count == 1);
  }

  /* ---- EnvCAPI -------------------------------------------------------------------------------- */
  CHECK_FAIL(TVMBackendRegisterEnvCAPI("PyErr_NotAThing", NULL), "PyErr_NotAThing");
  CHECK_FAIL(TVMBackendRegisterEnvCAPI("", NULL), "");
  CHECK_OK(TVMBackendRegisterEnvCAPI("PyErr_CheckSignals", (void*)fake_check_signals));
  CHECK_OK(TVMBackendRegisterEnvCAPI("PyErr_CheckSignals", NULL));
  CHECK_OK(TVMBackendRegisterEnvCAPI("Py_IncRef", NULL));
  CHECK_OK(TVMBackendRegisterEnvCAPI("Py_DecRef", NULL));
  CHECK_OK(TVMBackendRegisterEnvCAPI("PyGILState_Ensure", NULL));
  CHECK_OK(TVMBackendRegisterEnvCAPI("PyGILState_Release", NULL));

  /* ---- AnyList (Relax VM only): unsupported ---------------------------------------------------- */
  {
    TVMValue v[1];
    int c[1] = {kTVMArgInt};
    v[0].v_int64 = 0;
    CHECK(TVMBackendAnyListSetPackedArg(NULL, 0, v, c, 0) == -1);
    CHECK(TVMGetLastError() != NULL);
    CHECK(TVMBackendAnyListResetItem(NULL, 0) == -1);
    CHECK(TVMBackendAnyListMoveFromPackedReturn(NULL, 0, v, c, 0) == -1);
    CHECK_CONTAINS(TVMGetLastError(), "TVMBackendAnyListMoveFromPackedReturn");
  }

  /* ---- release everything ------------------------------------------------------------------- */
  CHECK_OK(TVMArrayFree(A));
  CHECK_OK(TVMArrayFree(B));
  TVMFunctionHandle funcs[] = {addone, dot, sum_ints, failk, make_array, call_env, call_import, mul2_b};
  for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; ++i) CHECK_OK(TVMFuncFree(funcs[i]));
  if (entry != NULL && entry != (TVMFunctionHandle)&g_syslib) CHECK_OK(TVMFuncFree(entry));
  CHECK_OK(TVMModFree(mod_a));
  CHECK_OK(TVMModFree(mod_b));
  CHECK_OK(TVMFuncRemoveGlobal("test_module.triple_plus_one"));
  CHECK_OK(TVMFuncFree(tpo));
  CHECK_OK(TVMFuncFree(g_syslib));
  return tvm_test_summary("test_module");
}
