//! `libtriton_tvmrt.so`: a Triton Inference Server backend (`backend: "tvmrt"`) that serves
//! TVM-compiled models on this runtime. A front end of the runtime: it uses the crate's Rust API
//! (sessions, frames) as the other front ends do, and Triton's C API ([`sys`]) for the rest.
//!
//! - a model ([`ModelState`]): its files loaded once into a session ([`model`]), its
//!   configuration auto-completed and checked ([`config`]);
//! - an instance ([`InstanceState`]): a frame over the model's session ([`instance`]), so N
//!   instances hold one copy of the weights;
//! - execute: requests checked, batched and answered ([`execute`]).
//!
//! Every exported function runs inside [`error::boundary`]: an error or a panic becomes a
//! `TRITONSERVER_Error`.

#![deny(unsafe_op_in_unsafe_fn)]

mod config;
mod dtype;
mod error;
mod execute;
mod instance;
mod model;
mod rows;
mod sys;
mod threads;

use error::{boundary, check, log, Failure, Result};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use sys::{Api, TRITONBACKEND_Backend, TRITONBACKEND_Model, TRITONBACKEND_ModelInstance, TRITONBACKEND_Request};

/// What a model's instances share: the session and how requests look.
pub struct Shared {
    pub name: String,
    pub session: model::Session,
    pub layout: config::Layout,
    pub threads: threads::Threads,
    /// Instances started so far (a pinned instance's core group is its number's).
    pub started: AtomicUsize,
}

/// The state Triton keeps for a model.
pub struct ModelState(Arc<Shared>);

/// The state Triton keeps for an instance: its frame over the model's session.
pub struct InstanceState {
    shared: Arc<Shared>,
    frame: instance::Frame,
}

/// Check that the server speaks the backend API this backend was written against.
/// # Safety
/// Called by Triton once, before any model; `_backend` is Triton's.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_Initialize(_backend: *mut TRITONBACKEND_Backend) -> sys::Error {
    boundary("TRITONBACKEND_Initialize", |api| {
        let (mut major, mut minor) = (0u32, 0u32);
        // SAFETY: both out-pointers are writable.
        check(api, unsafe { (api.TRITONBACKEND_ApiVersion)(&mut major, &mut minor) })?;
        if major != sys::API_VERSION_MAJOR || minor < sys::API_VERSION_MINOR {
            return Err(Failure::unsupported(format!(
                "the server speaks backend API {major}.{minor}; tvmrt needs {}.{} or a later 1.x (Triton 2.51+)",
                sys::API_VERSION_MAJOR,
                sys::API_VERSION_MINOR
            )));
        }
        tvm_runtime::init();
        Ok(())
    })
}

/// Load the model's files, complete and check its configuration.
/// # Safety
/// Called by Triton with a live model, once per load.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_ModelInitialize(model: *mut TRITONBACKEND_Model) -> sys::Error {
    boundary("TRITONBACKEND_ModelInitialize", |api| {
        let shared = load_model(api, model)?;
        log(api, sys::LOG_INFO, &format!("tvmrt: model '{}' loaded", shared.name));
        // SAFETY: live model; the state is ours until ModelFinalize takes it back.
        hand_over(api, ModelState(Arc::new(shared)), |p| unsafe { (api.TRITONBACKEND_ModelSetState)(model, p) })
    })
}

/// # Safety
/// Called by Triton with a live model whose instances are finalized, once.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_ModelFinalize(model: *mut TRITONBACKEND_Model) -> sys::Error {
    boundary("TRITONBACKEND_ModelFinalize", |api| {
        let mut state: *mut c_void = std::ptr::null_mut();
        // SAFETY: live model; writable out-pointer.
        check(api, unsafe { (api.TRITONBACKEND_ModelState)(model, &mut state) })?;
        // SAFETY: the state ModelInitialize handed over; Triton finalizes a model once.
        unsafe { take_back::<ModelState>(state) };
        Ok(())
    })
}

