/*
 * Packed functions from C++ (header-only over the C API; C++14 or later).
 *
 *   PackedFunc f = mod.GetFunction("addone");
 *   f(x, y);                                 // any mix of ints, floats, bools, strings,
 *                                            // TVMByteArray, DLTensor*, NDArray, Module,
 *                                            // PackedFunc, DLDevice, DLDataType, ShapeTuple,
 *                                            // nullptr
 *   int64_t n = g(1, 2.5, "text");           // results convert implicitly (TVMRetValue)
 *   PackedFunc h([](TVMArgs args, TVMRetValue* rv) { *rv = args[0].operator int() + 1; });
 *   TypedPackedFunc<int(int)> t = [](int x) { return x + 1; };
 *
 * A call goes through TVMFuncCall; a failure becomes a tvm::runtime::Error carrying the
 * runtime's message. A C++ function exposed as a PackedFunc reports an exception it throws as
 * its error (the exception's what()), which the caller's side sees as usual.
 */
#ifndef TVM_RUNTIME_PACKED_FUNC_H_
#define TVM_RUNTIME_PACKED_FUNC_H_

#include <tvm/runtime/module.h>

#include <dlpack/dlpack.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/container/shape_tuple.h>
#include <tvm/runtime/container/string.h>
#include <tvm/runtime/data_type.h>
#include <tvm/runtime/logging.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/object.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tvm {
namespace runtime {

class TVMArgs;
class TVMArgValue;
class TVMRetValue;
template <typename FType>
class TypedPackedFunc;

/* Name of a type code, as in error messages. */
inline const char* ArgTypeCode2Str(int type_code) {
  switch (type_code) {
    case kDLInt:
      return "int";
    case kDLUInt:
      return "uint";
    case kDLFloat:
      return "float";
    case kTVMStr:
      return "str";
    case kTVMBytes:
      return "bytes";
    case kTVMOpaqueHandle:
      return "handle";
    case kTVMNullptr:
      return "NULL";
    case kTVMDLTensorHandle:
      return "ArrayHandle";
    case kTVMDataType:
      return "DLDataType";
    case kDLDevice:
      return "DLDevice";
    case kTVMPackedFuncHandle:
      return "FunctionHandle";
    case kTVMModuleHandle:
      return "ModuleHandle";
    case kTVMNDArrayHandle:
      return "NDArrayContainer";
    case kTVMObjectHandle:
      return "Object";
    case kTVMObjectRValueRefArg:
      return "ObjectRValueRefArg";
    case kTVMArgBool:
      return "bool";
    default:
      return "unknown type code";
  }
}

/* A packed function: takes any number of typed values, returns one. */
class PackedFunc : public ObjectRef {
 public:
  using FType = std::function<void(TVMArgs args, TVMRetValue* rv)>;

  PackedFunc() = default;
  PackedFunc(std::nullptr_t) {}  // NOLINT
  /* A packed function running a C++ callable `void(TVMArgs, TVMRetValue*)`. */
  template <typename TCallable,
            typename = typename std::enable_if<std::is_convertible<TCallable, FType>::value &&
                                               !std::is_base_of<ObjectRef, typename std::decay<TCallable>::type>::value>::type>
  explicit PackedFunc(TCallable body) {
    obj_ = FromBody(FType(std::move(body)));
  }

  /* Calls the function with the given arguments. */
  template <typename... Args>
  inline TVMRetValue operator()(Args&&... args) const;
  /* Calls the function with packed arguments. */
  inline void CallPacked(TVMArgs args, TVMRetValue* rv) const;

  /* Adopts a function handle the caller owns (e.g. from TVMModGetFunction). */
  static PackedFunc FromOwnedHandle(TVMFunctionHandle handle) {
    PackedFunc f;
    f.obj_ = handle;
    return f;
  }
  /* Takes a new reference to a function handle that someone else keeps. */
  static PackedFunc FromHandle(TVMFunctionHandle handle) {
    if (handle != nullptr) TVMObjectRetain(handle);
    return FromOwnedHandle(handle);
  }

  static bool IsInstance(uint32_t type_index) { return type_index == TypeIndex::kRuntimePackedFunc; }
  static const char* TypeName() { return "runtime.PackedFunc"; }
  static PackedFunc FromObject(ObjectRef ref) { return FromOwnedHandle(ref.release()); }

