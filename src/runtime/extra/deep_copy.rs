//! tvm-ffi's `ffi.DeepCopy`: containers (`ffi.Array`, `ffi.List`, `ffi.Map`, `ffi.Dict`) are
//! rebuilt with copies of what they hold; an object with reflected fields is copied (by its
//! `__ffi_shallow_copy__` attribute; a type without one is not copy-constructible, an error)
//! and its object fields copied in turn; strings, bytes, shapes, big integers and enum
//! instances never change and are shared, as are tensors, functions and modules. An object reached twice is copied
//! once, so shared structure stays shared.

use super::structural_types::{unshared, Types};
use crate::abi::TVMFFIAny;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{new_map, view, DictObj, ListObj};
use crate::runtime::container::FfiArrayObj;
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{
    header::{ObjPtr, ObjectRef},
    type_table::type_index as ti,
};
use crate::runtime::reflection::fields::{all_fields, get_field, set_field};
use std::collections::HashMap;

/// What a copy has made so far: copies by original, arrays and maps being copied (met again
/// inside themselves through a list, a dict or an object, they stand for themselves until the
/// end), and the lists, dicts and objects made (fixed up then).
#[derive(Default)]
struct Memo {
    done: HashMap<usize, Value, crate::runtime::base::addr_map::AddrHash>,
    in_progress: std::collections::HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
    deferred: bool,
    mutable: Vec<ObjectRef>,
    types: Types,
}

/// A deep copy of `v`.
pub fn deep_copy(v: &Value) -> Result<Value> {
    let mut memo = Memo::default();
    // The walk holds a reference of its own to every object it copies, the root's too.
    let copy = copy_value(&v.clone(), &mut memo)?;
    if memo.deferred {
        fix_placeholders(&memo)?;
    }
    Ok(copy)
}

/// The copy of `v` if it is an original that was copied, else `None`.
fn copy_of(v: &Value, memo: &Memo) -> Option<Value> {
    match v {
        Value::Object(o) => memo.done.get(&(o.as_header() as usize)).cloned(),
        _ => None,
    }
}

/// Replaces originals left in the copied lists, dicts and objects by their copies.
fn fix_placeholders(memo: &Memo) -> Result<()> {
    for c in &memo.mutable {
        if !matches!(c.type_index(), ti::LIST | ti::DICT) {
            fix_fields(c, memo)?;
        } else if let Some(l) = c.downcast::<ListObj>() {
            let items = l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>())?;
            for (i, v) in items.iter().enumerate() {
                if let Some(copy) = copy_of(v, memo) {
                    let old = l.with(|c| c.replace(i, copy.into_any()))?;
                    // SAFETY: the replaced element, owned by us now.
                    unsafe { crate::runtime::object::header::release_any(&old) };
                }
            }
        } else if let Some(d) = c.downcast::<DictObj>() {
            let pairs = crate::runtime::collections::list_map::map_items(c)?;
            if pairs.iter().any(|(k, v)| copy_of(k, memo).is_some() || copy_of(v, memo).is_some()) {
                d.with(|cell| {
                    cell.clear();
                    Ok(())
                })?;
                for (k, v) in pairs {
                    let (k, v) = (copy_of(&k, memo).unwrap_or(k), copy_of(&v, memo).unwrap_or(v));
                    crate::runtime::collections::list_map::dict_set(&d, k.into_any(), v.into_any())?;
                }
            }
        }
    }
    Ok(())
}

/// Points the object fields of a copied object that still hold an original at its copy.
fn fix_fields(copy: &ObjectRef, memo: &Memo) -> Result<()> {
    for f in &all_fields(copy.type_index())? {
        let v = get_field(copy.as_header(), f)?;
        if let Some(c) = copy_of(&v, memo) {
            set_field(copy.as_header(), f, c)?;
        }
    }
    Ok(())
}

fn copy_value(v: &Value, memo: &mut Memo) -> Result<Value> {
    match v {
        Value::Object(o) => copy_object(o, memo),
        other => Ok(other.clone()),
    }
}

