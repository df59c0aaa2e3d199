/*
 * C frontend API of the TVM runtime (interface level of Apache TVM 0.18).
 *
 * Language bindings and applications use these entry points to load
 * modules, look up and call packed functions, manage arrays, streams and
 * reference-counted objects.
 *
 * Conventions: unless stated otherwise a function returns 0 on success and
 * a nonzero value on failure; after a failure the message can be read with
 * TVMGetLastError() on the same thread.  Handles handed out by the runtime
 * are owned by the caller and must be released with the matching *Free
 * function, except where a comment says the runtime keeps ownership.
 *
 * tvm_runtime.h, generated from the implementation, documents every function in full; the short
 * notes here say the same.
 */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

/* Marks a definition as weak so that another definition may replace it. */
#ifdef _MSC_VER
#define TVM_WEAK __declspec(selectany)
#else
#define TVM_WEAK __attribute__((weak))
#endif

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>
#define TVM_DLL EMSCRIPTEN_KEEPALIVE
#endif

/* Silences "unused" warnings for intentionally unused entities. */
#if defined(__GNUC__)
#define TVM_ATTRIBUTE_UNUSED __attribute__((unused))
#else
#define TVM_ATTRIBUTE_UNUSED
#endif

/* Visibility of exported runtime symbols. */
#ifndef TVM_DLL
#ifdef _WIN32
#ifdef TVM_EXPORTS
#define TVM_DLL __declspec(dllexport)
#else
#define TVM_DLL __declspec(dllimport)
#endif
#else
#define TVM_DLL __attribute__((visibility("default")))
#endif
#endif

/* Version of TVM whose runtime interface this header describes. */
#define TVM_VERSION "0.18.0"

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Integer type used for shapes and indices. */
typedef int64_t tvm_index_t;

/*
 * Device kinds known to TVM but not to DLPack.  They start at 32 so that
 * they stay clear of DLDeviceType values.
 */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLAOCL = 32,
  kDLSDAccel,
  kOpenGL,
  kDLMicroDev,
  TVMDeviceExtType_End, /* one past the last valid value */
} TVMDeviceExtType;

#ifdef __cplusplus
/* Device type numbers are baked into generated code and other languages'
 * bindings; these checks catch any accidental renumbering. */
#define TVM_DEVICE_TYPE_VALUE_MSG "device type integer changed; update every hard-coded use"
static_assert(kDLCPU == 1, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLCUDA == 2, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLCUDAHost == 3, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLOpenCL == 4, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLVulkan == 7, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLMetal == 8, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLVPI == 9, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLROCM == 10, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLROCMHost == 11, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLExtDev == 12, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLCUDAManaged == 13, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLOneAPI == 14, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLWebGPU == 15, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLHexagon == 16, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLAOCL == 32, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLSDAccel == 33, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kOpenGL == 34, TVM_DEVICE_TYPE_VALUE_MSG);
static_assert(kDLMicroDev == 35, TVM_DEVICE_TYPE_VALUE_MSG);
#undef TVM_DEVICE_TYPE_VALUE_MSG
#endif

/*
 * Type code that accompanies every TVMValue in a packed call and tells
 * which union member is meaningful and how to interpret it.
 */
typedef enum {
  kTVMArgInt = kDLInt,            /* v_int64 */
  kTVMArgFloat = kDLFloat,        /* v_float64 */
  kTVMOpaqueHandle = 3U,          /* v_handle, opaque pointer */
  kTVMNullptr = 4U,               /* no value */
  kTVMDataType = 5U,              /* v_type */
  kDLDevice = 6U,                 /* v_device */
  kTVMDLTensorHandle = 7U,        /* v_handle, borrowed DLTensor* */
  kTVMObjectHandle = 8U,          /* v_handle, Object* */
  kTVMModuleHandle = 9U,          /* v_handle, module object */
  kTVMPackedFuncHandle = 10U,     /* v_handle, function object */
  kTVMStr = 11U,                  /* v_str, NUL-terminated string */
  kTVMBytes = 12U,                /* v_handle, TVMByteArray* */
  kTVMNDArrayHandle = 13U,        /* v_handle, DLTensor* inside an NDArray */
  kTVMObjectRValueRefArg = 14U,   /* v_handle, Object** that may be moved from */
  kTVMArgBool = 15U,              /* v_int64 holding 0 or 1 */
  /* Codes from here on are set aside for extensions by other projects. */
  kTVMExtBegin = 16U,
  kTVMNNVMFirst = 16U,
  kTVMNNVMLast = 20U,
  /* Codes from here up to kTVMExtEnd are not reserved for anyone. */
  kTVMExtReserveEnd = 64U,
  kTVMExtEnd = 128U,
} TVMArgTypeCode;