 private:
  static inline void* FromBody(FType body);
  static inline int Trampoline(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                               void* resource);
  static void Finalize(void* resource) { delete static_cast<FType*>(resource); }
};

namespace detail {

[[noreturn]] inline void ThrowTypeMismatch(const char* expected, int type_code) {
  throw Error(std::string("expected ") + expected + " but got " + ArgTypeCode2Str(type_code));
}

/* The object header a value designates (NULL for kTVMNullptr); throws for non-object values. */
inline void* ObjectHandleOf(const TVMValue& value, int type_code, const char* expected) {
  switch (type_code) {
    case kTVMNullptr:
      return nullptr;
    case kTVMObjectHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
      return value.v_handle;
    case kTVMNDArrayHandle:
      return value.v_handle == nullptr ? nullptr : static_cast<char*>(value.v_handle) - NDArray::kDLTensorOffset;
    case kTVMObjectRValueRefArg:
      return value.v_handle == nullptr ? nullptr : *static_cast<void**>(value.v_handle);
    default:
      ThrowTypeMismatch(expected, type_code);
  }
}

/* A new reference of type TRef to the object a value designates, checking its type. */
template <typename TRef>
inline TRef ObjectRefOf(const TVMValue& value, int type_code) {
  void* handle = ObjectHandleOf(value, type_code, TRef::TypeName());
  if (handle != nullptr && !TRef::IsInstance(static_cast<Object*>(handle)->type_index())) {
    throw Error(std::string("expected ") + TRef::TypeName() + " but got " +
                static_cast<Object*>(handle)->GetTypeKey());
  }
  return TRef::FromObject(ObjectRef::FromBorrowed(handle));
}

}  // namespace detail

/* A value with its type code and the conversions common to arguments and results. */
class TVMPODValue_ {
 public:
  operator double() const {
    if (type_code_ == kDLInt || type_code_ == kTVMArgBool) return static_cast<double>(value_.v_int64);
    if (type_code_ != kDLFloat) detail::ThrowTypeMismatch("float", type_code_);
    return value_.v_float64;
  }
  operator int64_t() const {
    if (type_code_ != kDLInt && type_code_ != kTVMArgBool) detail::ThrowTypeMismatch("int", type_code_);
    return value_.v_int64;
  }
  operator uint64_t() const { return static_cast<uint64_t>(operator int64_t()); }
  operator int() const {
    int64_t v = operator int64_t();
    if (v < INT32_MIN || v > INT32_MAX) throw Error("value " + std::to_string(v) + " does not fit in an int");
    return static_cast<int>(v);
  }
  operator bool() const {
    if (type_code_ != kDLInt && type_code_ != kTVMArgBool) detail::ThrowTypeMismatch("bool", type_code_);
    return value_.v_int64 != 0;
  }
  operator void*() const {
    switch (type_code_) {
      case kTVMNullptr:
        return nullptr;
      case kTVMOpaqueHandle:
      case kTVMDLTensorHandle:
      case kTVMNDArrayHandle:
        return value_.v_handle;
      default:
        detail::ThrowTypeMismatch("handle", type_code_);
    }
  }
  operator DLTensor*() const {
    switch (type_code_) {
      case kTVMNullptr:
        return nullptr;
      case kTVMDLTensorHandle:
      case kTVMNDArrayHandle:
        return static_cast<DLTensor*>(value_.v_handle);
      default:
        detail::ThrowTypeMismatch("DLTensor*", type_code_);
    }
  }
  operator Device() const {
    if (type_code_ != kDLDevice) detail::ThrowTypeMismatch("DLDevice", type_code_);
    return value_.v_device;
  }
  operator NDArray() const { return detail::ObjectRefOf<NDArray>(value_, type_code_); }
  operator Module() const { return detail::ObjectRefOf<Module>(value_, type_code_); }
  operator PackedFunc() const { return detail::ObjectRefOf<PackedFunc>(value_, type_code_); }
  operator ObjectRef() const {
    return ObjectRef::FromBorrowed(detail::ObjectHandleOf(value_, type_code_, "Object"));
  }

  int type_code() const { return type_code_; }
  const TVMValue& value() const { return value_; }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(value_.v_handle);
  }
  bool IsObjectRef() const {
    return type_code_ == kTVMObjectHandle || type_code_ == kTVMModuleHandle || type_code_ == kTVMPackedFuncHandle ||
           type_code_ == kTVMNDArrayHandle || type_code_ == kTVMObjectRValueRefArg;
  }

 protected:
  TVMPODValue_() { value_.v_handle = nullptr; }
  TVMPODValue_(TVMValue value, int type_code) : value_(value), type_code_(type_code) {}

