/*
 * The Relax VM through TVM's C++ API, as TVM's C++ deploy code drives it:
 *
 *   Module lib = Module::LoadFromFile("lib.so");             // relax.build + export_library
 *   Module vm = lib.GetFunction("vm_load_executable")();
 *   vm.GetFunction("vm_initialization")(kDLCPU, 0, 2);        // device, id, pooled allocator
 *   NDArray y = vm.GetFunction("main")(x);
 *
 * on TVM 0.18's libraries: mlp (one NDArray out), tuple (a runtime Array of two NDArrays, read
 * with the globals runtime.ArraySize / runtime.ArrayGetItem), dyn (a symbolic batch) and
 * two_funcs' `second`; the numbers against TVM's recorded outputs. Bad calls throw
 * tvm::runtime::Error carrying the runtime's message, and the VM runs on afterwards.
 *
 * The data comes from the build: TVM_TEST_RELAX_DATA_DIR (tests/data/relax-0.18).
 */
#include <dlpack/dlpack.h>
#include <tvm/runtime/module.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/packed_func.h>
#include <tvm/runtime/registry.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tvm_test_cpp.h"

#ifndef TVM_TEST_RELAX_DATA_DIR
#error "TVM_TEST_RELAX_DATA_DIR must be defined by the build"
#endif

using tvm::runtime::Module;
using tvm::runtime::NDArray;
using tvm::runtime::ObjectRef;
using tvm::runtime::PackedFunc;
using tvm::runtime::Registry;

namespace {

const DLDevice kCPU{kDLCPU, 0};
const DLDataType kF32{kDLFloat, 32, 1};
const std::string kData = TVM_TEST_RELAX_DATA_DIR;

NDArray FromFile(const std::string& dir, const std::string& name, std::vector<int64_t> shape) {
  std::string bytes = tvm_test_cpp::ReadFile(dir, name);
  NDArray a = NDArray::Empty(tvm::runtime::ShapeTuple(shape), kF32, kCPU);
  a.CopyFromBytes(bytes.data(), bytes.size());
  return a;
}

/* `got` has `shape` and holds (1e-5 relative) the float32 file dir/name. */
bool Matches(const NDArray& got, const std::string& dir, const std::string& name, std::vector<int64_t> shape) {
  if (got.Shape() != tvm::runtime::ShapeTuple(shape) || got.DataType() != tvm::runtime::DataType::Float(32)) {
    return false;
  }
  std::string bytes = tvm_test_cpp::ReadFile(dir, name);
  std::vector<float> want(bytes.size() / sizeof(float)), v(want.size());
  std::memcpy(want.data(), bytes.data(), bytes.size());
  got.CopyToBytes(v.data(), v.size() * sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(std::fabs(v[i] - want[i]) <= 1e-5f * std::fmax(1.0f, std::fabs(want[i])))) {
      std::fprintf(stderr, "  %s element %zu: got %.9g, want %.9g\n", name.c_str(), i, static_cast<double>(v[i]),
                   static_cast<double>(want[i]));
      return false;
    }
  }
  return true;
}

Module LoadVM(const std::string& model, int allocator = 2) {
  Module lib = Module::LoadFromFile(kData + "/" + model + "/lib.so", "so");
  EXPECT(std::string(lib->type_key()) == "relax.Executable");
  Module vm = lib.GetFunction("vm_load_executable")();
  EXPECT(vm.defined());
  vm.GetFunction("vm_initialization")(static_cast<int>(kDLCPU), 0, allocator);
  return vm;
}

void Mlp() {
  const std::string dir = kData + "/mlp";
  Module vm = LoadVM("mlp");
  PackedFunc main_fn = vm.GetFunction("main");
  EXPECT(main_fn != nullptr);
  NDArray x = FromFile(dir, "input_0.bin", {4, 32});
  NDArray y = main_fn(x);
  EXPECT(Matches(y, dir, "output_0.bin", {4, 10}));

  // Errors arrive as exceptions carrying the runtime's message; the VM runs on.
  EXPECT_THROWS(main_fn(), "main expects 1 arguments");
  EXPECT_THROWS(main_fn(x, x), "but 2 arguments were provided");
  NDArray f64 = NDArray::Empty({4, 32}, DLDataType{kDLFloat, 64, 1}, kCPU);
  EXPECT_THROWS(main_fn(f64), "float32 but get float64");
  NDArray wide = NDArray::Empty({5, 32}, kF32, kCPU);
  EXPECT_THROWS(main_fn(wide), "shape[0] is 5 but 4 is required");
  EXPECT(vm.GetFunction("no_such_function") == nullptr);
  NDArray again = main_fn(x);
  EXPECT(Matches(again, dir, "output_0.bin", {4, 10}));

  // The stateful interface: set_input, invoke_stateful, get_output.
  vm.GetFunction("set_input")("main", x);
  vm.GetFunction("invoke_stateful")("main");
  NDArray out = vm.GetFunction("get_output")("main");
  EXPECT(Matches(out, dir, "output_0.bin", {4, 10}));

  // Naive allocator: the same numbers.
  Module naive = LoadVM("mlp", 1);
  NDArray y2 = naive.GetFunction("main")(x);
  EXPECT(Matches(y2, dir, "output_0.bin", {4, 10}));
}

void Tuple() {
  const std::string dir = kData + "/tuple";
  Module vm = LoadVM("tuple");
  NDArray x = FromFile(dir, "input_0.bin", {4, 8});
  NDArray y = FromFile(dir, "input_1.bin", {4, 8});
  ObjectRef result = vm.GetFunction("main")(x, y);
  const PackedFunc* size = Registry::Get("runtime.ArraySize");
  const PackedFunc* item = Registry::Get("runtime.ArrayGetItem");
  EXPECT(size != nullptr && item != nullptr);
  int64_t n = (*size)(result);
  EXPECT(n == 2);
  NDArray sum = (*item)(result, 0);
  NDArray dot = (*item)(result, 1);
  EXPECT(Matches(sum, dir, "output_0.bin", {4, 8}));
  EXPECT(Matches(dot, dir, "output_1.bin", {4}));
}

void Dynamic() {
  Module vm = LoadVM("dyn");
  PackedFunc main_fn = vm.GetFunction("main");
  for (int64_t n : {1, 3, 8}) {
    const std::string dir = kData + "/dyn/n" + std::to_string(n);
    NDArray out = main_fn(FromFile(dir, "input_0.bin", {n, 16}));
    EXPECT(Matches(out, dir, "output_0.bin", {2 * n, 8}));
  }
}

void Second() {
  const std::string dir = kData + "/two_funcs/second";
  Module vm = LoadVM("two_funcs");
  NDArray out = vm.GetFunction("second")(FromFile(dir, "input_0.bin", {4, 8}), FromFile(dir, "input_1.bin", {8, 3}));
  EXPECT(Matches(out, dir, "output_0.bin", {4, 3}));
}

}  // namespace

int main() {
  try {
    Mlp();
    Tuple();
    Dynamic();
    Second();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_cpp_relax_vm: unexpected exception: %s\n", e.what());
    return 1;
  }
  return tvm_test_cpp::Summary("test_cpp_relax_vm");
}
