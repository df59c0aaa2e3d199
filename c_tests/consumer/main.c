/* Downstream C program: allocate an NDArray, copy bytes in and out, compare. */
#include <stdio.h>
#include <string.h>

#include <tvm_runtime.h>

static int fail(const char* what) {
  const char* err = TVMGetLastError();
  fprintf(stderr, "consumer: %s failed: %s\n", what, err ? err : "(no error message)");
  return 1;
}

int main(void) {
  const int64_t shape[2] = {3, 4};
  double in[12], out[12];
  DLTensor* arr = NULL;
  for (int i = 0; i < 12; ++i) {
    in[i] = 0.5 * i - 2.0;
    out[i] = -1.0;
  }

  if (TVMArrayAlloc(shape, 2, kDLFloat, 64, 1, kDLCPU, 0, &arr) != 0) return fail("TVMArrayAlloc");
  if (TVMArrayCopyFromBytes(arr, in, sizeof in) != 0) return fail("TVMArrayCopyFromBytes");
  if (TVMArrayCopyToBytes(arr, out, sizeof out) != 0) return fail("TVMArrayCopyToBytes");
  if (TVMArrayFree(arr) != 0) return fail("TVMArrayFree");
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "consumer: round trip changed the data\n");
    return 1;
  }
  printf("consumer (C, TVM %s API): ok\n", TVM_VERSION);
  return 0;
}
