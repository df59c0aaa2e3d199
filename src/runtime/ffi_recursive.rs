//! tvm-ffi's recursive comparison and hashing (`ffi.RecursiveEq`, `Lt`, `Le`, `Gt`, `Ge`,
//! `ffi.RecursiveHash`), what its dataclasses' `==`, `<` and `hash` use: plain values by value
//! (of the same kind), strings and bytes by content, sequences element by element
//! (lexicographically), maps as sets of entries (equality only), objects with reflected fields
//! field by field in declaration order (skipping fields marked compare-off / hash-off), other
//! objects by identity. Ordering values of different kinds, or two maps, is a `TypeError`.

use super::error::{Error, Result};
use super::ffi_containers::{map_cell, ListObj};
use super::object::{type_index as ti, ObjectRef};
use super::packed::{PackedFunc, Value};
use crate::abi::TVMFFIAny;
use std::cmp::Ordering;

const COMPARE_OFF: i64 = 1 << 7;
const HASH_OFF: i64 = 1 << 8;

fn view(a: &TVMFFIAny) -> Result<Value> {
    // SAFETY: an owned element of a live container.
    unsafe { Value::from_any_view(a) }
}

/// Elements of a sequence object, or `None` for other objects.
fn sequence(o: &ObjectRef) -> Result<Option<Vec<Value>>> {
    if let Some(l) = o.downcast::<ListObj>() {
        return l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>()).map(Some);
    }
    match o.downcast::<super::container::FfiArrayObj>() {
        Some(a) => a.items().iter().map(view).collect::<Result<Vec<_>>>().map(Some),
        None => Ok(None),
    }
}

fn map_entries(o: &ObjectRef) -> Result<Vec<(Value, Value)>> {
    map_cell(o, |c| {
        // SAFETY: live entries of the locked cell.
        c.entries().into_iter().map(|kv| unsafe { Ok((view(&(*kv).key)?, view(&(*kv).value)?)) }).collect()
    })
}

/// Field values of a reflected object, with their flags.
fn fields(o: &ObjectRef) -> Result<Vec<(i64, Value)>> {
    super::ffi_fields::field_values(o)
}

fn unordered(a: &Value, b: &Value) -> Error {
    Error::type_error(format!("cannot order {a:?} and {b:?}"))
}

/// `a` against `b`; in `eq_only` mode values that cannot be ordered compare unequal (`Less`).
pub fn compare(a: &Value, b: &Value, eq_only: bool) -> Result<Ordering> {
    let differ = |a: &Value, b: &Value| if eq_only { Ok(Ordering::Less) } else { Err(unordered(a, b)) };
    match (a, b) {
        (Value::Null, Value::Null) => Ok(Ordering::Equal),
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).map_or_else(|| differ(a, b), Ok),
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Ok(x.cmp(y)),
        (Value::Object(x), Value::Object(y)) => compare_objects(x, y, eq_only),
        _ if super::ffi_containers::any_equal(a, b) => Ok(Ordering::Equal),
        _ => differ(a, b),
    }
}

fn compare_seq(xs: &[Value], ys: &[Value], eq_only: bool) -> Result<Ordering> {
    for (x, y) in xs.iter().zip(ys) {
        match compare(x, y, eq_only)? {
            Ordering::Equal => continue,
            o => return Ok(o),
        }
    }
    Ok(xs.len().cmp(&ys.len()))
}

fn compare_objects(x: &ObjectRef, y: &ObjectRef, eq_only: bool) -> Result<Ordering> {
    if x.as_header() == y.as_header() {
        return Ok(Ordering::Equal);
    }
    let (a, b) = (Value::Object(x.clone()), Value::Object(y.clone()));
    if let (Some(xs), Some(ys)) = (sequence(x)?, sequence(y)?) {
        return compare_seq(&xs, &ys, eq_only);
    }
    let is_map = |o: &ObjectRef| matches!(o.type_index(), ti::FFI_MAP | ti::DICT);
    if is_map(x) && is_map(y) {
        if !eq_only {
            return Err(unordered(&a, &b));
        }
        return maps_equal(x, y).map(|eq| if eq { Ordering::Equal } else { Ordering::Less });
    }
    if x.type_index() != y.type_index() {
        return if eq_only { Ok(Ordering::Less) } else { Err(unordered(&a, &b)) };
    }
    let (fx, fy) = (fields(x)?, fields(y)?);
    if fx.is_empty() {
        // Objects without reflected fields compare by identity.
        return if eq_only { Ok(Ordering::Less) } else { Err(unordered(&a, &b)) };
    }
    let keep = |f: Vec<(i64, Value)>| {
        f.into_iter().filter(|(fl, _)| fl & COMPARE_OFF == 0).map(|(_, v)| v).collect::<Vec<_>>()
    };
    compare_seq(&keep(fx), &keep(fy), eq_only)
}

fn maps_equal(x: &ObjectRef, y: &ObjectRef) -> Result<bool> {
    let (ex, ey) = (map_entries(x)?, map_entries(y)?);
    if ex.len() != ey.len() {
        return Ok(false);
    }
    for (k, v) in &ex {
        let Some((_, w)) = ey.iter().find(|(k2, _)| super::ffi_containers::any_equal(k, k2)) else { return Ok(false) };
        if compare(v, w, true)? != Ordering::Equal {
            return Ok(false);
        }
    }
    Ok(true)
}

