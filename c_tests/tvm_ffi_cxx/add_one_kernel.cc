// A kernel library in tvm-ffi's quickstart style: one function exported with
// TVM_FFI_DLL_EXPORT_TYPED_FUNC, compiled against tvm-ffi's headers.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

namespace {

// y[i] = x[i] + 1 for 1-d float32 CPU tensors of one length.
void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  TVM_FFI_ICHECK(x.ndim() == 1 && y.ndim() == 1) << "add_one takes 1-d tensors";
  TVM_FFI_ICHECK(x.size(0) == y.size(0)) << "add_one: x has " << x.size(0) << " elements, y " << y.size(0);
  TVM_FFI_ICHECK(x.dtype().code == kDLFloat && x.dtype().bits == 32) << "add_one takes float32";
  const float* in = static_cast<const float*>(x.data_ptr());
  float* out = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) out[i] = in[i] + 1.0f;
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, AddOne);

namespace {

// sum(x) * scale[0] + len(scale) + f(tag's length): objects of each kind as arguments, as
// kernel libraries take them (a tensor object, not a view; an array; a function; a string).
double Combine(tvm::ffi::Tensor x, tvm::ffi::Array<int64_t> scale, tvm::ffi::Function f, tvm::ffi::String tag) {
  TVM_FFI_ICHECK(x.ndim() == 1 && x.dtype().code == kDLFloat && x.dtype().bits == 32) << "combine takes 1-d float32";
  TVM_FFI_ICHECK(!scale.empty()) << "combine: empty scale";
  const float* in = static_cast<const float*>(x.data_ptr());
  double sum = 0;
  for (int64_t i = 0; i < x.size(0); ++i) sum += in[i];
  int64_t extra = f(static_cast<int64_t>(tag.size())).cast<int64_t>();
  return sum * static_cast<double>(scale[0]) + static_cast<double>(scale.size()) + static_cast<double>(extra);
}

}  // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(combine, Combine);
