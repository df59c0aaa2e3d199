//! tvm-ffi's type information and reflection over the one type table (`object/header.rs`): per type a
//! `TVMFFITypeInfo` at a fixed address (frontends read it directly), with its ancestors, the
//! fields, methods and metadata registered for it, and the type attribute columns
//! (`__ffi_repr__`, `__ffi_init__`, ...: one value per type index). Like the type table, all of
//! it lives as long as the process; values held here own their references.

use crate::abi::{ffi_type_index as fti, TVMFFIAny, TVMFFIByteArray, TVMFFIFieldInfo, TVMFFIMethodInfo};
use crate::abi::{TVMFFITypeAttrColumn, TVMFFITypeInfo, TVMFFITypeMetadata};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{byte_array, Value};
use crate::runtime::object::header::{self, ObjectHeader};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::HashMap;

/// One type's information and what its arrays point into.
struct Record {
    info: Box<TVMFFITypeInfo>,
    ancestors: Vec<*const TVMFFITypeInfo>,
    fields: Vec<TVMFFIFieldInfo>,
    methods: Vec<TVMFFIMethodInfo>,
    metadata: Option<Box<TVMFFITypeMetadata>>,
}

/// One attribute's values by type index.
#[derive(Default)]
struct Column {
    column: Box<TVMFFITypeAttrColumn>,
    data: Vec<TVMFFIAny>,
}

#[derive(Default)]
struct Reflection {
    records: HashMap<u32, Record>,
    columns: HashMap<Vec<u8>, Column>,
    /// Copies of the texts the arrays above point into (never freed: the process holds them).
    texts: Vec<Box<[u8]>>,
}

// SAFETY: the raw pointers point into this structure's own boxes and vectors, only touched
// under the mutex; values it holds are owned references (objects are Send + Sync).
unsafe impl Send for Reflection {}

/// The type attributes tvm-ffi's own library has a column for from the start (code compiled
/// against tvm-ffi looks these columns up and treats a missing one as an error).
const BUILTIN_COLUMNS: [&str; 20] = [
    "__any_equal__",
    "__any_hash__",
    "__data_from_json__",
    "__data_to_json__",
    "__ffi_compare__",
    "__ffi_convert__",
    "__ffi_convert_type_schema__",
    "__ffi_enum__",
    "__ffi_eq__",
    "__ffi_hash__",
    "__ffi_init__",
    "__ffi_new__",
    "__ffi_repr__",
    "__ffi_shallow_copy__",
    "__ffi_type_final__",
    "__s_equal__",
    "__s_hash__",
    "__s_maybe_inplace_mutate__",
    "__s_mutate__",
    "__s_visit__",
];

static REFLECTION: Lazy<Mutex<Reflection>> = Lazy::new(|| {
    let mut r = Reflection::default();
    for name in BUILTIN_COLUMNS {
        r.columns.insert(name.as_bytes().to_vec(), Column::default());
    }
    if let Err(e) = r.add_core_records() {
        // Only a broken spec table gets here (a unit test registers every spec).
        eprintln!("tvm-runtime: registering tvm-ffi's own reflected types failed: {e}");
    }
    Mutex::new(r)
});

/// A copy of a value that owns what it points to (tvm-ffi's `AnyViewToOwnedAny`): a raw string
/// or byte array becomes an object, an object gets a new reference, and an rvalue reference
/// gives up its object: the reference it held moves to the copy and its slot is cleared.
///
/// # Safety
/// `view` must be a valid view (its pointers valid, its object live; an rvalue reference points
/// to a writable slot holding an owned object pointer or NULL).
#[inline]
pub unsafe fn owned_any(view: &TVMFFIAny) -> Result<TVMFFIAny> {
    match view.type_index {
        t if t >= fti::STATIC_OBJECT_BEGIN => {
            if !view.as_ptr().is_null() {
                // SAFETY: a live object (caller contract).
                unsafe { header::retain(view.as_ptr() as *mut ObjectHeader) };
            }
            Ok(*view)
        }
        // SAFETY: the caller's contract.
        fti::OBJECT_RVALUE_REF | fti::RAW_STR | fti::BYTE_ARRAY_PTR => unsafe { owned_any_made(view) },
        _ => Ok(*view),
    }
}

