//! The one type table, in tvm-ffi's index space and keyed in both vocabularies: the static
//! indices ([`type_index`]), the types tvm-ffi's library and TVM 0.18 define, and the types
//! registered at run time with their parents and reserved child slots.

use crate::runtime::base::error::{Error, Result};
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::collections::HashMap;

/// Type indices, tvm-ffi's (`TVMFFITypeIndex`); the 0.18 containers tvm-ffi has no layout for
/// are reserved from 128 (their 0.18 indices: `header.rs`'s `legacy`).
pub mod type_index {
    pub const ROOT: u32 = 64;
    pub const STRING: u32 = 65;
    pub const BYTES: u32 = 66;
    pub const ERROR: u32 = 67;
    pub const PACKED_FUNC: u32 = 68;
    pub const SHAPE_TUPLE: u32 = 69;
    pub const NDARRAY: u32 = 70;
    pub const FFI_ARRAY: u32 = 71;
    pub const FFI_MAP: u32 = 72;
    pub const MODULE: u32 = 73;
    pub const OPAQUE_PY_OBJECT: u32 = 74;
    pub const LIST: u32 = 75;
    pub const DICT: u32 = 76;
    pub const VISIT_INTERRUPT: u32 = 77;
    pub const BIG_INT: u32 = 78;
    /// TVM 0.18's `Array` (`size_`, `capacity_`, then `Object*` items inline).
    pub const ARRAY: u32 = 128;
    /// TVM 0.18's `Map`.
    pub const MAP: u32 = 129;
    pub const DISCO_DREF: u32 = 130;
    pub const RPC_OBJECT_REF: u32 = 131;
    pub const CLOSURE: u32 = 132;
    pub const ADT: u32 = 133;
    /// The first index given to a type registered at run time.
    pub const DYNAMIC_BEGIN: u32 = 134;
}

/// One registered type: its key (tvm-ffi's vocabulary), the key TVM 0.18 knows it by, its
/// parent, and the indices it reserved for its subtypes (tvm-ffi's child slots: subtypes take
/// `index + 1 ..` while they last, so compiled code may test a range; then any index, if the
/// type lets its children overflow).
struct TypeEntry {
    key: String,
    legacy_key: Option<&'static str>,
    parent: u32,
    depth: u32,
    slots: u32,
    used_slots: u32,
    can_overflow: bool,
}

/// The type table, by tvm-ffi index (0-13 the POD kinds of `TVMFFIAny`, 64-78 tvm-ffi's static
/// objects, 128-133 TVM 0.18's containers, then the types registered at run time). Every key,
/// in either vocabulary, finds its index.
struct TypeTable {
    entries: Vec<Option<TypeEntry>>,
    by_key: HashMap<String, u32>,
    next_dynamic: u32,
}

/// tvm-ffi's keys of the `TVMFFIAny` kinds that are not objects (indices 0-13).
const POD_KEYS: [&str; 14] = [
    "None",
    "int",
    "bool",
    "float",
    "void*",
    "DataType",
    "Device",
    "DLTensor*",
    "const char*",
    "TVMFFIByteArray*",
    "ObjectRValueRef",
    "ffi.SmallStr",
    "ffi.SmallBytes",
    "ffi.Unchanged",
];

/// Static object types: index, tvm-ffi key, TVM 0.18 key.
const STATIC_TYPES: [(u32, &str, Option<&str>); 21] = {
    use self::type_index as ti;
    [
        (ti::ROOT, "ffi.Object", Some("runtime.Object")),
        (ti::STRING, "ffi.String", Some("runtime.String")),
        (ti::BYTES, "ffi.Bytes", None),
        (ti::ERROR, "ffi.Error", None),
        (ti::PACKED_FUNC, "ffi.Function", Some("runtime.PackedFunc")),
        (ti::SHAPE_TUPLE, "ffi.Shape", Some("runtime.ShapeTuple")),
        (ti::NDARRAY, "ffi.Tensor", Some("runtime.NDArray")),
        (ti::FFI_ARRAY, "ffi.Array", None),
        (ti::FFI_MAP, "ffi.Map", None),
        (ti::MODULE, "ffi.Module", Some("runtime.Module")),
        (ti::OPAQUE_PY_OBJECT, "ffi.OpaquePyObject", None),
        (ti::LIST, "ffi.List", None),
        (ti::DICT, "ffi.Dict", None),
        (ti::VISIT_INTERRUPT, "ffi.VisitInterrupt", None),
        (ti::BIG_INT, "ffi.BigInt", None),
        // TVM's keys for these two have no `runtime.` prefix; its Python finds its container
        // classes by them.
        (ti::ARRAY, "Array", Some("Array")),
        (ti::MAP, "Map", Some("Map")),
        (ti::DISCO_DREF, "runtime.DiscoDRef", Some("runtime.DiscoDRef")),
        (ti::RPC_OBJECT_REF, "runtime.RPCObjectRef", Some("runtime.RPCObjectRef")),
        (ti::CLOSURE, "runtime.Closure", Some("runtime.Closure")),
        (ti::ADT, "runtime.ADT", Some("runtime.ADT")),
    ]
};

