//! Our graph-executor C API (`TVMGraphExecutor*`) and aliases with the names of TVM's microTVM
//! CRT graph executor, so code written for either links against this library.
//!
//! Ownership and threading: an executor is created by `TVMGraphExecutorCreate*` and owned by
//! the caller until `TVMGraphExecutorFree`; it keeps its module and weights alive. One executor
//! serves one thread at a time: a call while another thread is inside a call on the same
//! executor fails (it does not block). Create one executor per thread; executors created from
//! one factory share kernels and weights. Tensors passed in are borrowed for the call only,
//! except with the zero-copy calls, where the caller keeps the memory alive while the executor
//! uses it. Names and shapes returned by the info calls live as long as the executor. The
//! asynchronous phases (`...Async`, `TVMGraphExecutorSynchronize`) are in `graph_phases.rs`.

use super::ptr::{out_param, slice};
use crate::abi::{DLDataType, DLDevice, DLTensor};
use crate::graph::deps::OpGraph;
use crate::graph::factory::GraphExecutorFactory;
use crate::graph::memory_plan::build_plan;
use crate::graph::options::ExecutorOptions;
use crate::graph::profile::{chrome_trace, profile_table};
use crate::graph::{Engine, ExecutorFront, Graph, Key, TensorInfo};
use crate::runtime::error::{set_last_error, Error, Result};
use crate::runtime::handles::HandleTable;
use crate::runtime::module::Module;
use crate::runtime::tensor::TensorRef;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::{Arc, Mutex};

/// An executor handle (opaque to C): the shared front, plus what C needs to outlive a call.
pub struct TVMGraphExecutor {
    pub(super) engine: Engine,
    /// NUL-terminated input and output names handed out by the info calls.
    input_names: Vec<CString>,
    output_names: Vec<CString>,
    /// Owned text returned by the profiling calls.
    text: Mutex<CString>,
}

/// Description of an input or output tensor. Pointers live as long as the executor. For a
/// bucketed executor the shape is the current request's (the last `SetInput` of that input, the
/// last `Run` for an output; the largest bucket's before any): the values behind `shape` follow
/// it, the pointer stays valid.
#[repr(C)]
pub struct TVMTensorInfo {
    /// Input node name, or output name (`node` or `node:k` for output k > 0 of a node).
    pub name: *const c_char,
    pub ndim: i32,
    pub shape: *const i64,
    pub dtype: DLDataType,
    /// Bytes of the tensor's data.
    pub nbytes: usize,
    /// Non-zero for inputs that are weights (params) rather than data.
    pub is_param: i32,
}

/// Live executors by handle address. A call holds its own reference for its duration, so a
/// freed or foreign handle is an error instead of a crash, even when another thread frees the
/// executor during the call.
static LIVE: HandleTable<TVMGraphExecutor> = HandleTable::new();

pub(super) fn handle(g: *const TVMGraphExecutor) -> Result<Arc<TVMGraphExecutor>> {
    if g.is_null() {
        return Err(Error::value("argument `g` (graph executor) is NULL"));
    }
    LIVE.get(g).ok_or_else(|| {
        Error::value(format!("graph executor {g:p} is not live (freed already, or not created by this runtime)"))
    })
}

/// A C string of `s` (names cannot hold NUL in C: any are dropped).
fn c_name(s: &str) -> CString {
    CString::new(s.replace('\0', "")).expect("NULs removed")
}

pub(super) fn publish(engine: Engine) -> Result<*mut TVMGraphExecutor> {
    let (input_names, output_names) = {
        let e = engine.lock()?;
        let inputs = (0..e.num_inputs()).map(|i| Ok(c_name(&e.input_info(i)?.name))).collect::<Result<_>>()?;
        let outputs = (0..e.num_outputs()).map(|i| Ok(c_name(&e.output_info(i)?.name))).collect::<Result<_>>()?;
        (inputs, outputs)
    };
    let g = Arc::new(TVMGraphExecutor { input_names, output_names, engine, text: Mutex::new(CString::default()) });
    Ok(LIVE.insert(g))
}

