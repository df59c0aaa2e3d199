// The C++ functions of tvm-ffi's library (module.h, json.h, serialization.h, structural_*.h,
// dataclass.h, visit_error_context.h) that programs compiled against tvm-ffi's headers link
// against, written over this runtime's C ABI: each one calls a global function of the runtime
// registry (the names the tvm-ffi library registers them under) or the module globals. Compiled
// by build.rs against the vendored headers (third_party/tvm_ffi/include); exports.map lists the
// symbols the shared libraries export.
//
// Two kinds of module meet here. A module made by C++ code (a subclass of ModuleObj) is a
// foreign object to the Rust side, which reaches its virtual functions through the
// `tvmrt_cxx_module_*` functions at the end of this file. A module made by the Rust side carries
// the vtable of `RuntimeModuleView` before its header, so virtual calls on it reach the module
// globals; `Module::LoadFromFile` hands it to C++ callers inside a `HostedModule`, a ModuleObj
// whose virtual functions call the module globals on it (the Rust side unwraps it again).

#include <tvm/ffi/extra/dataclass.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/extra/serialization.h>
#include <tvm/ffi/extra/structural_equal.h>
#include <tvm/ffi/extra/structural_hash.h>
#include <tvm/ffi/extra/visit_error_context.h>

#include <atomic>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>
#include <utility>

// The Rust side's table of context symbols (TVMFFIEnvModRegisterContextSymbol), installed at
// initialization: it calls `visit(ctx, name, address)` for each.
using SymbolVisit = void (*)(void* ctx, const char* name, void* address);
using SymbolLister = void (*)(SymbolVisit visit, void* ctx);
static std::atomic<SymbolLister> symbol_lister{nullptr};
extern "C" void tvmrt_cxx_install_symbol_lister(SymbolLister lister) { symbol_lister.store(lister); }

namespace tvm {
namespace ffi {
namespace {

// The global `name`, or a RuntimeError naming it when this runtime does not register it.
Function Global(const char* name) {
  Optional<Function> f = Function::GetGlobal(name);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "`" << name
                                << "` is not implemented by this runtime yet (no global function of that name)";
  }
  return *f;
}

// The vtable a C++ object's first word points to (a polymorphic class's vptr, Itanium ABI).
const void* VtableOf(const ModuleObj* m) { return *reinterpret_cast<const void* const*>(m); }

// HostedModule's vtable, recorded by its constructor (NULL until one is made). HostedModule is
// final, so a module is one exactly when its vptr is this: no dynamic_cast, which reads the
// type info that C++ modules compiled without RTTI (TVM's LLVM module) do not have.
std::atomic<const void*> hosted_vtable{nullptr};

// A module made by the Rust side, seen by C++ code as a ModuleObj.
class HostedModule final : public ModuleObj {
 public:
  explicit HostedModule(ObjectRef inner)
      : inner_(std::move(inner)), kind_(Global("ffi.ModuleGetKind")(inner_).cast<String>()) {
    hosted_vtable.store(VtableOf(this), std::memory_order_release);
  }

  const char* kind() const final { return kind_.c_str(); }
  Optional<Function> GetFunction(const String& name) final { return Lookup(name, false); }
  Optional<Function> Lookup(const String& name, bool query_imports) {
    return Global("ffi.ModuleGetFunction")(inner_, name, query_imports).cast<Optional<Function>>();
  }
  Optional<String> GetFunctionDoc(const String& name) final { return Text("ffi.ModuleGetFunctionDoc", name); }
  Optional<String> GetFunctionMetadata(const String& name) final {
    return Text("ffi.ModuleGetFunctionMetadata", name);
  }
  int GetPropertyMask() const final { return Global("ffi.ModuleGetPropertyMask")(inner_).cast<int>(); }
  String InspectSource(const String& format) const final {
    return Global("ffi.ModuleInspectSource")(inner_, format).cast<String>();
  }
  Array<String> GetWriteFormats() const final {
    return Global("ffi.ModuleGetWriteFormats")(inner_).cast<Array<String>>();
  }
  void WriteToFile(const String& file_name, const String& format) const final {
    Global("ffi.ModuleWriteToFile")(inner_, file_name, format);
  }
  void ImportModule(const Module& other) final { Global("ffi.ModuleImportModule")(inner_, other); }
  void ClearImports() final { Global("ffi.ModuleClearImports")(inner_); }
  const ObjectRef& inner() const { return inner_; }

