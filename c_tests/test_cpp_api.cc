/*
 * TVM's C++ runtime API over this runtime's C ABI, piece by piece:
 *
 *   PackedFunc calls with every argument kind (ints, floats, bools, strings, bytes, DLTensor*, NDArray,
 *     Module, PackedFunc, DLDevice, DLDataType, DataType, ShapeTuple, nullptr) seen from a C
 *     callback, and TVMRetValue's conversions of every result kind;
 *   PackedFunc from lambdas (set_body, set_body_typed, TypedPackedFunc), TVM_REGISTER_GLOBAL,
 *     Registry::Get / Register / ListNames / Remove, functions visible to C and back;
 *   NDArray: Empty, CopyFrom/To, CopyFrom/ToBytes, Shape, DataType, ToDLPack/FromDLPack,
 *     reference counts shared with C (TVMArrayFree, TVMObjectRetain);
 *   String, ShapeTuple, DataType; LOG, ICHECK and friends throwing tvm::runtime::Error;
 *   failures of C calls (and exceptions thrown in C++ callbacks) as exceptions with the message.
 */
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/data_type.h>
#include <tvm/runtime/device_api.h>
#include <tvm/runtime/logging.h>
#include <tvm/runtime/module.h>
#include <tvm/runtime/ndarray.h>
#include <tvm/runtime/object.h>
#include <tvm/runtime/packed_func.h>
#include <tvm/runtime/registry.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tvm_test_cpp.h"

using namespace tvm::runtime;  // NOLINT

