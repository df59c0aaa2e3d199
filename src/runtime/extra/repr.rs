//! tvm-ffi's `ffi.ReprPrint`: a readable text for any value, in tvm-ffi's notation: plain
//! values as Python writes them (floats in their shortest form), strings quoted, an `ffi.Array`
//! as a tuple `(a, b)` / `(a,)`, a list in brackets, maps in braces, a shape `Shape(5, 6)`, a
//! tensor `float32[3, 4]@cpu:0`, a device `cpu:0`, an object with reflected fields as
//! `type_key(field=value, ...)` (fields marked repr-off left out) or as its type's
//! `__ffi_repr__` hook writes it, any other object as its type key and address. An object met
//! again inside itself is written as `...`.

use crate::runtime::base::error::Result;
use crate::runtime::base::nesting::nested;
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{header::ObjectRef, type_table::type_index as ti};
use std::collections::{HashMap, HashSet};

const REPR_OFF: i64 = 1 << 6;

/// The text of `v`.
pub fn repr(v: &Value) -> Result<String> {
    let saved = SHOW_ADDR.with(|a| a.replace(std::env::var("TVM_FFI_REPR_WITH_ADDR").is_ok_and(|v| v == "1")));
    let mut open = Walk::default();
    let text = repr_in(v, &mut open);
    SHOW_ADDR.with(|a| a.set(saved));
    text
}

thread_local! {
    /// Whether objects are written with their address (`TVM_FFI_REPR_WITH_ADDR=1`, read per call).
    static SHOW_ADDR: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `@0x...` after an object when addresses are shown, else nothing.
fn at(addr: usize) -> String {
    if SHOW_ADDR.with(|a| a.get()) {
        format!("@{addr:#x}")
    } else {
        String::new()
    }
}

/// The shorter of a float's shortest fixed and scientific forms (fixed on a tie), as C++'s
/// `std::to_chars` writes it.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let fixed = format!("{f}");
    let sci = format!("{f:e}");
    let sci = match sci.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => sci,
    };
    if sci.len() < fixed.len() {
        sci
    } else {
        fixed
    }
}

fn device_text(d: &crate::abi::DLDevice) -> String {
    const NAMES: [(i32, &str); 16] = [
        (1, "cpu"),
        (2, "cuda"),
        (3, "cuda_host"),
        (4, "opencl"),
        (7, "vulkan"),
        (8, "metal"),
        (9, "vpi"),
        (10, "rocm"),
        (11, "rocm_host"),
        (12, "ext_dev"),
        (13, "cuda_managed"),
        (14, "oneapi"),
        (15, "webgpu"),
        (16, "hexagon"),
        (17, "maia"),
        (18, "trn"),
    ];
    let t = d.device_type;
    let name = NAMES.iter().find(|(k, _)| *k == t).map_or_else(|| format!("device{t}"), |(_, n)| n.to_string());
    format!("{name}:{}", d.device_id)
}

fn tensor_text(t: &crate::runtime::tensor::ndarray::NDArray) -> Result<String> {
    // SAFETY: the tensor's own DLTensor, alive while `t` is.
    let dl = unsafe { &*t.as_dltensor_ptr() };
    let dims = t.shape().iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    Ok(format!("{}[{dims}]@{}", crate::runtime::dlpack::dtype_tvm_ffi::to_string(dl.dtype)?, device_text(&dl.device)))
}