/* Handle to an array; points at the DLTensor embedded in an NDArray. */
typedef DLTensor* TVMArrayHandle;

/* One argument or return value of a packed call (8 bytes). */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

/* Byte string with explicit length, passed with type code kTVMBytes. */
typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

/* Handle to a runtime module. */
typedef void* TVMModuleHandle;
/* Handle to a packed function. */
typedef void* TVMFunctionHandle;
/* Handle to the return-value slot of a packed call in progress. */
typedef void* TVMRetValueHandle;
/* Device-specific stream; NULL selects the default stream. */
typedef void* TVMStreamHandle;
/* Handle to a reference-counted runtime object. */
typedef void* TVMObjectHandle;

/* Record `msg` (copied) as this thread's last error; for use by C API implementations. */
TVM_DLL void TVMAPISetLastError(const char* msg);

/* Record a Python exception object (PyObject*) as this thread's last error. */
TVM_DLL void TVMAPISetLastPythonError(void* py_object);

/* Return the Python exception stored by TVMAPISetLastPythonError, or NULL; ownership stays with
 * the runtime. */
TVM_DLL void* TVMGetLastPythonError(void);

/* Message (`Kind: message`) of this thread's last error, or NULL if none was stored; owned by the
 * runtime, valid until the next error is stored on this thread (successful calls leave it). */
TVM_DLL const char* TVMGetLastError(void);

/* Backtrace of this thread's last error: always NULL, this runtime records none. */
TVM_DLL const char* TVMGetLastBacktrace(void);

/* Release the runtime's reference to a stored Python exception, if any. */
TVM_DLL void TVMDropLastPythonError(void);

/* Does nothing and returns (TVM rethrows the last error as a C++ exception here; a C function of
 * this runtime cannot). C++ code gets tvm::runtime::Error from the C++ headers instead. */
TVM_DLL void TVMThrowLastError(void);

/* Load a module from `file_name` with the loader for `format` (e.g. "so"); NULL or "" means the
 * file's extension. A name without '/' goes to dlopen's library search path: write "./model.so".
 * Caller frees *out with TVMModFree. */
TVM_DLL int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out);

/* Add `dep` to the imports of `mod`; `mod` takes its own reference to `dep`. */
TVM_DLL int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep);

/* Look up `func_name` in `mod` (and its imports if query_imports != 0); *out is NULL if absent,
 * else freed with TVMFuncFree. */
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);

/* Drop the caller's reference to a module; functions taken from it stay valid. */
TVM_DLL int TVMModFree(TVMModuleHandle mod);

/* Drop the caller's reference to a function handle. */
TVM_DLL int TVMFuncFree(TVMFunctionHandle func);

/*
 * Call a packed function with `num_args` arguments.  The result is written
 * to *ret_val / *ret_type_code; object-like results are new references the
 * caller must free, while kTVMStr / kTVMBytes results point at thread-local
 * storage valid until the next call on this thread.
 */
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);

/* From inside a TVMPackedCFunc, set its return value (num_ret must be 1); the value is copied,
 * objects gain a reference. */
TVM_DLL int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret);

/* Turn a callback argument in place into a value that can be returned (takes a new reference where
 * needed). */
TVM_DLL int TVMCbArgToReturn(TVMValue* value, int* code);

/* Signature of a C function exposed as a packed function; returns 0 on success, -1 after
 * TVMAPISetLastError. */
typedef int (*TVMPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                              void* resource_handle);

/* Called once with the resource handle when a function made from a TVMPackedCFunc is destroyed. */
typedef void (*TVMPackedCFuncFinalizer)(void* resource_handle);

/* Callback that registers extension functions through `register_func_handle`; returns 0 on
 * success. */
typedef int (*TVMExtensionFuncDeclarer)(TVMFunctionHandle register_func_handle);

