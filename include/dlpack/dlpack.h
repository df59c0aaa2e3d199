/*
 * DLPack: a small, framework-neutral description of an in-memory tensor.
 *
 * This header mirrors the DLPack revision bundled with Apache TVM 0.18
 * (DLPACK_VERSION 70, ABI version 1).  Every name, enumerator value and
 * struct layout below is part of a binary interface shared with other
 * libraries, so none of them may be changed.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

/* Linkage helper for declarations that must use C linkage. */
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

/* Revision of the DLPack header (0.7). */
#define DLPACK_VERSION 70

/* Revision of the binary layout of the structs below. */
#define DLPACK_ABI_VERSION 1

/* Symbol export/import decoration (only meaningful on Windows). */
#ifdef _WIN32
#ifdef DLPACK_EXPORTS
#define DLPACK_DLL __declspec(dllexport)
#else
#define DLPACK_DLL __declspec(dllimport)
#endif
#else
#define DLPACK_DLL
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kind of device a tensor's memory lives on.  Values 5 and 6 are unused. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,          /* ordinary host memory */
  kDLCUDA = 2,         /* CUDA device memory */
  kDLCUDAHost = 3,     /* host memory pinned by cudaMallocHost */
  kDLOpenCL = 4,       /* OpenCL device memory */
  kDLVulkan = 7,       /* Vulkan buffer */
  kDLMetal = 8,        /* Metal buffer (Apple GPUs) */
  kDLVPI = 9,          /* Verilog simulator buffer */
  kDLROCM = 10,        /* AMD ROCm device memory */
  kDLROCMHost = 11,    /* host memory pinned by hipMallocHost */
  kDLExtDev = 12,      /* reserved for out-of-tree device kinds */
  kDLCUDAManaged = 13, /* CUDA unified (managed) memory */
  kDLOneAPI = 14,      /* oneAPI / SYCL unified shared memory */
  kDLWebGPU = 15,      /* WebGPU buffer */
  kDLHexagon = 16,     /* Qualcomm Hexagon DSP memory */
} DLDeviceType;

/* A device: its kind plus an ordinal among devices of that kind. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* Category of a scalar element type; stored in DLDataType::code. */
typedef enum {
  kDLInt = 0U,          /* signed two's-complement integer */
  kDLUInt = 1U,         /* unsigned integer */
  kDLFloat = 2U,        /* IEEE binary floating point */
  kDLOpaqueHandle = 3U, /* opaque pointer-sized handle */
  kDLBfloat = 4U,       /* bfloat16 */
  kDLComplex = 5U,      /* complex number, two floats of bits/2 each */
} DLDataTypeCode;

/*
 * Element type: `code` is a DLDataTypeCode, `bits` the width of one lane,
 * `lanes` the vector width (1 for scalars).  E.g. float32 = {2, 32, 1}.
 */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/*
 * A strided view of memory.  The first element is at
 * (char*)data + byte_offset.  `shape` has `ndim` entries; `strides` (in
 * elements, not bytes) also has `ndim` entries, or is NULL for a compact
 * row-major tensor.  The struct does not own any of the pointed-to memory.
 */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

/*
 * A DLTensor handed across a library boundary together with its owner's
 * context.  The receiver calls `deleter(self)` exactly once when done; the
 * deleter may be NULL if nothing needs releasing.
 */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