/// A frame over the model's session for this instance.
/// # Safety
/// Called by Triton with a live instance of an initialized model.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_ModelInstanceInitialize(
    instance: *mut TRITONBACKEND_ModelInstance,
) -> sys::Error {
    boundary("TRITONBACKEND_ModelInstanceInitialize", |api| {
        let mut model = std::ptr::null_mut();
        // SAFETY: live instance; writable out-pointer.
        check(api, unsafe { (api.TRITONBACKEND_ModelInstanceModel)(instance, &mut model) })?;
        let mut state: *mut c_void = std::ptr::null_mut();
        // SAFETY: live model; writable out-pointer.
        check(api, unsafe { (api.TRITONBACKEND_ModelState)(model, &mut state) })?;
        // SAFETY: ModelInitialize set this state; the model outlives its instances.
        let shared = unsafe { &*state.cast::<ModelState>() }.0.clone();
        let threads = shared.threads.for_instance(shared.started.fetch_add(1, Ordering::Relaxed))?;
        let frame = instance::Frame::new(&shared.session, &shared.layout.inputs, threads)?;
        let state = InstanceState { shared, frame };
        // SAFETY: live instance; the state is ours until InstanceFinalize takes it back.
        hand_over(api, state, |p| unsafe { (api.TRITONBACKEND_ModelInstanceSetState)(instance, p) })
    })
}

/// # Safety
/// Called by Triton with a live instance, once.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_ModelInstanceFinalize(instance: *mut TRITONBACKEND_ModelInstance) -> sys::Error {
    boundary("TRITONBACKEND_ModelInstanceFinalize", |api| {
        let state = instance_state(api, instance)?;
        // SAFETY: the state InstanceInitialize handed over; Triton finalizes an instance once.
        unsafe { take_back::<InstanceState>(state.cast()) };
        Ok(())
    })
}

/// Answer `requests` (every one is answered and released here, errors included).
/// # Safety
/// Called by Triton with a live, initialized instance (one call at a time per instance) and
/// `count` live requests at `requests`.
#[no_mangle]
pub unsafe extern "C" fn TRITONBACKEND_ModelInstanceExecute(
    instance: *mut TRITONBACKEND_ModelInstance,
    requests: *mut *mut TRITONBACKEND_Request,
    count: u32,
) -> sys::Error {
    boundary("TRITONBACKEND_ModelInstanceExecute", |api| {
        let state = instance_state(api, instance)?;
        // SAFETY: InstanceInitialize set the state; Triton runs one execute per instance at a time.
        let state = unsafe { &*state };
        // SAFETY: Triton passes `count` request pointers, ours until released.
        let requests = unsafe { std::slice::from_raw_parts(requests, count as usize) };
        let run = execute::Instance { api, raw: instance, layout: &state.shared.layout, frame: &state.frame };
        run.execute(requests);
        Ok(())
    })
}

/// Box `state` and give it to Triton through `set`; freed here if Triton refuses it.
fn hand_over<T>(api: &Api, state: T, set: impl FnOnce(*mut c_void) -> sys::Error) -> Result<()> {
    let raw = Box::into_raw(Box::new(state));
    let given = check(api, set(raw.cast()));
    if given.is_err() {
        // SAFETY: Triton did not keep the pointer: it is still only ours, freed once.
        drop(unsafe { Box::from_raw(raw) });
    }
    given
}

/// Free a state [`hand_over`] gave Triton (NULL: none was set).
///
/// # Safety
/// `state` is NULL or the pointer `hand_over::<T>` boxed, not yet taken back.
unsafe fn take_back<T>(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: as the caller promises.
        drop(unsafe { Box::from_raw(state.cast::<T>()) });
    }
}

fn instance_state(api: &Api, instance: *mut TRITONBACKEND_ModelInstance) -> Result<*mut InstanceState> {
    let mut state: *mut c_void = std::ptr::null_mut();
    // SAFETY: live instance; writable out-pointer.
    check(api, unsafe { (api.TRITONBACKEND_ModelInstanceState)(instance, &mut state) })?;
    Ok(state.cast())
}

