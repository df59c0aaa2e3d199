//! The VM's builtins as globals (`vm.builtin.*`), for callers outside a VM: programs and tests
//! call them by name, and apache-tvm's runtime registers them. The VM itself runs the same code
//! on its registers ([`super::builtins`]); here each call converts its arguments to register
//! values and its result back.
//!
//! Not registered: the builtins whose first argument is the calling VM itself
//! (`alloc_storage`, `alloc_shape_heap`, `make_closure`, `invoke_closure`, `invoke_debug_func`),
//! which only a VM calls, and `alloc_tensor`, whose storage object only `alloc_storage` makes.

use super::builtins::{self, Builtin, Context};
use super::value::{Callable, VmValue};
use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::function::registry;
use crate::runtime::object::header::ObjPtr;
use crate::runtime::tensor::ndarray::{shape_tuple, NDArray};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::HashMap;

/// The builtins that need no VM.
const WITHOUT_A_VM: [Builtin; 17] = [
    Builtin::MatchShape,
    Builtin::MatchPrimValue,
    Builtin::MakeShape,
    Builtin::MakePrimValue,
    Builtin::CheckTensorInfo,
    Builtin::CheckShapeInfo,
    Builtin::CheckTupleInfo,
    Builtin::CheckPrimValueInfo,
    Builtin::CheckFuncInfo,
    Builtin::CallTirDyn,
    Builtin::ShapeOf,
    Builtin::Copy,
    Builtin::Reshape,
    Builtin::NullValue,
    Builtin::ReadIfCond,
    Builtin::TupleGetItem,
    Builtin::MakeTuple,
];

pub(super) fn install() {
    for b in WITHOUT_A_VM {
        registry::register_built_in(b.name(), PackedFunc::from_typed(move |args| call(b, &args)));
    }
    for (name, f) in more() {
        registry::register_built_in(name, f);
    }
}

/// Builtin `b` on packed arguments.
fn call(b: Builtin, args: &Args<'_>) -> Result<Value> {
    let mut values = (0..args.len()).map(|i| VmValue::from_arg(args, i)).collect::<Result<Vec<_>>>()?;
    let result = builtins::run_owned(b, &mut Outside, &mut values)?;
    result.into_value(&no_vm_function)
}

/// The context of a builtin called outside a VM: the host, and packed functions only.
struct Outside;

impl Context for Outside {
    fn alloc_storage(&mut self, bytes: usize, index: i64) -> Result<NDArray> {
        match index {
            -1 => NDArray::empty_bytes(bytes, DLDevice::cpu(0)),
            i => Err(Error::value(format!("device index {i}: outside a VM only the host (-1) has storage"))),
        }
    }

    fn call_value(&mut self, c: &Callable, args: Vec<VmValue>) -> Result<VmValue> {
        let Callable::Packed(f) = c else { return Err(Error::runtime("no VM function outside a VM")) };
        let args = args.into_iter().map(|a| a.into_value(&no_vm_function)).collect::<Result<Vec<_>>>()?;
        VmValue::from_value(f.call(&args)?)
    }

    fn is_vm_function(&self, _f: u32) -> bool {
        false
    }

    fn shape_tuple(&mut self, _site: u32, dims: &[i64]) -> ObjPtr<ShapeTupleObj> {
        shape_tuple(dims)
    }
}

