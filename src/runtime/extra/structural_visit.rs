//! tvm-ffi's structural walks and visits (`ffi.StructuralWalk`, `ffi.StructuralVisit` and the
//! `ffi.StructuralVisitor*` globals): a value's structural children are a sequence's items, a
//! map's values (keys are anchors, not visited), and an object's fields that take part in
//! structural equality (s-eq-ignore fields skipped), each in the definition region its field
//! says. A walk calls the first callback whose type matches each value, before (pre-order) or
//! after (post-order) its children; a callback returns None to go on, `WalkResult.SKIP` (1) to
//! leave a node's children out, or a `VisitInterrupt` to stop, which the walk returns. A visit
//! hands each matched value to its callback with a visitor that descends on request.

use crate::abi::{ffi_type_index as fti, TVMFFIAny};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{map_items, sequence_items};
use crate::runtime::function::error_object::{catch_native, error_any, returned_error};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{
    header::{self, ObjPtr, ObjectRef, ObjectType},
    type_table::type_index as ti,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::runtime::reflection::fields::{DEF_PATTERN, DEF_SIMPLE, SEQ_HASH_IGNORE};
/// `TVMFFIDefRegionKind`: none, pattern, simple.
pub(crate) const REGION_NONE: i64 = 0;
pub(crate) const REGION_PATTERN: i64 = 1;
pub(crate) const REGION_SIMPLE: i64 = 2;
/// `TVMFFISEqHashKind`: free variables and DAG nodes.
pub(crate) const FREE_VAR: i32 = 2;
pub(crate) const DAG_NODE: i32 = 3;

/// The type index a value has for callback matching.
fn index_of(v: &Value) -> i32 {
    let a = v.clone().into_any();
    // SAFETY: owned just above, released once (only its index is kept).
    unsafe { header::release_any(&a) };
    match a.type_index {
        fti::SMALL_STR => ti::STRING as i32,
        fti::SMALL_BYTES => ti::BYTES as i32,
        t => t,
    }
}

/// tvm-ffi's `RuntimeTypeIndexMatch`: whether a value of `actual` matches a callback for `target`.
pub(crate) fn matches(actual: i32, target: i32) -> bool {
    const ANY: i32 = -1;
    match target {
        _ if actual == target => true,
        ANY => true,
        t if t == ti::ROOT as i32 => actual >= fti::STATIC_OBJECT_BEGIN,
        _ if actual < fti::STATIC_OBJECT_BEGIN || target < fti::STATIC_OBJECT_BEGIN => false,
        _ => crate::runtime::object::type_table::derived_from(actual as u32, target as u32).unwrap_or(false),
    }
}

/// The structural children of `v`, each with the region it is in.
fn children(v: &Value, region: i64) -> Result<Vec<(Value, i64)>> {
    let Value::Object(o) = v else { return Ok(Vec::new()) };
    if let Some(items) = sequence_items(o)? {
        return Ok(items.into_iter().map(|x| (x, region)).collect());
    }
    if matches!(o.type_index(), ti::FFI_MAP | ti::DICT) {
        return Ok(map_items(o)?.into_iter().map(|(_, x)| (x, region)).collect());
    }
    if matches!(o.type_index(), ti::STRING | ti::BYTES | ti::SHAPE_TUPLE | ti::BIG_INT) {
        return Ok(Vec::new());
    }
    let free_var = kind_of(o) == Some(FREE_VAR);
    let mut out = Vec::new();
    for f in crate::runtime::reflection::fields::all_fields(o.type_index())? {
        if f.flags & SEQ_HASH_IGNORE != 0 {
            continue;
        }
        let inner = match (f.flags & (DEF_PATTERN | DEF_SIMPLE) != 0, region) {
            (_, REGION_PATTERN) => REGION_PATTERN,
            (true, _) if f.flags & DEF_SIMPLE != 0 => REGION_SIMPLE,
            (true, _) => REGION_PATTERN,
            (false, REGION_SIMPLE) if free_var => REGION_NONE,
            (false, r) => r,
        };
        out.push((crate::runtime::reflection::fields::get_field(o.as_header(), &f)?, inner));
    }
    Ok(out)
}

/// A type's `structural_eq_hash_kind`, when its metadata says.
pub(crate) fn kind_of(o: &ObjectRef) -> Option<i32> {
    let info = crate::runtime::reflection::type_info::type_info(o.type_index()).ok()?;
    // SAFETY: type information stays valid for the process.
    unsafe { (*info).metadata.as_ref() }.map(|m| m.structural_eq_hash_kind)
}

/// What a walk callback asked for.
enum Step {
    Go,
    Skip,
    Stop(Value),
}

fn step_of(r: Value) -> Result<Step> {
    match r {
        Value::Null | Value::Int(0) => Ok(Step::Go),
        Value::Int(1) => Ok(Step::Skip),
        Value::Object(o) if o.type_index() == ti::VISIT_INTERRUPT => Ok(Step::Stop(Value::Object(o))),
        other => Err(Error::type_error(format!(
            "a structural walk callback returned {other:?}, not None, WalkResult or VisitInterrupt"
        ))),
    }
}

pub(crate) type Entries = Vec<(i32, PackedFunc)>;

/// The callback entries `[(type_index, function), ...]` an argument holds.
pub(crate) fn entries(v: &Value) -> Result<Entries> {
    let Value::Object(o) = v else { return Ok(Vec::new()) };
    let items =
        sequence_items(o)?.ok_or_else(|| Error::type_error("expected a sequence of (type_index, callback) entries"))?;
    items
        .iter()
        .map(|e| {
            let pair = match e {
                Value::Object(p) => sequence_items(p)?.unwrap_or_default(),
                _ => Vec::new(),
            };
            match pair.as_slice() {
                [Value::Int(t), Value::Func(f)] => Ok((*t as i32, f.clone())),
                _ => Err(Error::type_error("a callback entry is not a (type_index, callback) pair")),
            }
        })
        .collect()
}

struct Walk {
    plain: Entries,
    with_region: Entries,
    pre_order: bool,
}

impl Walk {
    fn dispatch(&self, v: &Value, region: i64) -> Result<Step> {
        let t = index_of(v);
        if let Some((_, f)) = self.plain.iter().find(|(k, _)| matches(t, *k)) {
            return step_of(f.call(std::slice::from_ref(v))?);
        }
        if let Some((_, f)) = self.with_region.iter().find(|(k, _)| matches(t, *k)) {
            return step_of(f.call(&[v.clone(), Value::Int(region)])?);
        }
        Ok(Step::Go)
    }

    /// The walk's step at `value`: its callback before or after the default descent.
    fn visit(&self, v: &Visitor, value: &Value) -> Result<Value> {
        if self.pre_order {
            match self.dispatch(value, region(v))? {
                Step::Stop(i) => return Ok(i),
                Step::Skip => return Ok(Value::Null),
                Step::Go => {}
            }
        }
        let inner = default_visit(v, value)?;
        if !matches!(inner, Value::Null) {
            return Ok(inner);
        }
        if !self.pre_order {
            if let Step::Stop(i) = self.dispatch(value, region(v))? {
                return Ok(i);
            }
        }
        Ok(Value::Null)
    }
}

/// How a visitor treats the values it meets.
enum Policy {
    /// `ffi.StructuralWalk`: callbacks before or after each value's descent.
    Walk(Walk),
    /// `ffi.StructuralVisit`: a matched callback owns the value's visit (with the visitor).
    Visit(Entries),
}

/// tvm-ffi's `FStructuralVisitABI`: a hook (or a visitor's entry) taking the visitor and a
/// borrowed value, returning None to go on, a `VisitInterrupt` to stop, or an error, owned.
type NativeVisit = unsafe extern "C" fn(*mut c_void, TVMFFIAny) -> TVMFFIAny;

/// tvm-ffi's `StructuralVisitorVTable`, which a hook compiled against its headers descends
/// through.
#[repr(C)]
struct VisitVTable {
    visit: NativeVisit,
}

static VTABLE: VisitVTable = VisitVTable { visit: entry_visit };

/// Payload of an `ffi.StructuralVisitor` made by a walk or a visit here. It starts as tvm-ffi's
/// `StructuralVisitorObj` does (a hook compiled against tvm-ffi's headers reads it): the
/// dispatch table, and the current definition region, which hooks read and set in place.
#[repr(C)]
pub struct VisitorObj {
    vtable: &'static VisitVTable,
    region: AtomicI32,
    policy: Policy,
}

impl ObjectType for VisitorObj {
    /// Made at `ffi.StructuralVisitor`'s index, read back through [`visitor_arg`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

type Visitor = ObjPtr<VisitorObj>;

fn visitor_index() -> Result<u32> {
    crate::runtime::object::type_table::type_key_to_index("ffi.StructuralVisitor")
}

fn new_visitor(policy: Policy) -> Result<Visitor> {
    let obj = VisitorObj { vtable: &VTABLE, region: AtomicI32::new(REGION_NONE as i32), policy };
    Ok(ObjPtr::new_as(obj, visitor_index()?))
}

/// The visitor in argument `i` (one made by a visit here).
fn visitor_arg(args: &crate::runtime::function::packed::Args<'_>, i: usize) -> Result<Visitor> {
    let o = args.object(i)?;
    if o.type_index() != visitor_index()? || !o.made_here() {
        return Err(Error::type_error(format!("argument {i}: expected a StructuralVisitor of an active visit")));
    }
    // SAFETY: objects of this index made here are made by `new_visitor`, with this payload.
    Ok(unsafe { ObjPtr::from_borrowed(o.as_header()) })
}

fn region(v: &Visitor) -> i64 {
    v.region.load(Ordering::Relaxed) as i64
}

fn in_region<R>(v: &Visitor, kind: i64, f: impl FnOnce() -> R) -> R {
    with_region(&v.region, kind, f)
}

/// Runs `f` with a visitor's or mutator's definition region set to `kind`, restoring it after
/// (a visit runs on one thread; the region is atomic because hooks share the object). A
/// pattern region stays one, as tvm-ffi's `WithDefRegionKind` keeps it.
pub(crate) fn with_region<R>(region: &AtomicI32, kind: i64, f: impl FnOnce() -> R) -> R {
    if region.load(Ordering::Relaxed) as i64 == REGION_PATTERN {
        return f();
    }
    let saved = region.swap(kind as i32, Ordering::Relaxed);
    let out = f();
    region.store(saved, Ordering::Relaxed);
    out
}

/// The dispatch table of a visitor or mutator laid out as tvm-ffi's (`StructuralVisitorObj`,
/// `StructuralMutatorObj`): the first word after the object header.
///
/// # Safety
/// `obj` is a live object of such a layout whose table has type `T`.
pub(crate) unsafe fn dispatch_table<T>(obj: *mut c_void) -> *const T {
    // SAFETY: the contract above: the word after the header is the table pointer.
    unsafe { *((obj as *const u8).add(size_of::<header::ObjectHeader>()) as *const *const T) }
}

/// Visits `value` as the visitor's policy says: None to go on, anything else stops. None
/// itself is passed over, callbacks not called, as tvm-ffi's engines do.
fn visit(v: &Visitor, value: &Value) -> Result<Value> {
    if matches!(value, Value::Null) {
        return Ok(Value::Null);
    }
    nested("a structural visit", || visit_level(v, value))
}

fn visit_level(v: &Visitor, value: &Value) -> Result<Value> {
    match &v.policy {
        Policy::Walk(w) => w.visit(v, value),
        Policy::Visit(entries) => {
            let t = index_of(value);
            match entries.iter().find(|(k, _)| matches(t, *k)) {
                Some((_, f)) => f.call(&[value.clone(), Value::Object(v.to_object_ref())]),
                None => default_visit(v, value),
            }
        }
    }
}

/// Default descent: an object's type's `__s_visit__` hook when it registered one (other than
/// the containers', whose children are taken directly), else its structural children.
fn default_visit(v: &Visitor, value: &Value) -> Result<Value> {
    if let Value::Object(o) = value {
        if let Some(out) = hook(v, value, o)? {
            return Ok(out);
        }
    }
    for (c, r) in children(value, region(v))? {
        let out = in_region(v, r, || visit(v, &c))?;
        if !matches!(out, Value::Null) {
            return Ok(out);
        }
    }
    Ok(Value::Null)
}

/// The outcome of `o`'s `__s_visit__` hook, called with this visitor; `None` without one.
fn hook(v: &Visitor, value: &Value, o: &ObjectRef) -> Result<Option<Value>> {
    if matches!(o.type_index(), ti::FFI_ARRAY | ti::LIST | ti::FFI_MAP | ti::DICT) {
        return Ok(None);
    }
    let me = v.as_header() as *mut c_void;
    let arg = value.clone().into_any();
    let r = match crate::runtime::reflection::type_info::attr(b"__s_visit__", o.type_index()) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Handle(p)) if !p.is_null() => {
            // SAFETY: an opaque pointer in the `__s_visit__` column is a hook of tvm-ffi's
            // `FStructuralVisitABI` (its registrar's word, as tvm-ffi takes it); the visitor is
            // laid out as its `StructuralVisitorObj`; `arg` is live.
            let f = unsafe { std::mem::transmute::<*mut c_void, NativeVisit>(p) };
            // SAFETY: as above.
            outcome(unsafe { f(me, arg) }).map(Some)
        }
        Some(Value::Func(f)) => {
            let view = TVMFFIAny::ptr(visitor_index()? as i32, me as *const c_void);
            f.call_any(&[view, arg]).and_then(outcome).map(Some)
        }
        Some(_) => Err(Error::type_error("__s_visit__ must be an opaque function pointer or ffi.Function")),
    };
    // SAFETY: owned above, released once.
    unsafe { header::release_any(&arg) };
    r
}

