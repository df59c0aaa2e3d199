//! tvm-ffi's container and object globals (`ffi.Array*`, `ffi.GetInvalidObject`,
//! `ffi.GetKwargsObject`), over the objects of [`container`](crate::runtime::container), installed with
//! the other built-in globals. (tvm-ffi's module globals are with TVM 0.18's, in `builtins.rs`.)

use crate::abi::{ffi_type_index as fti, TVMFFIAny};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::collections::list_map::{any_equal, arg, int_arg, object_arg, view};
use crate::runtime::container::{FfiArrayObj, PlainObj};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::{
    header::{Obj, ObjPtr, ObjectRef},
    type_table::type_index,
};
use crate::runtime::reflection::type_info::owned_any;
use once_cell::sync::Lazy;

/// The `ffi.Array` that view `i` holds, borrowed for the call (made here or by foreign code).
fn array_view(views: &[TVMFFIAny], i: usize) -> Result<&FfiArrayObj> {
    let p = object_arg(views, i, type_index::FFI_ARRAY, "ffi.Array")?;
    // SAFETY: a live `ffi.Array` (its type index says so; its payload is tvm-ffi's sequence cell
    // whoever made it), kept alive by the caller for the call.
    Ok(unsafe { &(*(p as *const Obj<FfiArrayObj>)).data })
}

/// The missing-value and kwargs markers tvm-ffi's frontends compare objects against.
static MISSING: Lazy<ObjectRef> = Lazy::new(|| ObjPtr::new(PlainObj).to_object_ref());
static KWARGS: Lazy<ObjectRef> = Lazy::new(|| ObjPtr::new(PlainObj).to_object_ref());

/// tvm-ffi's keyword-arguments marker (`ffi.GetKwargsObject`).
pub fn kwargs() -> ObjectRef {
    KWARGS.clone()
}

/// tvm-ffi's missing-value marker (`ffi.GetInvalidObject`).
pub fn missing() -> ObjectRef {
    MISSING.clone()
}

