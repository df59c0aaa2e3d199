// Run the demo model (target/demo/demo_model.so) through TVM's C++ API and print its prediction.
#include <tvm/runtime/module.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/packed_func.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  using namespace tvm::runtime;
  try {
    DLDevice dev{kDLCPU, 0};
    // A name without a '/' is searched for as dlopen does (library path): give a path.
    Module factory = Module::LoadFromFile(argc > 1 ? argv[1] : "target/demo/demo_model.so");
    Module gmod = factory.GetFunction("default")(dev);  // a graph executor
    PackedFunc set_input = gmod.GetFunction("set_input");
    PackedFunc run = gmod.GetFunction("run");
    PackedFunc get_output = gmod.GetFunction("get_output");

    NDArray x = NDArray::Empty({1, 1, 16, 16}, DLDataType{kDLFloat, 32, 1}, dev);
    std::vector<float> pixels(16 * 16);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 16) / 15.0f;
    x.CopyFromBytes(pixels.data(), pixels.size() * sizeof(float));
    set_input("data", x);  // by name; set_input(0, x) by index
    run();
    NDArray y = get_output(0);  // or get_output(0, y) into an array of yours
    const float* scores = static_cast<const float*>(y->data);
    int classes = static_cast<int>(y.Shape()[1]), best = 0;
    float sum = 0;
    for (int k = 0; k < classes; ++k) {
      sum += scores[k];
      if (scores[k] > scores[best]) best = k;
    }
    std::printf("predicted class %d of %d (p = %.4f; the probabilities sum to %.4f)\n", best, classes,
                scores[best], sum);
    return sum > 0.999f && sum < 1.001f ? 0 : 1;  // the model ends in a softmax
  } catch (const tvm::runtime::Error& e) {  // every failed call, with the runtime's message
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
