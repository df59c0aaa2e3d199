/* Relax VM bench client over this runtime's C API (TVM 0.18's c_runtime_api.h), as a C program
 * that deploys a VM executable would drive it. See client.h for the command line. */
#include "client.h"
#include <tvm/runtime/c_runtime_api.h>

typedef struct {
  TVMFunctionHandle func;
  TVMValue args[MAX_INPUTS];
  int codes[MAX_INPUTS];
  int n;
} ctx_t;

static const char* client_name(void) { return "ours"; }

static void check(int rc, const char* what) {
  if (rc != 0) {
    fprintf(stderr, "ours: %s: %s\n", what, TVMGetLastError());
    exit(1);
  }
}

static TVMValue call0(TVMFunctionHandle f, TVMValue* args, int* codes, int n, int* code, const char* what) {
  TVMValue ret;
  if (!f) {
    fprintf(stderr, "ours: no function %s\n", what);
    exit(1);
  }
  check(TVMFuncCall(f, args, codes, n, &ret, code), what);
  return ret;
}

/* Any API call runs the runtime's initialization (the registry of global functions) once. */
static void client_init(void) {
  TVMFunctionHandle f;
  check(TVMFuncGetGlobal("runtime.ModuleLoadFromFile", &f), "TVMFuncGetGlobal");
}

static void* client_load(const char* lib, const char* func, input_t* inputs, int n) {
  ctx_t loaded = {0};
  TVMModuleHandle mod, vm;
  TVMFunctionHandle f;
  int code;
  check(TVMModLoadFromFile(lib, "so", &mod), "loading the library");
  check(TVMModGetFunction(mod, "vm_load_executable", 0, &f), "vm_load_executable");
  vm = call0(f, NULL, NULL, 0, &code, "vm_load_executable").v_handle;
  TVMValue init[3] = {{.v_int64 = kDLCPU}, {.v_int64 = 0}, {.v_int64 = 2}};
  int init_codes[3] = {kDLInt, kDLInt, kDLInt};
  check(TVMModGetFunction(vm, "vm_initialization", 0, &f), "vm_initialization");
  call0(f, init, init_codes, 3, &code, "vm_initialization");
  check(TVMModGetFunction(vm, func, 0, &loaded.func), "the function");
  if (!loaded.func) die("no such function");
  return client_bind(&loaded, inputs, n);
}

static void* client_bind(void* loaded, input_t* inputs, int n) {
  ctx_t* c = calloc(1, sizeof(ctx_t));
  c->func = ((ctx_t*)loaded)->func;
  for (int i = 0; i < n; i++) {
    TVMArrayHandle a;
    check(TVMArrayAlloc(inputs[i].shape, inputs[i].ndim, kDLFloat, 32, 1, kDLCPU, 0, &a), "TVMArrayAlloc");
    check(TVMArrayCopyFromBytes(a, inputs[i].data, inputs[i].count * sizeof(float)), "copy");
    c->args[i].v_handle = a;
    c->codes[i] = kTVMNDArrayHandle;
  }
  c->n = n;
  return c;
}

static void client_call(void* p) {
  ctx_t* c = p;
  int code;
  TVMValue ret = call0(c->func, c->args, c->codes, c->n, &code, "call");
  if (code == kTVMNDArrayHandle) TVMArrayFree(ret.v_handle);
  else if (code == kTVMObjectHandle) TVMObjectFree(ret.v_handle);
}
