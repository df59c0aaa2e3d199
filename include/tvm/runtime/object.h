/*
 * Reference-counted runtime objects from C++ (header-only over the C API; C++14 or later).
 *
 * Every object of this runtime is a tvm-ffi object (24-byte header: reference counts, type index,
 * deleter); the C handles of this API (TVM 0.18's) point 8 bytes into that header, where TVM
 * 0.18's 16-byte header (type index, counter, deleter) lines up with it, so an array handle
 * (DLTensor*) still lies 16 bytes into its object. The header holds tvm-ffi's type index;
 * Object::type_index() gives TVM 0.18's. ObjectRef holds one reference, taken and dropped with
 * TVMObjectRetain / TVMObjectFree, so references held by C++ and by C code count together.
 */
#ifndef TVM_RUNTIME_OBJECT_H_
#define TVM_RUNTIME_OBJECT_H_

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

namespace tvm {
namespace runtime {

/* Type indices fixed by TVM's ABI; other types get theirs when registered. */
struct TypeIndex {
  enum : uint32_t {
    kRoot = 0,
    kRuntimeModule = 1,
    kRuntimeNDArray = 2,
    kRuntimeString = 3,
    kRuntimeArray = 4,
    kRuntimeMap = 5,
    kRuntimeShapeTuple = 6,
    kRuntimePackedFunc = 7,
    kRuntimeDiscoDRef = 8,
    kRuntimeRPCObjectRef = 9,
  };
};

namespace detail {
/* TVM 0.18's number for a type index in the header (tvm-ffi's): its static indices 0-11 sit at
 * tvm-ffi's 64, 73, 70, 65, 128, 129, 69, 68, 130-133; every other index is the same in both. */
inline uint32_t LegacyTypeIndex(uint32_t ffi_index) {
  static const uint32_t kStatic[12] = {64, 73, 70, 65, 128, 129, 69, 68, 130, 131, 132, 133};
  for (uint32_t i = 0; i < 12; ++i) {
    if (kStatic[i] == ffi_index) return i;
  }
  return ffi_index;
}
}  // namespace detail

/* TVM 0.18's view of a runtime object (its handle). Only ever used through pointers. */
class Object {
 public:
  uint32_t type_index() const { return detail::LegacyTypeIndex(type_index_); }
  /* The registered key of this object's type, e.g. "runtime.NDArray". */
  std::string GetTypeKey() const { return TypeIndex2Key(type_index()); }
  /* References held on this object, by C and C++ alike (the strong count of the tvm-ffi header,
   * 8 bytes before this view). */
  int use_count() const {
    const uint64_t* counts = reinterpret_cast<const uint64_t*>(reinterpret_cast<const char*>(this) - 8);
    return static_cast<int>(__atomic_load_n(counts, __ATOMIC_RELAXED) & 0xffffffffu);
  }

  static std::string TypeIndex2Key(uint32_t tindex) {
    char* key = nullptr;
    detail::CheckCall(TVMObjectTypeIndex2Key(tindex, &key));
    std::string out(key);
    std::free(key);
    return out;
  }
  static uint32_t TypeKey2Index(const std::string& key) {
    unsigned tindex = 0;
    detail::CheckCall(TVMObjectTypeKey2Index(key.c_str(), &tindex));
    return tindex;
  }

  Object() = delete;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

 protected:
  uint32_t type_index_;  // tvm-ffi's type index
  uint32_t ffi_padding_;
  void (*deleter_)(void*, int);
};

static_assert(sizeof(void*) != 8 || sizeof(Object) == 16, "TVM 0.18's object header is 16 bytes on LP64");

/* One reference to a runtime object (or none). */
class ObjectRef {
 public:
  ObjectRef() = default;
  ObjectRef(std::nullptr_t) {}  // NOLINT: a null reference
  ObjectRef(const ObjectRef& other) : obj_(other.obj_) {
    if (obj_ != nullptr) TVMObjectRetain(obj_);
  }
  ObjectRef(ObjectRef&& other) noexcept : obj_(other.obj_) { other.obj_ = nullptr; }
  ObjectRef& operator=(const ObjectRef& other) {
    ObjectRef copy(other);
    std::swap(obj_, copy.obj_);
    return *this;
  }
  ObjectRef& operator=(ObjectRef&& other) noexcept {
    std::swap(obj_, other.obj_);
    return *this;
  }
  ~ObjectRef() {
    if (obj_ != nullptr) TVMObjectFree(obj_);
  }

  /* Adopts a reference the caller owns (e.g. a handle a C function returned). */
  static ObjectRef FromOwned(void* object_handle) {
    ObjectRef ref;
    ref.obj_ = object_handle;
    return ref;
  }
  /* Takes a new reference to a handle someone else keeps. */
  static ObjectRef FromBorrowed(void* object_handle) {
    if (object_handle != nullptr) TVMObjectRetain(object_handle);
    return FromOwned(object_handle);
  }

  bool defined() const { return obj_ != nullptr; }
  const Object* get() const { return static_cast<const Object*>(obj_); }
  const Object* operator->() const { return get(); }
  bool same_as(const ObjectRef& other) const { return obj_ == other.obj_; }
  bool operator==(const ObjectRef& other) const { return obj_ == other.obj_; }
  bool operator!=(const ObjectRef& other) const { return obj_ != other.obj_; }
  bool operator<(const ObjectRef& other) const { return obj_ < other.obj_; }
  bool operator==(std::nullptr_t) const { return obj_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return obj_ != nullptr; }
  int use_count() const { return obj_ == nullptr ? 0 : get()->use_count(); }
  /* Type index of the object; kRoot for a null reference. */
  uint32_t type_index() const { return obj_ == nullptr ? TypeIndex::kRoot : get()->type_index(); }

  /* The object's C handle (its header); the reference stays with this ObjectRef. */
  void* handle() const { return obj_; }
  /* Gives the reference to the caller, who must release it (TVMObjectFree and friends). */
  void* release() {
    void* h = obj_;
    obj_ = nullptr;
    return h;
  }

 protected:
  void* obj_ = nullptr;
};

inline bool operator==(std::nullptr_t, const ObjectRef& ref) { return ref == nullptr; }
inline bool operator!=(std::nullptr_t, const ObjectRef& ref) { return ref != nullptr; }

/* Converts a reference to a subclass, checking the object's type (null stays null). */
template <typename SubRef>
inline SubRef Downcast(ObjectRef ref) {
  static_assert(std::is_base_of<ObjectRef, SubRef>::value, "Downcast needs an ObjectRef subclass");
  if (ref.defined() && !SubRef::IsInstance(ref.type_index())) {
    throw Error("Downcast from " + ref->GetTypeKey() + " to " + SubRef::TypeName() + " failed");
  }
  return SubRef::FromObject(std::move(ref));
}

namespace detail {

/* A global function's handle, looked up once per call site (the reference is kept for good). */
inline void* GetGlobalHandle(const char* name) {
  void* handle = nullptr;
  CheckCall(TVMFuncGetGlobal(name, &handle));
  if (handle == nullptr) throw Error(std::string("global function `") + name + "` is not registered");
  return handle;
}

}  // namespace detail
}  // namespace runtime

using runtime::Downcast;
using runtime::Object;
using runtime::ObjectRef;
}  // namespace tvm

#endif /* TVM_RUNTIME_OBJECT_H_ */
