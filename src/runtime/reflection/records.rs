//! The reflected object types tvm-ffi's own library defines (`ffi.EnumState`, `ffi.Enum` and its
//! two kinds, the access-path and structural-visit types), as records: objects whose fields sit
//! at the offsets tvm-ffi's C++ headers give them, read and written through the field getters
//! and setters registered with each type. C++ code compiled against those headers makes such
//! objects itself (an enum's state, for one) and reads ours inline, so the offsets are the facts
//! here, each type's size and field kinds recorded once in [`SPECS`].

use crate::abi::{TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::header::{self, release_any, ObjPtr, ObjectHeader, ObjectType};
use std::ffi::c_void;

/// How a field is stored.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Slot {
    /// A nullable object pointer owning one reference (tvm-ffi's `ObjectRef`, 8 bytes).
    Obj,
    /// A `TVMFFIAny` owning its value (tvm-ffi's `Any`, and `String`, 16 bytes).
    Any,
    I64,
    I32,
    F64,
    /// One byte, 0 or 1.
    Bool,
    Ptr,
    DType,
    Device,
}

impl Slot {
    fn size(self) -> i64 {
        match self {
            Slot::Obj | Slot::I64 | Slot::F64 | Slot::Ptr | Slot::Device => 8,
            Slot::Any => 16,
            Slot::I32 | Slot::DType => 4,
            Slot::Bool => 1,
        }
    }
}

/// One field: name, offset from the object header, kind, tvm-ffi flags, static type index of
/// its values (-1: any), type schema.
pub struct FieldSpec {
    pub name: &'static str,
    pub offset: usize,
    pub slot: Slot,
    pub flags: i64,
    pub static_index: i32,
    pub schema: &'static str,
}

/// One type: key, parent key, object size, structural equality kind, whether a default object
/// can be made, fields.
pub struct TypeSpec {
    pub key: &'static str,
    pub parent: &'static str,
    pub total_size: i32,
    pub eq_kind: i32,
    pub creator: bool,
    pub fields: &'static [FieldSpec],
}

const INIT_OFF: i64 = 1 << 9;
const SEQ_HASH_IGNORE: i64 = 1 << 3;
const HAS_DEFAULT: i64 = 1 << 1;

const fn field(name: &'static str, offset: usize, slot: Slot, static_index: i32, schema: &'static str) -> FieldSpec {
    FieldSpec { name, offset, slot, flags: 0, static_index, schema }
}

const fn flagged(f: FieldSpec, flags: i64) -> FieldSpec {
    FieldSpec { flags, ..f }
}

const ANY: &str = r#"{"type":"Any"}"#;
const INT: &str = r#"{"type":"int"}"#;
const STR: &str = r#"{"type":"ffi.String"}"#;
const OBJECT_LIST: &str = r#"{"type":"ffi.List","args":[{"type":"ffi.Object"}]}"#;
const OPT_OBJECT: &str = r#"{"type":"Optional","args":[{"type":"ffi.Object"}]}"#;

