/*
 * The global function registry from C++ (header-only over the C API; C++14 or later).
 *
 *   const PackedFunc* f = Registry::Get("runtime.SystemLib");   // NULL when absent
 *   TVM_REGISTER_GLOBAL("my.add").set_body_typed([](int a, int b) { return a + b; });
 *
 * The registry is the runtime's own (TVMFuncRegisterGlobal / TVMFuncGetGlobal), shared with C
 * code and with kernels' TVMBackendGetFuncFromEnv.
 */
#ifndef TVM_RUNTIME_REGISTRY_H_
#define TVM_RUNTIME_REGISTRY_H_

#include <tvm/runtime/packed_func.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tvm {
namespace runtime {

class Registry {
 public:
  /* Registers `f` under this entry's name. */
  Registry& set_body(PackedFunc f) {
    detail::CheckCall(TVMFuncRegisterGlobal(name_.c_str(), f.handle(), override_ ? 1 : 0));
    return *this;
  }
  Registry& set_body(PackedFunc::FType f) { return set_body(PackedFunc(std::move(f))); }
  /* Registers a function with a C++ signature; arguments and result are converted. */
  template <typename FLambda>
  Registry& set_body_typed(FLambda f) {
    using FType = typename detail::function_signature<FLambda>::FType;
    return set_body(TypedPackedFunc<FType>(std::move(f), name_).packed());
  }

  /* An entry for `name`; the function is registered by set_body*. Registering a name that
   * exists fails unless `override`. The entry lives for the rest of the process. */
  static Registry& Register(const std::string& name, bool override = false) {
    Registry* r = new Registry();
    r->name_ = name;
    r->override_ = override;
    Cache& cache = GetCache();
    std::lock_guard<std::mutex> lock(cache.mu);
    cache.entries.emplace_back(r);
    return *r;
  }
  /* The global function `name`, or NULL. The pointer stays valid for the rest of the process. */
  static const PackedFunc* Get(const std::string& name) {
    TVMFunctionHandle handle = nullptr;
    detail::CheckCall(TVMFuncGetGlobal(name.c_str(), &handle));
    if (handle == nullptr) return nullptr;
    PackedFunc f = PackedFunc::FromOwnedHandle(handle);
    Cache& cache = GetCache();
    std::lock_guard<std::mutex> lock(cache.mu);
    std::unique_ptr<PackedFunc>& slot = cache.latest[name];
    if (slot == nullptr || !slot->same_as(f)) {
      // An entry that was replaced stays allocated: callers may still hold its pointer.
      if (slot != nullptr) cache.replaced.push_back(std::move(slot));
      slot.reset(new PackedFunc(std::move(f)));
    }
    return slot.get();
  }
  /* Removes `name` from the registry; false when it was not there. */
  static bool Remove(const std::string& name) {
    TVMFunctionHandle handle = nullptr;
    detail::CheckCall(TVMFuncGetGlobal(name.c_str(), &handle));
    if (handle == nullptr) return false;
    TVMFuncFree(handle);
    detail::CheckCall(TVMFuncRemoveGlobal(name.c_str()));
    return true;
  }
  /* Names of all registered functions. */
  static std::vector<std::string> ListNames() {
    int size = 0;
    const char** names = nullptr;
    detail::CheckCall(TVMFuncListGlobalNames(&size, &names));
    return std::vector<std::string>(names, names + size);
  }

 private:
  struct Cache {
    std::mutex mu;
    std::map<std::string, std::unique_ptr<PackedFunc>> latest;
    std::vector<std::unique_ptr<PackedFunc>> replaced;
    std::vector<std::unique_ptr<Registry>> entries;
  };
  static Cache& GetCache() {
    // Never destroyed: functions may be looked up until the process ends.
    static Cache* cache = new Cache();
    return *cache;
  }

  std::string name_;
  bool override_ = false;
};

}  // namespace runtime

using runtime::Registry;
}  // namespace tvm

#define TVM_RUNTIME_STR_CONCAT_(a, b) a##b
#define TVM_RUNTIME_STR_CONCAT(a, b) TVM_RUNTIME_STR_CONCAT_(a, b)

/* Registers a global function at static-initialization time:
 *   TVM_REGISTER_GLOBAL("name").set_body(...) / .set_body_typed(...) */
#define TVM_REGISTER_GLOBAL(OpName)                                                                   \
  static TVM_ATTRIBUTE_UNUSED ::tvm::runtime::Registry& TVM_RUNTIME_STR_CONCAT(tvm_registry_entry_, \
                                                                               __COUNTER__) =        \
      ::tvm::runtime::Registry::Register(OpName)

#endif /* TVM_RUNTIME_REGISTRY_H_ */
