// Downstream C++11 program: the headers must work from C++, including packed-function callbacks.
#include <tvm_runtime.h>

#include <cstdio>
#include <vector>

namespace {

int Fail(const char* what) {
  const char* err = TVMGetLastError();
  std::fprintf(stderr, "consumer_cpp: %s failed: %s\n", what, err ? err : "(no error message)");
  return 1;
}

// A packed function implemented in C++: returns args[0] + args[1] as int64.
int Add(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret, void*) {
  if (num_args != 2 || type_codes[0] != kDLInt || type_codes[1] != kDLInt) {
    TVMAPISetLastError("Add expects two ints");
    return -1;
  }
  TVMValue v;
  v.v_int64 = args[0].v_int64 + args[1].v_int64;
  int code = kDLInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

}  // namespace

int main() {
  const int64_t shape[1] = {8};
  std::vector<int16_t> in(8), out(8, 0);
  for (int i = 0; i < 8; ++i) in[i] = static_cast<int16_t>(i * 1000 - 3000);

  DLTensor* arr = nullptr;
  if (TVMArrayAlloc(shape, 1, kDLInt, 16, 1, kDLCPU, 0, &arr) != 0) return Fail("TVMArrayAlloc");
  if (TVMArrayCopyFromBytes(arr, in.data(), in.size() * sizeof(int16_t)) != 0)
    return Fail("TVMArrayCopyFromBytes");
  if (TVMArrayCopyToBytes(arr, out.data(), out.size() * sizeof(int16_t)) != 0)
    return Fail("TVMArrayCopyToBytes");
  if (TVMArrayFree(arr) != 0) return Fail("TVMArrayFree");
  if (in != out) {
    std::fprintf(stderr, "consumer_cpp: round trip changed the data\n");
    return 1;
  }

  TVMFunctionHandle f = nullptr;
  if (TVMFuncCreateFromCFunc(Add, nullptr, nullptr, &f) != 0) return Fail("TVMFuncCreateFromCFunc");
  TVMValue args[2];
  int codes[2] = {kDLInt, kDLInt};
  args[0].v_int64 = 40;
  args[1].v_int64 = 2;
  TVMValue rv;
  int rc = 0;
  if (TVMFuncCall(f, args, codes, 2, &rv, &rc) != 0) return Fail("TVMFuncCall");
  if (TVMFuncFree(f) != 0) return Fail("TVMFuncFree");
  if (rc != kDLInt || rv.v_int64 != 42) {
    std::fprintf(stderr, "consumer_cpp: expected 42, got %lld (type code %d)\n",
                 static_cast<long long>(rv.v_int64), rc);
    return 1;
  }
  std::printf("consumer (C++): ok\n");
  return 0;
}
