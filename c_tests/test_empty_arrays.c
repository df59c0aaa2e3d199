/*
 * Empty arrays reaching C: a callback or kernel called with no arguments sees the caller's
 * array pointers (or NULL where the caller passed NULL), never an address the runtime made up
 * (an empty Rust slice's pointer is 0x4 or 0x8, which cgo and others check or follow); empty
 * byte results, 0-d tensor shapes and parallel-launch environments get valid addresses.
 */
#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm_runtime.h>

#include "tvm_test.h"

/* A pointer C may hold: NULL, or an address outside the first page (never dangling-small). */
static int sane(const void* p) { return p == NULL || (uintptr_t)p >= 4096; }

/* ---- what the last callback or kernel saw ------------------------------------------------------ */

static const void* seen_values;
static const void* seen_codes;
static int seen_n = -1;

static int record_cb(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)ret;
  (void)res;
  seen_values = args;
  seen_codes = codes;
  seen_n = n;
  return 0;
}

static int record_kernel(TVMValue* args, int* codes, int n, TVMValue* rv, int* rc, void* res) {
  (void)rv;
  (void)rc;
  (void)res;
  seen_values = args;
  seen_codes = codes;
  seen_n = n;
  return 0;
}

static void* ea___tvm_module_ctx = NULL;

/* y = 2 * x on 0-d tensors: the kernel a graph over scalars calls. */
static int shapes_ok = 1;
static int scalar_double(TVMValue* args, int* codes, int n, TVMValue* rv, int* rc, void* res) {
  (void)codes;
  (void)rv;
  (void)rc;
  (void)res;
  if (n != 2) return -1;
  DLTensor* x = (DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  if (x->ndim != 0 || y->ndim != 0 || !sane(x->shape) || !sane(y->shape)) shapes_ok = 0;
  *(float*)y->data = 2.0f * *(const float*)x->data;
  return 0;
}

/* A graph over 0-d tensors: x (shape []) -> scalar_double -> y. */
static const char SCALAR_GRAPH[] =
    "{\"nodes\": [{\"op\": \"null\", \"name\": \"x\", \"inputs\": []},"
    "{\"op\": \"tvm_op\", \"name\": \"double\", \"attrs\": {\"func_name\": \"scalar_double\", "
    "\"num_inputs\": \"1\", \"num_outputs\": \"1\", \"flatten_data\": \"0\"}, \"inputs\": [[0, 0, 0]]}],"
    "\"arg_nodes\": [0], \"heads\": [[1, 0, 0]], \"node_row_ptr\": [0, 1, 2],"
    "\"attrs\": {\"dltype\": [\"list_str\", [\"float32\", \"float32\"]],"
    "\"storage_id\": [\"list_int\", [0, 1]], \"shape\": [\"list_shape\", [[], []]]}}";

static void check_scalar_graph(TVMModuleHandle lib) {
  DLDevice cpu = {kDLCPU, 0};
  TVMGraphExecutor* g = NULL;
  if (!CHECK_OK(TVMGraphExecutorCreate(SCALAR_GRAPH, lib, &cpu, 1, &g))) return;
  TVMTensorInfo info;
  CHECK_OK(TVMGraphExecutorGetInputInfo(g, 0, &info));
  CHECK(info.ndim == 0 && sane(info.shape));
  CHECK_OK(TVMGraphExecutorGetOutputInfo(g, 0, &info));
  CHECK(info.ndim == 0 && sane(info.shape));
  float xv = 1.5f, yv = 0.0f;
  DLTensor x = {&xv, cpu, 0, {kDLFloat, 32, 1}, NULL, NULL, 0};
  DLTensor y = {&yv, cpu, 0, {kDLFloat, 32, 1}, NULL, NULL, 0};
  CHECK_OK(TVMGraphExecutorSetInput(g, "x", &x));
  CHECK_OK(TVMGraphExecutorRun(g));
  CHECK_OK(TVMGraphExecutorGetOutput(g, 0, &y));
  CHECK(yv == 3.0f);
  CHECK(shapes_ok);
  CHECK_OK(TVMGraphExecutorFree(g));
}

static void reset_seen(void) {
  seen_values = (void*)1;
  seen_codes = (void*)1;
  seen_n = -1;
}

/* Calls `f` with no arguments, once with real (unused) arrays and once with NULL, and checks
 * that `f` saw exactly the arrays passed each time. */
static void check_zero_args_pass_through(TVMFunctionHandle f, const char* what) {
  TVMValue values[1];
  int codes[1];
  TVMValue rv;
  int rc;
  reset_seen();
  CHECK_OK(TVMFuncCall(f, values, codes, 0, &rv, &rc));
  if (!CHECK(seen_n == 0 && seen_values == values && seen_codes == codes)) {
    fprintf(stderr, "    %s, real arrays: got n=%d values=%p codes=%p, passed %p %p\n", what, seen_n,
            seen_values, seen_codes, (void*)values, (void*)codes);
  }
  reset_seen();
  CHECK_OK(TVMFuncCall(f, NULL, NULL, 0, &rv, &rc));
  if (!CHECK(seen_n == 0 && seen_values == NULL && seen_codes == NULL)) {
    fprintf(stderr, "    %s, NULL arrays: got n=%d values=%p codes=%p\n", what, seen_n, seen_values,
            seen_codes);
  }
}

/* ---- a callback returning empty bytes, and one taking them --------------------------------- */

static int empty_bytes(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)args;
  (void)codes;
  (void)n;
  (void)res;
  TVMByteArray arr = {NULL, 0};
  TVMValue v;
  int c = kTVMBytes;
  v.v_handle = &arr;
  return TVMCFuncSetReturn(ret, &v, &c, 1);
}

