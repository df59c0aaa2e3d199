/*
 * Logging and checks for C++ programs using the TVM runtime (header-only; C++14 or later).
 *
 *   LOG(INFO) << ...;  LOG(WARNING) << ...;  LOG(ERROR) << ...;
 *       print one line "[hh:mm:ss] file:line: message" to stderr.
 *   LOG(FATAL) << ...;
 *       throws tvm::runtime::Error whose what() is the streamed message.
 *   ICHECK(cond) << ...;  ICHECK_EQ(a, b) << ...;  (_NE, _LT, _LE, _GT, _GE), ICHECK_NOTNULL(p)
 *       when the condition fails, throw tvm::runtime::Error with "Check failed: ..." and the
 *       streamed text; CHECK / CHECK_xx are the same.
 *
 * Errors raised by the C API reach C++ as tvm::runtime::Error carrying TVMGetLastError()'s text.
 */
#ifndef TVM_RUNTIME_LOGGING_H_
#define TVM_RUNTIME_LOGGING_H_

#ifndef __cplusplus
#error "tvm/runtime/logging.h is a C++ header"
#endif
#if __cplusplus < 201402L
#error "TVM's C++ runtime headers need C++14 or later (-std=c++14)"
#endif

#include <tvm/runtime/c_runtime_api.h>

#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tvm {
namespace runtime {

/* The exception every failure of the runtime's C++ API throws. */
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/* Thrown for a failed ICHECK (an internal invariant); also a tvm::runtime::Error. */
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(message) {}
};

namespace detail {

/* Throws this thread's last C API error as an Error. */
[[noreturn]] inline void ThrowLastError() {
  const char* msg = TVMGetLastError();
  throw Error(msg != nullptr && msg[0] != '\0' ? std::string(msg)
                                               : std::string("a TVM C API call failed without a message"));
}

/* Checks the status of a C API call. */
inline void CheckCall(int rc) {
  if (rc != 0) ThrowLastError();
}

inline std::string LogTime() {
  std::time_t now = std::time(nullptr);
  std::tm tm_now;
  localtime_r(&now, &tm_now);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm_now);
  return std::string("[") + buf + "] ";
}

/* One non-fatal log line, written to stderr when the statement ends. */
class LogMessage {
 public:
  LogMessage(const char* file, int line, const char* level) {
    stream_ << LogTime() << file << ":" << line << ": " << level;
  }
  ~LogMessage() {
    stream_ << '\n';
    std::cerr << stream_.str() << std::flush;
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

/* A fatal message: throws when the statement ends. */
class LogFatal {
 public:
  LogFatal(const char* file, int line, bool internal = false) : internal_(internal) {
    (void)file;
    (void)line;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wterminate"
#endif
  [[noreturn]] ~LogFatal() noexcept(false) {
    if (internal_) throw InternalError(stream_.str());
    throw Error(stream_.str());
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
  bool internal_;
};

/* Discards a stream in the branch of a check that passed. */
class LogVoidify {
 public:
  void operator&(std::ostream&) {}
};

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#define TVM_RUNTIME_DEFINE_CHECK_FUNC(name, op)                                         \
  template <typename X, typename Y>                                                     \
  inline std::unique_ptr<std::string> LogCheck##name(const X& x, const Y& y) {          \
    if (x op y) return nullptr;                                                         \
    std::ostringstream os;                                                              \
    os << " (" << x << " vs. " << y << ") ";                                            \
    return std::unique_ptr<std::string>(new std::string(os.str()));                     \
  }
TVM_RUNTIME_DEFINE_CHECK_FUNC(_LT, <)
TVM_RUNTIME_DEFINE_CHECK_FUNC(_GT, >)
TVM_RUNTIME_DEFINE_CHECK_FUNC(_LE, <=)
TVM_RUNTIME_DEFINE_CHECK_FUNC(_GE, >=)
TVM_RUNTIME_DEFINE_CHECK_FUNC(_EQ, ==)
TVM_RUNTIME_DEFINE_CHECK_FUNC(_NE, !=)
#undef TVM_RUNTIME_DEFINE_CHECK_FUNC
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

template <typename T>
inline T LogCheckNotNull(const char* file, int line, const char* expr, T&& ptr) {
  if (ptr == nullptr) LogFatal(file, line, true).stream() << "Check failed: " << expr << " must not be null";
  return std::forward<T>(ptr);
}

}  // namespace detail
}  // namespace runtime

using runtime::Error;
using runtime::InternalError;
}  // namespace tvm

#define TVM_LOG_INFO ::tvm::runtime::detail::LogMessage(__FILE__, __LINE__, "").stream()
#define TVM_LOG_DEBUG ::tvm::runtime::detail::LogMessage(__FILE__, __LINE__, "DEBUG: ").stream()
#define TVM_LOG_WARNING ::tvm::runtime::detail::LogMessage(__FILE__, __LINE__, "Warning: ").stream()
#define TVM_LOG_ERROR ::tvm::runtime::detail::LogMessage(__FILE__, __LINE__, "Error: ").stream()
#define TVM_LOG_FATAL ::tvm::runtime::detail::LogFatal(__FILE__, __LINE__).stream()

#ifndef LOG
#define LOG(level) TVM_LOG_##level
#endif
#ifndef LOG_IF
#define LOG_IF(level, cond) \
  !(cond) ? (void)0 : ::tvm::runtime::detail::LogVoidify() & LOG(level)
#endif

#define TVM_RUNTIME_CHECK_BINARY(name, op, x, y)                                          \
  while (auto tvm_check_failure_ = ::tvm::runtime::detail::LogCheck##name(x, y))          \
  ::tvm::runtime::detail::LogFatal(__FILE__, __LINE__, true).stream()                     \
      << "Check failed: " #x " " #op " " #y << *tvm_check_failure_ << ": "

#define ICHECK(x)                                                                  \
  if (x) {                                                                         \
  } else                                                                           \
    ::tvm::runtime::detail::LogFatal(__FILE__, __LINE__, true).stream()            \
        << "Check failed: (" #x ") is false: "
#define ICHECK_LT(x, y) TVM_RUNTIME_CHECK_BINARY(_LT, <, x, y)
#define ICHECK_GT(x, y) TVM_RUNTIME_CHECK_BINARY(_GT, >, x, y)
#define ICHECK_LE(x, y) TVM_RUNTIME_CHECK_BINARY(_LE, <=, x, y)
#define ICHECK_GE(x, y) TVM_RUNTIME_CHECK_BINARY(_GE, >=, x, y)
#define ICHECK_EQ(x, y) TVM_RUNTIME_CHECK_BINARY(_EQ, ==, x, y)
#define ICHECK_NE(x, y) TVM_RUNTIME_CHECK_BINARY(_NE, !=, x, y)
#define ICHECK_NOTNULL(x) ::tvm::runtime::detail::LogCheckNotNull(__FILE__, __LINE__, #x, (x))

#ifndef CHECK
#define CHECK(x) ICHECK(x)
#define CHECK_LT(x, y) ICHECK_LT(x, y)
#define CHECK_GT(x, y) ICHECK_GT(x, y)
#define CHECK_LE(x, y) ICHECK_LE(x, y)
#define CHECK_GE(x, y) ICHECK_GE(x, y)
#define CHECK_EQ(x, y) ICHECK_EQ(x, y)
#define CHECK_NE(x, y) ICHECK_NE(x, y)
#define CHECK_NOTNULL(x) ICHECK_NOTNULL(x)
#endif

#endif /* TVM_RUNTIME_LOGGING_H_ */
