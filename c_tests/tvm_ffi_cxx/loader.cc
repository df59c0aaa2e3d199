// A C++ program in tvm-ffi's quickstart style, linked against this runtime: it loads a kernel
// library with tvm::ffi::Module::LoadFromFile, looks its function up and calls it on tensors;
// then it checks the other direction, a module made by C++ code (a ModuleObj subclass) used
// through the runtime's module globals. Prints "OK" and exits 0 when every check holds.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>

#include <cstdio>
#include <string>

namespace ffi = tvm::ffi;

#define CHECK_THAT(cond)                                             \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                      \
    }                                                                \
  } while (0)

// A module C++ code makes: "twice" doubles an int.
class TwiceModule : public ffi::ModuleObj {
 public:
  const char* kind() const override { return "test.twice"; }
  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) override {
    if (name != "twice") return std::nullopt;
    return ffi::Function::FromTyped([](int64_t v) { return v * 2; });
  }
};

DLTensor Vector(float* data, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}

int CheckKernel(const char* path) {
  ffi::Module mod = ffi::Module::LoadFromFile(path);
  ffi::Optional<ffi::Function> add_one = mod->GetFunction("add_one_cpu");
  CHECK_THAT(add_one.has_value());
  CHECK_THAT(!mod->GetFunction("no_such_function").has_value());
  CHECK_THAT(mod->ImplementsFunction("add_one_cpu", true));
  float in[5] = {0.0f, 1.5f, -2.0f, 3.25f, 41.0f}, out[5] = {};
  int64_t shape[1] = {5};
  DLTensor x = Vector(in, shape), y = Vector(out, shape);
  (*add_one)(&x, &y);
  for (int i = 0; i < 5; ++i) CHECK_THAT(out[i] == in[i] + 1.0f);
  // A wrong call raises the kernel's error as a C++ exception.
  int64_t short_shape[1] = {4};
  DLTensor z = Vector(out, short_shape);
  try {
    (*add_one)(&x, &z);
    CHECK_THAT(false);
  } catch (const ffi::Error& err) {
    CHECK_THAT(std::string(err.message()).find("x has 5 elements, y 4") != std::string::npos);
  }
  return 0;
}

int CheckCxxModule(const char* path) {
  ffi::Module twice(ffi::make_object<TwiceModule>());
  // The runtime's globals reach the module's virtual functions.
  ffi::Function get = ffi::Function::GetGlobal("ffi.ModuleGetFunction").value();
  ffi::Function f = get(twice, ffi::String("twice"), false).cast<ffi::Function>();
  CHECK_THAT(f(21).cast<int64_t>() == 42);
  CHECK_THAT(get(twice, ffi::String("thrice"), false) == nullptr);
  ffi::Function kind = ffi::Function::GetGlobal("ffi.ModuleGetKind").value();
  CHECK_THAT(kind(twice).cast<ffi::String>() == "test.twice");
  // Imported into a module of the runtime's (the kernel library), found through its imports,
  // and handed back out as the very object C++ made.
  ffi::Module lib = ffi::Module::LoadFromFile(path);
  ffi::Function::GetGlobal("ffi.ModuleImportModule").value()(lib, twice);
  CHECK_THAT(lib->GetFunction("twice", true).value()(5).cast<int64_t>() == 10);
  CHECK_THAT(!lib->GetFunction("twice", false).has_value());
  ffi::Any back = ffi::Function::GetGlobal("runtime.ModuleGetImport").value()(lib, 0);
  CHECK_THAT(back.cast<ffi::Module>().get() == twice.get());
  ffi::Function::GetGlobal("ffi.ModuleClearImports").value()(lib);
  CHECK_THAT(!lib->GetFunction("twice", true).has_value());
  // Imported into another C++ module, found through the imports.
  ffi::Module outer(ffi::make_object<TwiceModule>());
  outer->ImportModule(twice);
  CHECK_THAT(outer->imports().size() == 1);
  CHECK_THAT(outer->GetFunction("twice", true).has_value());
  outer->ClearImports();
  CHECK_THAT(outer->imports().empty());
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s KERNEL_LIBRARY\n", argv[0]);
    return 2;
  }
  try {
    if (CheckKernel(argv[1]) != 0 || CheckCxxModule(argv[1]) != 0) return 1;
  } catch (const ffi::Error& err) {
    std::fprintf(stderr, "uncaught tvm-ffi error: %s: %s\n", err.kind().c_str(), err.message().c_str());
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
