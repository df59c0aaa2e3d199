//! tvm-ffi's structural maps and mutations (`ffi.StructuralMap`, `ffi.StructuralMutate` and the
//! `ffi.StructuralMutator*` globals). A mutation rebuilds a value from its structural children
//! (a sequence's items, a map's values, an object's fields that take part in structural
//! equality, each in the definition region its field says) and returns the value itself when no
//! child changed. A changed child is written into a copy of its parent, or into the parent
//! itself when the parent is held by its mutation alone (a root passed as `x._move()`, or a
//! child only such a parent holds): copy-on-write.
//!
//! A map calls the first callback whose type matches each value, after its children are mapped
//! (post-order) or before, its result then being descended (pre-order); the result replaces the
//! value. A mutate hands each matched value to its callback with the mutator, which descends on
//! request; unmatched values descend by default. Free variables and DAG nodes that default
//! descent rebuilt are remembered by identity, so each is rebuilt once and its uses follow.
//!
//! Values travel in their C form ([`Owned`]), so an object handed to a callback and returned
//! unchanged is recognised as the same object, strings and bytes included.
//!
//! One file of about 1 150 lines (a fifth of them tests), on purpose: its parts recurse through
//! one another (the mutator descends into sequences, maps, reflected fields and the native hooks
//! of C++ types, and each of those calls the mutator back for its children), so split they would
//! import in a circle.

