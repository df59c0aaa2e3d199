//! OpenCL programs: the source of TVM's `opencl` module, built once per device (the build log
//! in the error when it fails), and its kernels launched with the work sizes TVM's launch tags
//! give (`blockIdx.*` the groups, `threadIdx.*` the work items of a group).

use super::symbols::{self, check, Handle};
use super::{buffer, current_stream, driver, release, OpenClDeviceApi};
use crate::abi::DLDevice;
use crate::runtime::base::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_void, CString};

/// An argument of a kernel launch.
pub enum KernelArg {
    /// Device memory: the device pointer a host function passes (a buffer descriptor).
    Buffer(*mut c_void),
    /// A scalar's bytes, as the kernel declares it: the first `.1` of `.0` (4 or 8).
    Scalar([u8; 8], usize),
}

impl KernelArg {
    /// A scalar argument of `bytes` (at most 8).
    pub fn scalar(bytes: &[u8]) -> KernelArg {
        let mut b = [0u8; 8];
        b[..bytes.len()].copy_from_slice(bytes);
        KernelArg::Scalar(b, bytes.len())
    }
}

/// Where a launch tag's value goes.
enum Tag {
    Groups(usize),
    Items(usize),
    LocalBytes,
}

fn tag(name: &str) -> Result<Tag> {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some(d) = name.strip_prefix("blockIdx.").and_then(dim) {
        return Ok(Tag::Groups(d));
    }
    if let Some(d) = name.strip_prefix("threadIdx.").and_then(dim) {
        return Ok(Tag::Items(d));
    }
    match name {
        "tir.use_dyn_shared_memory" | "tirx.use_dyn_shared_memory" => Ok(Tag::LocalBytes),
        _ => Err(Error::value(format!("launch tag \"{name}\" is not one the OpenCL runtime knows"))),
    }
}

/// A program's source and what is built from it per device.
pub struct Program {
    source: CString,
    built: Mutex<HashMap<i32, Handle>>,
    /// Kernel objects per (device, thread), by name: `clSetKernelArg` is not thread-safe.
    kernels: Mutex<HashMap<(i32, std::thread::ThreadId), HashMap<String, Handle>>>,
}

// SAFETY: OpenCL programs and kernels may be used from any thread; a kernel object is only
// used by the thread it was made for.
unsafe impl Send for Program {}
// SAFETY: as above.
unsafe impl Sync for Program {}

impl Program {
    pub fn new(source: &str) -> Result<Program> {
        let source = CString::new(source).map_err(|_| Error::value("an OpenCL program's source holds a NUL byte"))?;
        Ok(Program { source, built: Mutex::new(HashMap::new()), kernels: Mutex::new(HashMap::new()) })
    }

    /// The program built for `dev`, building it the first time.
    fn program(&self, dev: DLDevice) -> Result<Handle> {
        let mut built = self.built.lock();
        if let Some(&p) = built.get(&dev.device_id) {
            return Ok(p);
        }
        let drv = driver()?;
        let d = drv.device(dev.device_id)?;
        let mut status = 0;
        let text = self.source.as_ptr();
        // SAFETY: one NUL-terminated source string (a NULL length array: terminated strings).
        let p = unsafe { (drv.cl.create_program_with_source)(drv.context, 1, &text, std::ptr::null(), &mut status) };
        check("clCreateProgramWithSource", status)?;
        // SAFETY: the program just made, for one device of its context, no options.
        let status = unsafe { (drv.cl.build_program)(p, 1, &d.id, c"".as_ptr(), None, std::ptr::null_mut()) };
        if status != symbols::SUCCESS {
            let log = build_log(p, d.id);
            release(drv.cl.release_program, p);
            return Err(Error::value(format!(
                "building the OpenCL program for {dev} ({}) failed: {} ({status}); the compiler said:\n{log}",
                d.name,
                symbols::status_name(status)
            )));
        }
        built.insert(dev.device_id, p);
        Ok(p)
    }

    /// This thread's kernel object `name` for `dev`.
    fn kernel(&self, dev: DLDevice, name: &str) -> Result<Handle> {
        let key = (dev.device_id, std::thread::current().id());
        if let Some(&k) = self.kernels.lock().get(&key).and_then(|m| m.get(name)) {
            return Ok(k);
        }
        let program = self.program(dev)?;
        let cname = CString::new(name).map_err(|_| Error::value("a kernel name holds a NUL byte"))?;
        let mut status = 0;
        // SAFETY: a built program and a NUL-terminated name.
        let k = unsafe { (driver()?.cl.create_kernel)(program, cname.as_ptr(), &mut status) };
        check("clCreateKernel", status).map_err(|e| e.context(format!("kernel {name}")))?;
        self.kernels.lock().entry(key).or_default().insert(name.to_string(), k);
        Ok(k)
    }