/// `o` is held by the value the walk took it from (one reference of the walk's own), so an
/// object with one holder besides is met once ([`unshared`]) and needs no memo.
fn copy_object(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    if immutable(o, memo) {
        return Ok(Value::Object(o.clone()));
    }
    if unshared(o, 1) && !matches!(o.type_index(), ti::LIST | ti::DICT) {
        return nested("deep_copy", || match o.type_index() {
            ti::FFI_ARRAY => copy_sequence(o, memo),
            ti::FFI_MAP => copy_map(o, memo),
            _ => copy_reflected(o, memo, false),
        });
    }
    let key = o.as_header() as usize;
    if let Some(done) = memo.done.get(&key) {
        return Ok(done.clone());
    }
    if memo.in_progress.contains(&key) {
        memo.deferred = true;
        return Ok(Value::Object(o.clone()));
    }
    let copy = match o.type_index() {
        ti::LIST => nested("deep_copy", || copy_list(o, memo))?,
        ti::DICT => nested("deep_copy", || copy_dict(o, memo))?,
        ti::FFI_ARRAY | ti::FFI_MAP => {
            memo.in_progress.insert(key);
            let c = nested("deep_copy", || match o.type_index() {
                ti::FFI_ARRAY => copy_sequence(o, memo),
                _ => copy_map(o, memo),
            });
            memo.in_progress.remove(&key);
            c?
        }
        _ => nested("deep_copy", || copy_reflected(o, memo, true))?,
    };
    memo.done.insert(key, copy.clone());
    Ok(copy)
}

/// Copies of the values (owned), copied in turn.
fn copy_all(views: Vec<Value>, memo: &mut Memo) -> Result<Vec<TVMFFIAny>> {
    views.iter().map(|v| Ok(copy_value(v, memo)?.into_any())).collect()
}

/// The copy of a container's slot (owned): plain values and strings, bytes and shapes as they
/// are (a new reference), without making a value; other objects copied in turn.
fn copy_slot(a: &TVMFFIAny, memo: &mut Memo) -> Result<TVMFFIAny> {
    use crate::abi::ffi_type_index as fti;
    match a.type_index {
        fti::NONE
        | fti::INT
        | fti::BOOL
        | fti::FLOAT
        | fti::DATA_TYPE
        | fti::DEVICE
        | fti::SMALL_STR
        | fti::SMALL_BYTES => Ok(*a),
        t if [ti::STRING, ti::BYTES, ti::SHAPE_TUPLE].contains(&(t as u32)) && !a.as_ptr().is_null() => {
            // SAFETY: the slot's live object; the copy takes a reference of its own.
            unsafe { crate::runtime::object::header::retain(a.as_ptr() as *mut _) };
            Ok(*a)
        }
        _ => Ok(copy_value(&view(a)?, memo)?.into_any()),
    }
}

/// A list is made empty and remembered before its items are copied, so a list that holds
/// itself is copied into one that holds the copy.
fn copy_list(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let src = o.downcast::<ListObj>().ok_or_else(|| Error::type_error("unreadable list"))?;
    let items = src.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>())?;
    let copy = ObjPtr::new(ListObj::new(Vec::new())?);
    memo.done.insert(o.as_header() as usize, Value::Object(copy.to_object_ref()));
    memo.mutable.push(copy.to_object_ref());
    for v in copy_all(items, memo)? {
        copy.with(|c| c.push(v))?;
    }
    Ok(Value::Object(copy.to_object_ref()))
}

/// As [`copy_list`], for a dict.
fn copy_dict(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let pairs = crate::runtime::collections::list_map::map_items(o)?;
    let copy = DictObj::new(Vec::new())?;
    memo.done.insert(o.as_header() as usize, Value::Object(copy.to_object_ref()));
    memo.mutable.push(copy.to_object_ref());
    for (k, v) in pairs {
        let (k, v) = (copy_value(&k, memo)?.into_any(), copy_value(&v, memo)?.into_any());
        crate::runtime::collections::list_map::dict_set(&copy, k, v)?;
    }
    Ok(Value::Object(copy.to_object_ref()))
}

fn copy_sequence(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let obj = if let Some(l) = o.downcast::<ListObj>() {
        let items = l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>())?;
        ObjPtr::new(ListObj::new(copy_all(items, memo)?)?).to_object_ref()
    } else {
        let a = o.downcast::<FfiArrayObj>().ok_or_else(|| Error::type_error("unreadable array"))?;
        let mut copied = Vec::with_capacity(a.items().len());
        for item in a.items() {
            match copy_slot(item, memo) {
                Ok(c) => copied.push(c),
                Err(e) => {
                    crate::runtime::collections::list_map::release_all(copied);
                    return Err(e);
                }
            }
        }
        FfiArrayObj::new(copied).to_object_ref()
    };
    Ok(Value::Object(obj))
}

