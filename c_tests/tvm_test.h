/*
 * tvm_test.h: tiny assertion helpers shared by the C tests in this directory.
 *
 * Includes nothing but TVM's compatibility header and the C standard library, so a test that
 * uses it is still written purely against TVM's public C API.
 *
 *   CHECK(cond)                 non-fatal; prints file:line and the expression when false.
 *   CHECK_OK(call)              non-fatal; `call` must return 0, else prints TVMGetLastError().
 *   CHECK_FAIL(call, substr)    non-fatal; `call` must return -1 and the last error must contain
 *                               `substr`.
 *   REQUIRE(cond) / REQUIRE_OK(call)
 *                               like CHECK / CHECK_OK but stop the test (exit 1) on failure,
 *                               for set-up steps whose failure would make later code crash.
 *   CHECK_STREQ(a, b)           non-fatal string equality (NULL-safe).
 *   CHECK_CONTAINS(s, substr)   non-fatal substring test (NULL-safe).
 *   return tvm_test_summary("test_x");  prints `test_x: N checks passed` (or the failure count)
 *                               and returns the process exit code.
 *   tvm_test_refcount(handle)   the reference count of the object behind a TVM 0.18 handle (the
 *                               strong count of its tvm-ffi header, 8 bytes before the handle).
 *   tvm_test_read_file(dir, name, &size)
 *                               the whole file dir/name, NUL-terminated (malloc'ed; exits if
 *                               unreadable), for data files such as graph JSON and params.
 *
 * The counters are atomic, so checks may run on several threads.
 */
#ifndef TVM_C_TESTS_TVM_TEST_H_
#define TVM_C_TESTS_TVM_TEST_H_

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>

static atomic_int tvm_test_checks;
static atomic_int tvm_test_failures;

static inline const char* tvm_test_last_error(void) {
  const char* e = TVMGetLastError();
  return e ? e : "(TVMGetLastError() returned NULL)";
}

static inline void tvm_test_fail(const char* file, int line, const char* what, const char* detail) {
  atomic_fetch_add(&tvm_test_failures, 1);
  fprintf(stderr, "%s:%d: CHECK failed: %s%s%s\n", file, line, what, detail ? "\n    " : "",
          detail ? detail : "");
  fflush(stderr);
}

static inline int tvm_test_check(int ok, const char* file, int line, const char* what) {
  atomic_fetch_add(&tvm_test_checks, 1);
  if (!ok) tvm_test_fail(file, line, what, NULL);
  return ok;
}

static inline int tvm_test_check_ok(int rc, const char* file, int line, const char* what) {
  atomic_fetch_add(&tvm_test_checks, 1);
  if (rc != 0) {
    char buf[64];
    snprintf(buf, sizeof buf, "returned %d; TVMGetLastError(): ", rc);
    atomic_fetch_add(&tvm_test_failures, 1);
    fprintf(stderr, "%s:%d: CHECK_OK failed: %s\n    %s%s\n", file, line, what, buf,
            tvm_test_last_error());
    fflush(stderr);
    return 0;
  }
  return 1;
}

static inline int tvm_test_check_fail(int rc, const char* substr, const char* file, int line,
                                      const char* what) {
  atomic_fetch_add(&tvm_test_checks, 1);
  const char* err = TVMGetLastError();
  if (rc != -1) {
    atomic_fetch_add(&tvm_test_failures, 1);
    fprintf(stderr, "%s:%d: CHECK_FAIL failed: %s\n    expected -1, got %d\n", file, line, what,
            rc);
    fflush(stderr);
    return 0;
  }
  if (err == NULL || strstr(err, substr) == NULL) {
    atomic_fetch_add(&tvm_test_failures, 1);
    fprintf(stderr,
            "%s:%d: CHECK_FAIL failed: %s\n    returned -1 but the error does not contain \"%s\""
            "\n    TVMGetLastError(): %s\n",
            file, line, what, substr, err ? err : "(NULL)");
    fflush(stderr);
    return 0;
  }
  return 1;
}

static inline int tvm_test_check_streq(const char* a, const char* b, const char* file, int line,
                                       const char* what) {
  atomic_fetch_add(&tvm_test_checks, 1);
  if (a == NULL || b == NULL || strcmp(a, b) != 0) {
    atomic_fetch_add(&tvm_test_failures, 1);
    fprintf(stderr, "%s:%d: CHECK_STREQ failed: %s\n    \"%s\" != \"%s\"\n", file, line, what,
            a ? a : "(NULL)", b ? b : "(NULL)");
    fflush(stderr);
    return 0;
  }
  return 1;
}

static inline int tvm_test_check_contains(const char* s, const char* sub, const char* file,
                                          int line, const char* what) {
  atomic_fetch_add(&tvm_test_checks, 1);
  if (s == NULL || sub == NULL || strstr(s, sub) == NULL) {
    atomic_fetch_add(&tvm_test_failures, 1);
    fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: %s\n    \"%s\" does not contain \"%s\"\n",
            file, line, what, s ? s : "(NULL)", sub ? sub : "(NULL)");
    fflush(stderr);
    return 0;
  }
  return 1;
}

static inline int tvm_test_summary(const char* name) {
  int n = atomic_load(&tvm_test_checks);
  int f = atomic_load(&tvm_test_failures);
  if (f == 0) {
    printf("%s: %d checks passed\n", name, n);
    fflush(stdout);
    return 0;
  }
  printf("%s: %d of %d checks FAILED\n", name, f, n);
  fflush(stdout);
  return 1;
}

static inline void tvm_test_abort(const char* file, int line) {
  fprintf(stderr, "%s:%d: required check failed; stopping (%d checks, %d failed)\n", file, line,
          atomic_load(&tvm_test_checks), atomic_load(&tvm_test_failures));
  exit(1);
}

/* The strong count in the low 32 bits of the tvm-ffi header's combined count, which starts 8
 * bytes before a TVM 0.18 handle (docs/ARCHITECTURE.md, "Two ABIs, one object model"). */
static inline int32_t tvm_test_refcount(void* handle) {
  return (int32_t)(*(uint64_t*)((char*)handle - 8) & 0xffffffffu);
}

#define CHECK(cond) tvm_test_check(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_OK(call) tvm_test_check_ok((call), __FILE__, __LINE__, #call)
#define CHECK_FAIL(call, substr) tvm_test_check_fail((call), (substr), __FILE__, __LINE__, #call)
#define CHECK_STREQ(a, b) tvm_test_check_streq((a), (b), __FILE__, __LINE__, #a " == " #b)
#define CHECK_CONTAINS(s, sub) \
  tvm_test_check_contains((s), (sub), __FILE__, __LINE__, #s " contains " #sub)
#define REQUIRE(cond)                                                  \
  do {                                                                 \
    if (!CHECK(cond)) tvm_test_abort(__FILE__, __LINE__);              \
  } while (0)
#define REQUIRE_OK(call)                                               \
  do {                                                                 \
    if (!CHECK_OK(call)) tvm_test_abort(__FILE__, __LINE__);           \
  } while (0)

/* The whole file `dir/name`, NUL-terminated so text can be used as a C string; its byte count
 * goes to `*size` when `size` is not NULL. Exits if the file cannot be read. Free with free(). */
static inline char* tvm_test_read_file(const char* dir, const char* name, size_t* size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = (char*)malloc((size_t)n + 1);
  REQUIRE(buf != NULL);
  REQUIRE(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = '\0';
  fclose(f);
  if (size) *size = (size_t)n;
  return buf;
}

#endif /* TVM_C_TESTS_TVM_TEST_H_ */
