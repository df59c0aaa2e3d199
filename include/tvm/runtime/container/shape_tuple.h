/*
 * tvm::runtime::ShapeTuple: a shape, i.e. a sequence of int64_t (header-only; C++14 or later).
 *
 * Here it is a C++ value holding its dimensions; passed to a packed function it becomes a
 * runtime.ShapeTuple object (made once per value by the runtime's "runtime.ShapeTuple"), and a
 * runtime.ShapeTuple object received from one is read into a ShapeTuple.
 */
#ifndef TVM_RUNTIME_CONTAINER_SHAPE_TUPLE_H_
#define TVM_RUNTIME_CONTAINER_SHAPE_TUPLE_H_

#include <tvm/runtime/object.h>

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <ostream>
#include <vector>

namespace tvm {
namespace runtime {

class ShapeTuple {
 public:
  using index_type = int64_t;
  using iterator = std::vector<int64_t>::const_iterator;

  ShapeTuple() = default;
  ShapeTuple(const ShapeTuple& other) : data_(other.data_), object_(other.CachedObject()) {}
  ShapeTuple(ShapeTuple&& other) noexcept = default;
  ShapeTuple& operator=(const ShapeTuple& other) {
    if (this != &other) {
      ShapeTuple copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  ShapeTuple& operator=(ShapeTuple&& other) noexcept = default;
  ShapeTuple(std::initializer_list<int64_t> shape) : data_(shape) {}
  ShapeTuple(std::vector<int64_t> shape) : data_(std::move(shape)) {}  // NOLINT
  template <typename Iterator>
  ShapeTuple(Iterator begin, Iterator end) : data_(begin, end) {}

  size_t size() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t at(size_t i) const {
    if (i >= data_.size()) {
      throw Error("ShapeTuple index " + std::to_string(i) + " out of range (size " + std::to_string(data_.size()) + ")");
    }
    return data_[i];
  }
  int64_t front() const { return at(0); }
  int64_t back() const { return at(data_.size() - 1); }
  const int64_t* data() const { return data_.data(); }
  iterator begin() const { return data_.begin(); }
  iterator end() const { return data_.end(); }
  operator std::vector<int64_t>() const { return data_; }  // NOLINT
  const std::vector<int64_t>& vec() const { return data_; }

  /* The runtime.ShapeTuple object for this shape, made on first use (threads passing the same
   * ShapeTuple at once may each make one; one is kept). */
  const ObjectRef& AsObject() const {
    if (!CachedObject().defined()) {
      static void* make = detail::GetGlobalHandle("runtime.ShapeTuple");
      std::vector<TVMValue> values(data_.size());
      std::vector<int> codes(data_.size(), kDLInt);
      for (size_t i = 0; i < data_.size(); ++i) values[i].v_int64 = data_[i];
      TVMValue ret;
      int ret_code = kTVMNullptr;
      detail::CheckCall(TVMFuncCall(make, values.data(), codes.data(), static_cast<int>(values.size()), &ret, &ret_code));
      if (ret_code != kTVMObjectHandle) throw Error("runtime.ShapeTuple did not return an object");
      ObjectRef made = ObjectRef::FromOwned(ret.v_handle);
      std::lock_guard<std::mutex> lock(CacheMutex());
      if (!object_.defined()) object_ = std::move(made);
    }
    // Set once and never changed afterwards, so the reference may be read without the lock.
    return object_;
  }

  /* Reads a runtime.ShapeTuple object (through runtime.GetShapeTupleSize / GetShapeTupleElem). */
  static ShapeTuple FromObject(void* object_handle) {
    static void* get_size = detail::GetGlobalHandle("runtime.GetShapeTupleSize");
    static void* get_elem = detail::GetGlobalHandle("runtime.GetShapeTupleElem");
    TVMValue args[2];
    int codes[2] = {kTVMObjectHandle, kDLInt};
    args[0].v_handle = object_handle;
    TVMValue ret;
    int ret_code = kTVMNullptr;
    detail::CheckCall(TVMFuncCall(get_size, args, codes, 1, &ret, &ret_code));
    std::vector<int64_t> dims(static_cast<size_t>(ret.v_int64));
    for (size_t i = 0; i < dims.size(); ++i) {
      args[1].v_int64 = static_cast<int64_t>(i);
      detail::CheckCall(TVMFuncCall(get_elem, args, codes, 2, &ret, &ret_code));
      dims[i] = ret.v_int64;
    }
    ShapeTuple shape(std::move(dims));
    shape.object_ = ObjectRef::FromBorrowed(object_handle);
    return shape;
  }

 private:
  static std::mutex& CacheMutex() {
    static std::mutex* mu = new std::mutex();
    return *mu;
  }
  ObjectRef CachedObject() const {
    std::lock_guard<std::mutex> lock(CacheMutex());
    return object_;
  }

  std::vector<int64_t> data_;
  mutable ObjectRef object_;
};

inline bool operator==(const ShapeTuple& a, const ShapeTuple& b) { return a.vec() == b.vec(); }
inline bool operator!=(const ShapeTuple& a, const ShapeTuple& b) { return a.vec() != b.vec(); }
inline std::ostream& operator<<(std::ostream& os, const ShapeTuple& shape) {
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i == 0 ? "" : ", ") << shape[i];
  return os << ']';
}

}  // namespace runtime

using runtime::ShapeTuple;
}  // namespace tvm

#endif /* TVM_RUNTIME_CONTAINER_SHAPE_TUPLE_H_ */
