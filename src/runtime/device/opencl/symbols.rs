//! The OpenCL API as one table of functions from the ICD loader (`libOpenCL.so.1`), opened at
//! run time: the runtime neither builds nor links against OpenCL. Every call goes through
//! [`check`], which turns a status into an error naming the call and the status.

use crate::runtime::base::error::{Error, Result};
use std::ffi::c_void;

pub type ClInt = i32;
pub type ClUint = u32;
/// Every OpenCL object handle (`cl_platform_id`, `cl_device_id`, `cl_context`,
/// `cl_command_queue`, `cl_mem`, `cl_event`, ...).
pub type Handle = *mut c_void;

pub const SUCCESS: ClInt = 0;
pub const COMPLETE: ClInt = 0;
pub const PLATFORM_NAME: ClUint = 0x0902;
pub const DEVICE_TYPE: ClUint = 0x1000;
pub const DEVICE_MAX_MEM_ALLOC_SIZE: ClUint = 0x1010;
pub const DEVICE_GLOBAL_MEM_SIZE: ClUint = 0x101F;
pub const DEVICE_NAME: ClUint = 0x102B;
pub const DEVICE_TYPE_CPU: u64 = 1 << 1;
pub const DEVICE_TYPE_ALL: u64 = 0xFFFF_FFFF;
pub const MEM_READ_WRITE: u64 = 1;
pub const EVENT_COMMAND_EXECUTION_STATUS: ClUint = 0x11D3;
pub const PROGRAM_BUILD_LOG: ClUint = 0x1183;

type Notify = Option<unsafe extern "C" fn(*const i8, *const c_void, usize, *mut c_void)>;

/// The functions the driver calls, and the library that holds them (kept open).
pub struct Symbols {
    pub get_platform_ids: unsafe extern "C" fn(ClUint, *mut Handle, *mut ClUint) -> ClInt,
    pub get_platform_info: unsafe extern "C" fn(Handle, ClUint, usize, *mut c_void, *mut usize) -> ClInt,
    pub get_device_ids: unsafe extern "C" fn(Handle, u64, ClUint, *mut Handle, *mut ClUint) -> ClInt,
    pub get_device_info: unsafe extern "C" fn(Handle, ClUint, usize, *mut c_void, *mut usize) -> ClInt,
    pub create_context:
        unsafe extern "C" fn(*const isize, ClUint, *const Handle, Notify, *mut c_void, *mut ClInt) -> Handle,
    pub release_context: unsafe extern "C" fn(Handle) -> ClInt,
    pub create_command_queue: unsafe extern "C" fn(Handle, Handle, u64, *mut ClInt) -> Handle,
    pub release_command_queue: unsafe extern "C" fn(Handle) -> ClInt,
    pub retain_command_queue: unsafe extern "C" fn(Handle) -> ClInt,
    pub create_buffer: unsafe extern "C" fn(Handle, u64, usize, *mut c_void, *mut ClInt) -> Handle,
    pub release_mem_object: unsafe extern "C" fn(Handle) -> ClInt,
    pub enqueue_write_buffer: unsafe extern "C" fn(
        Handle,
        Handle,
        ClUint,
        usize,
        usize,
        *const c_void,
        ClUint,
        *const Handle,
        *mut Handle,
    ) -> ClInt,
    pub enqueue_read_buffer: unsafe extern "C" fn(
        Handle,
        Handle,
        ClUint,
        usize,
        usize,
        *mut c_void,
        ClUint,
        *const Handle,
        *mut Handle,
    ) -> ClInt,
    pub enqueue_copy_buffer:
        unsafe extern "C" fn(Handle, Handle, Handle, usize, usize, usize, ClUint, *const Handle, *mut Handle) -> ClInt,
    pub finish: unsafe extern "C" fn(Handle) -> ClInt,
    pub flush: unsafe extern "C" fn(Handle) -> ClInt,
    pub enqueue_marker_with_wait_list: unsafe extern "C" fn(Handle, ClUint, *const Handle, *mut Handle) -> ClInt,
    pub enqueue_barrier_with_wait_list: unsafe extern "C" fn(Handle, ClUint, *const Handle, *mut Handle) -> ClInt,
    pub wait_for_events: unsafe extern "C" fn(ClUint, *const Handle) -> ClInt,
    pub get_event_info: unsafe extern "C" fn(Handle, ClUint, usize, *mut c_void, *mut usize) -> ClInt,
    pub release_event: unsafe extern "C" fn(Handle) -> ClInt,
    pub create_user_event: unsafe extern "C" fn(Handle, *mut ClInt) -> Handle,
    pub create_program_with_source:
        unsafe extern "C" fn(Handle, ClUint, *const *const i8, *const usize, *mut ClInt) -> Handle,
    pub build_program: unsafe extern "C" fn(
        Handle,
        ClUint,
        *const Handle,
        *const i8,
        Option<unsafe extern "C" fn(Handle, *mut c_void)>,
        *mut c_void,
    ) -> ClInt,
    pub get_program_build_info: unsafe extern "C" fn(Handle, Handle, ClUint, usize, *mut c_void, *mut usize) -> ClInt,
    pub release_program: unsafe extern "C" fn(Handle) -> ClInt,
    pub create_kernel: unsafe extern "C" fn(Handle, *const i8, *mut ClInt) -> Handle,
    pub release_kernel: unsafe extern "C" fn(Handle) -> ClInt,
    pub set_kernel_arg: unsafe extern "C" fn(Handle, ClUint, usize, *const c_void) -> ClInt,
    pub enqueue_nd_range_kernel: unsafe extern "C" fn(
        Handle,
        Handle,
        ClUint,
        *const usize,
        *const usize,
        *const usize,
        ClUint,
        *const Handle,
        *mut Handle,
    ) -> ClInt,
    pub set_user_event_status: unsafe extern "C" fn(Handle, ClInt) -> ClInt,
    _lib: libloading::Library,
}

