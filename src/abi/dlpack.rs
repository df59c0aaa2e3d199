//! DLPack structures (DLPACK_VERSION 70, ABI 1).

use std::ffi::c_void;

/// Device type codes of DLPack (`DLDeviceType`) plus TVM's extensions.
pub mod device_type {
    pub const CPU: i32 = 1;
    pub const CUDA: i32 = 2;
    pub const CUDA_HOST: i32 = 3;
    pub const OPENCL: i32 = 4;
    pub const VULKAN: i32 = 7;
    pub const METAL: i32 = 8;
    pub const VPI: i32 = 9;
    pub const ROCM: i32 = 10;
    pub const ROCM_HOST: i32 = 11;
    pub const EXT_DEV: i32 = 12;
    pub const CUDA_MANAGED: i32 = 13;
    pub const ONEAPI: i32 = 14;
    pub const WEBGPU: i32 = 15;
    pub const HEXAGON: i32 = 16;
    pub const AOCL: i32 = 32;
    pub const SDACCEL: i32 = 33;
    pub const OPENGL: i32 = 34;
    pub const MICRO_DEV: i32 = 35;

    /// TVM's printable name of a device type (`DLDeviceType2Str`), or `None` if unknown.
    pub fn name(device_type: i32) -> Option<&'static str> {
        Some(match device_type {
            CPU => "cpu",
            CUDA => "cuda",
            CUDA_HOST => "cuda_host",
            OPENCL => "opencl",
            VULKAN => "vulkan",
            METAL => "metal",
            VPI => "vpi",
            ROCM => "rocm",
            ROCM_HOST => "rocm_host",
            EXT_DEV => "ext_dev",
            CUDA_MANAGED => "cuda_managed",
            ONEAPI => "oneapi",
            WEBGPU => "webgpu",
            HEXAGON => "hexagon",
            AOCL => "aocl",
            SDACCEL => "sdaccel",
            OPENGL => "opengl",
            MICRO_DEV => "microdev",
            _ => return None,
        })
    }

    /// The device type TVM names `name` (the inverse of [`name`]).
    pub fn from_name(name: &str) -> Option<i32> {
        (CPU..=MICRO_DEV).find(|&t| self::name(t) == Some(name))
    }
}

/// Data type codes of DLPack (`DLDataTypeCode`) plus TVM's float8 codes.
pub mod dtype_code {
    pub const INT: u8 = 0;
    pub const UINT: u8 = 1;
    pub const FLOAT: u8 = 2;
    pub const OPAQUE_HANDLE: u8 = 3;
    pub const BFLOAT: u8 = 4;
    pub const COMPLEX: u8 = 5;
    pub const E4M3_FLOAT: u8 = 6;
    pub const E5M2_FLOAT: u8 = 7;
    /// DLPack 1.x's `kDLBool` (8 bits a value), what the tvm-ffi releases write; TVM 0.18 gave
    /// code 6 to its e4m3 floats and wrote bools as `uint1`.
    pub const DLPACK1_BOOL: u8 = 6;
    pub const CUSTOM_BEGIN: u8 = 129;
}

/// A device: `{device_type, device_id}` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

impl DLDevice {
    pub const fn cpu(device_id: i32) -> Self {
        DLDevice { device_type: device_type::CPU, device_id }
    }

    /// `KIND[:ID]` by TVM's names of device types (`cpu`, `opencl`, `opencl:1`), or why not.
    pub fn parse(text: &str) -> Result<DLDevice, String> {
        let (kind, id) = text.split_once(':').unwrap_or((text, "0"));
        let device_type = device_type::from_name(kind)
            .ok_or_else(|| format!("unknown device kind `{kind}` (TVM's names: cpu, opencl, cuda, ...)"))?;
        let device_id = id.parse::<u16>().map_err(|_| format!("device id `{id}` is not a number from 0 to 65535"))?;
        Ok(DLDevice { device_type, device_id: device_id as i32 })
    }
}

impl std::fmt::Display for DLDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match device_type::name(self.device_type) {
            Some(n) => write!(f, "{}({})", n, self.device_id),
            None => write!(f, "device_type {}({})", self.device_type, self.device_id),
        }
    }
}

/// An element type: `{code, bits, lanes}` (4 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// A tensor view (48 bytes). `strides == NULL` means compact row-major.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// A tensor with an owner and a deleter (64 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// DLPack's version, as a versioned managed tensor carries it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// DLPack 1.x's managed tensor: a version and flags before the tensor (80 bytes).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*`: read-only 1, copied 2, sub-byte types padded 4.
    pub flags: u64,
    pub dl_tensor: DLTensor,
}
