// A C++ program on tvm-ffi's C++ API alone, linked against this runtime, running a library that
// apache-tvm's tvm.compile built (a Relax VM executable): LoadFromFile, vm_load_executable,
// vm_initialization on the CPU, then the function on an input read from a file; its output is
// compared with the output apache-tvm recorded.
//
//   relax_loader LIB FUNC IN.bin IN_SHAPE(a,b,..) OUT.bin
//
// Prints "OK" and exits 0 when every output element is within 1e-5 of the recorded one.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace ffi = tvm::ffi;

static std::vector<float> ReadFloats(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + out.size() * sizeof(float), reinterpret_cast<char*>(out.data()));
  return out;
}

static std::vector<int64_t> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream s(text);
  for (std::string dim; std::getline(s, dim, ',');) shape.push_back(std::stoll(dim));
  return shape;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s LIB FUNC IN.bin IN_SHAPE OUT.bin\n", argv[0]);
    return 2;
  }
  try {
    ffi::Module lib = ffi::Module::LoadFromFile(argv[1]);
    ffi::Module vm = lib->GetFunction("vm_load_executable").value()().cast<ffi::Module>();
    vm->GetFunction("vm_initialization").value()(static_cast<int>(kDLCPU), 0, 2);
    ffi::Function func = vm->GetFunction(argv[2]).value();
    std::vector<float> in = ReadFloats(argv[3]), want = ReadFloats(argv[5]);
    std::vector<int64_t> shape = ParseShape(argv[4]);
    DLTensor x{};
    x.data = in.data();
    x.device = DLDevice{kDLCPU, 0};
    x.ndim = static_cast<int32_t>(shape.size());
    x.dtype = DLDataType{kDLFloat, 32, 1};
    x.shape = shape.data();
    ffi::Tensor y = func(&x).cast<ffi::Tensor>();
    const float* got = static_cast<const float*>(y.data_ptr());
    if (y.numel() != static_cast<int64_t>(want.size())) {
      std::fprintf(stderr, "output has %lld elements, expected %zu\n", static_cast<long long>(y.numel()), want.size());
      return 1;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::fabs(got[i] - want[i]) > 1e-5f * (1.0f + std::fabs(want[i]))) {
        std::fprintf(stderr, "element %zu: %g, expected %g\n", i, got[i], want[i]);
        return 1;
      }
    }
  } catch (const ffi::Error& err) {
    std::fprintf(stderr, "%s: %s\n", err.kind().c_str(), err.message().c_str());
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