  /* Text of a string-like value (str, bytes, a dtype, a runtime.String object). */
  std::string AsString(const std::string* owned) const {
    switch (type_code_) {
      case kTVMStr:
        return owned != nullptr ? *owned : std::string(value_.v_str);
      case kTVMBytes:
        if (owned != nullptr) return *owned;
        return std::string(static_cast<TVMByteArray*>(value_.v_handle)->data,
                           static_cast<TVMByteArray*>(value_.v_handle)->size);
      case kTVMDataType:
        return DLDataType2String(value_.v_type);
      case kTVMObjectHandle:
      case kTVMObjectRValueRefArg: {
        void* h = detail::ObjectHandleOf(value_, type_code_, "str");
        if (h != nullptr && static_cast<Object*>(h)->type_index() == TypeIndex::kRuntimeString) {
          return detail::StringFromObject(h);
        }
        break;
      }
      default:
        break;
    }
    detail::ThrowTypeMismatch("str", type_code_);
  }
  DLDataType AsDataType(const std::string* owned) const {
    if (type_code_ == kTVMDataType) return value_.v_type;
    if (type_code_ == kTVMNullptr) return DataType::Void();
    if (type_code_ == kTVMStr) return String2DLDataType(AsString(owned));
    detail::ThrowTypeMismatch("DLDataType", type_code_);
  }
  ShapeTuple AsShapeTuple() const {
    void* h = detail::ObjectHandleOf(value_, type_code_, "runtime.ShapeTuple");
    if (h == nullptr) return ShapeTuple();
    if (static_cast<Object*>(h)->type_index() != TypeIndex::kRuntimeShapeTuple) {
      throw Error("expected runtime.ShapeTuple but got " + static_cast<Object*>(h)->GetTypeKey());
    }
    return ShapeTuple::FromObject(h);
  }

  TVMValue value_;
  int type_code_ = kTVMNullptr;
};

/* One argument of a packed call; borrowed from the caller for the duration of the call. */
class TVMArgValue : public TVMPODValue_ {
 public:
  TVMArgValue() = default;
  TVMArgValue(TVMValue value, int type_code) : TVMPODValue_(value, type_code) {}

  using TVMPODValue_::operator double;
  using TVMPODValue_::operator int64_t;
  using TVMPODValue_::operator uint64_t;
  using TVMPODValue_::operator int;
  using TVMPODValue_::operator bool;
  using TVMPODValue_::operator void*;
  using TVMPODValue_::operator DLTensor*;
  using TVMPODValue_::operator Device;
  using TVMPODValue_::operator NDArray;
  using TVMPODValue_::operator Module;
  using TVMPODValue_::operator PackedFunc;
  using TVMPODValue_::operator ObjectRef;

  operator std::string() const { return AsString(nullptr); }
  operator String() const { return String(AsString(nullptr)); }
  operator DLDataType() const { return AsDataType(nullptr); }
  operator DataType() const { return DataType(AsDataType(nullptr)); }
  operator ShapeTuple() const { return AsShapeTuple(); }
  template <typename FType>
  operator TypedPackedFunc<FType>() const {
    return TypedPackedFunc<FType>(operator PackedFunc());
  }
};

/* The arguments of a packed call. */
class TVMArgs {
 public:
  const TVMValue* values;
  const int* type_codes;
  int num_args;

  TVMArgs(const TVMValue* values, const int* type_codes, int num_args)
      : values(values), type_codes(type_codes), num_args(num_args) {}
  int size() const { return num_args; }
  TVMArgValue operator[](int i) const {
    if (i < 0 || i >= num_args) {
      throw Error("argument index " + std::to_string(i) + " out of range: the call has " + std::to_string(num_args) +
                  " argument(s)");
    }
    return TVMArgValue(values[i], type_codes[i]);
  }
};

/* The result of a packed call; owns what it holds (object references, string copies). */
class TVMRetValue : public TVMPODValue_ {
 public:
  TVMRetValue() = default;
  TVMRetValue(const TVMRetValue& other) : TVMPODValue_() { Assign(other.value_, other.type_code_, &other.str_); }
  TVMRetValue(TVMRetValue&& other) noexcept : TVMPODValue_(other.value_, other.type_code_), str_(std::move(other.str_)) {
    other.type_code_ = kTVMNullptr;
    other.value_.v_handle = nullptr;
  }
  TVMRetValue(const TVMArgValue& arg) : TVMPODValue_() { Assign(arg.value(), arg.type_code(), nullptr); }  // NOLINT
  ~TVMRetValue() { Clear(); }

