//! Creating executors (from graph JSON and a kernel module, or from a factory module; with or
//! without options) and freeing them.

use super::handle::{publish, unpublish, TVMGraphExecutor};
use crate::abi::DLDevice;
use crate::ffi::ptr::{out_param, slice};
use crate::graph::factory::GraphExecutorFactory;
use crate::graph::memory_plan::build_plan;
use crate::graph::options::ExecutorOptions;
use crate::graph::{Front, Graph};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::Module;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// Create an executor from graph JSON and the module holding its kernels. Weights are loaded
/// afterwards with `TVMGraphExecutorLoadParams`. Inputs start out zeroed (weights too, until
/// loaded), so a run before `TVMGraphExecutorSetInput` computes on zeros, the same in every
/// process (TVM leaves them uninitialised).
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
/// factory for the same devices share kernels and one copy of the weights. Data inputs start
/// out zeroed, so a run before `TVMGraphExecutorSetInput` computes on zeros, the same in every
/// process (TVM leaves them uninitialised).
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

/// As `TVMGraphExecutorCreate`, with options: NULL or `"key=value,..."` with keys
/// `inter_op_threads` (workers running independent ops at once; default 1, as TVM),
/// `intra_op_threads` (threads each kernel's parallel loops use; default: the cores divided among
/// the workers), `memory_plan` (`tvm`: the compiled storage plan, fewest bytes; `parallel`:
/// buffers shared only between ops ordered by data, so branches can overlap) and `device`
/// (`KIND[:ID]` by TVM's names, e.g. `opencl:0`: the device kernels and storage go on, in place
/// of `devices`, which may then be the default `{kDLCPU, 0}` or that same device). Unknown keys
/// and bad values are errors naming the key. Results are bit-identical to a sequential run.
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
        let removed = unpublish(g);
        match removed {
            // Dropped here, or when the last in-flight call on another thread returns; no
            // queued copy touches the caller's memory once this returns.
            Some(exec) => {
                exec.front.wait_for_stages();
                drop(exec)
            }
            None => return Err(Error::value(format!("graph executor {g:p} is not live (freed twice?)"))),
        }
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
    let module = unsafe { crate::ffi::legacy::module::module_arg(module, "module")? };
    let devices = unsafe { device_list(devices, num_devices)? };
    let options = unsafe { executor_options(options)? };
    let plan = build_plan(Graph::parse(json)?, module, &options.devices(devices)?, options.memory_plan)?;
    publish(Front::create(Arc::new(plan), &options)?.into())
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
    let m: Module = unsafe { crate::ffi::legacy::module::module_arg(factory, "factory")? };
    let devices = unsafe { device_list(devices, num_devices)? };
    let options = unsafe { executor_options(options)? };
    let plan = GraphExecutorFactory::of(&m)?.plan_with(&m, &options.devices(devices)?, options.memory_plan)?;
    publish(Front::create(plan, &options)?.into())
}

/// Executor options from a C string (NULL: the defaults).
///
/// # Safety
/// `options` must be NULL or a NUL-terminated string.
unsafe fn executor_options(options: *const c_char) -> Result<ExecutorOptions> {
    // SAFETY: forwarded contract.
    let text = unsafe { crate::ffi::options_arg(options)? };
    ExecutorOptions::parse(text).map_err(|e| e.context("executor options"))
}

/// The `num_devices` devices at `devices`; none is an error.
///
/// # Safety
/// `devices` must hold `n` devices when `n > 0`.
pub(in crate::ffi) unsafe fn device_list<'a>(devices: *const DLDevice, n: u32) -> Result<&'a [DLDevice]> {
    if n == 0 {
        return Err(Error::value("`num_devices` is 0: at least one device is required"));
    }
    // SAFETY: forwarded contract.
    unsafe { slice(devices, n as usize, "devices") }
}
