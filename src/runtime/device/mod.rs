//! Device APIs: memory, copies and streams per device type, behind one trait.
//!
//! The CPU API is built in; drivers for other APIs (`opencl/`, registered by the runtime's
//! initialisation, its library opened on first use) register an implementation with
//! [`register_device_api`]. Lookups are lock-free after registration.

mod cpu;
mod cpu_stream;
pub mod opencl;

pub use cpu::CpuDeviceApi;
pub use cpu_stream::{poll_until, HostTask};

use crate::abi::{device_type, DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use once_cell::sync::OnceCell;
use std::ffi::c_void;

/// Alignment of every NDArray and storage allocation (`kAllocAlignment`).
pub const ALLOC_ALIGNMENT: usize = 64;

/// An opaque stream handle as C sees it; NULL is the device's default stream.
pub type StreamHandle = *mut c_void;
/// An opaque event handle: a point in a stream that other streams and the host can wait for.
pub type EventHandle = *mut c_void;

/// What a device backend provides.
pub trait DeviceApi: Send + Sync {
    /// Allocate `nbytes` aligned to `alignment` (a power of two).
    fn alloc_data_space(
        &self,
        dev: DLDevice,
        nbytes: usize,
        alignment: usize,
        type_hint: DLDataType,
    ) -> Result<*mut c_void>;
    /// Free memory from [`DeviceApi::alloc_data_space`].
    ///
    /// # Safety
    /// `ptr` must be NULL or come from `alloc_data_space` of this same API object for the same
    /// `dev`, and not be freed yet. No one may use the memory after this call (for asynchronous
    /// devices, all work touching it must be complete or ordered before the free).
    unsafe fn free_data_space(&self, dev: DLDevice, ptr: *mut c_void) -> Result<()>;
    /// Copy between two compact tensors of equal byte size, ordered on `stream`: on the NULL
    /// stream it is done on return; on another stream it may still be queued.
    ///
    /// # Safety
    /// When `stream` is not NULL, both tensors' data must stay valid (and the destination
    /// unread and unwritten by others) until the stream has run the copy: synchronize the
    /// stream, or an event recorded after it, before touching either.
    unsafe fn copy_data_from_to(&self, from: TensorRef<'_>, to: TensorRef<'_>, stream: StreamHandle) -> Result<()>;
    fn create_stream(&self, dev: DLDevice) -> Result<StreamHandle>;
    /// Free a stream; work queued on it still runs.
    fn free_stream(&self, dev: DLDevice, stream: StreamHandle) -> Result<()>;
    /// Make `stream` the current stream of this thread for `dev`.
    fn set_stream(&self, dev: DLDevice, stream: StreamHandle) -> Result<()>;
    /// Block until all work queued on `stream` is done.
    fn stream_sync(&self, dev: DLDevice, stream: StreamHandle) -> Result<()>;
    /// Whether all work queued on `stream` is done.
    fn stream_query(&self, dev: DLDevice, stream: StreamHandle) -> Result<bool>;
    /// Make `dst` wait for the work queued on `src` so far, without blocking the host.
    fn sync_stream_from_to(&self, dev: DLDevice, src: StreamHandle, dst: StreamHandle) -> Result<()>;
    /// Run `task` on the host when `stream` reaches it (the NULL stream: now, on this thread).
    /// On the CPU this is how work runs on a stream; a GPU backend runs it as a host callback.
    fn launch_host_task(&self, dev: DLDevice, stream: StreamHandle, task: HostTask) -> Result<()>;
    fn create_event(&self, dev: DLDevice) -> Result<EventHandle>;
    /// Free an event; waits already queued on it are unaffected.
    fn free_event(&self, dev: DLDevice, event: EventHandle) -> Result<()>;
    /// Mark the current end of `stream`'s queue with `event` (replacing any earlier mark).
    fn record_event(&self, dev: DLDevice, event: EventHandle, stream: StreamHandle) -> Result<()>;
    /// Make `stream` wait until `event`'s latest mark is reached, without blocking the host
    /// (the NULL stream, being synchronous, waits on the host). An unrecorded event is reached.
    fn stream_wait_event(&self, dev: DLDevice, stream: StreamHandle, event: EventHandle) -> Result<()>;
    /// Block the host until `event`'s latest mark is reached.
    fn event_sync(&self, dev: DLDevice, event: EventHandle) -> Result<()>;
    /// Whether `event`'s latest mark is reached.
    fn event_query(&self, dev: DLDevice, event: EventHandle) -> Result<bool>;
    /// TVM's device attribute `kind` (`DeviceAttrKind`: 0 kExist, 1 kMaxThreadsPerBlock, ...),
    /// or [`Attr::None`] where the device has no answer. By default a device exists and says
    /// nothing more.
    fn get_attr(&self, _dev: DLDevice, kind: i64) -> Result<Attr> {
        Ok(if kind == 0 { Attr::Int(1) } else { Attr::None })
    }
    /// Temporary memory for kernels (64-byte aligned).
    fn alloc_workspace(&self, dev: DLDevice, nbytes: usize, type_hint: DLDataType) -> Result<*mut c_void> {
        self.alloc_data_space(dev, nbytes.max(1), ALLOC_ALIGNMENT, type_hint)
    }
    /// Free memory from [`DeviceApi::alloc_workspace`].
    ///
    /// # Safety
    /// `ptr` must come from `alloc_workspace` of this same API object for the same `dev`, and not
    /// be freed yet; no one may use the memory after this call. (An implementation that overrides
    /// `alloc_workspace` must override this too.)
    unsafe fn free_workspace(&self, dev: DLDevice, ptr: *mut c_void) -> Result<()> {
        // SAFETY: the default `alloc_workspace` allocates with `alloc_data_space`, so by this
        // function's contract `ptr` came from there for `dev` and is not freed yet.
        unsafe { self.free_data_space(dev, ptr) }
    }
}

/// A device attribute's value, as TVM returns it.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Str(String),
    None,
}

