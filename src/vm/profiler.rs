//! The VM profiler: a function run on a session of its own whose packed functions (the kernels)
//! are wrapped in timers, each call recorded with its name and its arguments' shapes, and the
//! report as TVM's `runtime.profiling.Report` writes it in JSON (what the `profile` function of
//! a VM made by `vm_profiler_load_executable` returns, as TVM's does).

use super::executable::Executable;
use super::frame::Frame;
use super::session::{AllocatorKind, Callee, Session};
use super::value::VmValue;
use crate::abi::{type_code as tc, DLDevice};
use crate::runtime::base::error::Result;
use crate::runtime::function::packed::{Args, Module, PackedFunc, Value};
use parking_lot::Mutex;
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;
use std::time::Instant;

/// One kernel call of a profiled run.
#[derive(Clone, Debug)]
pub struct KernelCall {
    pub name: String,
    /// From the start of the run.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Its tensor arguments, as TVM's report shows them: `float32[4, 4], float32[4]`.
    pub shapes: String,
}

/// The kernel calls of the run under way, which the timers record into.
pub struct Recording {
    started: Instant,
    pub calls: Vec<KernelCall>,
}

impl Recording {
    /// Start over: no calls, times from now.
    pub fn restart(&mut self) {
        self.started = Instant::now();
        self.calls.clear();
    }
}

/// A session over `exec` (whose kernels `exec_module` imports) whose packed functions record
/// each call into the returned recording.
pub fn timed_session(
    exec: &Arc<Executable>,
    exec_module: &Module,
    devices: &[DLDevice],
    allocator: AllocatorKind,
) -> Result<(Session, Arc<Mutex<Recording>>)> {
    let mut session = Session::new(exec.clone(), exec_module.clone(), devices, allocator)?;
    let recording = Arc::new(Mutex::new(Recording { started: Instant::now(), calls: Vec::new() }));
    for (i, callee) in session.callees.iter_mut().enumerate() {
        if let Callee::Packed(f) = callee {
            *f = timed(f.clone(), exec.functions[i].name.clone(), recording.clone());
        }
    }
    Ok((session, recording))
}

/// `f`, recording each call.
fn timed(f: PackedFunc, name: String, recording: Arc<Mutex<Recording>>) -> PackedFunc {
    PackedFunc::from_fn(move |args, ret| {
        let start = Instant::now();
        let result = f.call_into(args, ret);
        let duration_ns = start.elapsed().as_nanos() as u64;
        let shapes = shape_string(&args);
        let mut r = recording.lock();
        let start_ns = start.saturating_duration_since(r.started).as_nanos() as u64;
        r.calls.push(KernelCall { name: name.clone(), start_ns, duration_ns, shapes });
        result
    })
}

fn shape_string(args: &Args<'_>) -> String {
    let tensors = (0..args.len()).filter(|&i| matches!(args.codes()[i], tc::NDARRAY_HANDLE | tc::DLTENSOR_HANDLE));
    let described = tensors.filter_map(|i| {
        let t = args.tensor(i).ok()?;
        let dims = t.shape().ok()?.iter().map(|d| d.to_string()).collect::<Vec<_>>();
        Some(format!("{}[{}]", t.dtype(), dims.join(", ")))
    });
    described.collect::<Vec<_>>().join(", ")
}

/// `profile(function name, *args)`: the function run once on a timed session with the devices
/// and allocator of `session` (over `exec_module`); TVM's report JSON.
pub fn profile(exec_module: &Module, session: &Session, name: &str, args: &[Value]) -> Result<String> {
    let (timed, recording) = timed_session(&session.exec, exec_module, &session.devices, session.allocator)?;
    let mut frame = Frame::new(Arc::new(timed));
    let values = args.iter().map(|v| VmValue::from_value(v.clone())).collect::<Result<Vec<_>>>()?;
    let f = frame.session.vm_function(name)?;
    recording.lock().restart();
    let start = Instant::now();
    frame.invoke(f, values)?;
    let total_ns = start.elapsed().as_nanos() as u64;
    let device = device_name(session.devices[0]);
    let json = report_json(&recording.lock().calls, total_ns, &device);
    Ok(json)
}

/// TVM's name of a device in reports (`cpu0`, `opencl0`).
fn device_name(d: DLDevice) -> String {
    let kind = crate::abi::device_type::name(d.device_type).unwrap_or("device");
    format!("{kind}{}", d.device_id)
}

/// The report in TVM's JSON: `calls` (one row per kernel call: Name, Duration (us), Count,
/// Percent, Device, Argument Shapes) and `device_metrics` (the whole call, per device).
pub fn report_json(calls: &[KernelCall], total_ns: u64, device: &str) -> String {
    let us = |ns: u64| json!({ "microseconds": ns as f64 / 1e3 });
    let rows = calls.iter().map(|c| {
        let percent = if total_ns == 0 { 0.0 } else { c.duration_ns as f64 / total_ns as f64 * 100.0 };
        json!({
            "Name": c.name, "Duration (us)": us(c.duration_ns), "Count": {"count": 1},
            "Percent": {"percent": percent}, "Device": device, "Argument Shapes": c.shapes,
        })
    });
    let total = json!({ "Name": "Total", "Duration (us)": us(total_ns), "Count": {"count": 1}, "Device": device });
    let mut devices = Map::new();
    devices.insert(device.to_string(), total);
    json!({ "calls": rows.collect::<Vec<Json>>(), "device_metrics": devices }).to_string()
}
