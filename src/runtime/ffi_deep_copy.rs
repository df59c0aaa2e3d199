//! tvm-ffi's `ffi.DeepCopy`: containers (`ffi.Array`, `ffi.List`, `ffi.Map`, `ffi.Dict`) are
//! rebuilt with copies of what they hold; an object with reflected fields is copied (by its
//! `__ffi_shallow_copy__` attribute, else made by its type's creator with every field copied
//! over) and its object fields copied in turn; objects without fields (strings, tensors,
//! functions, modules, ...) are immutable here and shared. An object reached twice is copied
//! once, so shared structure stays shared.

use super::container::FfiArrayObj;
use super::error::{Error, Result};
use super::ffi_containers::{new_map, DictObj, ListObj};
use super::ffi_fields::{all_fields, get_field, set_field};
use super::object::{type_index as ti, ObjPtr, ObjectRef};
use super::packed::{PackedFunc, Value};
use crate::abi::{TVMFFIAny, TVMFFIFieldInfo};
use std::collections::HashMap;

type Memo = HashMap<usize, Value>;

/// A deep copy of `v`.
pub fn deep_copy(v: &Value) -> Result<Value> {
    copy_value(v, &mut Memo::new())
}

fn copy_value(v: &Value, memo: &mut Memo) -> Result<Value> {
    match v {
        Value::Object(o) => copy_object(o, memo),
        other => Ok(other.clone()),
    }
}

fn copy_object(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let key = o.as_header() as usize;
    if let Some(done) = memo.get(&key) {
        return Ok(done.clone());
    }
    let copy = match o.type_index() {
        ti::FFI_ARRAY | ti::LIST => copy_sequence(o, memo)?,
        ti::FFI_MAP | ti::DICT => copy_map(o, memo)?,
        _ => copy_reflected(o, memo)?,
    };
    memo.insert(key, copy.clone());
    Ok(copy)
}

/// Copies of the values (owned), copied in turn.
fn copy_all(views: Vec<Value>, memo: &mut Memo) -> Result<Vec<TVMFFIAny>> {
    views.iter().map(|v| Ok(copy_value(v, memo)?.into_any())).collect()
}

fn view(a: &TVMFFIAny) -> Result<Value> {
    // SAFETY: an owned element of a live container.
    unsafe { Value::from_any_view(a) }
}

fn copy_sequence(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let obj = if let Some(l) = o.downcast::<ListObj>() {
        let items = l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>())?;
        ObjPtr::new(ListObj::new(copy_all(items, memo)?)?).to_object_ref()
    } else {
        let a = o.downcast::<FfiArrayObj>().ok_or_else(|| Error::type_error("unreadable array"))?;
        let items = a.items().iter().map(view).collect::<Result<Vec<_>>>()?;
        ObjPtr::new(FfiArrayObj::new(copy_all(items, memo)?)?).to_object_ref()
    };
    Ok(Value::Object(obj))
}

fn copy_map(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let pairs = super::ffi_containers::map_cell(o, |c| {
        // SAFETY: live entries of the locked cell.
        c.entries()
            .into_iter()
            .map(|kv| unsafe { Ok((view(&(*kv).key)?, view(&(*kv).value)?)) })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut copied = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        copied.push((copy_value(&k, memo)?.into_any(), copy_value(&v, memo)?.into_any()));
    }
    let m = if o.downcast::<DictObj>().is_some() {
        new_map::<{ ti::DICT }>(copied)?
    } else {
        new_map::<{ ti::FFI_MAP }>(copied)?
    };
    Ok(Value::Object(m))
}

/// A shallow copy of a reflected object (fields shared), or `None` for a type without fields.
fn shallow_copy(o: &ObjectRef, fields: &[TVMFFIFieldInfo]) -> Result<Option<ObjectRef>> {
    if let Some(Value::Func(f)) = super::reflection::attr(b"__ffi_shallow_copy__", o.type_index()) {
        return match f.call(&[Value::Object(o.clone())])? {
            Value::Object(c) => Ok(Some(c)),
            other => Err(Error::type_error(format!("__ffi_shallow_copy__ returned {other:?}"))),
        };
    }
    if fields.is_empty() {
        return Ok(None);
    }
    let copy = super::ffi_fields::create_empty(o.type_index())?;
    for f in fields {
        set_field(copy.as_header(), f, get_field(o.as_header(), f)?)?;
    }
    Ok(Some(copy))
}

fn copy_reflected(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let fields = all_fields(o.type_index())?;
    let Some(copy) = shallow_copy(o, &fields)? else { return Ok(Value::Object(o.clone())) };
    memo.insert(o.as_header() as usize, Value::Object(copy.clone()));
    for f in &fields {
        if let v @ Value::Object(_) = get_field(copy.as_header(), f)? {
            set_field(copy.as_header(), f, copy_value(&v, memo)?)?;
        }
    }
    Ok(Value::Object(copy))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![("ffi.DeepCopy", PackedFunc::from_typed(|args| deep_copy(&args.to_value(0)?)))]
}