/// # Safety
/// `devices` must hold `n` devices when `n > 0`.
pub(super) unsafe fn device_list<'a>(devices: *const DLDevice, n: u32) -> Result<&'a [DLDevice]> {
    if n == 0 {
        return Err(Error::value("`num_devices` is 0: at least one device is required"));
    }
    // SAFETY: forwarded contract.
    unsafe { slice(devices, n as usize, "devices") }
}

/// Create an executor from graph JSON and the module holding its kernels. Weights are loaded
/// afterwards with `TVMGraphExecutorLoadParams`.
///
/// # Safety
/// `graph_json` must be NULL (an error) or a NUL-terminated string; `module` NULL (an error) or a
/// live object handle of this runtime (its type is checked); `devices` must point to `num_devices`
/// devices; `out` must be NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreate(
    graph_json: *const c_char,
    module: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreate", {
        // SAFETY: C arguments per the contract above; no options (TVM's behaviour).
        let out = unsafe { out_param(out, "out")? };
        *out = unsafe { create_from_json(graph_json, module, devices, num_devices, std::ptr::null())? };
        Ok(0)
    })
}

/// Create an executor from a `GraphExecutorFactory` module (what `TVMModLoadFromFile` returns
/// for a library packed by `export_library`), with its weights. All executors created from one
/// factory for the same devices share kernels and one copy of the weights.
///
/// # Safety
/// `factory` must be NULL (an error) or a live object handle of this runtime (its type is checked);
/// `devices` must point to `num_devices` devices; `out` must be NULL (an error) or valid for
/// writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreateFromFactory(
    factory: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreateFromFactory", {
        // SAFETY: C arguments per the contract above; no options (TVM's behaviour).
        let out = unsafe { out_param(out, "out")? };
        *out = unsafe { create_from_factory(factory, devices, num_devices, std::ptr::null())? };
        Ok(0)
    })
}

/// The body of `TVMGraphExecutorCreate` / `...WithOptions` (NULL options: the defaults, which
/// make a plain sequential executor on TVM's storage plan).
///
/// # Safety
/// The C arguments as those functions' contracts say.
unsafe fn create_from_json(
    graph_json: *const c_char,
    module: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
) -> Result<*mut TVMGraphExecutor> {
    // SAFETY: forwarded contract.
    let json = unsafe { c_str!(graph_json)? };
    let module = unsafe { super::module::module_arg(module, "module")? };
    let devices = unsafe { device_list(devices, num_devices)? };
    let options = unsafe { executor_options(options)? };
    let plan = build_plan(Graph::parse(json)?, module, devices, options.memory_plan)?;
    publish(Engine::Plain(ExecutorFront::create(Arc::new(plan), &options)?))
}

/// The body of `TVMGraphExecutorCreateFromFactory` / `...WithOptions`.
///
/// # Safety
/// The C arguments as those functions' contracts say.
unsafe fn create_from_factory(
    factory: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
) -> Result<*mut TVMGraphExecutor> {
    // SAFETY: forwarded contract.
    let m: Module = unsafe { super::module::module_arg(factory, "factory")? };
    let devices = unsafe { device_list(devices, num_devices)? };
    let options = unsafe { executor_options(options)? };
    let plan = GraphExecutorFactory::of(&m)?.plan_with(&m, devices, options.memory_plan)?;
    publish(Engine::Plain(ExecutorFront::create(plan, &options)?))
}

/// Executor options from a C string (NULL: the defaults).
///
/// # Safety
/// `options` must be NULL or a NUL-terminated string.
unsafe fn executor_options(options: *const c_char) -> Result<ExecutorOptions> {
    // SAFETY: forwarded contract.
    let text = unsafe { super::options_arg(options)? };
    ExecutorOptions::parse(text).map_err(|e| e.context("executor options"))
}

