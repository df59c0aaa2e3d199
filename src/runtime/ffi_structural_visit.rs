//! tvm-ffi's structural walks and visits (`ffi.StructuralWalk`, `ffi.StructuralVisit` and the
//! `ffi.StructuralVisitor*` globals): a value's structural children are a sequence's items, a
//! map's values (keys are anchors, not visited), and an object's fields that take part in
//! structural equality (s-eq-ignore fields skipped), each in the definition region its field
//! says. A walk calls the first callback whose type matches each value, before (pre-order) or
//! after (post-order) its children; a callback returns None to go on, `WalkResult.SKIP` (1) to
//! leave a node's children out, or a `VisitInterrupt` to stop, which the walk returns. A visit
//! hands each matched value to its callback with a visitor that descends on request.

use super::error::{Error, Result};
use super::ffi_containers::{map_items, sequence_items};
use super::object::{self, type_index as ti, ObjPtr, ObjectRef, ObjectType};
use super::packed::{PackedFunc, Value};
use crate::abi::ffi_type_index as fti;
use parking_lot::Mutex;

use super::ffi_fields::{DEF_PATTERN, DEF_SIMPLE, SEQ_HASH_IGNORE};
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
    unsafe { object::release_any(&a) };
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
        _ => object::derived_from(actual as u32, target as u32).unwrap_or(false),
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
    for f in super::ffi_fields::all_fields(o.type_index())? {
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
        out.push((super::ffi_fields::get_field(o.as_header(), &f)?, inner));
    }
    Ok(out)
}

/// A type's `structural_eq_hash_kind`, when its metadata says.
pub(crate) fn kind_of(o: &ObjectRef) -> Option<i32> {
    let info = super::reflection::type_info(o.type_index()).ok()?;
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

    fn walk(&self, v: &Value, region: i64) -> Result<Option<Value>> {
        if self.pre_order {
            match self.dispatch(v, region)? {
                Step::Stop(i) => return Ok(Some(i)),
                Step::Skip => return Ok(None),
                Step::Go => {}
            }
        }
        for (c, r) in children(v, region)? {
            if let Some(i) = self.walk(&c, r)? {
                return Ok(Some(i));
            }
        }
        if !self.pre_order {
            if let Step::Stop(i) = self.dispatch(v, region)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

/// Payload of an `ffi.StructuralVisitor` made by a visit: its callbacks and current region.
pub struct VisitorObj {
    entries: Entries,
    region: Mutex<i64>,
}

impl ObjectType for VisitorObj {
    /// Made at `ffi.StructuralVisitor`'s index, read back through [`visitor_arg`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

fn visitor_index() -> Result<u32> {
    object::type_key_to_index("ffi.StructuralVisitor")
}

/// The visitor in argument `i` (one made by a visit here).
fn visitor_arg(args: &super::packed::Args<'_>, i: usize) -> Result<ObjPtr<VisitorObj>> {
    let o = args.object(i)?;
    if o.type_index() != visitor_index()? || !o.made_here() {
        return Err(Error::type_error(format!("argument {i}: expected a StructuralVisitor of an active visit")));
    }
    // SAFETY: objects of this index made here are made by `visit` below, with this payload.
    Ok(unsafe { ObjPtr::from_borrowed(o.as_header()) })
}

fn visit(v: &ObjPtr<VisitorObj>, value: &Value) -> Result<Value> {
    let t = index_of(value);
    match v.entries.iter().find(|(k, _)| matches(t, *k)) {
        Some((_, f)) => f.call(&[value.clone(), Value::Object(v.to_object_ref())]),
        None => default_visit(v, value),
    }
}

fn default_visit(v: &ObjPtr<VisitorObj>, value: &Value) -> Result<Value> {
    let region = *v.region.lock();
    for (c, r) in children(value, region)? {
        let saved = std::mem::replace(&mut *v.region.lock(), r);
        let out = visit(v, &c);
        *v.region.lock() = saved;
        match out? {
            Value::Null => {}
            stop => return Ok(stop),
        }
    }
    Ok(Value::Null)
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
                Ok(walk.walk(&args.to_value(0)?, REGION_NONE)?.unwrap_or(Value::Null))
            }),
        ),
        (
            "ffi.StructuralVisit",
            PackedFunc::from_typed(|args| {
                let v = ObjPtr::new_as(
                    VisitorObj { entries: entries(&args.to_value(1)?)?, region: Mutex::new(REGION_NONE) },
                    visitor_index()?,
                );
                visit(&v, &args.to_value(0)?)
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
            PackedFunc::from_typed(|args| Ok(Value::Int(*visitor_arg(&args, 0)?.region.lock()))),
        ),
        (
            "ffi.StructuralVisitorWithDefRegionKind",
            PackedFunc::from_typed(|args| {
                let v = visitor_arg(&args, 0)?;
                let (kind, f) = (args.int(1)?, args.to_value(2)?);
                let Value::Func(f) = f else { return Err(Error::type_error("argument 2: expected a function")) };
                let saved = std::mem::replace(&mut *v.region.lock(), kind);
                let out = f.call(&[]);
                *v.region.lock() = saved;
                out
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn list(items: Vec<Value>) -> Value {
        let items = items.into_iter().map(Value::into_any).collect();
        Value::Object(ObjPtr::new(super::super::ffi_containers::ListObj::new(items).unwrap()).to_object_ref())
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
            assert!(walk.walk(&root, REGION_NONE).unwrap().is_none());
            assert_eq!(*seen.lock(), want, "pre-order {pre}");
        }
        let stop = PackedFunc::from_typed(|a| match a.to_value(0)? {
            Value::Int(2) => {
                let r = super::super::ffi_records::new_record("ffi.VisitInterrupt")?;
                super::super::ffi_records::set_field(&r, "value", Value::Int(2))?;
                Ok(Value::Object(r.to_object_ref()))
            }
            _ => Ok(Value::Null),
        });
        let walk = Walk { plain: vec![(fti::INT, stop)], with_region: Vec::new(), pre_order: true };
        assert!(walk.walk(&root, REGION_NONE).unwrap().is_some(), "the interrupt ends the walk");
    }
}