/// [`owned_any`] of the views whose value is made (a moved object taken, a text copied).
///
/// # Safety
/// As [`owned_any`].
unsafe fn owned_any_made(view: &TVMFFIAny) -> Result<TVMFFIAny> {
    Ok(match view.type_index {
        fti::OBJECT_RVALUE_REF => {
            // SAFETY: a valid rvalue reference (caller contract).
            let header = unsafe { take_moved_object(view)? };
            // SAFETY: a live object, whose reference is now ours.
            TVMFFIAny::ptr(unsafe { (*header).type_index } as i32, header as *const std::ffi::c_void)
        }
        fti::RAW_STR if !view.as_ptr().is_null() => {
            // SAFETY: a NUL-terminated string (caller contract); a short one stays in the value.
            crate::runtime::function::packed::string_any(
                unsafe { std::ffi::CStr::from_ptr(view.as_ptr() as *const _) }.to_bytes(),
            )
        }
        // SAFETY: a valid view (caller contract).
        fti::RAW_STR | fti::BYTE_ARRAY_PTR => unsafe { Value::from_any_view(view)? }.into_any(),
        _ => *view,
    })
}

/// The object an rvalue reference holds, with the reference its slot owned (the slot is
/// cleared, so it moves once).
///
/// # Safety
/// `view` is an rvalue reference: NULL or a pointer to a writable slot holding NULL or an owned
/// object pointer.
unsafe fn take_moved_object(view: &TVMFFIAny) -> Result<*mut ObjectHeader> {
    let slot = view.as_ptr() as *mut *mut ObjectHeader;
    if slot.is_null() {
        return Err(Error::value("an ObjectRValueRef with no object slot"));
    }
    // SAFETY: a writable slot (caller contract).
    let header = unsafe { std::mem::replace(&mut *slot, std::ptr::null_mut()) };
    if header.is_null() {
        return Err(Error::value("RValueRef already moved"));
    }
    Ok(header)
}

impl Reflection {
    /// A kept, NUL-terminated copy of `a`'s bytes, described without the NUL.
    ///
    /// # Safety
    /// `a` must describe readable bytes.
    unsafe fn copy_text(&mut self, a: &TVMFFIByteArray) -> TVMFFIByteArray {
        // SAFETY: the caller's contract.
        let bytes = unsafe { byte_array(a) };
        let owned: Box<[u8]> = bytes.iter().copied().chain([0]).collect();
        let out = TVMFFIByteArray { data: owned.as_ptr() as *const _, size: bytes.len() };
        self.texts.push(owned);
        out
    }

    /// The record of a registered type, made on first use (with its ancestors').
    fn record(&mut self, index: u32) -> Result<&mut Record> {
        if !self.records.contains_key(&index) {
            let (parent, depth) = crate::runtime::object::type_table::type_parent_and_depth(index)?;
            let ancestors = if depth == 0 {
                Vec::new()
            } else {
                let p = self.record(parent)?;
                let mut a = p.ancestors.clone();
                a.push(&*p.info as *const TVMFFITypeInfo);
                a
            };
            let key = crate::runtime::object::type_table::type_index_to_key(index)?;
            // SAFETY: the key's own bytes, readable.
            let type_key =
                unsafe { self.copy_text(&TVMFFIByteArray { data: key.as_ptr() as *const _, size: key.len() }) };
            let info = Box::new(TVMFFITypeInfo {
                type_index: index as i32,
                type_depth: depth as i32,
                type_key,
                type_ancestors: std::ptr::null(),
                type_key_hash: key_hash(key.as_bytes()),
                num_fields: 0,
                num_methods: 0,
                fields: std::ptr::null(),
                methods: std::ptr::null(),
                metadata: std::ptr::null(),
            });
            let mut record = Record { info, ancestors, fields: Vec::new(), methods: Vec::new(), metadata: None };
            record.info.type_ancestors = record.ancestors.as_ptr();
            self.records.insert(index, record);
        }
        Ok(self.records.get_mut(&index).expect("inserted above"))
    }
}

