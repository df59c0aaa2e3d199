//! tvm-ffi's recursive comparison and hashing (`ffi.RecursiveEq`, `Lt`, `Le`, `Gt`, `Ge`,
//! `ffi.RecursiveHash`), what its dataclasses' `==`, `<` and `hash` use. Values of different
//! kinds are unequal (and cannot be ordered); `None` sorts first; strings and bytes compare by
//! content whichever cell holds them; floats as numbers, NaN equal to NaN and -0.0 to 0.0 (but
//! not ordered); shapes by their dimensions; sequences element by element (lexicographically);
//! maps as sets of entries (equality only); other objects of one type field by field (fields
//! marked compare-off skipped; objects without fields are equal), or through their type's
//! `__ffi_eq__` / `__ffi_compare__` / `__ffi_hash__` hooks. An object met again inside itself is
//! a cycle: equal when testing equality, an error when ordering.

use crate::abi::ffi_type_index as fti;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{bytes_of, map_items, sequence_items, text_of};
use crate::runtime::container::{big_int_words, compare_big_ints};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{header::ObjectRef, type_table::type_index as ti};
use std::cmp::Ordering;

const COMPARE_OFF: i64 = 1 << 7;
const HASH_OFF: i64 = 1 << 8;
/// The first type index whose objects may carry comparison and hash hooks.
const STATIC_OBJECT_END: u32 = 79;

/// The object a value holds, if it holds one.
pub(crate) fn object_of(v: &Value) -> Option<ObjectRef> {
    match v {
        Value::Object(o) => Some(o.clone()),
        Value::NDArray(_) | Value::Module(_) | Value::Func(_) => {
            let a = v.clone().into_any();
            // SAFETY: `into_any` made one owned reference to the object; it passes to the ref.
            Some(unsafe { ObjectRef::from_raw(a.as_ptr() as *mut crate::runtime::object::header::ObjectHeader) })
        }
        _ => None,
    }
}

/// The type index of a plain value.
fn pod_index(v: &Value) -> i32 {
    let a = v.clone().into_any();
    // SAFETY: owned just above (plain data: nothing to release, but kept uniform).
    unsafe { crate::runtime::object::header::release_any(&a) };
    a.type_index
}

fn shape_dims(o: &ObjectRef) -> Option<Vec<i64>> {
    o.downcast::<crate::runtime::container::ShapeTupleObj>().and_then(|s| s.dims().ok().map(<[i64]>::to_vec))
}

fn key_of(index: u32) -> String {
    crate::runtime::object::type_table::type_index_to_key(index).unwrap_or_else(|_| format!("<type {index}>"))
}

fn hook(name: &str, index: u32) -> Option<PackedFunc> {
    match crate::runtime::reflection::type_info::attr(name.as_bytes(), index) {
        Some(Value::Func(f)) => Some(f),
        _ => None,
    }
}

fn sign(o: Ordering) -> i64 {
    o as i64
}

fn from_sign(s: i64) -> Ordering {
    s.cmp(&0)
}

/// Objects on the walk's stack: pairs being compared, objects being hashed.
#[derive(Default, Clone)]
struct Walk {
    eq_only: bool,
    comparing: std::collections::HashSet<(usize, usize), crate::runtime::base::addr_map::AddrHash>,
    hashing: std::collections::HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
    /// Pairs found equal and objects hashed, each done once: values sharing objects many times
    /// over walk in time linear in their objects.
    equal: std::collections::HashSet<(usize, usize), crate::runtime::base::addr_map::AddrHash>,
    hashed: std::collections::HashMap<usize, u64, crate::runtime::base::addr_map::AddrHash>,
    /// How many times the walk met an object (or pair) inside itself: cycles cut short.
    cuts: usize,
}

/// `a` against `b`; in `eq_only` mode values that cannot be ordered compare unequal.
pub fn compare(a: &Value, b: &Value, eq_only: bool) -> Result<Ordering> {
    Walk { eq_only, ..Walk::default() }.compare(a, b)
}

/// A hash consistent with [`compare`]'s equality.
pub fn hash(v: &Value) -> Result<u64> {
    Walk::default().hash(v)
}

impl Walk {
    fn unordered(&self, what: String) -> Result<Ordering> {
        if self.eq_only {
            Ok(Ordering::Greater)
        } else {
            Err(Error::type_error(what))
        }
    }