/// The reflected types tvm-ffi's own library registers at start-up (their fields are in
/// `ffi_records`), each after its parent, at the first dynamic indices in this order.
pub const CORE_DYNAMIC_TYPES: [(&str, &str); 10] = [
    ("ffi.EnumState", "ffi.Object"),
    ("ffi.Enum", "ffi.Object"),
    ("ffi.IntEnum", "ffi.Enum"),
    ("ffi.StrEnum", "ffi.Enum"),
    ("ffi.reflection.AccessStep", "ffi.Object"),
    ("ffi.reflection.AccessPath", "ffi.Object"),
    ("ffi.StructuralVisitor", "ffi.Object"),
    ("ffi.VisitErrorContext", "ffi.Object"),
    ("ffi.StructuralMutator", "ffi.Object"),
    ("ffi.StructuralKey", "ffi.Object"),
];

impl TypeTable {
    fn insert(&mut self, index: u32, key: &str, legacy_key: Option<&'static str>, parent: u32) {
        self.insert_with_slots(index, key, legacy_key, parent, 0, true);
    }

    fn insert_with_slots(
        &mut self,
        index: u32,
        key: &str,
        legacy_key: Option<&'static str>,
        parent: u32,
        child_slots: u32,
        can_overflow: bool,
    ) {
        let slot = index as usize;
        if self.entries.len() <= slot {
            self.entries.resize_with(slot + 1, || None);
        }
        let depth = if parent == index { 0 } else { self.entry(parent).map_or(0, |p| p.depth + 1) };
        let entry = TypeEntry {
            key: key.to_string(),
            legacy_key,
            parent,
            depth,
            slots: child_slots + 1,
            used_slots: 1,
            can_overflow,
        };
        self.entries[slot] = Some(entry);
        self.by_key.insert(key.to_string(), index);
        if let Some(k) = legacy_key {
            self.by_key.insert(k.to_string(), index);
        }
    }

    /// A key this runtime registered at `old` (one of TVM 0.18's types, say) asked for by
    /// tvm-ffi code at the free static index `new` (apache-tvm's runtime gives several of them
    /// fixed indices): the key is now at `new`, as that code assumes; `old` keeps its entry, so
    /// objects made under it still have their type.
    fn move_key(&mut self, key: &str, new: u32, old: u32) -> u32 {
        let e = self.entry(old).expect("registered keys have entries");
        let (parent, slots, can_overflow) = (e.parent, e.slots, e.can_overflow);
        self.insert_with_slots(new, key, None, parent, slots - 1, can_overflow);
        new
    }

    fn entry(&self, index: u32) -> Option<&TypeEntry> {
        self.entries.get(index as usize).and_then(Option::as_ref)
    }
}

static TYPES: Lazy<RwLock<TypeTable>> = Lazy::new(|| {
    let mut t = TypeTable { entries: Vec::new(), by_key: HashMap::new(), next_dynamic: type_index::DYNAMIC_BEGIN };
    for (i, key) in POD_KEYS.iter().enumerate() {
        t.insert(i as u32, key, None, i as u32);
    }
    for (index, key, legacy_key) in STATIC_TYPES {
        t.insert(index, key, legacy_key, type_index::ROOT);
    }
    for (key, parent) in CORE_DYNAMIC_TYPES {
        let (index, parent) = (t.next_dynamic, t.by_key[parent]);
        t.insert_with_slots(index, key, None, parent, 0, true);
        t.next_dynamic += 1;
    }
    RwLock::new(t)
});

/// The registered type keys tvm-ffi lists (`ffi.GetRegisteredTypeKeys`), in index order: every
/// type but TVM 0.18's own static ones (`Array`, `Map`, `runtime.ADT`, ...), which tvm-ffi has
/// no type for. Those still resolve by key and index, for TVM 0.18's frontends.
pub fn type_keys() -> Vec<String> {
    let tvm_018_only = type_index::ARRAY..type_index::DYNAMIC_BEGIN;
    let t = TYPES.read();
    let entries = t.entries.iter().enumerate().filter(|(i, _)| !tvm_018_only.contains(&(*i as u32)));
    entries.filter_map(|(_, e)| e.as_ref().map(|e| e.key.clone())).collect()
}

