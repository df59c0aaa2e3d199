/*
 * Deployment through TVM's C++ API (tvm/runtime/{module,packed_func,registry,ndarray}.h), the
 * way TVM's deploy example and graph-executor docs write it:
 *
 *   a single-op kernel library (tests/fixtures/addone.c) loaded as a .so with
 *     Module::LoadFromFile, and linked into this program as a system library found through
 *     (*Registry::Get("runtime.SystemLib"))();
 *   TVM 0.18's mlp model: factory.GetFunction("default")(dev), set_input by name and by index,
 *     run, get_output into an NDArray, load_params from a TVMByteArray; the outputs equal TVM's recorded ones and, bit for bit,
 *     what the C API (TVMGraphExecutor*) computes;
 *   errors of bad calls arrive as tvm::runtime::Error carrying the runtime's message.
 *
 * Paths come from the build: TVM_TEST_ADDONE_SO, TVM_TEST_MLP_SO, TVM_TEST_MLP_DATA_DIR.
 */
#include <dlpack/dlpack.h>
#include <tvm/runtime/module.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/packed_func.h>
#include <tvm/runtime/registry.h>
#include <tvm_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tvm_test_cpp.h"

#if !defined(TVM_TEST_ADDONE_SO) || !defined(TVM_TEST_MLP_SO) || !defined(TVM_TEST_MLP_DATA_DIR)
#error "TVM_TEST_ADDONE_SO, TVM_TEST_MLP_SO and TVM_TEST_MLP_DATA_DIR must be defined by the build"
#endif

using tvm::runtime::Module;
using tvm::runtime::NDArray;
using tvm::runtime::PackedFunc;
using tvm::runtime::Registry;

namespace {

const DLDevice kCPU{kDLCPU, 0};
const DLDataType kF32{kDLFloat, 32, 1};

/* f(x, y) computes y = x + 1, with x and y passed as DLTensor* and as NDArray. */
void VerifyAddOne(Module mod, const std::string& fname) {
  PackedFunc f = mod.GetFunction(fname);
  ICHECK(f != nullptr) << fname << " is missing";
  EXPECT(f != nullptr);

  DLTensor* x = nullptr;
  DLTensor* y = nullptr;
  int64_t shape[1] = {10};
  tvm::runtime::detail::CheckCall(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &x));
  tvm::runtime::detail::CheckCall(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &y));
  for (int i = 0; i < 10; ++i) static_cast<float*>(x->data)[i] = static_cast<float>(i);
  f(x, y);
  bool ok = true;
  for (int i = 0; i < 10; ++i) ok = ok && static_cast<float*>(y->data)[i] == i + 1.0f;
  EXPECT(ok);
  TVMArrayFree(x);
  TVMArrayFree(y);

  NDArray a = NDArray::Empty({10}, kF32, kCPU);
  NDArray b = NDArray::Empty({10}, kF32, kCPU);
  for (int i = 0; i < 10; ++i) static_cast<float*>(a->data)[i] = static_cast<float>(2 * i);
  f(a, b);
  std::vector<float> out(10);
  b.CopyToBytes(out.data(), out.size() * sizeof(float));
  ok = true;
  for (int i = 0; i < 10; ++i) ok = ok && out[i] == 2.0f * i + 1.0f;
  EXPECT(ok);

  // A bad call: the kernel's own message, as an exception.
  EXPECT_THROWS(f(a), fname + ": expects 2 arguments");
  EXPECT_THROWS(f(a, 3), "arguments must be tensors");
}

void DeploySingleOp() {
  Module mod_dylib = Module::LoadFromFile(TVM_TEST_ADDONE_SO);
  EXPECT(std::string(mod_dylib->type_key()) == "library");
  EXPECT(std::string(mod_dylib.type_key()) == "library");
  VerifyAddOne(mod_dylib, "addone");
  EXPECT(mod_dylib.GetFunction("addonesys") == nullptr);

  const PackedFunc* syslib = Registry::Get("runtime.SystemLib");
  EXPECT(syslib != nullptr);
  Module mod_syslib = (*syslib)();
  EXPECT(std::string(mod_syslib->type_key()) == "library");
  VerifyAddOne(mod_syslib, "addonesys");
  EXPECT(mod_syslib.GetFunction("addone") == nullptr);
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

bool AllClose(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i])))) {
      std::fprintf(stderr, "  element %zu: got %.9g, want %.9g\n", i, static_cast<double>(got[i]),
                   static_cast<double>(want[i]));
      return false;
    }
  }
  return true;
}

std::vector<float> ToVector(const NDArray& arr) {
  std::vector<float> v(static_cast<size_t>(tvm::runtime::GetDataSize(*arr.operator->()) / sizeof(float)));
  arr.CopyToBytes(v.data(), v.size() * sizeof(float));
  return v;
}

/* The same model through the C API, for comparison. */
std::vector<float> RunWithCApi(const std::vector<float>& input) {
  TVMModuleHandle factory = nullptr;
  tvm::runtime::detail::CheckCall(TVMModLoadFromFile(TVM_TEST_MLP_SO, "", &factory));
  TVMGraphExecutor* g = nullptr;
  DLDevice dev = kCPU;
  tvm::runtime::detail::CheckCall(TVMGraphExecutorCreateFromFactory(factory, &dev, 1, &g));
  int64_t xshape[2] = {2, 8};
  int64_t yshape[2] = {2, 4};
  std::vector<float> xdata(input), ydata(8, 0.0f);
  DLTensor x{xdata.data(), dev, 2, kF32, xshape, nullptr, 0};
  DLTensor y{ydata.data(), dev, 2, kF32, yshape, nullptr, 0};
  tvm::runtime::detail::CheckCall(TVMGraphExecutorSetInput(g, "x", &x));
  tvm::runtime::detail::CheckCall(TVMGraphExecutorRun(g));
  tvm::runtime::detail::CheckCall(TVMGraphExecutorGetOutput(g, 0, &y));
  TVMGraphExecutorFree(g);
  TVMModFree(factory);
  return ydata;
}

