//! tvm-ffi's `ffi.DeepCopy`: containers (`ffi.Array`, `ffi.List`, `ffi.Map`, `ffi.Dict`) are
//! rebuilt with copies of what they hold; an object with reflected fields is copied (by its
//! `__ffi_shallow_copy__` attribute, else made by its type's creator with every field copied
//! over) and its object fields copied in turn; objects without fields (strings, tensors,
//! functions, modules, ...) are immutable here and shared. An object reached twice is copied
//! once, so shared structure stays shared.

use super::container::FfiArrayObj;
use super::error::{Error, Result};
use super::ffi_containers::{new_map, DictObj, ListObj};
use super::object::{self, release_any, type_index as ti, ObjPtr, ObjectHeader, ObjectRef};
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

/// The reflected fields of a type and its ancestors.
fn all_fields(index: u32) -> Result<Vec<TVMFFIFieldInfo>> {
    let info = super::reflection::type_info(index)?;
    let mut out = Vec::new();
    // SAFETY: type information stays valid for the process; its arrays hold `num_*` entries.
    unsafe {
        let info = &*info;
        for d in 0..info.type_depth as usize {
            let a = &**info.type_ancestors.add(d);
            out.extend((0..a.num_fields as usize).map(|i| *a.fields.add(i)));
        }
        out.extend((0..info.num_fields as usize).map(|i| *info.fields.add(i)));
    }
    Ok(out)
}

/// Reads field `f` of the object at `obj` (an owned value).
fn get_field(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo) -> Result<Value> {
    let getter = f.getter.ok_or_else(|| Error::type_error("a reflected field has no getter"))?;
    let mut out = TVMFFIAny::NONE;
    let g = super::error::last_error_generation();
    // SAFETY: the field lies at its offset in the live object; the getter writes an owned value.
    let rc = unsafe { getter((obj as *mut u8).add(f.offset as usize) as *mut _, &mut out) };
    if rc != 0 {
        return Err(super::error::error_from_callee(g, || Error::runtime("a field getter failed")));
    }
    // SAFETY: owned by us now.
    unsafe { Value::adopt_any(out) }
}

/// The reflected fields' values of an object (owned), with each field's flags; none for an
/// object whose type has no reflected fields.
pub fn field_values(o: &ObjectRef) -> Result<Vec<(i64, Value)>> {
    all_fields(o.type_index())?.iter().map(|f| Ok((f.flags, get_field(o.as_header(), f)?))).collect()
}

/// The reflected fields of an object as `(name, flags, value)`.
pub fn named_field_values(o: &ObjectRef) -> Result<Vec<(String, i64, Value)>> {
    all_fields(o.type_index())?
        .iter()
        .map(|f| {
            // SAFETY: a field name kept by the type registry.
            let name = String::from_utf8_lossy(unsafe { super::packed::byte_array(&f.name) }).into_owned();
            Ok((name, f.flags, get_field(o.as_header(), f)?))
        })
        .collect()
}

/// Writes field `f` of the object at `obj`.
fn set_field(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo, v: Value) -> Result<()> {
    const SETTER_IS_FUNCTION: i64 = 1 << 11;
    if f.setter.is_null() || f.flags & SETTER_IS_FUNCTION != 0 {
        return Err(Error::unsupported("deep copy of a field set through a function object"));
    }
    // SAFETY: tvm-ffi's setter signature for a plain setter (checked just above).
    let setter: unsafe extern "C" fn(*mut std::ffi::c_void, *const TVMFFIAny) -> i32 =
        unsafe { std::mem::transmute(f.setter) };
    let a = v.into_any();
    let g = super::error::last_error_generation();
    // SAFETY: the field lies at its offset in the live object; the setter copies the value.
    let rc = unsafe { setter((obj as *mut u8).add(f.offset as usize) as *mut _, &a) };
    // SAFETY: owned above.
    unsafe { release_any(&a) };
    if rc != 0 {
        return Err(super::error::error_from_callee(g, || Error::runtime("a field setter failed")));
    }
    Ok(())
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
    let key = object::type_index_to_key(o.type_index())?;
    // SAFETY: type information stays valid for the process.
    let creator = unsafe { (*super::reflection::type_info(o.type_index())?).metadata.as_ref() }.and_then(|m| m.creator);
    let creator = creator.ok_or_else(|| Error::type_error(format!("`{key}` cannot be copied: it has no creator")))?;
    let mut raw = std::ptr::null_mut();
    let g = super::error::last_error_generation();
    // SAFETY: tvm-ffi's creator writes a new object (one reference) or fails.
    if unsafe { creator(&mut raw) } != 0 || raw.is_null() {
        return Err(super::error::error_from_callee(g, || Error::runtime(format!("making a `{key}` failed"))));
    }
    // SAFETY: the new object's one reference passes to the ref.
    let copy = unsafe { ObjectRef::from_raw(raw as *mut ObjectHeader) };
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