use crate::abi::{ffi_type_index as fti, TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{map_cell, new_map, sequence_items, ListObj};
use crate::runtime::container::FfiArrayObj;
use crate::runtime::extra::structural_visit::{
    dispatch_table, entries, kind_of, matches, order_arg, with_region, Entries, DAG_NODE, FREE_VAR, REGION_NONE,
    REGION_PATTERN, REGION_SIMPLE,
};
use crate::runtime::function::error_object::{catch_native, error_any, returned_error};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{
    header::{self, ObjPtr, ObjectHeader, ObjectRef, ObjectType},
    type_table::type_index as ti,
};
use crate::runtime::reflection::fields::{
    all_fields, get_field_any, set_field_any, DEF_PATTERN, DEF_SIMPLE, SEQ_HASH_IGNORE,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};

/// tvm-ffi's `Unchanged` marker, which a hook may return for "this value, as it was".
const UNCHANGED: i32 = 13;
const UNCHANGED_ANY: TVMFFIAny = TVMFFIAny { type_index: UNCHANGED, zero_padding: 0, value: 0 };

// ---------------------------------------------------------------------------------------------
// Owned values in their C form

/// An owned tvm-ffi value in its C form: an object's reference is held (released on drop).
pub struct Owned(TVMFFIAny);

// SAFETY: an owned reference to a Send + Sync object, or plain data; raw addresses in plain
// data (opaque pointers) are carried, never followed.
unsafe impl Send for Owned {}
// SAFETY: as above (shared access only reads the value).
unsafe impl Sync for Owned {}

impl Owned {
    /// An owned copy of a view: objects retained, an rvalue reference's object retained (it
    /// stays where it is), raw strings and byte arrays copied.
    ///
    /// # Safety
    /// `a` must be a valid view, its object (if any) live for the call.
    unsafe fn from_view(a: &TVMFFIAny) -> Result<Owned> {
        match a.type_index {
            // SAFETY: a valid view (contract above).
            t if t >= fti::STATIC_OBJECT_BEGIN => Ok(unsafe { Owned::retained(a) }),
            fti::OBJECT_RVALUE_REF => {
                // SAFETY: a pointer to a slot holding an object pointer (contract above).
                let header = unsafe { *(a.as_ptr() as *const *mut ObjectHeader) };
                if header.is_null() {
                    return Err(Error::value("the rvalue reference was already moved"));
                }
                // SAFETY: a live object the slot holds.
                Ok(Owned::object(unsafe { ObjectRef::from_borrowed(header) }))
            }
            // SAFETY: a valid view (contract above).
            fti::RAW_STR | fti::BYTE_ARRAY_PTR => Ok(Owned(unsafe { Value::from_any_view(a) }?.into_any())),
            _ => Ok(Owned(*a)),
        }
    }

    /// An owned copy of a plain value or an object view (its object retained).
    ///
    /// # Safety
    /// `a` must be plain data, or an object view whose object is live for the call.
    unsafe fn retained(a: &TVMFFIAny) -> Owned {
        if a.type_index >= fti::STATIC_OBJECT_BEGIN && !a.as_ptr().is_null() {
            // SAFETY: a live object (contract above); the new reference is ours.
            unsafe { header::retain(a.as_ptr() as *mut ObjectHeader) };
        }
        Owned(*a)
    }

    /// The value of an argument that C++ takes by value: an rvalue reference (`x._move()`) is
    /// moved out of the caller's slot, so the caller's reference becomes this one.
    ///
    /// # Safety
    /// As [`Owned::from_view`]; an rvalue reference's slot must be writable.
    unsafe fn take(a: &TVMFFIAny) -> Result<Owned> {
        // SAFETY: the caller's contract.
        let owned = unsafe { Owned::from_view(a) }?;
        if a.type_index == fti::OBJECT_RVALUE_REF {
            let slot = a.as_ptr() as *mut *mut ObjectHeader;
            // SAFETY: the caller's writable slot, holding a live object (checked by `from_view`),
            // whose reference passes to us: released here, as `owned` holds its own.
            unsafe { header::release(std::ptr::replace(slot, std::ptr::null_mut())) };
        }
        Ok(owned)
    }

    fn object(o: ObjectRef) -> Owned {
        let index = o.type_index() as i32;
        Owned(TVMFFIAny::ptr(index, o.into_raw() as *const c_void))
    }

    fn of<T: ObjectType>(p: ObjPtr<T>) -> Owned {
        // SAFETY: the new object's reference passes to the untyped ref.
        Owned::object(unsafe { ObjectRef::from_raw(p.into_raw()) })
    }

    fn int(v: i64) -> TVMFFIAny {
        TVMFFIAny::int(fti::INT, v)
    }

    fn header(&self) -> Option<*mut ObjectHeader> {
        let p = self.0.as_ptr() as *mut ObjectHeader;
        (self.0.type_index >= fti::STATIC_OBJECT_BEGIN && !p.is_null()).then_some(p)
    }

    /// The object this value holds (a new reference), if it holds one.
    fn as_object(&self) -> Option<ObjectRef> {
        // SAFETY: an object this value holds alive.
        self.header().map(|h| unsafe { ObjectRef::from_borrowed(h) })
    }

    /// The strong references to this value's object (0 for plain values).
    fn refs(&self) -> i32 {
        // SAFETY: an object this value holds alive.
        self.header().map_or(0, |h| unsafe { header::strong_count(h) })
    }

    /// tvm-ffi's `same_as`: the same kind and the same bits (objects by identity).
    fn same_as(&self, other: &Owned) -> bool {
        (self.0.type_index, self.0.zero_padding, self.0.value)
            == (other.0.type_index, other.0.zero_padding, other.0.value)
    }

    /// The type index callbacks are matched by (inline strings and bytes as their objects).
    fn match_index(&self) -> i32 {
        match self.0.type_index {
            fti::SMALL_STR => ti::STRING as i32,
            fti::SMALL_BYTES => ti::BYTES as i32,
            t => t,
        }
    }

    fn to_value(&self) -> Result<Value> {
        // SAFETY: an owned, valid value.
        unsafe { Value::from_any_view(&self.0) }
    }

    fn into_raw(self) -> TVMFFIAny {
        let a = self.0;
        std::mem::forget(self);
        a
    }
}

impl Clone for Owned {
    fn clone(&self) -> Self {
        // SAFETY: an owned value is plain data or holds its object alive.
        unsafe { Owned::retained(&self.0) }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: owned by this value, released once.
        unsafe { header::release_any(&self.0) };
    }
}

/// A callback's or hook's result: `None` for tvm-ffi's `Unchanged` marker.
fn result_of(a: TVMFFIAny) -> Option<Owned> {
    (a.type_index != UNCHANGED).then_some(Owned(a))
}

// ---------------------------------------------------------------------------------------------
// Globals over C-form arguments

/// A global's body: its arguments, owned.
type Body = fn(Vec<Owned>) -> Result<Owned>;

/// A global reached in tvm-ffi's convention with its arguments in C form. With `takes_root`,
/// its first argument is taken as C++'s by-value `Any` parameters take it: an rvalue reference
/// passes its reference to the call, which may then hold the value's only reference.
fn global(takes_root: bool, body: Body) -> PackedFunc {
    PackedFunc::from_ffi(move |views| {
        let owned = views
            .iter()
            .enumerate()
            // SAFETY: valid views (the caller's contract; an rvalue reference's slot writable).
            .map(|(i, a)| unsafe {
                if i == 0 && takes_root {
                    Owned::take(a)
                } else {
                    Owned::from_view(a)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(body(owned)?.into_raw())
    })
}

/// Argument `i`, or an error naming it.
fn arg(args: &[Owned], i: usize) -> Result<&Owned> {
    args.get(i).ok_or_else(|| Error::index(format!("argument {i} requested but only {} given", args.len())))
}

// ---------------------------------------------------------------------------------------------
// The mutator

/// Callback entries of a mutate: type index, callback, whether it takes the in-place mode.
type MutateEntries = Vec<(i32, PackedFunc, bool)>;

/// How a mutator treats the values it meets.
enum Policy {
    /// `ffi.StructuralMap`: callbacks replace values, before or after default descent.
    Map { plain: Entries, with_region: Entries, pre_order: bool },
    /// `ffi.StructuralMutate`: a matched callback owns the value's mutation.
    Mutate(MutateEntries),
}

/// Payload of an `ffi.StructuralMutator` made here. It starts as tvm-ffi's `StructuralMutatorObj`
/// does (a hook compiled against tvm-ffi's headers reads it): the dispatch table through which
/// hooks descend, and the current definition region, which they read and set in place. Then
/// the policy and the variable remap (by the key object's address; the key is held).
#[repr(C)]
pub struct MutatorObj {
    vtable: &'static MutatorVTable,
    region: AtomicI32,
    policy: Policy,
    remap: Mutex<HashMap<usize, (ObjectRef, Owned)>>,
}

impl ObjectType for MutatorObj {
    /// Made at `ffi.StructuralMutator`'s index, read back through [`mutator_arg`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

type Mutator = ObjPtr<MutatorObj>;

/// Whether a mutation may change a value in place: its holder is held by the mutation alone and
/// holds the value's only other reference.
type Sole = bool;

/// A mutation's outcome: `None` when the value is unchanged (or was changed in place).
type Out = Option<Owned>;

fn mutator_index() -> Result<u32> {
    crate::runtime::object::type_table::type_key_to_index("ffi.StructuralMutator")
}

fn new_mutator(policy: Policy) -> Result<Mutator> {
    let obj = MutatorObj {
        vtable: &VTABLE,
        region: AtomicI32::new(REGION_NONE as i32),
        policy,
        remap: Mutex::new(HashMap::new()),
    };
    Ok(ObjPtr::new_as(obj, mutator_index()?))
}

/// The mutator in argument 0 (one made here).
fn mutator_arg(args: &[Owned]) -> Result<Mutator> {
    let o = arg(args, 0)?.as_object().filter(|o| o.made_here());
    match o {
        Some(o) if o.type_index() == mutator_index()? => {
            // SAFETY: objects of this index made here are made by `new_mutator`, with this payload.
            Ok(unsafe { ObjPtr::from_borrowed(o.as_header()) })
        }
        _ => Err(Error::type_error("argument 0: expected a StructuralMutator of an active mutation")),
    }
}

/// The mutator as a view to pass to a callback (kept alive by `m`).
fn view_of(m: &Mutator) -> TVMFFIAny {
    // SAFETY: a live object (we hold a reference).
    let index = unsafe { (*m.as_header()).type_index } as i32;
    TVMFFIAny::ptr(index, m.as_header() as *const c_void)
}

fn region(m: &Mutator) -> i64 {
    m.region.load(Ordering::Relaxed) as i64
}

/// Runs `f` in definition region `kind` (a pattern region stays one), restoring the region after.
fn in_region<R>(m: &Mutator, kind: i64, f: impl FnOnce() -> R) -> R {
    with_region(&m.region, kind, f)
}

/// Mutates `v` as the policy says; the outcome is `None` when it comes out the same value.
fn mutate(m: &Mutator, v: &Owned, sole: Sole) -> Result<Out> {
    let out = nested("a structural mutation", || match &m.policy {
        Policy::Map { pre_order: true, .. } => map_pre(m, v, sole),
        Policy::Map { .. } => map_post(m, v, sole),
        Policy::Mutate(entries) => mutate_step(m, entries, v, sole),
    })?;
    Ok(out.filter(|r| !r.same_as(v)))
}

/// The first map callback matching `v` applied to it: `None` when none matches.
fn link(m: &Mutator, v: &Owned) -> Result<Option<Out>> {
    let Policy::Map { plain, with_region, .. } = &m.policy else { return Ok(None) };
    let t = v.match_index();
    if let Some((_, f)) = plain.iter().find(|(k, _)| matches(t, *k)) {
        return Ok(Some(result_of(f.call_any(&[v.0])?)));
    }
    if let Some((_, f)) = with_region.iter().find(|(k, _)| matches(t, *k)) {
        return Ok(Some(result_of(f.call_any(&[v.0, Owned::int(region(m))])?)));
    }
    Ok(None)
}

/// Post-order: default descent, then the callback on what it made.
fn map_post(m: &Mutator, v: &Owned, sole: Sole) -> Result<Out> {
    let out = default_mutate(m, v, sole)?;
    let target = out.as_ref().unwrap_or(v);
    Ok(match link(m, target)? {
        Some(Some(r)) => Some(r),
        _ => out,
    })
}

/// Pre-order: the callback, then default descent over what it made.
fn map_pre(m: &Mutator, v: &Owned, sole: Sole) -> Result<Out> {
    let before = v.refs();
    let mapped = match link(m, v)? {
        None => return default_mutate(m, v, sole),
        Some(r) => r.filter(|r| !r.same_as(v)),
    };
    let Some(r) = mapped else {
        // Still in place only if the callback kept no reference to the value.
        return default_mutate(m, v, sole && v.refs() == before);
    };
    let sole = sole && r.refs() == 1;
    Ok(Some(default_mutate(m, &r, sole)?.unwrap_or(r)))
}

/// A mutate's step: the first matching callback owns the value's mutation; else default descent.
fn mutate_step(m: &Mutator, entries: &MutateEntries, v: &Owned, sole: Sole) -> Result<Out> {
    let t = v.match_index();
    let Some((_, f, takes_mode)) = entries.iter().find(|(k, _, _)| matches(t, *k)) else {
        return default_mutate(m, v, sole);
    };
    let me = view_of(m);
    let r = if *takes_mode { f.call_any(&[v.0, me, Owned::int(sole as i64)])? } else { f.call_any(&[v.0, me])? };
    Ok(result_of(r))
}

/// Default descent: containers through their children, strings, bytes and big integers as
/// they are, other objects through their type's hook or their reflected fields.
fn default_mutate(m: &Mutator, v: &Owned, sole: Sole) -> Result<Out> {
    let Some(o) = v.as_object() else { return Ok(None) };
    match o.type_index() {
        ti::STRING | ti::BYTES | ti::BIG_INT => Ok(None),
        ti::FFI_ARRAY | ti::LIST if sole => seq_in_place(m, &o).map(|_| None),
        ti::FFI_ARRAY | ti::LIST => seq_copy(m, &o),
        ti::FFI_MAP | ti::DICT if sole => map_in_place(m, &o).map(|_| None),
        ti::FFI_MAP | ti::DICT => map_copy(m, &o),
        _ => match hook(m, v, &o, sole)? {
            Some(out) => Ok(out),
            None => reflected(m, v, &o),
        },
    }
}

/// A type's own mutation hook (`__s_maybe_inplace_mutate__` when in place, `__s_mutate__`),
/// if it registered one.
fn hook(m: &Mutator, v: &Owned, o: &ObjectRef, sole: Sole) -> Result<Option<Out>> {
    let names: &[&str] = if sole { &["__s_maybe_inplace_mutate__", "__s_mutate__"] } else { &["__s_mutate__"] };
    for name in names {
        match crate::runtime::reflection::type_info::attr(name.as_bytes(), o.type_index()) {
            None | Some(Value::Null) => continue,
            Some(Value::Func(f)) => return Ok(Some(result_of(f.call_any(&[view_of(m), v.0])?))),
            Some(Value::Handle(p)) if !p.is_null() => {
                // SAFETY: an opaque pointer in a `__s_mutate__` column is a hook of tvm-ffi's
                // `FStructuralMutateABI` (its registrar's word, as tvm-ffi takes it); the mutator
                // is laid out as its `StructuralMutatorObj`, `v` is live.
                let f: NativeHook = unsafe { std::mem::transmute::<*mut c_void, NativeHook>(p) };
                return native_result(unsafe { f(m.as_header() as *mut c_void, v.0) }).map(Some);
            }
            Some(_) => return Err(Error::type_error(format!("{name} must be a direct hook pointer or ffi.Function"))),
        }
    }
    Ok(None)
}

// ---------------------------------------------------------------------------------------------
// Sequences and maps

/// The items of an array or list (new references).
fn seq_items(o: &ObjectRef) -> Result<Vec<Owned>> {
    // SAFETY: the container's own, valid elements.
    let own = |items: &[TVMFFIAny]| items.iter().map(|a| unsafe { Owned::from_view(a) }).collect();
    match (o.downcast::<ListObj>(), o.downcast::<FfiArrayObj>()) {
        (Some(l), _) => l.with(|c| own(c.items())),
        (_, Some(a)) => own(a.items()),
        _ => Err(Error::type_error(format!(
            "expected ffi.Array or ffi.List, got {}",
            crate::runtime::collections::list_map::type_name(o)
        ))),
    }
}

/// A new array or list (as `like` is) of `items`.
fn new_seq(like: &ObjectRef, items: Vec<Owned>) -> Result<Owned> {
    let raw = items.into_iter().map(Owned::into_raw).collect();
    if like.type_index() == ti::LIST {
        return Ok(Owned::of(ObjPtr::new(ListObj::new(raw)?)));
    }
    Ok(Owned::of(FfiArrayObj::new(raw)))
}

/// A sequence another may hold: mutated into a copy from its first changed item on.
fn seq_copy(m: &impl Descend, o: &ObjectRef) -> Result<Out> {
    let mut items = seq_items(o)?;
    let mut changed = false;
    for item in items.iter_mut() {
        if let Some(r) = m.descend(item, false)? {
            (*item, changed) = (r, true);
        }
    }
    if changed {
        return new_seq(o, items).map(Some);
    }
    Ok(None)
}

/// Item `i` of a sequence (a new reference), or `None` past its end.
fn seq_item(o: &ObjectRef, i: usize) -> Result<Option<Owned>> {
    // SAFETY: the container's own, valid element.
    let own = |items: &[TVMFFIAny]| items.get(i).map(|a| unsafe { Owned::from_view(a) }).transpose();
    match (o.downcast::<ListObj>(), o.downcast::<FfiArrayObj>()) {
        (Some(l), _) => l.with(|c| own(c.items())),
        (_, Some(a)) => own(a.items()),
        _ => Ok(None),
    }
}

/// Writes item `i` of a sequence the mutation alone holds.
fn seq_set(o: &ObjectRef, i: usize, v: Owned) -> Result<()> {
    let old = match (o.downcast::<ListObj>(), o.downcast::<FfiArrayObj>()) {
        (Some(l), _) => l.with(|c| c.replace(i, v.into_raw()))?,
        // SAFETY: only the mutation holds the array (its caller's and its parent's references,
        // both the mutation's own), so no one else reads it meanwhile.
        (_, Some(a)) => unsafe { a.replace_unshared(i, v.into_raw()) }?,
        _ => return Err(Error::type_error("expected ffi.Array or ffi.List")),
    };
    drop(Owned(old));
    Ok(())
}

/// A sequence the mutation alone holds: changed items written in place.
fn seq_in_place(m: &impl Descend, o: &ObjectRef) -> Result<()> {
    let mut i = 0;
    while let Some(item) = seq_item(o, i)? {
        // The sequence's reference and ours: no one else holds the item.
        let sole = item.refs() == 2;
        if let Some(r) = m.descend(&item, sole)? {
            seq_set(o, i, r)?;
        }
        i += 1;
    }
    Ok(())
}

/// The entries of a map or dict (new references).
fn map_entries(o: &ObjectRef) -> Result<Vec<(Owned, Owned)>> {
    map_cell(o, |c| {
        c.entries()
            .into_iter()
            // SAFETY: live entries of the locked cell.
            .map(|kv| unsafe { Ok((Owned::from_view(&(*kv).key)?, Owned::from_view(&(*kv).value)?)) })
            .collect()
    })
}

/// A map another may hold: mutated into a copy (same keys, same order) when a value changes.
fn map_copy(m: &impl Descend, o: &ObjectRef) -> Result<Out> {
    let mut entries = map_entries(o)?;
    let mut changed = false;
    for (_, value) in entries.iter_mut() {
        if let Some(r) = m.descend(value, false)? {
            (*value, changed) = (r, true);
        }
    }
    if !changed {
        return Ok(None);
    }
    let pairs = entries.into_iter().map(|(k, v)| (k.into_raw(), v.into_raw())).collect();
    let map = match o.type_index() {
        ti::DICT => new_map::<{ ti::DICT }>(pairs)?,
        _ => new_map::<{ ti::FFI_MAP }>(pairs)?,
    };
    Ok(Some(Owned::object(map)))
}

/// The value of entry `i` of a map (a new reference), or `None` past its end.
fn map_value(o: &ObjectRef, i: usize) -> Result<Option<Owned>> {
    // SAFETY: a live entry of the locked cell.
    map_cell(o, |c| c.entries().get(i).map(|kv| unsafe { Owned::from_view(&(**kv).value) }).transpose())
}

/// A map the mutation alone holds: changed values written in place.
fn map_in_place(m: &impl Descend, o: &ObjectRef) -> Result<()> {
    let mut i = 0;
    while let Some(value) = map_value(o, i)? {
        let sole = value.refs() == 2;
        if let Some(r) = m.descend(&value, sole)? {
            let old = map_cell(o, |c| {
                let kv = c.entries().get(i).copied().ok_or_else(|| Error::index("a map entry went away"))?;
                // SAFETY: a live entry of the locked cell; its old value moves out to us.
                Ok(unsafe { std::ptr::replace(&mut (*kv).value, r.into_raw()) })
            })?;
            drop(Owned(old));
        }
        i += 1;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// tvm-ffi's dispatch table and native hooks

/// tvm-ffi's `FStructuralMutateABI`: a hook (or a mutator's entry) taking the mutator and a
/// borrowed value, returning a replacement, the `Unchanged` marker or an error, owned.
type NativeHook = unsafe extern "C" fn(*mut c_void, TVMFFIAny) -> TVMFFIAny;

/// tvm-ffi's `StructuralMutatorVTable`, which code compiled against its headers calls a
/// mutator's descent through.
#[repr(C)]
struct MutatorVTable {
    mutate: NativeHook,
    maybe_inplace_mutate: NativeHook,
    var_remap_get: NativeHook,
    var_remap_set: unsafe extern "C" fn(*mut c_void, TVMFFIAny, TVMFFIAny) -> TVMFFIAny,
}

static VTABLE: MutatorVTable = MutatorVTable {
    mutate: entry_mutate,
    maybe_inplace_mutate: entry_maybe_inplace_mutate,
    var_remap_get: entry_var_remap_get,
    var_remap_set: entry_var_remap_set,
};

/// Who mutates a container's children: a mutator made here, or any mutator through its
/// dispatch table (a hook's caller, made by this library or by code built on tvm-ffi).
trait Descend {
    /// The child `v` mutated (`sole`: held by its parent alone, so it may change in place).
    fn descend(&self, v: &Owned, sole: Sole) -> Result<Out>;
}

impl Descend for Mutator {
    fn descend(&self, v: &Owned, sole: Sole) -> Result<Out> {
        mutate(self, v, sole)
    }
}

/// A `StructuralMutatorObj` that called one of the hooks below.
struct Native(*mut c_void);

impl Descend for Native {
    fn descend(&self, v: &Owned, sole: Sole) -> Result<Out> {
        // SAFETY: a live mutator (the hook's caller), laid out as tvm-ffi's.
        let table = unsafe { dispatch_table::<MutatorVTable>(self.0) };
        // SAFETY: the caller's table, alive as long as the mutator; `v` is live for the call.
        let r = unsafe {
            if sole {
                ((*table).maybe_inplace_mutate)(self.0, v.0)
            } else {
                ((*table).mutate)(self.0, v.0)
            }
        };
        Ok(native_result(r)?.filter(|r| !r.same_as(v)))
    }
}

/// A native hook's or entry's result: `None` for `Unchanged`; an error object as an error.
fn native_result(r: TVMFFIAny) -> Result<Out> {
    let r = Owned(r);
    if r.0.type_index != ti::ERROR as i32 {
        return Ok(result_of(r.into_raw()));
    }
    Err(returned_error(r.as_object(), "a structural mutation hook"))
}

/// A native hook's or entry's answer: the outcome, `Unchanged`, or the error as an object (a
/// panic included: none crosses into C++). A child's error object goes on as it came (C++ code
/// records the nodes it passes in it).
fn native_answer(body: impl FnOnce() -> Result<Out>) -> TVMFFIAny {
    match catch_native("a structural mutation", body) {
        Ok(Some(v)) => v.into_raw(),
        Ok(None) => UNCHANGED_ANY,
        Err(e) => error_any(&e),
    }
}

/// The mutator made here that `m` is.
///
/// # Safety
/// `m` is a live mutator made by [`new_mutator`] (this table is installed only there).
unsafe fn ours(m: *mut c_void) -> Mutator {
    // SAFETY: the contract above.
    unsafe { ObjPtr::from_borrowed(m as *mut ObjectHeader) }
}

unsafe extern "C" fn entry_mutate(m: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
    // SAFETY: called through this table, so `m` is ours; `v` is a live view.
    native_answer(|| mutate(&unsafe { ours(m) }, &unsafe { Owned::from_view(&v) }?, false))
}

unsafe extern "C" fn entry_maybe_inplace_mutate(m: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
    // SAFETY: as in `entry_mutate`; the caller found `v` held by its parent alone.
    native_answer(|| mutate(&unsafe { ours(m) }, &unsafe { Owned::from_view(&v) }?, true))
}

unsafe extern "C" fn entry_var_remap_get(m: *mut c_void, var: TVMFFIAny) -> TVMFFIAny {
    native_answer(|| {
        // SAFETY: as in `entry_mutate`.
        let (m, var) = unsafe { (ours(m), Owned::from_view(&var)?) };
        let key =
            var.as_object().ok_or_else(|| Error::type_error("Variable-remap key must be an object-backed value"))?;
        Ok(Some(remap_get(&m, &key).unwrap_or(Owned(TVMFFIAny::NONE))))
    })
}

unsafe extern "C" fn entry_var_remap_set(m: *mut c_void, var: TVMFFIAny, value: TVMFFIAny) -> TVMFFIAny {
    native_answer(|| {
        // SAFETY: as in `entry_mutate`.
        let (m, var, value) = unsafe { (ours(m), Owned::from_view(&var)?, Owned::from_view(&value)?) };
        let key =
            var.as_object().ok_or_else(|| Error::type_error("Variable-remap key must be an object-backed value"))?;
        remap_set(&m, &key, value);
        Ok(Some(Owned(TVMFFIAny::NONE)))
    })
}

/// `__s_mutate__` of strings, bytes and big integers: nothing inside to change.
unsafe extern "C" fn hook_leaf(_m: *mut c_void, _v: TVMFFIAny) -> TVMFFIAny {
    UNCHANGED_ANY
}

/// `__s_mutate__` of arrays, lists, maps and dicts: a copy when a child changes.
unsafe extern "C" fn hook_container(m: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
    // SAFETY: the caller's live mutator and value.
    native_answer(|| unsafe { container(m, &v, false) })
}

/// `__s_maybe_inplace_mutate__` of the same: changed children written in place (the caller
/// found the container held by its parent alone).
unsafe extern "C" fn hook_container_in_place(m: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
    // SAFETY: as in `hook_container`.
    native_answer(|| unsafe { container(m, &v, true) })
}

/// A container hook's body: its children descended through the caller's mutator `m`.
///
/// # Safety
/// `m` is a live mutator laid out as tvm-ffi's; `v` a live view of a container.
unsafe fn container(m: *mut c_void, v: &TVMFFIAny, in_place: bool) -> Result<Out> {
    // SAFETY: the contract above.
    let o = unsafe { Owned::from_view(v) }?.as_object().ok_or_else(|| Error::type_error("expected a container"))?;
    let map = matches!(o.type_index(), ti::FFI_MAP | ti::DICT);
    match (map, in_place) {
        (true, false) => map_copy(&Native(m), &o),
        (false, false) => seq_copy(&Native(m), &o),
        (true, true) => map_in_place(&Native(m), &o).map(|_| None),
        (false, true) => seq_in_place(&Native(m), &o).map(|_| None),
    }
}

/// `__s_visit__` of arrays, lists, maps and dicts (tvm-ffi's `FStructuralVisitABI`): each item
/// (a map's values: keys are anchors) visited through the caller's visitor, whose table's one
/// entry comes first after the header; its first error or interrupt ends the visit and is the
/// result, else None. The children are taken out first, so a visit may touch the container.
unsafe extern "C" fn hook_visit_container(visitor: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
    let body = || -> Result<TVMFFIAny> {
        // SAFETY: the caller's live value.
        let o =
            unsafe { Owned::from_view(&v) }?.as_object().ok_or_else(|| Error::type_error("expected a container"))?;
        let children = match o.type_index() {
            ti::FFI_MAP | ti::DICT => map_entries(&o)?.into_iter().map(|(_, value)| value).collect(),
            _ => seq_items(&o)?,
        };
        // SAFETY: a live visitor laid out as tvm-ffi's; its table's one entry has this type.
        let table = unsafe { dispatch_table::<NativeHook>(visitor) };
        for child in &children {
            // SAFETY: the visitor's own entry, called with a live child.
            let r = unsafe { (*table)(visitor, child.0) };
            if r.type_index != fti::NONE {
                return Ok(r);
            }
        }
        Ok(TVMFFIAny::NONE)
    };
    catch_native("a structural visit", body).unwrap_or_else(|e| error_any(&e))
}

/// Register the built-in types' structural mutation and visit hooks, as tvm-ffi's library
/// does: code built on its headers mutates and walks containers through them (falling back to
/// an object's reflected fields, which containers have none of).
pub(crate) fn install_hooks() -> Result<()> {
    let hook = |f: NativeHook| TVMFFIAny::ptr(fti::OPAQUE_PTR, f as *const c_void);
    let leaf = hook(hook_leaf);
    for index in [ti::STRING, ti::BYTES, ti::BIG_INT] {
        for name in [&b"__s_mutate__"[..], b"__s_maybe_inplace_mutate__"] {
            // SAFETY: a plain value.
            unsafe { crate::runtime::reflection::type_info::register_attr(index, name, &leaf)? };
        }
    }
    for index in [ti::FFI_ARRAY, ti::LIST, ti::FFI_MAP, ti::DICT] {
        // SAFETY: plain values.
        unsafe {
            crate::runtime::reflection::type_info::register_attr(index, b"__s_mutate__", &hook(hook_container))?;
            crate::runtime::reflection::type_info::register_attr(
                index,
                b"__s_maybe_inplace_mutate__",
                &hook(hook_container_in_place),
            )?;
            crate::runtime::reflection::type_info::register_attr(index, b"__s_visit__", &hook(hook_visit_container))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reflected objects

/// An object through its reflected fields. Free variables and DAG nodes already rebuilt are
/// replaced by what they became; a free variable used outside a definition region is kept.
fn reflected(m: &Mutator, v: &Owned, o: &ObjectRef) -> Result<Out> {
    let kind = kind_of(o).unwrap_or(0);
    let (free_var, dag) = (kind == FREE_VAR, kind == DAG_NODE);
    if free_var || dag {
        if let Some(r) = remap_get(m, o) {
            return Ok(Some(r));
        }
    }
    let at = region(m);
    if free_var && at == REGION_NONE {
        return Ok(None);
    }
    let out = if free_var && at == REGION_SIMPLE { in_region(m, REGION_NONE, || fields(m, o)) } else { fields(m, o) }?;
    if (free_var || dag) && (dag || at == REGION_PATTERN || out.is_some()) {
        remap_set(m, o, out.clone().unwrap_or_else(|| v.clone()));
    }
    Ok(out)
}

/// The fields of `o` that take part in structural equality.
fn structural_fields(o: &ObjectRef) -> Result<Vec<TVMFFIFieldInfo>> {
    Ok(all_fields(o.type_index())?.into_iter().filter(|f| f.flags & SEQ_HASH_IGNORE == 0).collect())
}

/// A copy of `o` whose changed fields are written, or `None` when no field changed. An object
/// with no structural fields has nothing to change.
fn fields(m: &Mutator, o: &ObjectRef) -> Result<Out> {
    let list = structural_fields(o)?;
    if list.is_empty() {
        return Ok(None);
    }
    let copy = shallow_copy(o)?;
    let mut changed = false;
    for f in &list {
        changed |= field(m, &copy, f)?;
    }
    Ok(changed.then(|| Owned::object(copy)))
}

/// Mutates field `f` of `copy` in the region its flags say; whether it changed.
fn field(m: &Mutator, copy: &ObjectRef, f: &TVMFFIFieldInfo) -> Result<bool> {
    let old = Owned(get_field_any(copy.as_header(), f)?);
    let new = match f.flags {
        fl if fl & DEF_SIMPLE != 0 => in_region(m, REGION_SIMPLE, || mutate(m, &old, false)),
        fl if fl & DEF_PATTERN != 0 => in_region(m, REGION_PATTERN, || mutate(m, &old, false)),
        _ => mutate(m, &old, false),
    }?;
    let Some(new) = new else { return Ok(false) };
    if f.setter.is_null() {
        return Err(Error::type_error(format!(
            "Cannot structurally mutate field `{}` of type `{}` because it does not define a setter",
            crate::runtime::reflection::fields::name(f),
            crate::runtime::collections::list_map::type_name(copy)
        )));
    }
    set_field_any(copy.as_header(), f, &new.0)?;
    Ok(true)
}

/// A distinct copy of `o` by its type's `__ffi_shallow_copy__` (fields shared).
fn shallow_copy(o: &ObjectRef) -> Result<ObjectRef> {
    let Some(Value::Func(f)) = crate::runtime::reflection::type_info::attr(b"__ffi_shallow_copy__", o.type_index())
    else {
        return Err(Error::type_error("__ffi_shallow_copy__ must be an ffi.Function"));
    };
    let copy = Owned(f.call_any(&[Owned::object(o.clone()).0])?);
    match copy.as_object() {
        Some(c) if c.type_index() == o.type_index() && c.as_header() != o.as_header() => Ok(c),
        _ => Err(Error::type_error(
            "Shallow copy callback must return a distinct object with the same type as its input",
        )),
    }
}

fn remap_get(m: &Mutator, var: &ObjectRef) -> Option<Owned> {
    m.remap.lock().get(&(var.as_header() as usize)).map(|(_, v)| v.clone())
}

fn remap_set(m: &Mutator, var: &ObjectRef, value: Owned) {
    let old = m.remap.lock().insert(var.as_header() as usize, (var.clone(), value));
    // Released after the lock: a value's release may run any deleter.
    drop(old);
}

/// The object a remap key argument names.
fn remap_key(args: &[Owned]) -> Result<ObjectRef> {
    arg(args, 1)?.as_object().ok_or_else(|| Error::type_error("Variable-remap key must be an object-backed value"))
}

// ---------------------------------------------------------------------------------------------
// Entry points

/// The mutate callback entries `[(type_index, callback, takes_mode), ...]` an argument holds.
fn mutate_entries(v: &Value) -> Result<MutateEntries> {
    let Value::Object(o) = v else { return Ok(Vec::new()) };
    let bad = || Error::type_error("a mutate callback entry is not a (type_index, callback, bool) triple");
    let items = sequence_items(o)?.ok_or_else(bad)?;
    items
        .iter()
        .map(|e| {
            let Value::Object(t) = e else { return Err(bad()) };
            match sequence_items(t)?.unwrap_or_default().as_slice() {
                [Value::Int(k), Value::Func(f), mode] => Ok((*k as i32, f.clone(), mode.as_int()? != 0)),
                _ => Err(bad()),
            }
        })
        .collect()
}

/// Mutates a root: in place when the call holds its only reference.
fn run(m: &Mutator, root: Owned) -> Result<Owned> {
    let sole = root.refs() == 1;
    Ok(mutate(m, &root, sole)?.unwrap_or(root))
}

fn structural_map(args: Vec<Owned>) -> Result<Owned> {
    let policy = Policy::Map {
        plain: entries(&arg(&args, 1)?.to_value()?)?,
        with_region: entries(&arg(&args, 2)?.to_value()?)?,
        pre_order: order_arg(arg(&args, 3)?.to_value()?)?,
    };
    let root = args.into_iter().next().ok_or_else(|| Error::index("argument 0 requested but none given"))?;
    run(&new_mutator(policy)?, root)
}

fn structural_mutate(args: Vec<Owned>) -> Result<Owned> {
    let policy = Policy::Mutate(mutate_entries(&arg(&args, 1)?.to_value()?)?);
    let root = args.into_iter().next().ok_or_else(|| Error::index("argument 0 requested but none given"))?;
    run(&new_mutator(policy)?, root)
}

fn mutator_mutate(args: Vec<Owned>) -> Result<Owned> {
    let v = arg(&args, 1)?;
    Ok(mutate(&mutator_arg(&args)?, v, false)?.unwrap_or_else(|| v.clone()))
}

fn mutator_default_mutate(args: Vec<Owned>) -> Result<Owned> {
    let v = arg(&args, 1)?;
    Ok(default_mutate(&mutator_arg(&args)?, v, false)?.unwrap_or_else(|| v.clone()))
}

fn var_remap_get(args: Vec<Owned>) -> Result<Owned> {
    let found = remap_get(&mutator_arg(&args)?, &remap_key(&args)?);
    Ok(found.unwrap_or(Owned(TVMFFIAny::NONE)))
}

fn var_remap_set(args: Vec<Owned>) -> Result<Owned> {
    remap_set(&mutator_arg(&args)?, &remap_key(&args)?, arg(&args, 2)?.clone());
    Ok(Owned(TVMFFIAny::NONE))
}

fn def_region_kind(args: Vec<Owned>) -> Result<Owned> {
    Ok(Owned(Owned::int(region(&mutator_arg(&args)?))))
}

fn with_def_region_kind(args: Vec<Owned>) -> Result<Owned> {
    let m = mutator_arg(&args)?;
    let kind = arg(&args, 1)?.to_value()?.as_int()?;
    let Value::Func(f) = arg(&args, 2)?.to_value()? else {
        return Err(Error::type_error("argument 2: expected a function"));
    };
    in_region(&m, kind, || f.call_any(&[])).map(Owned)
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("ffi.StructuralMap", global(true, structural_map)),
        ("ffi.StructuralMutate", global(true, structural_mutate)),
        ("ffi.StructuralMutatorMutate", global(false, mutator_mutate)),
        ("ffi.StructuralMutatorDefaultMutate", global(false, mutator_default_mutate)),
        ("ffi.StructuralMutatorVarRemapGet", global(false, var_remap_get)),
        ("ffi.StructuralMutatorVarRemapSet", global(false, var_remap_set)),
        ("ffi.StructuralMutatorDefRegionKind", global(false, def_region_kind)),
        ("ffi.StructuralMutatorWithDefRegionKind", global(false, with_def_region_kind)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::function::error_object::ErrorObj;
    use std::sync::Arc;

    fn ints(xs: &[i64]) -> Owned {
        let items = xs.iter().map(|x| Owned::int(*x)).collect();
        Owned::of(FfiArrayObj::new(items))
    }

    fn array(items: Vec<Owned>) -> Owned {
        Owned::of(FfiArrayObj::new(items.into_iter().map(Owned::into_raw).collect()))
    }

    fn read(v: &Owned) -> Vec<i64> {
        seq_items(&v.as_object().unwrap()).unwrap().iter().map(|x| x.0.as_i64()).collect()
    }

    fn add_one() -> PackedFunc {
        PackedFunc::from_typed(|a| Ok(Value::Int(a.int(0)? + 1)))
    }

    fn map_ints(f: PackedFunc, pre_order: bool) -> Mutator {
        new_mutator(Policy::Map { plain: vec![(fti::INT, f)], with_region: Vec::new(), pre_order }).unwrap()
    }

    #[test]
    fn a_shared_root_is_copied_and_a_sole_one_changed_in_place() {
        let root = ints(&[1, 2]);
        let kept = root.clone();
        let out = run(&map_ints(add_one(), false), root).unwrap();
        assert!(!out.same_as(&kept), "a root held elsewhere is copied");
        assert_eq!((read(&kept), read(&out)), (vec![1, 2], vec![2, 3]));

        let inner = ints(&[5]);
        let shared = inner.clone();
        let root = array(vec![inner]);
        let at = root.0.value;
        let out = run(&map_ints(add_one(), true), root).unwrap();
        assert_eq!(out.0.value, at, "a root held by the mutation alone changes in place");
        let items = seq_items(&out.as_object().unwrap()).unwrap();
        assert!(!items[0].same_as(&shared), "a child held elsewhere is copied");
        assert_eq!((read(&shared), read(&items[0])), (vec![5], vec![6]));
    }

    #[test]
    fn unchanged_values_come_back_as_they_were() {
        let text = Owned(Value::Str("a longer string".into()).into_any());
        let root = array(vec![Owned(Owned::int(1)), text, Owned(Value::Str("short".into()).into_any())]);
        let kept = root.clone();
        let same = PackedFunc::from_typed(|a| a.to_value(0));
        let m = new_mutator(Policy::Map { plain: vec![(-1, same)], with_region: Vec::new(), pre_order: false });
        assert!(run(&m.unwrap(), root).unwrap().same_as(&kept));
    }

    #[test]
    fn pre_order_maps_before_descent_and_post_order_after() {
        let trace = Arc::new(Mutex::new(Vec::new()));
        let record = {
            let trace = trace.clone();
            PackedFunc::from_typed(move |a| {
                let v = a.to_value(0)?;
                trace.lock().push(v.as_int().unwrap_or(-1));
                Ok(v)
            })
        };
        for (pre_order, want) in [(true, vec![-1, 1, -1, 2]), (false, vec![1, 2, -1, -1])] {
            trace.lock().clear();
            let root = array(vec![Owned(Owned::int(1)), ints(&[2])]);
            let m = new_mutator(Policy::Map { plain: vec![(-1, record.clone())], with_region: Vec::new(), pre_order });
            run(&m.unwrap(), root).unwrap();
            assert_eq!(*trace.lock(), want, "pre-order {pre_order}");
        }
    }

    #[test]
    fn record_fields_are_mutated_into_a_copy() {
        let step = crate::runtime::reflection::records::new_record("ffi.reflection.AccessStep").unwrap();
        crate::runtime::reflection::records::set_field(&step, "kind", Value::Int(0)).unwrap();
        let step = Owned::of(step);
        let kept = step.clone();
        let out = run(&map_ints(add_one(), false), step).unwrap();
        assert!(!out.same_as(&kept));
        let kind = |v: &Owned| {
            crate::runtime::reflection::fields::named_field_values(&v.as_object().unwrap()).unwrap()[0].2.clone()
        };
        assert_eq!((kind(&kept).as_int().unwrap(), kind(&out).as_int().unwrap()), (0, 1));
    }

    #[test]
    fn mutate_callbacks_own_descent_and_see_the_in_place_mode() {
        let modes = Arc::new(Mutex::new(Vec::new()));
        let on_array = {
            let modes = modes.clone();
            PackedFunc::from_typed(move |a| {
                modes.lock().push(a.int(2)?);
                Ok(Value::Int(7))
            })
        };
        let entries = vec![(ti::FFI_ARRAY as i32, on_array, true)];
        let root = ints(&[1]);
        let kept = root.clone();
        let out = run(&new_mutator(Policy::Mutate(entries.clone())).unwrap(), root).unwrap();
        assert_eq!(out.0.as_i64(), 7, "the callback's result is final");
        run(&new_mutator(Policy::Mutate(entries)).unwrap(), kept).unwrap();
        assert_eq!(*modes.lock(), vec![0, 1], "in place only for a root the mutation alone holds");
    }

    #[test]
    fn an_rvalue_reference_is_moved_into_the_call() {
        let mut slot = ints(&[1]).into_raw().as_ptr() as *mut ObjectHeader;
        let arg = TVMFFIAny::ptr(fti::OBJECT_RVALUE_REF, &mut slot as *mut _ as *const c_void);
        // SAFETY: a writable slot holding a live object we own.
        let taken = unsafe { Owned::take(&arg) }.unwrap();
        assert!(slot.is_null(), "the caller's slot is emptied");
        assert_eq!(taken.refs(), 1, "the caller's reference became the call's");
        // SAFETY: as above; the slot is empty now.
        assert!(unsafe { Owned::take(&arg) }.is_err());
    }

    /// Calls `f` as code built on tvm-ffi's headers calls a hook: the mutator and a view.
    fn call_hook(f: NativeHook, m: &Mutator, v: &Owned) -> TVMFFIAny {
        // SAFETY: a live mutator made here and a live value.
        unsafe { f(m.as_header() as *mut c_void, v.0) }
    }

    #[test]
    fn container_hooks_descend_through_the_mutators_table() {
        let m = map_ints(add_one(), false);
        let root = ints(&[1, 2]);
        let out = Owned(call_hook(hook_container, &m, &root));
        assert!(!out.same_as(&root), "a copy");
        assert_eq!((read(&root), read(&out)), (vec![1, 2], vec![2, 3]));
        let same = Owned(call_hook(hook_container, &map_ints(PackedFunc::from_typed(|a| a.to_value(0)), false), &root));
        assert_eq!(same.0.type_index, UNCHANGED, "no child changed");
        assert_eq!(call_hook(hook_leaf, &m, &Owned(Value::Str("text".into()).into_any())).type_index, UNCHANGED);

        let only = ints(&[5]);
        let r = call_hook(hook_container_in_place, &m, &only);
        assert_eq!((r.type_index, read(&only)), (UNCHANGED, vec![6]), "changed in place");

        let fail = PackedFunc::from_typed(|_| Err(Error::value("no ints here")));
        let e = Owned(call_hook(hook_container, &map_ints(fail, false), &root));
        assert_eq!(e.0.type_index, ti::ERROR as i32);
        let text = e.as_object().unwrap().downcast::<ErrorObj>().unwrap().text();
        assert_eq!(text, "ValueError: no ints here");
    }

    thread_local! {
        static CHILD_ERROR: std::cell::RefCell<Option<Owned>> = const { std::cell::RefCell::new(None) };
    }

    /// A mutator's entry as C++ code's that fails: it returns (a new reference to) one error
    /// object, the one the test keeps.
    unsafe extern "C" fn fail_with_kept_error(_m: *mut c_void, _v: TVMFFIAny) -> TVMFFIAny {
        CHILD_ERROR.with(|e| e.borrow().clone().unwrap().into_raw())
    }

    #[test]
    fn a_childs_error_object_comes_back_out_of_a_container_hook() {
        let kept = Owned::of(ObjPtr::new(ErrorObj::from_text("ValueError: bad child")));
        CHILD_ERROR.with(|e| *e.borrow_mut() = Some(kept.clone()));
        /// A mutator laid out as tvm-ffi's: a header, then its table.
        #[repr(C)]
        struct Mutator {
            header: [u8; 24],
            table: *const MutatorVTable,
        }
        static TABLE: MutatorVTable = MutatorVTable {
            mutate: fail_with_kept_error,
            maybe_inplace_mutate: fail_with_kept_error,
            var_remap_get: fail_with_kept_error,
            var_remap_set: entry_var_remap_set,
        };
        let mut m = Mutator { header: [0; 24], table: &TABLE };
        // SAFETY: a mutator of tvm-ffi's layout and a live array.
        let r = Owned(unsafe { hook_container(&mut m as *mut Mutator as *mut c_void, ints(&[1]).0) });
        assert!(r.same_as(&kept), "the child's error object itself, not a copy of its text");
        CHILD_ERROR.with(|e| e.borrow_mut().take());
    }

    /// A hook as C++ code registers one: it descends into the int 1 through the mutator's table.
    unsafe extern "C" fn descend_one(m: *mut c_void, _v: TVMFFIAny) -> TVMFFIAny {
        native_answer(|| Native(m).descend(&Owned(Owned::int(1)), false))
    }

    #[test]
    fn a_native_hook_is_called_with_a_mutator_made_here() {
        let hook = TVMFFIAny::ptr(fti::OPAQUE_PTR, descend_one as NativeHook as *const c_void);
        // SAFETY: a plain value. (Shapes have no hook otherwise; no other test mutates one.)
        unsafe { crate::runtime::reflection::type_info::register_attr(ti::SHAPE_TUPLE, b"__s_mutate__", &hook) }
            .unwrap();
        let shape = Owned::object(crate::runtime::container::shape_object(&[3]));
        // Pre-order, so the callback does not map the hook's result again.
        let out = run(&map_ints(add_one(), true), array(vec![shape])).unwrap();
        let items = seq_items(&out.as_object().unwrap()).unwrap();
        assert_eq!(items[0].0.as_i64(), 2, "the hook's result: 1 mapped by the mutator");
    }

    thread_local! {
        static VISITED: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// A visitor's entry as C++ code's: records ints, and stops at 3 (its result ends the visit).
    unsafe extern "C" fn record_until_three(_visitor: *mut c_void, v: TVMFFIAny) -> TVMFFIAny {
        VISITED.with(|s| s.borrow_mut().push(v.as_i64()));
        if v.as_i64() == 3 {
            v
        } else {
            TVMFFIAny::NONE
        }
    }

    #[test]
    fn the_visit_hook_walks_items_and_map_values_until_stopped() {
        /// A visitor laid out as tvm-ffi's: a header, then its table (one entry).
        #[repr(C)]
        struct Visitor {
            header: [u8; 24],
            table: *const NativeHook,
        }
        static TABLE: NativeHook = record_until_three;
        let mut visitor = Visitor { header: [0; 24], table: &TABLE };
        let me = &mut visitor as *mut Visitor as *mut c_void;
        // SAFETY: a visitor of tvm-ffi's layout and a live array.
        let r = unsafe { hook_visit_container(me, ints(&[1, 2, 3, 4]).0) };
        assert_eq!((r.type_index, r.as_i64()), (fti::INT, 3), "the stopping result");
        assert_eq!(VISITED.with(|s| s.take()), vec![1, 2, 3]);

        let pairs = vec![(Owned::int(10), Owned::int(1)), (Owned::int(20), Owned::int(2))];
        let map = Owned::object(new_map::<{ ti::FFI_MAP }>(pairs).unwrap());
        // SAFETY: as above.
        let r = unsafe { hook_visit_container(me, map.0) };
        assert_eq!(r.type_index, fti::NONE, "visited to the end");
        let mut seen = VISITED.with(|s| s.take());
        seen.sort();
        assert_eq!(seen, vec![1, 2], "values only: keys are anchors");
    }

    #[test]
    fn variable_remap_and_regions() {
        let m = map_ints(add_one(), false);
        let me = Owned::object(m.to_object_ref());
        let (var, to) = (ints(&[1]), ints(&[2]));
        let none = var_remap_get(vec![me.clone(), var.clone()]).unwrap();
        assert_eq!(none.0.type_index, fti::NONE);
        var_remap_set(vec![me.clone(), var.clone(), to.clone()]).unwrap();
        assert!(var_remap_get(vec![me.clone(), var]).unwrap().same_as(&to));
        assert!(var_remap_get(vec![me.clone(), Owned(Owned::int(1))]).is_err(), "keys are objects");
        in_region(&m, REGION_PATTERN, || {
            assert_eq!(in_region(&m, REGION_SIMPLE, || region(&m)), REGION_PATTERN, "a pattern region stays one");
        });
        assert_eq!(def_region_kind(vec![me]).unwrap().0.as_i64(), REGION_NONE);
    }
}
