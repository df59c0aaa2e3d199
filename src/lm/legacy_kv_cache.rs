//! The older, unpaged KV cache (`relax.vm.AttentionKVCacheLegacy`): one tensor per layer that
//! grows along its first axis as tokens are appended, as models compiled before the paged cache
//! and apache-tvm's own tests use it (`vm.builtin.attention_kv_cache_create`, `_append`,
//! `_update`, `_view`, `_array_popn`, `_array_clear`, `_window_override`,
//! `_window_override_with_sinks`).
//!
//! A cache holds its storage (axis 0: token slots, reserved ahead and doubled when full; the
//! other axes: one token's keys or values), how many slots are filled, and for a sliding
//! window the slot the next token goes to. Views alias the storage: one taken before a growth
//! keeps the storage it was taken from.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::header::{ObjPtr, ObjectRef, ObjectType};
use crate::runtime::object::type_table::type_index as ti;
use crate::runtime::tensor::ndarray::{copy_from_to, NDArray};
use parking_lot::Mutex;

/// TVM's type key of the cache.
pub const TYPE_KEY: &str = "relax.vm.AttentionKVCacheLegacy";

/// A cache's state.
struct State {
    data: NDArray,
    fill: i64,
    /// The slot a sliding window writes next.
    window_pos: i64,
}

/// The cache object: its state behind a lock (calls on one cache from several threads take
/// turns).
pub struct LegacyKvCacheObj(Mutex<State>);

impl ObjectType for LegacyKvCacheObj {
    /// Made at [`TYPE_KEY`]'s index, read back through [`cache_arg`].
    const TYPE_INDEX: u32 = ti::ROOT;
}

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    let f = |name, body: fn(Args<'_>) -> Result<Value>| (name, PackedFunc::from_typed(body));
    vec![
        f("vm.builtin.attention_kv_cache_create", create_global),
        f("vm.builtin.attention_kv_cache_append", |a| with_value(a, "append", |s, v| append(s, v))),
        f("vm.builtin.attention_kv_cache_update", |a| with_value(a, "update", update)),
        f("vm.builtin.attention_kv_cache_view", view_global),
        f("vm.builtin.attention_kv_cache_array_popn", popn_global),
        f("vm.builtin.attention_kv_cache_array_clear", clear_global),
        f("vm.builtin.attention_kv_cache_window_override", |a| window_global(a, false)),
        f("vm.builtin.attention_kv_cache_window_override_with_sinks", |a| window_global(a, true)),
    ]
}

fn type_index() -> Result<u32> {
    static INDEX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    if let Some(&i) = INDEX.get() {
        return Ok(i);
    }
    let i = crate::runtime::object::type_table::register_type(TYPE_KEY, ti::ROOT)?;
    Ok(*INDEX.get_or_init(|| i))
}

/// The cache in `o` (one made here).
fn cache_of(o: &ObjectRef, what: &str) -> Result<ObjPtr<LegacyKvCacheObj>> {
    if o.type_index() != type_index()? || !o.made_here() {
        let key = crate::runtime::object::type_table::type_key_of(o.type_index());
        return Err(Error::type_error(format!("{what}: expected a {TYPE_KEY}, got {key}")));
    }
    // SAFETY: objects of this index made here are made by `create`, with this payload.
    Ok(unsafe { ObjPtr::from_borrowed(o.as_header()) })
}

fn cache_arg(args: &Args<'_>, i: usize) -> Result<ObjPtr<LegacyKvCacheObj>> {
    cache_of(&args.object(i)?, &format!("argument {i}"))
}

fn create_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(3, "vm.builtin.attention_kv_cache_create(init_data, reserve_shape, init_fill_count)")?;
    let init = args.ndarray(0)?;
    let reserve = super::args::shape_arg(&args, 1)?;
    create(&init, &reserve, args.int(2)?).map(|c| Value::Object(c.to_object_ref()))
}

