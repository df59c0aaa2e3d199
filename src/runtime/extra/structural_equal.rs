//! tvm-ffi's structural equality and hashing (`ffi.StructuralEqual`, `ffi.StructuralHash`,
//! `ffi.GetFirstStructuralMismatch`, `ffi.StructuralKey`, `ffi.StructuralKeyEqual`), the
//! compiler-side notion of "the same program": plain values by value (NaN equal to NaN),
//! strings and bytes by content, sequences and maps element by element, shapes by dimensions,
//! tensors by shape, dtype and (unless skipped) bytes, and objects by their type's
//! `structural_eq_hash_kind`: tree nodes field by field (fields marked s-eq-ignore skipped),
//! constant tree nodes the same or identical, unique instances by identity, DAG nodes field by
//! field with each node matched to one node only (sharing is visible), free variables matched
//! by where they are defined: inside a definition region (a field marked def, or everywhere
//! when free variables are mapped) two variables become each other's, elsewhere only a
//! variable met before matches. Hashing follows the same rules, so equal values hash equal.
//! Types with `__s_equal__` / `__s_hash__` hooks are compared and hashed by them.

use crate::abi::{TVMFFIAny, TVMFFIFieldInfo};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{
    any_equal, bytes_of, map_cell, map_get, map_items, sequence_items, text_of,
};
use crate::runtime::collections::recursive::{combine, hash_bytes, object_of};
use crate::runtime::container::FfiArrayObj;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::{header::ObjectRef, type_table::type_index as ti};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::structural_types::{plain_equal, slot_object, small_text, string_content, unshared, RecordFacts, Types};
use crate::runtime::reflection::fields::{DEF_PATTERN, DEF_SIMPLE};

/// `TVMFFIDefRegionKind`.
#[derive(Clone, Copy, PartialEq)]
enum Region {
    None = 0,
    Pattern = 1,
    Simple = 2,
}

impl Region {
    /// The region a hook's callback asks for: its own kind, or (none) the current one; a
    /// pattern region stays one.
    fn entered(current: Region, kind: i64) -> Result<Region> {
        let asked = match kind {
            0 => current,
            1 => Region::Pattern,
            2 => Region::Simple,
            k => return Err(Error::value(format!("unknown definition region kind {k}"))),
        };
        Ok(if current == Region::Pattern { Region::Pattern } else { asked })
    }
}

/// Lends `state` to the callback a type's structural hook gets, for the hook's call (`call`
/// makes it with the callback), and takes it back after. The callback runs `body` on the
/// state; called outside the hook's call, it fails.
fn lend<S: Default + Send + 'static>(
    state: &mut S,
    body: impl Fn(&mut S, &Args<'_>) -> Result<Value> + Send + Sync + 'static,
    call: impl FnOnce(Value) -> Result<Value>,
) -> Result<Value> {
    let slot = Arc::new(Mutex::new(Some(std::mem::take(state))));
    let callback = {
        let slot = slot.clone();
        PackedFunc::from_typed(move |args| {
            let taken = slot.lock().take();
            let mut s =
                taken.ok_or_else(|| Error::runtime("a structural hook's callback was called outside its hook"))?;
            let out = body(&mut s, &args);
            *slot.lock() = Some(s);
            out
        })
    };
    let out = call(Value::Func(callback));
    let back = slot.lock().take();
    *state = back.ok_or_else(|| Error::runtime("a structural hook returned while its callback was running"))?;
    out
}

/// `TVMFFISEqHashKind`.
const UNSUPPORTED: i32 = 0;
const FREE_VAR: i32 = 2;
const DAG_NODE: i32 = 3;
const CONST_TREE_NODE: i32 = 4;
const UNIQUE_INSTANCE: i32 = 5;

/// A type's structural kind, or an error for a type that does not support structural checks.
fn kind_of(o: &ObjectRef) -> Result<i32> {
    let info = crate::runtime::reflection::type_info::type_info(o.type_index())?;
    // SAFETY: type information stays valid for the process.
    let (key, metadata) =
        unsafe { (crate::runtime::function::packed::byte_array(&(*info).type_key), (*info).metadata.as_ref()) };
    let key = String::from_utf8_lossy(key);
    match metadata {
        None => Err(Error::type_error(format!(
            "Type metadata is not set for type `{key}`, so StructuralHash is not supported for this type"
        ))),
        Some(m) if m.structural_eq_hash_kind == UNSUPPORTED => Err(Error::type_error(format!(
            "_type_s_eq_hash_kind is not set for type `{key}`, so StructuralHash is not supported for this type"
        ))),
        Some(m) => Ok(m.structural_eq_hash_kind),
    }
}