/// `ffi.Module`'s `imports_`: the array of its imports, right after the header.
pub const fn module_imports_field() -> FieldSpec {
    field("imports_", 24, Slot::Obj, 71, r#"{"type":"ffi.Array","args":[{"type":"Any"}]}"#)
}

/// tvm-ffi's own reflected types, in the order its library registers them (so they get the
/// same dynamic type indices in this table's order), and `ffi.VisitInterrupt`'s field.
pub const SPECS: [TypeSpec; 11] = [
    TypeSpec {
        key: "ffi.EnumState",
        parent: "ffi.Object",
        total_size: 48,
        eq_kind: 0,
        creator: true,
        fields: &[
            flagged(field("entries", 24, Slot::Obj, 75, OBJECT_LIST), INIT_OFF),
            flagged(
                field(
                    "indexes",
                    32,
                    Slot::Obj,
                    64,
                    r#"{"type":"ffi.Dict","args":[{"type":"Any"},{"type":"ffi.Object"}]}"#,
                ),
                INIT_OFF,
            ),
            flagged(
                field(
                    "attrs",
                    40,
                    Slot::Obj,
                    64,
                    r#"{"type":"ffi.Dict","args":[{"type":"ffi.String"},{"type":"ffi.Dict","args":[{"type":"ffi.Object"},{"type":"Any"}]}]}"#,
                ),
                INIT_OFF,
            ),
        ],
    },
    TypeSpec {
        key: "ffi.Enum",
        parent: "ffi.Object",
        total_size: 48,
        eq_kind: 5,
        creator: true,
        fields: &[
            flagged(field("_int_index", 24, Slot::I64, 1, INT), SEQ_HASH_IGNORE),
            field("_str_index", 32, Slot::Any, -1, STR),
        ],
    },
    TypeSpec {
        key: "ffi.IntEnum",
        parent: "ffi.Enum",
        total_size: 48,
        eq_kind: 5,
        creator: true,
        fields: &[flagged(field("value", 24, Slot::I64, 1, INT), INIT_OFF | SEQ_HASH_IGNORE)],
    },
    TypeSpec {
        key: "ffi.StrEnum",
        parent: "ffi.Enum",
        total_size: 48,
        eq_kind: 5,
        creator: true,
        fields: &[flagged(field("value", 32, Slot::Any, -1, STR), INIT_OFF | SEQ_HASH_IGNORE)],
    },
    TypeSpec {
        key: "ffi.reflection.AccessStep",
        parent: "ffi.Object",
        total_size: 48,
        eq_kind: 4,
        creator: true,
        fields: &[field("kind", 24, Slot::I32, 1, INT), field("key", 32, Slot::Any, -1, ANY)],
    },
    TypeSpec {
        key: "ffi.reflection.AccessPath",
        parent: "ffi.Object",
        total_size: 48,
        eq_kind: 4,
        creator: true,
        fields: &[
            field("parent", 24, Slot::Obj, -1, OPT_OBJECT),
            field("step", 32, Slot::Obj, -1, r#"{"type":"Optional","args":[{"type":"ffi.reflection.AccessStep"}]}"#),
            field("depth", 40, Slot::I32, 1, INT),
        ],
    },
    TypeSpec {
        key: "ffi.StructuralVisitor",
        parent: "ffi.Object",
        total_size: 40,
        eq_kind: 0,
        creator: false,
        fields: &[],
    },
    TypeSpec {
        key: "ffi.VisitErrorContext",
        parent: "ffi.Object",
        total_size: 40,
        eq_kind: 0,
        creator: true,
        fields: &[
            field("reverse_visit_pattern", 24, Slot::Obj, 75, OBJECT_LIST),
            field("prev_error_context", 32, Slot::Obj, -1, OPT_OBJECT),
        ],
    },
    TypeSpec {
        key: "ffi.StructuralMutator",
        parent: "ffi.Object",
        total_size: 40,
        eq_kind: 0,
        creator: false,
        fields: &[],
    },
    TypeSpec {
        key: "ffi.StructuralKey",
        parent: "ffi.Object",
        total_size: 48,
        eq_kind: 0,
        creator: true,
        fields: &[field("key", 24, Slot::Any, -1, ANY), field("hash_i64", 40, Slot::I64, 1, INT)],
    },
    TypeSpec {
        key: "ffi.VisitInterrupt",
        parent: "ffi.Object",
        total_size: 40,
        eq_kind: 0,
        creator: true,
        fields: &[flagged(field("value", 24, Slot::Any, -1, ANY), HAS_DEFAULT)],
    },
];

/// The spec of a registered record type, by index.
fn spec_of(index: u32) -> Option<&'static TypeSpec> {
    let key = crate::runtime::object::type_table::type_index_to_key(index).ok()?;
    SPECS.iter().find(|s| s.key == key)
}

/// Payload of a record: 24 bytes of fields after the header (every type of [`SPECS`] fits),
/// zero when made; which words hold what is the type's spec.
#[repr(C)]
pub struct RecordObj {
    words: [u64; 3],
}

impl ObjectType for RecordObj {
    /// Records are made at their own type's index ([`ObjPtr::new_as`]), never downcast to.
    const TYPE_INDEX: u32 = crate::runtime::object::type_table::type_index::ROOT;
}

impl Drop for RecordObj {
    fn drop(&mut self) {
        // SAFETY: a record's payload sits right after its 24-byte header in one block.
        let header = unsafe { (self as *mut Self as *mut u8).sub(24) } as *mut ObjectHeader;
        // SAFETY: the header of this live (being dropped) object.
        let index = unsafe { (*header).type_index };
        for f in fields_of(index) {
            // SAFETY: each field of the record's own spec, released once.
            unsafe { release_slot((header as *mut u8).add(f.offset), f.slot) };
        }
    }
}

/// The fields of a record type and of its record ancestors (an `ffi.IntEnum` has `ffi.Enum`'s);
/// an alias of a parent's field at the same offset counts once.
fn fields_of(index: u32) -> Vec<&'static FieldSpec> {
    let mut out: Vec<&'static FieldSpec> = Vec::new();
    let mut i = index;
    loop {
        for f in spec_of(i).map_or(&[][..], |s| s.fields) {
            if !out.iter().any(|g| g.offset == f.offset) {
                out.push(f);
            }
        }
        match crate::runtime::object::type_table::type_parent_and_depth(i) {
            Ok((p, d)) if d > 0 => i = p,
            _ => return out,
        }
    }
}

