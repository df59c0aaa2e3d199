//! Thin wrappers over the runtime's C API for the demo: only the exported `TVM*` functions,
//! called exactly as a C program would (raw handles, status codes, `TVMGetLastError`).
//!
//! Shared by `examples/demo.rs` and `tests/demo.rs` through `#[path = "..."] mod capi;`.
#![allow(dead_code)]

use std::ffi::{c_void, CStr, CString};
use std::path::Path;
use tvm_runtime::abi::{DLDataType, DLDevice, DLTensor};
use tvm_runtime::ffi::graph_executor::buckets::{
    TVMGraphExecutorCreateBucketed, TVMGraphExecutorCreateBucketedFromManifest, TVMGraphExecutorGetCurrentBucket,
};
use tvm_runtime::ffi::graph_executor::{
    TVMGraphExecutor, TVMGraphExecutorCreate, TVMGraphExecutorCreateFromFactory, TVMGraphExecutorFree,
    TVMGraphExecutorGetOutput, TVMGraphExecutorGetOutputInfo, TVMGraphExecutorLoadParams, TVMGraphExecutorProfile,
    TVMGraphExecutorRun, TVMGraphExecutorSetInput, TVMTensorInfo,
};
use tvm_runtime::ffi::legacy::error::TVMGetLastError;
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncFree, TVMFuncGetGlobal};
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModLoadFromFile};
use tvm_runtime::graph::runner::OpTiming;

/// One op of a profile trace (a Chrome trace "X" event; times in microseconds).
fn op_timing(e: &serde_json::Value) -> Result<OpTiming, String> {
    let ns =
        |key: &str| e[key].as_f64().map(|us| (us * 1000.0).round() as u64).ok_or(format!("profile trace: no {key}"));
    Ok(OpTiming {
        node_id: e["args"]["node_id"].as_u64().ok_or("profile trace: no node_id")? as u32,
        name: e["name"].as_str().unwrap_or_default().to_string(),
        func_name: e["args"]["func_name"].as_str().unwrap_or_default().to_string(),
        start_ns: ns("ts")?,
        duration_ns: ns("dur")?,
        lane: e["tid"].as_u64().unwrap_or(1).saturating_sub(1) as u32,
    })
}

/// The thread's last error message (`TVMGetLastError`).
pub fn last_error() -> String {
    let p = TVMGetLastError();
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the runtime returns a NUL-terminated string valid until the next failing call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Ok for status 0, else the error naming the call and the runtime's message.
pub fn check(rc: i32, what: &str) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed (status {rc}): {}", last_error()))
    }
}

/// Threads the runtime runs parallel kernels on (global function `runtime.NumThreads`).
pub fn num_threads() -> Result<i64, String> {
    let mut f: *mut c_void = std::ptr::null_mut();
    // SAFETY: C string and out-pointer valid.
    check(unsafe { TVMFuncGetGlobal(c"runtime.NumThreads".as_ptr(), &mut f) }, "TVMFuncGetGlobal")?;
    if f.is_null() {
        return Err("global function runtime.NumThreads is not registered".into());
    }
    let mut ret = tvm_runtime::abi::TVMValue::null();
    let mut code = 0;
    // SAFETY: live function handle; no arguments; out-pointers valid.
    let rc = unsafe { TVMFuncCall(f, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut ret, &mut code) };
    let result = check(rc, "calling runtime.NumThreads").map(|_| unsafe { ret.v_int64 });
    // SAFETY: the handle from TVMFuncGetGlobal is owned and freed once.
    unsafe { TVMFuncFree(f) };
    result
}