const MAX_DEVICE_TYPES: usize = 64;

static DEVICE_APIS: [OnceCell<&'static dyn DeviceApi>; MAX_DEVICE_TYPES] =
    [const { OnceCell::new() }; MAX_DEVICE_TYPES];

static CPU: CpuDeviceApi = CpuDeviceApi::new();

/// Register the API for `device_type`; the first registration wins and lives forever.
pub fn register_device_api(device_type: i32, api: &'static dyn DeviceApi) -> Result<()> {
    let slot = usize::try_from(device_type)
        .ok()
        .and_then(|i| DEVICE_APIS.get(i))
        .ok_or_else(|| Error::value(format!("device type {device_type} is out of range")))?;
    slot.set(api).map_err(|_| Error::value(format!("a device API for device type {device_type} is already registered")))
}

/// The API serving `device_type`, or an error naming the device.
pub fn device_api(dev_type: i32) -> Result<&'static dyn DeviceApi> {
    if dev_type == device_type::CPU {
        return Ok(&CPU);
    }
    if let Some(api) = usize::try_from(dev_type).ok().and_then(|i| DEVICE_APIS.get(i)?.get()) {
        return Ok(*api);
    }
    let name = device_type::name(dev_type).unwrap_or("unknown");
    Err(Error::value(format!(
        "device type {dev_type} ({name}) is not supported by this runtime: no device API is registered for it"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Host memory served under another device type, counting the calls that reach it.
    struct HostBacked {
        cpu: CpuDeviceApi,
        allocs: AtomicUsize,
        frees: AtomicUsize,
        copies: AtomicUsize,
    }

    impl DeviceApi for HostBacked {
        fn alloc_data_space(
            &self,
            dev: DLDevice,
            nbytes: usize,
            alignment: usize,
            type_hint: DLDataType,
        ) -> Result<*mut c_void> {
            self.allocs.fetch_add(1, Ordering::SeqCst);
            self.cpu.alloc_data_space(dev, nbytes, alignment, type_hint)
        }
        unsafe fn free_data_space(&self, dev: DLDevice, ptr: *mut c_void) -> Result<()> {
            self.frees.fetch_add(1, Ordering::SeqCst);
            // SAFETY: forwarded contract; the memory came from the CPU API.
            unsafe { self.cpu.free_data_space(dev, ptr) }
        }
        unsafe fn copy_data_from_to(&self, from: TensorRef<'_>, to: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
            self.copies.fetch_add(1, Ordering::SeqCst);
            // SAFETY: forwarded contract.
            unsafe { self.cpu.copy_data_from_to(from, to, stream) }
        }
        fn create_stream(&self, dev: DLDevice) -> Result<StreamHandle> {
            self.cpu.create_stream(dev)
        }
        fn free_stream(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
            self.cpu.free_stream(dev, stream)
        }
        fn set_stream(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
            self.cpu.set_stream(dev, stream)
        }
        fn stream_sync(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
            self.cpu.stream_sync(dev, stream)
        }
        fn sync_stream_from_to(&self, dev: DLDevice, src: StreamHandle, dst: StreamHandle) -> Result<()> {
            self.cpu.sync_stream_from_to(dev, src, dst)
        }
        fn stream_query(&self, dev: DLDevice, stream: StreamHandle) -> Result<bool> {
            self.cpu.stream_query(dev, stream)
        }
        fn launch_host_task(&self, dev: DLDevice, stream: StreamHandle, task: HostTask) -> Result<()> {
            self.cpu.launch_host_task(dev, stream, task)
        }
        fn create_event(&self, dev: DLDevice) -> Result<EventHandle> {
            self.cpu.create_event(dev)
        }
        fn free_event(&self, dev: DLDevice, event: EventHandle) -> Result<()> {
            self.cpu.free_event(dev, event)
        }
        fn record_event(&self, dev: DLDevice, event: EventHandle, stream: StreamHandle) -> Result<()> {
            self.cpu.record_event(dev, event, stream)
        }
        fn stream_wait_event(&self, dev: DLDevice, stream: StreamHandle, event: EventHandle) -> Result<()> {
            self.cpu.stream_wait_event(dev, stream, event)
        }
        fn event_sync(&self, dev: DLDevice, event: EventHandle) -> Result<()> {
            self.cpu.event_sync(dev, event)
        }
        fn event_query(&self, dev: DLDevice, event: EventHandle) -> Result<bool> {
            self.cpu.event_query(dev, event)
        }
    }

    /// Registered for `ext_dev`, which no other test expects to be unsupported.
    static EXT: HostBacked = HostBacked {
        cpu: CpuDeviceApi::new(),
        allocs: AtomicUsize::new(0),
        frees: AtomicUsize::new(0),
        copies: AtomicUsize::new(0),
    };

    #[test]
    fn a_registered_api_serves_its_device_type() {
        let ext = DLDevice { device_type: device_type::EXT_DEV, device_id: 0 };
        register_device_api(device_type::EXT_DEV, &EXT).unwrap();

        let arr = NDArray::empty(&[4], DLDataType::FLOAT32, ext).unwrap();
        assert_eq!(EXT.allocs.load(Ordering::SeqCst), 1);
        assert_eq!(arr.device().device_type, device_type::EXT_DEV);
        assert_eq!(arr.data_ptr() as usize % ALLOC_ALIGNMENT, 0);

        let bytes: Vec<u8> = (1..=16).collect();
        let src = NDArray::from_bytes(&[4], DLDataType::FLOAT32, &bytes).unwrap();
        copy_from_to(src.tensor(), arr.tensor()).unwrap();
        let back = NDArray::empty(&[4], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        copy_from_to(arr.tensor(), back.tensor()).unwrap();
        assert_eq!(EXT.copies.load(Ordering::SeqCst), 2);
        assert_eq!(back.to_vec_u8().unwrap(), bytes);

        drop(arr);
        assert_eq!(EXT.frees.load(Ordering::SeqCst), 1);

        let again = register_device_api(device_type::EXT_DEV, &EXT).unwrap_err();
        assert!(again.message().contains("device type 12 is already registered"), "{}", again.message());
        for t in [MAX_DEVICE_TYPES as i32, -1] {
            let e = register_device_api(t, &EXT).unwrap_err();
            assert!(e.message().contains(&format!("device type {t} is out of range")), "{}", e.message());
        }

        assert!(std::ptr::addr_eq(device_api(device_type::CPU).unwrap(), &CPU));
        assert!(std::ptr::addr_eq(device_api(device_type::EXT_DEV).unwrap(), &EXT));
    }
}

/// What a [`DeviceHandle`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HandleKind {
    Stream,
    Event,
}

/// A stream or event of one device, owned: made by its device API and freed by it on drop.
/// The raw handle is a token only that API resolves, passed back to it through [`Self::raw`].
pub struct DeviceHandle {
    api: &'static dyn DeviceApi,
    dev: DLDevice,
    kind: HandleKind,
    raw: *mut c_void,
}

// SAFETY: `raw` is an opaque token that the device API (which is `Send + Sync`) resolves in its
// own thread-safe tables; nothing dereferences it, and a `DeviceHandle` never changes after it
// is made, so it may move to and be shared with other threads.
unsafe impl Send for DeviceHandle {}
// SAFETY: as above.
unsafe impl Sync for DeviceHandle {}

impl DeviceHandle {
    /// A new stream on `dev`.
    pub fn stream(dev: DLDevice) -> Result<DeviceHandle> {
        let api = device_api(dev.device_type)?;
        Ok(DeviceHandle { api, dev, kind: HandleKind::Stream, raw: api.create_stream(dev)? })
    }

    /// A new event on `dev`.
    pub fn event(dev: DLDevice) -> Result<DeviceHandle> {
        let api = device_api(dev.device_type)?;
        Ok(DeviceHandle { api, dev, kind: HandleKind::Event, raw: api.create_event(dev)? })
    }

    /// The handle to pass to the device API's calls.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Block the host until the stream's queued work, or the event's latest mark, is reached.
    pub fn synchronize(&self) -> Result<()> {
        match self.kind {
            HandleKind::Stream => self.api.stream_sync(self.dev, self.raw),
            HandleKind::Event => self.api.event_sync(self.dev, self.raw),
        }
    }
}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // Work already queued keeps what it needs (the device API's contract for both frees).
        let _ = match self.kind {
            HandleKind::Stream => self.api.free_stream(self.dev, self.raw),
            HandleKind::Event => self.api.free_event(self.dev, self.raw),
        };
    }
}
