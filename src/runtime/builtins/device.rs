//! Device globals: attributes, streams (`runtime.Device_Stream*`, `runtime.TVMSetStream`), the
//! current device (`__tvm_set_device`), which runtimes are enabled, the calling thread's CPU
//! affinity, and the CPU cache flush the time evaluator runs between repeats.

use crate::abi::{device_type, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::device::{device_api, Attr, StreamHandle};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::function::registry;

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        // (device_type, device_id, attr_kind): kExist (0) is answered for every device type.
        (
            "runtime.GetDeviceAttr",
            PackedFunc::from_typed(|args| {
                let dev = DLDevice { device_type: args.int(0)? as i32, device_id: args.int(1)? as i32 };
                device_attr(dev, args.int(2)?)
            }),
        ),
        (
            "runtime.Device_StreamCreate",
            PackedFunc::from_typed(|args| {
                let dev = args.device(0)?;
                Ok(Value::Int(device_api(dev.device_type)?.create_stream(dev)? as i64))
            }),
        ),
        ("runtime.Device_StreamFree", stream_call(|dev, s| device_api(dev.device_type)?.free_stream(dev, s))),
        ("runtime.Device_SetStream", stream_call(|dev, s| device_api(dev.device_type)?.set_stream(dev, s))),
        ("runtime.Device_StreamSync", stream_call(|dev, s| device_api(dev.device_type)?.stream_sync(dev, s))),
        (
            "runtime.Device_StreamSyncFromTo",
            PackedFunc::from_typed(|args| {
                let dev = args.device(0)?;
                let (from, to) = (stream_arg(&args, 1)?, stream_arg(&args, 2)?);
                device_api(dev.device_type)?.sync_stream_from_to(dev, from, to).map(|()| Value::Null)
            }),
        ),
        // (device_type, device_id, stream handle): TVM 0.18's argument order.
        (
            "runtime.TVMSetStream",
            PackedFunc::from_typed(|args| {
                let dev = DLDevice { device_type: args.int(0)? as i32, device_id: args.int(1)? as i32 };
                device_api(dev.device_type)?.set_stream(dev, args.handle(2)?).map(|()| Value::Null)
            }),
        ),
        // (device_type, device_id): a device of a type this runtime drives, which for the CPU
        // leaves nothing to select.
        (
            "__tvm_set_device",
            PackedFunc::from_typed(|args| {
                device_api(args.int(0)? as i32)?;
                Ok(Value::Null)
            }),
        ),
        ("runtime.RuntimeEnabled", PackedFunc::from_typed(|args| runtime_enabled(&args.string(0)?).map(Value::Bool))),
        (
            "tvm.runtime.threading.set_current_thread_affinity",
            PackedFunc::from_typed(|args| {
                let ids = args.typed::<ShapeTupleObj>(0, "a shape of CPU ids")?;
                let ids = ids
                    .dims()?
                    .iter()
                    .map(|&c| usize::try_from(c).map_err(|_| Error::value(format!("CPU id {c} is negative"))));
                crate::runtime::threads::pool::pin_to(&ids.collect::<Result<Vec<_>>>()?);
                Ok(Value::Null)
            }),
        ),
        (
            "cache_flush_cpu_non_first_arg",
            PackedFunc::from_typed(|args| {
                for i in 1..args.len() {
                    if let Ok(t) = args.tensor(i) {
                        flush_cache_lines(t.data_addr() as *const u8, t.byte_size()?);
                    }
                }
                Ok(Value::Null)
            }),
        ),
    ]
}

/// A global of (device, stream as an integer) running `f`.
fn stream_call(f: fn(DLDevice, StreamHandle) -> Result<()>) -> PackedFunc {
    PackedFunc::from_typed(move |args| f(args.device(0)?, stream_arg(&args, 1)?).map(|()| Value::Null))
}

/// TVM's `runtime.GetDeviceAttr`: the device's answer to `kind` (None where it has none); a
/// device type no driver serves does not exist (kExist 0) and answers nothing else.
fn device_attr(dev: DLDevice, kind: i64) -> Result<Value> {
    let Ok(api) = device_api(dev.device_type) else {
        return Ok(if kind == 0 { Value::Int(0) } else { Value::Null });
    };
    Ok(match api.get_attr(dev, kind)? {
        Attr::Int(v) => Value::Int(v),
        Attr::Str(s) => Value::Str(s),
        Attr::None => Value::Null,
    })
}

/// A stream passed as the integer `runtime.Device_StreamCreate` returned.
fn stream_arg(args: &Args<'_>, i: usize) -> Result<StreamHandle> {
    Ok(args.int(i)? as usize as StreamHandle)
}

/// TVM's `RuntimeEnabled`: whether the runtime for target `target` is there. Unknown names are
/// an error, as there.
fn runtime_enabled(target: &str) -> Result<bool> {
    let api = |t: i32| Ok(device_api(t).is_ok());
    match target {
        "cpu" => Ok(true),
        "cuda" | "gpu" => api(device_type::CUDA),
        // Built in: enabled where the OpenCL library and a platform are found.
        "cl" | "opencl" => Ok(crate::runtime::device::opencl::available()),
        "mtl" | "metal" => api(device_type::METAL),
        "vulkan" => api(device_type::VULKAN),
        "hexagon" => api(device_type::HEXAGON),
        "rpc" | "tflite" => Ok(false),
        t if t.starts_with("nvptx") => api(device_type::CUDA),
        t if t.starts_with("rocm") => api(device_type::ROCM),
        // A compiler's question; asked of the compiler when one registered the answer.
        t if t.starts_with("llvm") => match registry::get("codegen.llvm_target_enabled") {
            Some(f) => f.call(&[Value::Str(t.to_string())])?.as_int().map(|v| v != 0),
            None => Ok(false),
        },
        t => Err(Error::value(format!("Unknown optional runtime {t}"))),
    }
}

/// Evict `len` bytes at `p` from every cache level (x86-64's `clflush`; elsewhere nothing).
fn flush_cache_lines(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: clflush only evicts the line holding the address, which lies inside a tensor
        // the caller passed; it reads or writes no memory.
        unsafe { core::arch::x86_64::_mm_clflush(p.wrapping_add(off)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}