/// As `TVMGraphExecutorCreate`, with options: NULL or `"key=value,..."` with keys
/// `inter_op_threads` (workers running independent ops at once; default 1, as TVM),
/// `intra_op_threads` (threads each kernel's parallel loops use; default: the cores divided among
/// the workers) and `memory_plan` (`tvm`: the compiled storage plan, fewest bytes; `parallel`:
/// buffers shared only between ops ordered by data, so branches can overlap). Unknown keys and
/// bad values are errors naming the key. Results are bit-identical to a sequential run.
///
/// # Safety
/// As `TVMGraphExecutorCreate`; `options` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreateWithOptions(
    graph_json: *const c_char,
    module: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreateWithOptions", {
        // SAFETY: C arguments per the contract above.
        let out = unsafe { out_param(out, "out")? };
        *out = unsafe { create_from_json(graph_json, module, devices, num_devices, options)? };
        Ok(0)
    })
}

/// As `TVMGraphExecutorCreateFromFactory`, with options as for
/// `TVMGraphExecutorCreateWithOptions`. Executors of one factory share one copy of the weights
/// whatever their options.
///
/// # Safety
/// As `TVMGraphExecutorCreateFromFactory`; `options` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorCreateFromFactoryWithOptions(
    factory: *mut c_void,
    devices: *const DLDevice,
    num_devices: u32,
    options: *const c_char,
    out: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorCreateFromFactoryWithOptions", {
        // SAFETY: C arguments per the contract above.
        let out = unsafe { out_param(out, "out")? };
        *out = unsafe { create_from_factory(factory, devices, num_devices, options)? };
        Ok(0)
    })
}

/// Copy weights from a params blob (TVM's format) into the matching inputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be readable
/// for `size` bytes (NULL allowed when `size` is 0) during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorLoadParams(
    g: *mut TVMGraphExecutor,
    data: *const c_void,
    size: usize,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorLoadParams", {
        let g = handle(g)?;
        // SAFETY: `data` holds `size` bytes (caller contract).
        let blob = unsafe { slice(data as *const u8, size, "data")? };
        g.engine.lock()?.load_params(blob)?;
        Ok(0)
    })
}

/// Copy `data` into the input named `name` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `data` NULL (an error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInput(
    g: *mut TVMGraphExecutor,
    name: *const c_char,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInput", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        // SAFETY: C string valid for the call (caller contract).
        let name = unsafe { c_str!(name)? };
        let mut e = g.engine.lock()?;
        let i = e.input(Key::Name(name))?;
        e.set_input(i, data)?;
        Ok(0)
    })
}

/// Copy `data` into input `index` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInputByIndex(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInputByIndex", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.engine.lock()?;
        let i = e.input(Key::Index(index.into()))?;
        e.set_input(i, data)?;
        Ok(0)
    })
}

/// Use the caller's memory for input `index` (64-byte aligned; kept alive by the caller).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` whose memory stays valid for reads and writes, and is written by no
/// one else, until the input is set again or the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetInputZeroCopy(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetInputZeroCopy", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.engine.plain("TVMGraphExecutorSetInputZeroCopy")?.lock()?;
        let i = e.input(Key::Index(index.into()))?;
        // SAFETY: the caller keeps the memory alive while the executor uses it (C contract).
        unsafe { e.set_input_zero_copy(i, data)? };
        Ok(0)
    })
}

/// Write output `index` straight into the caller's memory on every run.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `data` must be NULL (an
/// error) or a valid `DLTensor` whose memory stays valid for reads and writes until the output is
/// set again or the executor is freed; no one else may read or write it during a run.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorSetOutputZeroCopy(
    g: *mut TVMGraphExecutor,
    index: i32,
    data: *const DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorSetOutputZeroCopy", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let data = unsafe { TensorRef::from_ptr(data, "data")? };
        let g = handle(g)?;
        let mut e = g.engine.plain("TVMGraphExecutorSetOutputZeroCopy")?.lock()?;
        let i = e.output(Key::Index(index.into()))?;
        // SAFETY: the caller keeps the memory alive while the executor uses it (C contract).
        unsafe { e.set_output_zero_copy(i, data)? };
        Ok(0)
    })
}

