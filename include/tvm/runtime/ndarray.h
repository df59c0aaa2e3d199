/*
 * tvm::runtime::NDArray: a reference-counted tensor (header-only over the C API; C++14 or later).
 *
 * An NDArray holds one reference to an array object of the runtime, the same object a C
 * TVMArrayHandle (a DLTensor* 16 bytes into it) designates: NDArray::FromHandle / handle()
 * cross between the two, and references from C and C++ count together.
 */
#ifndef TVM_RUNTIME_NDARRAY_H_
#define TVM_RUNTIME_NDARRAY_H_

#include <dlpack/dlpack.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/container/shape_tuple.h>
#include <tvm/runtime/container/string.h>
#include <tvm/runtime/data_type.h>
#include <tvm/runtime/object.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tvm {

using Device = DLDevice;

namespace runtime {

using tvm::Device;

/* Number of bytes of a tensor's data, assumed compact. */
inline size_t GetDataSize(const DLTensor& arr) {
  size_t size = 1;
  for (int i = 0; i < arr.ndim; ++i) size *= static_cast<size_t>(arr.shape[i]);
  return size * ((static_cast<size_t>(arr.dtype.bits) * arr.dtype.lanes + 7) / 8);
}

/* Whether a tensor is compact in row-major order. */
inline bool IsContiguous(const DLTensor& arr) {
  if (arr.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = arr.ndim; i-- > 0;) {
    if (arr.shape[i] == 1) continue;
    if (arr.strides[i] != expected) return false;
    expected *= arr.shape[i];
  }
  return true;
}

class NDArray : public ObjectRef {
 public:
  /* Offset of the DLTensor from an array object's handle (TVM 0.18's 16-byte view of the header). */
  static constexpr size_t kDLTensorOffset = 16;

  NDArray() = default;
  NDArray(std::nullptr_t) {}  // NOLINT

  /* Allocates a compact array (uninitialised data). */
  static NDArray Empty(ShapeTuple shape, DLDataType dtype, Device dev) {
    DLTensor* handle = nullptr;
    detail::CheckCall(TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), dtype.code, dtype.bits,
                                    dtype.lanes, dev.device_type, dev.device_id, &handle));
    return FromOwnedHandle(handle);
  }

  /* Adopts an array handle the caller owns (e.g. from TVMArrayAlloc); it is freed with the
   * NDArray. NULL gives a null NDArray. */
  static NDArray FromOwnedHandle(DLTensor* handle) {
    NDArray arr;
    arr.obj_ = handle == nullptr ? nullptr : reinterpret_cast<char*>(handle) - kDLTensorOffset;
    return arr;
  }
  /* Takes a new reference to an array handle that someone else keeps. */
  static NDArray FromHandle(DLTensor* handle) {
    NDArray arr = FromOwnedHandle(handle);
    if (arr.obj_ != nullptr) TVMObjectRetain(arr.obj_);
    return arr;
  }

  /* The array's C handle (TVMArrayHandle); the reference stays with this NDArray. */
  DLTensor* handle() const {
    return obj_ == nullptr ? nullptr : reinterpret_cast<DLTensor*>(static_cast<char*>(obj_) + kDLTensorOffset);
  }
  const DLTensor* operator->() const { return handle(); }
  const DLTensor* get() const { return handle(); }

  ShapeTuple Shape() const {
    const DLTensor* t = CheckedTensor();
    return ShapeTuple(t->shape, t->shape + t->ndim);
  }
  runtime::DataType DataType() const { return runtime::DataType(CheckedTensor()->dtype); }
  bool IsContiguous() const { return ::tvm::runtime::IsContiguous(*CheckedTensor()); }

  /* Copies all data from another tensor of the same size (any device). */
  void CopyFrom(const DLTensor* other) {
    CopyFromTo(other, const_cast<DLTensor*>(CheckedTensor()));
  }
  void CopyFrom(const NDArray& other) { CopyFrom(other.CheckedTensor()); }
  /* Copies all data into another tensor of the same size (any device). */
  void CopyTo(DLTensor* other) const { CopyFromTo(CheckedTensor(), other); }
  void CopyTo(const NDArray& other) const { CopyFromTo(CheckedTensor(), const_cast<DLTensor*>(other.CheckedTensor())); }
  /* A new array on `dev` holding a copy of this one. */
  NDArray CopyTo(const Device& dev) const {
    const DLTensor* t = CheckedTensor();
    NDArray out = Empty(Shape(), t->dtype, dev);
    CopyTo(out);
    return out;
  }
  /* Copies `nbytes` (the array's size) from host memory into the array. */
  void CopyFromBytes(const void* data, size_t nbytes) {
    detail::CheckCall(TVMArrayCopyFromBytes(const_cast<DLTensor*>(CheckedTensor()), const_cast<void*>(data), nbytes));
  }
  /* Copies the array's `nbytes` (its size) into host memory. */
  void CopyToBytes(void* data, size_t nbytes) const {
    detail::CheckCall(TVMArrayCopyToBytes(const_cast<DLTensor*>(CheckedTensor()), data, nbytes));
  }

  /* Exports as a DLPack tensor sharing the data; the receiver calls its deleter. */
  DLManagedTensor* ToDLPack() const {
    DLManagedTensor* out = nullptr;
    detail::CheckCall(TVMArrayToDLPack(const_cast<DLTensor*>(CheckedTensor()), &out));
    return out;
  }
  /* Adopts a DLPack tensor without copying; its deleter runs when the array dies. */
  static NDArray FromDLPack(DLManagedTensor* tensor) {
    DLTensor* handle = nullptr;
    detail::CheckCall(TVMArrayFromDLPack(tensor, &handle));
    return FromOwnedHandle(handle);
  }

  /* Copies between two tensors of the same size, on the given stream (NULL: done on return). */
  static void CopyFromTo(const DLTensor* from, DLTensor* to, TVMStreamHandle stream = nullptr) {
    detail::CheckCall(TVMDeviceCopyDataFromTo(const_cast<DLTensor*>(from), to, stream));
  }

  static bool IsInstance(uint32_t type_index) { return type_index == TypeIndex::kRuntimeNDArray; }
  static const char* TypeName() { return "runtime.NDArray"; }
  static NDArray FromObject(ObjectRef ref) {
    NDArray arr;
    arr.obj_ = ref.release();
    return arr;
  }

 private:
  const DLTensor* CheckedTensor() const {
    if (obj_ == nullptr) throw Error("the NDArray is null");
    return handle();
  }
};

inline std::ostream& operator<<(std::ostream& os, const DLDevice& dev) {
  switch (dev.device_type) {
    case kDLCPU:
      os << "cpu";
      break;
    case kDLCUDA:
      os << "cuda";
      break;
    case kDLOpenCL:
      os << "opencl";
      break;
    case kDLVulkan:
      os << "vulkan";
      break;
    case kDLMetal:
      os << "metal";
      break;
    case kDLROCM:
      os << "rocm";
      break;
    default:
      os << "device" << static_cast<int>(dev.device_type);
      break;
  }
  return os << '(' << dev.device_id << ')';
}

}  // namespace runtime
}  // namespace tvm

#endif /* TVM_RUNTIME_NDARRAY_H_ */
