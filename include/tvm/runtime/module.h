/*
 * tvm::runtime::Module: a loaded module (header-only over the C API; C++14 or later).
 *
 *   Module lib = Module::LoadFromFile("./model.so");   // the loader from the extension
 *   PackedFunc f = lib.GetFunction("default");          // null PackedFunc when absent
 *   Module gmod = f(dev);                               // functions may return modules
 *
 * Including this header also declares PackedFunc and the rest of <tvm/runtime/packed_func.h>.
 */
#ifndef TVM_RUNTIME_MODULE_H_
#define TVM_RUNTIME_MODULE_H_

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/container/string.h>
#include <tvm/runtime/object.h>

#include <string>
#include <vector>

namespace tvm {
namespace runtime {

class Module;
class PackedFunc;

/* A module object, as reached through Module::operator->. */
class ModuleNode : public Object {
 public:
  /* The module's kind: "library", "GraphExecutorFactory", "GraphExecutor", ... */
  inline const char* type_key() const;
  inline PackedFunc GetFunction(const std::string& name, bool query_imports = false);
  inline void Import(Module other);
  /* The modules this one imports, in order. */
  inline std::vector<Module> imports() const;
};

class Module : public ObjectRef {
 public:
  Module() = default;
  Module(std::nullptr_t) {}  // NOLINT

  /* Loads a module from a file. `format` selects the loader ("so", ...); empty means the file's
   * extension. As with dlopen, a path without a '/' is looked up in the library search path, so
   * write "./model.so" for a file in the current directory. */
  static Module LoadFromFile(const std::string& file_name, const std::string& format = "") {
    TVMModuleHandle handle = nullptr;
    detail::CheckCall(TVMModLoadFromFile(file_name.c_str(), format.c_str(), &handle));
    return FromOwnedHandle(handle);
  }

  /* A function of the module (searching its imports too when `query_imports`); a null
   * PackedFunc when there is none. */
  inline PackedFunc GetFunction(const std::string& name, bool query_imports = false);
  /* Adds `other` to this module's imports. */
  void Import(Module other) {
    if (obj_ == nullptr || other.obj_ == nullptr) throw Error("Module::Import on a null module");
    detail::CheckCall(TVMModImport(obj_, other.obj_));
  }
  const char* type_key() const { return operator->()->type_key(); }

  ModuleNode* operator->() const {
    if (obj_ == nullptr) throw Error("the Module is null");
    return static_cast<ModuleNode*>(obj_);
  }
  ModuleNode* get() const { return static_cast<ModuleNode*>(obj_); }

  /* Adopts a module handle the caller owns (e.g. from TVMModLoadFromFile). */
  static Module FromOwnedHandle(TVMModuleHandle handle) {
    Module m;
    m.obj_ = handle;
    return m;
  }
  /* Takes a new reference to a module handle that someone else keeps. */
  static Module FromHandle(TVMModuleHandle handle) {
    if (handle != nullptr) TVMObjectRetain(handle);
    return FromOwnedHandle(handle);
  }

  static bool IsInstance(uint32_t type_index) { return type_index == TypeIndex::kRuntimeModule; }
  static const char* TypeName() { return "runtime.Module"; }
  static Module FromObject(ObjectRef ref) { return FromOwnedHandle(ref.release()); }
};

}  // namespace runtime
}  // namespace tvm

#include <tvm/runtime/packed_func.h>

#endif /* TVM_RUNTIME_MODULE_H_ */
