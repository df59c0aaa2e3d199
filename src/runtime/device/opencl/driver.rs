//! The OpenCL platform this process uses, opened once on first use: its devices (GPUs and
//! accelerators first, then CPUs, as TVM orders them), one context, and per device an in-order
//! queue as its default stream.

use super::symbols::{self, check, ClUint, Handle, Symbols};
use crate::runtime::base::error::{Error, Result};
use once_cell::sync::OnceCell;
use std::ffi::c_void;

/// One device of the platform.
pub struct Device {
    pub id: Handle,
    pub name: String,
    /// The default stream's queue.
    pub queue: Handle,
    /// The largest single allocation (`CL_DEVICE_MAX_MEM_ALLOC_SIZE`).
    pub max_alloc: u64,
    pub global_mem: u64,
    /// What the default queue was given and is known to have done.
    pub counts: super::Counts,
}

/// The opened API, the chosen platform, its context and devices.
pub struct Driver {
    pub cl: Symbols,
    pub platform: String,
    pub context: Handle,
    pub devices: Vec<Device>,
}

// SAFETY: OpenCL object handles may be used from any thread (every OpenCL 1.2 call but
// clSetKernelArg is thread-safe); the driver never changes after it is opened.
unsafe impl Send for Driver {}
// SAFETY: as above.
unsafe impl Sync for Driver {}

static DRIVER: OnceCell<std::result::Result<Driver, String>> = OnceCell::new();

/// The process's OpenCL driver, opened on the first call; the same error every time when
/// OpenCL or a platform is missing.
pub fn driver() -> Result<&'static Driver> {
    DRIVER
        .get_or_init(|| Driver::open().map_err(|e| e.message().to_string()))
        .as_ref()
        .map_err(|m| Error::value(m.clone()))
}

/// A string property of a platform or device, read by `get` (`clGet*Info`).
pub(super) fn info_string(get: impl Fn(usize, *mut c_void, *mut usize) -> i32, call: &str) -> Result<String> {
    let mut n = 0usize;
    check(call, get(0, std::ptr::null_mut(), &mut n))?;
    let mut buf = vec![0u8; n];
    check(call, get(n, buf.as_mut_ptr().cast(), std::ptr::null_mut()))?;
    Ok(String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string())
}

/// A fixed-size property of a device.
pub(super) fn device_info<T: Default + Copy>(cl: &Symbols, dev: Handle, param: ClUint) -> Result<T> {
    let mut v = T::default();
    // SAFETY: `v` has room for the property's `size_of::<T>()` bytes.
    let status = unsafe {
        (cl.get_device_info)(dev, param, std::mem::size_of::<T>(), (&mut v as *mut T).cast(), std::ptr::null_mut())
    };
    check("clGetDeviceInfo", status)?;
    Ok(v)
}

impl Driver {
    fn open() -> Result<Driver> {
        let cl = Symbols::open()?;
        let platforms = Self::platforms(&cl)?;
        let (platform, name) = Self::choose(&cl, &platforms)?;
        let ids = Self::device_ids(&cl, platform)?;
        if ids.is_empty() {
            return Err(Error::value(format!("OpenCL platform \"{name}\" has no device")));
        }
        let mut status = 0;
        // SAFETY: `ids` are devices of the platform; no properties, no callback.
        let context = unsafe {
            (cl.create_context)(
                std::ptr::null(),
                ids.len() as u32,
                ids.as_ptr(),
                None,
                std::ptr::null_mut(),
                &mut status,
            )
        };
        check("clCreateContext", status)?;
        let mut devices = Vec::with_capacity(ids.len());
        for id in ids {
            // SAFETY: a device of the context; an in-order queue without properties.
            let queue = unsafe { (cl.create_command_queue)(context, id, 0, &mut status) };
            check("clCreateCommandQueue", status)?;
            // SAFETY: the device's name into the buffer `info_string` sizes.
            let name = info_string(
                |n, p, r| unsafe { (cl.get_device_info)(id, symbols::DEVICE_NAME, n, p, r) },
                "clGetDeviceInfo",
            )?;
            let max_alloc = device_info::<u64>(&cl, id, symbols::DEVICE_MAX_MEM_ALLOC_SIZE)?;
            let global_mem = device_info::<u64>(&cl, id, symbols::DEVICE_GLOBAL_MEM_SIZE)?;
            devices.push(Device { id, name, queue, max_alloc, global_mem, counts: Default::default() });
        }
        Ok(Driver { cl, platform: name, context, devices })
    }