/// The library to open: `TVM_OPENCL_LIBRARY` when set, else the ICD loader's names.
fn candidates() -> Vec<String> {
    match std::env::var("TVM_OPENCL_LIBRARY") {
        Ok(path) if !path.is_empty() => vec![path],
        _ => vec!["libOpenCL.so.1".into(), "libOpenCL.so".into()],
    }
}

impl Symbols {
    /// Opens the OpenCL library and finds every function, or an error naming the library (or
    /// the function) that is missing.
    pub fn open() -> Result<Symbols> {
        Self::open_from(&candidates())
    }

    /// As [`Symbols::open`], trying the libraries `names` in turn.
    pub fn open_from(names: &[String]) -> Result<Symbols> {
        let mut last = String::new();
        for name in names {
            // SAFETY: loading the OpenCL ICD loader runs its initialisers, which only set up
            // its own state (the vendor list is read on the first platform query).
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::from_library(lib, name),
                Err(e) => last = e.to_string(),
            }
        }
        Err(Error::value(format!(
            "OpenCL is not available: the OpenCL library could not be opened (tried {}: {last}); \
             install an OpenCL driver (e.g. PoCL: pocl-opencl-icd) or set TVM_OPENCL_LIBRARY",
            names.join(", ")
        )))
    }

    fn from_library(lib: libloading::Library, name: &str) -> Result<Symbols> {
        macro_rules! sym {
            ($s:literal) => {{
                // SAFETY: the symbol is the OpenCL 1.2 function of that name, whose C signature
                // is the field's type.
                let f = unsafe { lib.get(concat!($s, "\0").as_bytes()) }
                    .map_err(|e| Error::value(format!("{name} has no function {}: {e}", $s)))?;
                *f
            }};
        }
        Ok(Symbols {
            get_platform_ids: sym!("clGetPlatformIDs"),
            get_platform_info: sym!("clGetPlatformInfo"),
            get_device_ids: sym!("clGetDeviceIDs"),
            get_device_info: sym!("clGetDeviceInfo"),
            create_context: sym!("clCreateContext"),
            release_context: sym!("clReleaseContext"),
            create_command_queue: sym!("clCreateCommandQueue"),
            release_command_queue: sym!("clReleaseCommandQueue"),
            retain_command_queue: sym!("clRetainCommandQueue"),
            create_buffer: sym!("clCreateBuffer"),
            release_mem_object: sym!("clReleaseMemObject"),
            enqueue_write_buffer: sym!("clEnqueueWriteBuffer"),
            enqueue_read_buffer: sym!("clEnqueueReadBuffer"),
            enqueue_copy_buffer: sym!("clEnqueueCopyBuffer"),
            finish: sym!("clFinish"),
            flush: sym!("clFlush"),
            enqueue_marker_with_wait_list: sym!("clEnqueueMarkerWithWaitList"),
            enqueue_barrier_with_wait_list: sym!("clEnqueueBarrierWithWaitList"),
            wait_for_events: sym!("clWaitForEvents"),
            get_event_info: sym!("clGetEventInfo"),
            release_event: sym!("clReleaseEvent"),
            create_user_event: sym!("clCreateUserEvent"),
            create_program_with_source: sym!("clCreateProgramWithSource"),
            build_program: sym!("clBuildProgram"),
            get_program_build_info: sym!("clGetProgramBuildInfo"),
            release_program: sym!("clReleaseProgram"),
            create_kernel: sym!("clCreateKernel"),
            release_kernel: sym!("clReleaseKernel"),
            set_kernel_arg: sym!("clSetKernelArg"),
            enqueue_nd_range_kernel: sym!("clEnqueueNDRangeKernel"),
            set_user_event_status: sym!("clSetUserEventStatus"),
            _lib: lib,
        })
    }
}

/// An OpenCL status as an error naming the call, or `Ok` for `CL_SUCCESS`.
pub fn check(call: &str, status: ClInt) -> Result<()> {
    if status == SUCCESS {
        return Ok(());
    }
    Err(Error::value(format!("OpenCL {call} failed: {} ({status})", status_name(status))))
}

/// The name of an OpenCL status code.
pub fn status_name(status: ClInt) -> &'static str {
    match status {
        -1 => "CL_DEVICE_NOT_FOUND",
        -2 => "CL_DEVICE_NOT_AVAILABLE",
        -4 => "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        -5 => "CL_OUT_OF_RESOURCES",
        -6 => "CL_OUT_OF_HOST_MEMORY",
        -11 => "CL_BUILD_PROGRAM_FAILURE",
        -13 => "CL_MISALIGNED_SUB_BUFFER_OFFSET",
        -14 => "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
        -30 => "CL_INVALID_VALUE",
        -32 => "CL_INVALID_PLATFORM",
        -33 => "CL_INVALID_DEVICE",
        -34 => "CL_INVALID_CONTEXT",
        -36 => "CL_INVALID_COMMAND_QUEUE",
        -38 => "CL_INVALID_MEM_OBJECT",
        -48 => "CL_INVALID_KERNEL",
        -52 => "CL_INVALID_KERNEL_ARGS",
        -54 => "CL_INVALID_WORK_GROUP_SIZE",
        -58 => "CL_INVALID_EVENT",
        -61 => "CL_INVALID_BUFFER_SIZE",
        -1001 => "CL_PLATFORM_NOT_FOUND_KHR",
        _ => "an OpenCL error",
    }
}
