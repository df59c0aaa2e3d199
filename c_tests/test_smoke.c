/* Smoke test of the C test wiring: an NDArray byte round trip and a built-in global. */
#include <tvm_runtime.h>

#include "tvm_test.h"

int main(void) {
  const int64_t shape[2] = {2, 3};
  float in[6] = {1.5f, -2.0f, 3.25f, 0.0f, 1e6f, -7.5f};
  float out[6] = {0};
  DLTensor* arr = NULL;

  REQUIRE_OK(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &arr));
  REQUIRE(arr != NULL);
  CHECK(arr->ndim == 2 && arr->shape[0] == 2 && arr->shape[1] == 3);
  CHECK(arr->dtype.code == kDLFloat && arr->dtype.bits == 32 && arr->dtype.lanes == 1);
  CHECK_OK(TVMArrayCopyFromBytes(arr, in, sizeof in));
  CHECK_OK(TVMArrayCopyToBytes(arr, out, sizeof out));
  CHECK(memcmp(in, out, sizeof in) == 0);
  CHECK_OK(TVMArrayFree(arr));

  TVMFunctionHandle syslib = NULL;
  CHECK_OK(TVMFuncGetGlobal("runtime.SystemLib", &syslib));
  CHECK(syslib != NULL);
  if (syslib != NULL) CHECK_OK(TVMFuncFree(syslib));

  return tvm_test_summary("test_smoke");
}
