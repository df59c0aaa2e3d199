//! tvm-ffi's JSON object graphs (`ffi.ToJSONGraph`, `ffi.ToJSONGraphString`,
//! `ffi.FromJSONGraph`, `ffi.FromJSONGraphString`): a value becomes
//! `{"root_index": i, "nodes": [...], "metadata": ...}` where each node is
//! `{"type": type_key, "data": ...}` and containers and object fields refer to other nodes by
//! index. Equal plain values and strings share a node, an object reached twice is one node (so
//! shared structure survives the round trip); a list or dict that holds itself cannot be
//! written. Enums are written by their index; types with `__data_to_json__` /
//! `__data_from_json__` hooks by those; other objects by their reflected fields (int, bool,
//! float and dtype fields inline, the rest by node index), made again by their creator.

use crate::abi::ffi_type_index as fti;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::base::nesting::nested;
use crate::runtime::collections::list_map::{
    bytes_of, map_items, new_map, release_all, sequence_items, text_of, ListObj,
};
use crate::runtime::extra::json::{parse, stringify};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{
    header::{self, ObjPtr, ObjectRef},
    type_table::type_index as ti,
};
use crate::runtime::reflection::fields::{all_fields, create_empty, name, set_default, set_field, HAS_DEFAULT};
use std::collections::HashMap;

fn array(items: Vec<Value>) -> Result<Value> {
    let items = items.into_iter().map(Value::into_any).collect();
    Ok(Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref()))
}

/// A JSON object (an `ffi.Map` from strings) of `pairs`, in order.
fn json_object(pairs: Vec<(&str, Value)>) -> Result<Value> {
    let pairs = pairs.into_iter().map(|(k, v)| (Value::Str(k.to_string()).into_any(), v.into_any())).collect();
    Ok(Value::Object(new_map::<{ ti::FFI_MAP }>(pairs)?))
}

/// What makes two values one node: plain data by kind and bits, text by content, objects by
/// identity.
#[derive(PartialEq, Eq, Hash)]
enum NodeKey {
    Plain(i32, u64),
    Text(Vec<u8>),
    Bytes(Vec<u8>),
    Object(usize),
}

fn node_key(v: &Value) -> NodeKey {
    if let Some(t) = text_of(v) {
        return NodeKey::Text(t.into_owned());
    }
    if let Some(b) = bytes_of(v) {
        return NodeKey::Bytes(b.into_owned());
    }
    let a = v.clone().into_any();
    // SAFETY: owned just above, released once (only its bits are kept).
    unsafe { header::release_any(&a) };
    if a.type_index >= fti::STATIC_OBJECT_BEGIN {
        NodeKey::Object(a.value as usize)
    } else {
        NodeKey::Plain(a.type_index, a.value)
    }
}

#[derive(Default)]
struct Writer {
    nodes: Vec<Value>,
    index: HashMap<NodeKey, i64>,
    open: std::collections::HashSet<usize, crate::runtime::base::addr_map::AddrHash>,
}

fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            out.push(if k <= c.len() { T[(n >> (18 - 6 * k) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

fn unbase64(s: &str) -> Result<Vec<u8>> {
    let val = |c: u8| -> Result<u32> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(Error::value(format!("invalid base64 character {:?}", c as char))),
        } as u32)
    };
    let s = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::new();
    for c in s.chunks(4) {
        let n = c.iter().enumerate().try_fold(0u32, |n, (k, &ch)| Ok::<u32, Error>(n | val(ch)? << (18 - 6 * k)))?;
        out.extend(n.to_be_bytes()[1..c.len()].iter());
    }
    Ok(out)
}

impl Writer {
    fn node(&mut self, v: &Value) -> Result<i64> {
        let key = node_key(v);
        if let Some(&i) = self.index.get(&key) {
            return Ok(i);
        }
        let (type_key, data) = nested("saving a JSON object graph", || self.encode(v))?;
        let mut pairs = vec![("type", Value::Str(type_key))];
        if let Some(d) = data {
            pairs.push(("data", d));
        }
        let i = self.nodes.len() as i64;
        self.nodes.push(json_object(pairs)?);
        self.index.insert(key, i);
        Ok(i)
    }

    /// A node's type key and data.
    fn encode(&mut self, v: &Value) -> Result<(String, Option<Value>)> {
        if let Some(t) = text_of(v) {
            return Ok(("ffi.String".into(), Some(Value::Str(String::from_utf8_lossy(&t).into_owned()))));
        }
        if let Some(b) = bytes_of(v) {
            return Ok(("ffi.Bytes".into(), Some(Value::Str(base64(&b)))));
        }
        Ok(match v {
            Value::Null => ("None".into(), None),
            Value::Bool(b) => ("bool".into(), Some(Value::Bool(*b))),
            Value::Int(i) => ("int".into(), Some(Value::Int(*i))),
            Value::Float(f) => ("float".into(), Some(Value::Float(*f))),
            Value::DataType(t) => {
                ("DataType".into(), Some(Value::Str(crate::runtime::dlpack::dtype_tvm_ffi::to_string(*t)?)))
            }
            Value::Device(d) => {
                ("Device".into(), Some(array(vec![Value::Int(d.device_type as i64), Value::Int(d.device_id as i64)])?))
            }
            Value::Object(o) => self.encode_object(o)?,
            other => return Err(Error::runtime(format!("Cannot serialize type `{}`", other.type_name()))),
        })
    }

    fn encode_object(&mut self, o: &ObjectRef) -> Result<(String, Option<Value>)> {
        let key = crate::runtime::object::type_table::type_index_to_key(o.type_index())?;
        let data = match o.type_index() {
            ti::FFI_ARRAY => self.sequence(o)?,
            ti::LIST | ti::DICT => {
                let at = o.as_header() as usize;
                if self.open.contains(&at) {
                    let what = if o.type_index() == ti::LIST { "List" } else { "Dict" };
                    return Err(Error::value(format!("Cycle detected during serialization: a {what} contains itself")));
                }
                self.open.insert(at);
                let d = if o.type_index() == ti::LIST { self.sequence(o) } else { self.map(o) };
                self.open.remove(&at);
                d?
            }
            ti::FFI_MAP => self.map(o)?,
            ti::SHAPE_TUPLE => {
                let s = o
                    .downcast::<crate::runtime::container::ShapeTupleObj>()
                    .ok_or_else(|| Error::type_error("unreadable shape"))?;
                array(s.dims()?.iter().map(|d| Value::Int(*d)).collect())?
            }
            _ => self.fields(o)?,
        };
        Ok((key, Some(data)))
    }

    fn sequence(&mut self, o: &ObjectRef) -> Result<Value> {
        let items = sequence_items(o)?.ok_or_else(|| Error::type_error("expected an array"))?;
        array(items.iter().map(|v| Ok(Value::Int(self.node(v)?))).collect::<Result<_>>()?)
    }

    fn map(&mut self, o: &ObjectRef) -> Result<Value> {
        let mut flat = Vec::new();
        for (k, v) in map_items(o)? {
            flat.push(Value::Int(self.node(&k)?));
            flat.push(Value::Int(self.node(&v)?));
        }
        array(flat)
    }

    fn fields(&mut self, o: &ObjectRef) -> Result<Value> {
        let index = o.type_index();
        if let Some(v) = enum_index(o)? {
            return Ok(v);
        }
        if let Some(Value::Func(hook)) = crate::runtime::reflection::type_info::attr(b"__data_to_json__", index) {
            return hook.call(&[Value::Object(o.clone())]);
        }
        let mut pairs = Vec::new();
        for f in all_fields(index)? {
            let v = crate::runtime::reflection::fields::get_field(o.as_header(), &f)?;
            let data = match f.field_static_type_index {
                fti::NONE => Value::Null,
                fti::BOOL | fti::INT | fti::FLOAT => v,
                fti::DATA_TYPE => match v {
                    Value::DataType(t) => Value::Str(crate::runtime::dlpack::dtype_tvm_ffi::to_string(t)?),
                    other => other,
                },
                _ => Value::Int(self.node(&v)?),
            };
            pairs.push((name(&f), data));
        }
        let pairs = pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        json_object(pairs)
    }
}

/// An enum's canonical index (int for `ffi.IntEnum`s, string for other `ffi.Enum`s).
fn enum_index(o: &ObjectRef) -> Result<Option<Value>> {
    let is = |key: &str| {
        crate::runtime::object::type_table::type_key_to_index(key)
            .and_then(|p| crate::runtime::object::type_table::derived_from(o.type_index(), p))
            .unwrap_or(false)
    };
    if !is("ffi.Enum") {
        return Ok(None);
    }
    let fields = crate::runtime::reflection::fields::named_field_values(o)?;
    let pick = |n: &str| fields.iter().find(|(k, _, _)| k == n).map(|(_, _, v)| v.clone());
    Ok(if is("ffi.IntEnum") { pick("_int_index") } else { pick("_str_index") })
}

/// `value` as a JSON object graph (with `metadata` when not None).
pub fn to_json_graph(value: &Value, metadata: Value) -> Result<Value> {
    let mut w = Writer::default();
    let root = w.node(value)?;
    let nodes = std::mem::take(&mut w.nodes);
    let mut pairs = vec![("root_index", Value::Int(root)), ("nodes", array(nodes)?)];
    if !matches!(metadata, Value::Null) {
        pairs.push(("metadata", metadata));
    }
    json_object(pairs)
}

struct Reader {
    nodes: Vec<Value>,
    done: Vec<Built>,
    /// The nodes being built, innermost last.
    path: Vec<usize>,
    /// Where the build failed: the innermost node, for the error to name (`Some(None)`: the
    /// error names it already).
    failed: Option<Option<usize>>,
}

/// Where the build of a node stands.
#[derive(Clone)]
enum Built {
    No,
    /// Its children are being built: a reference to it from one of them is a cycle.
    Building,
    Yes(Value),
}

/// Field `key` of a JSON object.
fn get(obj: &Value, key: &str) -> Result<Option<Value>> {
    let Value::Object(o) = obj else { return Ok(None) };
    if o.type_index() != ti::FFI_MAP {
        return Ok(None);
    }
    crate::runtime::collections::list_map::map_get(o, &Value::Str(key.into()))
}

fn int_of(v: &Value, what: &str) -> Result<i64> {
    v.as_int().map_err(|_| Error::value(format!("Invalid JSON Object Graph: {what} must be an integer")))
}

fn list_of(v: Option<Value>, what: &str) -> Result<Vec<Value>> {
    match v {
        Some(Value::Object(o)) if matches!(o.type_index(), ti::FFI_ARRAY | ti::LIST) => {
            sequence_items(&o)?.ok_or_else(|| Error::type_error("expected an array"))
        }
        _ => Err(Error::value(format!("Invalid JSON Object Graph: {what} must be an array"))),
    }
}

impl Reader {
    /// Node `i`, built once. Graphs list children first, so that building nodes in order finds
    /// every child built; a child listed after its parent is built then, one level deeper.
    fn node(&mut self, i: i64) -> Result<Value> {
        let referrer = self.path.last().map_or(String::from("the root index"), |r| format!("node {r}"));
        let at = usize::try_from(i).ok().filter(|&k| k < self.nodes.len()).ok_or_else(|| {
            self.failed = Some(None);
            Error::value(format!("Invalid JSON Object Graph: {referrer} refers to node {i}, which does not exist"))
        })?;
        match &self.done[at] {
            Built::Yes(v) => return Ok(v.clone()),
            Built::Building => {
                self.failed = Some(None);
                return Err(Error::value(format!(
                    "Invalid JSON Object Graph: {referrer} refers to node {at}, which contains it (a cycle)"
                )));
            }
            Built::No => {}
        }
        self.done[at] = Built::Building;
        self.path.push(at);
        let node = self.nodes[at].clone();
        let v = nested("loading a JSON object graph", || self.decode(&node));
        self.path.pop();
        let v = v.inspect_err(|_| {
            self.failed.get_or_insert(Some(at));
        })?;
        self.done[at] = Built::Yes(v.clone());
        Ok(v)
    }

    fn decode(&mut self, node: &Value) -> Result<Value> {
        let type_key = get(node, "type")?.and_then(|t| text_of(&t).map(|t| String::from_utf8_lossy(&t).into_owned()));
        let type_key = type_key.ok_or_else(|| Error::value("Invalid JSON Object Graph: a node has no `type`"))?;
        let data = get(node, "data")?.unwrap_or(Value::Null);
        let text = |d: &Value| {
            text_of(d)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .ok_or_else(|| Error::value("expected a string"))
        };
        Ok(match type_key.as_str() {
            "None" => Value::Null,
            "bool" => Value::Bool(data.as_int()? != 0),
            "int" => Value::Int(data.as_int()?),
            "float" => match data {
                Value::Int(i) => Value::Float(i as f64),
                Value::Float(f) => Value::Float(f),
                _ => return Err(Error::value("Invalid JSON Object Graph: float data must be a number")),
            },
            "DataType" => Value::DataType(crate::runtime::dlpack::dtype_tvm_ffi::parse(&text(&data)?)?),
            "Device" => {
                let d = list_of(Some(data), "Device data")?;
                if d.len() != 2 {
                    return Err(Error::value(format!("Invalid JSON Object Graph: Device data must be an array of [device_type, device_id], got {} element(s)", d.len())));
                }
                Value::Device(crate::abi::DLDevice {
                    device_type: d[0].as_int()? as i32,
                    device_id: d[1].as_int()? as i32,
                })
            }
            "ffi.String" => Value::Str(text(&data)?),
            "ffi.Bytes" => Value::Bytes(unbase64(&text(&data)?)?),
            "ffi.Array" | "ffi.List" => self.sequence(&type_key, data)?,
            "ffi.Map" | "ffi.Dict" => self.map(&type_key, data)?,
            "ffi.Shape" => {
                let dims = list_of(Some(data), "Shape data")?.iter().map(|d| d.as_int()).collect::<Result<Vec<_>>>()?;
                Value::Object(crate::runtime::container::shape_object(&dims))
            }
            _ => self.object(&type_key, data)?,
        })
    }

    fn sequence(&mut self, key: &str, data: Value) -> Result<Value> {
        let indexes = list_of(Some(data), "sequence data")?;
        let mut items = Vec::with_capacity(indexes.len());
        for i in &indexes {
            match int_of(i, "a node index").and_then(|i| self.node(i)) {
                Ok(v) => items.push(v.into_any()),
                Err(e) => {
                    release_all(items);
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(if key == "ffi.List" {
            ObjPtr::new(ListObj::new(items)?).to_object_ref()
        } else {
            crate::runtime::container::FfiArrayObj::new(items).to_object_ref()
        }))
    }

    fn map(&mut self, key: &str, data: Value) -> Result<Value> {
        let flat = list_of(Some(data), "Map/Dict data")?;
        if flat.len() % 2 != 0 {
            return Err(Error::value(format!(
                "Invalid JSON Object Graph: Map/Dict data must contain an even number of [key, value] entries, got {}",
                flat.len()
            )));
        }
        let mut pairs = Vec::new();
        for kv in flat.chunks(2) {
            let node = |r: &mut Self, at: &Value| int_of(at, "a node index").and_then(|i| r.node(i));
            match node(self, &kv[0]).and_then(|k| Ok((k, node(self, &kv[1])?))) {
                Ok((k, v)) => pairs.push((k.into_any(), v.into_any())),
                Err(e) => {
                    release_all(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect());
                    return Err(e);
                }
            }
        }
        Ok(Value::Object(if key == "ffi.Dict" {
            new_map::<{ ti::DICT }>(pairs)?
        } else {
            new_map::<{ ti::FFI_MAP }>(pairs)?
        }))
    }

    fn object(&mut self, key: &str, data: Value) -> Result<Value> {
        let index = crate::runtime::object::type_table::type_key_to_index(key)?;
        if let Some(v) = enum_by_index(index, &data)? {
            return Ok(v);
        }
        if let Some(Value::Func(hook)) = crate::runtime::reflection::type_info::attr(b"__data_from_json__", index) {
            return hook.call(&[data]);
        }
        let obj = create_empty(index)?;
        for f in all_fields(index)? {
            match get(&data, &name(&f))? {
                Some(v) => {
                    let v = match f.field_static_type_index {
                        fti::NONE => Value::Null,
                        fti::BOOL | fti::INT | fti::FLOAT => v,
                        fti::DATA_TYPE => Value::DataType(crate::runtime::dlpack::dtype_tvm_ffi::parse(
                            &String::from_utf8_lossy(&text_of(&v).unwrap_or_default()),
                        )?),
                        _ => self.node(int_of(&v, "a field's node index")?)?,
                    };
                    set_field(obj.as_header(), &f, v)?;
                }
                None if f.flags & HAS_DEFAULT != 0 => set_default(obj.as_header(), &f)?,
                None => {
                    return Err(Error::type_error(format!("Required field `{}` not set in type `{key}`", name(&f))))
                }
            }
        }
        Ok(Value::Object(obj))
    }
}

/// The registered enum instance of type `index` with canonical index `data`, for enum types.
fn enum_by_index(index: u32, data: &Value) -> Result<Option<Value>> {
    let is = |key: &str| {
        crate::runtime::object::type_table::type_key_to_index(key)
            .and_then(|p| crate::runtime::object::type_table::derived_from(index, p))
            .unwrap_or(false)
    };
    if !is("ffi.Enum") {
        return Ok(None);
    }
    let state = crate::runtime::reflection::type_info::attr(b"__ffi_enum__", index);
    let indexes = match &state {
        Some(Value::Object(s)) => crate::runtime::reflection::fields::named_field_values(s)?
            .into_iter()
            .find(|(n, _, _)| n == "indexes")
            .map(|(_, _, v)| v),
        _ => None,
    };
    let found = match indexes {
        Some(Value::Object(d)) => crate::runtime::collections::list_map::map_get(&d, data)?,
        _ => None,
    };
    found.map(Some).ok_or_else(|| {
        Error::value(format!(
            "Enum `{}` has no instance with index {data:?}",
            crate::runtime::object::type_table::type_index_to_key(index).unwrap_or_default()
        ))
    })
}

/// The value a JSON object graph describes.
pub fn from_json_graph(graph: &Value) -> Result<Value> {
    if !matches!(graph, Value::Object(o) if o.type_index() == ti::FFI_MAP) {
        return Err(Error::value("Invalid JSON Object Graph, expected an object"));
    }
    let root = match get(graph, "root_index")? {
        Some(Value::Int(i)) => i,
        _ => return Err(Error::value("Invalid JSON Object Graph, expected `root_index` integer field")),
    };
    let nodes = list_of(get(graph, "nodes")?, "`nodes`")
        .map_err(|_| Error::value("Invalid JSON Object Graph, expected `nodes` array field"))?;
    let mut r = Reader { done: vec![Built::No; nodes.len()], nodes, path: Vec::new(), failed: None };
    // Children first, so that no build recurses in a graph listed as writers list them.
    let built = (0..root.clamp(0, r.nodes.len() as i64)).try_for_each(|i| r.node(i).map(drop));
    built.and_then(|()| r.node(root)).map_err(|e| match r.failed {
        Some(Some(at)) => e.context(format!("node {at}")),
        _ => e,
    })
}

fn metadata_arg(args: &crate::runtime::function::packed::Args<'_>) -> Result<Value> {
    if args.len() > 1 {
        args.to_value(1)
    } else {
        Ok(Value::Null)
    }
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("ffi.ToJSONGraph", PackedFunc::from_typed(|args| to_json_graph(&args.to_value(0)?, metadata_arg(&args)?))),
        (
            "ffi.ToJSONGraphString",
            PackedFunc::from_typed(|args| {
                Ok(Value::Str(stringify(&to_json_graph(&args.to_value(0)?, metadata_arg(&args)?)?, 0)?))
            }),
        ),
        ("ffi.FromJSONGraph", PackedFunc::from_typed(|args| from_json_graph(&args.to_value(0)?))),
        ("ffi.FromJSONGraphString", PackedFunc::from_typed(|args| from_json_graph(&parse(&args.string(0)?)?))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_round_trips_in_tvm_ffis_forms() {
        let text = r#"{"b":[1,2.5,"x\n",null,true,NaN],"a":{"k":-Infinity}}"#;
        let v = parse(text).unwrap();
        assert_eq!(stringify(&v, 0).unwrap(), text, "keys keep their order; numbers keep their form");
        assert_eq!(stringify(&parse("[1.0, 3]").unwrap(), 2).unwrap(), "[\n  1.0,\n  3\n]");
        assert!(parse("[1,").is_err() && parse("{1:2}").is_err() && parse(&"[".repeat(5000)).is_err());
    }

    #[test]
    fn object_graphs_share_nodes_and_round_trip() {
        let shared = Value::Object(crate::runtime::container::shape_object(&[2, 3]));
        let list = ObjPtr::new(
            ListObj::new(vec![shared.clone().into_any(), shared.into_any(), Value::Int(7).into_any()]).unwrap(),
        );
        let graph = to_json_graph(&Value::Object(list.to_object_ref()), Value::Null).unwrap();
        let text = stringify(&graph, 0).unwrap();
        assert!(text.contains(r#""type":"ffi.Shape""#) && text.matches("ffi.Shape").count() == 1, "{text}");
        let Value::Object(back) = from_json_graph(&parse(&text).unwrap()).unwrap() else { panic!("an object") };
        let items = sequence_items(&back).unwrap().unwrap();
        let (Value::Object(x), Value::Object(y)) = (&items[0], &items[1]) else { panic!("shapes") };
        assert_eq!(x.as_header(), y.as_header(), "one node, one object");
        assert!(matches!(items[2], Value::Int(7)));
        assert!(from_json_graph(&parse(r#"{"root_index":5,"nodes":[]}"#).unwrap()).is_err());
    }
}