/// A cache with storage of `reserve_shape` on `init`'s device, holding `init`'s rows; with
/// `fill` >= 0, that many rows count as filled (and the window starts there).
pub fn create(init: &NDArray, reserve_shape: &[i64], fill: i64) -> Result<ObjPtr<LegacyKvCacheObj>> {
    let data = NDArray::empty(reserve_shape, init.dtype(), init.device())?;
    let mut state = State { data, fill: 0, window_pos: 0 };
    append(&mut state, init)?;
    if fill >= 0 {
        (state.fill, state.window_pos) = (fill, fill);
    }
    Ok(ObjPtr::new_as(LegacyKvCacheObj(Mutex::new(state)), type_index()?))
}

/// `(cache, value)`: `body` on the cache's state, the cache returned.
fn with_value(args: Args<'_>, what: &str, body: impl FnOnce(&mut State, &NDArray) -> Result<()>) -> Result<Value> {
    args.expect_len(2, &format!("vm.builtin.attention_kv_cache_{what}(cache, value)"))?;
    let cache = cache_arg(&args, 0)?;
    body(&mut cache.0.lock(), &args.ndarray(1)?)?;
    Ok(Value::Object(cache.to_object_ref()))
}

/// Bytes of one row (one token) of `t`.
fn row_bytes(t: &NDArray) -> usize {
    let rows = t.shape().first().copied().unwrap_or(1).max(1) as usize;
    t.nbytes() / rows
}

fn check_value(s: &State, value: &NDArray) -> Result<()> {
    if value.dtype() != s.data.dtype() {
        return Err(Error::type_error(format!(
            "dtype mismatch: the cache holds {}, the value is {}",
            s.data.dtype(),
            value.dtype()
        )));
    }
    value.tensor().check_contiguous("the value")?;
    let (d, v) = (s.data.shape(), value.shape());
    if v.is_empty() || d.len() != v.len() {
        return Err(Error::internal(format!("the value's shape {v:?} does not fit the cache's rows {:?}", &d[1..])));
    }
    if let Some(i) = (1..d.len()).find(|&i| d[i] != v[i]) {
        return Err(Error::internal(format!("Dimension {i} mismatch: the cache has {}, the value {}", d[i], v[i])));
    }
    Ok(())
}

/// Rows `from..to` of `value` into the cache's storage from slot `slot` on.
fn write_rows(s: &State, value: &NDArray, from: i64, to: i64, slot: i64) -> Result<()> {
    if to <= from {
        return Ok(());
    }
    let mut shape = value.shape().to_vec();
    shape[0] = to - from;
    let (dtype, row) = (value.dtype(), row_bytes(&s.data));
    if slot + (to - from) > s.data.shape()[0] {
        return Err(Error::internal(format!(
            "rows {slot}..{} are past the cache's {} slots",
            slot + (to - from),
            s.data.shape()[0]
        )));
    }
    let src = value.create_view_at(from as usize * row, &shape, dtype)?;
    let dst = s.data.create_view_at(slot as usize * row, &shape, dtype)?;
    copy_from_to(src.tensor(), dst.tensor())
}

/// Doubles the storage until `rows` slots fit (the filled ones copied over).
fn reserve(s: &mut State, rows: i64) -> Result<()> {
    let mut reserved = s.data.shape()[0].max(1);
    if rows <= s.data.shape()[0] {
        return Ok(());
    }
    while reserved < rows {
        reserved *= 2;
    }
    let mut shape = s.data.shape().to_vec();
    shape[0] = reserved;
    let grown = NDArray::empty(&shape, s.data.dtype(), s.data.device())?;
    let old = grown.create_view_at(0, s.data.shape(), s.data.dtype())?;
    copy_from_to(s.data.tensor(), old.tensor())?;
    s.data = grown;
    Ok(())
}

/// Appends `value`'s rows to `cache` (its storage grown as needed).
pub fn append_rows(cache: &ObjPtr<LegacyKvCacheObj>, value: &NDArray) -> Result<()> {
    append(&mut cache.0.lock(), value)
}

/// How many rows of `cache` are filled.
pub fn filled_rows(cache: &ObjPtr<LegacyKvCacheObj>) -> i64 {
    cache.0.lock().fill
}

