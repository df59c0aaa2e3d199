//! The CPU device: aligned host memory, `memcpy` copies, asynchronous streams.
//!
//! The NULL stream is synchronous: work "queued" on it runs at once on the calling thread, as
//! in TVM. A stream made by `create_stream` is a strand over shared workers ([`CpuStream`]):
//! copies and host tasks queued on it run there, in order, and the caller synchronizes before
//! reading, as on a GPU. Stream and event handles are keys into tables, never dereferenced, so
//! a bogus or freed handle is an error, not a crash.

use super::cpu_stream::{CpuEvent, CpuStream};
use super::{DeviceApi, EventHandle, HostTask, StreamHandle};
use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::object::handles::HandleTable;
use std::ffi::c_void;
use std::sync::Arc;

/// Live streams or events, and what they are called in errors.
struct Handles<T> {
    table: HandleTable<T>,
    what: &'static str,
}

impl<T> Handles<T> {
    const fn new(what: &'static str) -> Self {
        Handles { table: HandleTable::new(), what }
    }

    fn insert(&self, item: T) -> *mut c_void {
        self.table.insert(Arc::new(item)) as *mut c_void
    }

    fn get(&self, handle: *mut c_void) -> Result<Arc<T>> {
        self.table.get(handle).ok_or_else(|| Error::value(format!("{handle:p} is not a live cpu {}", self.what)))
    }

    fn remove(&self, handle: *mut c_void) -> Result<Arc<T>> {
        self.table
            .remove(handle)
            .ok_or_else(|| Error::value(format!("{handle:p} is not a live cpu {} (freed twice?)", self.what)))
    }
}

pub struct CpuDeviceApi {
    streams: Handles<CpuStream>,
    events: Handles<CpuEvent>,
}

impl CpuDeviceApi {
    pub const fn new() -> Self {
        CpuDeviceApi { streams: Handles::new("stream"), events: Handles::new("event") }
    }

    /// The stream behind a handle; None for NULL, the synchronous default stream.
    fn stream(&self, stream: StreamHandle) -> Result<Option<Arc<CpuStream>>> {
        if stream.is_null() {
            return Ok(None);
        }
        self.streams.get(stream).map(Some)
    }

    fn event(&self, event: EventHandle) -> Result<Arc<CpuEvent>> {
        if event.is_null() {
            return Err(Error::value("event handle is NULL"));
        }
        self.events.get(event)
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

    unsafe fn copy_data_from_to(&self, from: TensorRef<'_>, to: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        let stream = self.stream(stream)?;
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
        let (src, dst) = (from.data_addr() as usize, to.data_addr() as usize);
        let copy = move || {
            // SAFETY: both tensors are compact and hold `n` bytes at their data addresses (the
            // `TensorRef` contract: readable for `from`, writable for `to`), and by this
            // function's contract they stay so until the stream runs this copy; `copy`
            // tolerates overlap.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n) }
        };
        match stream {
            None => copy(),
            Some(s) => s.push(Box::new(copy)),
        }
        Ok(())
    }

    fn create_stream(&self, _dev: DLDevice) -> Result<StreamHandle> {
        Ok(self.streams.insert(CpuStream::new()))
    }

    fn free_stream(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        if stream.is_null() {
            return Ok(());
        }
        // Queued work still runs; the last reference (a task's, or this one) stops the worker.
        self.streams.remove(stream)?.shut_down();
        Ok(())
    }

    fn set_stream(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        // Kernels on the CPU take no stream: they run on the thread that calls them.
        self.stream(stream).map(drop)
    }

    fn stream_sync(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        if let Some(s) = self.stream(stream)? {
            s.synchronize();
        }
        Ok(())
    }

    fn stream_query(&self, _dev: DLDevice, stream: StreamHandle) -> Result<bool> {
        Ok(self.stream(stream)?.map_or(true, |s| s.is_idle()))
    }

    fn sync_stream_from_to(&self, _dev: DLDevice, src: StreamHandle, dst: StreamHandle) -> Result<()> {
        let (src, dst) = (self.stream(src)?, self.stream(dst)?);
        let mark = Arc::new(CpuEvent::default());
        mark.record(src.as_deref());
        mark.wait_on(dst.as_deref());
        Ok(())
    }

    fn launch_host_task(&self, _dev: DLDevice, stream: StreamHandle, task: HostTask) -> Result<()> {
        match self.stream(stream)? {
            None => task(),
            Some(s) => s.push(task),
        }
        Ok(())
    }

    fn create_event(&self, _dev: DLDevice) -> Result<EventHandle> {
        Ok(self.events.insert(CpuEvent::default()))
    }

    fn free_event(&self, _dev: DLDevice, event: EventHandle) -> Result<()> {
        if event.is_null() {
            return Ok(());
        }
        // Waits already queued on streams hold their own reference.
        self.events.remove(event).map(drop)
    }

    fn record_event(&self, _dev: DLDevice, event: EventHandle, stream: StreamHandle) -> Result<()> {
        let ev = self.event(event)?;
        ev.record(self.stream(stream)?.as_deref());
        Ok(())
    }

    fn stream_wait_event(&self, _dev: DLDevice, stream: StreamHandle, event: EventHandle) -> Result<()> {
        let ev = self.event(event)?;
        ev.wait_on(self.stream(stream)?.as_deref());
        Ok(())
    }

    fn event_sync(&self, _dev: DLDevice, event: EventHandle) -> Result<()> {
        self.event(event)?.synchronize();
        Ok(())
    }

    fn event_query(&self, _dev: DLDevice, event: EventHandle) -> Result<bool> {
        Ok(self.event(event)?.is_reached())
    }
}