/// The builtins only callers by name use (the compilers emit them as packed calls).
fn more() -> Vec<(&'static str, PackedFunc)> {
    vec![
        // (tensor): a 1-d int tensor's values as a shape.
        ("vm.builtin.tensor_to_shape", PackedFunc::from_typed(|args| tensor_to_shape(&args.ndarray(0)?))),
        // (tensor): the tensor if its data starts at its pointer, else a copy that does.
        (
            "vm.builtin.ensure_zero_offset",
            PackedFunc::from_typed(|args| {
                let t = args.ndarray(0)?;
                if t.tensor().raw().byte_offset == 0 {
                    return Ok(Value::NDArray(t));
                }
                t.copy_to(t.device()).map(Value::NDArray)
            }),
        ),
        // (tensor, device_type, device_id[, memory scope]): a copy on that device.
        (
            "vm.builtin.to_device",
            PackedFunc::from_typed(|args| {
                let dev = DLDevice { device_type: args.int(1)? as i32, device_id: args.int(2)? as i32 };
                args.ndarray(0)?.copy_to(dev).map(Value::NDArray)
            }),
        ),
        (
            "vm.builtin.register_py_func",
            PackedFunc::from_typed(|args| {
                let old = PY_FUNCS.lock().insert(args.string(0)?, args.func(1)?);
                drop(old); // released outside the lock: it may run a frontend's code
                Ok(Value::Null)
            }),
        ),
        ("vm.builtin.get_py_func", PackedFunc::from_typed(|args| py_func(&args.string(0)?).map(Value::Func))),
        (
            "vm.builtin.clear_py_func_registry",
            PackedFunc::from_typed(|_| {
                let all = std::mem::take(&mut *PY_FUNCS.lock());
                drop(all);
                Ok(Value::Null)
            }),
        ),
        ("vm.builtin.call_py_func", PackedFunc::from_typed(call_py_func)),
        // The storage the VMs' pools cached, released.
        (
            "vm.builtin.memory_manager.clear",
            PackedFunc::from_typed(|_| {
                super::module::release_idle_frames();
                Ok(Value::Null)
            }),
        ),
        // (value, error context): the value must be a string.
        (
            "vm.builtin.check_string_info",
            PackedFunc::from_typed(|args| match args.is_string(0) {
                true => Ok(Value::Null),
                false => Err(Error::type_error(format!(
                    "{} expect a String but get {}",
                    args.string(1).unwrap_or_default(),
                    args.to_value(0)?.type_name()
                ))),
            }),
        ),
    ]
}

/// The functions a frontend registered for `call_py_func` by name (apache-tvm's Python
/// registers its `R.call_py_func` targets here).
static PY_FUNCS: Lazy<Mutex<HashMap<String, PackedFunc>>> = Lazy::new(Default::default);

fn py_func(name: &str) -> Result<PackedFunc> {
    let f = PY_FUNCS.lock().get(name).cloned();
    f.ok_or_else(|| Error::runtime(format!("Python function '{name}' not found in registry")))
}

/// ((name, (args...))): the registered function `name` called on the args.
fn call_py_func(args: Args<'_>) -> Result<Value> {
    args.expect_len(1, "vm.builtin.call_py_func (a tuple of the function name and its arguments)")?;
    let pair = items(args.to_value(0)?, "vm.builtin.call_py_func's argument")?;
    let [name, call_args]: [Value; 2] =
        pair.try_into().map_err(|_| Error::value("vm.builtin.call_py_func tuple should contain (func_name, args)"))?;
    let call_args = items(call_args, "vm.builtin.call_py_func's arguments")?;
    py_func(&name.into_string()?)?.call(&call_args)
}

/// The items of an array value (either generation's array).
fn items(v: Value, what: &str) -> Result<Vec<Value>> {
    let kind = v.type_name();
    match VmValue::from_value(v)? {
        VmValue::Tuple(items) => items.iter().map(|i| i.clone().into_value(&no_vm_function)).collect(),
        _ => Err(Error::type_error(format!("{what}: expected an array, got {kind}"))),
    }
}

/// Arguments convert to packed functions only, so no VM function can come back.
fn no_vm_function(_: Callable) -> PackedFunc {
    PackedFunc::from_typed(|_| Err(Error::runtime("no VM function outside a VM")))
}

fn tensor_to_shape(t: &NDArray) -> Result<Value> {
    let host = t.copy_to(DLDevice::cpu(0))?;
    if host.shape().len() != 1 || !matches!(host.dtype(), DLDataType { code: 0, bits: 32 | 64, lanes: 1 }) {
        return Err(Error::value("tensor_to_shape: expected a 1-d int32 or int64 tensor"));
    }
    let bytes = host.to_vec_u8()?;
    let dims: Vec<i64> = match host.dtype().bits {
        64 => bytes.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().expect("8 bytes"))).collect(),
        _ => bytes.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().expect("4 bytes")) as i64).collect(),
    };
    Ok(Value::Object(shape_tuple(&dims).to_object_ref()))
}