 private:
  Optional<String> Text(const char* global, const String& name) {
    return Global(global)(inner_, name, false).cast<Optional<String>>();
  }
  ObjectRef inner_;
  String kind_;
};

// The C++ face of every module the Rust side makes: the runtime writes this class's vtable
// pointer into the 8 bytes before each of its module objects (where a C++ ModuleObj keeps its
// vptr; the runtime's own deleters do not use that slot), so C++ code that takes such a module
// out of an Any and calls a virtual function on it lands here, and each call goes to the
// module globals on the object itself. Never constructed except once, to read the vtable.
class RuntimeModuleView final : public ModuleObj {
 public:
  const char* kind() const final {
    // Kinds are few and live as long as the process, so the pointer stays valid.
    static std::mutex mu;
    static std::set<std::string> kinds;
    std::string k = Global("ffi.ModuleGetKind")(Self()).cast<String>();
    std::lock_guard<std::mutex> lock(mu);
    return kinds.insert(std::move(k)).first->c_str();
  }
  Optional<Function> GetFunction(const String& name) final {
    return Global("ffi.ModuleGetFunction")(Self(), name, false).cast<Optional<Function>>();
  }
  Optional<String> GetFunctionDoc(const String& name) final {
    return Global("ffi.ModuleGetFunctionDoc")(Self(), name, false).cast<Optional<String>>();
  }
  Optional<String> GetFunctionMetadata(const String& name) final {
    return Global("ffi.ModuleGetFunctionMetadata")(Self(), name, false).cast<Optional<String>>();
  }
  int GetPropertyMask() const final { return Global("ffi.ModuleGetPropertyMask")(Self()).cast<int>(); }
  String InspectSource(const String& format) const final {
    return Global("ffi.ModuleInspectSource")(Self(), format).cast<String>();
  }
  Array<String> GetWriteFormats() const final {
    return Global("ffi.ModuleGetWriteFormats")(Self()).cast<Array<String>>();
  }
  void WriteToFile(const String& file_name, const String& format) const final {
    Global("ffi.ModuleWriteToFile")(Self(), file_name, format);
  }

 private:
  ObjectRef Self() const { return GetRef<ObjectRef>(static_cast<const Object*>(this)); }
};

// The mark the runtime leaves in the header padding of every object it makes (tvm-ffi's own
// objects, and C++ ones, have 0 there): such a module has no C++ vtable.
constexpr uint32_t kMadeByRuntime = 0x72766d74;

bool MadeByRuntime(const Object* obj) { return details::ObjectUnsafe::GetHeader(obj)->__padding == kMadeByRuntime; }

// The runtime's module behind `m`: `m` itself when the runtime made it (reached through an
// unchecked cast), the module a HostedModule carries, else a null reference (a C++ module).
const HostedModule* AsHosted(const ModuleObj* m) {
  if (MadeByRuntime(m)) return nullptr;
  const void* hosted = hosted_vtable.load(std::memory_order_acquire);
  return hosted != nullptr && VtableOf(m) == hosted ? static_cast<const HostedModule*>(m) : nullptr;
}

ObjectRef RuntimeModule(const ModuleObj* m) {
  if (MadeByRuntime(m)) return GetRef<ObjectRef>(static_cast<const Object*>(m));
  if (auto* hosted = AsHosted(m)) return hosted->inner();
  return ObjectRef(nullptr);
}

std::string KindOf(const ModuleObj* m) {
  if (!MadeByRuntime(m)) return m->kind();
  return Global("ffi.ModuleGetKind")(GetRef<ObjectRef>(static_cast<const Object*>(m))).cast<String>();
}

// Whether `target` is `from` or reachable from it through C++ import lists.
bool Reaches(const ModuleObj* from, const ModuleObj* target) {
  if (from == target) return true;
  for (const Any& imp : from->imports()) {
    if (auto m = imp.as<ModuleObj>(); m && !MadeByRuntime(m) && Reaches(m, target)) return true;
  }
  return false;
}

// Looks `name` up in each import (depth first) through `global(import, name, true)`, so Rust and
// C++ modules in the list are searched alike.
template <typename T>
Optional<T> FromImports(const Array<Any>& imports, const char* global, const String& name) {
  for (const Any& imp : imports) {
    Optional<T> found = Global(global)(imp, name, true).cast<Optional<T>>();
    if (found.has_value()) return found;
  }
  return std::nullopt;
}

}  // namespace

Optional<Function> ModuleObj::GetFunction(const String& name, bool query_imports) {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    return Global("ffi.ModuleGetFunction")(rt, name, query_imports).cast<Optional<Function>>();
  }
  Optional<Function> own = GetFunction(name);
  if (own.has_value() || !query_imports) return own;
  return FromImports<Function>(imports_, "ffi.ModuleGetFunction", name);
}

