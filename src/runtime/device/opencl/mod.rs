//! `kDLOpenCL` (4): memory, copies, streams and events on OpenCL devices (see the device layer
//! in docs/ARCHITECTURE.md). The OpenCL library is opened on first use ([`driver`]); without it,
//! or without a platform, every call fails with an error naming what is missing.
//!
//! A device pointer is the address of a [`Buffer`] descriptor the runtime owns (its `cl_mem`,
//! size and device): host code passes device pointers through without reading them. Streams
//! are in-order queues (the NULL stream is the device's default queue, and calls on it are
//! done on return); events are markers on a queue. The live buffers, streams and events are
//! kept in sets, so a pointer or handle this runtime did not make (or already freed) is an
//! error naming it, never a crash.

mod driver;
mod program;
mod symbols;

pub use driver::driver;
pub use program::{KernelArg, Program};

use super::{Attr, DeviceApi, EventHandle, HostTask, StreamHandle};
use crate::abi::{device_type, DLDataType, DLDevice};
use crate::runtime::base::addr_map::AddrHash;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::TensorRef;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::ffi::c_void;
use symbols::{check, ClInt, Handle};

/// Device memory: what a device pointer addresses.
#[repr(C)]
pub struct Buffer {
    pub mem: Handle,
    pub size: usize,
    pub device: i32,
}

/// A stream: its queue, and the host stream its host tasks run on in order, with the queue
/// their own device work goes on (see [`OpenClDeviceApi::launch_host_task`]).
struct Stream {
    queue: Handle,
    device: i32,
    host: StreamHandle,
    tasks: Handle,
    counts: Counts,
}

/// How many commands a queue was given, and how many it is known to have done: `stream_query`
/// answers from them without an event per command (a marker only when work may be pending).
#[derive(Default)]
pub struct Counts {
    enqueued: std::sync::atomic::AtomicU64,
    settled: std::sync::atomic::AtomicU64,
}