/// Releases what a slot owns.
///
/// # Safety
/// `at` is a live slot of kind `slot`.
unsafe fn release_slot(at: *mut u8, slot: Slot) {
    match slot {
        // SAFETY: the caller's contract: an owned, nullable object pointer.
        Slot::Obj => unsafe {
            let p = *(at as *const *mut ObjectHeader);
            if !p.is_null() {
                header::release(p);
            }
        },
        // SAFETY: the caller's contract: an owned value.
        Slot::Any => unsafe { release_any(&*(at as *const TVMFFIAny)) },
        _ => {}
    }
}

/// A new record of type `key`, all fields empty (None, 0).
pub fn new_record(key: &str) -> Result<ObjPtr<RecordObj>> {
    let index = crate::runtime::object::type_table::type_key_to_index(key)?;
    if spec_of(index).is_none() {
        return Err(Error::type_error(format!("`{key}` is not a record type")));
    }
    let r = ObjPtr::new_as(RecordObj { words: [0; 3] }, index);
    for f in fields_of(index).into_iter().filter(|f| f.slot == Slot::Any) {
        // SAFETY: an Any slot of the fresh record, set to None before anyone reads it.
        unsafe { ((r.as_header() as *mut u8).add(f.offset) as *mut TVMFFIAny).write(TVMFFIAny::NONE) };
    }
    Ok(r)
}

/// Sets field `name` of a record made here (the value is copied; what it replaces released).
pub fn set_field(r: &ObjPtr<RecordObj>, name: &str, v: Value) -> Result<()> {
    let index = r.to_object_ref().type_index();
    let f = fields_of(index)
        .into_iter()
        .find(|f| f.name == name)
        .ok_or_else(|| Error::attribute(format!("record has no field `{name}`")))?;
    let a = v.into_any();
    // SAFETY: a slot of this live record, of the spec's kind; `a` is owned and released after.
    let rc = unsafe { write_slot((r.as_header() as *mut u8).add(f.offset), f.slot, &a) };
    // SAFETY: `write_slot` took its own reference.
    unsafe { release_any(&a) };
    rc
}

