//! The part of Triton's C API (backend API 1.19, server API 1.34: Triton 2.51, the headers in
//! `triton/include/`) this backend calls. Triton's functions live in the server process; they
//! are looked up there once, when the server initializes the backend ([`Api::get`]), rather
//! than linked, so the library links (and its unit tests run) without a Triton to link against.

use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

/// Opaque objects Triton hands out: only pointers to them cross the boundary.
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(
    TRITONSERVER_Error,
    TRITONSERVER_Message,
    TRITONBACKEND_Backend,
    TRITONBACKEND_Model,
    TRITONBACKEND_ModelInstance,
    TRITONBACKEND_Request,
    TRITONBACKEND_Response,
    TRITONBACKEND_Input,
    TRITONBACKEND_Output
);

pub type Error = *mut TRITONSERVER_Error;

/// The backend API this backend is written against (`TRITONBACKEND_API_VERSION_*`).
pub const API_VERSION_MAJOR: u32 = 1;
pub const API_VERSION_MINOR: u32 = 19;

/// `TRITONSERVER_Error_Code`.
pub mod code {
    pub const INTERNAL: u32 = 1;
    pub const NOT_FOUND: u32 = 2;
    pub const INVALID_ARG: u32 = 3;
    pub const UNSUPPORTED: u32 = 5;
}

/// `TRITONSERVER_DataType`.
pub mod datatype {
    pub const BOOL: u32 = 1;
    pub const UINT8: u32 = 2;
    pub const UINT16: u32 = 3;
    pub const UINT32: u32 = 4;
    pub const UINT64: u32 = 5;
    pub const INT8: u32 = 6;
    pub const INT16: u32 = 7;
    pub const INT32: u32 = 8;
    pub const INT64: u32 = 9;
    pub const FP16: u32 = 10;
    pub const FP32: u32 = 11;
    pub const FP64: u32 = 12;
    pub const BF16: u32 = 14;
}

/// `TRITONSERVER_MemoryType`.
pub const MEMORY_CPU: u32 = 0;
pub const MEMORY_CPU_PINNED: u32 = 1;
/// `TRITONSERVER_LogLevel`.
pub const LOG_INFO: u32 = 0;
/// `TRITONSERVER_RESPONSE_COMPLETE_FINAL`, `TRITONSERVER_REQUEST_RELEASE_ALL`.
pub const RESPONSE_COMPLETE_FINAL: u32 = 1;
pub const REQUEST_RELEASE_ALL: u32 = 1;
/// The model configuration's format version (`TRITONBACKEND_ModelConfig`).
pub const CONFIG_VERSION: u32 = 1;

/// A table of Triton's functions, with their C signatures from the headers.
macro_rules! api {
    ($($name:ident: fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        #[allow(non_snake_case)]
        pub struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            fn load() -> Result<Api, String> {
                Ok(Api {$(
                    // SAFETY: the symbol is the server's function of this name, whose C
                    // signature (tritonserver.h / tritonbackend.h, r24.10) the field's type spells.
                    $name: unsafe {
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            lookup(concat!(stringify!($name), "\0"))?,
                        )
                    },
                )*})
            }
        }
    };
}

