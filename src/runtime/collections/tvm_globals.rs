//! The container globals (`runtime.Array`, `runtime.Map`, `runtime.ShapeTuple`, ...): packed
//! functions over the objects of [`container`](crate::runtime::container), installed with the other
//! built-in globals.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::{
    array_object, map_object, shape_object, string_object, ArrayObj, FfiArrayObj, MapObj, ShapeTupleObj,
};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{ObjPtr, ObjectRef};

/// A value stored in a container becomes an object: objects as they are, strings boxed.
fn value_to_object(v: Value, what: &str) -> Result<ObjectRef> {
    Ok(match v {
        Value::NDArray(a) => a.to_object_ref(),
        Value::Module(m) => m.to_object_ref(),
        Value::Func(f) => f.to_object_ref(),
        Value::Object(o) => o,
        Value::Str(s) => string_object(&s),
        other => return Err(Error::type_error(format!("{what}: cannot store a {} in a container", other.type_name()))),
    })
}

fn object_to_value(o: &ObjectRef) -> Value {
    Value::from_object(o.clone())
}

fn map_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<MapObj>> {
    let o = args.object(i)?;
    o.downcast::<MapObj>()
        .ok_or_else(|| Error::type_error(format!("argument {i}: expected Map, got type index {}", o.type_index())))
}

/// An array argument of TVM 0.18's `runtime.Array*` globals: TVM 0.18's `Array`, or tvm-ffi's
/// `ffi.Array` (what this runtime hands tvm-ffi callers for the same thing, the Relax VM's tuples
/// among them), read alike.
enum ArrayArg {
    Legacy(ObjPtr<ArrayObj>),
    Ffi(ObjPtr<FfiArrayObj>),
}

impl ArrayArg {
    fn len(&self) -> usize {
        match self {
            ArrayArg::Legacy(a) => a.tail().len(),
            ArrayArg::Ffi(a) => a.items().len(),
        }
    }

    fn get(&self, i: usize) -> Option<Result<Value>> {
        match self {
            ArrayArg::Legacy(a) => {
                a.tail().get(i).map(|item| Ok(item.as_ref().map_or(Value::Null, |r| object_to_value(&r.get()))))
            }
            // SAFETY: the array's elements are owned values, alive while `a` is.
            ArrayArg::Ffi(a) => a.items().get(i).map(|item| unsafe { Value::from_any_view(item) }),
        }
    }
}

fn array_arg(args: &Args<'_>, i: usize) -> Result<ArrayArg> {
    let o = args.object(i)?;
    if let Some(a) = o.downcast::<ArrayObj>() {
        return Ok(ArrayArg::Legacy(a));
    }
    o.downcast::<FfiArrayObj>()
        .map(ArrayArg::Ffi)
        .ok_or_else(|| Error::type_error(format!("argument {i}: expected Array, got type index {}", o.type_index())))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "runtime.Array",
            PackedFunc::from_typed(|args| {
                let items = (0..args.len())
                    .map(|i| value_to_object(args.to_value(i)?, "runtime.Array"))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Value::Object(array_object(items)))
            }),
        ),
        ("runtime.ArraySize", PackedFunc::from_typed(|args| Ok(Value::Int(array_arg(&args, 0)?.len() as i64)))),
        (
            "runtime.ArrayGetItem",
            PackedFunc::from_typed(|args| {
                let a = array_arg(&args, 0)?;
                let i = args.int(1)?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| a.get(i))
                    .ok_or_else(|| Error::index(format!("array index {i} out of range (size {})", a.len())))?
            }),
        ),
        (
            "runtime.Map",
            PackedFunc::from_typed(|args| {
                if args.len() % 2 != 0 {
                    return Err(Error::value("runtime.Map expects key/value pairs"));
                }
                let mut entries = Vec::with_capacity(args.len() / 2);
                for i in (0..args.len()).step_by(2) {
                    let key = args.string(i)?;
                    let val = value_to_object(args.to_value(i + 1)?, "runtime.Map")?;
                    entries.retain(|(k, _): &(String, ObjectRef)| *k != key);
                    entries.push((key, val));
                }
                Ok(Value::Object(map_object(entries)))
            }),
        ),
        ("runtime.MapSize", PackedFunc::from_typed(|args| Ok(Value::Int(map_arg(&args, 0)?.0.len() as i64)))),
        (
            "runtime.MapCount",
            PackedFunc::from_typed(|args| {
                let m = map_arg(&args, 0)?;
                Ok(Value::Int(m.get(&args.string(1)?).is_some() as i64))
            }),
        ),
        (
            "runtime.MapGetItem",
            PackedFunc::from_typed(|args| {
                let m = map_arg(&args, 0)?;
                let key = args.string(1)?;
                m.get(&key)
                    .map(object_to_value)
                    .ok_or_else(|| Error::attribute(format!("key `{key}` is not in the map")))
            }),
        ),
        (
            "runtime.MapItems",
            PackedFunc::from_typed(|args| {
                let m = map_arg(&args, 0)?;
                let mut items = Vec::with_capacity(m.0.len() * 2);
                for (k, v) in &m.0 {
                    items.push(string_object(k));
                    items.push(v.clone());
                }
                Ok(Value::Object(array_object(items)))
            }),
        ),
        ("runtime.String", PackedFunc::from_typed(|args| Ok(Value::Object(string_object(&args.string(0)?))))),
        ("runtime.GetFFIString", PackedFunc::from_typed(|args| Ok(Value::Str(args.string(0)?)))),
    ]
}