/// FNV-1a of a type key (tvm-ffi publishes a hash of each key; its value is the library's own).
fn key_hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The information of a registered type (valid for the life of the process; its arrays until
/// the next registration for the type).
pub fn type_info(index: u32) -> Result<*const TVMFFITypeInfo> {
    use std::sync::atomic::{AtomicPtr, Ordering};
    /// The information of the first type indices once made (each boxed for the process, so its
    /// address never changes): the walks ask for it per object, without the registry's lock.
    static KNOWN: [AtomicPtr<TVMFFITypeInfo>; 1024] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 1024];
    let known = KNOWN.get(index as usize);
    if let Some(p) = known.map(|k| k.load(Ordering::Acquire)).filter(|p| !p.is_null()) {
        return Ok(p);
    }
    let mut r = REFLECTION.lock();
    let p = &*r.record(index)?.info as *const TVMFFITypeInfo;
    if let Some(k) = known {
        k.store(p as *mut TVMFFITypeInfo, Ordering::Release);
    }
    Ok(p)
}

/// Add a field to a type's information (texts and default value copied).
///
/// # Safety
/// `f`'s arrays must be readable and its default value a valid view.
pub unsafe fn register_field(index: u32, f: &TVMFFIFieldInfo) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { REFLECTION.lock().add_field(index, f) }
}

impl Reflection {
    /// See [`register_field`].
    ///
    /// # Safety
    /// As there.
    unsafe fn add_field(&mut self, index: u32, f: &TVMFFIFieldInfo) -> Result<()> {
        let r = self;
        // SAFETY: the caller's contract.
        let (name, doc, metadata) = unsafe { (r.copy_text(&f.name), r.copy_text(&f.doc), r.copy_text(&f.metadata)) };
        const HAS_DEFAULT: i64 = 1 << 1;
        let default = if f.flags & HAS_DEFAULT != 0 {
            // SAFETY: the caller's contract.
            unsafe { owned_any(&f.default_value_or_factory)? }
        } else {
            TVMFFIAny::NONE
        };
        let record = r.record(index)?;
        // SAFETY: the texts of the fields registered before, kept by `Reflection`.
        if record.fields.iter().any(|g| unsafe { byte_array(&g.name) } == unsafe { byte_array(&name) }) {
            return Err(Error::value(format!(
                "type index {index} already has a field `{}`",
                String::from_utf8_lossy(unsafe { byte_array(&name) })
            )));
        }
        const SETTER_IS_FUNCTION: i64 = 1 << 11;
        if f.flags & SETTER_IS_FUNCTION != 0 && !f.setter.is_null() {
            // SAFETY: the setter is a live function object; the registry keeps a reference to
            // it for the life of the process (as it keeps the default value).
            unsafe { header::retain(f.setter as *mut ObjectHeader) };
        }
        record.fields.push(TVMFFIFieldInfo { name, doc, metadata, default_value_or_factory: default, ..*f });
        record.info.fields = record.fields.as_ptr();
        record.info.num_fields = record.fields.len() as i32;
        Ok(())
    }
}

/// Add a method to a type's information (texts copied, the function value owned).
///
/// # Safety
/// `m`'s arrays must be readable and its method a valid view.
pub unsafe fn register_method(index: u32, m: &TVMFFIMethodInfo) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { REFLECTION.lock().add_method(index, m) }
}

impl Reflection {
    /// See [`register_method`].
    ///
    /// # Safety
    /// As there.
    unsafe fn add_method(&mut self, index: u32, m: &TVMFFIMethodInfo) -> Result<()> {
        let r = self;
        // SAFETY: the caller's contract.
        let (name, doc, metadata) = unsafe { (r.copy_text(&m.name), r.copy_text(&m.doc), r.copy_text(&m.metadata)) };
        // SAFETY: the caller's contract.
        let method = unsafe { owned_any(&m.method)? };
        let record = r.record(index)?;
        record.methods.push(TVMFFIMethodInfo { name, doc, metadata, flags: m.flags, method });
        record.info.methods = record.methods.as_ptr();
        record.info.num_methods = record.methods.len() as i32;
        Ok(())
    }
}

/// Set a type's metadata, once.
///
/// # Safety
/// `m.doc` must be readable.
pub unsafe fn register_metadata(index: u32, m: &TVMFFITypeMetadata) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { REFLECTION.lock().add_metadata(index, m) }
}

