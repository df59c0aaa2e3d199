/*
 * tvm::runtime::DataType, a value wrapper of DLDataType, and conversions between DLDataType and
 * its text form ("float32", "int8x4", "bool", "handle"). Header-only; C++14 or later.
 */
#ifndef TVM_RUNTIME_DATA_TYPE_H_
#define TVM_RUNTIME_DATA_TYPE_H_

#include <tvm/runtime/logging.h>

#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>

namespace tvm {
namespace runtime {

/* Text form of a dtype: "float32", "int8x4", "bool", "handle", "void". */
inline std::string DLDataType2String(DLDataType t) {
  if (t.bits == 0) return "void";
  if (t.code == kDLUInt && t.bits == 1 && t.lanes == 1) return "bool";
  std::string s;
  switch (t.code) {
    case kDLInt:
      s = "int";
      break;
    case kDLUInt:
      s = "uint";
      break;
    case kDLFloat:
      s = "float";
      break;
    case kDLBfloat:
      s = "bfloat";
      break;
    case kTVMOpaqueHandle:
      if (t.bits == 64 && t.lanes == 1) return "handle";
      s = "handle";
      break;
    default:
      s = "custom[" + std::to_string(static_cast<int>(t.code)) + "]";
      break;
  }
  s += std::to_string(static_cast<int>(t.bits));
  if (t.lanes != 1) s += "x" + std::to_string(static_cast<int>(t.lanes));
  return s;
}

/* Parses the text form of a dtype; throws Error for text it does not know. */
inline DLDataType String2DLDataType(const std::string& s) {
  DLDataType t;
  t.lanes = 1;
  if (s.empty() || s == "void") {
    t.code = kTVMOpaqueHandle;
    t.bits = 0;
    t.lanes = 0;
    return t;
  }
  if (s == "bool") {
    t.code = kDLUInt;
    t.bits = 1;
    return t;
  }
  if (s == "handle") {
    t.code = kTVMOpaqueHandle;
    t.bits = 64;
    return t;
  }
  const char* rest = nullptr;
  if (s.compare(0, 4, "uint") == 0) {
    t.code = kDLUInt;
    rest = s.c_str() + 4;
  } else if (s.compare(0, 3, "int") == 0) {
    t.code = kDLInt;
    rest = s.c_str() + 3;
  } else if (s.compare(0, 6, "bfloat") == 0) {
    t.code = kDLBfloat;
    rest = s.c_str() + 6;
  } else if (s.compare(0, 5, "float") == 0) {
    t.code = kDLFloat;
    rest = s.c_str() + 5;
  } else {
    throw Error("unknown dtype `" + s + "`");
  }
  char* end = nullptr;
  long bits = std::strtol(rest, &end, 10);
  if (end == rest) bits = 32;
  if (bits <= 0 || bits > 255) throw Error("invalid bit width in dtype `" + s + "`");
  t.bits = static_cast<uint8_t>(bits);
  if (*end == 'x') {
    const char* lanes_text = end + 1;
    long lanes = std::strtol(lanes_text, &end, 10);
    if (end == lanes_text || lanes <= 0 || lanes > 65535) throw Error("invalid lanes in dtype `" + s + "`");
    t.lanes = static_cast<uint16_t>(lanes);
  }
  if (*end != '\0') throw Error("unknown dtype `" + s + "`");
  return t;
}

/* A dtype as a value: what DLDataType is, with names and predicates. */
class DataType {
 public:
  enum TypeCode {
    kInt = kDLInt,
    kUInt = kDLUInt,
    kFloat = kDLFloat,
    kHandle = kTVMOpaqueHandle,
    kBFloat = kDLBfloat,
  };

  DataType() : DataType(kHandle, 0, 0) {}
  DataType(DLDataType dtype) : data_(dtype) {}  // NOLINT: implicit on purpose, as in TVM
  DataType(int code, int bits, int lanes) {
    data_.code = static_cast<uint8_t>(code);
    data_.bits = static_cast<uint8_t>(bits);
    data_.lanes = static_cast<uint16_t>(lanes);
  }

  int code() const { return static_cast<int>(data_.code); }
  int bits() const { return static_cast<int>(data_.bits); }
  int lanes() const { return static_cast<int>(data_.lanes); }
  /* Bytes of one element, all lanes. */
  int bytes() const { return (bits() * lanes() + 7) / 8; }
  bool is_scalar() const { return lanes() == 1; }
  bool is_vector() const { return lanes() > 1; }
  bool is_bool() const { return code() == kUInt && bits() == 1; }
  bool is_int() const { return code() == kInt; }
  bool is_uint() const { return code() == kUInt; }
  bool is_float() const { return code() == kFloat; }
  bool is_bfloat16() const { return code() == kBFloat && bits() == 16; }
  bool is_handle() const { return code() == kHandle && !is_void(); }
  bool is_void() const { return code() == kHandle && bits() == 0 && lanes() == 0; }
  DataType with_lanes(int lanes) const { return DataType(code(), bits(), lanes); }
  DataType with_bits(int bits) const { return DataType(code(), bits, lanes()); }
  DataType element_of() const { return with_lanes(1); }

  operator DLDataType() const { return data_; }  // NOLINT

  static DataType Int(int bits, int lanes = 1) { return DataType(kInt, bits, lanes); }
  static DataType UInt(int bits, int lanes = 1) { return DataType(kUInt, bits, lanes); }
  static DataType Float(int bits, int lanes = 1) { return DataType(kFloat, bits, lanes); }
  static DataType BFloat(int bits, int lanes = 1) { return DataType(kBFloat, bits, lanes); }
  static DataType Bool(int lanes = 1) { return DataType::UInt(1, lanes); }
  static DataType Handle(int bits = 64, int lanes = 1) { return DataType(kHandle, bits, lanes); }
  static DataType Void() { return DataType(kHandle, 0, 0); }

 private:
  DLDataType data_;
};

inline bool operator==(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(const DLDataType& a, const DLDataType& b) { return !(a == b); }
inline bool operator==(const DataType& a, const DataType& b) {
  return static_cast<DLDataType>(a) == static_cast<DLDataType>(b);
}
inline bool operator!=(const DataType& a, const DataType& b) { return !(a == b); }
inline bool operator==(const DataType& a, const DLDataType& b) { return static_cast<DLDataType>(a) == b; }
inline bool operator!=(const DataType& a, const DLDataType& b) { return !(a == b); }
inline bool operator==(const DLDataType& a, const DataType& b) { return a == static_cast<DLDataType>(b); }
inline bool operator!=(const DLDataType& a, const DataType& b) { return !(a == b); }

inline std::ostream& operator<<(std::ostream& os, DLDataType t) { return os << DLDataType2String(t); }
inline std::ostream& operator<<(std::ostream& os, const DataType& t) {
  return os << DLDataType2String(static_cast<DLDataType>(t));
}

}  // namespace runtime

using runtime::DataType;
}  // namespace tvm

#endif /* TVM_RUNTIME_DATA_TYPE_H_ */
