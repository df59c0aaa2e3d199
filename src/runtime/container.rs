//! Small container objects crossing the API: `runtime.String`, `Array`, `Map` (TVM's type
//! keys; string keys), with TVM's global accessors (`runtime.ArraySize`, `runtime.MapGetItem`, ...).

use super::error::{Error, Result};
use super::object::{type_index, ObjPtr, ObjectRef, ObjectType};
use super::packed::{Args, PackedFunc, StringObj, Value};

/// Payload of an `Array` (made by the global `runtime.Array`).
pub struct ArrayObj(pub Vec<ObjectRef>);

impl ObjectType for ArrayObj {
    const TYPE_INDEX: u32 = type_index::ARRAY;
}

/// Payload of a `Map` with string keys, in insertion order (made by the global `runtime.Map`).
pub struct MapObj(pub Vec<(String, ObjectRef)>);

impl ObjectType for MapObj {
    const TYPE_INDEX: u32 = type_index::MAP;
}

impl MapObj {
    pub fn get(&self, key: &str) -> Option<&ObjectRef> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// A string object.
pub fn string_object(s: &str) -> ObjectRef {
    ObjPtr::new(StringObj(s.to_string())).to_object_ref()
}

/// A map object from string keys and objects.
pub fn map_object(entries: Vec<(String, ObjectRef)>) -> ObjectRef {
    ObjPtr::new(MapObj(entries)).to_object_ref()
}

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

fn array_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<ArrayObj>> {
    let o = args.object(i)?;
    o.downcast::<ArrayObj>()
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
                Ok(Value::Object(ObjPtr::new(ArrayObj(items)).to_object_ref()))
            }),
        ),
        ("runtime.ArraySize", PackedFunc::from_typed(|args| Ok(Value::Int(array_arg(&args, 0)?.0.len() as i64)))),
        (
            "runtime.ArrayGetItem",
            PackedFunc::from_typed(|args| {
                let a = array_arg(&args, 0)?;
                let i = args.int(1)?;
                let n = a.0.len();
                usize::try_from(i)
                    .ok()
                    .and_then(|i| a.0.get(i))
                    .map(object_to_value)
                    .ok_or_else(|| Error::index(format!("array index {i} out of range (size {n})")))
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
                Ok(Value::Object(ObjPtr::new(ArrayObj(items)).to_object_ref()))
            }),
        ),
        ("runtime.GetFFIString", PackedFunc::from_typed(|args| Ok(Value::Str(args.string(0)?)))),
    ]
}

/// Payload of a `runtime.ShapeTuple`.
pub struct ShapeTupleObj(pub Vec<i64>);

impl ObjectType for ShapeTupleObj {
    const TYPE_INDEX: u32 = type_index::SHAPE_TUPLE;
}

/// A shape tuple object.
pub fn shape_object(shape: &[i64]) -> ObjectRef {
    ObjPtr::new(ShapeTupleObj(shape.to_vec())).to_object_ref()
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
            PackedFunc::from_typed(|args| Ok(Value::Int(shape_arg(&args, 0)?.0.len() as i64))),
        ),
        (
            "runtime.GetShapeTupleElem",
            PackedFunc::from_typed(|args| {
                let s = shape_arg(&args, 0)?;
                let i = args.int(1)?;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| s.0.get(i))
                    .map(|&d| Value::Int(d))
                    .ok_or_else(|| Error::index(format!("shape index {i} out of range (size {})", s.0.len())))
            }),
        ),
    ]
}