fn copy_map(o: &ObjectRef, memo: &mut Memo) -> Result<Value> {
    let mut copied = Vec::new();
    for (k, v) in crate::runtime::collections::list_map::map_items(o)? {
        copied.push((copy_value(&k, memo)?.into_any(), copy_value(&v, memo)?.into_any()));
    }
    Ok(Value::Object(new_map::<{ ti::FFI_MAP }>(copied)?))
}

/// A shallow copy of an object by its type's `__ffi_shallow_copy__` (fields shared).
fn shallow_copy(o: &ObjectRef, memo: &mut Memo) -> Result<ObjectRef> {
    let Some(f) = memo.types.record(o).shallow_copy.clone() else {
        let key = crate::runtime::object::type_table::type_index_to_key(o.type_index())?;
        return Err(Error::runtime(format!(
            "Cannot deep copy object of type \"{key}\" because it is not copy-constructible"
        )));
    };
    match f.call(&[Value::Object(o.clone())])? {
        Value::Object(c) => Ok(c),
        other => Err(Error::type_error(format!("__ffi_shallow_copy__ returned {other:?}"))),
    }
}

/// Whether objects of this kind are never changed, so a copy may share them: strings, bytes,
/// shapes, big integers and enum instances.
fn immutable(o: &ObjectRef, memo: &mut Memo) -> bool {
    match o.type_index() {
        ti::STRING | ti::BYTES | ti::SHAPE_TUPLE | ti::BIG_INT => true,
        ti::LIST | ti::DICT | ti::FFI_ARRAY | ti::FFI_MAP => false,
        _ => memo.types.record(o).is_enum,
    }
}

/// A copy of an object with reflected fields (remembered, when `shared`, before its fields are
/// copied: one holding itself through them gets the copy).
fn copy_reflected(o: &ObjectRef, memo: &mut Memo, shared: bool) -> Result<Value> {
    let copy = shallow_copy(o, memo)?;
    if shared {
        memo.done.insert(o.as_header() as usize, Value::Object(copy.clone()));
    }
    memo.mutable.push(copy.clone());
    let count = match &memo.types.record(o).all_fields {
        Some(fields) => fields.len(),
        None => all_fields(o.type_index()).map(|_| 0)?,
    };
    for i in 0..count {
        let f = memo.types.record(o).all_fields.as_ref().expect("listed above")[i];
        if let Value::Object(v) = get_field(copy.as_header(), &f)? {
            // A field left as it is (a string, an enum, ...) is not set again: a setter may
            // convert through the caller's language.
            match copy_object(&v, memo)? {
                Value::Object(c) if c.as_header() == v.as_header() => {}
                c => set_field(copy.as_header(), &f, c)?,
            }
        }
    }
    Ok(Value::Object(copy))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![("ffi.DeepCopy", PackedFunc::from_typed(|args| deep_copy(&args.to_value(0)?)))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::reflection::records::{new_record, set_field as set_record_field};

    fn first_item(array: &Value) -> ObjectRef {
        let Value::Object(a) = array else { panic!("an array") };
        let a = a.downcast::<FfiArrayObj>().expect("an array");
        match view(&a.items()[0]).unwrap() {
            Value::Object(o) => o,
            other => panic!("an object, not {other:?}"),
        }
    }

    fn header(v: &Value) -> usize {
        match v {
            Value::Object(o) => o.as_header() as usize,
            other => panic!("an object, not {other:?}"),
        }
    }

    #[test]
    fn an_object_pointing_back_at_its_array_points_at_the_copy() {
        let step = new_record("ffi.reflection.AccessStep").unwrap();
        let items = vec![Value::Object(step.to_object_ref()).into_any()];
        let array = Value::Object(FfiArrayObj::new(items).to_object_ref());
        set_record_field(&step, "key", array.clone()).unwrap();

        let copy = deep_copy(&array).unwrap();
        let step_copy = first_item(&copy);
        assert_ne!(step_copy.as_header(), step.to_object_ref().as_header());
        let back = get_field(step_copy.as_header(), &all_fields(step_copy.type_index()).unwrap()[1]).unwrap();
        assert_eq!(header(&back), header(&copy), "the copy refers to the copied array");
        assert_ne!(header(&back), header(&array));
        // Break both cycles so the objects are freed.
        set_record_field(&step, "key", Value::Int(0)).unwrap();
        set_field(step_copy.as_header(), &all_fields(step_copy.type_index()).unwrap()[1], Value::Int(0)).unwrap();
    }
}