void DeployGraphExecutor() {
  const std::vector<float> input = Floats(tvm_test_cpp::ReadFile(TVM_TEST_MLP_DATA_DIR, "input_x.bin"));
  const std::vector<float> want = Floats(tvm_test_cpp::ReadFile(TVM_TEST_MLP_DATA_DIR, "output_0.bin"));

  DLDevice dev{kDLCPU, 0};
  Module mod_factory = Module::LoadFromFile(TVM_TEST_MLP_SO);
  EXPECT(std::string(mod_factory->type_key()) == "GraphExecutorFactory");
  Module gmod = mod_factory.GetFunction("default")(dev);
  EXPECT(gmod.defined());
  EXPECT(std::string(gmod->type_key()) == "GraphExecutor");
  PackedFunc set_input = gmod.GetFunction("set_input");
  PackedFunc get_output = gmod.GetFunction("get_output");
  PackedFunc run = gmod.GetFunction("run");
  PackedFunc get_num_inputs = gmod.GetFunction("get_num_inputs");
  PackedFunc get_num_outputs = gmod.GetFunction("get_num_outputs");
  PackedFunc get_input_index = gmod.GetFunction("get_input_index");
  EXPECT(set_input != nullptr && get_output != nullptr && run != nullptr);

  int num_inputs = get_num_inputs();
  int num_outputs = get_num_outputs();
  int32_t c_num_inputs = 0;  // TVM counts the weights as inputs too
  {
    TVMGraphExecutor* g = nullptr;
    tvm::runtime::detail::CheckCall(TVMGraphExecutorCreateFromFactory(mod_factory.handle(), &dev, 1, &g));
    tvm::runtime::detail::CheckCall(TVMGraphExecutorGetNumInputs(g, &c_num_inputs));
    TVMGraphExecutorFree(g);
  }
  EXPECT(num_inputs == c_num_inputs && num_inputs >= 1);
  EXPECT(num_outputs == 1);
  int x_index = get_input_index("x");
  EXPECT(x_index == 0);

  NDArray x = NDArray::Empty({2, 8}, DLDataType{kDLFloat, 32, 1}, dev);
  NDArray y = NDArray::Empty({2, 4}, DLDataType{kDLFloat, 32, 1}, dev);
  x.CopyFromBytes(input.data(), input.size() * sizeof(float));

  // By name, into a caller's array.
  set_input("x", x);
  run();
  get_output(0, y);
  const std::vector<float> by_name = ToVector(y);
  EXPECT(AllClose(by_name, want));

  // By index, with the output as a returned NDArray.
  NDArray x2 = NDArray::Empty({2, 8}, DLDataType{kDLFloat, 32, 1}, dev);
  x2.CopyFrom(x);
  set_input(x_index, x2);
  run();
  NDArray out = get_output(0);
  EXPECT(out.Shape() == tvm::runtime::ShapeTuple({2, 4}));
  EXPECT(out.DataType() == tvm::runtime::DataType::Float(32));
  EXPECT(ToVector(out) == by_name);

  // A DLTensor* the program owns works as input too.
  std::vector<float> raw(input);
  int64_t xshape[2] = {2, 8};
  DLTensor xt{raw.data(), dev, 2, kF32, xshape, nullptr, 0};
  set_input("x", &xt);
  run();
  get_output(0, y);
  EXPECT(ToVector(y) == by_name);

  // Weights from a params file, passed as bytes as TVM's deploy docs do (load_params).
  std::string params = tvm_test_cpp::ReadFile(TVM_TEST_MLP_DATA_DIR, "params.bin");
  TVMByteArray params_arr;
  params_arr.data = params.c_str();
  params_arr.size = params.length();
  PackedFunc load_params = gmod.GetFunction("load_params");
  load_params(params_arr);
  set_input("x", x);
  run();
  get_output(0, y);
  EXPECT(ToVector(y) == by_name);
  TVMByteArray truncated{params.data(), 5};
  EXPECT_THROWS(load_params(truncated), "params");

  // Bit for bit what the C API computes.
  EXPECT(RunWithCApi(input) == by_name);

  // A second executor from the same factory.
  Module gmod2 = mod_factory.GetFunction("default")(dev);
  EXPECT(!gmod2.same_as(gmod));
  gmod2.GetFunction("set_input")("x", x);
  gmod2.GetFunction("run")();
  EXPECT(ToVector(gmod2.GetFunction("get_output")(0)) == by_name);

  // Errors arrive as exceptions carrying the runtime's message.
  EXPECT_THROWS(set_input("no_such_input", x), "no_such_input");
  NDArray wrong = NDArray::Empty({3, 8}, DLDataType{kDLFloat, 32, 1}, dev);
  EXPECT_THROWS(set_input("x", wrong), "shape");
  EXPECT_THROWS(get_output(7), "7");
  EXPECT_THROWS(Module::LoadFromFile("no_such_model.so"), "./no_such_model.so");
  EXPECT_THROWS(Module::LoadFromFile("/nonexistent/model.so"), "/nonexistent/model.so");
}

}  // namespace

int main() {
  try {
    DeploySingleOp();
    DeployGraphExecutor();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_cpp_deploy: unexpected exception: %s\n", e.what());
    return 1;
  }
  return tvm_test_cpp::Summary("test_cpp_deploy");
}