/// Stores a copy of the value `a` into a slot (releasing the old contents).
///
/// # Safety
/// `at` is a live slot of kind `slot`; `a` a valid value.
unsafe fn write_slot(at: *mut u8, slot: Slot, a: &TVMFFIAny) -> Result<()> {
    // SAFETY: the caller's contract.
    let v = unsafe { Value::from_any_view(a)? };
    match slot {
        Slot::I64 => {
            let n = v.as_int().map_err(|_| Error::type_error(format!("expected an int, got {v:?}")))?;
            // SAFETY: an 8-byte integer slot.
            unsafe { (at as *mut i64).write(n) }
        }
        Slot::I32 => {
            let n = v.as_int().map_err(|_| Error::type_error(format!("expected an int, got {v:?}")))?;
            let n = i32::try_from(n).map_err(|_| Error::value(format!("{n} does not fit a 32-bit field")))?;
            // SAFETY: a 4-byte integer slot.
            unsafe { (at as *mut i32).write(n) }
        }
        Slot::F64 => {
            let x = match v {
                Value::Float(x) => x,
                Value::Int(i) => i as f64,
                Value::Bool(b) => b as i64 as f64,
                v => return Err(Error::type_error(format!("expected a float, got {v:?}"))),
            };
            // SAFETY: an 8-byte float slot.
            unsafe { (at as *mut f64).write(x) }
        }
        Slot::Bool => {
            let b = match v {
                Value::Bool(b) => b,
                Value::Int(i) => i != 0,
                v => return Err(Error::type_error(format!("expected a bool, got {v:?}"))),
            };
            // SAFETY: a one-byte bool slot.
            unsafe { at.write(b as u8) }
        }
        Slot::Ptr => {
            let p = match v {
                Value::Handle(p) => p,
                Value::Null => std::ptr::null_mut(),
                v => return Err(Error::type_error(format!("expected an opaque pointer, got {v:?}"))),
            };
            // SAFETY: a pointer slot.
            unsafe { (at as *mut *mut c_void).write(p) }
        }
        Slot::DType => {
            let Value::DataType(t) = v else { return Err(Error::type_error(format!("expected a dtype, got {v:?}"))) };
            // SAFETY: a DLDataType slot.
            unsafe { (at as *mut crate::abi::DLDataType).write(t) }
        }
        Slot::Device => {
            let Value::Device(d) = v else { return Err(Error::type_error(format!("expected a device, got {v:?}"))) };
            // SAFETY: a DLDevice slot.
            unsafe { (at as *mut crate::abi::DLDevice).write(d) }
        }
        Slot::Any => {
            let new = v.into_any();
            // SAFETY: the old owned value is released and replaced by the new owned one.
            unsafe {
                release_slot(at, slot);
                (at as *mut TVMFFIAny).write(new);
            }
        }
        Slot::Obj => {
            let new = match v {
                Value::Null => std::ptr::null_mut(),
                v => {
                    let a = v.into_any();
                    if a.type_index < crate::abi::ffi_type_index::STATIC_OBJECT_BEGIN {
                        // SAFETY: owned by us, not an object: released (a no-op for plain data).
                        unsafe { release_any(&a) };
                        return Err(Error::type_error("expected an object or None"));
                    }
                    a.as_ptr() as *mut ObjectHeader
                }
            };
            // SAFETY: the old reference is released and the slot takes the new one.
            unsafe {
                release_slot(at, slot);
                (at as *mut *mut ObjectHeader).write(new);
            }
        }
    }
    Ok(())
}

