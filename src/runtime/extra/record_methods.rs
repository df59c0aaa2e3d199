//! The methods tvm-ffi's library gives its own reflected types (`ffi_records`):
//! `ffi.EnumState.__ffi_init__`, `ffi.StructuralKey.__ffi_init__` and
//! `ffi.reflection.AccessPath`'s path building and comparing, with the function schemas stub
//! generators read. Installed with the built-in globals (they use the containers, which sit
//! above the type registry).

use crate::abi::TVMFFIByteArray;
use crate::abi::TVMFFIMethodInfo;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::header::{self, ObjPtr};
use crate::runtime::reflection::records::{json_string, new_record, read_field, set_field, Slot};

/// Register the methods (once, from the crate's init).
pub(crate) fn install() -> Result<()> {
    access_path::install_reprs()?;
    for (key, name, is_static, f) in methods() {
        let index = crate::runtime::object::type_table::type_key_to_index(key)?;
        let text = |s: &str| TVMFFIByteArray { data: s.as_ptr() as *const _, size: s.len() };
        let metadata = method_metadata(key, name);
        let m = TVMFFIMethodInfo {
            name: text(name),
            doc: text(""),
            metadata: text(&metadata),
            flags: if is_static { 1 << 2 } else { 0 },
            method: Value::Func(f).into_any(),
        };
        // SAFETY: texts alive for the call, an owned function value (copied, then released).
        let rc = unsafe { crate::runtime::reflection::type_info::register_method(index, &m) };
        // SAFETY: owned above.
        unsafe { header::release_any(&m.method) };
        rc?;
    }
    Ok(())
}

