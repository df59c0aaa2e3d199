//! tvm-ffi's `ffi.ReprPrint`: a readable text for any value, as its Python side shows objects:
//! plain values as Python writes them, strings quoted, sequences in brackets, maps in braces,
//! an object with reflected fields as `type_key(field=value, ...)` (fields marked repr-off left
//! out), any other object as its type key and address. An object met again inside itself is
//! written as `...`.

use super::error::Result;
use super::ffi_containers::map_cell;
use super::object::{type_index as ti, ObjectRef};
use super::packed::{PackedFunc, Value};
use crate::abi::TVMFFIAny;

const REPR_OFF: i64 = 1 << 6;

fn view(a: &TVMFFIAny) -> Result<Value> {
    // SAFETY: an owned element of a live container.
    unsafe { Value::from_any_view(a) }
}

/// The text of `v`.
pub fn repr(v: &Value) -> Result<String> {
    let mut open = Vec::new();
    repr_in(v, &mut open)
}

fn float_text(f: f64) -> String {
    if f.is_finite() && f == f.trunc() && f.abs() < 1e16 {
        format!("{f:.1}")
    } else if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{f}")
    }
}

fn repr_in(v: &Value, open: &mut Vec<usize>) -> Result<String> {
    Ok(match v {
        Value::Null => "None".into(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Float(f) => float_text(*f),
        Value::Str(s) => super::ffi_records::json_string(s),
        Value::Bytes(b) => format!("b{}", super::ffi_records::json_string(&String::from_utf8_lossy(b))),
        Value::DataType(_) | Value::Device(_) => format!("{v:?}"),
        Value::Object(o) => repr_object(o, open)?,
        other => format!("{other:?}"),
    })
}

fn join(items: Vec<Value>, open: &mut Vec<usize>) -> Result<String> {
    Ok(items.iter().map(|v| repr_in(v, open)).collect::<Result<Vec<_>>>()?.join(", "))
}

fn repr_object(o: &ObjectRef, open: &mut Vec<usize>) -> Result<String> {
    let addr = o.as_header() as usize;
    if open.contains(&addr) {
        return Ok("...".into());
    }
    open.push(addr);
    let text = repr_object_body(o, open);
    open.pop();
    text
}

fn repr_object_body(o: &ObjectRef, open: &mut Vec<usize>) -> Result<String> {
    let key = super::object::type_index_to_key(o.type_index())?;
    if let Some(items) = sequence(o)? {
        return Ok(format!("[{}]", join(items, open)?));
    }
    if matches!(o.type_index(), ti::FFI_MAP | ti::DICT) {
        let entries = map_cell(o, |c| {
            // SAFETY: live entries of the locked cell.
            c.entries()
                .into_iter()
                .map(|kv| unsafe { Ok((view(&(*kv).key)?, view(&(*kv).value)?)) })
                .collect::<Result<Vec<_>>>()
        })?;
        let parts = entries
            .iter()
            .map(|(k, v)| Ok(format!("{}: {}", repr_in(k, open)?, repr_in(v, open)?)))
            .collect::<Result<Vec<_>>>()?;
        return Ok(format!("{{{}}}", parts.join(", ")));
    }
    let fields = super::ffi_fields::named_field_values(o)?;
    if fields.is_empty() {
        return Ok(format!("{key}({:#x})", o.as_header() as usize));
    }
    let parts = fields
        .iter()
        .filter(|(_, flags, _)| flags & REPR_OFF == 0)
        .map(|(name, _, v)| Ok(format!("{name}={}", repr_in(v, open)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(format!("{key}({})", parts.join(", ")))
}

fn sequence(o: &ObjectRef) -> Result<Option<Vec<Value>>> {
    if let Some(l) = o.downcast::<super::ffi_containers::ListObj>() {
        return l.with(|c| c.items().iter().map(view).collect::<Result<Vec<_>>>()).map(Some);
    }
    match o.downcast::<super::container::FfiArrayObj>() {
        Some(a) => a.items().iter().map(view).collect::<Result<Vec<_>>>().map(Some),
        None => Ok(None),
    }
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![("ffi.ReprPrint", PackedFunc::from_typed(|args| Ok(Value::Str(repr(&args.to_value(0)?)?))))]
}