  TVMRetValue& operator=(const TVMRetValue& other) {
    if (this != &other) {
      TVMRetValue copy(other);
      Swap(copy);
    }
    return *this;
  }
  TVMRetValue& operator=(TVMRetValue&& other) noexcept {
    Swap(other);
    return *this;
  }
  TVMRetValue& operator=(const TVMArgValue& arg) {
    TVMRetValue copy(arg);
    Swap(copy);
    return *this;
  }
  TVMRetValue& operator=(std::nullptr_t) {
    Clear();
    return *this;
  }
  template <typename T, typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value, int>::type = 0>
  TVMRetValue& operator=(T v) {
    return SetPOD(kDLInt, [&](TVMValue* out) { out->v_int64 = static_cast<int64_t>(v); });
  }
  template <typename T, typename std::enable_if<std::is_enum<T>::value, int>::type = 0>
  TVMRetValue& operator=(T v) {
    return SetPOD(kDLInt, [&](TVMValue* out) { out->v_int64 = static_cast<int64_t>(v); });
  }
  TVMRetValue& operator=(bool v) {
    return SetPOD(kTVMArgBool, [&](TVMValue* out) { out->v_int64 = v ? 1 : 0; });
  }
  TVMRetValue& operator=(double v) {
    return SetPOD(kDLFloat, [&](TVMValue* out) { out->v_float64 = v; });
  }
  TVMRetValue& operator=(void* v) {
    return SetPOD(v == nullptr ? kTVMNullptr : kTVMOpaqueHandle, [&](TVMValue* out) { out->v_handle = v; });
  }
  TVMRetValue& operator=(Device v) {
    return SetPOD(kDLDevice, [&](TVMValue* out) { out->v_device = v; });
  }
  TVMRetValue& operator=(DLDataType v) {
    return SetPOD(kTVMDataType, [&](TVMValue* out) { out->v_type = v; });
  }
  TVMRetValue& operator=(const DataType& v) { return operator=(static_cast<DLDataType>(v)); }
  TVMRetValue& operator=(std::string v) {
    Clear();
    str_ = std::move(v);
    type_code_ = kTVMStr;
    return *this;
  }
  TVMRetValue& operator=(const char* v) {
    if (v == nullptr) return operator=(nullptr);
    return operator=(std::string(v));
  }
  TVMRetValue& operator=(const String& v) { return operator=(v.str()); }
  /* Bytes (kTVMBytes) rather than a string. */
  TVMRetValue& operator=(const TVMByteArray& v) {
    Clear();
    str_.assign(v.data, v.size);
    type_code_ = kTVMBytes;
    return *this;
  }
  TVMRetValue& operator=(const ObjectRef& v) { return SetObject(v); }
  TVMRetValue& operator=(const NDArray& v) { return SetObject(v); }
  TVMRetValue& operator=(const Module& v) { return SetObject(v); }
  TVMRetValue& operator=(const PackedFunc& v) { return SetObject(v); }
  TVMRetValue& operator=(const ShapeTuple& v) { return SetObject(v.AsObject()); }
  template <typename FType>
  TVMRetValue& operator=(const TypedPackedFunc<FType>& f) {
    return SetObject(f.packed());
  }

  using TVMPODValue_::operator double;
  using TVMPODValue_::operator int64_t;
  using TVMPODValue_::operator uint64_t;
  using TVMPODValue_::operator int;
  using TVMPODValue_::operator bool;
  using TVMPODValue_::operator void*;
  using TVMPODValue_::operator DLTensor*;
  using TVMPODValue_::operator Device;
  using TVMPODValue_::operator NDArray;
  using TVMPODValue_::operator Module;
  using TVMPODValue_::operator PackedFunc;
  using TVMPODValue_::operator ObjectRef;

  operator std::string() const { return AsString(&str_); }
  operator String() const { return String(AsString(&str_)); }
  operator DLDataType() const { return AsDataType(&str_); }
  operator DataType() const { return DataType(AsDataType(&str_)); }
  operator ShapeTuple() const { return AsShapeTuple(); }
  template <typename FType>
  operator TypedPackedFunc<FType>() const {
    return TypedPackedFunc<FType>(operator PackedFunc());
  }

