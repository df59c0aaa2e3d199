//! What the structural walks (equality, hashing, deep copy) read per object without the general value
//! path: facts about a type, looked up once per walk, and a container's or field's slot read in
//! place (plain values by their bits, objects borrowed from the slot).

use crate::abi::{ffi_type_index as fti, TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::collections::recursive::hash_bytes;
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::header::{strong_count, ObjectRef};
use crate::runtime::object::type_table::type_index as ti;
use crate::runtime::reflection::fields::SEQ_HASH_IGNORE;
use std::mem::ManuallyDrop;

/// What a walk needs to know of one type.
pub(crate) struct TypeFacts {
    pub index: u32,
    /// The hash of the type's key.
    pub key_hash: u64,
    /// An object of the type is walked as itself (strings and bytes compare by content, tensors
    /// and modules as their own kinds).
    pub itself: bool,
    /// What only objects with fields need, looked up the first time one is met.
    record: Option<RecordFacts>,
}

/// What a walk needs to know of a type whose objects have reflected fields.
pub(crate) struct RecordFacts {
    /// `structural_eq_hash_kind`; `None` where the type has none (the walk reports why).
    pub kind: Option<i32>,
    /// The fields that take part (not marked s-eq-ignore); `None` where they cannot be listed.
    pub fields: Option<Vec<TVMFFIFieldInfo>>,
    /// Every field (a deep copy copies them all).
    pub all_fields: Option<Vec<TVMFFIFieldInfo>>,
    pub hash_hook: Option<PackedFunc>,
    pub equal_hook: Option<PackedFunc>,
    /// `__ffi_shallow_copy__`.
    pub shallow_copy: Option<PackedFunc>,
    /// An `ffi.Enum` (never changed: a copy shares it).
    pub is_enum: bool,
}

/// The types a walk met (few, so a list).
#[derive(Default)]
pub(crate) struct Types(Vec<TypeFacts>);

// SAFETY: the field infos' pointers (names, docs, getters) point into the type registry, which
// keeps them for the process and never changes them; they are only read.
unsafe impl Send for Types {}

impl Types {
    /// The facts of `o`'s type, looked up the first time it is met.
    pub fn of(&mut self, o: &ObjectRef) -> &TypeFacts {
        let i = self.position(o);
        &self.0[i]
    }

    /// The record facts of `o`'s type, looked up the first time they are asked for.
    pub fn record(&mut self, o: &ObjectRef) -> &RecordFacts {
        let i = self.position(o);
        self.0[i].record.get_or_insert_with(|| record_facts(o.type_index()))
    }

    fn position(&mut self, o: &ObjectRef) -> usize {
        let index = o.type_index();
        match self.0.iter().position(|t| t.index == index) {
            Some(i) => i,
            None => {
                self.0.push(facts(o));
                self.0.len() - 1
            }
        }
    }
}

fn facts(o: &ObjectRef) -> TypeFacts {
    let index = o.type_index();
    let key = crate::runtime::object::type_table::type_index_to_key(index).unwrap_or_default();
    let itself = match index {
        ti::FFI_ARRAY | ti::FFI_MAP | ti::LIST | ti::DICT | ti::SHAPE_TUPLE => true,
        ti::STRING | ti::BYTES => false,
        _ => matches!(Value::from_object(o.clone()), Value::Object(_)),
    };
    TypeFacts { index, key_hash: hash_bytes(key.as_bytes()), itself, record: None }
}

fn record_facts(index: u32) -> RecordFacts {
    use crate::runtime::reflection::type_info::{attr, type_info};
    // SAFETY: type information stays valid for the process.
    let kind =
        type_info(index).ok().and_then(|info| unsafe { (*info).metadata.as_ref() }).map(|m| m.structural_eq_hash_kind);
    let all_fields = crate::runtime::reflection::fields::all_fields(index).ok();
    let fields =
        all_fields.as_ref().map(|all| all.iter().filter(|f| f.flags & SEQ_HASH_IGNORE == 0).copied().collect());
    let enum_index = crate::runtime::object::type_table::type_key_to_index("ffi.Enum").ok();
    let is_enum =
        enum_index.is_some_and(|e| crate::runtime::object::type_table::derived_from(index, e).unwrap_or(false));
    let hook = |name: &[u8]| match attr(name, index) {
        Some(Value::Func(f)) => Some(f),
        _ => None,
    };
    RecordFacts {
        kind,
        fields,
        all_fields,
        hash_hook: hook(b"__s_hash__"),
        equal_hook: hook(b"__s_equal__"),
        shallow_copy: hook(b"__ffi_shallow_copy__"),
        is_enum,
    }
}

/// The object a slot holds, borrowed from it (no reference taken or given back); `None` for
/// other values.
///
/// # Safety
/// The slot holds a reference of its own, alive for the borrow (a container or field value the
/// walk holds).
pub(crate) unsafe fn slot_object(a: &TVMFFIAny) -> Option<ManuallyDrop<ObjectRef>> {
    (a.type_index >= fti::STATIC_OBJECT_BEGIN && !a.as_ptr().is_null())
        // SAFETY: a live object with a reference of its own (contract above), never released here.
        .then(|| ManuallyDrop::new(unsafe { ObjectRef::from_raw(a.as_ptr() as *mut _) }))
}

/// Whether `o` has one holder besides the `held` references the walk took itself: such an
/// object is met once in a walk (its holder is, by the same rule or the walk's memo), and a
/// cycle passes through a shared one, so it needs neither memo nor cycle check.
pub(crate) fn unshared(o: &ObjectRef, held: i32) -> bool {
    // SAFETY: `o` is live.
    unsafe { strong_count(o.as_header()) <= 1 + held }
}

/// Whether two plain values (None, ints, bools, floats) are equal, as `Equal::values` decides
/// (same kind; floats by value, NaN equal to NaN); `None` when either is another kind.
pub(super) fn plain_equal(p: &TVMFFIAny, q: &TVMFFIAny) -> Option<bool> {
    let plain = |a: &TVMFFIAny| matches!(a.type_index, fti::NONE | fti::INT | fti::BOOL | fti::FLOAT);
    if !plain(p) || !plain(q) {
        return None;
    }
    Some(match (p.type_index, q.type_index) {
        (fti::FLOAT, fti::FLOAT) => {
            let (f, g) = (f64::from_bits(p.value), f64::from_bits(q.value));
            f == g || (f.is_nan() && g.is_nan())
        }
        (s, t) => s == t && p.value == q.value,
    })
}

/// The bytes of a string held in the value itself (tvm-ffi's small string), in place.
pub(super) fn small_text(a: &TVMFFIAny) -> Option<&[u8]> {
    // SAFETY: the value's own eight bytes, of which the first `zero_padding` (at most 7) hold
    // a small string's text.
    (a.type_index == fti::SMALL_STR).then(|| unsafe {
        std::slice::from_raw_parts(&a.value as *const u64 as *const u8, (a.zero_padding as usize).min(7))
    })
}

/// The content of a string object, read in place.
pub(super) fn string_content(o: &ObjectRef) -> Option<&[u8]> {
    crate::runtime::collections::map_keys::object_content(o).filter(|_| o.type_index() == ti::STRING)
}