bool ModuleObj::ImplementsFunction(const String& name, bool query_imports) {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    return Global("ffi.ModuleImplementsFunction")(rt, name, query_imports).cast<bool>();
  }
  if (ImplementsFunction(name)) return true;
  for (const Any& imp : query_imports ? imports_ : Array<Any>()) {
    if (Global("ffi.ModuleImplementsFunction")(imp, name, true).cast<bool>()) return true;
  }
  return false;
}

Optional<String> ModuleObj::GetFunctionDoc(const String& name, bool query_imports) {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    return Global("ffi.ModuleGetFunctionDoc")(rt, name, query_imports).cast<Optional<String>>();
  }
  Optional<String> own = GetFunctionDoc(name);
  if (own.has_value() || !query_imports) return own;
  return FromImports<String>(imports_, "ffi.ModuleGetFunctionDoc", name);
}

Optional<String> ModuleObj::GetFunctionMetadata(const String& name, bool query_imports) {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    return Global("ffi.ModuleGetFunctionMetadata")(rt, name, query_imports).cast<Optional<String>>();
  }
  Optional<String> own = GetFunctionMetadata(name);
  if (own.has_value() || !query_imports) return own;
  return FromImports<String>(imports_, "ffi.ModuleGetFunctionMetadata", name);
}

void ModuleObj::ImportModule(const Module& other) {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    Global("ffi.ModuleImportModule")(rt, other);
    return;
  }
  if (Reaches(other.get(), this)) {
    TVM_FFI_THROW(ValueError) << "cannot import module `" << KindOf(other.get()) << "` into `" << kind()
                              << "`: the import would create a cycle";
  }
  imports_.push_back(other);
}

// tvm-ffi's `TVMFFIEnvModLookupFromImports` for a module C++ code made (e.g. apache-tvm's LLVM
// JIT module, whose kernels pass themselves as `__tvm_ffi__library_ctx`): the module's imports,
// then the globals, the function kept in the module's lookup cache (compiled code borrows it).
struct ModuleObj::InternalUnsafe {
  static TVMFFIObject* GetFunctionFromImports(ModuleObj* self, const char* name) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    String s_name(name);
    auto it = self->import_lookup_cache_.find(s_name);
    if (it != self->import_lookup_cache_.end()) return Borrowed((*it).second);
    Optional<Function> found;
    for (const Any& imp : self->imports_) {
      found = Global("ffi.ModuleGetFunction")(imp, s_name, true).cast<Optional<Function>>();
      if (found.has_value()) break;
    }
    if (!found.has_value()) found = Function::GetGlobal(s_name);
    if (!found.has_value()) {
      TVM_FFI_THROW(RuntimeError) << "Cannot find function " << name << " in the imported modules or global registry.";
    }
    self->import_lookup_cache_.Set(s_name, *found);
    return Borrowed(*found);
  }

 private:
  static TVMFFIObject* Borrowed(const Function& f) {
    return const_cast<TVMFFIObject*>(details::ObjectUnsafe::GetHeader(static_cast<const Object*>(f.get())));
  }
};

void ModuleObj::ClearImports() {
  if (ObjectRef rt = RuntimeModule(this); rt.defined()) {
    Global("ffi.ModuleClearImports")(rt);
    return;
  }
  imports_.clear();
}

// The library owns ModuleObj's type index cache (and its guard), one for every user.
[[gnu::used]] static int32_t (*const kModuleTypeIndex)() = &ModuleObj::_GetOrAllocRuntimeTypeIndex;

Module Module::LoadFromFile(const String& file_name) {
  ObjectRef loaded = Global("ffi.ModuleLoadFromFile")(file_name).cast<ObjectRef>();
  // A module made by C++ code (a loader written in C++) is a ModuleObj already.
  if (auto* cxx = loaded.as<ModuleObj>(); cxx && !MadeByRuntime(cxx)) {
    return Module(GetObjectPtr<ModuleObj>(const_cast<ModuleObj*>(cxx)));
  }
  return Module(make_object<HostedModule>(std::move(loaded)));
}

