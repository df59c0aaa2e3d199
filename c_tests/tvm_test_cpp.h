/*
 * tvm_test_cpp.h: assertion helpers for the C++ tests (the C tests use tvm_test.h).
 *
 *   EXPECT(cond)                    non-fatal; prints file:line and the expression when false.
 *   EXPECT_THROWS(stmt, substr)     non-fatal; `stmt` must throw tvm::runtime::Error whose
 *                                   what() contains `substr`.
 *   return tvm_test_cpp::Summary("test_x");  prints the count of checks and returns the exit code.
 *   tvm_test_cpp::ReadFile(dir, name)        a whole file (exits if unreadable).
 */
#ifndef TVM_C_TESTS_TVM_TEST_CPP_H_
#define TVM_C_TESTS_TVM_TEST_CPP_H_

#include <tvm/runtime/logging.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace tvm_test_cpp {

inline std::atomic<int>& Checks() {
  static std::atomic<int> n(0);
  return n;
}
inline std::atomic<int>& Failures() {
  static std::atomic<int> n(0);
  return n;
}
inline bool Record(bool ok, const char* file, int line, const std::string& what) {
  ++Checks();
  if (!ok) {
    ++Failures();
    std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what.c_str());
  }
  return ok;
}
inline int Summary(const char* name) {
  if (Failures() == 0) {
    std::printf("%s: %d checks passed\n", name, Checks().load());
    return 0;
  }
  std::printf("%s: %d of %d checks FAILED\n", name, Failures().load(), Checks().load());
  return 1;
}
inline std::string ReadFile(const std::string& dir, const std::string& name) {
  std::ifstream in(dir + "/" + name, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s/%s\n", dir.c_str(), name.c_str());
    std::exit(1);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace tvm_test_cpp

#define EXPECT(cond) ::tvm_test_cpp::Record(static_cast<bool>(cond), __FILE__, __LINE__, #cond)

#define EXPECT_THROWS(stmt, substr)                                                                  \
  do {                                                                                               \
    bool tvm_test_thrown_ = false;                                                                   \
    try {                                                                                            \
      stmt;                                                                                          \
    } catch (const ::tvm::runtime::Error& e) {                                                       \
      tvm_test_thrown_ = true;                                                                       \
      ::tvm_test_cpp::Record(std::string(e.what()).find(substr) != std::string::npos, __FILE__,      \
                             __LINE__, std::string(#stmt " threw \"") + e.what() + "\", without \"" + \
                                           (substr) + "\"");                                         \
    }                                                                                                \
    if (!tvm_test_thrown_) ::tvm_test_cpp::Record(false, __FILE__, __LINE__, #stmt " did not throw"); \
  } while (0)

#endif /* TVM_C_TESTS_TVM_TEST_CPP_H_ */