/// The model's name, files and configuration into what its instances share.
fn load_model(api: &Api, model: *mut TRITONBACKEND_Model) -> Result<Shared> {
    let name = model_name(api, model)?;
    let mut cfg = read_config(api, model)?;
    let threads = threads::Threads::from_config(&cfg)?;
    let source = model::Source {
        dir: version_dir(api, model)?,
        file: cfg["default_model_filename"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
        function: config::parameter(&cfg, "function"),
        executor: threads.executor,
    };
    let (session, mut signature) = model::load(&source)?;
    if let Some(p) = &threads.pipeline {
        pipeline_rows(&session, &mut signature, p)?;
    }
    if auto_complete(api, model)? && config::autocomplete(&mut cfg, &signature) {
        set_config(api, model, &cfg)?;
        cfg = read_config(api, model)?;
    }
    let layout = config::check(&cfg, &signature)?;
    Ok(Shared { name, session, layout, threads, started: AtomicUsize::new(0) })
}

/// On the pipeline, a model of batch one runs batches of up to `in_flight` rows (one pipeline
/// request each, at once); the pipeline runs plain graph models only.
fn pipeline_rows(
    session: &model::Session,
    signature: &mut model::Signature,
    p: &tvm_runtime::graph::options::PipelineOptions,
) -> Result<()> {
    if !matches!(session, model::Session::Graph(_)) {
        return Err(instance::pipeline_needs_a_graph());
    }
    if signature.max_rows == 1 {
        signature.max_rows = p.in_flight;
    }
    Ok(())
}

fn model_name(api: &Api, model: *mut TRITONBACKEND_Model) -> Result<String> {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: live model; writable out-pointer.
    check(api, unsafe { (api.TRITONBACKEND_ModelName)(model, &mut p) })?;
    // SAFETY: Triton's string, read at once.
    Ok(unsafe { sys::borrowed_str(p) }.to_string())
}

/// `<repository>/<model>/<version>`.
fn version_dir(api: &Api, model: *mut TRITONBACKEND_Model) -> Result<PathBuf> {
    let (mut kind, mut location, mut version) = (0u32, std::ptr::null(), 0u64);
    // SAFETY: live model; writable out-pointers.
    check(api, unsafe { (api.TRITONBACKEND_ModelRepository)(model, &mut kind, &mut location) })?;
    // SAFETY: live model; writable out-pointer.
    check(api, unsafe { (api.TRITONBACKEND_ModelVersion)(model, &mut version) })?;
    // SAFETY: Triton's string, read at once.
    let location = unsafe { sys::borrowed_str(location) };
    Ok(PathBuf::from(location).join(version.to_string()))
}

fn auto_complete(api: &Api, model: *mut TRITONBACKEND_Model) -> Result<bool> {
    let mut yes = false;
    // SAFETY: live model; writable out-pointer.
    check(api, unsafe { (api.TRITONBACKEND_ModelAutoCompleteConfig)(model, &mut yes) })?;
    Ok(yes)
}

/// The model's configuration as JSON.
fn read_config(api: &Api, model: *mut TRITONBACKEND_Model) -> Result<Value> {
    let mut message = std::ptr::null_mut();
    // SAFETY: live model; writable out-pointer; we own the message and delete it below.
    check(api, unsafe { (api.TRITONBACKEND_ModelConfig)(model, sys::CONFIG_VERSION, &mut message) })?;
    let (mut base, mut size) = (std::ptr::null(), 0usize);
    // SAFETY: live message; the buffer lives as long as the message.
    let text = check(api, unsafe { (api.TRITONSERVER_MessageSerializeToJson)(message, &mut base, &mut size) })
        // SAFETY: `size` bytes at `base`, read before the message is deleted.
        .map(|()| unsafe { std::slice::from_raw_parts(base as *const u8, size) }.to_vec());
    // SAFETY: the message is ours, deleted once.
    let _ = check(api, unsafe { (api.TRITONSERVER_MessageDelete)(message) });
    serde_json::from_slice(&text?).map_err(|e| Failure::internal(format!("the model configuration: {e}")))
}

fn set_config(api: &Api, model: *mut TRITONBACKEND_Model, cfg: &Value) -> Result<()> {
    let text = cfg.to_string();
    let mut message = std::ptr::null_mut();
    // SAFETY: `text` is `len` bytes for the call (Triton parses a copy); writable out-pointer.
    check(api, unsafe {
        (api.TRITONSERVER_MessageNewFromSerializedJson)(&mut message, text.as_ptr().cast(), text.len())
    })?;
    // SAFETY: live model and message; the message stays ours.
    let set = check(api, unsafe { (api.TRITONBACKEND_ModelSetConfig)(model, sys::CONFIG_VERSION, message) });
    // SAFETY: the message is ours, deleted once.
    let _ = check(api, unsafe { (api.TRITONSERVER_MessageDelete)(message) });
    set
}