impl Counts {
    fn enqueued(&self) {
        self.enqueued.fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// The commands given so far (read before waiting for them).
    fn given(&self) -> u64 {
        self.enqueued.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The first `n` commands are done.
    fn settled(&self, n: u64) {
        self.settled.fetch_max(n, std::sync::atomic::Ordering::AcqRel);
    }

    fn all_settled(&self) -> bool {
        self.settled.load(std::sync::atomic::Ordering::Acquire) >= self.given()
    }
}

/// An event: the marker last recorded, if any.
struct Event {
    mark: Mutex<Option<Handle>>,
}

/// The addresses of the live buffers, streams and events this runtime made (hashed as
/// addresses: a lookup on every kernel argument stays cheap).
static BUFFERS: Mutex<Option<HashSet<usize, AddrHash>>> = Mutex::new(None);
static STREAMS: Mutex<Option<HashSet<usize, AddrHash>>> = Mutex::new(None);
static EVENTS: Mutex<Option<HashSet<usize, AddrHash>>> = Mutex::new(None);

fn insert(set: &Mutex<Option<HashSet<usize, AddrHash>>>, at: usize) {
    set.lock().get_or_insert_with(Default::default).insert(at);
}

/// Takes `at` out of `set`; whether it was there.
fn remove(set: &Mutex<Option<HashSet<usize, AddrHash>>>, at: usize) -> bool {
    set.lock().as_mut().is_some_and(|s| s.remove(&at))
}

fn contains(set: &Mutex<Option<HashSet<usize, AddrHash>>>, at: usize) -> bool {
    set.lock().as_ref().is_some_and(|s| s.contains(&at))
}

/// How many OpenCL buffers are allocated now.
pub fn live_buffers() -> usize {
    BUFFERS.lock().as_ref().map_or(0, |s| s.len())
}

/// Whether OpenCL is usable here: the library opens and a platform with a device is found.
pub fn available() -> bool {
    driver().is_ok()
}

/// The OpenCL device whose memory `ptr` is, if it is this runtime's OpenCL memory.
pub fn device_of(ptr: *mut c_void) -> Option<i32> {
    // SAFETY: a live descriptor (checked in the set just before; freed only by
    // `free_data_space`, which callers do not race with a use of the memory).
    contains(&BUFFERS, ptr as usize).then(|| unsafe { (*(ptr as *const Buffer)).device })
}

/// The buffer a device pointer addresses, or an error naming it.
fn buffer<'a>(ptr: *mut c_void, dev: DLDevice) -> Result<&'a Buffer> {
    if !contains(&BUFFERS, ptr as usize) {
        return Err(Error::value(format!(
            "{ptr:p} is not OpenCL memory of this runtime (a host pointer where {dev} memory is required, or memory already freed)"
        )));
    }
    // SAFETY: a live descriptor made by `alloc_data_space` (freed only by `free_data_space`).
    let b = unsafe { &*(ptr as *const Buffer) };
    if b.device != dev.device_id {
        return Err(Error::value(format!("{ptr:p} is memory of opencl:{}, used as {dev}", b.device)));
    }
    Ok(b)
}

/// Releases an OpenCL object, ignoring the status (nothing more can be done about it).
fn release(f: unsafe extern "C" fn(Handle) -> i32, h: Handle) {
    // SAFETY: `h` is a live object of the kind `f` releases, released once.
    let _ = unsafe { f(h) };
}

/// The OpenCL device API.
pub struct OpenClDeviceApi;

/// The one instance, registered for `kDLOpenCL` by the runtime's initialisation.
pub static API: OpenClDeviceApi = OpenClDeviceApi;

impl OpenClDeviceApi {
    /// The queue of `stream` on `dev` (NULL: the device's default queue).
    fn queue(&self, dev: DLDevice, stream: StreamHandle) -> Result<Handle> {
        let d = driver()?.device(dev.device_id)?;
        if stream.is_null() {
            // Inside a host task, its stream's task queue stands for the NULL stream.
            return Ok(match IN_TASK.get() {
                Some((id, tasks)) if id == dev.device_id => tasks as Handle,
                _ => d.queue,
            });
        }
        Ok(self.stream(stream)?.queue)
    }

    fn stream(&self, stream: StreamHandle) -> Result<&Stream> {
        if !contains(&STREAMS, stream as usize) {
            return Err(Error::value(format!(
                "{stream:p} is not a live OpenCL stream of this runtime (freed already?)"
            )));
        }
        // SAFETY: a live stream made by `create_stream` (freed only by `free_stream`).
        Ok(unsafe { &*(stream as *const Stream) })
    }

    /// The command counts of the queue `stream` means on this thread (none inside a host task,
    /// whose queue is finished before the task ends).
    fn counts(&self, dev: DLDevice, stream: StreamHandle) -> Result<Option<&Counts>> {
        if !stream.is_null() {
            return Ok(Some(&self.stream(stream)?.counts));
        }
        if IN_TASK.get().is_some_and(|(id, _)| id == dev.device_id) {
            return Ok(None);
        }
        Ok(Some(&driver()?.device(dev.device_id)?.counts))
    }

    /// Counts one more command given to the queue `stream` means.
    pub(super) fn enqueued(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
        self.counts(dev, stream)?.map(Counts::enqueued);
        Ok(())
    }

    fn event(&self, event: EventHandle) -> Result<&Event> {
        if !contains(&EVENTS, event as usize) {
            return Err(Error::value(format!("{event:p} is not a live OpenCL event of this runtime (freed already?)")));
        }
        // SAFETY: a live event made by `create_event` (freed only by `free_event`).
        Ok(unsafe { &*(event as *const Event) })
    }

    /// A marker at the current end of `queue`'s work.
    fn marker(&self, queue: Handle) -> Result<Handle> {
        let cl = &driver()?.cl;
        let mut mark = std::ptr::null_mut();
        // SAFETY: a live queue; the marker event is written to `mark`.
        check("clEnqueueMarkerWithWaitList", unsafe {
            (cl.enqueue_marker_with_wait_list)(queue, 0, std::ptr::null(), &mut mark)
        })?;
        // SAFETY: a live queue.
        check("clFlush", unsafe { (cl.flush)(queue) })?;
        Ok(mark)
    }

    /// Makes `queue` wait for `events` (a barrier; nothing on the host waits).
    fn wait_on(&self, queue: Handle, events: &[Handle]) -> Result<()> {
        let cl = &driver()?.cl;
        // SAFETY: a live queue and live events; no event of the barrier's own.
        let status = unsafe {
            (cl.enqueue_barrier_with_wait_list)(queue, events.len() as u32, events.as_ptr(), std::ptr::null_mut())
        };
        check("clEnqueueBarrierWithWaitList", status)?;
        // SAFETY: a live queue.
        check("clFlush", unsafe { (cl.flush)(queue) })
    }

    /// Ends a call on the NULL stream (done on return) or starts a queued one.
    fn settle(&self, queue: Handle, stream: StreamHandle) -> Result<()> {
        let cl = &driver()?.cl;
        if stream.is_null() {
            // SAFETY: a live queue.
            return check("clFinish", unsafe { (cl.finish)(queue) });
        }
        // SAFETY: a live queue.
        check("clFlush", unsafe { (cl.flush)(queue) })
    }
}

impl DeviceApi for OpenClDeviceApi {
    fn alloc_data_space(
        &self,
        dev: DLDevice,
        nbytes: usize,
        _alignment: usize,
        _hint: DLDataType,
    ) -> Result<*mut c_void> {
        let drv = driver()?;
        let d = drv.device(dev.device_id)?;
        if nbytes as u64 > d.max_alloc {
            return Err(Error::value(format!(
                "cannot allocate {nbytes} bytes on {dev} ({}): its largest allocation is {} bytes (of {} in all)",
                d.name, d.max_alloc, d.global_mem
            )));
        }
        let mut status = 0;
        // SAFETY: the platform's context; a read-write buffer with no host pointer (OpenCL
        // buffers are aligned to the device's base address alignment, past any tensor's).
        let mem = unsafe {
            (drv.cl.create_buffer)(
                drv.context,
                symbols::MEM_READ_WRITE,
                nbytes.max(1),
                std::ptr::null_mut(),
                &mut status,
            )
        };
        check("clCreateBuffer", status).map_err(|e| e.context(format!("allocating {nbytes} bytes on {dev}")))?;
        let b = Box::into_raw(Box::new(Buffer { mem, size: nbytes, device: dev.device_id }));
        insert(&BUFFERS, b as usize);
        Ok(b.cast())
    }

    unsafe fn free_data_space(&self, dev: DLDevice, ptr: *mut c_void) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        buffer(ptr, dev)?;
        if !remove(&BUFFERS, ptr as usize) {
            return Err(Error::value(format!("{ptr:p} was freed twice")));
        }
        // SAFETY: the descriptor made by `alloc_data_space`, taken out of the live set just now.
        let b = unsafe { Box::from_raw(ptr as *mut Buffer) };
        // Queued work that uses the buffer keeps it alive (OpenCL counts its references).
        release(driver()?.cl.release_mem_object, b.mem);
        Ok(())
    }

    unsafe fn copy_data_from_to(&self, from: TensorRef<'_>, to: TensorRef<'_>, stream: StreamHandle) -> Result<()> {
        from.check_contiguous("the copy's source")?;
        to.check_contiguous("the copy's destination")?;
        let n = from.byte_size()?;
        let on_device = |t: &TensorRef<'_>| t.device().device_type == device_type::OPENCL;
        let dev = if on_device(&from) { from.device() } else { to.device() };
        let queue = self.queue(dev, stream)?;
        self.enqueued(dev, stream)?;
        let cl = &driver()?.cl;
        let blocking = stream.is_null() as u32;
        let event: *mut Handle = std::ptr::null_mut();
        let fits = |b: &Buffer, at: u64| {
            let end = (at as usize).checked_add(n).filter(|&e| e <= b.size);
            end.map(|_| ()).ok_or_else(|| {
                Error::value(format!("a copy of {n} bytes at offset {at} overruns a buffer of {} bytes", b.size))
            })
        };
        match (on_device(&from), on_device(&to)) {
            (false, true) => {
                let (b, at) = (buffer(to.raw().data, to.device())?, to.raw().byte_offset);
                fits(b, at)?;
                // SAFETY: `n` bytes of the host tensor (valid until the stream runs the copy,
                // by this function's contract) into the buffer's range checked above.
                let status = unsafe {
                    (cl.enqueue_write_buffer)(
                        queue,
                        b.mem,
                        blocking,
                        at as usize,
                        n,
                        from.data_addr(),
                        0,
                        std::ptr::null(),
                        event,
                    )
                };
                check("clEnqueueWriteBuffer", status)?;
            }
            (true, false) => {
                let (b, at) = (buffer(from.raw().data, from.device())?, from.raw().byte_offset);
                fits(b, at)?;
                // SAFETY: as above, from the buffer into the host tensor's `n` bytes.
                let status = unsafe {
                    (cl.enqueue_read_buffer)(
                        queue,
                        b.mem,
                        blocking,
                        at as usize,
                        n,
                        to.data_addr(),
                        0,
                        std::ptr::null(),
                        event,
                    )
                };
                check("clEnqueueReadBuffer", status)?;
            }
            _ if from.device() != to.device() => {
                return Err(Error::value(format!(
                    "cannot copy between {} and {}: one side must be the host",
                    from.device(),
                    to.device()
                )));
            }
            _ => {
                let (a, b) = (buffer(from.raw().data, from.device())?, buffer(to.raw().data, to.device())?);
                let (fa, fb) = (from.raw().byte_offset, to.raw().byte_offset);
                fits(a, fa)?;
                fits(b, fb)?;
                // SAFETY: two live buffers of one context, ranges checked above.
                let status = unsafe {
                    (cl.enqueue_copy_buffer)(
                        queue,
                        a.mem,
                        b.mem,
                        fa as usize,
                        fb as usize,
                        n,
                        0,
                        std::ptr::null(),
                        event,
                    )
                };
                check("clEnqueueCopyBuffer", status)?;
            }
        }
        if stream.is_null() && !(on_device(&from) && on_device(&to)) {
            return Ok(()); // a blocking read or write: done
        }
        self.settle(queue, stream)
    }

    fn create_stream(&self, dev: DLDevice) -> Result<StreamHandle> {
        let drv = driver()?;
        let queue = new_queue(dev)?;
        let tasks = match new_queue(dev) {
            Ok(q) => q,
            Err(e) => {
                release(drv.cl.release_command_queue, queue);
                return Err(e);
            }
        };
        let host = match super::device_api(device_type::CPU)?.create_stream(DLDevice::cpu(0)) {
            Ok(h) => h,
            Err(e) => {
                release(drv.cl.release_command_queue, queue);
                release(drv.cl.release_command_queue, tasks);
                return Err(e);
            }
        };
        let s =
            Box::into_raw(Box::new(Stream { queue, device: dev.device_id, host, tasks, counts: Counts::default() }));
        insert(&STREAMS, s as usize);
        Ok(s.cast())
    }

    fn free_stream(&self, _dev: DLDevice, stream: StreamHandle) -> Result<()> {
        if stream.is_null() {
            return Ok(());
        }
        if !remove(&STREAMS, stream as usize) {
            return Err(Error::value(format!("{stream:p} is not a live OpenCL stream of this runtime (freed twice?)")));
        }
        // SAFETY: made by `create_stream`, taken out of the live set just now.
        let s = unsafe { Box::from_raw(stream as *mut Stream) };
        // A released queue finishes the work queued on it before it goes.
        release(driver()?.cl.release_command_queue, s.queue);
        release(driver()?.cl.release_command_queue, s.tasks);
        CURRENT.with(|c| c.borrow_mut().retain(|_, v| *v != stream as usize));
        super::device_api(device_type::CPU)?.free_stream(DLDevice::cpu(0), s.host)
    }

    fn set_stream(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
        if !stream.is_null() && self.stream(stream)?.device != dev.device_id {
            return Err(Error::value(format!("{stream:p} is a stream of another OpenCL device than {dev}")));
        }
        CURRENT.with(|c| c.borrow_mut().insert(dev.device_id, stream as usize));
        Ok(())
    }

    fn stream_sync(&self, dev: DLDevice, stream: StreamHandle) -> Result<()> {
        let queue = self.queue(dev, stream)?;
        let counts = self.counts(dev, stream)?;
        let given = counts.map(Counts::given);
        // SAFETY: a live queue.
        check("clFinish", unsafe { (driver()?.cl.finish)(queue) })?;
        if let (Some(c), Some(n)) = (counts, given) {
            c.settled(n);
        }
        Ok(())
    }

    fn stream_query(&self, dev: DLDevice, stream: StreamHandle) -> Result<bool> {
        let queue = self.queue(dev, stream)?;
        let Some(counts) = self.counts(dev, stream)? else { return Ok(true) };
        if counts.all_settled() {
            return Ok(true);
        }
        // A marker after what was given (on an in-order queue, reached when that is done).
        let given = counts.given();
        let mark = self.marker(queue)?;
        let done = event_done(mark);
        release(driver()?.cl.release_event, mark);
        if matches!(done, Ok(true)) {
            counts.settled(given);
        }
        done
    }

    fn sync_stream_from_to(&self, dev: DLDevice, src: StreamHandle, dst: StreamHandle) -> Result<()> {
        let (from, to) = (self.queue(dev, src)?, self.queue(dev, dst)?);
        let mark = self.marker(from)?;
        let waited = self.enqueued(dev, dst).and_then(|()| self.wait_on(to, &[mark]));
        release(driver()?.cl.release_event, mark);
        waited
    }

    /// The task runs on the stream's host stream once the queue reaches it; the queue's later
    /// work waits for it through a user event, completed when the task returned *and* the device
    /// work it queued on the NULL stream (kernel launches, copies) finished: while it runs, that
    /// work goes on the stream's task queue (the queue itself waits behind the user event), so
    /// a stage after the task on any queue sees its results.
    fn launch_host_task(&self, dev: DLDevice, stream: StreamHandle, task: HostTask) -> Result<()> {
        let queue = self.queue(dev, stream)?;
        let cl = &driver()?.cl;
        if stream.is_null() {
            // SAFETY: a live queue.
            check("clFinish", unsafe { (cl.finish)(queue) })?;
            task();
            return Ok(());
        }
        let mark = self.marker(queue)?;
        let mut status = 0;
        // SAFETY: the platform's context.
        let gate = unsafe { (cl.create_user_event)(driver()?.context, &mut status) };
        if let Err(e) = check("clCreateUserEvent", status) {
            release(cl.release_event, mark);
            return Err(e);
        }
        if let Err(e) = self.enqueued(dev, stream).and_then(|()| self.wait_on(queue, &[gate])) {
            // SAFETY: the user event made above; completing it lets nothing wrong run.
            unsafe { (cl.set_user_event_status)(gate, symbols::COMPLETE) };
            release(cl.release_event, gate);
            release(cl.release_event, mark);
            return Err(e);
        }
        let s = self.stream(stream)?;
        // The task holds the task queue: the stream may be freed before its host stream runs it.
        // SAFETY: the live stream's queue.
        unsafe { (cl.retain_command_queue)(s.tasks) };
        let held = Gate { mark, gate, tasks: s.tasks, id: s.device, status: -14 };
        let run: HostTask = Box::new(move || held.run(task));
        super::device_api(device_type::CPU)?.launch_host_task(DLDevice::cpu(0), s.host, run)
    }

    /// TVM 0.18's OpenCL answers (`OpenCLWorkspace::GetAttr`): kExist for any index; for a
    /// device of the platform its work-group size, warp size 1 (`TVM_OPENCL_WARP_SIZE`), local
    /// memory, OpenCL version, name, clock in kHz, compute units, work-item sizes (a JSON list),
    /// API version 120, driver version, cache and global memory sizes.
    fn get_attr(&self, dev: DLDevice, kind: i64) -> Result<Attr> {
        let drv = driver();
        if kind == 0 {
            return Ok(Attr::Int(drv.is_ok_and(|d| d.device(dev.device_id).is_ok()) as i64));
        }
        let drv = drv?;
        let id = drv.device(dev.device_id)?.id;
        let cl = &drv.cl;
        let int = |param: u32| driver::device_info::<u64>(cl, id, param).map(|v| Attr::Int(v as i64));
        let uint = |param: u32| driver::device_info::<u32>(cl, id, param).map(|v| v as i64);
        let text = |param: u32| {
            // SAFETY: the property into the buffer `info_string` sizes.
            driver::info_string(|n, p, r| unsafe { (cl.get_device_info)(id, param, n, p, r) }, "clGetDeviceInfo")
        };
        Ok(match kind {
            1 => int(0x1004)?, // CL_DEVICE_MAX_WORK_GROUP_SIZE (size_t)
            2 => Attr::Int(std::env::var("TVM_OPENCL_WARP_SIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(1)),
            3 => int(0x1023)?, // CL_DEVICE_LOCAL_MEM_SIZE
            4 => {
                let version = text(0x102F)?; // CL_DEVICE_VERSION: "OpenCL 1.2 <vendor>"
                Attr::Str(version.split(' ').nth(1).unwrap_or_default().to_string())
            }
            5 => Attr::Str(text(symbols::DEVICE_NAME)?),
            6 => Attr::Int(uint(0x100C)? * 1000), // CL_DEVICE_MAX_CLOCK_FREQUENCY, MHz -> kHz
            7 => Attr::Int(uint(0x1002)?),        // CL_DEVICE_MAX_COMPUTE_UNITS
            8 => {
                let dims = driver::device_info::<[usize; 3]>(cl, id, 0x1005)?; // CL_DEVICE_MAX_WORK_ITEM_SIZES
                Attr::Str(format!("[{}, {}, {}]", dims[0], dims[1], dims[2]))
            }
            11 => Attr::Int(120),
            12 => Attr::Str(text(0x102D)?), // CL_DRIVER_VERSION
            13 => int(0x101E)?,             // CL_DEVICE_GLOBAL_MEM_CACHE_SIZE
            14 => int(symbols::DEVICE_GLOBAL_MEM_SIZE)?,
            _ => Attr::None,
        })
    }

    fn create_event(&self, _dev: DLDevice) -> Result<EventHandle> {
        driver()?;
        let e = Box::into_raw(Box::new(Event { mark: Mutex::new(None) }));
        insert(&EVENTS, e as usize);
        Ok(e.cast())
    }

    fn free_event(&self, _dev: DLDevice, event: EventHandle) -> Result<()> {
        if !remove(&EVENTS, event as usize) {
            return Err(Error::value(format!("{event:p} is not a live OpenCL event of this runtime (freed twice?)")));
        }
        // SAFETY: made by `create_event`, taken out of the live set just now.
        let e = unsafe { Box::from_raw(event as *mut Event) };
        if let Some(mark) = e.mark.lock().take() {
            release(driver()?.cl.release_event, mark);
        }
        Ok(())
    }

    fn record_event(&self, dev: DLDevice, event: EventHandle, stream: StreamHandle) -> Result<()> {
        let e = self.event(event)?;
        let mark = self.marker(self.queue(dev, stream)?)?;
        if let Some(old) = e.mark.lock().replace(mark) {
            release(driver()?.cl.release_event, old);
        }
        Ok(())
    }

    fn stream_wait_event(&self, dev: DLDevice, stream: StreamHandle, event: EventHandle) -> Result<()> {
        let e = self.event(event)?;
        let Some(mark) = *e.mark.lock() else { return Ok(()) };
        if stream.is_null() {
            return self.event_sync(dev, event);
        }
        self.enqueued(dev, stream)?;
        self.wait_on(self.queue(dev, stream)?, &[mark])
    }

    fn event_sync(&self, _dev: DLDevice, event: EventHandle) -> Result<()> {
        let Some(mark) = *self.event(event)?.mark.lock() else { return Ok(()) };
        // SAFETY: the event's live marker.
        check("clWaitForEvents", unsafe { (driver()?.cl.wait_for_events)(1, &mark) })
    }

    fn event_query(&self, _dev: DLDevice, event: EventHandle) -> Result<bool> {
        match *self.event(event)?.mark.lock() {
            Some(mark) => event_done(mark),
            None => Ok(true),
        }
    }
}

/// Whether an OpenCL event has completed (an error when its command failed).
fn event_done(mark: Handle) -> Result<bool> {
    let mut state: i32 = 1;
    // SAFETY: a live event; the status is an `cl_int`.
    let status = unsafe {
        (driver()?.cl.get_event_info)(
            mark,
            symbols::EVENT_COMMAND_EXECUTION_STATUS,
            4,
            (&mut state as *mut i32).cast(),
            std::ptr::null_mut(),
        )
    };
    check("clGetEventInfo", status)?;
    if state < 0 {
        return Err(Error::value(format!("an OpenCL command failed: {} ({state})", symbols::status_name(state))));
    }
    Ok(state == symbols::COMPLETE)
}

/// What a host task of `launch_host_task` holds: the marker it waits for (the queue reached the
/// task), the user event the queue's later work waits on, and the stream's task queue (retained
/// for it) on device `id`. Dropped, it completes the user event (with an error status unless the
/// task ran and its device work finished, which fails the work waiting on it too) and releases
/// all three, whether the task ran or was dropped unrun.
struct Gate {
    mark: Handle,
    gate: Handle,
    tasks: Handle,
    id: i32,
    status: ClInt,
}

// SAFETY: OpenCL handles may be used from any thread.
unsafe impl Send for Gate {}

impl Gate {
    /// Wait for the marker, run `task` with the NULL stream of the device meaning the task queue,
    /// then finish that queue.
    fn run(mut self, task: HostTask) {
        let Ok(drv) = driver() else { return };
        // SAFETY: the marker made by `launch_host_task`, waited for once.
        self.status = unsafe { (drv.cl.wait_for_events)(1, &self.mark) };
        if self.status == symbols::SUCCESS {
            let outer = IN_TASK.replace(Some((self.id, self.tasks as usize)));
            task();
            IN_TASK.set(outer);
            // SAFETY: the stream's task queue, retained for this task.
            self.status = unsafe { (drv.cl.finish)(self.tasks) };
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let Ok(drv) = driver() else { return };
        let done = if self.status == symbols::SUCCESS { symbols::COMPLETE } else { -14 };
        // SAFETY: the user event made by `launch_host_task`, completed once.
        unsafe { (drv.cl.set_user_event_status)(self.gate, done) };
        release(drv.cl.release_event, self.gate);
        release(drv.cl.release_event, self.mark);
        release(drv.cl.release_command_queue, self.tasks);
    }
}

/// A new in-order queue on `dev`.
fn new_queue(dev: DLDevice) -> Result<Handle> {
    let drv = driver()?;
    let d = drv.device(dev.device_id)?;
    let mut status = 0;
    // SAFETY: a device of the context; an in-order queue.
    let queue = unsafe { (drv.cl.create_command_queue)(drv.context, d.id, 0, &mut status) };
    check("clCreateCommandQueue", status)?;
    Ok(queue)
}

thread_local! {
    /// The device id and task queue of the host task this thread is running, if any.
    static IN_TASK: std::cell::Cell<Option<(i32, usize)>> = const { std::cell::Cell::new(None) };
    /// This thread's current stream per OpenCL device (`TVMSetStream`).
    static CURRENT: std::cell::RefCell<std::collections::HashMap<i32, usize>> = Default::default();
}

/// This thread's current stream for `dev` (NULL: the default queue).
pub fn current_stream(dev: DLDevice) -> StreamHandle {
    CURRENT.with(|c| c.borrow().get(&dev.device_id).copied().unwrap_or(0) as StreamHandle)
}

#[cfg(test)]
mod tests {
    /// The device layer's tests on a platform are tests/opencl.rs.
    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let err =
            super::symbols::Symbols::open_from(&["/nonexistent/libOpenCL.so.1".into()]).err().expect("no library");
        assert!(err.to_string().contains("/nonexistent/libOpenCL.so.1"), "{err}");
        assert!(err.to_string().contains("OpenCL is not available"), "{err}");
    }
}