impl Reflection {
    /// See [`register_metadata`].
    ///
    /// # Safety
    /// As there.
    unsafe fn add_metadata(&mut self, index: u32, m: &TVMFFITypeMetadata) -> Result<()> {
        let r = self;
        // SAFETY: the caller's contract.
        let doc = unsafe { r.copy_text(&m.doc) };
        let key = crate::runtime::object::type_table::type_index_to_key(index)?;
        let record = r.record(index)?;
        if record.metadata.is_some() {
            return Err(Error::runtime(format!("the metadata of `{key}` is registered already")));
        }
        let metadata = Box::new(TVMFFITypeMetadata { doc, ..*m });
        record.info.metadata = &*metadata;
        record.metadata = Some(metadata);
        Ok(())
    }

    /// The fields, methods and metadata of tvm-ffi's own reflected types (`ffi_records`).
    fn add_core_records(&mut self) -> Result<()> {
        use crate::runtime::reflection::records::{creator_for, field_info, field_metadata, SPECS};
        // `ffi.Module`'s one reflected field: its imports, read only (C++'s `imports_`).
        let imports = crate::runtime::reflection::records::module_imports_field();
        let metadata = field_metadata(&imports);
        let mut info = field_info(&imports, &metadata);
        (info.flags, info.setter) = (info.flags & !1, std::ptr::null_mut());
        // SAFETY: the info's texts are static strings and `metadata`, alive for the call.
        unsafe { self.add_field(crate::runtime::object::type_table::type_key_to_index("ffi.Module")?, &info)? };
        for (key, size) in [("ffi.Object", 24), ("ffi.Module", 48), ("ffi.BigInt", 32)] {
            let m = TVMFFITypeMetadata {
                doc: TVMFFIByteArray { data: std::ptr::null(), size: 0 },
                creator: None,
                total_size: size,
                structural_eq_hash_kind: 0,
            };
            // SAFETY: an empty doc.
            unsafe { self.add_metadata(crate::runtime::object::type_table::type_key_to_index(key)?, &m)? };
        }
        for spec in &SPECS {
            let index = crate::runtime::object::type_table::type_key_to_index(spec.key)?;
            for f in spec.fields {
                // SAFETY: the info's texts are static strings; its default is None.
                let metadata = field_metadata(f);
                // SAFETY: the info's texts are static strings and `metadata`, alive for the call
                // (the registry copies them); its default is None.
                unsafe { self.add_field(index, &field_info(f, &metadata))? };
            }
            let m = TVMFFITypeMetadata {
                doc: TVMFFIByteArray { data: std::ptr::null(), size: 0 },
                creator: creator_for(spec.key),
                total_size: spec.total_size,
                structural_eq_hash_kind: spec.eq_kind,
            };
            // SAFETY: an empty doc.
            unsafe { self.add_metadata(index, &m)? };
            if spec.key == "ffi.StructuralKey" {
                // Keys compare structurally: through the global, reached by name.
                let eq = crate::runtime::function::packed::PackedFunc::from_typed(|a| {
                    crate::runtime::function::registry::require("ffi.StructuralKeyEqual")?
                        .call(&[a.to_value(0)?, a.to_value(1)?])
                });
                let eq = Value::Func(eq).into_any();
                // SAFETY: an owned function value, copied by the column, released after.
                let rc = unsafe { self.add_attr(index, b"__any_equal__", &eq) };
                // SAFETY: owned above.
                unsafe { header::release_any(&eq) };
                rc?;
            }
            if spec.creator {
                let copy = Value::Func(crate::runtime::reflection::records::shallow_copier()).into_any();
                // SAFETY: an owned function value, copied by the column, released after.
                let rc = unsafe { self.add_attr(index, b"__ffi_shallow_copy__", &copy) };
                // SAFETY: owned above.
                unsafe { header::release_any(&copy) };
                rc?;
            }
        }
        Ok(())
    }
}

/// Set attribute `name` of type `index` to `value` (owned by the column); index 0 (`None`)
/// only makes sure the column exists. A value set once is not replaced.
///
/// # Safety
/// `value` must be a valid view.
pub unsafe fn register_attr(index: u32, name: &[u8], value: &TVMFFIAny) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { REFLECTION.lock().add_attr(index, name, value) }
}

