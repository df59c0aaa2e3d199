/*
 * Device constants and names for C++ programs (header-only; C++14 or later). The device API
 * itself is reached through the C functions (TVMDeviceAllocDataSpace, TVMStreamCreate, ...).
 */
#ifndef TVM_RUNTIME_DEVICE_API_H_
#define TVM_RUNTIME_DEVICE_API_H_

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/ndarray.h>

namespace tvm {
namespace runtime {

/* Alignment of the data of arrays the runtime allocates. */
constexpr int kAllocAlignment = 64;
/* Alignment of workspace memory (TVMBackendAllocWorkspace). */
constexpr int kTempAllocaAlignment = 64;

/* The name TVM uses for a device type ("cpu", "cuda", ...). */
inline const char* DLDeviceType2Str(int type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOpenCL:
      return "opencl";
    case kDLSDAccel:
      return "sdaccel";
    case kDLAOCL:
      return "aocl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLVPI:
      return "vpi";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLExtDev:
      return "ext_dev";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    case kOpenGL:
      return "opengl";
    case kDLMicroDev:
      return "microdev";
    default:
      return "unknown";
  }
}
inline const char* DeviceName(int type) { return DLDeviceType2Str(type); }

}  // namespace runtime
}  // namespace tvm

#endif /* TVM_RUNTIME_DEVICE_API_H_ */