    /// Launches kernel `name` on `dev` (on this thread's current stream for it) with `args`
    /// and one value per launch tag in `tags`.
    pub fn launch(&self, name: &str, dev: DLDevice, args: &[KernelArg], tags: &[(&str, i64)]) -> Result<()> {
        let (mut groups, mut items, mut local) = ([1usize; 3], [1usize; 3], None);
        let mut dims = 1;
        for (t, v) in tags {
            let v = usize::try_from(*v).map_err(|_| Error::value(format!("launch tag {t} is negative ({v})")))?;
            match tag(t)? {
                Tag::Groups(d) => (groups[d], dims) = (v, dims.max(d + 1)),
                Tag::Items(d) => (items[d], dims) = (v, dims.max(d + 1)),
                Tag::LocalBytes => local = Some(v),
            }
        }
        let k = self.kernel(dev, name)?;
        let cl = &driver()?.cl;
        for (i, a) in args.iter().enumerate() {
            let status = match a {
                KernelArg::Buffer(p) => {
                    let mem = buffer(*p, dev).map_err(|e| e.context(format!("argument {i} of kernel {name}")))?.mem;
                    // SAFETY: a live kernel of this thread; a `cl_mem` argument by value.
                    unsafe {
                        (cl.set_kernel_arg)(k, i as u32, std::mem::size_of::<Handle>(), (&mem as *const Handle).cast())
                    }
                }
                // SAFETY: as above; the scalar's bytes.
                KernelArg::Scalar(b, n) => unsafe { (cl.set_kernel_arg)(k, i as u32, *n, b.as_ptr().cast()) },
            };
            check("clSetKernelArg", status).map_err(|e| e.context(format!("argument {i} of kernel {name}")))?;
        }
        if let Some(bytes) = local {
            // SAFETY: as above; a `__local` argument of `bytes` bytes (no value).
            let status = unsafe { (cl.set_kernel_arg)(k, args.len() as u32, bytes, std::ptr::null()) };
            check("clSetKernelArg", status)?;
        }
        let global: Vec<usize> = (0..3).map(|d| groups[d] * items[d]).collect();
        let stream = current_stream(dev);
        let queue = OpenClDeviceApi.queue(dev, stream)?;
        OpenClDeviceApi.enqueued(dev, stream)?;
        // SAFETY: a live queue and kernel with every argument set; sizes for `dims` dimensions.
        // No event and no flush: the queue is flushed by whatever waits on it (a marker, a
        // blocking read, `clFinish`), as TVM's own OpenCL runtime leaves it.
        let status = unsafe {
            (cl.enqueue_nd_range_kernel)(
                queue,
                k,
                dims as u32,
                std::ptr::null(),
                global.as_ptr(),
                items.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        check("clEnqueueNDRangeKernel", status).map_err(|e| e.context(format!("launching kernel {name}")))
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let Ok(drv) = driver() else { return };
        for (_, k) in self.kernels.get_mut().drain().flat_map(|(_, m)| m) {
            release(drv.cl.release_kernel, k);
        }
        for (_, p) in self.built.get_mut().drain() {
            release(drv.cl.release_program, p);
        }
    }
}

/// The compiler's log of a failed build.
fn build_log(program: Handle, device: Handle) -> String {
    let Ok(drv) = driver() else { return String::new() };
    let mut n = 0usize;
    // SAFETY: counting the log's bytes.
    let status = unsafe {
        (drv.cl.get_program_build_info)(program, device, symbols::PROGRAM_BUILD_LOG, 0, std::ptr::null_mut(), &mut n)
    };
    if status != symbols::SUCCESS {
        return String::new();
    }
    let mut log = vec![0u8; n];
    // SAFETY: room for the log's `n` bytes.
    let status = unsafe {
        (drv.cl.get_program_build_info)(
            program,
            device,
            symbols::PROGRAM_BUILD_LOG,
            n,
            log.as_mut_ptr().cast(),
            std::ptr::null_mut(),
        )
    };
    if status != symbols::SUCCESS {
        return String::new();
    }
    String::from_utf8_lossy(&log).trim_end_matches('\0').trim().to_string()
}