/// A compact float32 CPU tensor over `data`, as a C caller would describe a host buffer.
pub fn tensor(data: *mut f32, shape: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data as *mut c_void,
        device: DLDevice::cpu(0),
        ndim: shape.len() as i32,
        dtype: DLDataType::FLOAT32,
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

/// A module handle from `TVMModLoadFromFile` (freed with `TVMModFree`).
pub struct Library(*mut c_void);

// SAFETY: module handles may be used and freed from any thread.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

impl Library {
    /// Load a `.so` written by export_library (or by `model::build`): the root module is the
    /// `GraphExecutorFactory`.
    pub fn load(path: &Path) -> Result<Library, String> {
        let p = CString::new(path.to_str().ok_or("non-UTF-8 path")?).map_err(|e| e.to_string())?;
        let mut m: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid C strings and out-pointer.
        check(unsafe { TVMModLoadFromFile(p.as_ptr(), c"".as_ptr(), &mut m) }, "TVMModLoadFromFile")?;
        Ok(Library(m))
    }

    pub fn handle(&self) -> *mut c_void {
        self.0
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from TVMModLoadFromFile and is freed once.
        let rc = unsafe { TVMModFree(self.0) };
        if rc != 0 {
            eprintln!("TVMModFree failed: {}", last_error());
        }
    }
}

/// A graph executor from `TVMGraphExecutorCreateFromFactory` (freed with `TVMGraphExecutorFree`).
pub struct Executor(*mut TVMGraphExecutor);

// SAFETY: an executor may move between threads; it is used by one thread at a time (&mut self).
unsafe impl Send for Executor {}

impl Executor {
    /// A new executor on CPU 0, with the factory's weights.
    pub fn new(factory: &Library) -> Result<Executor, String> {
        let dev = DLDevice::cpu(0);
        let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
        // SAFETY: live module handle, one device, valid out-pointer.
        check(
            unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &dev, 1, &mut g) },
            "TVMGraphExecutorCreateFromFactory",
        )?;
        Ok(Executor(g))
    }

    /// A new executor on CPU 0 from graph JSON and a module holding the kernels (searched with
    /// its imports), without weights: load them with [`Executor::load_params`].
    pub fn from_graph(graph_json: &str, kernels: &Library) -> Result<Executor, String> {
        let json = CString::new(graph_json).map_err(|e| e.to_string())?;
        let dev = DLDevice::cpu(0);
        let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
        // SAFETY: C string, live module handle, one device, valid out-pointer.
        check(unsafe { TVMGraphExecutorCreate(json.as_ptr(), kernels.0, &dev, 1, &mut g) }, "TVMGraphExecutorCreate")?;
        Ok(Executor(g))
    }

    /// A bucketed executor on CPU 0 over the versions in `factories` (`options` as for
    /// `TVMGraphExecutorCreateBucketed`).
    pub fn bucketed(factories: &[&Library], options: Option<&str>) -> Result<Executor, String> {
        let handles: Vec<*mut c_void> = factories.iter().map(|f| f.0).collect();
        let options = options.map(|o| CString::new(o).expect("options without NUL"));
        let opts = options.as_ref().map_or(std::ptr::null(), |o| o.as_ptr());
        let dev = DLDevice::cpu(0);
        let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
        // SAFETY: live module handles, one device, options NULL or a C string, valid out-pointer.
        let rc =
            unsafe { TVMGraphExecutorCreateBucketed(handles.as_ptr(), handles.len() as u32, &dev, 1, opts, &mut g) };
        check(rc, "TVMGraphExecutorCreateBucketed")?;
        Ok(Executor(g))
    }

    /// A bucketed executor on CPU 0 over the versions a manifest file lists.
    pub fn bucketed_from_manifest(manifest: &Path) -> Result<Executor, String> {
        let path = CString::new(manifest.to_str().ok_or("manifest path is not UTF-8")?).map_err(|e| e.to_string())?;
        let dev = DLDevice::cpu(0);
        let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
        // SAFETY: C string, one device, no options, valid out-pointer.
        let rc =
            unsafe { TVMGraphExecutorCreateBucketedFromManifest(path.as_ptr(), &dev, 1, std::ptr::null(), &mut g) };
        check(rc, "TVMGraphExecutorCreateBucketedFromManifest")?;
        Ok(Executor(g))
    }

    /// The bucket a bucketed executor's inputs picked.
    pub fn current_bucket(&self) -> Result<u32, String> {
        let mut b = 0u32;
        // SAFETY: live executor, valid out-pointer.
        check(unsafe { TVMGraphExecutorGetCurrentBucket(self.0, &mut b) }, "TVMGraphExecutorGetCurrentBucket")?;
        Ok(b)
    }

    /// The shape of output `index` (after a run of a bucketed executor: its true shape).
    pub fn output_shape(&self, index: i32) -> Result<Vec<i64>, String> {
        // SAFETY: all-zero is a valid value of this plain C struct; filled by the call below.
        let mut info: TVMTensorInfo = unsafe { std::mem::zeroed() };
        // SAFETY: live executor, valid out-pointer; the shape lives as long as the executor.
        check(unsafe { TVMGraphExecutorGetOutputInfo(self.0, index, &mut info) }, "TVMGraphExecutorGetOutputInfo")?;
        // SAFETY: `ndim` extents at `shape`, owned by the executor.
        Ok(unsafe { std::slice::from_raw_parts(info.shape, info.ndim as usize) }.to_vec())
    }

    /// Copy the weights of a params blob (TVM's format) into the matching inputs.
    pub fn load_params(&mut self, blob: &[u8]) -> Result<(), String> {
        // SAFETY: live executor; `blob` readable for its length.
        check(
            unsafe { TVMGraphExecutorLoadParams(self.0, blob.as_ptr() as *const c_void, blob.len()) },
            "TVMGraphExecutorLoadParams",
        )
    }

    /// Copy `data` (shape `shape`) into the input called `name`.
    pub fn set_input(&mut self, name: &str, data: &[f32], shape: &[i64]) -> Result<(), String> {
        assert_eq!(data.len() as i64, shape.iter().product::<i64>());
        let name = CString::new(name).map_err(|e| e.to_string())?;
        let mut shape = shape.to_vec();
        // The runtime only reads through `data` for a copy-in.
        let t = tensor(data.as_ptr() as *mut f32, &mut shape);
        // SAFETY: live executor; C string and tensor valid for the call.
        check(unsafe { TVMGraphExecutorSetInput(self.0, name.as_ptr(), &t) }, "TVMGraphExecutorSetInput")
    }

    pub fn run(&mut self) -> Result<(), String> {
        // SAFETY: live executor.
        check(unsafe { TVMGraphExecutorRun(self.0) }, "TVMGraphExecutorRun")
    }

    /// Copy output `index` (shape `shape`) into `out`.
    pub fn get_output(&mut self, index: i32, out: &mut [f32], shape: &[i64]) -> Result<(), String> {
        assert_eq!(out.len() as i64, shape.iter().product::<i64>());
        let mut shape = shape.to_vec();
        let mut t = tensor(out.as_mut_ptr(), &mut shape);
        // SAFETY: live executor; tensor valid for the call.
        check(unsafe { TVMGraphExecutorGetOutput(self.0, index, &mut t) }, "TVMGraphExecutorGetOutput")
    }

    /// Run once timing every op: `TVMGraphExecutorProfile`'s Chrome trace, read back.
    pub fn profile_run(&mut self) -> Result<Vec<OpTiming>, String> {
        let mut s: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: live executor and out-pointer; the text lives until the next profile call.
        check(unsafe { TVMGraphExecutorProfile(self.0, 1, &mut s) }, "TVMGraphExecutorProfile")?;
        // SAFETY: on success `s` is the executor's NUL-terminated text, read before the next call.
        let text = unsafe { CStr::from_ptr(s) }.to_string_lossy();
        let trace: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("profile trace: {e}"))?;
        let events = trace["traceEvents"].as_array().ok_or("profile trace: no traceEvents")?;
        events.iter().filter(|e| e["ph"] == "X").map(op_timing).collect()
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // SAFETY: the handle came from a create call and is freed once.
        let rc = unsafe { TVMGraphExecutorFree(self.0) };
        if rc != 0 {
            eprintln!("TVMGraphExecutorFree failed: {}", last_error());
        }
    }
}