/// Run the whole graph once on the calling thread.
///
/// # Safety
/// None: `g` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorRun(g: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutorRun", {
        handle(g)?.engine.run()?;
        Ok(0)
    })
}

/// Copy output `index` into `out` (dtype and shape must match).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or a valid `DLTensor` during the call.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutput(g: *mut TVMGraphExecutor, index: i32, out: *mut DLTensor) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutput", {
        // SAFETY: the tensor is valid for the call (caller contract).
        let out = unsafe { TensorRef::from_ptr(out, "out")? };
        let g = handle(g)?;
        let e = g.engine.lock()?;
        let i = e.output(Key::Index(index.into()))?;
        e.get_output_into(i, out)?;
        Ok(0)
    })
}

/// Number of graph inputs, weights included (indices for the by-index calls).
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetNumInputs(g: *const TVMGraphExecutor, out: *mut i32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetNumInputs", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        *out = handle(g)?.engine.lock()?.num_inputs() as i32;
        Ok(0)
    })
}

/// Number of graph outputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetNumOutputs(g: *const TVMGraphExecutor, out: *mut i32) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetNumOutputs", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        *out = handle(g)?.engine.lock()?.num_outputs() as i32;
        Ok(0)
    })
}

/// Index of the input named `name`; an unknown name is an error listing the inputs.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetInputIndex(
    g: *const TVMGraphExecutor,
    name: *const c_char,
    out: *mut i32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetInputIndex", {
        // SAFETY: out-pointer and C string valid for the call (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let name = unsafe { c_str!(name)? };
        *out = g.engine.lock()?.input(Key::Name(name))? as i32;
        Ok(0)
    })
}

/// Index of the output named `name` (`node` or `node:k`); unknown names are an error.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `name` must be NULL (an
/// error) or a NUL-terminated string; `out` NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutputIndex(
    g: *const TVMGraphExecutor,
    name: *const c_char,
    out: *mut i32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutputIndex", {
        // SAFETY: out-pointer and C string valid for the call (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let name = unsafe { c_str!(name)? };
        *out = g.engine.lock()?.output(Key::Name(name))? as i32;
        Ok(0)
    })
}

/// The C view of `info`, with `name` (owned by the executor) as its name. The shape points into
/// the plan, which the executor keeps alive.
fn c_info(info: &TensorInfo<'_>, name: &CString) -> TVMTensorInfo {
    TVMTensorInfo {
        name: name.as_ptr(),
        ndim: info.shape.len() as i32,
        shape: crate::runtime::cptr::dims_ptr(info.shape),
        dtype: info.dtype,
        nbytes: info.nbytes,
        is_param: info.is_param as i32,
    }
}

/// Name, shape, dtype and size of input `index`, and whether it is a weight.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; its pointers must not be used after the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetInputInfo(
    g: *const TVMGraphExecutor,
    index: i32,
    out: *mut TVMTensorInfo,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetInputInfo", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let e = g.engine.lock()?;
        let i = e.input(Key::Index(index.into()))?;
        *out = c_info(&e.input_info(i)?, &g.input_names[i]);
        Ok(0)
    })
}

/// Name, shape, dtype and size of output `index`.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; its pointers must not be used after the executor is freed.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorGetOutputInfo(
    g: *const TVMGraphExecutor,
    index: i32,
    out: *mut TVMTensorInfo,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorGetOutputInfo", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let e = g.engine.lock()?;
        let i = e.output(Key::Index(index.into()))?;
        *out = c_info(&e.output_info(i)?, &g.output_names[i]);
        Ok(0)
    })
}