/// A hook's or entry's owned result: None, an interrupt, or an error object (as an error).
fn outcome(r: TVMFFIAny) -> Result<Value> {
    // SAFETY: an owned value, taken over.
    let v = unsafe { Value::from_any_view(&r) };
    // SAFETY: owned by the caller and converted above (the value holds its own reference).
    unsafe { header::release_any(&r) };
    match v? {
        Value::Object(o) if o.type_index() == ti::ERROR => Err(returned_error(Some(o), "a structural visit hook")),
        other => Ok(other),
    }
}

/// The visitor's entry in its table: a hook descending into `value` through it.
unsafe extern "C" fn entry_visit(visitor: *mut c_void, value: TVMFFIAny) -> TVMFFIAny {
    let body = || -> Result<TVMFFIAny> {
        // SAFETY: called through this table, so `visitor` is a live visitor made here; `value`
        // is a live view.
        let (v, value) =
            unsafe { (ObjPtr::<VisitorObj>::from_borrowed(visitor as *mut _), Value::from_any_view(&value)?) };
        Ok(visit(&v, &value)?.into_any())
    };
    catch_native("a structural visit", body).unwrap_or_else(|e| error_any(&e))
}

/// Whether a walk order argument (`WalkOrder`) asks for pre-order.
pub(crate) fn order_arg(v: Value) -> Result<bool> {
    match v.as_int()? {
        0 => Ok(true),
        1 => Ok(false),
        o => Err(Error::value(format!("Unknown structural walk order {o}"))),
    }
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "ffi.StructuralWalk",
            PackedFunc::from_typed(|args| {
                let walk = Walk {
                    plain: entries(&args.to_value(1)?)?,
                    with_region: entries(&args.to_value(2)?)?,
                    pre_order: order_arg(args.to_value(3)?)?,
                };
                visit(&new_visitor(Policy::Walk(walk))?, &args.to_value(0)?)
            }),
        ),
        (
            "ffi.StructuralVisit",
            PackedFunc::from_typed(|args| {
                visit(&new_visitor(Policy::Visit(entries(&args.to_value(1)?)?))?, &args.to_value(0)?)
            }),
        ),
        (
            "ffi.StructuralVisitorVisit",
            PackedFunc::from_typed(|args| visit(&visitor_arg(&args, 0)?, &args.to_value(1)?)),
        ),
        (
            "ffi.StructuralVisitorDefaultVisit",
            PackedFunc::from_typed(|args| default_visit(&visitor_arg(&args, 0)?, &args.to_value(1)?)),
        ),
        (
            "ffi.StructuralVisitorDefRegionKind",
            PackedFunc::from_typed(|args| Ok(Value::Int(region(&visitor_arg(&args, 0)?)))),
        ),
        (
            "ffi.StructuralVisitorWithDefRegionKind",
            PackedFunc::from_typed(|args| {
                let v = visitor_arg(&args, 0)?;
                let (kind, f) = (args.int(1)?, args.to_value(2)?);
                let Value::Func(f) = f else { return Err(Error::type_error("argument 2: expected a function")) };
                in_region(&v, kind, || f.call(&[]))
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::Arc;

    fn run(walk: Walk, root: &Value) -> Value {
        visit(&new_visitor(Policy::Walk(walk)).unwrap(), root).unwrap()
    }

    fn list(items: Vec<Value>) -> Value {
        let items = items.into_iter().map(Value::into_any).collect();
        Value::Object(ObjPtr::new(crate::runtime::collections::list_map::ListObj::new(items).unwrap()).to_object_ref())
    }

    #[test]
    fn walks_visit_children_in_order_and_stop_on_interrupt() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = {
            let seen = seen.clone();
            PackedFunc::from_typed(move |a| {
                let v = a.to_value(0)?;
                seen.lock().push(v.as_int().unwrap_or(-1));
                Ok(Value::Null)
            })
        };
        let root = list(vec![Value::Int(1), list(vec![Value::Int(2)]), Value::Int(3)]);
        for (pre, want) in [(true, vec![-1, 1, -1, 2, 3]), (false, vec![1, 2, -1, 3, -1])] {
            seen.lock().clear();
            let walk = Walk { plain: vec![(-1, record.clone())], with_region: Vec::new(), pre_order: pre };
            assert!(matches!(run(walk, &root), Value::Null));
            assert_eq!(*seen.lock(), want, "pre-order {pre}");
        }
        let stop = PackedFunc::from_typed(|a| match a.to_value(0)? {
            Value::Int(2) => {
                let r = crate::runtime::reflection::records::new_record("ffi.VisitInterrupt")?;
                crate::runtime::reflection::records::set_field(&r, "value", Value::Int(2))?;
                Ok(Value::Object(r.to_object_ref()))
            }
            _ => Ok(Value::Null),
        });
        let walk = Walk { plain: vec![(fti::INT, stop)], with_region: Vec::new(), pre_order: true };
        assert!(!matches!(run(walk, &root), Value::Null), "the interrupt ends the walk");
    }

    /// A `__s_visit__` hook as C++ code registers one: it visits the int 5 through the
    /// visitor's table (what a hook does for a child it chooses).
    unsafe extern "C" fn visit_five(visitor: *mut c_void, _v: TVMFFIAny) -> TVMFFIAny {
        // SAFETY: a visitor laid out as tvm-ffi's: its table first after the header.
        unsafe { ((*dispatch_table::<VisitVTable>(visitor)).visit)(visitor, TVMFFIAny::int(fti::INT, 5)) }
    }

    #[test]
    fn a_types_native_hook_descends_under_a_walk_made_here() {
        let hook = TVMFFIAny::ptr(fti::OPAQUE_PTR, visit_five as NativeVisit as *const c_void);
        // SAFETY: a plain value. (Shapes have no visit hook otherwise; no other test visits one.)
        unsafe { crate::runtime::reflection::type_info::register_attr(ti::SHAPE_TUPLE, b"__s_visit__", &hook) }
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = {
            let seen = seen.clone();
            PackedFunc::from_typed(move |a| {
                seen.lock().push(a.int(0)?);
                Ok(Value::Null)
            })
        };
        let root = list(vec![Value::Int(1), Value::Object(crate::runtime::container::shape_object(&[7]))]);
        let walk = Walk { plain: vec![(fti::INT, record)], with_region: Vec::new(), pre_order: true };
        assert!(matches!(run(walk, &root), Value::Null));
        assert_eq!(*seen.lock(), vec![1, 5], "the shape's hook chose what to visit");
    }
}