void Module::VisitContextSymbols(const TypedFunction<void(String, void*)>& callback) {
  TVMFFIVersion version;
  TVMFFIGetVersion(&version);  // (any call into the runtime initializes it, installing the lister)
  SymbolLister lister = symbol_lister.load();
  if (lister == nullptr) TVM_FFI_THROW(RuntimeError) << "the runtime did not install its context symbol table";
  std::vector<std::pair<std::string, void*>> symbols;
  lister(
      [](void* ctx, const char* name, void* address) {
        static_cast<std::vector<std::pair<std::string, void*>>*>(ctx)->emplace_back(name, address);
      },
      &symbols);
  for (auto& [name, address] : symbols) callback(String(name), address);
}

namespace json {
Value Parse(const String& json_str, String* error_msg) {
  if (error_msg == nullptr) return Global("ffi.json.Parse")(json_str);
  try {
    return Global("ffi.json.Parse")(json_str);
  } catch (const Error& err) {
    *error_msg = err.message();
    return Value(nullptr);
  }
}

String Stringify(const Value& value, const Optional<int>& indent) {
  return Global("ffi.json.Stringify")(value, indent).cast<String>();
}
}  // namespace json

json::Value ToJSONGraph(const Any& value, const Any& metadata) { return Global("ffi.ToJSONGraph")(value, metadata); }
Any FromJSONGraph(const json::Value& value) { return Global("ffi.FromJSONGraph")(value); }

bool StructuralEqual::Equal(const Any& lhs, const Any& rhs, bool map_free_vars, bool skip_tensor_content) {
  return Global("ffi.StructuralEqual")(lhs, rhs, map_free_vars, skip_tensor_content).cast<bool>();
}

Optional<reflection::AccessPathPair> StructuralEqual::GetFirstMismatch(const Any& lhs, const Any& rhs,
                                                                       bool map_free_vars,
                                                                       bool skip_tensor_content) {
  return Global("ffi.GetFirstStructuralMismatch")(lhs, rhs, map_free_vars, skip_tensor_content)
      .cast<Optional<reflection::AccessPathPair>>();
}

uint64_t StructuralHash::Hash(const Any& value, bool map_free_vars, bool skip_tensor_content) {
  return static_cast<uint64_t>(Global("ffi.StructuralHash")(value, map_free_vars, skip_tensor_content).cast<int64_t>());
}

Any DeepCopy(const Any& value) { return Global("ffi.DeepCopy")(value); }
String ReprPrint(const Any& value) { return Global("ffi.ReprPrint")(value).cast<String>(); }
int64_t RecursiveHash(const Any& value) { return Global("ffi.RecursiveHash")(value).cast<int64_t>(); }
bool RecursiveEq(const Any& lhs, const Any& rhs) { return Global("ffi.RecursiveEq")(lhs, rhs).cast<bool>(); }
bool RecursiveLt(const Any& lhs, const Any& rhs) { return Global("ffi.RecursiveLt")(lhs, rhs).cast<bool>(); }
bool RecursiveLe(const Any& lhs, const Any& rhs) { return Global("ffi.RecursiveLe")(lhs, rhs).cast<bool>(); }
bool RecursiveGt(const Any& lhs, const Any& rhs) { return Global("ffi.RecursiveGt")(lhs, rhs).cast<bool>(); }
bool RecursiveGe(const Any& lhs, const Any& rhs) { return Global("ffi.RecursiveGe")(lhs, rhs).cast<bool>(); }

Array<reflection::AccessPath> VisitErrorContext::FindAccessPaths(const ObjectRef& root,
                                                                const VisitErrorContext& visit_context,
                                                                bool allow_prefix_match) {
  return Global("ffi.VisitErrorContext.FindAccessPaths")(root, visit_context, allow_prefix_match)
      .cast<Array<reflection::AccessPath>>();
}

}  // namespace ffi
}  // namespace tvm

// What the Rust side calls (not exported from the libraries). Each returns 0, or -1 with the
// error raised (TVMFFIErrorMoveFromRaised takes it); no C++ exception leaves them.
namespace {

template <typename F>
int Guarded(F&& body) {
  try {
    body();
    return 0;
  } catch (const tvm::ffi::Error& err) {
    tvm::ffi::details::SetSafeCallRaised(err);
  } catch (const std::exception& ex) {
    TVMFFIErrorSetRaisedFromCStr("InternalError", ex.what());
  } catch (...) {
    TVMFFIErrorSetRaisedFromCStr("InternalError", "a C++ module threw an exception that is not an std::exception");
  }
  return -1;
}

tvm::ffi::ModuleObj* AsModule(TVMFFIObjectHandle handle) {
  return tvm::ffi::details::ObjectUnsafe::RawObjectPtrFromUnowned<tvm::ffi::ModuleObj>(
      static_cast<TVMFFIObject*>(handle));
}

}  // namespace

