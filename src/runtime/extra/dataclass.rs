//! tvm-ffi's dataclass globals: `ffi._RegisterFFIInit` (a type's `__ffi_init__` made from its
//! reflected fields: positional arguments in field order, required ones first, then keyword
//! arguments after the KWARGS marker, defaults and default factories for the rest), and what
//! Python-defined classes (`py_class`) need: `ffi.MakeFieldGetter` (a C getter per field kind),
//! `ffi.MakeFieldSetter` (a setter calling Python's converter first) and
//! `ffi._PyClassRegisterTypeAttrColumns` (`__ffi_init__`, `__ffi_new__` making an object of the
//! class's size with its fields inline, `__ffi_shallow_copy__`).

use crate::abi::{ffi_type_index as fti, TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{self, InplaceObject, ObjPtr, ObjectHeader, ObjectRef, ObjectType};
use crate::runtime::reflection::fields::{
    all_fields, create_empty, name, set_default, set_field, HAS_DEFAULT, INIT_OFF, KW_ONLY,
};
use crate::runtime::reflection::records::{accessors_of, release, store, Slot};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;

/// How `__ffi_init__` binds arguments to a type's fields.
struct InitPlan {
    type_key: String,
    fields: Vec<TVMFFIFieldInfo>,
    /// Fields taken by position: required ones first, each group in field order.
    positional: Vec<usize>,
    by_name: HashMap<String, usize>,
}

// SAFETY: the field records point at texts, defaults and setters the type registry keeps for
// the life of the process; the plan only reads them.
unsafe impl Send for InitPlan {}
// SAFETY: as above.
unsafe impl Sync for InitPlan {}

impl InitPlan {
    fn new(index: u32) -> Result<Self> {
        let fields = all_fields(index)?;
        let takes = |f: &TVMFFIFieldInfo| f.flags & INIT_OFF == 0;
        let by_name = fields.iter().enumerate().filter(|(_, f)| takes(f)).map(|(i, f)| (name(f), i)).collect();
        let mut positional: Vec<usize> =
            (0..fields.len()).filter(|&i| takes(&fields[i]) && fields[i].flags & KW_ONLY == 0).collect();
        positional.sort_by_key(|&i| fields[i].flags & HAS_DEFAULT != 0);
        Ok(InitPlan {
            type_key: crate::runtime::object::type_table::type_index_to_key(index)?,
            fields,
            positional,
            by_name,
        })
    }

    fn type_error(&self, what: impl std::fmt::Display) -> Error {
        Error::type_error(format!("{}.__ffi_init__() {what}", self.type_key))
    }

    fn set(&self, obj: &ObjectRef, i: usize, v: Value, done: &mut [bool]) -> Result<()> {
        let f = &self.fields[i];
        set_field(obj.as_header(), f, v)
            .map_err(|e| e.nested(format!("{}.__ffi_init__() field '{}'", self.type_key, name(f))))?;
        done[i] = true;
        Ok(())
    }

    /// Binds `args` to the fields of the fresh object `obj`.
    fn bind(&self, obj: &ObjectRef, args: &Args<'_>) -> Result<()> {
        let kwargs = crate::runtime::collections::array_globals::kwargs();
        let marker = (0..args.len())
            .find(|&i| matches!(args.to_value(i), Ok(Value::Object(o)) if o.as_header() == kwargs.as_header()));
        let n_pos = marker.unwrap_or(args.len());
        if n_pos > self.positional.len() {
            return Err(self.type_error(format!(
                "takes at most {} positional argument(s), but {n_pos} were given",
                self.positional.len()
            )));
        }
        let mut done = vec![false; self.fields.len()];
        for (k, &i) in self.positional.iter().take(n_pos).enumerate() {
            self.set(obj, i, args.to_value(k)?, &mut done)?;
        }
        if let Some(m) = marker {
            self.bind_keywords(obj, args, m + 1, &mut done)?;
        }
        self.fill_defaults(obj, &done)
    }

    fn bind_keywords(&self, obj: &ObjectRef, args: &Args<'_>, from: usize, done: &mut [bool]) -> Result<()> {
        if (args.len() - from) % 2 != 0 {
            return Err(self.type_error("KWARGS requires an even number of key-value arguments"));
        }
        for k in (from..args.len()).step_by(2) {
            let key = args.string(k)?;
            let &i = self
                .by_name
                .get(&key)
                .ok_or_else(|| self.type_error(format!("got an unexpected keyword argument '{key}'")))?;
            if done[i] {
                return Err(self.type_error(format!("got multiple values for argument '{key}'")));
            }
            self.set(obj, i, args.to_value(k + 1)?, done)?;
        }
        Ok(())
    }

    fn fill_defaults(&self, obj: &ObjectRef, done: &[bool]) -> Result<()> {
        for (i, f) in self.fields.iter().enumerate().filter(|(i, _)| !done[*i]) {
            if f.flags & HAS_DEFAULT != 0 {
                set_default(obj.as_header(), f).map_err(|e| {
                    e.nested(format!("{}.__ffi_init__() default for field '{}'", self.type_key, name(f)))
                })?;
            } else if f.flags & INIT_OFF == 0 {
                let kind = if f.flags & KW_ONLY != 0 { "keyword-only argument" } else { "argument" };
                return Err(self.type_error(format!("missing required {kind}: '{}'", name(f))));
            }
            let _ = i;
        }
        Ok(())
    }
}

/// A type's generated `__ffi_init__`.
fn make_init(index: u32) -> Result<PackedFunc> {
    let plan = InitPlan::new(index)?;
    Ok(PackedFunc::from_typed(move |args| {
        let obj = create_empty(index)?;
        plan.bind(&obj, &args)?;
        Ok(Value::Object(obj))
    }))
}

fn register_attr(index: u32, attr: &str, f: PackedFunc) -> Result<()> {
    crate::runtime::reflection::type_info::register_func_attr(index, attr.as_bytes(), f)
}

fn type_arg(args: &Args<'_>, i: usize) -> Result<u32> {
    let t = args.int(i)?;
    u32::try_from(t).map_err(|_| Error::value(format!("argument {i}: {t} is not a type index")))
}

// ---------------------------------------------------------------------------------------------
// Python-defined classes

/// How a field of a Python-defined class is stored, from its static type index and size.
fn slot_of(static_index: i32, size: i64) -> Result<Slot> {
    Ok(match static_index {
        fti::INT => Slot::I64,
        fti::FLOAT => Slot::F64,
        fti::BOOL => Slot::Bool,
        fti::OPAQUE_PTR => Slot::Ptr,
        fti::DATA_TYPE => Slot::DType,
        fti::DEVICE => Slot::Device,
        -1 if size == 8 => Slot::Obj,
        -1 | fti::NONE => Slot::Any,
        t if t >= fti::STATIC_OBJECT_BEGIN => Slot::Obj,
        t => return Err(Error::value(format!("Unsupported field type index for a field: {t}"))),
    })
}

/// Sizes of Python-defined classes, by type index.
static SIZES: Lazy<Mutex<HashMap<u32, usize>>> = Lazy::new(|| Mutex::new(HashMap::new()));

/// Payload of a Python-defined class's object: none; its fields are the words after the header.
pub struct PyClassObj;

impl ObjectType for PyClassObj {
    /// Made at the class's own index ([`ObjPtr::new_inplace_as`]), never downcast to.
    const TYPE_INDEX: u32 = crate::runtime::object::type_table::type_index::ROOT;
}

impl PyClassObj {
    fn header(&self) -> *mut ObjectHeader {
        // SAFETY: the payload sits right after its 24-byte header in the object's block.
        unsafe { (self as *const Self as *mut u8).sub(24) as *mut ObjectHeader }
    }

    fn index(&self) -> u32 {
        // SAFETY: the header of this live object.
        unsafe { (*self.header()).type_index }
    }
}

impl InplaceObject for PyClassObj {
    type Elem = u64;
    fn tail_len(&self) -> usize {
        SIZES.lock().get(&self.index()).map_or(0, |s| s.saturating_sub(24).div_ceil(8))
    }
}

impl Drop for PyClassObj {
    fn drop(&mut self) {
        for f in all_fields(self.index()).unwrap_or_default() {
            if let Ok(slot) = slot_of(f.field_static_type_index, f.size) {
                // SAFETY: each field of the object's type, released once as it is dropped.
                unsafe { release((self.header() as *mut u8).add(f.offset as usize), slot) };
            }
        }
    }
}

/// A new object of Python-defined class `index`, its fields empty (None, zero).
fn new_py_object(index: u32, total_size: usize) -> ObjectRef {
    let words = total_size.saturating_sub(24).div_ceil(8);
    ObjPtr::new_inplace_as(PyClassObj, vec![0u64; words], index).to_object_ref()
}

/// A copy of `src` sharing its fields' values.
fn shallow_copy(index: u32, total_size: usize, src: &ObjectRef) -> Result<ObjectRef> {
    let copy = new_py_object(index, total_size);
    for f in all_fields(index)? {
        let slot = slot_of(f.field_static_type_index, f.size)?;
        let (getter, _) = accessors_of(slot);
        let mut v = TVMFFIAny::NONE;
        // SAFETY: the same field of two live objects of one class: read from the source (an
        // owned value), stored into the copy, released.
        unsafe {
            let at = |o: &ObjectRef| (o.as_header() as *mut u8).add(f.offset as usize);
            if getter(at(src) as *mut c_void, &mut v) != 0 {
                return Err(crate::runtime::base::error::error_from_callee(0, || {
                    Error::runtime("reading a field failed")
                }));
            }
            let rc = store(at(&copy), slot, &v);
            header::release_any(&v);
            rc?;
        }
    }
    Ok(copy)
}

/// Python's value converter: `(converter, value, result) -> 0 | -1`.
type Convert = unsafe extern "C" fn(*mut c_void, *const TVMFFIAny, *mut TVMFFIAny) -> i32;

/// A setter for a field of kind `slot`: converts the value with Python's converter, then stores it.
fn field_setter(slot: Slot, converter: usize, convert: Convert) -> PackedFunc {
    PackedFunc::from_typed(move |args| {
        let Value::Handle(at) = args.to_value(0)? else {
            return Err(Error::type_error("argument 0: expected the field's address"));
        };
        let value = args.to_value(1)?.into_any();
        let mut out = TVMFFIAny::NONE;
        let g = crate::runtime::base::error::last_error_generation();
        // SAFETY: Python's converter, called as its C signature says; `value` is released after.
        let rc = unsafe { convert(converter as *mut c_void, &value, &mut out) };
        // SAFETY: owned above.
        unsafe { header::release_any(&value) };
        if rc != 0 {
            return Err(crate::runtime::base::error::error_from_callee(g, || {
                Error::type_error("field value conversion failed")
            }));
        }
        // SAFETY: `at` is the field's address in a live object (the reflection machinery passes
        // it); `out` is owned and released after being stored.
        let stored = unsafe { store(at as *mut u8, slot, &out) };
        // SAFETY: owned above.
        unsafe { header::release_any(&out) };
        stored.map(|_| Value::Null)
    })
}

fn py_class_columns(index: u32, total_size: usize) -> Result<()> {
    SIZES.lock().insert(index, total_size);
    register_attr(index, "__ffi_init__", make_init(index)?)?;
    register_attr(
        index,
        "__ffi_new__",
        PackedFunc::from_typed(move |_| Ok(Value::Object(new_py_object(index, total_size)))),
    )?;
    let copy =
        PackedFunc::from_typed(move |args| Ok(Value::Object(shallow_copy(index, total_size, &args.object(0)?)?)));
    register_attr(index, "__ffi_shallow_copy__", copy)
}

/// `ffi.MakeObjectFromPackedArgs(type, name, value, ...)`: an object of the type (an index or a
/// key) with the named fields set, the others at their defaults; a required field left out or
/// a name the type does not have is a `TypeError`.
fn make_object(args: &Args<'_>) -> Result<Value> {
    let index = match args.to_value(0)? {
        Value::Int(i) => u32::try_from(i).map_err(|_| Error::value(format!("argument 0: {i} is not a type index")))?,
        _ => crate::runtime::object::type_table::type_key_to_index(&args.string(0)?)?,
    };
    if args.len() % 2 != 1 {
        return Err(Error::value("expected a type, then field names and values in pairs"));
    }
    let obj = create_empty(index)?;
    let mut given: Vec<(String, usize, bool)> =
        (1..args.len()).step_by(2).map(|i| Ok((args.string(i)?, i + 1, false))).collect::<Result<_>>()?;
    let key = crate::runtime::object::type_table::type_index_to_key(index)?;
    for f in all_fields(index)? {
        let fname = name(&f);
        match given.iter_mut().find(|(n, _, found)| !found && *n == fname) {
            Some((_, at, found)) => {
                set_field(obj.as_header(), &f, args.to_value(*at)?)?;
                *found = true;
            }
            None if f.flags & HAS_DEFAULT != 0 => set_default(obj.as_header(), &f)?,
            None => return Err(Error::type_error(format!("Required field `{fname}` not set in type `{key}`"))),
        }
    }
    if let Some((n, _, _)) = given.iter().find(|(_, _, found)| !found) {
        return Err(Error::type_error(format!("Type `{key}` does not have field `{n}`")));
    }
    Ok(Value::Object(obj))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("ffi.MakeObjectFromPackedArgs", PackedFunc::from_typed(|args| make_object(&args))),
        (
            "ffi._RegisterFFIInit",
            PackedFunc::from_typed(|args| {
                let index = type_arg(&args, 0)?;
                register_attr(index, "__ffi_init__", make_init(index)?).map(|_| Value::Null)
            }),
        ),
        (
            "ffi.MakeFieldGetter",
            PackedFunc::from_typed(|args| {
                let (getter, _) = accessors_of(slot_of(args.int(0)? as i32, 16)?);
                Ok(Value::Int(getter as usize as i64))
            }),
        ),
        (
            "ffi.MakeFieldSetter",
            PackedFunc::from_typed(|args| {
                let slot = slot_of(args.int(0)? as i32, 16)?;
                let (converter, convert) = (args.int(1)? as usize, args.int(2)? as usize);
                if convert == 0 {
                    return Err(Error::value("argument 2: the converter function is NULL"));
                }
                // SAFETY: Python passes its converter callback's address as an integer.
                let convert: Convert = unsafe { std::mem::transmute::<usize, Convert>(convert) };
                Ok(Value::Func(field_setter(slot, converter, convert)))
            }),
        ),
        (
            "ffi._PyClassRegisterTypeAttrColumns",
            PackedFunc::from_typed(|args| {
                let (index, size) = (type_arg(&args, 0)?, args.int(1)?);
                let size =
                    usize::try_from(size).map_err(|_| Error::value(format!("argument 1: size {size} is negative")))?;
                py_class_columns(index, size).map(|_| Value::Null)
            }),
        ),
    ]
}