/// The region a field's value is in, inside `region`.
fn field_region(f: &TVMFFIFieldInfo, region: Region) -> Region {
    match (f.flags & (DEF_PATTERN | DEF_SIMPLE) != 0, region) {
        (false, r) | (true, r @ Region::Pattern) => r,
        (true, _) if f.flags & DEF_SIMPLE != 0 => Region::Simple,
        (true, _) => Region::Pattern,
    }
}

/// How many fields of `o`'s type take part, or why they cannot be listed.
fn field_count(t: &RecordFacts, o: &ObjectRef) -> Result<usize> {
    match &t.fields {
        Some(fields) => Ok(fields.len()),
        None => crate::runtime::reflection::fields::all_fields(o.type_index()).map(|_| 0),
    }
}

/// `o`'s structural kind from its type's facts (`kind_of` says why when it has none).
fn kind(types: &mut Types, o: &ObjectRef) -> Result<i32> {
    match types.record(o).kind {
        Some(k) if k != UNSUPPORTED => Ok(k),
        _ => kind_of(o),
    }
}

fn tensor_bytes(t: &crate::runtime::tensor::ndarray::NDArray) -> Result<Vec<u8>> {
    // SAFETY: the tensor's own DLTensor, alive while `t` is.
    let dl = unsafe { &*t.as_dltensor_ptr() };
    if dl.device.device_type != 1 {
        return Err(Error::value("can only compare CPU tensor"));
    }
    let n: i64 = t.shape().iter().product::<i64>() * ((dl.dtype.bits as i64 * dl.dtype.lanes as i64 + 7) / 8);
    // SAFETY: a contiguous CPU tensor holds `n` bytes from its data pointer plus offset.
    Ok(unsafe { std::slice::from_raw_parts((dl.data as *const u8).add(dl.byte_offset as usize), n.max(0) as usize) }
        .to_vec())
}

/// One step of a mismatch path: `(kind, key)` as `AccessStep`s hold them.
type Step = (i64, Value);

#[derive(Default)]
struct Equal {
    region: Option<Region>,
    skip_tensor_content: bool,
    lhs_to_rhs: HashMap<usize, ObjectRef, crate::runtime::base::addr_map::AddrHash>,
    rhs_to_lhs: HashMap<usize, ObjectRef, crate::runtime::base::addr_map::AddrHash>,
    /// Reverse paths to the first mismatch, when asked for.
    paths: Option<(Vec<Step>, Vec<Step>)>,
    /// The objects being compared on each side (one holding itself is a cycle, refused).
    open: (
        HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
        HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
    ),
    /// Pairs found equal.
    proven: HashSet<(usize, usize), crate::runtime::base::addr_map::AddrHash>,
    types: Types,
}

// SAFETY: the values held are mismatch-path keys (integers, strings, objects of Send + Sync
// payloads); raw addresses among them are only carried, never followed.
unsafe impl Send for Equal {}

impl Equal {
    fn region(&self) -> Region {
        self.region.unwrap_or(Region::None)
    }

    fn step(&mut self, l: Step, r: Step) {
        if let Some((lp, rp)) = &mut self.paths {
            lp.push(l);
            rp.push(r);
        }
    }

    fn values(&mut self, a: &Value, b: &Value) -> Result<bool> {
        if let (Some(x), Some(y)) = (text_of(a), text_of(b)) {
            return Ok(x == y);
        }
        if let (Some(x), Some(y)) = (bytes_of(a), bytes_of(b)) {
            return Ok(x == y);
        }
        match (a, b) {
            (Value::Float(x), Value::Float(y)) if x.is_nan() => return Ok(y.is_nan()),
            (Value::NDArray(x), Value::NDArray(y)) => return self.tensors(x, y),
            _ => {}
        }
        match (object_of(a), object_of(b)) {
            (Some(x), Some(y)) if x.type_index() == y.type_index() => self.objects(&x, &y, 0),
            (None, None) => Ok(any_equal(a, b) && std::mem::discriminant(a) == std::mem::discriminant(b)),
            _ => Ok(false),
        }
    }

