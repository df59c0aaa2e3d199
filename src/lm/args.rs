//! Reading the arguments the language-model builtins take: shapes, arrays, functions.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};

/// The dimensions of shape argument `i`.
pub(super) fn shape_arg(args: &Args<'_>, i: usize) -> Result<Vec<i64>> {
    let o = args.object(i)?;
    let shape = o
        .downcast::<crate::runtime::container::ShapeTupleObj>()
        .ok_or_else(|| Error::type_error(format!("argument {i}: expected a shape")))?;
    Ok(shape.dims()?.to_vec())
}

/// The items of an array argument: an `ffi.Array` or `ffi.List`, or the array a Relax VM makes
/// of a tuple.
pub(super) fn items(args: &Args<'_>, i: usize) -> Result<Vec<Value>> {
    let o = args.object(i)?;
    if let Some(a) = o.downcast::<crate::runtime::container::ArrayObj>() {
        return Ok(a.tail().iter().map(|r| r.as_ref().map_or(Value::Null, |r| Value::from_object(r.get()))).collect());
    }
    crate::runtime::collections::list_map::sequence_items(&o)?.ok_or_else(|| {
        let key = crate::runtime::object::type_table::type_key_of(o.type_index());
        Error::type_error(format!("argument {i}: expected an array, got {key}"))
    })
}

/// The functions in an array argument.
pub(super) fn functions(args: &Args<'_>, i: usize) -> Result<Vec<PackedFunc>> {
    items(args, i)?
        .into_iter()
        .map(|v| match v {
            Value::Func(f) => Ok(f),
            other => Err(Error::type_error(format!("argument {i}: expected functions, got a {}", other.type_name()))),
        })
        .collect()
}