api! {
    TRITONSERVER_ErrorNew: fn(u32, *const c_char) -> Error;
    TRITONSERVER_ErrorDelete: fn(Error);
    TRITONSERVER_ErrorCode: fn(Error) -> u32;
    TRITONSERVER_ErrorMessage: fn(Error) -> *const c_char;
    TRITONSERVER_MessageNewFromSerializedJson: fn(*mut *mut TRITONSERVER_Message, *const c_char, usize) -> Error;
    TRITONSERVER_MessageSerializeToJson: fn(*mut TRITONSERVER_Message, *mut *const c_char, *mut usize) -> Error;
    TRITONSERVER_MessageDelete: fn(*mut TRITONSERVER_Message) -> Error;
    TRITONSERVER_LogMessage: fn(u32, *const c_char, i32, *const c_char) -> Error;
    TRITONBACKEND_ApiVersion: fn(*mut u32, *mut u32) -> Error;
    TRITONBACKEND_ModelName: fn(*mut TRITONBACKEND_Model, *mut *const c_char) -> Error;
    TRITONBACKEND_ModelVersion: fn(*mut TRITONBACKEND_Model, *mut u64) -> Error;
    TRITONBACKEND_ModelRepository: fn(*mut TRITONBACKEND_Model, *mut u32, *mut *const c_char) -> Error;
    TRITONBACKEND_ModelConfig: fn(*mut TRITONBACKEND_Model, u32, *mut *mut TRITONSERVER_Message) -> Error;
    TRITONBACKEND_ModelAutoCompleteConfig: fn(*mut TRITONBACKEND_Model, *mut bool) -> Error;
    TRITONBACKEND_ModelSetConfig: fn(*mut TRITONBACKEND_Model, u32, *mut TRITONSERVER_Message) -> Error;
    TRITONBACKEND_ModelState: fn(*mut TRITONBACKEND_Model, *mut *mut c_void) -> Error;
    TRITONBACKEND_ModelSetState: fn(*mut TRITONBACKEND_Model, *mut c_void) -> Error;
    TRITONBACKEND_ModelInstanceModel: fn(*mut TRITONBACKEND_ModelInstance, *mut *mut TRITONBACKEND_Model) -> Error;
    TRITONBACKEND_ModelInstanceState: fn(*mut TRITONBACKEND_ModelInstance, *mut *mut c_void) -> Error;
    TRITONBACKEND_ModelInstanceSetState: fn(*mut TRITONBACKEND_ModelInstance, *mut c_void) -> Error;
    TRITONBACKEND_ModelInstanceReportStatistics:
        fn(*mut TRITONBACKEND_ModelInstance, *mut TRITONBACKEND_Request, bool, u64, u64, u64, u64) -> Error;
    TRITONBACKEND_ModelInstanceReportBatchStatistics:
        fn(*mut TRITONBACKEND_ModelInstance, u64, u64, u64, u64, u64) -> Error;
    TRITONBACKEND_RequestInputCount: fn(*mut TRITONBACKEND_Request, *mut u32) -> Error;
    TRITONBACKEND_RequestInput: fn(*mut TRITONBACKEND_Request, *const c_char, *mut *mut TRITONBACKEND_Input) -> Error;
    TRITONBACKEND_RequestOutputCount: fn(*mut TRITONBACKEND_Request, *mut u32) -> Error;
    TRITONBACKEND_RequestOutputName: fn(*mut TRITONBACKEND_Request, u32, *mut *const c_char) -> Error;
    TRITONBACKEND_RequestRelease: fn(*mut TRITONBACKEND_Request, u32) -> Error;
    TRITONBACKEND_InputProperties: fn(
        *mut TRITONBACKEND_Input, *mut *const c_char, *mut u32, *mut *const i64, *mut u32, *mut u64, *mut u32
    ) -> Error;
    TRITONBACKEND_InputBuffer: fn(*mut TRITONBACKEND_Input, u32, *mut *const c_void, *mut u64, *mut u32, *mut i64) -> Error;
    TRITONBACKEND_ResponseNew: fn(*mut *mut TRITONBACKEND_Response, *mut TRITONBACKEND_Request) -> Error;
    TRITONBACKEND_ResponseDelete: fn(*mut TRITONBACKEND_Response) -> Error;
    TRITONBACKEND_ResponseOutput:
        fn(*mut TRITONBACKEND_Response, *mut *mut TRITONBACKEND_Output, *const c_char, u32, *const i64, u32) -> Error;
    TRITONBACKEND_OutputBuffer: fn(*mut TRITONBACKEND_Output, *mut *mut c_void, u64, *mut u32, *mut i64) -> Error;
    TRITONBACKEND_ResponseSend: fn(*mut TRITONBACKEND_Response, u32, Error) -> Error;
}

/// The address of the server's function `name` (NUL-terminated), looked up in the process.
fn lookup(name: &'static str) -> Result<*mut c_void, String> {
    // SAFETY: `name` is NUL-terminated (every caller appends "\0"); RTLD_DEFAULT searches the
    // objects loaded globally, where the server's library is.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) };
    if p.is_null() {
        let bare = name.trim_end_matches('\0');
        return Err(format!(
            "{bare} is not in this process: libtriton_tvmrt.so runs inside tritonserver 2.51 or later"
        ));
    }
    Ok(p)
}

static API: OnceLock<Result<Api, String>> = OnceLock::new();

impl Api {
    /// The server's functions, looked up on first use.
    pub fn get() -> Result<&'static Api, &'static str> {
        API.get_or_init(Api::load).as_ref().map_err(String::as_str)
    }
}

/// A string Triton owns (NULL reads as empty).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives the returned borrow.
pub unsafe fn borrowed_str<'a>(p: *const c_char) -> &'a str {
    if p.is_null() {
        return "";
    }
    // SAFETY: NUL-terminated and alive, as the caller promises.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("<not UTF-8>")
}
