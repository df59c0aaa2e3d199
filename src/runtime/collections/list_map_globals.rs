//! tvm-ffi's `ffi.List*`, `ffi.Map*` and `ffi.Dict*` globals, over the containers of
//! [`ffi_containers`](crate::runtime::collections::list_map). Indices are plain positions (the Python side
//! normalises negative ones first); a missing key is a `KeyError`.

use crate::abi::{ffi_type_index as fti, TVMFFIAny};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::collections::list_map::{
    any_equal, arg, dict_set_arg, int_arg, map_find_arg, new_map, object_arg, read_map_arg, release_all, type_name,
    view, with_list_arg, DictObj, FfiMapObj, ListObj, MapWalk,
};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::object::{
    header::{ObjPtr, ObjectRef},
    type_table::type_index,
};
use crate::runtime::reflection::type_info::owned_any;

type Global = (&'static str, PackedFunc);

/// View `i` as a position (an integer, not negative).
fn position_arg(views: &[TVMFFIAny], i: usize) -> Result<usize> {
    let n = int_arg(views, i)?;
    usize::try_from(n).map_err(|_| Error::index(format!("argument {i}: index {n} is negative")))
}

/// The object view `i` holds (a new reference).
fn object_of(views: &[TVMFFIAny], i: usize) -> Result<ObjectRef> {
    // SAFETY: the caller's view, valid for the call.
    match unsafe { Value::from_any_view(arg(views, i)?) }? {
        Value::Object(o) => Ok(o),
        v => Err(Error::type_error(format!("argument {i}: expected an object, got {}", v.type_name()))),
    }
}

/// Element values of a list or array object (new references), read before any cell is locked.
fn sequence_values(o: &ObjectRef) -> Result<Vec<TVMFFIAny>> {
    let views = if let Some(l) = o.downcast::<ListObj>() {
        l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>())?
    } else if let Some(a) = o.downcast::<crate::runtime::container::FfiArrayObj>() {
        a.items().iter().map(view).collect::<Result<Vec<_>>>()?
    } else {
        return Err(Error::type_error(format!("expected ffi.List or ffi.Array, got {}", type_name(o))));
    };
    Ok(views.into_iter().map(Value::into_any).collect())
}