fn append(s: &mut State, value: &NDArray) -> Result<()> {
    check_value(s, value)?;
    let n = value.shape()[0];
    reserve(s, s.fill + n)?;
    write_rows(s, value, 0, n, s.fill)?;
    s.fill += n;
    Ok(())
}

/// Overwrites the filled rows with `value` (as many rows as are filled).
fn update(s: &mut State, value: &NDArray) -> Result<()> {
    check_value(s, value)?;
    if value.shape()[0] != s.fill {
        return Err(Error::internal(format!(
            "Requested shape do not match the filled count: {} rows for {} filled",
            value.shape()[0],
            s.fill
        )));
    }
    write_rows(s, value, 0, s.fill, 0)
}

fn view_global(args: Args<'_>) -> Result<Value> {
    if !(1..=2).contains(&args.len()) {
        return Err(Error::value(format!(
            "`vm.builtin.attention_kv_cache_view` expects 1 or 2 arguments, but got {}.",
            args.len()
        )));
    }
    let cache = cache_arg(&args, 0)?;
    let s = cache.0.lock();
    let mut filled = s.data.shape().to_vec();
    filled[0] = s.fill;
    let shape = match args.len() {
        2 => super::args::shape_arg(&args, 1)?,
        _ => filled.clone(),
    };
    if shape.len() != filled.len() || shape[0] != s.fill {
        return Err(Error::internal(format!(
            "Requested shape do not match the filled count: {shape:?} for {filled:?}"
        )));
    }
    if let Some(i) = (1..shape.len()).find(|&i| shape[i] != filled[i]) {
        return Err(Error::internal(format!(
            "Dimension {i} mismatch: requested {}, the cache has {}",
            shape[i], filled[i]
        )));
    }
    s.data.create_view(&shape, s.data.dtype()).map(Value::NDArray)
}

/// The caches of an array argument.
fn caches(args: &Args<'_>, i: usize) -> Result<Vec<ObjPtr<LegacyKvCacheObj>>> {
    let items = crate::runtime::collections::list_map::sequence_items(&args.object(i)?)?
        .ok_or_else(|| Error::type_error(format!("argument {i}: expected an array of caches")))?;
    items
        .into_iter()
        .map(|v| match v {
            Value::Object(o) => cache_of(&o, "an item of the caches"),
            other => Err(Error::type_error(format!("an item of the caches is a {}", other.type_name()))),
        })
        .collect()
}

fn popn_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(2, "vm.builtin.attention_kv_cache_array_popn(caches, n)")?;
    let (all, n) = (caches(&args, 0)?, args.int(1)?);
    let mut states: Vec<_> = all.iter().map(|c| c.0.lock()).collect();
    if let Some(s) = states.iter().find(|s| n < 0 || n > s.fill) {
        return Err(Error::internal(format!("cannot pop {n} of a cache's {} filled rows", s.fill)));
    }
    states.iter_mut().for_each(|s| s.fill -= n);
    Ok(Value::Null)
}

fn clear_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(1, "vm.builtin.attention_kv_cache_array_clear(caches)")?;
    for c in caches(&args, 0)? {
        let mut s = c.0.lock();
        (s.fill, s.window_pos) = (0, 0);
    }
    Ok(Value::Null)
}

fn window_global(args: Args<'_>, sinks: bool) -> Result<Value> {
    let n = if sinks { 4 } else { 3 };
    let what = if sinks {
        "_with_sinks(cache, value, max_cache_size, num_attention_sinks)"
    } else {
        "(cache, value, max_cache_size)"
    };
    args.expect_len(n, &format!("vm.builtin.attention_kv_cache_window_override{what}"))?;
    let cache = cache_arg(&args, 0)?;
    let sinks = if sinks { args.int(3)? } else { 0 };
    window_override(&mut cache.0.lock(), &args.ndarray(1)?, args.int(2)?, sinks)?;
    Ok(Value::Object(cache.to_object_ref()))
}

