//! `TVMValue`, `TVMByteArray`, argument type codes and backend structs.

use super::{DLDataType, DLDevice};
use std::ffi::{c_char, c_int, c_void};

/// Argument / return type codes (`TVMArgTypeCode`).
pub mod type_code {
    pub const INT: i32 = 0;
    pub const UINT: i32 = 1;
    pub const FLOAT: i32 = 2;
    pub const OPAQUE_HANDLE: i32 = 3;
    pub const NULLPTR: i32 = 4;
    pub const DATA_TYPE: i32 = 5;
    pub const DEVICE: i32 = 6;
    pub const DLTENSOR_HANDLE: i32 = 7;
    pub const OBJECT_HANDLE: i32 = 8;
    pub const MODULE_HANDLE: i32 = 9;
    pub const PACKED_FUNC_HANDLE: i32 = 10;
    pub const STR: i32 = 11;
    pub const BYTES: i32 = 12;
    pub const NDARRAY_HANDLE: i32 = 13;
    pub const OBJECT_RVALUE_REF_ARG: i32 = 14;
    pub const BOOL: i32 = 15;
    pub const EXT_BEGIN: i32 = 16;
    pub const NNVM_FIRST: i32 = 16;
    pub const NNVM_LAST: i32 = 20;
    pub const EXT_RESERVE_END: i32 = 64;
    pub const EXT_END: i32 = 128;

    /// A short human name for a type code, used in error messages.
    pub fn name(code: i32) -> &'static str {
        match code {
            INT => "int",
            UINT => "uint",
            FLOAT => "float",
            OPAQUE_HANDLE => "handle",
            NULLPTR => "NULL",
            DATA_TYPE => "DLDataType",
            DEVICE => "DLDevice",
            DLTENSOR_HANDLE => "DLTensor*",
            OBJECT_HANDLE => "Object",
            MODULE_HANDLE => "Module",
            PACKED_FUNC_HANDLE => "PackedFunc",
            STR => "str",
            BYTES => "bytes",
            NDARRAY_HANDLE => "NDArray",
            OBJECT_RVALUE_REF_ARG => "ObjectRValueRef",
            BOOL => "bool",
            _ => "unknown type code",
        }
    }
}

/// The 8-byte value union passed through every packed call.
#[repr(C)]
#[derive(Clone, Copy)]
pub union TVMValue {
    pub v_int64: i64,
    pub v_float64: f64,
    pub v_handle: *mut c_void,
    pub v_str: *const c_char,
    pub v_type: DLDataType,
    pub v_device: DLDevice,
}

impl TVMValue {
    pub const fn null() -> Self {
        TVMValue { v_int64: 0 }
    }
}

impl Default for TVMValue {
    fn default() -> Self {
        TVMValue::null()
    }
}

impl std::fmt::Debug for TVMValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: every bit pattern is a valid i64.
        write!(f, "TVMValue({:#x})", unsafe { self.v_int64 })
    }
}

/// A byte blob passed with type code `kTVMBytes` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMByteArray {
    pub data: *const c_char,
    pub size: usize,
}

/// Environment shared by the tasks of one parallel launch (16 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct TVMParallelGroupEnv {
    pub sync_handle: *mut c_void,
    pub num_task: i32,
}

/// A C callback wrapped as a packed function (`TVMPackedCFunc`).
pub type TVMPackedCFunc = Option<
    unsafe extern "C" fn(
        args: *mut TVMValue,
        type_codes: *mut c_int,
        num_args: c_int,
        ret: *mut c_void,
        resource_handle: *mut c_void,
    ) -> c_int,
>;

/// Finalizer of a C callback's resource handle (`TVMPackedCFuncFinalizer`).
pub type TVMPackedCFuncFinalizer = Option<unsafe extern "C" fn(resource_handle: *mut c_void)>;

/// Calling convention of every kernel in a compiled library (`TVMBackendPackedCFunc`).
pub type TVMBackendPackedCFunc = unsafe extern "C" fn(
    args: *mut TVMValue,
    type_codes: *mut c_int,
    num_args: c_int,
    out_ret_value: *mut TVMValue,
    out_ret_tcode: *mut c_int,
    resource_handle: *mut c_void,
) -> c_int;

/// One task of a parallel launch (`FTVMParallelLambda`).
pub type FTVMParallelLambda =
    Option<unsafe extern "C" fn(task_id: c_int, penv: *mut TVMParallelGroupEnv, cdata: *mut c_void) -> c_int>;
