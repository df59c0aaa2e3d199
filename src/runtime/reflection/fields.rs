//! Reading, writing and making reflected objects through their type information, as tvm-ffi's
//! reflection defines it: each field's getter and setter (a C function, or a function object
//! called with the field's address), its default or default factory, and a type's empty object
//! from its creator or its `__ffi_new__` attribute. Used by the dataclass machinery, deep copy,
//! recursive comparison and repr; works the same on objects made here and by C++ code.

use crate::abi::{ffi_type_index as fti, TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{byte_array, Value};
use crate::runtime::object::header::{release_any, ObjectHeader, ObjectRef};

pub const HAS_DEFAULT: i64 = 1 << 1;
pub const SEQ_HASH_IGNORE: i64 = 1 << 3;
pub const DEF_PATTERN: i64 = 1 << 4;
pub const DEFAULT_FROM_FACTORY: i64 = 1 << 5;
pub const INIT_OFF: i64 = 1 << 9;
pub const KW_ONLY: i64 = 1 << 10;
pub const SETTER_IS_FUNCTION: i64 = 1 << 11;
pub const DEF_SIMPLE: i64 = 1 << 12;

/// The reflected fields of a type: its ancestors' (root first), then its own.
pub fn all_fields(index: u32) -> Result<Vec<TVMFFIFieldInfo>> {
    let info = crate::runtime::reflection::type_info::type_info(index)?;
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

/// A field's name.
pub fn name(f: &TVMFFIFieldInfo) -> String {
    // SAFETY: a field name kept by the type registry.
    String::from_utf8_lossy(unsafe { byte_array(&f.name) }).into_owned()
}

fn address(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo) -> *mut std::ffi::c_void {
    // SAFETY: the field lies at its offset inside the object (the caller holds it alive).
    unsafe { (obj as *mut u8).add(f.offset as usize) as *mut _ }
}

/// Reads field `f` of the object at `obj` (an owned value).
pub fn get_field(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo) -> Result<Value> {
    let out = get_field_any(obj, f)?;
    // SAFETY: owned by us now.
    unsafe { Value::adopt_any(out) }
}

/// Reads field `f` of the object at `obj` in its C form (an owned value: the caller releases it).
pub fn get_field_any(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo) -> Result<TVMFFIAny> {
    let getter = f.getter.ok_or_else(|| Error::type_error(format!("field `{}` has no getter", name(f))))?;
    let mut out = TVMFFIAny::NONE;
    let g = crate::runtime::base::error::last_error_generation();
    // SAFETY: a field of the live object; the getter writes an owned value.
    if unsafe { getter(address(obj, f), &mut out) } != 0 {
        return Err(crate::runtime::base::error::error_from_callee(g, || {
            Error::runtime(format!("reading field `{}` failed", name(f)))
        }));
    }
    Ok(out)
}

/// Writes the value `v` (a view) into field `f` of the object at `obj`.
pub fn set_field_any(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo, v: &TVMFFIAny) -> Result<()> {
    if f.setter.is_null() {
        return Err(Error::type_error(format!("field `{}` is read-only", name(f))));
    }
    let g = crate::runtime::base::error::last_error_generation();
    let rc = if f.flags & SETTER_IS_FUNCTION != 0 {
        // SAFETY: the setter is a live function object the registry holds.
        let func = unsafe { ObjectRef::from_borrowed(f.setter as *mut ObjectHeader) };
        let Value::Func(setter) = Value::from_object(func) else {
            return Err(Error::type_error(format!("the setter of field `{}` is not a function", name(f))));
        };
        // SAFETY: a valid view (caller contract).
        let value = unsafe { Value::from_any_view(v)? };
        return setter.call(&[Value::Handle(address(obj, f)), value]).map(|_| ());
    } else {
        // SAFETY: tvm-ffi's plain setter signature (flag checked above).
        let setter: unsafe extern "C" fn(*mut std::ffi::c_void, *const TVMFFIAny) -> i32 =
            unsafe { std::mem::transmute(f.setter) };
        // SAFETY: a field of the live object and a valid value.
        unsafe { setter(address(obj, f), v) }
    };
    if rc != 0 {
        return Err(crate::runtime::base::error::error_from_callee(g, || {
            Error::runtime(format!("setting field `{}` failed", name(f)))
        }));
    }
    Ok(())
}

/// Writes `v` into field `f` of the object at `obj`.
pub fn set_field(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo, v: Value) -> Result<()> {
    let a = v.into_any();
    let rc = set_field_any(obj, f, &a);
    // SAFETY: owned above, released once (the setter kept its own copy).
    unsafe { release_any(&a) };
    rc
}

/// Sets field `f` to its default (calling its factory when it has one).
pub fn set_default(obj: *mut ObjectHeader, f: &TVMFFIFieldInfo) -> Result<()> {
    if f.flags & DEFAULT_FROM_FACTORY != 0 {
        // SAFETY: the default slot holds an owned function value.
        let factory = unsafe { Value::from_any_view(&f.default_value_or_factory)? };
        let Value::Func(factory) = factory else {
            return Err(Error::type_error(format!("the default factory of `{}` is not a function", name(f))));
        };
        return set_field(obj, f, factory.call(&[])?);
    }
    set_field_any(obj, f, &f.default_value_or_factory)
}

/// The reflected fields' values of an object (owned), with each field's flags; none for an
/// object whose type has no reflected fields.
pub fn field_values(o: &ObjectRef) -> Result<Vec<(i64, Value)>> {
    all_fields(o.type_index())?.iter().map(|f| Ok((f.flags, get_field(o.as_header(), f)?))).collect()
}

/// The reflected fields of an object as `(name, flags, value)`.
pub fn named_field_values(o: &ObjectRef) -> Result<Vec<(String, i64, Value)>> {
    all_fields(o.type_index())?.iter().map(|f| Ok((name(f), f.flags, get_field(o.as_header(), f)?))).collect()
}

/// An empty object of type `index`: from its creator, else from its `__ffi_new__` attribute.
pub fn create_empty(index: u32) -> Result<ObjectRef> {
    // SAFETY: type information stays valid for the process.
    let creator = unsafe { (*crate::runtime::reflection::type_info::type_info(index)?).metadata.as_ref() }
        .and_then(|m| m.creator);
    if let Some(creator) = creator {
        let mut raw = std::ptr::null_mut();
        let g = crate::runtime::base::error::last_error_generation();
        // SAFETY: tvm-ffi's creator writes a new object (one reference) or fails.
        if unsafe { creator(&mut raw) } != 0 || raw.is_null() {
            return Err(crate::runtime::base::error::error_from_callee(g, || {
                Error::runtime("an object creator failed")
            }));
        }
        // SAFETY: the new object's one reference passes to the ref.
        return Ok(unsafe { ObjectRef::from_raw(raw as *mut ObjectHeader) });
    }
    if let Some(Value::Func(new)) = crate::runtime::reflection::type_info::attr(b"__ffi_new__", index) {
        if let Value::Object(o) = new.call(&[])? {
            return Ok(o);
        }
    }
    let key = crate::runtime::object::type_table::type_index_to_key(index)?;
    Err(Error::runtime(format!("Type `{key}` does not support reflection creation (no creator or __ffi_new__)")))
}

/// Whether a value is the object `target`.
pub fn is_object(v: &TVMFFIAny, target: &ObjectRef) -> bool {
    v.type_index >= fti::STATIC_OBJECT_BEGIN && v.value as usize == target.as_header() as usize
}
