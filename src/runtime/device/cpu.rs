//! The CPU device: aligned host memory, `memcpy` copies, synchronous streams.

use super::{DeviceApi, StreamHandle};
use crate::abi::{DLDataType, DLDevice};
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::TensorRef;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::Mutex;

/// CPU streams run every operation synchronously at submission, so a stream is only an
/// identity: handles are tracked so that a bogus or freed handle is an error, not a crash.
pub struct CpuDeviceApi {
    streams: Mutex<Option<HashSet<usize>>>,
}

/// The object a CPU stream handle points to.
struct CpuStream {
    _device_id: i32,
}

impl CpuDeviceApi {
    pub const fn new() -> Self {
        CpuDeviceApi { streams: Mutex::new(None) }
    }

    fn check_stream(&self, stream: StreamHandle) -> Result<()> {
        if stream.is_null() {
            return Ok(());
        }
        let live = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if live.as_ref().is_some_and(|s| s.contains(&(stream as usize))) {
            Ok(())
        } else {
            Err(Error::value(format!("{stream:p} is not a live cpu stream")))
        }
    }
}

impl Default for CpuDeviceApi {
    fn default() -> Self {
        Self::new()
    }
}

impl DeviceApi for CpuDeviceApi {
    fn alloc_data_space(
        &self,
        _dev: DLDevice,
        nbytes: usize,
        alignment: usize,
        _type_hint: DLDataType,
    ) -> Result<*mut c_void> {
        if !alignment.is_power_of_two() {
            return Err(Error::value(format!("alignment {alignment} is not a power of two")));
        }
        let align = alignment.max(std::mem::size_of::<usize>());
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer; `align` is a power of two ≥ sizeof(void*).
        let rc = unsafe { libc::posix_memalign(&mut ptr, align, nbytes.max(1)) };
        if rc != 0 || ptr.is_null() {
            return Err(Error::internal(format!("out of memory: cannot allocate {nbytes} bytes on cpu")));
        }
        Ok(ptr)
    }

    unsafe fn free_data_space(&self, _dev: DLDevice, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the pointer came from posix_memalign (contract of the trait); free(NULL) is a no-op.
        unsafe { libc::free(ptr) };
        Ok(())
    }

    fn copy_data_from_to(&self, from: TensorRef<'_>, to: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        self.check_stream(stream)?;
        from.check_contiguous("source")?;
        to.check_contiguous("destination")?;
        let n = from.byte_size()?;
        let m = to.byte_size()?;
        if n != m {
            return Err(Error::value(format!("copy size mismatch: source has {n} bytes, destination has {m} bytes")));
        }
        if n == 0 {
            return Ok(());
        }
        if from.raw().data.is_null() || to.raw().data.is_null() {
            return Err(Error::value("copy of a tensor whose data pointer is NULL"));
        }
        // SAFETY: both tensors are compact and hold `n` bytes at their data addresses (the
        // `TensorRef` contract: readable for `from`, writable for `to`); `copy` tolerates overlap.
        unsafe { std::ptr::copy(from.data_addr() as *const u8, to.data_addr() as *mut u8, n) };
        Ok(())
    }

    fn create_stream(&self, dev: DLDevice) -> Result<StreamHandle> {
        let handle = Box::into_raw(Box::new(CpuStream { _device_id: dev.device_id })) as StreamHandle;
        let mut live = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        live.get_or_insert_with(HashSet::new).insert(handle as usize);
        Ok(handle)
    }

    fn free_stream(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        if stream.is_null() {
            return Ok(());
        }
        let mut live = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if !live.as_mut().is_some_and(|s| s.remove(&(stream as usize))) {
            return Err(Error::value(format!("{stream:p} is not a live cpu stream (freed twice?)")));
        }
        // SAFETY: the handle was live, so it came from `Box::into_raw` in `create_stream`.
        drop(unsafe { Box::from_raw(stream as *mut CpuStream) });
        Ok(())
    }

    fn set_stream(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        self.check_stream(stream)
    }

    fn stream_sync(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        self.check_stream(stream)
    }

    fn sync_stream_from_to(&self, _dev: DLDevice, src: StreamHandle, dst: StreamHandle) -> Result<()> {
        self.check_stream(src)?;
        self.check_stream(dst)
    }
}
