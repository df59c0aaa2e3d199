/* Relax VM bench client over apache-tvm's own runtime (libtvm_runtime.so + libtvm_ffi.so of the
 * PyPI package), through the tvm-ffi C API as its Python package drives a VM: load the module,
 * vm_load_executable, vm_initialization(cpu, 0, pooled), then the function on Tensor objects.
 * See client.h for the command line. Compiled only when the package is installed. */
#include "client.h"
#include <tvm/ffi/c_api.h>

typedef struct {
  TVMFFIObjectHandle func;
  TVMFFIAny args[MAX_INPUTS];
  int n;
} ctx_t;

static const char* client_name(void) { return "apache-tvm"; }

static void check(int rc, const char* what) {
  if (rc != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    fprintf(stderr, "apache-tvm: %s failed\n", what);
    exit(1);
  }
}

static TVMFFIAny any_obj(TVMFFIObjectHandle h, int32_t type_index) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = type_index;
  a.v_obj = (TVMFFIObject*)h;
  return a;
}

static TVMFFIAny any_str(const char* s) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}

static TVMFFIAny any_int(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny call(TVMFFIObjectHandle f, TVMFFIAny* args, int n, const char* what) {
  TVMFFIAny ret;
  memset(&ret, 0, sizeof(ret));
  check(TVMFFIFunctionCall(f, args, n, &ret), what);
  return ret;
}

static TVMFFIObjectHandle global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  check(TVMFFIFunctionGetGlobal(&b, &f), name);
  if (!f) die(name);
  return f;
}

static TVMFFIObjectHandle get_function(TVMFFIObjectHandle mod, const char* name) {
  TVMFFIAny args[3] = {any_obj(mod, kTVMFFIModule), any_str(name), any_int(0)};
  args[2].type_index = kTVMFFIBool;
  TVMFFIAny r = call(global("ffi.ModuleGetFunction"), args, 3, name);
  if (r.type_index != kTVMFFIFunction) die(name);
  return r.v_obj;
}

static void no_delete(DLManagedTensor* t) { (void)t; }

static TVMFFIObjectHandle tensor(input_t* in) {
  DLManagedTensor* m = calloc(1, sizeof(DLManagedTensor));
  m->dl_tensor.data = in->data;
  m->dl_tensor.device = (DLDevice){kDLCPU, 0};
  m->dl_tensor.ndim = in->ndim;
  m->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
  m->dl_tensor.shape = in->shape;
  m->deleter = no_delete;
  TVMFFIObjectHandle out = NULL;
  check(TVMFFITensorFromDLPack(m, 0, 1, &out), "TVMFFITensorFromDLPack");
  return out;
}

/* TVM's runtime initializes in its static initializers, before main. */
static void client_init(void) {}

static void* client_load(const char* lib, const char* func, input_t* inputs, int n) {
  ctx_t loaded = {0}; /* the function only; client_bind adds the arguments */
  TVMFFIAny path = any_str(lib);
  TVMFFIAny mod = call(global("ffi.ModuleLoadFromFile"), &path, 1, "loading the library");
  TVMFFIAny vm = call(get_function(mod.v_obj, "vm_load_executable"), NULL, 0, "vm_load_executable");
  TVMFFIAny init[3] = {any_int(kDLCPU), any_int(0), any_int(2)};
  call(get_function(vm.v_obj, "vm_initialization"), init, 3, "vm_initialization");
  loaded.func = get_function(vm.v_obj, func);
  return client_bind(&loaded, inputs, n);
}

static void* client_bind(void* loaded, input_t* inputs, int n) {
  ctx_t* c = calloc(1, sizeof(ctx_t));
  c->func = ((ctx_t*)loaded)->func;
  for (int i = 0; i < n; i++) c->args[i] = any_obj(tensor(&inputs[i]), kTVMFFITensor);
  c->n = n;
  return c;
}

static void client_call(void* p) {
  ctx_t* c = p;
  TVMFFIAny r = call(c->func, c->args, c->n, "call");
  if (r.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(r.v_obj);
}
