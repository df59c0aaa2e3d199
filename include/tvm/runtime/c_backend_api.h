/*
 * C backend API of the TVM runtime (interface level of Apache TVM 0.18).
 *
 * These entry points are called by code that TVM generates (compiled
 * operator libraries, the Relax VM) rather than by applications.  Unless
 * stated otherwise they return 0 on success and -1 on failure, with the
 * message available from TVMGetLastError().
 */
#ifndef TVM_RUNTIME_C_BACKEND_API_H_
#define TVM_RUNTIME_C_BACKEND_API_H_

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Signature of a function exported by a compiled library.  The result is
 * written directly to *out_ret_value / *out_ret_tcode.  Returns 0 on
 * success, -1 after setting the error with TVMAPISetLastError.
 */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/* Resolve `func_name` from module `mod_node`'s imports, then the global table; the module keeps
 * ownership of *out. */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);

/* Record a symbol of a statically linked system library under `name`. */
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);

/* Allocate `nbytes` of scratch memory on a device (64-byte aligned); NULL on failure. Release with
 * TVMBackendFreeWorkspace. */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);

/* Release memory from TVMBackendAllocWorkspace on the same device. */
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/* Register a C function provided by the host environment (e.g. Python's signal check) under
 * `name`. */
TVM_DLL int TVMBackendRegisterEnvCAPI(const char* name, void* ptr);

/* State shared by the tasks of one parallel launch. */
typedef struct {
  void* sync_handle; /* runtime-private data used by the barrier */
  int32_t num_task;  /* number of tasks taking part */
} TVMParallelGroupEnv;

/* Body of one parallel task; returns 0 on success, nonzero on failure. */
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/* Run `flambda` as `num_task` tasks on the thread pool (0 means one per worker) and wait for all
 * of them. */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);

/* Barrier across all tasks of the current parallel launch. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);

/* If *handle is NULL, mark it non-NULL and run f(cdata); otherwise do nothing. */
TVM_DLL int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes);

/*
 * Relax VM "AnyList" helpers.  TVM 0.18's runtime exports these although
 * its public header does not declare them.  `anylist` points at an array
 * of runtime-owned return-value slots.
 */

/* Store item `index` of `anylist` as argument `arg_offset` of a packed-call argument stack
 * (borrowed, no new reference). */
TVM_DLL int TVMBackendAnyListSetPackedArg(void* anylist, int index, TVMValue* args, int* type_codes,
                                          int arg_offset);

/* Clear item `index` of `anylist`, releasing whatever it held. */
TVM_DLL int TVMBackendAnyListResetItem(void* anylist, int index);

/* Move the packed-call result at `ret_offset` into item `index` of `anylist`
 * (strings are copied). */
TVM_DLL int TVMBackendAnyListMoveFromPackedReturn(void* anylist, int index, TVMValue* args,
                                                  int* type_codes, int ret_offset);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_C_BACKEND_API_H_ */