  /* Takes over a result TVMFuncCall wrote (object results carry one reference; strings and
   * bytes live in the runtime's thread-local buffer and are copied here). */
  void MoveFromCHost(TVMValue value, int type_code) {
    Clear();
    switch (type_code) {
      case kTVMStr:
        str_ = value.v_str;
        break;
      case kTVMBytes:
        str_.assign(static_cast<TVMByteArray*>(value.v_handle)->data,
                    static_cast<TVMByteArray*>(value.v_handle)->size);
        break;
      default:
        value_ = value;
        break;
    }
    type_code_ = type_code;
  }
  /* The value for a C call (borrowed from this object; bytes are described by a TVMByteArray
   * kept here). */
  void ToC(TVMValue* value, int* type_code) const {
    *type_code = type_code_;
    if (type_code_ == kTVMStr) {
      value->v_str = str_.c_str();
    } else if (type_code_ == kTVMBytes) {
      bytes_.data = str_.data();
      bytes_.size = str_.size();
      value->v_handle = &bytes_;
    } else {
      *value = value_;
    }
  }

 private:
  template <typename F>
  TVMRetValue& SetPOD(int type_code, F fill) {
    Clear();
    fill(&value_);
    type_code_ = type_code;
    return *this;
  }
  TVMRetValue& SetObject(const ObjectRef& ref) {
    ObjectRef copy(ref);
    Clear();
    void* h = copy.release();
    if (h == nullptr) return *this;
    switch (static_cast<Object*>(h)->type_index()) {
      case TypeIndex::kRuntimeNDArray:
        type_code_ = kTVMNDArrayHandle;
        value_.v_handle = static_cast<char*>(h) + NDArray::kDLTensorOffset;
        break;
      case TypeIndex::kRuntimeModule:
        type_code_ = kTVMModuleHandle;
        value_.v_handle = h;
        break;
      case TypeIndex::kRuntimePackedFunc:
        type_code_ = kTVMPackedFuncHandle;
        value_.v_handle = h;
        break;
      default:
        type_code_ = kTVMObjectHandle;
        value_.v_handle = h;
        break;
    }
    return *this;
  }
  void Assign(const TVMValue& value, int type_code, const std::string* owned) {
    Clear();
    switch (type_code) {
      case kTVMStr:
      case kTVMBytes: {
        TVMArgValue arg(value, type_code);
        str_ = owned != nullptr ? *owned : arg.operator std::string();
        type_code_ = type_code;
        break;
      }
      case kTVMObjectHandle:
      case kTVMModuleHandle:
      case kTVMPackedFuncHandle:
      case kTVMNDArrayHandle:
      case kTVMObjectRValueRefArg:
        SetObject(ObjectRef::FromBorrowed(detail::ObjectHandleOf(value, type_code, "Object")));
        break;
      default:
        value_ = value;
        type_code_ = type_code;
        break;
    }
  }
  void Clear() {
    // Only strings and bytes use str_, so a null value holds nothing (the common result).
    if (type_code_ == kTVMNullptr) return;
    switch (type_code_) {
      case kTVMObjectHandle:
      case kTVMModuleHandle:
      case kTVMPackedFuncHandle:
        TVMObjectFree(value_.v_handle);
        break;
      case kTVMNDArrayHandle:
        if (value_.v_handle != nullptr) TVMArrayFree(static_cast<DLTensor*>(value_.v_handle));
        break;
      default:
        break;
    }
    str_.clear();
    type_code_ = kTVMNullptr;
    value_.v_handle = nullptr;
  }
  void Swap(TVMRetValue& other) noexcept {
    std::swap(value_, other.value_);
    std::swap(type_code_, other.type_code_);
    std::swap(str_, other.str_);
  }

  std::string str_;
  mutable TVMByteArray bytes_{nullptr, 0};
};