fn shape_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<ShapeTupleObj>> {
    let o = args.object(i)?;
    o.downcast::<ShapeTupleObj>().ok_or_else(|| {
        Error::type_error(format!("argument {i}: expected ShapeTuple, got type index {}", o.type_index()))
    })
}

pub(crate) fn shape_globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "runtime.ShapeTuple",
            PackedFunc::from_typed(|args| {
                let dims = (0..args.len()).map(|i| args.int(i)).collect::<Result<Vec<_>>>()?;
                Ok(Value::Object(shape_object(&dims)))
            }),
        ),
        (
            "runtime.GetShapeTupleSize",
            PackedFunc::from_typed(|args| Ok(Value::Int(shape_arg(&args, 0)?.dims()?.len() as i64))),
        ),
        (
            "runtime.GetShapeTupleElem",
            PackedFunc::from_typed(|args| {
                let s = shape_arg(&args, 0)?;
                let dims = s.dims()?;
                let i = args.int(1)?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| dims.get(i))
                    .map(|&d| Value::Int(d))
                    .ok_or_else(|| Error::index(format!("shape index {i} out of range (size {})", dims.len())))
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::object::type_table::type_index;

    /// A TVM 0.18 `Array` handed to tvm-ffi code becomes an `ffi.Array` (nested ones too), and
    /// TVM 0.18's globals read either kind.
    #[test]
    fn legacy_arrays_cross_into_tvm_ffi_as_ffi_arrays() {
        let inner = array_object(vec![string_object("a string longer than seven")]);
        let outer = array_object(vec![inner, shape_object(&[2, 3])]);
        let any = Value::Object(outer).into_any();
        assert_eq!(any.type_index, type_index::FFI_ARRAY as i32);
        // SAFETY: an owned value just made; adopted once.
        let Value::Object(o) = (unsafe { Value::adopt_any(any) }).unwrap() else { panic!("not an object") };
        assert_eq!(o.type_index(), type_index::FFI_ARRAY);
        let size = |o: &ObjectRef| {
            let f = globals().into_iter().find(|(n, _)| *n == "runtime.ArraySize").unwrap().1;
            f.call(&[Value::Object(o.clone())]).unwrap().as_int().unwrap()
        };
        let get = |o: &ObjectRef, i: i64| {
            let f = globals().into_iter().find(|(n, _)| *n == "runtime.ArrayGetItem").unwrap().1;
            f.call(&[Value::Object(o.clone()), Value::Int(i)])
        };
        assert_eq!(size(&o), 2);
        let Value::Object(first) = get(&o, 0).unwrap() else { panic!("item 0 is not an object") };
        assert_eq!(first.type_index(), type_index::FFI_ARRAY, "nested arrays convert too");
        let text = get(&first, 0).unwrap();
        assert_eq!(
            crate::runtime::collections::list_map::text_of(&text).as_deref(),
            Some(&b"a string longer than seven"[..])
        );
        assert!(get(&o, 2).unwrap_err().message().contains("out of range (size 2)"));
    }
}
