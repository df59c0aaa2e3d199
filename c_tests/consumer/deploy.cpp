// Downstream C++14 program using TVM's C++ runtime API (tvm/runtime/*.h, header-only over the C
// ABI): a global function registered from C++, called through the registry, an NDArray round
// trip, and the system library.
#include <tvm/runtime/logging.h>
#include <tvm/runtime/module.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/packed_func.h>
#include <tvm/runtime/registry.h>

#include <cstdio>
#include <string>
#include <vector>

TVM_REGISTER_GLOBAL("consumer.scale").set_body_typed([](tvm::runtime::NDArray arr, double factor) {
  float* data = static_cast<float*>(arr->data);
  for (int64_t i = 0; i < arr->shape[0]; ++i) data[i] = static_cast<float>(data[i] * factor);
  return arr;
});

int main() {
  using namespace tvm::runtime;
  try {
    DLDevice cpu{kDLCPU, 0};
    NDArray x = NDArray::Empty({4}, DLDataType{kDLFloat, 32, 1}, cpu);
    std::vector<float> in = {1, 2, 3, 4};
    x.CopyFromBytes(in.data(), in.size() * sizeof(float));
    const PackedFunc* scale = Registry::Get("consumer.scale");
    ICHECK(scale != nullptr) << "consumer.scale is not registered";
    NDArray y = (*scale)(x, 2.0);
    std::vector<float> out(4);
    y.CopyToBytes(out.data(), out.size() * sizeof(float));
    ICHECK_EQ(out[3], 8.0f);
    Module syslib = (*Registry::Get("runtime.SystemLib"))();
    ICHECK_EQ(std::string(syslib->type_key()), "library");
    try {
      Module::LoadFromFile("/nonexistent/model.so");
      LOG(FATAL) << "loading a missing file succeeded";
    } catch (const Error& e) {
      ICHECK(std::string(e.what()).find("/nonexistent/model.so") != std::string::npos) << e.what();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_deploy: %s\n", e.what());
    return 1;
  }
  std::printf("consumer (C++ API): ok\n");
  return 0;
}