    fn tensors(
        &mut self,
        x: &crate::runtime::tensor::ndarray::NDArray,
        y: &crate::runtime::tensor::ndarray::NDArray,
    ) -> Result<bool> {
        // SAFETY: both tensors' own DLTensors, alive while they are.
        let (dx, dy) = unsafe { (&*x.as_dltensor_ptr(), &*y.as_dltensor_ptr()) };
        if std::ptr::eq(dx, dy) {
            return Ok(true);
        }
        let same_type =
            (dx.dtype.code, dx.dtype.bits, dx.dtype.lanes) == (dy.dtype.code, dy.dtype.bits, dy.dtype.lanes);
        if x.shape() != y.shape() || !same_type {
            return Ok(false);
        }
        Ok(self.skip_tensor_content || tensor_bytes(x)? == tensor_bytes(y)?)
    }

    fn sequences(&mut self, xs: &[Value], ys: &[Value]) -> Result<bool> {
        self.elements(xs, ys, |e, x, y| e.values(x, y))
    }

    /// As [`Equal::sequences`], two arrays' slots read in place.
    fn arrays(&mut self, xs: &[TVMFFIAny], ys: &[TVMFFIAny]) -> Result<bool> {
        self.elements(xs, ys, |e, x, y| e.slots(x, y, 0))
    }