/// Run once timing every op. `format` 0 gives a text table, 1 a Chrome trace (JSON for
/// chrome://tracing or Perfetto). `*out` is owned by the executor until its next profile call.
///
/// # Safety
/// `g` is only looked up among live executors (a bad handle is an error). `out` must be NULL (an
/// error) or writable; the text must not be used after the next profile call on `g` or its free.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorProfile(
    g: *mut TVMGraphExecutor,
    format: c_int,
    out: *mut *const c_char,
) -> c_int {
    ffi_boundary!("TVMGraphExecutorProfile", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let timings = g.engine.run_profiled()?;
        let text = match format {
            0 => profile_table(&timings),
            1 => chrome_trace(&timings),
            f => return Err(Error::value(format!("profile format {f} is unknown (0: table, 1: Chrome trace)"))),
        };
        let mut slot = g.text.lock().unwrap_or_else(|e| e.into_inner());
        *slot = CString::new(text).map_err(|_| Error::internal("profile text contains NUL"))?;
        *out = slot.as_ptr();
        Ok(0)
    })
}

/// The executor's op schedule as Graphviz dot (`dot -Tsvg`): ops grouped by level (ops of one
/// level are independent), data edges solid, storage-reuse hazards dashed red, the critical path
/// bold. `*out` is owned by the executor until its next profile or schedule call.
///
/// # Safety
/// `out` must be NULL (an error) or valid for writing one pointer; `g` is only looked up among
/// live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorScheduleDot(g: *mut TVMGraphExecutor, out: *mut *const c_char) -> c_int {
    ffi_boundary!("TVMGraphExecutorScheduleDot", {
        // SAFETY: out-pointer (caller contract).
        let out = unsafe { out_param(out, "out")? };
        let g = handle(g)?;
        let plan = g.engine.plain("TVMGraphExecutorScheduleDot")?.lock()?.plan().clone();
        let dot = OpGraph::new(&plan).to_dot(&plan);
        let mut slot = g.text.lock().unwrap_or_else(|e| e.into_inner());
        *slot = CString::new(dot).map_err(|_| Error::internal("schedule text contains NUL"))?;
        *out = slot.as_ptr();
        Ok(0)
    })
}

/// Destroy an executor (NULL is a no-op). A second free of the same handle is an error.
/// Stages queued by the asynchronous calls are waited for first (their errors are dropped).
///
/// # Safety
/// None: `g` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutorFree(g: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutorFree", {
        if g.is_null() {
            return Ok(0);
        }
        let removed = LIVE.remove(g);
        match removed {
            // Dropped here, or when the last in-flight call on another thread returns; no
            // queued copy touches the caller's memory once this returns.
            Some(exec) => {
                if let Engine::Plain(front) = &exec.engine {
                    front.wait_for_stages();
                }
                drop(exec)
            }
            None => return Err(Error::value(format!("graph executor {g:p} is not live (freed twice?)"))),
        }
        Ok(0)
    })
}

// ---- microTVM CRT names ----
//
// Each alias is one forwarding call inside its own boundary: the call it forwards to already
// stores its errors, so an alias passes that call's status through (-1 keeps the stored
// message), or returns the value the call wrote ([`value_or_minus_one`]).

/// The value a call writes to its out-parameter, or -1 when the call fails (its error stored):
/// the CRT names return counts and indices directly.
fn value_or_minus_one(call: impl FnOnce(&mut c_int) -> c_int) -> c_int {
    let mut value = -1;
    if call(&mut value) == 0 {
        value
    } else {
        -1
    }
}

/// CRT name of `TVMGraphExecutorCreate` (uses `devices[0]`).
///
/// # Safety
/// As `TVMGraphExecutorCreate` with one device: `devices` must point to at least one device.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Create(
    sym_json: *const c_char,
    module_handle: *mut c_void,
    devices: *const DLDevice,
    executor: *mut *mut TVMGraphExecutor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_Create", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorCreate(sym_json, module_handle, devices, 1, executor) })
    })
}