/* Wrap a C callback as a packed function; `fin` (may be NULL) is run on `resource_handle` at
 * destruction. */
TVM_DLL int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle,
                                   TVMPackedCFuncFinalizer fin, TVMFunctionHandle* out);

/* Register `f` under `name` in the global table (replacing an entry only if override != 0); the
 * caller keeps its handle. */
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

/* Look up a global function; *out is NULL if absent, else a new reference the caller frees with
 * TVMFuncFree. */
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);

/* List the names of all global functions; the array lives in thread-local storage until the next
 * call. */
TVM_DLL int TVMFuncListGlobalNames(int* out_size, const char*** out_array);

/* Remove `name` from the global function table. */
TVM_DLL int TVMFuncRemoveGlobal(const char* name);

/* Allocate a compact array of the given shape, dtype and device; free with TVMArrayFree. */
TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                          int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out);

/* Drop the caller's reference to an array. */
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);

/* Copy `nbytes` bytes of host memory into the array; nbytes must equal the array's size. */
TVM_DLL int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes);

/* Copy the array's contents into `nbytes` bytes of host memory; nbytes must equal the array's
 * size. */
TVM_DLL int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes);

/* Copy one array into another of the same size, optionally on `stream`. */
TVM_DLL int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream);

/* Wrap a DLManagedTensor as an array without copying; the array takes over `from` and calls its
 * deleter. */
TVM_DLL int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out);

/* Export an array as a DLManagedTensor sharing its memory; the receiver must call its deleter. */
TVM_DLL int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out);

/* Invoke `dltensor->deleter(dltensor)`. */
TVM_DLL void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor);

/* Create a new stream on the device; free with TVMStreamFree. */
TVM_DLL int TVMStreamCreate(int device_type, int device_id, TVMStreamHandle* out);

/* Destroy a stream created by TVMStreamCreate. */
TVM_DLL int TVMStreamFree(int device_type, int device_id, TVMStreamHandle stream);

/* Make `handle` the current thread's stream for later work on this device. */
TVM_DLL int TVMSetStream(int device_type, int device_id, TVMStreamHandle handle);

/* Block until all work queued on `stream` has finished. */
TVM_DLL int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream);

/* Make work queued later on `dst` wait for work already queued on `src`. */
TVM_DLL int TVMStreamStreamSynchronize(int device_type, int device_id, TVMStreamHandle src,
                                       TVMStreamHandle dst);

/* Read the runtime type index of an object. */
TVM_DLL int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex);

/* Map a type key (e.g. "runtime.String") to its type index. */
TVM_DLL int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex);

/* Map a type index to its key; *out_type_key is malloc'ed and the caller must free() it. */
TVM_DLL int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key);

/* Add one reference to an object. */
TVM_DLL int TVMObjectRetain(TVMObjectHandle obj);

/* Remove one reference from an object, destroying it when none remain. NULL is allowed. */
TVM_DLL int TVMObjectFree(TVMObjectHandle obj);

/* Release a TVMByteArray returned by the runtime (a no-op for the thread-local one from
 * TVMFuncCall). */
TVM_DLL int TVMByteArrayFree(TVMByteArray* arr);

/* Allocate `nbytes` of device memory with the given alignment; release with
 * TVMDeviceFreeDataSpace. */
TVM_DLL int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                                    DLDataType type_hint, void** out_data);

/* Allocate device memory for a tensor in memory scope `mem_scope` (NULL means global). */
TVM_DLL int TVMDeviceAllocDataSpaceWithScope(DLDevice dev, int ndim, const int64_t* shape,
                                             DLDataType dtype, const char* mem_scope,
                                             void** out_data);

/* Release memory obtained from TVMDeviceAllocDataSpace{,WithScope}. */
TVM_DLL int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr);

/* Copy between two tensors (either may be on host or device), optionally on `stream`. */
TVM_DLL int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream);

/* Set *is_derived to 1 if type `child_type_index` equals or derives from `parent_type_index`, else
 * 0. */
TVM_DLL int TVMObjectDerivedFrom(uint32_t child_type_index, uint32_t parent_type_index,
                                 int* is_derived);

/* Read the type index of the NDArray object that owns an array handle (exported, not in TVM's
 * header). */
TVM_DLL int TVMArrayGetTypeIndex(TVMArrayHandle handle, unsigned* out_tindex);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