/// Reads a slot as an owned value.
///
/// # Safety
/// `at` is a live slot of kind `slot`.
unsafe fn read_slot(at: *const u8, slot: Slot) -> Result<TVMFFIAny> {
    // SAFETY: the caller's contract, per kind.
    unsafe {
        Ok(match slot {
            Slot::I64 => Value::Int(*(at as *const i64)).into_any(),
            Slot::I32 => Value::Int(*(at as *const i32) as i64).into_any(),
            Slot::F64 => Value::Float(*(at as *const f64)).into_any(),
            Slot::Bool => Value::Bool(*at != 0).into_any(),
            Slot::Ptr => Value::Handle(*(at as *const *mut c_void)).into_any(),
            Slot::DType => Value::DataType(*(at as *const crate::abi::DLDataType)).into_any(),
            Slot::Device => Value::Device(*(at as *const crate::abi::DLDevice)).into_any(),
            // An owned copy of what the slot owns (the same object, a new reference).
            Slot::Any => {
                let a = *(at as *const TVMFFIAny);
                if a.type_index >= crate::abi::ffi_type_index::STATIC_OBJECT_BEGIN && !a.as_ptr().is_null() {
                    header::retain(a.as_ptr() as *mut ObjectHeader);
                }
                a
            }
            Slot::Obj => {
                let p = *(at as *const *mut ObjectHeader);
                if p.is_null() {
                    TVMFFIAny::NONE
                } else {
                    Value::Object(header::ObjectRef::from_borrowed(p)).into_any()
                }
            }
        })
    }
}

macro_rules! accessors {
    ($get:ident, $set:ident, $slot:expr) => {
        unsafe extern "C" fn $get(field: *mut c_void, result: *mut TVMFFIAny) -> i32 {
            // SAFETY: tvm-ffi calls a getter with a field of this kind and a result slot.
            field_call(|| {
                // SAFETY: as above.
                let v = unsafe { read_slot(field as *const u8, $slot)? };
                // SAFETY: as above.
                unsafe { result.write(v) };
                Ok(())
            })
        }
        unsafe extern "C" fn $set(field: *mut c_void, value: *const TVMFFIAny) -> i32 {
            // SAFETY: tvm-ffi calls a setter with a field of this kind and a valid value.
            field_call(|| unsafe { write_slot(field as *mut u8, $slot, &*value) })
        }
    };
}

/// Runs a getter's or setter's body: 0, or -1 with the error raised tvm-ffi's way.
fn field_call(f: impl FnOnce() -> Result<()>) -> i32 {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            crate::runtime::base::error::set_last_error(&e);
            -1
        }
        Err(p) => {
            crate::runtime::base::error::set_last_error(&Error::internal(crate::runtime::base::error::panic_message(
                &*p,
            )));
            -1
        }
    }
}

accessors!(get_obj, set_obj, Slot::Obj);
accessors!(get_any, set_any, Slot::Any);
accessors!(get_i64, set_i64, Slot::I64);
accessors!(get_i32, set_i32, Slot::I32);
accessors!(get_f64, set_f64, Slot::F64);
accessors!(get_bool, set_bool, Slot::Bool);
accessors!(get_ptr, set_ptr, Slot::Ptr);
accessors!(get_dtype, set_dtype, Slot::DType);
accessors!(get_device, set_device, Slot::Device);

type Getter = unsafe extern "C" fn(*mut c_void, *mut TVMFFIAny) -> i32;
type Setter = unsafe extern "C" fn(*mut c_void, *const TVMFFIAny) -> i32;

/// The getter and setter of a slot kind.
pub fn accessors_of(slot: Slot) -> (Getter, Setter) {
    match slot {
        Slot::Obj => (get_obj, set_obj),
        Slot::Any => (get_any, set_any),
        Slot::I64 => (get_i64, set_i64),
        Slot::I32 => (get_i32, set_i32),
        Slot::F64 => (get_f64, set_f64),
        Slot::Bool => (get_bool, set_bool),
        Slot::Ptr => (get_ptr, set_ptr),
        Slot::DType => (get_dtype, set_dtype),
        Slot::Device => (get_device, set_device),
    }
}

/// Writes a value (a view) into a slot of kind `slot` at `at`, releasing what it held.
///
/// # Safety
/// `at` is a live, initialised slot of that kind.
pub unsafe fn store(at: *mut u8, slot: Slot, a: &TVMFFIAny) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { write_slot(at, slot, a) }
}