fn repr_in(v: &Value, open: &mut Walk) -> Result<String> {
    if let Some(t) = crate::runtime::collections::list_map::text_of(v) {
        return Ok(crate::runtime::reflection::records::json_string(&String::from_utf8_lossy(&t)));
    }
    Ok(match v {
        Value::Null => "None".into(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Float(f) => float_text(*f),
        Value::Str(s) => crate::runtime::reflection::records::json_string(s),
        Value::Bytes(b) => {
            format!("b{}", crate::runtime::reflection::records::json_string(&String::from_utf8_lossy(b)))
        }
        Value::DataType(t) => crate::runtime::dlpack::dtype_tvm_ffi::to_string(*t)?,
        Value::Device(d) => device_text(d),
        Value::NDArray(t) => {
            let a = v.clone().into_any();
            // SAFETY: owned just above, released once (only its address is kept).
            unsafe { crate::runtime::object::header::release_any(&a) };
            format!("{}{}", tensor_text(t)?, at(a.value as usize))
        }
        Value::Object(o) => repr_object(o, open)?,
        other => format!("{other:?}"),
    })
}

fn join(items: Vec<Value>, open: &mut Walk) -> Result<String> {
    Ok(items.iter().map(|v| repr_in(v, open)).collect::<Result<Vec<_>>>()?.join(", "))
}

/// The most text one repr makes: a value that shares objects many times over (a list of two
/// references to a list of two references to ...) would print exponentially.
const MAX_TEXT: usize = 64 << 20;

/// A repr's walk: the objects being printed (one met again inside itself is a cycle, printed
/// `...`), the text of each object printed (printed once, as tvm-ffi's printer does), and how
/// much text it has repeated from those.
#[derive(Default)]
struct Walk {
    open: HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
    done: HashMap<usize, String, crate::runtime::base::addr_map::AddrHash>,
    made: usize,
}

fn repr_object(o: &ObjectRef, open: &mut Walk) -> Result<String> {
    let addr = o.as_header() as usize;
    if let Some(text) = open.done.get(&addr) {
        open.made += text.len();
        if open.made > MAX_TEXT {
            return Err(crate::runtime::base::error::Error::value(format!(
                "repr: the text passes {} MiB (objects shared many times over)",
                MAX_TEXT >> 20
            )));
        }
        return Ok(text.clone());
    }
    if !open.open.insert(addr) {
        return Ok(format!("...{}", at(addr)));
    }
    let text = nested("repr", || repr_object_body(o, open));
    open.open.remove(&addr);
    let text = text?;
    // Kept for another visit only when something else holds the object: the walk's own
    // reference and its holder's are two (keeping every level of a deep value would copy it
    // quadratically).
    // SAFETY: `o` is a live reference.
    if unsafe { crate::runtime::object::header::strong_count(o.as_header()) } > 2 {
        open.done.insert(addr, text.clone());
    }
    Ok(text)
}

fn repr_object_body(o: &ObjectRef, open: &mut Walk) -> Result<String> {
    let key = crate::runtime::object::type_table::type_index_to_key(o.type_index())?;
    if let Some(Value::Func(hook)) = crate::runtime::reflection::type_info::attr(b"__ffi_repr__", o.type_index()) {
        let nested = PackedFunc::from_typed(|a| Ok(Value::Str(repr(&a.to_value(0)?)?)));
        return match hook.call(&[Value::Object(o.clone()), Value::Func(nested)])? {
            Value::Object(s) => Ok(crate::runtime::collections::list_map::text_of(&Value::Object(s))
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default()),
            Value::Str(s) => Ok(s),
            other => Err(crate::runtime::base::error::Error::type_error(format!("__ffi_repr__ returned {other:?}"))),
        };
    }
    let enum_index = crate::runtime::object::type_table::type_key_to_index("ffi.Enum");
    if enum_index.and_then(|e| crate::runtime::object::type_table::derived_from(o.type_index(), e)).unwrap_or(false) {
        let fields = crate::runtime::reflection::fields::named_field_values(o)?;
        if let Some((_, _, name)) = fields.iter().find(|(n, _, _)| n == "_str_index") {
            let name =
                crate::runtime::collections::list_map::text_of(name).map(|t| String::from_utf8_lossy(&t).into_owned());
            return Ok(format!("{key}.{}", name.unwrap_or_default()));
        }
    }
    if let Some(dims) =
        o.downcast::<crate::runtime::container::ShapeTupleObj>().and_then(|s| s.dims().ok().map(<[i64]>::to_vec))
    {
        return Ok(format!("Shape({})", dims.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")));
    }
    if let Some(items) = crate::runtime::collections::list_map::sequence_items(o)? {
        let one = items.len() == 1;
        let inner = join(items, open)?;
        let text = match o.type_index() {
            ti::FFI_ARRAY if one => format!("({inner},)"),
            ti::FFI_ARRAY => format!("({inner})"),
            _ => format!("[{inner}]"),
        };
        return Ok(text + &at(o.as_header() as usize));
    }
    if matches!(o.type_index(), ti::FFI_MAP | ti::DICT) {
        let entries = crate::runtime::collections::list_map::map_items(o)?;
        let parts = entries
            .iter()
            .map(|(k, v)| Ok(format!("{}: {}", repr_in(k, open)?, repr_in(v, open)?)))
            .collect::<Result<Vec<_>>>()?;
        return Ok(format!("{{{}}}{}", parts.join(", "), at(o.as_header() as usize)));
    }
    let fields = crate::runtime::reflection::fields::named_field_values(o)?;
    if fields.is_empty() && SHOW_ADDR.with(|a| a.get()) {
        return Ok(format!("{key}{}", at(o.as_header() as usize)));
    }
    if fields.is_empty() {
        return Ok(format!("{key}({:#x})", o.as_header() as usize));
    }
    let parts = fields
        .iter()
        .filter(|(_, flags, _)| flags & REPR_OFF == 0)
        .map(|(name, _, v)| Ok(format!("{name}={}", repr_in(v, open)?)))
        .collect::<Result<Vec<_>>>()?;
    if parts.is_empty() && SHOW_ADDR.with(|a| a.get()) {
        return Ok(format!("{key}{}", at(o.as_header() as usize)));
    }
    Ok(format!("{key}{}({})", at(o.as_header() as usize), parts.join(", ")))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![("ffi.ReprPrint", PackedFunc::from_typed(|args| Ok(Value::Str(repr(&args.to_value(0)?)?))))]
}