/// The metadata text (`{"type_schema": ...}`) tvm-ffi publishes for method `name` of `key`: a
/// function schema of its return and parameter types.
pub fn method_metadata(key: &str, name: &str) -> String {
    const PATH: &str = "ffi.reflection.AccessPath";
    let (ret, params): (&str, &[&str]) = match (key, name) {
        ("ffi.EnumState", "__ffi_init__") => ("ffi.Object", &[]),
        ("ffi.StructuralKey", "__ffi_init__") => ("ffi.Object", &["Any"]),
        (_, "_root") => (PATH, &[]),
        (_, "_extend") => (PATH, &[PATH, "ffi.reflection.AccessStep"]),
        (_, "_attr" | "_attr_missing") => (PATH, &[PATH, "ffi.String"]),
        (_, "_array_item" | "_array_item_missing") => (PATH, &[PATH, "int"]),
        (_, "_map_item" | "_map_item_missing") => (PATH, &[PATH, "Any"]),
        (_, "_is_prefix_of" | "_path_equal") => ("bool", &[PATH, PATH]),
        (_, "_to_steps") => ("ffi.Array", &[PATH]),
        _ => ("Any", &[]),
    };
    let ty = |t: &str| format!(r#"{{"type":"{t}"}}"#);
    let ret = if name == "_to_steps" {
        r#"{"type":"ffi.Array","args":[{"type":"ffi.reflection.AccessStep"}]}"#.to_string()
    } else {
        ty(ret)
    };
    let params = params.iter().map(|p| ty(p)).collect::<Vec<_>>().join(",");
    let schema = format!(r#"{{"type":"ffi.Function","named_args":{{"return":[{ret}],"params":[{params}]}}}}"#);
    format!(r#"{{"type_schema":{}}}"#, json_string(&schema))
}

/// The methods tvm-ffi's library gives its own types: `(type key, name, static, function)`.
pub fn methods() -> Vec<(&'static str, &'static str, bool, PackedFunc)> {
    let mut m: Vec<(&str, &str, bool, PackedFunc)> = vec![
        ("ffi.EnumState", "__ffi_init__", true, PackedFunc::from_typed(|_| new_enum_state())),
        (
            "ffi.StructuralKey",
            "__ffi_init__",
            true,
            // The structural hash lives with the other globals: reached through the registry.
            PackedFunc::from_typed(|args| {
                crate::runtime::function::registry::require("ffi.StructuralKey")?.call(&[args.to_value(0)?])
            }),
        ),
    ];
    m.extend(access_path::methods());
    m
}

/// `ffi.reflection.AccessPath`'s methods: a path is a chain of `(parent, step, depth)` records
/// from the root (no parent, no step, depth 0); a step is `(kind, key)`.
pub(crate) mod access_path {
    use super::*;
    use crate::runtime::object::header::ObjectRef;

    const KEY: &str = "ffi.reflection.AccessPath";

    fn path_arg(args: &crate::runtime::function::packed::Args<'_>, i: usize) -> Result<ObjectRef> {
        let o = args.object(i)?;
        if crate::runtime::object::type_table::type_index_to_key(o.type_index())? != KEY {
            return Err(Error::type_error(format!("argument {i}: expected an AccessPath")));
        }
        Ok(o)
    }

    fn field(o: &ObjectRef, offset: usize, slot: Slot) -> Result<Value> {
        read_field(o, offset, slot)
    }

    fn parent(p: &ObjectRef) -> Result<Option<ObjectRef>> {
        Ok(match field(p, 24, Slot::Obj)? {
            Value::Object(o) => Some(o),
            _ => None,
        })
    }

    fn depth(p: &ObjectRef) -> Result<i64> {
        field(p, 40, Slot::I32)?.as_int()
    }

    pub(crate) fn root() -> Result<ObjectRef> {
        Ok(new_record(KEY)?.to_object_ref())
    }

    pub(crate) fn step(kind: i64, key: Value) -> Result<Value> {
        let s = new_record("ffi.reflection.AccessStep")?;
        set_field(&s, "kind", Value::Int(kind))?;
        set_field(&s, "key", key)?;
        Ok(Value::Object(s.to_object_ref()))
    }

    pub(crate) fn extend(p: &ObjectRef, step: Value) -> Result<Value> {
        let r = new_record(KEY)?;
        set_field(&r, "parent", Value::Object(p.clone()))?;
        set_field(&r, "step", step)?;
        set_field(&r, "depth", Value::Int(depth(p)? + 1))?;
        Ok(Value::Object(r.to_object_ref()))
    }

    /// The steps from the root to `p`.
    fn steps(p: &ObjectRef) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut at = p.clone();
        while let Some(up) = parent(&at)? {
            out.push(field(&at, 32, Slot::Obj)?);
            at = up;
        }
        out.reverse();
        Ok(out)
    }

    fn steps_equal(a: &[Value], b: &[Value]) -> Result<bool> {
        for (x, y) in a.iter().zip(b) {
            let (Value::Object(x), Value::Object(y)) = (x, y) else { return Ok(false) };
            let same_kind = field(x, 24, Slot::I32)?.as_int()? == field(y, 24, Slot::I32)?.as_int()?;
            if !same_kind
                || !crate::runtime::collections::list_map::any_equal(
                    &field(x, 32, Slot::Any)?,
                    &field(y, 32, Slot::Any)?,
                )
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn stepper(kind: i64) -> PackedFunc {
        PackedFunc::from_typed(move |args| extend(&path_arg(&args, 0)?, step(kind, args.to_value(1)?)?))
    }

    /// A step as tvm-ffi writes it in a path: `.name`, `[index]`, `[repr(key)]`, and the
    /// missing kinds as `[<missing:...>]`. `nested` is the repr of a value.
    fn step_text(step: &ObjectRef, nested: &PackedFunc) -> Result<String> {
        let key = field(step, 32, Slot::Any)?;
        let repr = |v: Value| -> Result<String> { nested.call(&[v])?.into_string() };
        Ok(match field(step, 24, Slot::I32)?.as_int()? {
            0 => format!(".{}", key.into_string()?),
            1 => format!("[{}]", key.as_int()?),
            2 => format!("[{}]", repr(key)?),
            4 => format!("[<missing:{}>]", key.as_int()?),
            3 | 5 => format!("[<missing:{}>]", repr(key)?),
            k => return Err(Error::value(format!("unknown access step kind {k}"))),
        })
    }

    /// `__ffi_repr__` of steps and paths (`<root>` and its steps), as tvm-ffi registers them.
    pub(super) fn install_reprs() -> Result<()> {
        let step = PackedFunc::from_typed(|a| {
            let Value::Func(nested) = a.to_value(1)? else { return Err(Error::type_error("argument 1: a function")) };
            Ok(Value::Str(step_text(&a.object(0)?, &nested)?))
        });
        let path = PackedFunc::from_typed(|a| {
            let Value::Func(nested) = a.to_value(1)? else { return Err(Error::type_error("argument 1: a function")) };
            let mut text = String::from("<root>");
            for s in steps(&path_arg(&a, 0)?)? {
                text.push_str(&nested.call(&[s])?.into_string()?);
            }
            Ok(Value::Str(text))
        });
        let step_index = crate::runtime::object::type_table::type_key_to_index("ffi.reflection.AccessStep")?;
        crate::runtime::reflection::type_info::register_func_attr(step_index, b"__ffi_repr__", step)?;
        crate::runtime::reflection::type_info::register_func_attr(
            crate::runtime::object::type_table::type_key_to_index(KEY)?,
            b"__ffi_repr__",
            path,
        )
    }

    pub(super) fn methods() -> Vec<(&'static str, &'static str, bool, PackedFunc)> {
        let mut m = vec![
            (KEY, "_root", true, PackedFunc::from_typed(|_| Ok(Value::Object(root()?)))),
            (KEY, "_extend", false, PackedFunc::from_typed(|args| extend(&path_arg(&args, 0)?, args.to_value(1)?))),
        ];
        for (name, kind) in [
            ("_attr", 0),
            ("_array_item", 1),
            ("_map_item", 2),
            ("_attr_missing", 3),
            ("_array_item_missing", 4),
            ("_map_item_missing", 5),
        ] {
            m.push((KEY, name, false, stepper(kind)));
        }
        m.push((
            KEY,
            "_is_prefix_of",
            false,
            PackedFunc::from_typed(|args| {
                let (a, b) = (steps(&path_arg(&args, 0)?)?, steps(&path_arg(&args, 1)?)?);
                Ok(Value::Bool(a.len() <= b.len() && steps_equal(&a, &b[..a.len()])?))
            }),
        ));
        m.push((
            KEY,
            "_path_equal",
            false,
            PackedFunc::from_typed(|args| {
                let (a, b) = (steps(&path_arg(&args, 0)?)?, steps(&path_arg(&args, 1)?)?);
                Ok(Value::Bool(a.len() == b.len() && steps_equal(&a, &b)?))
            }),
        ));
        m.push((
            KEY,
            "_to_steps",
            false,
            PackedFunc::from_typed(|args| {
                let items = steps(&path_arg(&args, 0)?)?.into_iter().map(Value::into_any).collect();
                Ok(Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref()))
            }),
        ));
        m
    }
}

/// A fresh enum state: no entries, no indices, no attributes.
fn new_enum_state() -> Result<Value> {
    use crate::runtime::collections::list_map::{new_map, ListObj};
    let s = new_record("ffi.EnumState")?;
    set_field(&s, "entries", Value::Object(ObjPtr::new(ListObj::new(Vec::new())?).to_object_ref()))?;
    set_field(
        &s,
        "indexes",
        Value::Object(new_map::<{ crate::runtime::object::type_table::type_index::DICT }>(Vec::new())?),
    )?;
    set_field(
        &s,
        "attrs",
        Value::Object(new_map::<{ crate::runtime::object::type_table::type_index::DICT }>(Vec::new())?),
    )?;
    Ok(Value::Object(s.to_object_ref()))
}