/// [`register_attr`] with a function as the value.
pub fn register_func_attr(index: u32, name: &[u8], f: crate::runtime::function::packed::PackedFunc) -> Result<()> {
    let a = Value::Func(f).into_any();
    // SAFETY: an owned function value, copied by the column, released after.
    let rc = unsafe { register_attr(index, name, &a) };
    // SAFETY: owned above, released once.
    unsafe { header::release_any(&a) };
    rc
}

impl Reflection {
    /// See [`register_attr`].
    ///
    /// # Safety
    /// As there.
    unsafe fn add_attr(&mut self, index: u32, name: &[u8], value: &TVMFFIAny) -> Result<()> {
        let r = self;
        let column = r.columns.entry(name.to_vec()).or_default();
        if index == fti::NONE as u32 {
            return Ok(());
        }
        let slot = index as usize;
        if column.data.len() <= slot {
            column.data.resize(slot + 1, TVMFFIAny::NONE);
        }
        if column.data[slot].type_index != fti::NONE {
            return Err(Error::runtime(format!(
                "type attribute `{}` is already registered for type index {index}",
                String::from_utf8_lossy(name)
            )));
        }
        // SAFETY: the caller's contract.
        column.data[slot] = unsafe { owned_any(value)? };
        column.column.data = column.data.as_ptr();
        column.column.size = column.data.len() as i32;
        Ok(())
    }
}

/// Method `name` of type `key` (a registered function), for calling tvm-ffi's own methods.
pub fn method_function(key: &str, name: &str) -> Result<crate::runtime::function::packed::PackedFunc> {
    let index = crate::runtime::object::type_table::type_key_to_index(key)?;
    let r = REFLECTION.lock();
    let record = r.records.get(&index).ok_or_else(|| Error::attribute(format!("`{key}` has no methods")))?;
    // SAFETY: method names and values the registry keeps alive.
    let m = record.methods.iter().find(|m| unsafe { byte_array(&m.name) } == name.as_bytes());
    let m = m.ok_or_else(|| Error::attribute(format!("`{key}` has no method `{name}`")))?;
    // SAFETY: as above.
    match unsafe { Value::from_any_view(&m.method)? } {
        Value::Func(f) => Ok(f),
        _ => Err(Error::type_error(format!("method `{name}` of `{key}` is not a function"))),
    }
}

/// The column of attribute `name`, if any type registered it (valid for the life of the
/// process; its data until the next registration of that attribute).
pub fn attr_column(name: &[u8]) -> Option<*const TVMFFITypeAttrColumn> {
    let r = REFLECTION.lock();
    r.columns.get(name).map(|c| &*c.column as *const TVMFFITypeAttrColumn)
}

/// The value of attribute `name` for type `index`, if set (a new reference).
pub fn attr(name: &[u8], index: u32) -> Option<Value> {
    let r = REFLECTION.lock();
    let v = r.columns.get(name)?.data.get(index as usize)?;
    // SAFETY: an owned value the column holds (a live object, if one).
    (v.type_index != fti::NONE).then(|| unsafe { Value::from_any_view(v) }.ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rvalue_reference_moves_its_object_once() {
        let o = crate::runtime::container::shape_object(&[1, 2]);
        let mut slot = o.clone().into_raw();
        let view = TVMFFIAny::ptr(fti::OBJECT_RVALUE_REF, &mut slot as *mut *mut ObjectHeader as *const _);
        // SAFETY: `slot` holds an owned reference and outlives both calls.
        let owned = unsafe { owned_any(&view) }.unwrap();
        assert!(slot.is_null(), "the slot gave its reference up");
        assert_eq!(owned.type_index, o.type_index() as i32);
        assert_eq!(owned.as_ptr() as *mut ObjectHeader, o.as_header());
        // SAFETY: a live object.
        assert_eq!(unsafe { header::strong_count(o.as_header()) }, 2, "moved, not copied");
        // SAFETY: as above; the slot is empty now.
        let again = unsafe { owned_any(&view) };
        assert!(again.is_err_and(|e| e.message().contains("already moved")));
        // SAFETY: the moved reference, released once.
        unsafe { header::release_any(&owned) };
    }
}
