/*
 * sanitizer_canary: deliberate errors that a sanitizer must report. Built and registered only
 * when TVM_RUNTIME_SANITIZE is set (c_tests/CMakeLists.txt); each ctest passes only if the
 * sanitizer's report appears in the output, proving that the sanitizer runtime is really linked
 * and active, and that it sees memory allocated and freed by the (uninstrumented) Rust library:
 * the library allocates NDArray data with posix_memalign and frees it with free, which the
 * sanitizer intercepts.
 *
 *   sanitizer_canary c_heap_overflow      write past a malloc'ed block (ASan)
 *   sanitizer_canary rust_heap_overflow   write past the data of a TVMArrayAlloc'ed array (ASan)
 *   sanitizer_canary rust_use_after_free  read an array's data after TVMArrayFree (ASan)
 *   sanitizer_canary rust_leak            lose TVMArrayAlloc'ed arrays (LeakSanitizer)
 *   sanitizer_canary ubsan_overflow       signed integer overflow (UBSan)
 *   sanitizer_canary data_race            two threads write one int unsynchronised (TSan)
 *
 * Exits 0 if no sanitizer stopped it, which the ctest's PASS_REGULAR_EXPRESSION turns into a
 * failure (the expected report is missing).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>

/* Opaque to the optimiser, so no error below is folded away or diagnosed at compile time. */
static volatile int g_index_past_end = 16;
static volatile int g_big = 2147483647;
static int g_racy;

static float* array_data(TVMArrayHandle a) { return (float*)a->data; }

static TVMArrayHandle alloc16(void) {
  int64_t shape[1] = {16};
  TVMArrayHandle a = NULL;
  if (TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &a) != 0) {
    fprintf(stderr, "TVMArrayAlloc failed: %s\n", TVMGetLastError());
    exit(2);
  }
  return a;
}

static void* race_main(void* arg) {
  (void)arg;
  for (int i = 0; i < 1000; ++i) g_racy = g_racy + 1;
  return NULL;
}

/* Allocates and drops the handles; kept out of main so no pointer stays in its frame. */
static __attribute__((noinline)) void leak_arrays(void) {
  for (int i = 0; i < 4; ++i) {
    TVMArrayHandle a = alloc16();
    array_data(a)[0] = (float)i;
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "c_heap_overflow") == 0) {
    char* p = malloc(16);
    p[g_index_past_end] = 1;
    printf("%d\n", p[0]);
    free(p);
  } else if (strcmp(mode, "rust_heap_overflow") == 0) {
    TVMArrayHandle a = alloc16();
    array_data(a)[g_index_past_end] = 1.0f; /* 16 floats: index 16 is one past the end */
    TVMArrayFree(a);
  } else if (strcmp(mode, "rust_use_after_free") == 0) {
    TVMArrayHandle a = alloc16();
    float* data = array_data(a);
    TVMArrayFree(a);
    printf("%f\n", (double)data[0]);
  } else if (strcmp(mode, "rust_leak") == 0) {
    leak_arrays();
  } else if (strcmp(mode, "ubsan_overflow") == 0) {
    int x = g_big;
    x = x + g_index_past_end;
    printf("%d\n", x);
  } else if (strcmp(mode, "data_race") == 0) {
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, race_main, NULL);
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    printf("%d\n", g_racy);
  } else {
    fprintf(stderr, "usage: %s c_heap_overflow|rust_heap_overflow|rust_use_after_free|rust_leak|"
                    "ubsan_overflow|data_race\n", argv[0]);
    return 2;
  }
  printf("sanitizer_canary %s: no sanitizer report (is the sanitizer linked?)\n", mode);
  return 0;
}