    fn platforms(cl: &Symbols) -> Result<Vec<Handle>> {
        let mut n = 0u32;
        // SAFETY: counting only.
        let status = unsafe { (cl.get_platform_ids)(0, std::ptr::null_mut(), &mut n) };
        if status == -1001 || (status == 0 && n == 0) {
            return Err(Error::value(
                "OpenCL is not available: the OpenCL library found no platform (no driver is installed: \
                 see /etc/OpenCL/vendors; e.g. PoCL: pocl-opencl-icd)",
            ));
        }
        check("clGetPlatformIDs", status)?;
        let mut ids = vec![std::ptr::null_mut(); n as usize];
        // SAFETY: room for `n` platforms.
        check("clGetPlatformIDs", unsafe { (cl.get_platform_ids)(n, ids.as_mut_ptr(), std::ptr::null_mut()) })?;
        Ok(ids)
    }

    /// The platform `TVM_OPENCL_PLATFORM` names (an index, or part of its name), else the first.
    fn choose(cl: &Symbols, platforms: &[Handle]) -> Result<(Handle, String)> {
        let named = platforms
            .iter()
            .map(|&p| {
                // SAFETY: the platform's name into the buffer `info_string` sizes.
                info_string(
                    |n, v, r| unsafe { (cl.get_platform_info)(p, symbols::PLATFORM_NAME, n, v, r) },
                    "clGetPlatformInfo",
                )
                .map(|name| (p, name))
            })
            .collect::<Result<Vec<_>>>()?;
        let Ok(want) = std::env::var("TVM_OPENCL_PLATFORM") else { return Ok(named[0].clone()) };
        let found = match want.parse::<usize>() {
            Ok(i) => named.get(i).cloned(),
            Err(_) => named.iter().find(|(_, name)| name.contains(&want)).cloned(),
        };
        found.ok_or_else(|| {
            let names: Vec<_> = named.iter().map(|(_, n)| format!("\"{n}\"")).collect();
            Error::value(format!(
                "TVM_OPENCL_PLATFORM={want} names no OpenCL platform (there are: {})",
                names.join(", ")
            ))
        })
    }

    /// The platform's devices, GPUs and accelerators first, then CPUs.
    fn device_ids(cl: &Symbols, platform: Handle) -> Result<Vec<Handle>> {
        let mut n = 0u32;
        // SAFETY: counting only.
        let status =
            unsafe { (cl.get_device_ids)(platform, symbols::DEVICE_TYPE_ALL, 0, std::ptr::null_mut(), &mut n) };
        if status == -1 {
            return Ok(Vec::new());
        }
        check("clGetDeviceIDs", status)?;
        let mut ids = vec![std::ptr::null_mut(); n as usize];
        // SAFETY: room for `n` devices.
        let status = unsafe {
            (cl.get_device_ids)(platform, symbols::DEVICE_TYPE_ALL, n, ids.as_mut_ptr(), std::ptr::null_mut())
        };
        check("clGetDeviceIDs", status)?;
        let mut typed = ids
            .into_iter()
            .map(|id| Ok((device_info::<u64>(cl, id, symbols::DEVICE_TYPE)? & symbols::DEVICE_TYPE_CPU != 0, id)))
            .collect::<Result<Vec<_>>>()?;
        typed.sort_by_key(|(cpu, _)| *cpu);
        Ok(typed.into_iter().map(|(_, id)| id).collect())
    }

    /// Device `id` of the platform, or an error saying how many there are.
    pub fn device(&self, id: i32) -> Result<&Device> {
        usize::try_from(id).ok().and_then(|i| self.devices.get(i)).ok_or_else(|| {
            Error::value(format!(
                "opencl:{id} does not exist: OpenCL platform \"{}\" has {} device(s)",
                self.platform,
                self.devices.len()
            ))
        })
    }
}