namespace detail {

/* Converts a packed value to T (an argument or result type of a typed function). */
template <typename T, typename Enable = void>
struct ValueCast {
  template <typename V>
  static T Get(const V& value) {
    T out = value;
    return out;
  }
};
template <typename T>
struct ValueCast<T, typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value>::type> {
  template <typename V>
  static T Get(const V& value) {
    return static_cast<T>(value.operator int64_t());
  }
};
template <typename T>
struct ValueCast<T, typename std::enable_if<std::is_enum<T>::value>::type> {
  template <typename V>
  static T Get(const V& value) {
    return static_cast<T>(value.operator int64_t());
  }
};
template <>
struct ValueCast<bool> {
  template <typename V>
  static bool Get(const V& value) {
    return value.operator bool();
  }
};
template <typename T>
struct ValueCast<T, typename std::enable_if<std::is_floating_point<T>::value>::type> {
  template <typename V>
  static T Get(const V& value) {
    return static_cast<T>(value.operator double());
  }
};

/* The signature R(Args...) of a function, function pointer or lambda. */
template <typename T>
struct function_signature : function_signature<decltype(&T::operator())> {};
template <typename R, typename... Args>
struct function_signature<R(Args...)> {
  using FType = R(Args...);
};
template <typename R, typename... Args>
struct function_signature<R (*)(Args...)> {
  using FType = R(Args...);
};
template <typename C, typename R, typename... Args>
struct function_signature<R (C::*)(Args...) const> {
  using FType = R(Args...);
};
template <typename C, typename R, typename... Args>
struct function_signature<R (C::*)(Args...)> {
  using FType = R(Args...);
};

template <typename R, typename... Args>
struct TypedUnpacker {
  template <typename F, size_t... I>
  static void Run(const F& f, const TVMArgs& args, TVMRetValue* rv, std::index_sequence<I...>) {
    *rv = f(ValueCast<typename std::decay<Args>::type>::Get(args[static_cast<int>(I)])...);
  }
};
template <typename... Args>
struct TypedUnpacker<void, Args...> {
  template <typename F, size_t... I>
  static void Run(const F& f, const TVMArgs& args, TVMRetValue*, std::index_sequence<I...>) {
    f(ValueCast<typename std::decay<Args>::type>::Get(args[static_cast<int>(I)])...);
  }
};

}  // namespace detail

/* A packed function with a C++ signature. */
template <typename R, typename... Args>
class TypedPackedFunc<R(Args...)> {
 public:
  TypedPackedFunc() = default;
  TypedPackedFunc(std::nullptr_t) {}                                   // NOLINT
  TypedPackedFunc(PackedFunc packed) : packed_(std::move(packed)) {}  // NOLINT
  TypedPackedFunc(const TVMRetValue& value) : packed_(value.operator PackedFunc()) {}  // NOLINT
  TypedPackedFunc(const TVMArgValue& value) : packed_(value.operator PackedFunc()) {}  // NOLINT
  /* A packed function calling `f`, converting arguments to Args and the result from R. */
  template <typename FLambda,
            typename = typename std::enable_if<std::is_convertible<FLambda, std::function<R(Args...)>>::value>::type>
  TypedPackedFunc(const FLambda& f) : TypedPackedFunc(f, "<anonymous>") {}  // NOLINT
  template <typename FLambda,
            typename = typename std::enable_if<std::is_convertible<FLambda, std::function<R(Args...)>>::value>::type>
  TypedPackedFunc(const FLambda& f, std::string name) {
    packed_ = PackedFunc([f, name](const TVMArgs& args, TVMRetValue* rv) {
      if (args.size() != static_cast<int>(sizeof...(Args))) {
        throw Error("Function " + name + " expects " + std::to_string(sizeof...(Args)) + " arguments, but " +
                    std::to_string(args.size()) + " were provided.");
      }
      detail::TypedUnpacker<R, Args...>::Run(f, args, rv, std::index_sequence_for<Args...>());
    });
  }

  R operator()(Args... args) const { return Call(std::is_void<R>(), std::forward<Args>(args)...); }

  const PackedFunc& packed() const { return packed_; }
  operator PackedFunc() const { return packed_; }  // NOLINT
  bool operator==(std::nullptr_t) const { return packed_ == nullptr; }
  bool operator!=(std::nullptr_t) const { return packed_ != nullptr; }

 private:
  R Call(std::true_type, Args... args) const { packed_(std::forward<Args>(args)...); }
  R Call(std::false_type, Args... args) const {
    TVMRetValue rv = packed_(std::forward<Args>(args)...);
    return detail::ValueCast<R>::Get(rv);
  }

  PackedFunc packed_;
};

/* Writes C++ values into the TVMValue / type-code arrays of a packed call. The values point
 * into the arguments, which outlive the call. */
class TVMArgsSetter {
 public:
  TVMArgsSetter(TVMValue* values, int* type_codes) : values_(values), type_codes_(type_codes) {}