/// Writes `value` into a sliding window of `max` slots whose first `sinks` slots are kept once
/// written: at the window's position, wrapping round to just past the sinks.
fn window_override(s: &mut State, value: &NDArray, max: i64, sinks: i64) -> Result<()> {
    check_value(s, value)?;
    let n = value.shape()[0];
    if sinks < 0 || n > max - sinks {
        return Err(Error::internal(format!(
            "dim 0 of value too large: {n} rows for a window of {max} with {sinks} sinks"
        )));
    }
    if s.fill + n <= max {
        reserve(s, s.fill + n)?;
    }
    let k = n.min(max - s.window_pos);
    let at = s.window_pos;
    s.fill = (s.fill + n).min(max);
    s.window_pos = (s.window_pos + n).min(max);
    write_rows(s, value, 0, k, at)?;
    if k < n {
        if s.fill != max || s.window_pos != max {
            return Err(Error::internal(format!("the window is not full ({} of {max}) when it wraps", s.fill)));
        }
        write_rows(s, value, k, n, sinks)?;
        s.window_pos = n - k + sinks;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{DLDataType, DLDevice};

    fn rows(values: &[i32]) -> NDArray {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        NDArray::from_bytes(&[values.len() as i64, 1], DLDataType::parse("int32").unwrap(), &bytes).unwrap()
    }

    fn filled(cache: &ObjPtr<LegacyKvCacheObj>) -> Vec<i32> {
        let s = cache.0.lock();
        let mut shape = s.data.shape().to_vec();
        shape[0] = s.fill;
        let view = s.data.create_view(&shape, s.data.dtype()).unwrap();
        view.to_vec_u8().unwrap().chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    // Each expectation is what apache-tvm 0.27's runtime gives for the same calls.

    #[test]
    fn appends_double_the_storage_when_full() {
        let cache = create(&rows(&[0]), &[2, 1], -1).unwrap();
        let mut next = 1;
        for (n, fill, capacity) in [(1, 2, 2), (2, 4, 4), (3, 7, 8), (4, 11, 16)] {
            let values: Vec<i32> = (next..next + n).collect();
            next += n;
            append(&mut cache.0.lock(), &rows(&values)).unwrap();
            let s = cache.0.lock();
            assert_eq!((s.fill, s.data.shape()[0]), (fill, capacity));
        }
        assert_eq!(filled(&cache), (0..11).collect::<Vec<_>>());
        let e = append(
            &mut cache.0.lock(),
            &NDArray::empty(&[1, 2], DLDataType::parse("int32").unwrap(), DLDevice::cpu(0)).unwrap(),
        )
        .unwrap_err();
        assert!(e.message().contains("Dimension 1 mismatch"), "{e}");
        let e = update(&mut cache.0.lock(), &rows(&[1, 2])).unwrap_err();
        assert!(e.message().contains("Requested shape do not match the filled count"), "{e}");
    }

    #[test]
    fn windows_wrap_round_past_their_sinks() {
        let window = |max: i64, sinks: i64, steps: &[&[i32]]| {
            let cache = create(&rows(&[-1]), &[max, 1], 0).unwrap();
            steps
                .iter()
                .map(|v| {
                    window_override(&mut cache.0.lock(), &rows(v), max, sinks).unwrap();
                    filled(&cache)
                })
                .collect::<Vec<_>>()
        };
        let got = window(4, 0, &[&[0, 1, 2], &[3, 4], &[5], &[6, 7, 8]]);
        assert_eq!(got, [vec![0, 1, 2], vec![4, 1, 2, 3], vec![4, 5, 2, 3], vec![8, 5, 6, 7]]);
        let got = window(6, 2, &[&[0], &[1], &[2], &[3], &[4], &[5], &[6], &[7], &[8, 9, 10]]);
        assert_eq!(got[5], [0, 1, 2, 3, 4, 5]);
        assert_eq!(got[6..], [vec![0, 1, 6, 3, 4, 5], vec![0, 1, 6, 7, 4, 5], vec![0, 1, 10, 7, 8, 9]]);
        let cache = create(&rows(&[-1]), &[4, 1], 0).unwrap();
        let e = window_override(&mut cache.0.lock(), &rows(&[1, 2, 3]), 4, 2).unwrap_err();
        assert!(e.message().contains("dim 0 of value too large"), "{e}");
    }
}