fn mix(h: u64, v: u64) -> u64 {
    (h ^ v.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(h << 6).wrapping_add(h >> 2)).wrapping_mul(0x0100_0000_01b3)
}

fn hash_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| (h ^ c as u64).wrapping_mul(0x0100_0000_01b3))
}

/// A hash consistent with [`compare`]'s equality.
pub fn hash(v: &Value) -> Result<u64> {
    Ok(match v {
        Value::Null => 0,
        Value::Int(i) => mix(1, *i as u64),
        Value::Bool(b) => mix(2, *b as u64),
        Value::Float(f) => mix(3, f.to_bits()),
        Value::Str(s) => mix(4, hash_bytes(s.as_bytes())),
        Value::Bytes(b) => mix(5, hash_bytes(b)),
        Value::Object(o) => hash_object(o)?,
        other => {
            let a = other.clone().into_any();
            // SAFETY: owned just above, released once.
            unsafe { super::object::release_any(&a) };
            mix(a.type_index as u64, a.value)
        }
    })
}

fn hash_object(o: &ObjectRef) -> Result<u64> {
    if let Some(items) = sequence(o)? {
        return items.iter().try_fold(mix(6, items.len() as u64), |h, v| Ok(mix(h, hash(v)?)));
    }
    if matches!(o.type_index(), ti::FFI_MAP | ti::DICT) {
        // Order-independent: entries' hashes summed.
        let entries = map_entries(o)?;
        let sum =
            entries.iter().try_fold(0u64, |s, (k, v)| Ok::<u64, Error>(s.wrapping_add(mix(hash(k)?, hash(v)?))))?;
        return Ok(mix(7, sum));
    }
    let f = fields(o)?;
    if f.is_empty() {
        return Ok(mix(8, o.as_header() as u64));
    }
    f.iter()
        .filter(|(fl, _)| fl & HASH_OFF == 0)
        .try_fold(mix(9, o.type_index() as u64), |h, (_, v)| Ok(mix(h, hash(v)?)))
}

fn order_global(name: &'static str, pick: fn(Ordering) -> bool) -> (&'static str, PackedFunc) {
    (
        name,
        PackedFunc::from_typed(move |args| {
            Ok(Value::Bool(pick(compare(&args.to_value(0)?, &args.to_value(1)?, false)?)))
        }),
    )
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "ffi.RecursiveEq",
            PackedFunc::from_typed(|args| {
                Ok(Value::Bool(compare(&args.to_value(0)?, &args.to_value(1)?, true)? == Ordering::Equal))
            }),
        ),
        order_global("ffi.RecursiveLt", |o| o == Ordering::Less),
        order_global("ffi.RecursiveLe", |o| o != Ordering::Greater),
        order_global("ffi.RecursiveGt", |o| o == Ordering::Greater),
        order_global("ffi.RecursiveGe", |o| o != Ordering::Less),
        ("ffi.RecursiveHash", PackedFunc::from_typed(|args| Ok(Value::Int(hash(&args.to_value(0)?)? as i64)))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ffi_records::{new_record, set_field};

    fn list(items: Vec<Value>) -> Value {
        let items = items.into_iter().map(Value::into_any).collect();
        Value::Object(super::super::object::ObjPtr::new(ListObj::new(items).unwrap()).to_object_ref())
    }

    #[test]
    fn sequences_compare_lexicographically_and_hash_by_content() {
        let (a, b) =
            (list(vec![Value::Int(1), Value::Str("x".into())]), list(vec![Value::Int(1), Value::Str("y".into())]));
        assert_eq!(compare(&a, &b, false).unwrap(), Ordering::Less);
        let a2 = list(vec![Value::Int(1), Value::Str("x".into())]);
        assert_eq!(compare(&a, &a2, true).unwrap(), Ordering::Equal);
        assert_eq!(hash(&a).unwrap(), hash(&a2).unwrap());
        assert_ne!(hash(&a).unwrap(), hash(&b).unwrap());
        assert!(compare(&Value::Int(1), &Value::Str("1".into()), false).is_err());
    }

    #[test]
    fn records_compare_by_fields_and_deep_copy_apart() {
        let step = |k: i64, key: &str| {
            let r = new_record("ffi.reflection.AccessStep").unwrap();
            set_field(&r, "kind", Value::Int(k)).unwrap();
            set_field(&r, "key", Value::Str(key.into())).unwrap();
            Value::Object(r.to_object_ref())
        };
        let (a, b) = (step(0, "f"), step(0, "f"));
        assert_eq!(compare(&a, &b, true).unwrap(), Ordering::Equal);
        assert_eq!(compare(&a, &step(1, "f"), false).unwrap(), Ordering::Less);
        let holder = list(vec![a.clone(), a.clone()]);
        let copy = crate::runtime::ffi_deep_copy::deep_copy(&holder).unwrap();
        assert_eq!(compare(&holder, &copy, true).unwrap(), Ordering::Equal);
        let Value::Object(c) = &copy else { panic!("a list") };
        let items = sequence(c).unwrap().unwrap();
        let (Value::Object(x), Value::Object(y), Value::Object(orig)) = (&items[0], &items[1], &a) else { panic!() };
        assert_eq!(x.as_header(), y.as_header(), "an object met twice is copied once");
        assert_ne!(x.as_header(), orig.as_header(), "the copy is a new object");
        assert_eq!(crate::runtime::ffi_repr::repr(&a).unwrap(), r#"ffi.reflection.AccessStep(kind=0, key="f")"#);
    }
}