  template <typename T, typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value, int>::type = 0>
  void operator()(size_t i, T value) const {
    values_[i].v_int64 = static_cast<int64_t>(value);
    type_codes_[i] = kDLInt;
  }
  template <typename T, typename std::enable_if<std::is_enum<T>::value, int>::type = 0>
  void operator()(size_t i, T value) const {
    values_[i].v_int64 = static_cast<int64_t>(value);
    type_codes_[i] = kDLInt;
  }
  void operator()(size_t i, bool value) const {
    values_[i].v_int64 = value ? 1 : 0;
    type_codes_[i] = kTVMArgBool;
  }
  void operator()(size_t i, double value) const {
    values_[i].v_float64 = value;
    type_codes_[i] = kDLFloat;
  }
  void operator()(size_t i, std::nullptr_t) const {
    values_[i].v_handle = nullptr;
    type_codes_[i] = kTVMNullptr;
  }
  void operator()(size_t i, void* value) const {
    values_[i].v_handle = value;
    type_codes_[i] = value == nullptr ? kTVMNullptr : kTVMOpaqueHandle;
  }
  void operator()(size_t i, DLTensor* value) const {
    values_[i].v_handle = value;
    type_codes_[i] = value == nullptr ? kTVMNullptr : kTVMDLTensorHandle;
  }
  void operator()(size_t i, const char* value) const {
    values_[i].v_str = value;
    type_codes_[i] = value == nullptr ? kTVMNullptr : kTVMStr;
  }
  void operator()(size_t i, const std::string& value) const { operator()(i, value.c_str()); }
  void operator()(size_t i, const String& value) const { operator()(i, value.c_str()); }
  void operator()(size_t i, TVMByteArray* value) const {
    values_[i].v_handle = value;
    type_codes_[i] = value == nullptr ? kTVMNullptr : kTVMBytes;
  }
  /* Bytes (e.g. a params blob for load_params); the array is the caller's argument. */
  void operator()(size_t i, const TVMByteArray& value) const {
    values_[i].v_handle = const_cast<TVMByteArray*>(&value);
    type_codes_[i] = kTVMBytes;
  }
  void operator()(size_t i, Device value) const {
    values_[i].v_device = value;
    type_codes_[i] = kDLDevice;
  }
  void operator()(size_t i, DLDataType value) const {
    values_[i].v_type = value;
    type_codes_[i] = kTVMDataType;
  }
  void operator()(size_t i, const DataType& value) const { operator()(i, static_cast<DLDataType>(value)); }
  void operator()(size_t i, const ObjectRef& value) const { SetObject(i, value.handle()); }
  void operator()(size_t i, const NDArray& value) const { SetObject(i, value.ObjectRef::handle()); }
  void operator()(size_t i, const Module& value) const { SetObject(i, value.handle()); }
  void operator()(size_t i, const PackedFunc& value) const { SetObject(i, value.handle()); }
  /* Only a ShapeTuple itself (a temporary converted here would not outlive the call). */
  template <typename T, typename std::enable_if<std::is_same<T, ShapeTuple>::value, int>::type = 0>
  void operator()(size_t i, const T& value) const {
    SetObject(i, value.AsObject().handle());
  }
  template <typename FType>
  void operator()(size_t i, const TypedPackedFunc<FType>& value) const {
    SetObject(i, value.packed().handle());
  }
  void operator()(size_t i, const TVMArgValue& value) const {
    values_[i] = value.value();
    type_codes_[i] = value.type_code();
  }
  void operator()(size_t i, const TVMRetValue& value) const { value.ToC(&values_[i], &type_codes_[i]); }

 private:
  void SetObject(size_t i, void* header) const {
    if (header == nullptr) {
      operator()(i, nullptr);
      return;
    }
    switch (static_cast<Object*>(header)->type_index()) {
      case TypeIndex::kRuntimeNDArray:
        values_[i].v_handle = static_cast<char*>(header) + NDArray::kDLTensorOffset;
        type_codes_[i] = kTVMNDArrayHandle;
        break;
      case TypeIndex::kRuntimeModule:
        values_[i].v_handle = header;
        type_codes_[i] = kTVMModuleHandle;
        break;
      case TypeIndex::kRuntimePackedFunc:
        values_[i].v_handle = header;
        type_codes_[i] = kTVMPackedFuncHandle;
        break;
      default:
        values_[i].v_handle = header;
        type_codes_[i] = kTVMObjectHandle;
        break;
    }
  }

  TVMValue* values_;
  int* type_codes_;
};

namespace detail {

template <typename... Args>
inline void FillArgs(const TVMArgsSetter& setter, Args&&... args) {
  size_t i = 0;
  int expand[] = {0, (setter(i++, std::forward<Args>(args)), 0)...};
  (void)expand;
  (void)i;
}

inline void CallRaw(void* func, TVMValue* values, int* type_codes, int num_args, TVMRetValue* rv) {
  if (func == nullptr) throw Error("call of a null PackedFunc");
  TVMValue ret;
  ret.v_handle = nullptr;
  int ret_code = kTVMNullptr;
  CheckCall(TVMFuncCall(func, values, type_codes, num_args, &ret, &ret_code));
  rv->MoveFromCHost(ret, ret_code);
}

}  // namespace detail

