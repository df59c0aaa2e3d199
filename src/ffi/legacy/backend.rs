//! The backend API that compiled kernels call (`c_backend_api.h`).

use crate::abi::{FTVMParallelLambda, TVMParallelGroupEnv, TVMValue};
use crate::ffi::ptr::out_param;
use crate::runtime::base::env_capi;
use crate::runtime::base::error::Error;
use crate::runtime::module::library::register_system_symbol;
use crate::runtime::threads::backend;

use crate::runtime::object::header::legacy;
use std::ffi::{c_char, c_int, c_void};

/// Find `func_name` among the imports of the module behind `mod_node` (the value of the
/// library's `__tvm_module_ctx`), then among globals. `*out` is borrowed: do not free it; it
/// stays valid while the module lives.
///
/// # Safety
/// `mod_node` must be NULL (an error) or a live object of this runtime (the value of
/// `__tvm_module_ctx`; its type is checked); `func_name` must be NULL (an error) or a
/// NUL-terminated string; `out` must be NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendGetFuncFromEnv(
    mod_node: *mut c_void,
    func_name: *const c_char,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMBackendGetFuncFromEnv", {
        check_not_null!(mod_node);
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: C string argument (kernel contract).
        let name = unsafe { c_str!(func_name)? };
        // SAFETY: `mod_node` is the module pointer the runtime stored in `__tvm_module_ctx`.
        let m = unsafe { crate::ffi::legacy::module::module_arg(mod_node, "mod_node")? };
        *out = legacy::handle(m.get_func_from_env(name)?);
        Ok(0)
    })
}

/// Register a symbol of a statically linked library (usually from a static constructor,
/// possibly before `main`). Re-registering a name overwrites it.
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `ptr` must be the address of the
/// statically linked symbol `name` (a kernel, a context slot or a blob), valid for the rest of the
/// process: it is later called, written or read as that symbol.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendRegisterSystemLibSymbol(name: *const c_char, ptr: *mut c_void) -> c_int {
    ffi_boundary!("TVMBackendRegisterSystemLibSymbol", {
        // SAFETY: C string argument.
        let name = unsafe { c_str!(name)? };
        register_system_symbol(name, ptr);
        Ok(0)
    })
}

/// Temporary memory for a kernel (64-byte aligned), or NULL with the error set.
#[no_mangle]
pub extern "C" fn TVMBackendAllocWorkspace(
    device_type: c_int,
    device_id: c_int,
    nbytes: u64,
    dtype_code_hint: c_int,
    dtype_bits_hint: c_int,
) -> *mut c_void {
    // Hot path for kernels: a cached CPU block, no error possible.
    if device_type == crate::abi::device_type::CPU {
        if let Some(p) = usize::try_from(nbytes).ok().and_then(crate::runtime::threads::workspace::alloc_workspace_fast)
        {
            return p;
        }
    }
    ffi_boundary!("TVMBackendAllocWorkspace", {
        backend::alloc_workspace(device_type, device_id, nbytes, dtype_code_hint, dtype_bits_hint)
    })
}

/// Free memory from `TVMBackendAllocWorkspace`.
///
/// # Safety
/// `ptr` must come from `TVMBackendAllocWorkspace` with the same device type and id on this thread,
/// and not be freed yet; nothing may use the memory afterwards. (A CPU pointer is looked up in the
/// thread's pool, so a foreign one is reported as an error.)
#[no_mangle]
pub unsafe extern "C" fn TVMBackendFreeWorkspace(device_type: c_int, device_id: c_int, ptr: *mut c_void) -> c_int {
    if device_type == crate::abi::device_type::CPU && crate::runtime::threads::workspace::free_workspace_fast(ptr) {
        return 0;
    }
    ffi_boundary!("TVMBackendFreeWorkspace", {
        // SAFETY: kernels free what they allocated (C contract; CPU pointers are checked).
        unsafe { backend::free_workspace(device_type, device_id, ptr)? };
        Ok(0)
    })
}

/// Register a frontend C API hook: `PyErr_CheckSignals`, `Py_IncRef`, `Py_DecRef`,
/// `PyGILState_Ensure` or `PyGILState_Release`; any other name is an error.
///
/// # Safety
/// `name` must be NULL (an error) or a NUL-terminated string; `ptr` must be NULL or a function with
/// the C prototype of the API it is named after, callable for the rest of the process.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendRegisterEnvCAPI(name: *const c_char, ptr: *mut c_void) -> c_int {
    ffi_boundary!("TVMBackendRegisterEnvCAPI", {
        // SAFETY: C string argument.
        let name = unsafe { c_str!(name)? };
        // SAFETY: the frontend passes its own function of the named API (C contract).
        if !unsafe { env_capi::register(name, ptr) } {
            return Err(Error::value(format!("TVMBackendRegisterEnvCAPI: unknown C API `{name}`")));
        }
        Ok(0)
    })
}

