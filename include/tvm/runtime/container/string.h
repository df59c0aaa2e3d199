/*
 * tvm::runtime::String: an immutable string value (header-only; C++14 or later).
 *
 * Here it is a plain C++ value: passed to packed functions as a C string (kTVMStr), and read
 * back from either a C string or a runtime.String object.
 */
#ifndef TVM_RUNTIME_CONTAINER_STRING_H_
#define TVM_RUNTIME_CONTAINER_STRING_H_

#include <tvm/runtime/object.h>

#include <cstring>
#include <functional>
#include <ostream>
#include <string>

namespace tvm {
namespace runtime {

class String {
 public:
  String() = default;
  String(const char* s) : data_(s == nullptr ? "" : s) {}  // NOLINT: implicit, as in TVM
  String(std::string s) : data_(std::move(s)) {}           // NOLINT
  String(const char* s, size_t size) : data_(s, size) {}

  const char* c_str() const { return data_.c_str(); }
  const char* data() const { return data_.data(); }
  size_t size() const { return data_.size(); }
  size_t length() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  char at(size_t pos) const { return data_.at(pos); }
  int compare(const String& other) const { return data_.compare(other.data_); }
  int compare(const std::string& other) const { return data_.compare(other); }
  int compare(const char* other) const { return data_.compare(other); }
  operator std::string() const { return data_; }  // NOLINT
  const std::string& str() const { return data_; }

 private:
  std::string data_;
};

inline bool operator==(const String& a, const String& b) { return a.str() == b.str(); }
inline bool operator!=(const String& a, const String& b) { return a.str() != b.str(); }
inline bool operator<(const String& a, const String& b) { return a.str() < b.str(); }
inline bool operator==(const String& a, const std::string& b) { return a.str() == b; }
inline bool operator==(const std::string& a, const String& b) { return a == b.str(); }
inline bool operator!=(const String& a, const std::string& b) { return a.str() != b; }
inline bool operator!=(const std::string& a, const String& b) { return a != b.str(); }
inline bool operator==(const String& a, const char* b) { return a.compare(b) == 0; }
inline bool operator==(const char* a, const String& b) { return b.compare(a) == 0; }
inline bool operator!=(const String& a, const char* b) { return a.compare(b) != 0; }
inline bool operator!=(const char* a, const String& b) { return b.compare(a) != 0; }
inline String operator+(const String& a, const String& b) { return String(a.str() + b.str()); }
inline std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.str(); }

namespace detail {

/* The text of a runtime.String object (through the runtime's runtime.GetFFIString). */
inline std::string StringFromObject(void* object_handle) {
  static void* get = GetGlobalHandle("runtime.GetFFIString");
  TVMValue arg;
  arg.v_handle = object_handle;
  int code = kTVMObjectHandle;
  TVMValue ret;
  int ret_code = kTVMNullptr;
  CheckCall(TVMFuncCall(get, &arg, &code, 1, &ret, &ret_code));
  if (ret_code != kTVMStr) throw Error("runtime.GetFFIString did not return a string");
  return std::string(ret.v_str);
}

}  // namespace detail
}  // namespace runtime

using runtime::String;
}  // namespace tvm

namespace std {
template <>
struct hash<::tvm::runtime::String> {
  size_t operator()(const ::tvm::runtime::String& s) const { return std::hash<std::string>()(s.str()); }
};
}  // namespace std

#endif /* TVM_RUNTIME_CONTAINER_STRING_H_ */