template <typename... Args>
inline TVMRetValue PackedFunc::operator()(Args&&... args) const {
  constexpr int kNumArgs = static_cast<int>(sizeof...(Args));
  constexpr int kArraySize = kNumArgs > 0 ? kNumArgs : 1;
  TVMValue values[kArraySize];
  int type_codes[kArraySize];
  detail::FillArgs(TVMArgsSetter(values, type_codes), std::forward<Args>(args)...);
  TVMRetValue rv;
  detail::CallRaw(obj_, values, type_codes, kNumArgs, &rv);
  return rv;
}

inline void PackedFunc::CallPacked(TVMArgs args, TVMRetValue* rv) const {
  detail::CallRaw(obj_, const_cast<TVMValue*>(args.values), const_cast<int*>(args.type_codes), args.num_args, rv);
}

inline int PackedFunc::Trampoline(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                                  void* resource) {
  try {
    TVMRetValue rv;
    (*static_cast<FType*>(resource))(TVMArgs(args, type_codes, num_args), &rv);
    if (rv.type_code() != kTVMNullptr) {
      TVMValue value;
      int code = kTVMNullptr;
      rv.ToC(&value, &code);
      return TVMCFuncSetReturn(ret, &value, &code, 1);
    }
    return 0;
  } catch (const std::exception& e) {
    TVMAPISetLastError(e.what());
  } catch (...) {
    TVMAPISetLastError("a C++ packed function threw an exception that is not a std::exception");
  }
  return -1;
}

inline void* PackedFunc::FromBody(FType body) {
  if (!body) throw Error("PackedFunc from an empty std::function");
  FType* resource = new FType(std::move(body));
  TVMFunctionHandle handle = nullptr;
  if (TVMFuncCreateFromCFunc(&PackedFunc::Trampoline, resource, &PackedFunc::Finalize, &handle) != 0) {
    delete resource;
    detail::ThrowLastError();
  }
  return handle;
}

/* ---- Module's members that need PackedFunc ---- */

inline PackedFunc Module::GetFunction(const std::string& name, bool query_imports) {
  return operator->()->GetFunction(name, query_imports);
}

inline PackedFunc ModuleNode::GetFunction(const std::string& name, bool query_imports) {
  TVMFunctionHandle handle = nullptr;
  detail::CheckCall(TVMModGetFunction(this, name.c_str(), query_imports ? 1 : 0, &handle));
  return PackedFunc::FromOwnedHandle(handle);
}

inline void ModuleNode::Import(Module other) { Module::FromHandle(this).Import(std::move(other)); }

inline const char* ModuleNode::type_key() const {
  // Keys are few (one per kind of module); each is kept for the life of the process so that the
  // pointer stays valid, as TVM's static strings do.
  static std::mutex* mu = new std::mutex();
  static std::set<std::string>* keys = new std::set<std::string>();
  static PackedFunc* get_key = new PackedFunc(PackedFunc::FromOwnedHandle(detail::GetGlobalHandle("runtime.ModuleGetTypeKey")));
  std::string key = (*get_key)(Module::FromHandle(const_cast<ModuleNode*>(this)));
  std::lock_guard<std::mutex> lock(*mu);
  return keys->insert(key).first->c_str();
}

inline std::vector<Module> ModuleNode::imports() const {
  static PackedFunc* size = new PackedFunc(PackedFunc::FromOwnedHandle(detail::GetGlobalHandle("runtime.ModuleImportsSize")));
  static PackedFunc* get = new PackedFunc(PackedFunc::FromOwnedHandle(detail::GetGlobalHandle("runtime.ModuleGetImport")));
  Module self = Module::FromHandle(const_cast<ModuleNode*>(this));
  int64_t n = (*size)(self);
  std::vector<Module> out;
  for (int64_t i = 0; i < n; ++i) {
    Module m = (*get)(self, i);
    out.push_back(m);
  }
  return out;
}

}  // namespace runtime

using runtime::PackedFunc;
using runtime::TVMArgs;
using runtime::TVMArgValue;
using runtime::TVMRetValue;
using runtime::TypedPackedFunc;
}  // namespace tvm

#endif /* TVM_RUNTIME_PACKED_FUNC_H_ */