static const void* seen_bytes_data;
static size_t seen_bytes_size = 99;

static int take_bytes(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void* res) {
  (void)ret;
  (void)res;
  if (n != 1 || codes[0] != kTVMBytes) return -1;
  const TVMByteArray* arr = (const TVMByteArray*)args[0].v_handle;
  seen_bytes_data = arr->data;
  seen_bytes_size = arr->size;
  return 0;
}

/* ---- a parallel launch with no data --------------------------------------------------------- */

static int launch_ok = 1;
static int par_task(int task_id, TVMParallelGroupEnv* penv, void* cdata) {
  (void)task_id;
  if (!sane(penv) || penv == NULL || cdata != NULL) launch_ok = 0;
  return 0;
}

int main(void) {
  /* A C callback, zero arguments, through TVMFuncCall. */
  TVMFunctionHandle cb = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(record_cb, NULL, NULL, &cb));
  check_zero_args_pass_through(cb, "callback");

  /* The same callback registered as a global and looked up again. */
  REQUIRE_OK(TVMFuncRegisterGlobal("test_empty_arrays.record", cb, 1));
  TVMFunctionHandle g = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("test_empty_arrays.record", &g));
  REQUIRE(g != NULL);
  check_zero_args_pass_through(g, "global callback");
  CHECK_OK(TVMFuncFree(g));
  CHECK_OK(TVMFuncRemoveGlobal("test_empty_arrays.record"));
  CHECK_OK(TVMFuncFree(cb));

  /* A compiled kernel (system library), zero arguments. */
  REQUIRE_OK(TVMBackendRegisterSystemLibSymbol("ea_noargs", (void*)record_kernel));
  REQUIRE_OK(TVMBackendRegisterSystemLibSymbol("ea___tvm_module_ctx", &ea___tvm_module_ctx));
  TVMFunctionHandle syslib = NULL;
  REQUIRE_OK(TVMFuncGetGlobal("runtime.SystemLib", &syslib));
  TVMValue a, rv;
  int c = kTVMStr, rc = -1;
  a.v_str = "ea_";
  REQUIRE_OK(TVMFuncCall(syslib, &a, &c, 1, &rv, &rc));
  REQUIRE(rc == kTVMModuleHandle);
  TVMModuleHandle lib = rv.v_handle;
  TVMFunctionHandle kernel = NULL;
  REQUIRE_OK(TVMModGetFunction(lib, "noargs", 0, &kernel));
  REQUIRE(kernel != NULL);
  check_zero_args_pass_through(kernel, "kernel");
  CHECK_OK(TVMFuncFree(kernel));
  /* A graph over 0-d tensors: the shapes its kernel and the info calls see. */
  REQUIRE_OK(TVMBackendRegisterSystemLibSymbol("ea_scalar_double", (void*)scalar_double));
  check_scalar_graph(lib);
  CHECK_OK(TVMModFree(lib));
  CHECK_OK(TVMFuncFree(syslib));

  /* An empty byte array returned: a valid address (TVM's is std::string::data()). */
  TVMFunctionHandle eb = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(empty_bytes, NULL, NULL, &eb));
  REQUIRE_OK(TVMFuncCall(eb, NULL, NULL, 0, &rv, &rc));
  CHECK(rc == kTVMBytes);
  if (rc == kTVMBytes) {
    const TVMByteArray* arr = (const TVMByteArray*)rv.v_handle;
    CHECK(sane(arr));
    CHECK(arr->size == 0);
    CHECK(arr->data != NULL && sane(arr->data));
  }
  CHECK_OK(TVMFuncFree(eb));

  /* An empty byte array argument reaches the callback as the caller's own array, unchanged. */
  TVMFunctionHandle tb = NULL;
  REQUIRE_OK(TVMFuncCreateFromCFunc(take_bytes, NULL, NULL, &tb));
  TVMByteArray empty = {NULL, 0};
  TVMValue bv;
  int bc = kTVMBytes;
  bv.v_handle = &empty;
  CHECK_OK(TVMFuncCall(tb, &bv, &bc, 1, &rv, &rc));
  CHECK(seen_bytes_size == 0 && seen_bytes_data == NULL);
  CHECK_OK(TVMFuncFree(tb));

  /* A 0-d tensor: its shape (and the shape of a copy) is never a dangling address. */
  TVMArrayHandle scalar = NULL;
  REQUIRE_OK(TVMArrayAlloc(NULL, 0, kDLFloat, 32, 1, kDLCPU, 0, &scalar));
  CHECK(scalar->ndim == 0);
  CHECK(sane(scalar->shape));
  CHECK(sane(scalar->strides));
  if (scalar->shape != NULL) {
    volatile int64_t first = scalar->shape[0]; /* readable, as TVM's ShapeTuple data is */
    (void)first;
  }
  float one = 1.0f, back = 0.0f;
  CHECK_OK(TVMArrayCopyFromBytes(scalar, &one, sizeof one));
  CHECK_OK(TVMArrayCopyToBytes(scalar, &back, sizeof back));
  CHECK(back == 1.0f);
  DLManagedTensor* dl = NULL;
  CHECK_OK(TVMArrayToDLPack(scalar, &dl));
  if (dl != NULL) {
    CHECK(sane(dl->dl_tensor.shape));
    TVMArrayHandle again = NULL;
    CHECK_OK(TVMArrayFromDLPack(dl, &again));
    if (again != NULL) {
      CHECK(again->ndim == 0 && sane(again->shape));
      CHECK_OK(TVMArrayFree(again));
    }
  }
  CHECK_OK(TVMArrayFree(scalar));

  /* A parallel launch with no closure data: each task sees NULL data and a real environment. */
  CHECK_OK(TVMBackendParallelLaunch(par_task, NULL, 0));
  CHECK(launch_ok);

  /* The global name list is never an empty array's dangling address. */
  int n_names = -1;
  const char** names = NULL;
  CHECK_OK(TVMFuncListGlobalNames(&n_names, &names));
  CHECK(n_names >= 0 && sane(names));

  return tvm_test_summary("test_empty_arrays");
}