    fn compare(&mut self, a: &Value, b: &Value) -> Result<Ordering> {
        match (a, b) {
            (Value::Null, Value::Null) => return Ok(Ordering::Equal),
            (Value::Null, _) => return Ok(Ordering::Less),
            (_, Value::Null) => return Ok(Ordering::Greater),
            _ => {}
        }
        if let (Some(x), Some(y)) = (text_of(a), text_of(b)) {
            return Ok(x.cmp(&y));
        }
        if let (Some(x), Some(y)) = (bytes_of(a), bytes_of(b)) {
            return Ok(x.cmp(&y));
        }
        match (object_of(a), object_of(b)) {
            (Some(x), Some(y)) => nested("a recursive comparison", || self.compare_objects(&x, &y)),
            (None, None) => self.compare_pod(a, b),
            _ => self.unordered(format!(
                "Cannot compare values of different types: {} vs {}",
                a.type_name(),
                b.type_name()
            )),
        }
    }

    fn compare_pod(&self, a: &Value, b: &Value) -> Result<Ordering> {
        let (ia, ib) = (pod_index(a), pod_index(b));
        if ia != ib {
            return self.unordered(format!(
                "Cannot compare values of different types: {} vs {}",
                a.type_name(),
                b.type_name()
            ));
        }
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
            (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
            (Value::Float(x), Value::Float(y)) if x.is_nan() || y.is_nan() => {
                match (x.is_nan() && y.is_nan(), self.eq_only) {
                    (true, true) => Ok(Ordering::Equal),
                    (false, true) => Ok(Ordering::Greater),
                    _ => Err(Error::type_error("Cannot order NaN values")),
                }
            }
            (Value::Float(x), Value::Float(y)) => Ok(x.partial_cmp(y).unwrap_or(Ordering::Equal)),
            (Value::DataType(x), Value::DataType(y)) => Ok((x.code, x.bits, x.lanes).cmp(&(y.code, y.bits, y.lanes))),
            (Value::Device(x), Value::Device(y)) => Ok((x.device_type, x.device_id).cmp(&(y.device_type, y.device_id))),
            _ if crate::runtime::collections::list_map::any_equal(a, b) => Ok(Ordering::Equal),
            _ => self.unordered(format!("Cannot order values of type {}", a.type_name())),
        }
    }