// The Rust module a HostedModule carries (borrowed), or NULL for a module C++ code made.
// The vtable pointer of RuntimeModuleView, for the runtime to put before its module objects.
extern "C" const void* tvmrt_cxx_runtime_module_vptr() {
  static const void* vptr = [] {
    alignas(tvm::ffi::RuntimeModuleView) static unsigned char storage[sizeof(tvm::ffi::RuntimeModuleView)];
    auto* view = new (storage) tvm::ffi::RuntimeModuleView();
    return *reinterpret_cast<const void* const*>(view);
  }();
  return vptr;
}

extern "C" TVMFFIObjectHandle tvmrt_cxx_module_unwrap(TVMFFIObjectHandle module) {
  const auto* hosted = tvm::ffi::AsHosted(AsModule(module));
  return hosted ? tvm::ffi::details::ObjectUnsafe::GetHeader(hosted->inner().get()) : nullptr;
}

// `module->kind()`: a string the module keeps.
extern "C" int tvmrt_cxx_module_kind(TVMFFIObjectHandle module, const char** out) {
  return Guarded([&] { *out = AsModule(module)->kind(); });
}

// The module's own function `name` (a new reference in `*out`, NULL when it has none).
extern "C" int tvmrt_cxx_module_get_function(TVMFFIObjectHandle module, const char* name, size_t len,
                                             TVMFFIObjectHandle* out) {
  return Guarded([&] {
    tvm::ffi::Optional<tvm::ffi::Function> f = AsModule(module)->GetFunction(tvm::ffi::String(name, len));
    *out = f.has_value() ? tvm::ffi::details::ObjectUnsafe::MoveObjectRefToTVMFFIObjectPtr(std::move(*f)) : nullptr;
  });
}

// One of the module's virtual functions taking up to two strings, its result moved into `*out`:
// 0 GetFunctionDoc(a), 1 GetFunctionMetadata(a), 2 GetPropertyMask(), 3 InspectSource(a),
// 4 GetWriteFormats(), 5 WriteToFile(a, b), 6 ImplementsFunction(a) (its own functions), 7 imports().
extern "C" int tvmrt_cxx_module_query(TVMFFIObjectHandle module, int what, const char* a, size_t a_len,
                                      const char* b, size_t b_len, TVMFFIAny* out) {
  return Guarded([&] {
    tvm::ffi::ModuleObj* m = AsModule(module);
    tvm::ffi::String first(a, a_len), second(b, b_len);
    tvm::ffi::Any result;
    switch (what) {
      case 0: result = m->GetFunctionDoc(first); break;
      case 1: result = m->GetFunctionMetadata(first); break;
      case 2: result = m->GetPropertyMask(); break;
      case 3: result = m->InspectSource(first); break;
      case 4: result = m->GetWriteFormats(); break;
      case 5: m->WriteToFile(first, second); break;
      case 6: result = m->ImplementsFunction(first); break;
      case 7: result = m->imports(); break;
      default: TVM_FFI_THROW(ValueError) << "unknown module query " << what;
    }
    *out = tvm::ffi::details::AnyUnsafe::MoveAnyToTVMFFIAny(std::move(result));
  });
}

// `module->ImportModule(other)`, `other` a live module object.
extern "C" int tvmrt_cxx_module_import(TVMFFIObjectHandle module, TVMFFIObjectHandle other) {
  return Guarded([&] {
    AsModule(module)->ImportModule(tvm::ffi::Module(
        tvm::ffi::details::ObjectUnsafe::ObjectPtrFromUnowned<tvm::ffi::ModuleObj>(static_cast<TVMFFIObject*>(other))));
  });
}

// `TVMFFIEnvModLookupFromImports` for a module C++ code made: `*out` borrowed from its cache.
extern "C" int tvmrt_cxx_module_lookup_from_imports(TVMFFIObjectHandle module, const char* name,
                                                    TVMFFIObjectHandle* out) {
  return Guarded([&] {
    *out = tvm::ffi::ModuleObj::InternalUnsafe::GetFunctionFromImports(AsModule(module), name);
  });
}

// `module->ClearImports()`.
extern "C" int tvmrt_cxx_module_clear_imports(TVMFFIObjectHandle module) {
  return Guarded([&] { AsModule(module)->ClearImports(); });
}