/// CRT name: index of an input, or -1 (with the error set) when unknown.
///
/// # Safety
/// As `TVMGraphExecutorGetInputIndex`: `name` must be NULL (an error) or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetInputIndex(executor: *mut TVMGraphExecutor, name: *const c_char) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetInputIndex", {
        // SAFETY: the caller's arguments, forwarded; `i` is a valid out-pointer.
        Ok(value_or_minus_one(|i| unsafe { TVMGraphExecutorGetInputIndex(executor, name, i) }))
    })
}

/// CRT name: number of inputs, or -1 on error.
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetNumInputs(executor: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetNumInputs", {
        // SAFETY: the caller's handle, forwarded; `n` is a valid out-pointer.
        Ok(value_or_minus_one(|n| unsafe { TVMGraphExecutorGetNumInputs(executor, n) }))
    })
}

/// CRT name: number of outputs, or -1 on error.
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetNumOutputs(executor: *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetNumOutputs", {
        // SAFETY: the caller's handle, forwarded; `n` is a valid out-pointer.
        Ok(value_or_minus_one(|n| unsafe { TVMGraphExecutorGetNumOutputs(executor, n) }))
    })
}

/// CRT name of `TVMGraphExecutorSetInput` (copies, with checks; errors go to the last error).
///
/// # Safety
/// As `TVMGraphExecutorSetInput`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_SetInput(
    executor: *mut TVMGraphExecutor,
    name: *const c_char,
    data_in: *mut DLTensor,
) {
    ffi_boundary!("TVMGraphExecutor_SetInput", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        unsafe { TVMGraphExecutorSetInput(executor, name, data_in) };
        Ok(())
    })
}

/// CRT name of `TVMGraphExecutorGetOutput`.
///
/// # Safety
/// As `TVMGraphExecutorGetOutput`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_GetOutput(
    executor: *mut TVMGraphExecutor,
    index: i32,
    out: *mut DLTensor,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_GetOutput", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorGetOutput(executor, index, out) })
    })
}

/// CRT name of `TVMGraphExecutorLoadParams`.
///
/// # Safety
/// As `TVMGraphExecutorLoadParams`: `param_blob` must be readable for `param_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_LoadParams(
    executor: *mut TVMGraphExecutor,
    param_blob: *const c_char,
    param_size: u32,
) -> c_int {
    ffi_boundary!("TVMGraphExecutor_LoadParams", {
        // SAFETY: the caller's arguments, forwarded (same contract).
        Ok(unsafe { TVMGraphExecutorLoadParams(executor, param_blob as *const c_void, param_size as usize) })
    })
}

/// CRT name of `TVMGraphExecutorRun` (errors go to the last error).
///
/// # Safety
/// None: `executor` is only looked up among live executors (a bad handle is an error).
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Run(executor: *mut TVMGraphExecutor) {
    ffi_boundary!("TVMGraphExecutor_Run", {
        // SAFETY: the caller's handle, forwarded.
        unsafe { TVMGraphExecutorRun(executor) };
        Ok(())
    })
}

/// CRT name: frees `*executor` and sets it to NULL.
///
/// # Safety
/// `executor` must be NULL (an error) or valid for reads and writes of one handle; the handle it
/// holds is checked as in `TVMGraphExecutorFree`.
#[no_mangle]
pub unsafe extern "C" fn TVMGraphExecutor_Release(executor: *mut *mut TVMGraphExecutor) -> c_int {
    ffi_boundary!("TVMGraphExecutor_Release", {
        if executor.is_null() {
            set_last_error(&Error::value("argument `executor` is NULL"));
            return Ok(-1);
        }
        // SAFETY: checked non-NULL; `*executor` is the caller's handle.
        let rc = unsafe { TVMGraphExecutorFree(*executor) };
        if rc == 0 {
            // SAFETY: as above.
            unsafe { *executor = std::ptr::null_mut() };
        }
        Ok(rc)
    })
}
