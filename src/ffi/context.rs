//! The table of exported functions a kernel library reaches through its context pointers
//! (`__TVMFuncCall`, `__TVMFFIFunctionCall`, ...): both generations' exports, so it sits above
//! both rooms; `crate::init` hands it to the runtime's library loader.

use crate::ffi::legacy::{self, backend};
use crate::ffi::tvm_ffi;
use crate::runtime::module::library::ContextFunctions;
use once_cell::sync::Lazy;

/// The exported functions a kernel library reaches through its `__TVM*` context pointers.
pub(crate) fn context_functions() -> ContextFunctions {
    static ENTRIES: Lazy<[(&str, usize); 11]> = Lazy::new(|| {
        [
            ("__TVMFuncCall", legacy::func::TVMFuncCall as *const () as usize),
            ("__TVMAPISetLastError", legacy::error::TVMAPISetLastError as *const () as usize),
            ("__TVMBackendGetFuncFromEnv", backend::TVMBackendGetFuncFromEnv as *const () as usize),
            ("__TVMBackendAllocWorkspace", backend::TVMBackendAllocWorkspace as *const () as usize),
            ("__TVMBackendFreeWorkspace", backend::TVMBackendFreeWorkspace as *const () as usize),
            ("__TVMBackendParallelLaunch", backend::TVMBackendParallelLaunch as *const () as usize),
            ("__TVMBackendParallelBarrier", backend::TVMBackendParallelBarrier as *const () as usize),
            // tvm-ffi kernels raise through this slot where codegen did not import the function.
            ("__TVMFFIErrorSetRaisedFromCStr", tvm_ffi::c_api::TVMFFIErrorSetRaisedFromCStr as *const () as usize),
            // tvm-ffi kernels that call packed functions (`T.call_packed`, external functions).
            ("__TVMFFIFunctionCall", tvm_ffi::c_api::TVMFFIFunctionCall as *const () as usize),
            ("__TVMFFIEnvModLookupFromImports", tvm_ffi::env::TVMFFIEnvModLookupFromImports as *const () as usize),
            ("__TVMFFIHandleInitOnce", tvm_ffi::c_api::TVMFFIHandleInitOnce as *const () as usize),
        ]
    });
    ContextFunctions { entries: &*ENTRIES }
}