    fn elements<T>(&mut self, xs: &[T], ys: &[T], same: impl Fn(&mut Self, &T, &T) -> Result<bool>) -> Result<bool> {
        if xs.len() != ys.len() && self.paths.is_none() {
            return Ok(false);
        }
        for (i, (x, y)) in xs.iter().zip(ys).enumerate() {
            if !same(self, x, y)? {
                self.step((1, Value::Int(i as i64)), (1, Value::Int(i as i64)));
                return Ok(false);
            }
        }
        let (n, m) = (xs.len(), ys.len());
        if n != m {
            let k = Value::Int(n.min(m) as i64);
            if n > m {
                self.step((1, k.clone()), (4, k));
            } else {
                self.step((4, k.clone()), (1, k));
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn mapped(&self, v: &Value, map: &HashMap<usize, ObjectRef, crate::runtime::base::addr_map::AddrHash>) -> Value {
        match object_of(v) {
            Some(o) => map.get(&(o.as_header() as usize)).map_or_else(|| v.clone(), |m| Value::Object(m.clone())),
            None => v.clone(),
        }
    }

    fn maps(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<bool> {
        let (ex, ey) = (map_items(x)?, map_items(y)?);
        if ex.len() != ey.len() && self.paths.is_none() {
            return Ok(false);
        }
        for (k, v) in &ex {
            let rk = self.mapped(k, &self.lhs_to_rhs);
            match map_get(y, &rk)? {
                None => {
                    self.step((2, k.clone()), (5, rk));
                    return Ok(false);
                }
                Some(w) if !self.values(v, &w)? => {
                    self.step((2, k.clone()), (2, rk));
                    return Ok(false);
                }
                _ => {}
            }
        }
        for (k, _) in &ey {
            let lk = self.mapped(k, &self.rhs_to_lhs);
            if map_get(x, &lk)?.is_none() {
                self.step((5, lk), (2, k.clone()));
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether two objects are equal; a pair found equal is not compared again, so values
    /// sharing objects many times over compare in time linear in their objects.
    fn objects(&mut self, x: &ObjectRef, y: &ObjectRef, held: i32) -> Result<bool> {
        if unshared(x, held) && unshared(y, held) {
            return nested("structural_equal", || self.object_contents(x, y));
        }
        let (kx, ky) = (x.as_header() as usize, y.as_header() as usize);
        if self.proven.contains(&(kx, ky)) {
            return Ok(true);
        }
        if self.open.0.contains(&kx) || self.open.1.contains(&ky) {
            return Err(cycle("structural_equal", if self.open.0.contains(&kx) { x } else { y }));
        }
        self.open.0.insert(kx);
        self.open.1.insert(ky);
        let same = nested("structural_equal", || self.object_contents(x, y));
        self.open.0.remove(&kx);
        self.open.1.remove(&ky);
        if matches!(same, Ok(true)) {
            self.proven.insert((kx, ky));
        }
        same
    }

    fn object_contents(&mut self, x: &ObjectRef, y: &ObjectRef) -> Result<bool> {
        if self.paths.is_none() {
            if let Some(same) = plain_arrays_equal(x, y) {
                return Ok(same);
            }
        }
        if let (Some(a), Some(b)) = (x.downcast_ref::<FfiArrayObj>(), y.downcast_ref::<FfiArrayObj>()) {
            return self.arrays(a.items(), b.items());
        }
        if let (Some(a), Some(b)) = (sequence_items(x)?, sequence_items(y)?) {
            return self.sequences(&a, &b);
        }
        match x.type_index() {
            ti::FFI_MAP | ti::DICT => return self.maps(x, y),
            ti::SHAPE_TUPLE | ti::BIG_INT => {
                return crate::runtime::collections::recursive::compare(
                    &Value::Object(x.clone()),
                    &Value::Object(y.clone()),
                    true,
                )
                .map(|o| o.is_eq())
            }
            _ => {}
        }
        let kind = kind(&mut self.types, x)?;
        let same = x.as_header() == y.as_header();
        if kind == UNIQUE_INSTANCE || (kind == CONST_TREE_NODE && same) {
            return Ok(same);
        }
        let (kx, ky) = (x.as_header() as usize, y.as_header() as usize);
        if kind == DAG_NODE || kind == FREE_VAR {
            if let Some(m) = self.lhs_to_rhs.get(&kx) {
                return Ok(m.as_header() == y.as_header());
            }
            if self.rhs_to_lhs.contains_key(&ky) {
                return Ok(false);
            }
        }
        if kind != FREE_VAR {
            let ok = self.fields(x, y, self.region())?;
            if ok && kind == DAG_NODE {
                self.bind(x, y);
            }
            return Ok(ok);
        }
        let inner = if self.region() == Region::Simple { Region::None } else { self.region() };
        if !self.fields(x, y, inner)? {
            return Ok(false);
        }
        if same || self.region() != Region::None {
            self.bind(x, y);
            return Ok(true);
        }
        Ok(false)
    }

    fn bind(&mut self, x: &ObjectRef, y: &ObjectRef) {
        self.lhs_to_rhs.insert(x.as_header() as usize, y.clone());
        self.rhs_to_lhs.insert(y.as_header() as usize, x.clone());
    }

    fn fields(&mut self, x: &ObjectRef, y: &ObjectRef, region: Region) -> Result<bool> {
        let t = self.types.record(x);
        if let Some(hook) = t.equal_hook.clone() {
            return self.hooked(&hook, x, y, region);
        }
        for i in 0..field_count(t, x)? {
            let f = self.types.record(x).fields.as_ref().expect("listed above")[i];
            let a = crate::runtime::reflection::fields::get_field_any(x.as_header(), &f)?;
            let b = crate::runtime::reflection::fields::get_field_any(y.as_header(), &f);
            let saved = self.region.replace(field_region(&f, region));
            let ok = b.as_ref().map_err(Clone::clone).and_then(|b| self.slots(&a, b, 1));
            self.region = saved;
            // SAFETY: the getters' values, owned here, each released once.
            unsafe {
                crate::runtime::object::header::release_any(&a);
                b.as_ref().map(|b| crate::runtime::object::header::release_any(b)).ok();
            }
            if !ok? {
                let name = Value::Str(crate::runtime::reflection::fields::name(&f));
                self.step((0, name.clone()), (0, name));
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether two slots read in place are equal (as [`Hash::slot`] reads them).
    fn slots(&mut self, a: &TVMFFIAny, b: &TVMFFIAny, held: i32) -> Result<bool> {
        if let Some(same) = plain_equal(a, b) {
            return Ok(same);
        }
        if let (Some(p), Some(q)) = (small_text(a), small_text(b)) {
            return Ok(p == q);
        }
        // SAFETY: each slot holds a reference of its own, alive while its holder is, which the
        // walk holds.
        if let (Some(x), Some(y)) = unsafe { (slot_object(a), slot_object(b)) } {
            if x.type_index() == y.type_index() {
                if let (Some(p), Some(q)) = (string_content(&x), string_content(&y)) {
                    return Ok(p == q);
                }
                if self.types.of(&x).itself {
                    return self.objects(&x, &y, held);
                }
            }
        }
        use crate::runtime::collections::list_map::view;
        self.values(&view(a)?, &view(b)?)
    }
}

impl Equal {
    /// Compares through a type's `__s_equal__(lhs, rhs, compare)`, where
    /// `compare(a, b, region_kind, field_name)` compares two of their parts.
    fn hooked(&mut self, hook: &PackedFunc, x: &ObjectRef, y: &ObjectRef, region: Region) -> Result<bool> {
        let compare = move |e: &mut Equal, a: &Args<'_>| -> Result<Value> {
            let inner = Region::entered(region, a.to_value(2)?.as_int()?)?;
            let saved = e.region.replace(inner);
            let ok = e.values(&a.to_value(0)?, &a.to_value(1)?);
            e.region = saved;
            if !ok? {
                let name = Value::Str(a.to_value(3).and_then(Value::into_string).unwrap_or_default());
                e.step((0, name.clone()), (0, name));
                return Ok(Value::Bool(false));
            }
            Ok(Value::Bool(true))
        };
        let (lhs, rhs) = (Value::Object(x.clone()), Value::Object(y.clone()));
        Ok(lend(self, compare, |cb| hook.call(&[lhs, rhs, cb]))?.as_int()? != 0)
    }
}

/// A plain value's hash (None, an int, a bool, a float) in a container slot, as
/// `Hash::value` computes it; `None` for any other value.
fn plain_hash(a: &TVMFFIAny) -> Option<u64> {
    use crate::abi::ffi_type_index as fti;
    match a.type_index {
        fti::NONE | fti::INT | fti::BOOL => Some(combine(a.type_index as u64, a.value)),
        fti::FLOAT if f64::from_bits(a.value).is_nan() => Some(combine(fti::FLOAT as u64, f64::NAN.to_bits())),
        fti::FLOAT => Some(combine(fti::FLOAT as u64, a.value)),
        _ => None,
    }
}

/// Whether two arrays of plain values only are equal, read in place as `Equal::values`
/// decides (same kind; floats by value, NaN equal to NaN); `None` when either is not an array
/// or holds another kind of value.
fn plain_arrays_equal(x: &ObjectRef, y: &ObjectRef) -> Option<bool> {
    let (a, b) = (x.downcast_ref::<FfiArrayObj>()?, y.downcast_ref::<FfiArrayObj>()?);
    if a.items().len() != b.items().len() {
        return None;
    }
    let mut same = true;
    for (p, q) in a.items().iter().zip(b.items()) {
        same &= plain_equal(p, q)?;
    }
    Some(same)
}

/// A string's hash (inline or an object, by its bytes).
fn text_hash(bytes: &[u8]) -> u64 {
    combine(ti::STRING as u64, hash_bytes(bytes))
}

/// The error of a walk that met an object it is inside of.
fn cycle(walk: &str, o: &ObjectRef) -> Error {
    let key = crate::runtime::object::type_table::type_index_to_key(o.type_index()).unwrap_or_default();
    Error::value(format!("{walk}: a `{key}` contains itself (a cycle)"))
}

fn start(map_free_vars: bool, skip_tensor_content: bool) -> Equal {
    Equal {
        region: Some(if map_free_vars { Region::Pattern } else { Region::None }),
        skip_tensor_content,
        ..Equal::default()
    }
}

/// Whether `a` and `b` are structurally equal.
pub fn equal(a: &Value, b: &Value, map_free_vars: bool, skip_tensor_content: bool) -> Result<bool> {
    start(map_free_vars, skip_tensor_content).values(a, b)
}

/// The access paths to the first place `a` and `b` differ, as an `ffi.Array` of two paths, or
/// None when they are equal.
fn first_mismatch(a: &Value, b: &Value, map_free_vars: bool, skip: bool) -> Result<Value> {
    let mut e = start(map_free_vars, skip);
    e.paths = Some((Vec::new(), Vec::new()));
    if e.values(a, b)? {
        return Ok(Value::Null);
    }
    let (lp, rp) = e.paths.take().unwrap_or_default();
    let root = crate::runtime::reflection::type_info::method_function("ffi.reflection.AccessPath", "_root")?;
    let extend = |path: Value, (kind, key): Step| -> Result<Value> {
        let name = ["_attr", "_array_item", "_map_item", "_attr_missing", "_array_item_missing", "_map_item_missing"]
            [kind as usize];
        crate::runtime::reflection::type_info::method_function("ffi.reflection.AccessPath", name)?.call(&[path, key])
    };
    let build = |steps: Vec<Step>| -> Result<Value> { steps.into_iter().rev().try_fold(root.call(&[])?, extend) };
    let pair = vec![build(lp)?.into_any(), build(rp)?.into_any()];
    Ok(Value::Object(crate::runtime::container::FfiArrayObj::new(pair).to_object_ref()))
}

#[derive(Default)]
struct Hash {
    region: Option<Region>,
    skip_tensor_content: bool,
    /// Each object met: its hash, or `None` while it is being hashed (one holding itself is a
    /// cycle, refused).
    memo: HashMap<usize, Option<u64>, crate::runtime::base::addr_map::AddrHash>,
    types: Types,
    free_vars: u64,
    dag_nodes: u64,
}

impl Hash {
    fn region(&self) -> Region {
        self.region.unwrap_or(Region::None)
    }

    fn value(&mut self, v: &Value) -> Result<u64> {
        if let Some(t) = text_of(v) {
            return Ok(text_hash(&t));
        }
        if let Some(b) = bytes_of(v) {
            return Ok(combine(ti::BYTES as u64, hash_bytes(&b)));
        }
        if let Value::NDArray(t) = v {
            // SAFETY: the tensor's own DLTensor.
            let dl = unsafe { &*t.as_dltensor_ptr() };
            let h = t
                .shape()
                .iter()
                .fold(combine(ti::NDARRAY as u64, dl.dtype.bits as u64 | (dl.dtype.code as u64) << 8), |h, d| {
                    combine(h, *d as u64)
                });
            return Ok(if self.skip_tensor_content { h } else { combine(h, hash_bytes(&tensor_bytes(t)?)) });
        }
        match object_of(v) {
            Some(o) => self.object(&o, 0),
            None => {
                let a = match v {
                    Value::Float(f) if f.is_nan() => Value::Float(f64::NAN).into_any(),
                    v => v.clone().into_any(),
                };
                Ok(combine(a.type_index as u64, a.value))
            }
        }
    }

    /// The hash of an object's type key, looked up once per type in a walk.
    fn type_hash(&mut self, o: &ObjectRef) -> u64 {
        self.types.of(o).key_hash
    }

    /// The hash of a slot read in place (a container's, or a field value the walk holds
    /// `held` references of): plain values and strings without making a value, other objects
    /// borrowed from the slot.
    #[inline(always)]
    fn slot(&mut self, a: &TVMFFIAny, held: i32) -> Result<u64> {
        if let Some(h) = plain_hash(a) {
            return Ok(h);
        }
        if let Some(t) = small_text(a) {
            return Ok(text_hash(t));
        }
        // SAFETY: the slot holds a reference of its own, alive while its holder is, which the
        // walk holds.
        if let Some(o) = unsafe { slot_object(a) } {
            if let Some(t) = string_content(&o) {
                return Ok(text_hash(t));
            }
            if self.types.of(&o).itself {
                return self.object(&o, held);
            }
        }
        self.value(&crate::runtime::collections::list_map::view(a)?)
    }

    /// An object with one holder needs no memo ([`unshared`]; the walk itself holds `held`
    /// references to it).
    #[inline(always)]
    fn object(&mut self, o: &ObjectRef, held: i32) -> Result<u64> {
        if unshared(o, held) {
            return nested("structural_hash", || self.object_contents(o));
        }
        let at = o.as_header() as usize;
        match self.memo.entry(at) {
            std::collections::hash_map::Entry::Occupied(e) => {
                return e.get().ok_or_else(|| cycle("structural_hash", o));
            }
            std::collections::hash_map::Entry::Vacant(e) => e.insert(None),
        };
        match nested("structural_hash", || self.object_contents(o)) {
            Ok(h) => {
                self.memo.insert(at, Some(h));
                Ok(h)
            }
            Err(e) => {
                self.memo.remove(&at);
                Err(e)
            }
        }
    }

    fn object_contents(&mut self, o: &ObjectRef) -> Result<u64> {
        if let Some(a) = o.downcast_ref::<FfiArrayObj>() {
            // An array's slots read in place: plain values hash without becoming values.
            let mut h = combine(self.type_hash(o), a.items().len() as u64);
            for item in a.items() {
                h = combine(h, self.slot(item, 0)?);
            }
            return Ok(h);
        }
        if let Some(items) = sequence_items(o)? {
            let mut h = combine(self.type_hash(o), items.len() as u64);
            for v in &items {
                h = combine(h, self.value(v)?);
            }
            return Ok(h);
        }
        match o.type_index() {
            ti::FFI_MAP | ti::DICT => {
                let mut hashes = Vec::new();
                if o.type_index() == ti::FFI_MAP {
                    // A map's entries are fixed while it is held: read in place.
                    // SAFETY: live entries of the locked cell, copied out as views.
                    let entries = map_cell(o, |c| {
                        Ok(c.entries().into_iter().map(|kv| unsafe { ((*kv).key, (*kv).value) }).collect::<Vec<_>>())
                    })?;
                    for (k, v) in &entries {
                        hashes.push(combine(self.slot(k, 0)?, self.slot(v, 0)?));
                    }
                } else {
                    for (k, v) in map_items(o)? {
                        hashes.push(combine(self.value(&k)?, self.value(&v)?));
                    }
                }
                hashes.sort_unstable();
                return Ok(hashes.into_iter().fold(combine(self.type_hash(o), 0), |h, e| h.wrapping_add(e)));
            }
            ti::SHAPE_TUPLE | ti::BIG_INT => {
                return crate::runtime::collections::recursive::hash(&Value::Object(o.clone()))
            }
            _ => {}
        }
        let kind = kind(&mut self.types, o)?;
        let at = o.as_header() as usize;
        let mut h = if kind != FREE_VAR {
            self.fields(o, self.region())?
        } else {
            let inner = if self.region() == Region::Simple { Region::None } else { self.region() };
            let h = self.fields(o, inner)?;
            if self.region() != Region::None {
                self.free_vars += 1;
                combine(h, self.free_vars - 1)
            } else {
                at as u64
            }
        };
        if kind == DAG_NODE {
            self.dag_nodes += 1;
            h = combine(h, self.dag_nodes - 1);
        }
        Ok(h)
    }

    fn fields(&mut self, o: &ObjectRef, region: Region) -> Result<u64> {
        let key_hash = self.types.of(o).key_hash;
        let t = self.types.record(o);
        if let Some(hook) = t.hash_hook.clone() {
            return self.hooked(&hook, o, region);
        }
        let (mut h, count) = (key_hash, field_count(t, o)?);
        for i in 0..count {
            let f = self.types.record(o).fields.as_ref().expect("listed above")[i];
            let a = crate::runtime::reflection::fields::get_field_any(o.as_header(), &f)?;
            let saved = self.region.replace(field_region(&f, region));
            let r = self.slot(&a, 1);
            self.region = saved;
            // SAFETY: the getter's value, owned here, released once.
            unsafe { crate::runtime::object::header::release_any(&a) };
            h = combine(h, r?);
        }
        Ok(h)
    }
}

impl Hash {
    /// Hashes through a type's `__s_hash__(obj, seed, hash)`, where `hash(part, seed,
    /// region_kind)` combines `seed` with a part's hash.
    fn hooked(&mut self, hook: &PackedFunc, o: &ObjectRef, region: Region) -> Result<u64> {
        let hash_part = move |h: &mut Hash, a: &Args<'_>| -> Result<Value> {
            let inner = Region::entered(region, a.to_value(2)?.as_int()?)?;
            let saved = h.region.replace(inner);
            let part = h.value(&a.to_value(0)?);
            h.region = saved;
            Ok(Value::Int(combine(a.to_value(1)?.as_int()? as u64, part?) as i64))
        };
        let seed = Value::Int(self.type_hash(o) as i64);
        Ok(lend(self, hash_part, |cb| hook.call(&[Value::Object(o.clone()), seed, cb]))?.as_int()? as u64)
    }
}

/// The structural hash of `v`.
pub fn hash(v: &Value, map_free_vars: bool, skip_tensor_content: bool) -> Result<u64> {
    let region = Some(if map_free_vars { Region::Pattern } else { Region::None });
    Hash { region, skip_tensor_content, ..Hash::default() }.value(v)
}

fn flags(args: &crate::runtime::function::packed::Args<'_>, from: usize) -> Result<(bool, bool)> {
    let flag = |i: usize| -> Result<bool> { Ok(i < args.len() && args.to_value(i)?.as_int()? != 0) };
    Ok((flag(from)?, flag(from + 1)?))
}

/// `ffi.StructuralKey`: a record of a value and its structural hash (map_free_vars off).
fn structural_key(v: Value) -> Result<Value> {
    let h = hash(&v, false, false)?;
    let r = crate::runtime::reflection::records::new_record("ffi.StructuralKey")?;
    crate::runtime::reflection::records::set_field(&r, "key", v)?;
    crate::runtime::reflection::records::set_field(&r, "hash_i64", Value::Int(h as i64))?;
    Ok(Value::Object(r.to_object_ref()))
}

fn key_value(o: &ObjectRef) -> Result<Value> {
    crate::runtime::reflection::fields::named_field_values(o)?
        .into_iter()
        .find(|(n, _, _)| n == "key")
        .map(|(_, _, v)| v)
        .ok_or_else(|| Error::type_error("expected an ffi.StructuralKey"))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "ffi.StructuralEqual",
            PackedFunc::from_typed(|args| {
                let (m, s) = flags(&args, 2)?;
                Ok(Value::Bool(equal(&args.to_value(0)?, &args.to_value(1)?, m, s)?))
            }),
        ),
        (
            "ffi.GetFirstStructuralMismatch",
            PackedFunc::from_typed(|args| {
                let (m, s) = flags(&args, 2)?;
                first_mismatch(&args.to_value(0)?, &args.to_value(1)?, m, s)
            }),
        ),
        (
            "ffi.StructuralHash",
            PackedFunc::from_typed(|args| {
                let (m, s) = flags(&args, 1)?;
                Ok(Value::Int(hash(&args.to_value(0)?, m, s)? as i64))
            }),
        ),
        ("ffi.StructuralKey", PackedFunc::from_typed(|args| structural_key(args.to_value(0)?))),
        (
            "ffi.StructuralKeyEqual",
            PackedFunc::from_typed(|args| {
                let (a, b) = (key_value(&args.object(0)?)?, key_value(&args.object(1)?)?);
                Ok(Value::Bool(equal(&a, &b, false, false)?))
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{TVMFFIByteArray, TVMFFITypeMetadata};

    /// A type registered with a tree kind and the given structural hooks.
    fn hooked_type(key: &str, hooks: Vec<(&str, PackedFunc)>) -> u32 {
        let index = crate::runtime::object::type_table::register_type(key, ti::ROOT).unwrap();
        let doc = TVMFFIByteArray { data: std::ptr::null(), size: 0 };
        let m = TVMFFITypeMetadata { doc, creator: None, total_size: 24, structural_eq_hash_kind: 1 };
        // SAFETY: an empty doc.
        unsafe { crate::runtime::reflection::type_info::register_metadata(index, &m) }.unwrap();
        for (name, f) in hooks {
            let a = Value::Func(f).into_any();
            // SAFETY: an owned function value, copied by the registry, released after.
            unsafe { crate::runtime::reflection::type_info::register_attr(index, name.as_bytes(), &a) }.unwrap();
            // SAFETY: owned above.
            unsafe { crate::runtime::object::header::release_any(&a) };
        }
        index
    }

    fn instance(index: u32) -> Value {
        let o = crate::runtime::object::header::ObjPtr::new_as(crate::runtime::container::PlainObj, index);
        Value::Object(o.to_object_ref())
    }

    #[test]
    fn hooks_compare_and_hash_through_their_callbacks() {
        // Instances differ only as the hooks say: parts 1 and 2 compared, part 7 hashed.
        let eq = PackedFunc::from_typed(|a| {
            let Value::Func(cmp) = a.to_value(2)? else { return Err(Error::type_error("a callback")) };
            cmp.call(&[Value::Int(1), Value::Int(2), Value::Int(0), Value::Str("part".into())])
        });
        let hash_hook = PackedFunc::from_typed(|a| {
            let Value::Func(h) = a.to_value(2)? else { return Err(Error::type_error("a callback")) };
            h.call(&[Value::Int(7), a.to_value(1)?, Value::Int(0)])
        });
        let index = hooked_type("testing.structural_hooked", vec![("__s_equal__", eq), ("__s_hash__", hash_hook)]);
        let (a, b) = (instance(index), instance(index));
        assert!(!equal(&a, &b, false, false).unwrap(), "the hook's comparison decides");
        let mut e = start(false, false);
        e.paths = Some((Vec::new(), Vec::new()));
        assert!(!e.values(&a, &b).unwrap());
        let (lhs_path, _) = e.paths.unwrap();
        assert!(matches!(lhs_path.as_slice(), [(0, Value::Str(n))] if n == "part"), "the mismatch names the part");
        let Value::Object(ao) = &a else { panic!("an object") };
        let seed = Hash::default().type_hash(ao);
        assert_eq!(hash(&a, false, false).unwrap(), combine(seed, hash(&Value::Int(7), false, false).unwrap()));
        assert_eq!(hash(&a, false, false).unwrap(), hash(&b, false, false).unwrap());
    }

    #[test]
    fn a_hook_callback_kept_past_its_hook_fails() {
        let kept = Arc::new(Mutex::new(None));
        let mut state = 5u64;
        let keep = kept.clone();
        let out = lend(
            &mut state,
            |s: &mut u64, _| Ok(Value::Int(*s as i64)),
            |cb| {
                let Value::Func(f) = &cb else { unreachable!() };
                let inside = f.call(&[])?;
                *keep.lock() = Some(cb);
                Ok(inside)
            },
        );
        assert_eq!(out.unwrap().as_int().unwrap(), 5);
        assert_eq!(state, 5, "the state comes back");
        let Some(Value::Func(f)) = kept.lock().take() else { panic!("kept") };
        assert!(f.call(&[]).is_err());
        assert!(Region::entered(Region::Pattern, 2).unwrap() == Region::Pattern);
        assert!(Region::entered(Region::None, 0).unwrap() == Region::None);
        assert!(Region::entered(Region::None, 9).is_err());
    }
}
