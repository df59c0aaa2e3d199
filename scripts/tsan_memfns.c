/*
 * For scripts/tsan.sh in "full" mode: the Rust library instrumented by rustc's LLVM emits calls
 * to __tsan_memcpy / __tsan_memmove / __tsan_memset, which GCC's older libtsan does not export.
 * These forward to memcpy & co., which libtsan intercepts (so the ranges are still checked).
 */
#include <string.h>

void* __tsan_memcpy(void* dst, const void* src, size_t n) { return memcpy(dst, src, n); }
void* __tsan_memmove(void* dst, const void* src, size_t n) { return memmove(dst, src, n); }
void* __tsan_memset(void* dst, int c, size_t n) { return memset(dst, c, n); }