namespace {

/* A C callback recording the type codes and values it was called with. */
struct Seen {
  std::vector<int> codes;
  std::vector<TVMValue> values;
  std::vector<std::string> strings;
};
thread_local Seen g_seen;

int Record(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  g_seen = Seen();
  for (int i = 0; i < n; ++i) {
    g_seen.codes.push_back(codes[i]);
    g_seen.values.push_back(args[i]);
    g_seen.strings.push_back(codes[i] == kTVMStr ? args[i].v_str : "");
  }
  TVMValue v;
  v.v_int64 = n;
  int code = kDLInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

/* A C callback returning its first argument. */
int Echo(TVMValue* args, int* codes, int n, TVMRetValueHandle ret, void*) {
  if (n < 1) return 0;
  /* TVMCFuncSetReturn copies: strings are copied, objects gain their own reference. */
  return TVMCFuncSetReturn(ret, &args[0], &codes[0], 1);
}

PackedFunc FromC(TVMPackedCFunc f) {
  TVMFunctionHandle h = nullptr;
  detail::CheckCall(TVMFuncCreateFromCFunc(f, nullptr, nullptr, &h));
  return PackedFunc::FromOwnedHandle(h);
}

enum Color { kRed = 3 };

void TestArguments() {
  PackedFunc rec = FromC(Record);
  NDArray arr = NDArray::Empty({2, 3}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  Module lib = (*Registry::Get("runtime.SystemLib"))();
  PackedFunc echo = FromC(Echo);
  std::string s = "std::string";
  String ts("tvm String");
  int64_t big = int64_t(1) << 40;
  unsigned u = 7;
  char buf[] = "char array";
  DLTensor* raw = arr.handle();
  int local = 0;
  ShapeTuple shape{4, 5};

  TVMByteArray bytes{"bytes", 5};
  int n = rec(1, big, u, 2.5, 1.5f, true, false, "literal", s, ts, buf, raw, arr, lib, echo, DLDevice{kDLCPU, 1},
              DLDataType{kDLInt, 8, 4}, DataType::Float(16), nullptr, static_cast<void*>(&local), kRed, shape,
              static_cast<const char*>(nullptr), bytes);
  EXPECT(n == 24);
  const std::vector<int> want = {kDLInt,          kDLInt,          kDLInt,           kDLFloat,        kDLFloat,
                                 kTVMArgBool,     kTVMArgBool,     kTVMStr,          kTVMStr,         kTVMStr,
                                 kTVMStr,         kTVMDLTensorHandle, kTVMNDArrayHandle, kTVMModuleHandle,
                                 kTVMPackedFuncHandle, kDLDevice,   kTVMDataType,     kTVMDataType,    kTVMNullptr,
                                 kTVMOpaqueHandle, kDLInt,         kTVMObjectHandle, kTVMNullptr,
                                 kTVMBytes};
  EXPECT(g_seen.codes == want);
  if (g_seen.codes != want) return;
  const std::vector<TVMValue>& v = g_seen.values;
  EXPECT(v[0].v_int64 == 1 && v[1].v_int64 == big && v[2].v_int64 == 7);
  EXPECT(v[3].v_float64 == 2.5 && v[4].v_float64 == 1.5);
  EXPECT(v[5].v_int64 == 1 && v[6].v_int64 == 0);
  EXPECT(g_seen.strings[7] == "literal" && g_seen.strings[8] == "std::string" && g_seen.strings[9] == "tvm String" &&
         g_seen.strings[10] == "char array");
  EXPECT(v[11].v_handle == raw && v[12].v_handle == raw);
  EXPECT(v[13].v_handle == lib.handle() && v[14].v_handle == echo.handle());
  EXPECT(v[15].v_device.device_type == kDLCPU && v[15].v_device.device_id == 1);
  EXPECT(v[16].v_type.code == kDLInt && v[16].v_type.bits == 8 && v[16].v_type.lanes == 4);
  EXPECT(v[17].v_type.code == kDLFloat && v[17].v_type.bits == 16);
  EXPECT(v[19].v_handle == &local && v[20].v_int64 == 3);
  unsigned tindex = 0;
  detail::CheckCall(TVMObjectGetTypeIndex(v[21].v_handle, &tindex));
  EXPECT(tindex == TypeIndex::kRuntimeShapeTuple);
  EXPECT(v[23].v_handle == &bytes);

  // TVMArgValue / TVMRetValue are arguments too.
  TVMRetValue rv = echo(std::string("again"));
  n = rec(rv);
  EXPECT(n == 1 && g_seen.codes[0] == kTVMStr && g_seen.strings[0] == "again");
  n = rec();
  EXPECT(n == 0 && g_seen.codes.empty());
}

void TestResults() {
  PackedFunc echo = FromC(Echo);
  int i = echo(42);
  int64_t i64 = echo(int64_t(1) << 40);
  uint64_t u64 = echo(9);
  double d = echo(0.25);
  double from_int = echo(3);
  bool b = echo(true);
  bool b_from_int = echo(1);
  float f = static_cast<double>(echo(1.5f));
  EXPECT(i == 42 && i64 == (int64_t(1) << 40) && u64 == 9u && d == 0.25 && from_int == 3.0 && b && b_from_int &&
         f == 1.5f);
  std::string s = echo("text");
  String ts = echo(std::string("more"));
  EXPECT(s == "text" && ts == "more");
  DLDevice dev = echo(DLDevice{kDLCPU, 3});
  EXPECT(dev.device_type == kDLCPU && dev.device_id == 3);
  DLDataType t = echo(DLDataType{kDLUInt, 16, 2});
  DataType dt = echo(DataType::Int(32));
  EXPECT(DataType(t) == DataType::UInt(16, 2) && dt == DataType::Int(32));
  DLDataType parsed = echo("float32x4");
  EXPECT(DataType(parsed) == DataType::Float(32, 4));
  std::string dtype_text = echo(DataType::Bool());
  EXPECT(dtype_text == "bool");
  void* p = echo(static_cast<void*>(&i));
  EXPECT(p == &i);
  TVMRetValue none = echo(nullptr);
  EXPECT(none.type_code() == kTVMNullptr);
  NDArray null_arr = echo(nullptr);
  EXPECT(null_arr == nullptr);

  NDArray arr = NDArray::Empty({4}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  NDArray back = echo(arr);
  EXPECT(back.same_as(arr));
  DLTensor* as_tensor = echo(arr);
  EXPECT(as_tensor == arr.handle());
  Module lib = (*Registry::Get("runtime.SystemLib"))();
  Module lib_back = echo(lib);
  EXPECT(lib_back.same_as(lib));
  PackedFunc f_back = echo(echo);
  EXPECT(f_back.same_as(echo));
  ObjectRef obj = echo(lib);
  EXPECT(obj.same_as(lib) && obj->GetTypeKey() == "runtime.Module");
  ShapeTuple shape = echo(ShapeTuple{7, 8, 9});
  EXPECT(shape == ShapeTuple({7, 8, 9}));
  EXPECT(Downcast<Module>(obj).same_as(lib));
  EXPECT_THROWS(Downcast<NDArray>(obj), "runtime.NDArray");

  // Wrong conversions name both types.
  EXPECT_THROWS({ int x = echo("text"); (void)x; }, "expected int but got str");
  EXPECT_THROWS({ std::string x = echo(1); (void)x; }, "expected str but got int");
  EXPECT_THROWS({ NDArray x = echo(lib); (void)x; }, "expected runtime.NDArray but got runtime.Module");
  EXPECT_THROWS({ Module x = echo(2.0); (void)x; }, "expected runtime.Module but got float");
  EXPECT_THROWS({ DLDevice x = echo(1); (void)x; }, "expected DLDevice but got int");
  EXPECT_THROWS({ int x = echo(int64_t(1) << 40); (void)x; }, "does not fit");

  // Copies of results hold their own references.
  TVMRetValue r1 = echo(arr);
  TVMRetValue r2 = r1;
  TVMRetValue r3 = std::move(r1);
  EXPECT(r1.type_code() == kTVMNullptr && r2.type_code() == kTVMNDArrayHandle && r3.type_code() == kTVMNDArrayHandle);
  EXPECT(arr.use_count() == 4);  // arr, back, r2, r3
}

void TestLambdas() {
  PackedFunc add([](TVMArgs args, TVMRetValue* rv) {
    int64_t sum = 0;
    for (int i = 0; i < args.size(); ++i) sum += args[i].operator int64_t();
    *rv = sum;
  });
  int64_t sum = add(1, 2, 3, int64_t(4));
  EXPECT(sum == 10);

  // Every result kind from C++, through the runtime and back.
  NDArray arr = NDArray::Empty({3}, DLDataType{kDLInt, 32, 1}, DLDevice{kDLCPU, 0});
  PackedFunc ret_of([arr](TVMArgs args, TVMRetValue* rv) {
    std::string kind = args[0];
    if (kind == "int") *rv = 7;
    if (kind == "double") *rv = 0.5;
    if (kind == "bool") *rv = true;
    if (kind == "str") *rv = std::string("hello");
    if (kind == "cstr") *rv = "c string";
    if (kind == "bytes") *rv = TVMByteArray{"a\0b", 3};
    if (kind == "ndarray") *rv = arr;
    if (kind == "module") *rv = Module((*Registry::Get("runtime.SystemLib"))());
    if (kind == "device") *rv = DLDevice{kDLCPU, 2};
    if (kind == "dtype") *rv = DataType::Float(64);
    if (kind == "shape") *rv = ShapeTuple{1, 2};
    if (kind == "arg") *rv = args[1];
    if (kind == "none") *rv = nullptr;
    if (kind == "throw") LOG(FATAL) << "thrown from C++ " << 42;
    if (kind == "check") ICHECK_EQ(args.size(), 5) << "five please";
  });
  EXPECT(ret_of("int").operator int() == 7);
  EXPECT(ret_of("double").operator double() == 0.5);
  EXPECT(ret_of("bool").operator bool());
  std::string hello = ret_of("str");
  std::string cstr = ret_of("cstr");
  std::string bytes = ret_of("bytes");
  EXPECT(hello == "hello" && cstr == "c string" && bytes == std::string("a\0b", 3));
  EXPECT(ret_of("bytes").type_code() == kTVMBytes);
  NDArray arr_back = ret_of("ndarray");
  EXPECT(arr_back.same_as(arr));
  Module m = ret_of("module");
  EXPECT(m.defined());
  DLDevice dev = ret_of("device");
  EXPECT(dev.device_id == 2);
  DataType dt = ret_of("dtype");
  EXPECT(dt == DataType::Float(64));
  ShapeTuple shape = ret_of("shape");
  EXPECT(shape.size() == 2 && shape[1] == 2);
  std::string arg = ret_of("arg", "passed");
  EXPECT(arg == "passed");
  EXPECT(ret_of("none").type_code() == kTVMNullptr);
  EXPECT_THROWS(ret_of("throw"), "thrown from C++ 42");
  EXPECT_THROWS(ret_of("check"), "Check failed: args.size() == 5 (1 vs. 5) : five please");

  // Typed functions.
  TypedPackedFunc<int(int, int)> mul = [](int a, int b) { return a * b; };
  EXPECT(mul(6, 7) == 42);
  PackedFunc mul_packed = mul;
  EXPECT(mul_packed(3, 4).operator int() == 12);
  EXPECT_THROWS(mul_packed(3), "expects 2 arguments, but 1 were provided");
  EXPECT_THROWS(mul_packed("a", 1), "expected int but got str");
  TypedPackedFunc<std::string(std::string, NDArray, double)> describe =
      [](const std::string& name, NDArray a, double scale) {
        return name + ":" + std::to_string(a->ndim) + ":" + std::to_string(static_cast<int>(scale * 10));
      };
  EXPECT(describe("x", arr, 0.5) == "x:1:5");
  TypedPackedFunc<void(int)> sink = [](int) {};
  sink(1);
  TypedPackedFunc<int(int)> from_ret = PackedFunc(mul_packed);
  (void)from_ret;
}

int DoubleIt(int x) { return 2 * x; }

TVM_REGISTER_GLOBAL("test.cpp.double").set_body_typed(DoubleIt);
TVM_REGISTER_GLOBAL("test.cpp.concat").set_body_typed([](std::string a, std::string b) { return a + b; });
TVM_REGISTER_GLOBAL("test.cpp.count_args").set_body([](TVMArgs args, TVMRetValue* rv) { *rv = args.size(); });

void TestRegistry() {
  const PackedFunc* dbl = Registry::Get("test.cpp.double");
  EXPECT(dbl != nullptr);
  if (dbl == nullptr) return;
  EXPECT((*dbl)(21).operator int() == 42);
  EXPECT(Registry::Get("test.cpp.double") == dbl);  // stable pointer
  EXPECT(Registry::Get("test.cpp.no_such_function") == nullptr);
  std::string ab = (*Registry::Get("test.cpp.concat"))("a", "b");
  EXPECT(ab == "ab");
  EXPECT((*Registry::Get("test.cpp.count_args"))(1, 2, 3).operator int() == 3);
  EXPECT_THROWS((*dbl)(), "Function test.cpp.double expects 1 arguments, but 0 were provided.");

  // Registered functions are the runtime's: C sees them.
  TVMFunctionHandle h = nullptr;
  detail::CheckCall(TVMFuncGetGlobal("test.cpp.double", &h));
  EXPECT(h != nullptr);
  TVMValue arg;
  arg.v_int64 = 5;
  int code = kDLInt;
  TVMValue ret;
  int ret_code = 0;
  detail::CheckCall(TVMFuncCall(h, &arg, &code, 1, &ret, &ret_code));
  EXPECT(ret_code == kDLInt && ret.v_int64 == 10);
  TVMFuncFree(h);

  std::vector<std::string> names = Registry::ListNames();
  EXPECT(std::find(names.begin(), names.end(), "test.cpp.concat") != names.end());
  EXPECT(std::find(names.begin(), names.end(), "runtime.SystemLib") != names.end());

  Registry::Register("test.cpp.tmp").set_body_typed([]() { return 1; });
  EXPECT_THROWS(Registry::Register("test.cpp.tmp").set_body_typed([]() { return 2; }), "test.cpp.tmp");
  Registry::Register("test.cpp.tmp", true).set_body_typed([]() { return 3; });
  EXPECT((*Registry::Get("test.cpp.tmp"))().operator int() == 3);
  EXPECT(Registry::Remove("test.cpp.tmp"));
  EXPECT(!Registry::Remove("test.cpp.tmp"));
  EXPECT(Registry::Get("test.cpp.tmp") == nullptr);

  // A C++ function given to C code that calls it back.
  PackedFunc apply = PackedFunc([](TVMArgs args, TVMRetValue* rv) {
    PackedFunc f = args[0];
    *rv = f(args[1]);
  });
  TypedPackedFunc<int(int)> inc = [](int x) { return x + 1; };
  EXPECT(apply(inc, 41).operator int() == 42);
}

void TestNDArray() {
  DLDevice cpu{kDLCPU, 0};
  NDArray a = NDArray::Empty({2, 3}, DLDataType{kDLFloat, 32, 1}, cpu);
  EXPECT(a.defined() && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
  EXPECT(a.Shape() == ShapeTuple({2, 3}) && a.DataType() == DataType::Float(32));
  EXPECT(reinterpret_cast<uintptr_t>(a->data) % kAllocAlignment == 0);
  EXPECT(a.IsContiguous());
  std::vector<float> in = {1, 2, 3, 4, 5, 6};
  a.CopyFromBytes(in.data(), in.size() * sizeof(float));
  NDArray b = NDArray::Empty({2, 3}, DLDataType{kDLFloat, 32, 1}, cpu);
  b.CopyFrom(a);
  NDArray c = b.CopyTo(cpu);
  NDArray d = NDArray::Empty({2, 3}, DLDataType{kDLFloat, 32, 1}, cpu);
  c.CopyTo(d);
  std::vector<float> out(6);
  d.CopyToBytes(out.data(), out.size() * sizeof(float));
  EXPECT(out == in);
  EXPECT_THROWS(a.CopyFromBytes(in.data(), 5), "");
  NDArray wrong = NDArray::Empty({7}, DLDataType{kDLFloat, 32, 1}, cpu);
  EXPECT_THROWS(wrong.CopyFrom(a), "");
  EXPECT_THROWS(NDArray().Shape(), "null");
  EXPECT_THROWS(NDArray::Empty({2}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCUDA, 0}), "");

  // Reference counts are the object's, shared with C.
  EXPECT(a.use_count() == 1);
  {
    NDArray a2 = a;
    EXPECT(a.use_count() == 2);
  }
  EXPECT(a.use_count() == 1);
  detail::CheckCall(TVMObjectRetain(static_cast<char*>(static_cast<void*>(a.handle())) - NDArray::kDLTensorOffset));
  EXPECT(a.use_count() == 2);
  detail::CheckCall(TVMArrayFree(a.handle()));
  EXPECT(a.use_count() == 1);
  DLTensor* h = nullptr;
  int64_t shape[1] = {4};
  detail::CheckCall(TVMArrayAlloc(shape, 1, kDLInt, 8, 1, kDLCPU, 0, &h));
  NDArray adopted = NDArray::FromOwnedHandle(h);
  NDArray shared = NDArray::FromHandle(h);
  EXPECT(adopted.use_count() == 2 && adopted->data == h->data);

  // DLPack out and back in.
  DLManagedTensor* managed = a.ToDLPack();
  EXPECT(managed->dl_tensor.data == a->data && a.use_count() == 2);
  NDArray from = NDArray::FromDLPack(managed);
  EXPECT(from->data == a->data);
  std::vector<float> out2(6);
  from.CopyToBytes(out2.data(), out2.size() * sizeof(float));
  EXPECT(out2 == in);
  from = NDArray();
  EXPECT(a.use_count() == 1);
}

void TestValues() {
  String s = "abc";
  EXPECT(s == "abc" && s.size() == 3 && std::string(s.c_str()) == "abc" && s != String("abd"));
  ShapeTuple shape{1, 2, 3};
  EXPECT(shape.size() == 3 && shape[2] == 3 && shape.back() == 3 && shape.front() == 1);
  std::vector<int64_t> dims(shape.begin(), shape.end());
  EXPECT(dims == std::vector<int64_t>({1, 2, 3}));
  EXPECT_THROWS(shape.at(3), "out of range");
  EXPECT(DataType::Float(32).bits() == 32 && DataType::Int(8, 4).lanes() == 4 && DataType::Bool().is_bool());
  EXPECT(DLDataType2String(DataType::Float(16, 2)) == "float16x2");
  EXPECT(DLDataType2String(DataType::UInt(8)) == "uint8");
  EXPECT(DataType(String2DLDataType("int64")) == DataType::Int(64));
  EXPECT(DataType(String2DLDataType("bool")) == DataType::Bool());
  EXPECT(DataType(String2DLDataType("handle")) == DataType::Handle());
  EXPECT_THROWS(String2DLDataType("complex64"), "complex64");
  EXPECT(std::string(DeviceName(kDLCPU)) == "cpu");
  std::ostringstream os;
  os << DataType::Float(32) << " " << DLDevice{kDLCPU, 0} << " " << shape;
  EXPECT(os.str() == "float32 cpu(0) [1, 2, 3]");
  EXPECT(Object::TypeIndex2Key(TypeIndex::kRuntimeNDArray) == "runtime.NDArray");
  EXPECT(Object::TypeKey2Index("runtime.Module") == TypeIndex::kRuntimeModule);
}

void TestLogging() {
  LOG(INFO) << "an info line from test_cpp_api";
  LOG(WARNING) << "a warning line from test_cpp_api";
  EXPECT_THROWS(LOG(FATAL) << "fatal " << 1, "fatal 1");
  int x = 3;
  EXPECT_THROWS(ICHECK(x == 4) << "x is " << x, "Check failed: (x == 4) is false: x is 3");
  EXPECT_THROWS(ICHECK_EQ(x, 4), "Check failed: x == 4 (3 vs. 4)");
  EXPECT_THROWS(ICHECK_NE(x, 3), "x != 3");
  EXPECT_THROWS(ICHECK_LT(x, 3), "x < 3");
  EXPECT_THROWS(ICHECK_LE(x, 2), "x <= 2");
  EXPECT_THROWS(ICHECK_GT(x, 3), "x > 3");
  EXPECT_THROWS(ICHECK_GE(x, 4), "x >= 4");
  EXPECT_THROWS(CHECK(false), "Check failed");
  const char* null_text = nullptr;
  EXPECT_THROWS(ICHECK_NOTNULL(null_text), "null_text");
  ICHECK(x == 3);
  ICHECK_EQ(x, 3) << "not reached";
  ICHECK_EQ(static_cast<size_t>(3), 3u);
  if (x == 3)
    ICHECK(true);
  else
    ICHECK(false);
  int* px = ICHECK_NOTNULL(&x);
  EXPECT(px == &x);
  bool internal = false;
  try {
    ICHECK(false);
  } catch (const InternalError&) {
    internal = true;
  }
  EXPECT(internal);
}

void TestErrors() {
  // A failing C call: the runtime's message.
  EXPECT_THROWS(Module::LoadFromFile("/nonexistent/lib.so"), "/nonexistent/lib.so");
  EXPECT_THROWS(Module::LoadFromFile("bare_name.so"), "./bare_name.so");
  PackedFunc null_f;
  EXPECT(null_f == nullptr && nullptr == null_f);
  EXPECT_THROWS(null_f(), "null PackedFunc");
  // An exception from a C++ callback, through C and back, keeps its text.
  PackedFunc thrower([](TVMArgs, TVMRetValue*) { throw Error("deep failure"); });
  PackedFunc outer([thrower](TVMArgs, TVMRetValue* rv) { *rv = thrower(); });
  EXPECT_THROWS(outer(), "deep failure");
  // The C side sees the same message.
  TVMValue ret;
  int code = 0;
  EXPECT(TVMFuncCall(thrower.handle(), nullptr, nullptr, 0, &ret, &code) != 0);
  EXPECT(std::string(TVMGetLastError()).find("deep failure") != std::string::npos);
  // Arguments out of range.
  PackedFunc second([](TVMArgs args, TVMRetValue* rv) { *rv = args[1]; });
  EXPECT_THROWS(second(1), "argument index 1 out of range");
}

}  // namespace

int main() {
  try {
    TestArguments();
    TestResults();
    TestLambdas();
    TestRegistry();
    TestNDArray();
    TestValues();
    TestLogging();
    TestErrors();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_cpp_api: unexpected exception: %s\n", e.what());
    return 1;
  }
  return tvm_test_cpp::Summary("test_cpp_api");
}