/// The first tensor in `v` (itself, or an item or map value, depth first) whose device is not
/// the CPU.
fn first_non_cpu_device(v: &Value) -> Result<Option<crate::abi::DLDevice>> {
    use crate::runtime::collections::list_map::{map_items, sequence_items};
    match v {
        Value::NDArray(t) => {
            // SAFETY: the tensor's own DLTensor, alive while `t` is.
            let d = unsafe { (*t.as_dltensor_ptr()).device };
            Ok((d.device_type != 1).then_some(d))
        }
        Value::Object(o) => {
            let children = match sequence_items(o)? {
                Some(items) => items,
                None if matches!(
                    o.type_index(),
                    crate::runtime::object::type_table::type_index::FFI_MAP
                        | crate::runtime::object::type_table::type_index::DICT
                ) =>
                {
                    map_items(o)?.into_iter().map(|(_, v)| v).collect()
                }
                None => return Ok(None),
            };
            for c in &children {
                if let Some(d) = first_non_cpu_device(c)? {
                    return Ok(Some(d));
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// `ffi.FunctionFromExternC(self, safe_call, deleter)`: a function over a C callable in tvm-ffi's
/// calling convention (the deleter, if any, is called on `self` when the function goes).
fn function_from_extern_c(args: &Args<'_>) -> Result<Value> {
    let ptr = |i: usize| -> Result<*mut std::ffi::c_void> {
        match args.to_value(i)? {
            Value::Handle(p) => Ok(p),
            Value::Null => Ok(std::ptr::null_mut()),
            v => Err(Error::type_error(format!("argument {i}: expected a pointer, got {}", v.type_name()))),
        }
    };
    let (handle, call, deleter) = (ptr(0)?, ptr(1)?, ptr(2)?);
    if call.is_null() {
        return Err(Error::value("argument 1: safe_call is NULL"));
    }
    // SAFETY: the caller passes a function of tvm-ffi's safe-call signature and a deleter of
    // `void(void*)` (or NULL), as `TVMFFIFunctionCreate` takes them.
    let (call, deleter) = unsafe {
        (
            std::mem::transmute::<*mut std::ffi::c_void, crate::abi::TVMFFISafeCallType>(call),
            (!deleter.is_null()).then(|| {
                std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn(*mut std::ffi::c_void)>(deleter)
            }),
        )
    };
    let context = crate::runtime::function::packed::ForeignHandle { handle, deleter };
    Ok(Value::Func(PackedFunc::from_foreign(crate::runtime::function::packed::ForeignCallable { call, context })))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        // The hot ones in tvm-ffi's convention, on the caller's views (no conversion).
        (
            "ffi.Array",
            PackedFunc::from_ffi(|args| {
                // SAFETY: the caller's views are valid for the call.
                let owned = |i: usize| unsafe { crate::runtime::reflection::type_info::owned_any(&args[i]) };
                Ok(FfiArrayObj::try_from_fn(args.len(), owned)?.into_any())
            }),
        ),
        (
            "ffi.ArrayGetItem",
            PackedFunc::from_ffi(|args| {
                let (items, i) = (array_view(args, 0)?.items(), int_arg(args, 1)?);
                let item = usize::try_from(i).ok().and_then(|i| items.get(i)).ok_or_else(|| {
                    Error::index(format!("index {i} out of range for an array of size {}", items.len()))
                })?;
                // SAFETY: an owned element of a live array (alive as long as the array).
                unsafe { owned_any(item) }
            }),
        ),
        (
            "ffi.ArraySize",
            PackedFunc::from_ffi(|args| Ok(TVMFFIAny::int(fti::INT, array_view(args, 0)?.items().len() as i64))),
        ),
        (
            "ffi.ArrayContains",
            PackedFunc::from_ffi(|args| {
                let items = array_view(args, 0)?.items();
                // SAFETY: the caller's view, valid for the call.
                let v = unsafe { Value::from_any_view(arg(args, 1)?) }?;
                for x in items {
                    if any_equal(&view(x)?, &v) {
                        return Ok(TVMFFIAny::int(fti::BOOL, 1));
                    }
                }
                Ok(TVMFFIAny::int(fti::BOOL, 0))
            }),
        ),
        ("ffi.GetInvalidObject", PackedFunc::from_typed(|_| Ok(Value::Object(MISSING.clone())))),
        (
            "ffi.FunctionListGlobalNamesFunctor",
            PackedFunc::from_typed(|_| {
                // A function over a snapshot of the names: -1 gives their count, i the i-th.
                let names = crate::runtime::function::registry::list_names();
                Ok(Value::Func(PackedFunc::from_typed(move |args| match args.int(0)? {
                    i if i < 0 => Ok(Value::Int(names.len() as i64)),
                    i => names.get(i as usize).map(|n| Value::Str(n.clone())).ok_or_else(|| {
                        Error::index(format!("index {i} out of range for {} global names", names.len()))
                    }),
                })))
            }),
        ),
        (
            "ffi.FunctionRemoveGlobal",
            PackedFunc::from_typed(|args| {
                Ok(Value::Bool(crate::runtime::function::registry::remove(&args.string(0)?)))
            }),
        ),
        ("ffi.String", PackedFunc::from_typed(|args| Ok(Value::Str(args.string(0)?)))),
        (
            "ffi.GetGlobalFuncMetadata",
            PackedFunc::from_typed(|args| {
                Ok(Value::Str(crate::runtime::function::registry::metadata(&args.string(0)?)?))
            }),
        ),
        ("ffi.Bytes", PackedFunc::from_typed(|args| Ok(Value::Bytes(args.bytes(0)?.to_vec())))),
        ("ffi.GetKwargsObject", PackedFunc::from_typed(|_| Ok(Value::Object(KWARGS.clone())))),
        ("ffi.FunctionFromExternC", PackedFunc::from_typed(|args| function_from_extern_c(&args))),
        (
            "ffi.ContainerFindFirstNonCPUDevice",
            PackedFunc::from_typed(|args| {
                let cpu = crate::abi::DLDevice { device_type: 1, device_id: 0 };
                Ok(Value::Device(first_non_cpu_device(&args.to_value(0)?)?.unwrap_or(cpu)))
            }),
        ),
        (
            "ffi.GetRegisteredTypeKeys",
            PackedFunc::from_typed(|_| {
                let keys = crate::runtime::object::type_table::type_keys()
                    .into_iter()
                    .map(|k| Value::Str(k).into_any())
                    .collect();
                Ok(Value::Object(FfiArrayObj::new(keys).to_object_ref()))
            }),
        ),
        (
            "ffi.Shape",
            PackedFunc::from_typed(|args| {
                let dims = (0..args.len()).map(|i| args.int(i)).collect::<Result<Vec<i64>>>()?;
                Ok(Value::Object(crate::runtime::container::shape_object(&dims)))
            }),
        ),
        (
            "ffi.VisitInterrupt",
            PackedFunc::from_typed(|args| {
                let r = crate::runtime::reflection::records::new_record("ffi.VisitInterrupt")?;
                crate::runtime::reflection::records::set_field(&r, "value", args.to_value(0)?)?;
                Ok(Value::Object(r.to_object_ref()))
            }),
        ),
    ]
}