/// Index of a registered type key (either vocabulary).
pub fn type_key_to_index(key: &str) -> Result<u32> {
    let t = TYPES.read();
    t.by_key.get(key).copied().ok_or_else(|| Error::value(format!("Cannot find type `{key}`")))
}

/// Key of a registered type index (tvm-ffi's vocabulary).
pub fn type_index_to_key(index: u32) -> Result<String> {
    let t = TYPES.read();
    t.entry(index).map(|e| e.key.clone()).ok_or_else(|| Error::index(format!("type index {index} is not registered")))
}

/// Key of a registered type index as TVM 0.18 names it (its own key where it has one).
pub fn legacy_type_key(index: u32) -> Result<String> {
    let t = TYPES.read();
    let e = t.entry(index).ok_or_else(|| Error::index(format!("type index {index} is not registered")))?;
    Ok(e.legacy_key.map_or_else(|| e.key.clone(), str::to_string))
}

pub(crate) fn type_key_of(index: u32) -> String {
    type_index_to_key(index).unwrap_or_else(|_| format!("<type {index}>"))
}

/// Register a dynamic type deriving from `parent`; returns its index (existing key: same index).
pub fn register_type(key: &str, parent: u32) -> Result<u32> {
    get_or_alloc_type(key, None, parent, 0, true)
}

/// tvm-ffi's `TypeGetOrAllocIndex`: the index of `key`, registered now if new, at
/// `static_index` if given, else in a slot its parent reserved, else (if the parent allows it)
/// after every index given so far; `child_slots` indices after it are kept for its subtypes.
pub fn get_or_alloc_type(
    key: &str,
    static_index: Option<u32>,
    parent: u32,
    child_slots: u32,
    can_overflow: bool,
) -> Result<u32> {
    let mut t = TYPES.write();
    if let Some(&i) = t.by_key.get(key) {
        match static_index {
            Some(s) if s != i && t.entry(s).is_none() => return Ok(t.move_key(key, s, i)),
            _ => return Ok(i),
        }
    }
    let Some(p) = t.entry(parent) else {
        return Err(Error::index(format!("parent type index {parent} of `{key}` is not registered")));
    };
    let (parent_overflow, parent_free) = (p.can_overflow, p.used_slots < p.slots);
    let wanted = child_slots + 1;
    let index = match static_index {
        Some(i) if t.entry(i).is_some() => {
            return Err(Error::value(format!("static type index {i} of `{key}` is taken by `{}`", type_key_in(&t, i))));
        }
        Some(i) => i,
        None if parent_free && p.used_slots + wanted <= p.slots => {
            let i = parent + p.used_slots;
            t.entries[parent as usize].as_mut().expect("checked above").used_slots += wanted;
            i
        }
        None if parent_overflow => {
            let i = t.next_dynamic.max(t.entries.len() as u32);
            t.next_dynamic = i + wanted;
            i
        }
        None => {
            return Err(Error::value(format!(
                "type `{}` has no index left for subtype `{key}`",
                type_key_in(&t, parent)
            )))
        }
    };
    t.insert_with_slots(index, key, None, parent, child_slots, can_overflow && parent_overflow);
    if let Some(e) = t.entries[index as usize].as_mut() {
        e.used_slots = 1;
    }
    t.next_dynamic = t.next_dynamic.max(index + wanted);
    Ok(index)
}

fn type_key_in(t: &TypeTable, index: u32) -> String {
    t.entry(index).map_or_else(|| format!("<type {index}>"), |e| e.key.clone())
}

/// A registered type's parent and depth (0 for `ffi.Object`), for tvm-ffi's type information.
pub fn type_parent_and_depth(index: u32) -> Result<(u32, u32)> {
    let t = TYPES.read();
    let e = t.entry(index).ok_or_else(|| Error::index(format!("type index {index} is not registered")))?;
    Ok((e.parent, e.depth))
}

/// Whether `child` is `parent` or derives from it.
pub fn derived_from(child: u32, parent: u32) -> Result<bool> {
    let t = TYPES.read();
    for i in [child, parent] {
        if t.entry(i).is_none() {
            return Err(Error::index(format!("type index {i} is not registered")));
        }
    }
    let mut cur = child;
    loop {
        if cur == parent {
            return Ok(true);
        }
        let up = t.entry(cur).map_or(cur, |e| e.parent);
        if up == cur {
            return Ok(false);
        }
        cur = up;
    }
}

/// How a handle of an object with static type index `type_index` is named in errors.
pub fn kind_name(type_index: u32) -> &'static str {
    use self::type_index as ti;
    match type_index {
        ti::MODULE => "module",
        ti::PACKED_FUNC => "function",
        ti::NDARRAY => "NDArray",
        _ => "object",
    }
}