fn list_globals() -> Vec<Global> {
    vec![
        ("ffi.List", PackedFunc::from_ffi(|v| Ok(ListObj::from_views(v)?.into_any()))),
        (
            "ffi.ListSize",
            PackedFunc::from_ffi(|v| with_list_arg(v, 0, |c| Ok(TVMFFIAny::int(fti::INT, c.items().len() as i64)))),
        ),
        (
            "ffi.ListGetItem",
            PackedFunc::from_ffi(|v| {
                let i = position_arg(v, 1)?;
                with_list_arg(v, 0, |c| {
                    let n = c.items().len();
                    let item = c
                        .items()
                        .get(i)
                        .ok_or_else(|| Error::index(format!("index {i} out of range for a list of size {n}")))?;
                    // SAFETY: an item of the locked list, copied out with its own reference.
                    unsafe { owned_any(item) }
                })
            }),
        ),
        (
            "ffi.ListSetItem",
            PackedFunc::from_ffi(|v| {
                let (i, item) = (position_arg(v, 1)?, arg(v, 2)?);
                // SAFETY: the caller's view, valid for the call (made owned under the lock,
                // which calls out to nothing; `replace` releases it on a bad index).
                let old = with_list_arg(v, 0, |c| c.replace(i, unsafe { owned_any(item) }?))?;
                release_all(vec![old]);
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListAppend",
            PackedFunc::from_ffi(|v| {
                let item = arg(v, 1)?;
                // SAFETY: as for `ffi.ListSetItem`.
                with_list_arg(v, 0, |c| c.push(unsafe { owned_any(item) }?))?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListInsert",
            PackedFunc::from_ffi(|v| {
                let (i, item) = (position_arg(v, 1)?, arg(v, 2)?);
                // SAFETY: as for `ffi.ListSetItem` (`insert` releases it on a bad position).
                with_list_arg(v, 0, |c| c.insert(i, unsafe { owned_any(item) }?))?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListPop",
            PackedFunc::from_ffi(|v| {
                let i = position_arg(v, 1)?;
                let taken = with_list_arg(v, 0, |c| c.drain(i..i + 1))?;
                // The element the list owned, ours now.
                taken.into_iter().next().ok_or_else(|| Error::index(format!("index {i}: nothing to pop")))
            }),
        ),
        (
            "ffi.ListErase",
            PackedFunc::from_ffi(|v| {
                let i = position_arg(v, 1)?;
                release_all(with_list_arg(v, 0, |c| c.drain(i..i + 1))?);
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListEraseRange",
            PackedFunc::from_ffi(|v| {
                let (a, b) = (position_arg(v, 1)?, position_arg(v, 2)?);
                release_all(with_list_arg(v, 0, |c| c.drain(a..b))?);
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListReplaceSlice",
            PackedFunc::from_ffi(|v| {
                let (a, b) = (position_arg(v, 1)?, position_arg(v, 2)?);
                let new = sequence_values(&object_of(v, 3)?)?;
                let old = with_list_arg(v, 0, |c| {
                    let old = c.drain(a..b)?;
                    for (k, item) in new.into_iter().enumerate() {
                        c.insert(a + k, item)?;
                    }
                    Ok(old)
                })?;
                release_all(old);
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListClear",
            PackedFunc::from_ffi(|v| {
                release_all(with_list_arg(v, 0, |c| c.drain(0..c.items().len()))?);
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListReserve",
            PackedFunc::from_ffi(|v| {
                let n = position_arg(v, 1)?;
                with_list_arg(v, 0, |c| c.reserve(n))?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListReverse",
            PackedFunc::from_ffi(|v| {
                with_list_arg(v, 0, |c| {
                    c.reverse();
                    Ok(())
                })?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.ListContains",
            PackedFunc::from_ffi(|v| {
                let items = sequence_values(&object_of(v, 0)?)?;
                // SAFETY: the caller's view, valid for the call.
                let value = unsafe { Value::from_any_view(arg(v, 1)?) }?;
                let mut found = false;
                for a in &items {
                    found = found || any_equal(&view(a)?, &value);
                }
                release_all(items);
                Ok(TVMFFIAny::int(fti::BOOL, found as i64))
            }),
        ),
    ]
}

/// A function walking the map or dict ([`MapWalk`]): 0 gives the current key, 1 its value, 2
/// moves on and says whether an entry is left.
fn forward_iter(views: &[TVMFFIAny]) -> Result<TVMFFIAny> {
    let walk = MapWalk::new(views, 0)?;
    Ok(PackedFunc::from_ffi(move |v| walk.step(int_arg(v, 0)?)).into_any())
}

fn missing_key(key: &Value) -> Result<Value> {
    Err(Error::key(format!("key {key:?} not found")))
}

/// The globals shared by `ffi.Map` and `ffi.Dict`, under their names: `[Size, Count, GetItem,
/// GetItemOrMissing, ForwardIterFunctor]`.
fn map_reads(names: [&'static str; 5]) -> Vec<Global> {
    let [size, count, get_item, get_item_or_missing, forward_iter_functor] = names;
    // SAFETY (of each use): a value of the map, live while it is read, copied out with its own
    // reference.
    let copy = |a: &TVMFFIAny| unsafe { owned_any(a) };
    vec![
        (size, PackedFunc::from_ffi(|v| read_map_arg(v, 0, |c| Ok(TVMFFIAny::int(fti::INT, c.len() as i64))))),
        (
            count,
            PackedFunc::from_ffi(|v| {
                let found = map_find_arg(v, |_| Ok(()))?.is_some();
                Ok(TVMFFIAny::int(fti::INT, found as i64))
            }),
        ),
        (
            get_item,
            PackedFunc::from_ffi(move |v| match map_find_arg(v, copy)? {
                Some(a) => Ok(a),
                // SAFETY: the caller's view, valid for the call.
                None => missing_key(&unsafe { Value::from_any_view(arg(v, 1)?) }?).map(Value::into_any),
            }),
        ),
        (
            get_item_or_missing,
            PackedFunc::from_ffi(move |v| {
                let found = map_find_arg(v, copy)?;
                Ok(found
                    .unwrap_or_else(|| Value::Object(crate::runtime::collections::array_globals::missing()).into_any()))
            }),
        ),
        (forward_iter_functor, PackedFunc::from_ffi(forward_iter)),
    ]
}

/// The dict view 0 holds (a new reference).
fn dict_arg(views: &[TVMFFIAny]) -> Result<ObjPtr<DictObj>> {
    let header = object_arg(views, 0, type_index::DICT, "ffi.Dict")?;
    // SAFETY: a live dict (checked above), kept alive by the caller for the call.
    let d = unsafe { ObjectRef::from_borrowed(header) }.downcast::<DictObj>();
    d.ok_or_else(|| Error::type_error("argument 0: expected ffi.Dict"))
}

fn dict_writes() -> Vec<Global> {
    vec![
        (
            "ffi.DictSetItem",
            PackedFunc::from_ffi(|v| {
                dict_set_arg(v)?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
        (
            "ffi.DictErase",
            PackedFunc::from_ffi(|v| {
                let d = dict_arg(v)?;
                // SAFETY: the caller's view, valid for the call.
                let key = unsafe { Value::from_any_view(arg(v, 1)?) }?;
                match crate::runtime::collections::list_map::dict_erase(&d, &key)? {
                    true => Ok(TVMFFIAny::NONE),
                    false => missing_key(&key).map(Value::into_any),
                }
            }),
        ),
        (
            "ffi.DictClear",
            PackedFunc::from_ffi(|v| {
                dict_arg(v)?.with(|c| {
                    c.clear();
                    Ok(())
                })?;
                Ok(TVMFFIAny::NONE)
            }),
        ),
    ]
}

pub(crate) fn globals() -> Vec<Global> {
    let mut g = list_globals();
    g.push(("ffi.Map", PackedFunc::from_ffi(|args| Ok(FfiMapObj::from_views(args)?.into_any()))));
    g.push(("ffi.Dict", PackedFunc::from_ffi(|args| Ok(DictObj::from_views(args)?.into_any()))));
    g.extend(map_reads([
        "ffi.MapSize",
        "ffi.MapCount",
        "ffi.MapGetItem",
        "ffi.MapGetItemOrMissing",
        "ffi.MapForwardIterFunctor",
    ]));
    g.extend(map_reads([
        "ffi.DictSize",
        "ffi.DictCount",
        "ffi.DictGetItem",
        "ffi.DictGetItemOrMissing",
        "ffi.DictForwardIterFunctor",
    ]));
    g.extend(dict_writes());
    g
}

/// How tvm-ffi names the target of a failed `__ffi_convert__` (its C++ type's `TypeStr`).
fn convert_target_name(target: u32) -> String {
    match target {
        type_index::STRING => "str".into(),
        type_index::BYTES => "bytes".into(),
        type_index::FFI_ARRAY => "Array<Any>".into(),
        type_index::FFI_MAP => "Map<Any, Any>".into(),
        type_index::LIST => "List<Any>".into(),
        type_index::DICT => "Dict<Any, Any>".into(),
        _ => crate::runtime::object::type_table::type_index_to_key(target)
            .unwrap_or_else(|_| format!("type index {target}")),
    }
}

/// The error of a value that does not convert to `target`, naming the value's tvm-ffi type.
fn cannot_cast(v: &Value, target: u32) -> Error {
    let index = v.ffi_type_index();
    let from = crate::runtime::object::type_table::type_index_to_key(index as u32)
        .unwrap_or_else(|_| format!("type index {index}"));
    Error::type_error(format!("Cannot cast from `{from}` to `{}`", convert_target_name(target)))
}

/// Whether `v` already is a `target` as tvm-ffi's C++ reference type takes it: an object of the
/// type or one derived from it, or None where that type is nullable (`ObjectRef`, `Function`,
/// `Tensor`).
fn already_converted(target: u32, v: &Value) -> bool {
    let index = match v {
        Value::Null => return matches!(target, type_index::ROOT | type_index::PACKED_FUNC | type_index::NDARRAY),
        Value::Object(_) | Value::Func(_) | Value::NDArray(_) | Value::Module(_) => v.ffi_type_index() as u32,
        _ => return false,
    };
    index == target || crate::runtime::object::type_table::derived_from(index, target).unwrap_or(false)
}

/// The value `v` as an object of static type `target`, tvm-ffi's `__ffi_convert__` of that type:
/// a `target` as is, and the conversions tvm-ffi's C++ types allow (an array or list of
/// integers to a shape, arrays and lists into each other, maps and dicts into each other, text
/// to a string object, bytes to bytes).
fn convert_to(target: u32, v: Value) -> Result<Value> {
    use crate::runtime::collections::list_map::{bytes_of, map_items, sequence_items, text_of};
    if already_converted(target, &v) {
        return Ok(v);
    }
    let mismatch = || cannot_cast(&v, target);
    let o = match &v {
        Value::Object(o) => Some(o.clone()),
        _ => None,
    };
    let items = || -> Result<Vec<Value>> { o.as_ref().map(sequence_items).transpose()?.flatten().ok_or_else(mismatch) };
    let owned = |xs: Vec<Value>| xs.into_iter().map(Value::into_any).collect::<Vec<_>>();
    Ok(Value::Object(match target {
        type_index::STRING => {
            let t = text_of(&v).ok_or_else(mismatch)?;
            return Ok(Value::Str(String::from_utf8_lossy(&t).into_owned()));
        }
        type_index::BYTES => return Ok(Value::Bytes(bytes_of(&v).ok_or_else(mismatch)?.into_owned())),
        type_index::SHAPE_TUPLE => {
            let dims = items()?.iter().map(|d| d.as_int()).collect::<Result<Vec<_>>>().map_err(|_| mismatch())?;
            crate::runtime::container::shape_object(&dims)
        }
        type_index::FFI_ARRAY => crate::runtime::container::FfiArrayObj::new(owned(items()?)).to_object_ref(),
        type_index::LIST => ObjPtr::new(ListObj::new(owned(items()?))?).to_object_ref(),
        type_index::FFI_MAP | type_index::DICT => {
            let o =
                o.filter(|o| matches!(o.type_index(), type_index::FFI_MAP | type_index::DICT)).ok_or_else(mismatch)?;
            let pairs = map_items(&o)?.into_iter().map(|(k, v)| (k.into_any(), v.into_any())).collect();
            if target == type_index::DICT {
                new_map::<{ type_index::DICT }>(pairs)?
            } else {
                new_map::<{ type_index::FFI_MAP }>(pairs)?
            }
        }
        _ => return Err(mismatch()),
    }))
}

/// Register `__ffi_convert__` for tvm-ffi's own static types (once, from the crate's init).
pub(crate) fn install_converters() -> Result<()> {
    use type_index as t;
    for target in [
        t::ROOT,
        t::STRING,
        t::BYTES,
        t::ERROR,
        t::PACKED_FUNC,
        t::SHAPE_TUPLE,
        t::NDARRAY,
        t::FFI_ARRAY,
        t::FFI_MAP,
        t::LIST,
        t::DICT,
    ] {
        let f = PackedFunc::from_typed(move |args| convert_to(target, args.to_value(0)?));
        crate::runtime::reflection::type_info::register_func_attr(target, b"__ffi_convert__", f)?;
    }
    install_big_int_keys()
}

/// Big integers as keys compare and hash by value (tvm-ffi's `__any_equal__` and
/// `__any_hash__` of `ffi.BigInt`, which its C++ map code reads too).
fn install_big_int_keys() -> Result<()> {
    use crate::runtime::container::big_int_words;
    let words = |args: &Args<'_>, i: usize| -> Result<Vec<i64>> {
        big_int_words(&args.object(i)?).ok_or_else(|| Error::type_error(format!("argument {i} is not an ffi.BigInt")))
    };
    let eq = PackedFunc::from_typed(move |args| Ok(Value::Bool(words(&args, 0)? == words(&args, 1)?)));
    let hash = PackedFunc::from_typed(move |args| {
        words(&args, 0)?;
        Ok(Value::Int(crate::runtime::collections::map_keys::big_int_hash(&args.object(0)?) as i64))
    });
    crate::runtime::reflection::type_info::register_func_attr(type_index::BIG_INT, b"__any_equal__", eq)?;
    crate::runtime::reflection::type_info::register_func_attr(type_index::BIG_INT, b"__any_hash__", hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(dims: &[i64]) -> Value {
        Value::Object(crate::runtime::container::shape_object(dims))
    }

    #[test]
    fn convert_takes_objects_of_the_type_and_its_subtypes_as_they_are() {
        let f = PackedFunc::from_typed(|_| Ok(Value::Null));
        assert!(matches!(convert_to(type_index::ROOT, Value::Func(f)), Ok(Value::Func(_))));
        assert!(matches!(convert_to(type_index::ROOT, Value::Null), Ok(Value::Null)));
        assert!(convert_to(type_index::SHAPE_TUPLE, Value::Null).is_err());
        assert!(matches!(convert_to(type_index::BYTES, Value::Bytes(b"b".to_vec())), Ok(Value::Bytes(_))));
    }

    #[test]
    fn big_int_keys_are_equal_by_value() {
        crate::runtime::builtins::install();
        let big = |w: Vec<i64>| Value::Object(crate::runtime::container::big_int(w).to_object_ref());
        assert!(any_equal(&big(vec![3, 1]), &big(vec![3, 1])));
        assert!(!any_equal(&big(vec![3, 1]), &big(vec![4, 1])));
        let hook = crate::runtime::reflection::type_info::attr(b"__any_hash__", type_index::BIG_INT);
        let Some(Value::Func(h)) = hook else { panic!("a hash function") };
        assert_eq!(
            h.call(&[big(vec![3, 1])]).unwrap().as_int().unwrap(),
            h.call(&[big(vec![3, 1])]).unwrap().as_int().unwrap()
        );
    }

    #[test]
    fn failed_conversions_name_both_types_as_tvm_ffi_does() {
        let items = vec![Value::Str("x".into()).into_any()];
        let array = Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref());
        let message = |target, v| convert_to(target, v).unwrap_err().message().to_string();
        assert_eq!(message(type_index::SHAPE_TUPLE, array), "TypeError: Cannot cast from `ffi.Array` to `ffi.Shape`");
        assert_eq!(message(type_index::FFI_ARRAY, Value::Int(1)), "TypeError: Cannot cast from `int` to `Array<Any>`");
        assert_eq!(message(type_index::STRING, shape_of(&[1])), "TypeError: Cannot cast from `ffi.Shape` to `str`");
        assert_eq!(
            message(type_index::ROOT, Value::Str("s".into())),
            "TypeError: Cannot cast from `ffi.SmallStr` to `ffi.Object`"
        );
    }
}