    fn compare_objects(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<Ordering> {
        if x.as_header() == y.as_header() {
            return Ok(Ordering::Equal);
        }
        let (tx, ty) = (x.type_index(), y.type_index());
        if tx != ty {
            return self.unordered(format!(
                "Cannot compare values of different types: {} vs {}",
                key_of(tx),
                key_of(ty)
            ));
        }
        if let (Some(a), Some(b)) = (shape_dims(x), shape_dims(y)) {
            return Ok(a.cmp(&b));
        }
        if let (Some(a), Some(b)) = (big_int_words(x), big_int_words(y)) {
            return Ok(compare_big_ints(&a, &b));
        }
        let pair = (x.as_header() as usize, y.as_header() as usize);
        if self.equal.contains(&pair) {
            return Ok(Ordering::Equal);
        }
        if self.comparing.contains(&pair) {
            return if self.eq_only {
                self.cuts += 1;
                Ok(Ordering::Equal)
            } else {
                Err(Error::value("RecursiveCompare: cyclic reference detected in ordering"))
            };
        }
        let cuts = self.cuts;
        self.comparing.insert(pair);
        let r = self.compare_contents(x, y);
        self.comparing.remove(&pair);
        // Not when a cycle was cut short inside (a pair met again counted as equal there).
        if matches!(r, Ok(Ordering::Equal)) && self.cuts == cuts {
            self.equal.insert(pair);
        }
        r
    }

    fn compare_contents(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<Ordering> {
        if let (Some(xs), Some(ys)) = (sequence_items(x)?, sequence_items(y)?) {
            return self.compare_seq(&xs, &ys);
        }
        if matches!(x.type_index(), ti::FFI_MAP | ti::DICT) {
            return self.compare_maps(x, y);
        }
        if x.type_index() >= STATIC_OBJECT_END {
            if let Some(r) = self.compare_by_hook(x, y)? {
                return Ok(r);
            }
        }
        let keep = |o: &ObjectRef| -> Result<Vec<Value>> {
            Ok(crate::runtime::reflection::fields::field_values(o)?
                .into_iter()
                .filter(|(f, _)| f & COMPARE_OFF == 0)
                .map(|(_, v)| v)
                .collect())
        };
        let (fx, fy) = (keep(x)?, keep(y)?);
        for (a, b) in fx.iter().zip(&fy) {
            match self.compare(a, b)? {
                Ordering::Equal => continue,
                o => return Ok(o),
            }
        }
        Ok(Ordering::Equal)
    }

    fn compare_seq(&mut self, xs: &[Value], ys: &[Value]) -> Result<Ordering> {
        for (x, y) in xs.iter().zip(ys) {
            match self.compare(x, y)? {
                Ordering::Equal => continue,
                o => return Ok(o),
            }
        }
        Ok(xs.len().cmp(&ys.len()))
    }

    fn compare_maps(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<Ordering> {
        let (ex, ey) = (map_items(x)?, map_items(y)?);
        let differ = |eq_only: bool| {
            if eq_only {
                Ok(Ordering::Greater)
            } else {
                Err(Error::type_error("Cannot order Map/Dict values"))
            }
        };
        if ex.len() != ey.len() {
            return differ(self.eq_only);
        }
        for (k, v) in &ex {
            let Some(w) = crate::runtime::collections::list_map::map_get(y, k)? else {
                return differ(self.eq_only);
            };
            if self.compare(v, &w)? != Ordering::Equal {
                return differ(self.eq_only);
            }
        }
        Ok(Ordering::Equal)
    }

    /// The type's `__ffi_eq__` (equality only) or `__ffi_compare__` hook's answer, if it has one;
    /// the hook gets a function comparing nested values the same way.
    fn compare_by_hook(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<Option<Ordering>> {
        let args = |f: PackedFunc| [Value::Object(x.clone()), Value::Object(y.clone()), Value::Func(f)];
        if self.eq_only {
            if let Some(eq) = hook("__ffi_eq__", x.type_index()) {
                let inner = self.clone();
                let nested = PackedFunc::from_typed(move |a| {
                    Ok(Value::Bool(inner.clone().compare(&a.to_value(0)?, &a.to_value(1)?)? == Ordering::Equal))
                });
                let equal = eq.call(&args(nested))?.as_int()? != 0;
                return Ok(Some(if equal { Ordering::Equal } else { Ordering::Greater }));
            }
        }
        if let Some(cmp) = hook("__ffi_compare__", x.type_index()) {
            let inner = self.clone();
            let nested = PackedFunc::from_typed(move |a| {
                Ok(Value::Int(sign(inner.clone().compare(&a.to_value(0)?, &a.to_value(1)?)?)))
            });
            return Ok(Some(from_sign(cmp.call(&args(nested))?.as_int()?)));
        }
        Ok(None)
    }

    fn hash(&mut self, v: &Value) -> Result<u64> {
        if let Some(t) = text_of(v) {
            return Ok(combine(ti::STRING as u64, hash_bytes(&t)));
        }
        if let Some(b) = bytes_of(v) {
            return Ok(combine(ti::BYTES as u64, hash_bytes(&b)));
        }
        match (v, object_of(v)) {
            (Value::Null, _) => Ok(0),
            (_, Some(o)) => self.hash_object(&o),
            (Value::Float(f), None) => {
                let canonical = if f.is_nan() {
                    f64::NAN
                } else if *f == 0.0 {
                    0.0
                } else {
                    *f
                };
                Ok(combine(fti::FLOAT as u64, canonical.to_bits()))
            }
            (Value::Bool(b), None) => Ok(combine(fti::BOOL as u64, *b as u64)),
            (Value::DataType(t), None) => {
                Ok(combine(combine(combine(fti::DATA_TYPE as u64, t.code as u64), t.bits as u64), t.lanes as u64))
            }
            (Value::Device(d), None) => {
                Ok(combine(combine(fti::DEVICE as u64, d.device_type as u64), d.device_id as u64))
            }
            (v, None) => {
                let a = v.clone().into_any();
                // SAFETY: owned just above, released once.
                unsafe { crate::runtime::object::header::release_any(&a) };
                Ok(combine(a.type_index as u64, a.value))
            }
        }
    }

    fn hash_object(&mut self, o: &ObjectRef) -> Result<u64> {
        let at = o.as_header() as usize;
        if self.hashing.contains(&at) {
            self.cuts += 1;
            return Ok(0);
        }
        if let Some(dims) = shape_dims(o) {
            return Ok(dims
                .iter()
                .fold(combine(ti::SHAPE_TUPLE as u64, dims.len() as u64), |h, d| combine(h, *d as u64)));
        }
        if let Some(words) = big_int_words(o) {
            return Ok(words
                .iter()
                .fold(combine(ti::BIG_INT as u64, words.len() as u64), |h, w| combine(h, *w as u64)));
        }
        if let Some(&h) = self.hashed.get(&at) {
            return Ok(h);
        }
        let cuts = self.cuts;
        self.hashing.insert(at);
        let h = nested("a recursive hash", || self.hash_contents(o));
        self.hashing.remove(&at);
        let h = h?;
        // Not when a cycle was cut short inside it (an object met again hashes as 0 there): the
        // hash found then depends on where the walk entered the cycle.
        if self.cuts == cuts {
            self.hashed.insert(at, h);
        }
        Ok(h)
    }

    fn type_hash(index: u32) -> u64 {
        hash_bytes(key_of(index).as_bytes())
    }

    fn hash_contents(&mut self, o: &ObjectRef) -> Result<u64> {
        let index = o.type_index();
        if let Some(h) = hook("__ffi_hash__", index) {
            let inner = self.clone();
            let nested = PackedFunc::from_typed(move |a| Ok(Value::Int(inner.clone().hash(&a.to_value(0)?)? as i64)));
            return Ok(h.call(&[Value::Object(o.clone()), Value::Func(nested)])?.as_int()? as u64);
        }
        if index >= STATIC_OBJECT_END
            && (hook("__ffi_eq__", index).is_some() || hook("__ffi_compare__", index).is_some())
        {
            return Err(Error::value(format!(
                "RecursiveHash: type '{}' defines __ffi_eq__ or __ffi_compare__ but not __ffi_hash__. Add a __ffi_hash__ hook to maintain the invariant RecursiveEq(a,b) => RecursiveHash(a)==RecursiveHash(b).",
                key_of(index)
            )));
        }
        if let Some(items) = sequence_items(o)? {
            let mut h = combine(Self::type_hash(index), items.len() as u64);
            for (i, v) in items.iter().enumerate() {
                h = combine(h, combine(self.hash(v)?, i as u64));
            }
            return Ok(h);
        }
        if matches!(index, ti::FFI_MAP | ti::DICT) {
            let entries = map_items(o)?;
            let mut hashes =
                entries.iter().map(|(k, v)| Ok(combine(self.hash(k)?, self.hash(v)?))).collect::<Result<Vec<_>>>()?;
            hashes.sort_unstable();
            return Ok(hashes.into_iter().fold(combine(Self::type_hash(index), entries.len() as u64), combine));
        }
        let mut h = Self::type_hash(index);
        for (flags, v) in crate::runtime::reflection::fields::field_values(o)? {
            if flags & (HASH_OFF | COMPARE_OFF) == 0 {
                h = combine(h, self.hash(&v)?);
            }
        }
        Ok(h)
    }
}

pub(crate) use super::map_keys::combine;

pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| (h ^ c as u64).wrapping_mul(0x0100_0000_01b3))
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
    use crate::runtime::collections::list_map::ListObj;
    use crate::runtime::reflection::records::{new_record, set_field};

    fn list(items: Vec<Value>) -> Value {
        let items = items.into_iter().map(Value::into_any).collect();
        Value::Object(crate::runtime::object::header::ObjPtr::new(ListObj::new(items).unwrap()).to_object_ref())
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
        crate::runtime::builtins::install();
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
        let copy = crate::runtime::extra::deep_copy::deep_copy(&holder).unwrap();
        assert_eq!(compare(&holder, &copy, true).unwrap(), Ordering::Equal);
        let Value::Object(c) = &copy else { panic!("a list") };
        let items = sequence_items(c).unwrap().unwrap();
        let (Value::Object(x), Value::Object(y), Value::Object(orig)) = (&items[0], &items[1], &a) else { panic!() };
        assert_eq!(x.as_header(), y.as_header(), "an object met twice is copied once");
        assert_ne!(x.as_header(), orig.as_header(), "the copy is a new object");
        // tvm-ffi's spelling of a step (its `__ffi_repr__`), as in a path.
        assert_eq!(crate::runtime::extra::repr::repr(&a).unwrap(), ".f");
    }
}