/// Run `flambda(task_id, env, cdata)` for every task of a launch; `num_task == 0` means all
/// workers. Returns -1 with the failing task's message if any task fails.
///
/// # Safety
/// `flambda` must be NULL (an error) or a function that may run concurrently on the pool's threads
/// with `cdata`, and `cdata` must be valid for whatever `flambda` does with it until this returns.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendParallelLaunch(
    flambda: FTVMParallelLambda,
    cdata: *mut c_void,
    num_task: c_int,
) -> c_int {
    ffi_boundary!("TVMBackendParallelLaunch", {
        backend::parallel_launch(flambda, cdata, num_task)?;
        Ok(0)
    })
}

/// Wait until every task of the launch reaches this barrier.
///
/// # Safety
/// `penv` must be NULL or the environment that a launch still running passed to the calling task,
/// and `task_id` must be that task's own id.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendParallelBarrier(task_id: c_int, penv: *mut TVMParallelGroupEnv) -> c_int {
    ffi_boundary!("TVMBackendParallelBarrier", {
        // SAFETY: kernels pass the environment their launch gave them (C contract).
        unsafe { backend::parallel_barrier(task_id, penv)? };
        Ok(0)
    })
}

/// If `*handle` is NULL, set it to a non-NULL marker and return `f(cdata)`; else return 0.
/// Not thread-safe (as in TVM).
///
/// # Safety
/// `handle` must be NULL (an error) or valid for reads and writes of one `void *`, with no other
/// thread using the same flag during the call; `f` must be NULL (an error) or safe to call with
/// `cdata`.
#[no_mangle]
pub unsafe extern "C" fn TVMBackendRunOnce(
    handle: *mut *mut c_void,
    f: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    cdata: *mut c_void,
    _nbytes: c_int,
) -> c_int {
    ffi_boundary!("TVMBackendRunOnce", {
        check_not_null!(handle);
        // SAFETY: `handle` checked non-NULL and points to the caller's flag.
        unsafe {
            if !(*handle).is_null() {
                return Ok(0);
            }
            *handle = 1 as *mut c_void;
        }
        let f = f.ok_or_else(|| Error::value("argument `f` is NULL"))?;
        // SAFETY: caller-provided function and data.
        Ok(unsafe { f(cdata) })
    })
}

fn relax_only(function: &str) -> Error {
    Error::unsupported(format!(
        "{function}: Relax VM AnyList values are not supported by this runtime (graph executor artifacts do not use them)"
    ))
}

/// Relax VM only: not supported by this runtime (returns -1 with a message).
///
/// # Safety
/// None: the arguments are ignored (the call always fails).
#[no_mangle]
pub unsafe extern "C" fn TVMBackendAnyListSetPackedArg(
    _anylist: *mut c_void,
    _index: c_int,
    _args: *mut TVMValue,
    _type_codes: *mut c_int,
    _arg_offset: c_int,
) -> c_int {
    ffi_boundary!("TVMBackendAnyListSetPackedArg", { Err(relax_only("TVMBackendAnyListSetPackedArg")) })
}

/// Relax VM only: not supported by this runtime (returns -1 with a message).
///
/// # Safety
/// None: the arguments are ignored (the call always fails).
#[no_mangle]
pub unsafe extern "C" fn TVMBackendAnyListResetItem(_anylist: *mut c_void, _index: c_int) -> c_int {
    ffi_boundary!("TVMBackendAnyListResetItem", { Err(relax_only("TVMBackendAnyListResetItem")) })
}

/// Relax VM only: not supported by this runtime (returns -1 with a message).
///
/// # Safety
/// None: the arguments are ignored (the call always fails).
#[no_mangle]
pub unsafe extern "C" fn TVMBackendAnyListMoveFromPackedReturn(
    _anylist: *mut c_void,
    _index: c_int,
    _args: *mut TVMValue,
    _type_codes: *mut c_int,
    _ret_offset: c_int,
) -> c_int {
    ffi_boundary!("TVMBackendAnyListMoveFromPackedReturn", { Err(relax_only("TVMBackendAnyListMoveFromPackedReturn")) })
}
