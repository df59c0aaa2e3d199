/* Linked against libtvm_runtime.a (no shared runtime): array round trip and error reporting. */
#include <stdio.h>
#include <string.h>

#include <tvm_runtime.h>

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                           \
    }                                                                     \
  } while (0)

int main(void) {
  const int64_t shape[1] = {5};
  int32_t in[5] = {7, -1, 42, 2147483647, -2147483647 - 1};
  int32_t out[5] = {0};
  DLTensor* arr = NULL;

  CHECK(TVMArrayAlloc(shape, 1, kDLInt, 32, 1, kDLCPU, 0, &arr) == 0);
  CHECK(TVMArrayCopyFromBytes(arr, in, sizeof in) == 0);
  CHECK(TVMArrayCopyToBytes(arr, out, sizeof out) == 0);
  for (int i = 0; i < 5; ++i) CHECK(out[i] == in[i]);
  /* A size mismatch must be rejected. */
  CHECK(TVMArrayCopyToBytes(arr, out, sizeof out - 1) != 0);
  CHECK(TVMArrayFree(arr) == 0);

  /* A NULL out-pointer fails and leaves a message behind. */
  CHECK(TVMArrayAlloc(shape, 1, kDLInt, 32, 1, kDLCPU, 0, NULL) != 0);
  const char* err = TVMGetLastError();
  CHECK(err != NULL && strlen(err) > 0);
  printf("static_link: ok (expected error: %s)\n", err);
  return 0;
}