/// Releases what a slot of kind `slot` at `at` owns.
///
/// # Safety
/// `at` is a live slot of that kind, not used after.
pub unsafe fn release(at: *mut u8, slot: Slot) {
    // SAFETY: the caller's contract.
    unsafe { release_slot(at, slot) }
}

/// The metadata text tvm-ffi publishes for `f` (its type schema).
pub fn field_metadata(f: &FieldSpec) -> String {
    format!(r#"{{"type_schema":{}}}"#, json_string(f.schema))
}

/// The field information tvm-ffi publishes for `f`, its metadata pointing into `metadata`
/// (from [`field_metadata`]; the registry copies the texts).
pub fn field_info(f: &FieldSpec, metadata: &str) -> TVMFFIFieldInfo {
    let (getter, setter) = accessors_of(f.slot);
    let text = |s: &str| crate::abi::TVMFFIByteArray { data: s.as_ptr() as *const _, size: s.len() };
    TVMFFIFieldInfo {
        name: text(f.name),
        doc: text(""),
        metadata: text(metadata),
        flags: f.flags | 1,
        size: f.slot.size(),
        alignment: 8.min(f.slot.size()),
        offset: f.offset as i64,
        getter: Some(getter),
        setter: setter as *mut c_void,
        default_value_or_factory: TVMFFIAny::NONE,
        field_static_type_index: f.static_index,
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The default-object maker of a record type (tvm-ffi's creator), by type key.
pub fn creator_for(key: &str) -> Option<unsafe extern "C" fn(*mut *mut c_void) -> i32> {
    macro_rules! creators {
        ($($k:literal => $name:ident),*) => {{
            $(
                unsafe extern "C" fn $name(out: *mut *mut c_void) -> i32 {
                    field_call(|| {
                        let r = new_record($k)?;
                        // SAFETY: tvm-ffi passes a result slot; the reference passes to it.
                        unsafe { out.write(r.into_raw() as *mut c_void) };
                        Ok(())
                    })
                }
            )*
            match key { $($k => Some($name as unsafe extern "C" fn(*mut *mut c_void) -> i32),)* _ => None }
        }};
    }
    creators!(
        "ffi.EnumState" => make_enum_state, "ffi.Enum" => make_enum, "ffi.IntEnum" => make_int_enum,
        "ffi.StrEnum" => make_str_enum, "ffi.reflection.AccessStep" => make_access_step,
        "ffi.reflection.AccessPath" => make_access_path, "ffi.VisitErrorContext" => make_visit_error_context,
        "ffi.StructuralKey" => make_structural_key
    )
}

/// The field of kind `slot` at `offset` of a record (an owned value).
pub fn read_field(o: &crate::runtime::object::header::ObjectRef, offset: usize, slot: Slot) -> Result<Value> {
    let index = o.type_index();
    if !fields_of(index).iter().any(|f| f.offset == offset && f.slot == slot) {
        return Err(Error::type_error(format!("type index {index} has no such record field")));
    }
    // SAFETY: a field of this record's own spec, at its offset, of its kind.
    unsafe { Value::adopt_any(read_slot((o.as_header() as *const u8).add(offset), slot)?) }
}

/// tvm-ffi's `__ffi_shallow_copy__` of records: a new record of the same type whose fields hold
/// the same values.
pub fn shallow_copier() -> PackedFunc {
    PackedFunc::from_typed(|args| {
        let src = args.object(0)?;
        let index = src.type_index();
        let copy = new_record(&crate::runtime::object::type_table::type_index_to_key(index)?)?;
        for f in fields_of(index) {
            // SAFETY: the same field of two live records of one type: read (owned), stored, released.
            unsafe {
                let v = read_slot((src.as_header() as *const u8).add(f.offset), f.slot)?;
                let rc = write_slot((copy.as_header() as *mut u8).add(f.offset), f.slot, &v);
                release_any(&v);
                rc?;
            }
        }
        Ok(Value::Object(copy.to_object_ref()))
    })
}
