//! Graph JSON as TVM's graph executor reads it, parsed and validated before anything is
//! allocated. Every failure names the node, the field and the value.

use crate::abi::DLDataType;
use crate::runtime::base::error::{count, Error, Result};
use crate::runtime::dlpack::dtype::data_size;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// A reference to output `index` of node `node_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeEntry {
    pub node_id: u32,
    pub index: u32,
}

/// Attributes of a `tvm_op` node.
#[derive(Clone, Debug, Default)]
pub struct OpAttrs {
    pub func_name: String,
    pub num_inputs: u32,
    pub num_outputs: u32,
    pub flatten_data: bool,
    /// Other string attributes (`hash`, layouts, ...), kept for profiling.
    pub extra: BTreeMap<String, String>,
}

#[derive(Clone, Debug)]
pub struct Node {
    /// `"null"` for inputs, `"tvm_op"` for kernels.
    pub op: String,
    pub name: String,
    pub inputs: Vec<NodeEntry>,
    pub attrs: Option<OpAttrs>,
    pub control_deps: Vec<u32>,
}

impl Node {
    pub fn is_op(&self) -> bool {
        self.op != "null"
    }
}

/// Per-entry attributes.
#[derive(Clone, Debug, Default)]
pub struct GraphAttrs {
    pub dltype: Vec<DLDataType>,
    pub storage_id: Vec<u32>,
    pub shape: Vec<Vec<i64>>,
    /// Device *type* of each entry, when given.
    pub device_index: Option<Vec<i32>>,
    pub storage_scope: Option<Vec<String>>,
}

/// A parsed and validated graph.
#[derive(Clone, Debug)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub arg_nodes: Vec<u32>,
    pub node_row_ptr: Vec<u32>,
    pub heads: Vec<NodeEntry>,
    pub attrs: GraphAttrs,
}

fn err(msg: impl std::fmt::Display) -> Error {
    Error::value(format!("graph JSON: {msg}"))
}

fn as_u32(v: &Json, what: &dyn Fn() -> String) -> Result<u32> {
    v.as_u64()
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| err(format!("{} must be a non-negative 32-bit integer, got {v}", what())))
}

fn as_array<'a>(v: &'a Json, what: &dyn Fn() -> String) -> Result<&'a Vec<Json>> {
    v.as_array().ok_or_else(|| err(format!("{} must be an array, got {}", what(), kind(v))))
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn parse_entry(v: &Json, what: &dyn Fn() -> String) -> Result<NodeEntry> {
    let a = as_array(v, what)?;
    if a.len() != 2 && a.len() != 3 {
        return Err(err(format!("{} must be [node_id, index] or [node_id, index, version], got {v}", what())));
    }
    Ok(NodeEntry {
        node_id: as_u32(&a[0], &|| format!("{} node_id", what()))?,
        index: as_u32(&a[1], &|| format!("{} index", what()))?,
    })
}

fn attr_string(v: &Json, node: &str, key: &str) -> Result<String> {
    match v {
        Json::String(s) => Ok(s.clone()),
        // Some writers emit numbers; accept them as their decimal text.
        Json::Number(n) => Ok(n.to_string()),
        _ => Err(err(format!("node `{node}`: attr `{key}` must be a string, got {}", kind(v)))),
    }
}

fn parse_op_attrs(obj: &Map<String, Json>, node: &str) -> Result<OpAttrs> {
    let mut a = OpAttrs::default();
    let mut seen = [false; 4];
    for (k, v) in obj {
        let s = attr_string(v, node, k)?;
        let num = |s: &str| -> Result<u32> {
            s.trim()
                .parse::<u32>()
                .map_err(|_| err(format!("node `{node}`: attr `{k}` must be a non-negative integer, got `{s}`")))
        };
        match k.as_str() {
            "func_name" => {
                a.func_name = s;
                seen[0] = true;
            }
            "num_inputs" => {
                a.num_inputs = num(&s)?;
                seen[1] = true;
            }
            "num_outputs" => {
                a.num_outputs = num(&s)?;
                seen[2] = true;
            }
            "flatten_data" => {
                a.flatten_data = num(&s)? != 0;
                seen[3] = true;
            }
            _ => {
                a.extra.insert(k.clone(), s);
            }
        }
    }
    for (i, name) in ["func_name", "num_inputs", "num_outputs", "flatten_data"].iter().enumerate() {
        if !seen[i] {
            return Err(err(format!("node `{node}`: attrs lack `{name}`")));
        }
    }
    Ok(a)
}

fn parse_node(v: &Json, id: usize) -> Result<Node> {
    let obj = v.as_object().ok_or_else(|| err(format!("node {id} must be an object, got {}", kind(v))))?;
    let mut op = None;
    let mut name = None;
    let mut inputs = None;
    let mut attrs = None;
    let mut control_deps = Vec::new();
    for (k, val) in obj {
        match k.as_str() {
            "op" => {
                op = Some(val.as_str().ok_or_else(|| err(format!("node {id}: `op` must be a string")))?.to_string())
            }
            "name" => {
                name = Some(val.as_str().ok_or_else(|| err(format!("node {id}: `name` must be a string")))?.to_string())
            }
            "inputs" => inputs = Some(val),
            "attrs" | "attr" => attrs = Some(val),
            "control_deps" => {
                for (j, d) in as_array(val, &|| format!("node {id} control_deps"))?.iter().enumerate() {
                    control_deps.push(as_u32(d, &|| format!("node {id} control_deps[{j}]"))?);
                }
            }
            other => return Err(err(format!("node {id}: unknown key `{other}`"))),
        }
    }
    let op = op.ok_or_else(|| err(format!("node {id} lacks `op`")))?;
    let name = name.ok_or_else(|| err(format!("node {id} lacks `name`")))?;
    if name.contains('\0') {
        return Err(err(format!("node {id}: name {name:?} contains a NUL character")));
    }
    let inputs_json = inputs.ok_or_else(|| err(format!("node {id} (`{name}`) lacks `inputs`")))?;
    let inputs = as_array(inputs_json, &|| format!("node `{name}` inputs"))?
        .iter()
        .enumerate()
        .map(|(j, e)| parse_entry(e, &|| format!("node `{name}` inputs[{j}]")))
        .collect::<Result<Vec<_>>>()?;
    let attrs = match attrs {
        None => None,
        Some(a) => {
            let o = a.as_object().ok_or_else(|| err(format!("node `{name}`: attrs must be an object")))?;
            if o.is_empty() {
                None
            } else {
                Some(parse_op_attrs(o, &name)?)
            }
        }
    };
    match op.as_str() {
        "null" => {}
        "tvm_op" => {
            if attrs.is_none() {
                return Err(err(format!("node `{name}`: op `tvm_op` needs attrs with func_name")));
            }
        }
        other => return Err(err(format!("node `{name}`: unknown op `{other}` (expected `null` or `tvm_op`)"))),
    }
    Ok(Node { op, name, inputs, attrs, control_deps })
}

fn tagged_list<'a>(attrs: &'a Map<String, Json>, key: &str, tag: &str) -> Result<Option<&'a Vec<Json>>> {
    let Some(v) = attrs.get(key) else { return Ok(None) };
    let pair = as_array(v, &|| format!("attrs.{key}"))?;
    if pair.len() != 2 {
        return Err(err(format!("attrs.{key} must be [type_tag, data]")));
    }
    let got = pair[0].as_str().unwrap_or("");
    if got != tag {
        return Err(err(format!("attrs.{key} must have tag `{tag}`, got {}", pair[0])));
    }
    Ok(Some(as_array(&pair[1], &|| format!("attrs.{key} data"))?))
}

fn parse_attrs(v: &Json) -> Result<GraphAttrs> {
    let obj = v.as_object().ok_or_else(|| err("attrs must be an object"))?;
    let mut a = GraphAttrs::default();
    let dltype = tagged_list(obj, "dltype", "list_str")?.ok_or_else(|| err("attrs lack `dltype`"))?;
    for (i, t) in dltype.iter().enumerate() {
        let s = t.as_str().ok_or_else(|| err(format!("attrs.dltype[{i}] must be a string")))?;
        a.dltype.push(DLDataType::parse(s).map_err(|_| err(format!("attrs.dltype[{i}]: unknown dtype `{s}`")))?);
    }
    let sid = tagged_list(obj, "storage_id", "list_int")?.ok_or_else(|| err("attrs lack `storage_id`"))?;
    for (i, s) in sid.iter().enumerate() {
        a.storage_id.push(as_u32(s, &|| format!("attrs.storage_id[{i}]"))?);
    }
    let shape = tagged_list(obj, "shape", "list_shape")?.ok_or_else(|| err("attrs lack `shape`"))?;
    for (i, s) in shape.iter().enumerate() {
        let dims = as_array(s, &|| format!("attrs.shape[{i}]"))?;
        let mut out = Vec::with_capacity(dims.len());
        for d in dims {
            let x = match (d.as_i64(), d.as_u64()) {
                (Some(x), _) => x,
                (None, Some(_)) => return Err(err(format!("attrs.shape[{i}] has a dim {d} out of range (int64)"))),
                _ => return Err(err(format!("attrs.shape[{i}] has a non-integer dim {d}"))),
            };
            if x < 0 {
                return Err(err(format!("attrs.shape[{i}] has a negative dim {x}")));
            }
            out.push(x);
        }
        a.shape.push(out);
    }
    if let Some(dev) = tagged_list(obj, "device_index", "list_int")? {
        let mut v = Vec::with_capacity(dev.len());
        for (i, d) in dev.iter().enumerate() {
            let x = d.as_i64().and_then(|x| i32::try_from(x).ok()).filter(|&x| x > 0);
            v.push(x.ok_or_else(|| err(format!("attrs.device_index[{i}] must be a positive device type, got {d}")))?);
        }
        a.device_index = Some(v);
    }
    if let Some(sc) = tagged_list(obj, "storage_scope", "list_str")? {
        let v = sc
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(str::to_string).ok_or_else(|| err(format!("attrs.storage_scope[{i}] must be a string")))
            })
            .collect::<Result<Vec<_>>>()?;
        a.storage_scope = Some(v);
    }
    for (k, v) in obj {
        if !matches!(k.as_str(), "dltype" | "storage_id" | "shape" | "device_index" | "storage_scope") {
            // Other attrs are skipped, but must carry one of TVM's list tags.
            let tag = v.as_array().and_then(|p| p.first()).and_then(|t| t.as_str()).unwrap_or("");
            if !matches!(tag, "list_int" | "size_t" | "list_str" | "list_shape") {
                return Err(err(format!("attrs.{k} has unknown type tag `{tag}`")));
            }
        }
    }
    Ok(a)
}

impl Graph {
    /// Parse and validate graph JSON text.
    pub fn parse(text: &str) -> Result<Graph> {
        let v: Json = serde_json::from_str(text).map_err(|e| err(format!("not valid JSON: {e}")))?;
        Self::from_json(&v)
    }

    pub fn from_json(v: &Json) -> Result<Graph> {
        let obj = v.as_object().ok_or_else(|| err(format!("top level must be an object, got {}", kind(v))))?;
        let (mut nodes, mut arg_nodes, mut row_ptr, mut heads, mut attrs) = (None, None, None, None, None);
        for (k, val) in obj {
            match k.as_str() {
                "nodes" => nodes = Some(val),
                "arg_nodes" => arg_nodes = Some(val),
                "node_row_ptr" => row_ptr = Some(val),
                "heads" => heads = Some(val),
                "attrs" => attrs = Some(val),
                "metadata" => {}
                other => return Err(err(format!("unknown top-level key `{other}`"))),
            }
        }
        let nodes = as_array(nodes.ok_or_else(|| err("missing `nodes`"))?, &|| "nodes".into())?
            .iter()
            .enumerate()
            .map(|(i, n)| parse_node(n, i))
            .collect::<Result<Vec<_>>>()?;
        let arg_nodes = as_array(arg_nodes.ok_or_else(|| err("missing `arg_nodes`"))?, &|| "arg_nodes".into())?
            .iter()
            .enumerate()
            .map(|(i, x)| as_u32(x, &|| format!("arg_nodes[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let node_row_ptr = as_array(row_ptr.ok_or_else(|| err("missing `node_row_ptr`"))?, &|| "node_row_ptr".into())?
            .iter()
            .enumerate()
            .map(|(i, x)| as_u32(x, &|| format!("node_row_ptr[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let heads = as_array(heads.ok_or_else(|| err("missing `heads`"))?, &|| "heads".into())?
            .iter()
            .enumerate()
            .map(|(i, e)| parse_entry(e, &|| format!("heads[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let attrs = parse_attrs(attrs.ok_or_else(|| err("missing `attrs`"))?)?;
        let g = Graph { nodes, arg_nodes, node_row_ptr, heads, attrs };
        g.validate()?;
        Ok(g)
    }

    pub fn num_entries(&self) -> usize {
        *self.node_row_ptr.last().unwrap_or(&0) as usize
    }

    /// Entry id of output `index` of `node_id`.
    pub fn entry_id(&self, node_id: u32, index: u32) -> usize {
        (self.node_row_ptr[node_id as usize] + index) as usize
    }

    pub fn entry_of(&self, e: NodeEntry) -> usize {
        self.entry_id(e.node_id, e.index)
    }

    pub fn num_outputs_of(&self, node_id: usize) -> u32 {
        self.node_row_ptr[node_id + 1] - self.node_row_ptr[node_id]
    }

    /// Check the structure once, in a fixed order (the first problem found is reported).
    fn validate(&self) -> Result<()> {
        self.check_row_ptr()?;
        self.check_attr_lengths()?;
        for (i, node) in self.nodes.iter().enumerate() {
            self.check_node_kind(i, node)?;
            self.check_node_inputs(i, node)?;
            self.check_control_deps(node)?;
        }
        self.check_arg_nodes()?;
        self.check_heads()?;
        self.check_entry_sizes()?;
        self.check_storage_devices()
    }

    /// `node_row_ptr`: one entry per node plus one, starting at 0, never decreasing.
    fn check_row_ptr(&self) -> Result<()> {
        let n = self.nodes.len();
        let rp = &self.node_row_ptr;
        if rp.len() != n + 1 {
            return Err(err(format!("node_row_ptr has {} entries for {n} nodes (expected {})", rp.len(), n + 1)));
        }
        if rp[0] != 0 {
            return Err(err(format!("node_row_ptr[0] must be 0, got {}", rp[0])));
        }
        match (0..n).find(|&i| rp[i + 1] < rp[i]) {
            Some(i) => Err(err(format!("node_row_ptr is decreasing at {}", i + 1))),
            None => Ok(()),
        }
    }

    /// Every per-entry attribute list has one item per entry.
    fn check_attr_lengths(&self) -> Result<()> {
        let total = self.num_entries();
        let a = &self.attrs;
        let required = [("dltype", a.dltype.len()), ("storage_id", a.storage_id.len()), ("shape", a.shape.len())];
        let optional = [
            ("device_index", a.device_index.as_ref().map(Vec::len)),
            ("storage_scope", a.storage_scope.as_ref().map(Vec::len)),
        ];
        let present = optional.into_iter().filter_map(|(name, len)| len.map(|len| (name, len)));
        for (name, len) in required.into_iter().chain(present) {
            if len != total {
                return Err(err(format!("attrs.{name} has {len} entries but the graph has {total}")));
            }
        }
        Ok(())
    }

    /// An op node has the outputs its attrs declare and a function; any other node is an
    /// input: one output, no inputs.
    fn check_node_kind(&self, i: usize, node: &Node) -> Result<()> {
        let outs = self.num_outputs_of(i);
        match &node.attrs {
            Some(at) if node.is_op() => {
                if at.num_outputs != outs {
                    return Err(err(format!(
                        "node `{}`: num_outputs is {} but node_row_ptr gives it {}",
                        node.name,
                        at.num_outputs,
                        count(outs as usize, "output")
                    )));
                }
                if at.func_name.is_empty() {
                    return Err(err(format!("node `{}`: empty func_name", node.name)));
                }
            }
            _ => {
                if outs != 1 {
                    return Err(err(format!(
                        "input node `{}` must have 1 output, node_row_ptr gives {outs}",
                        node.name
                    )));
                }
                if !node.inputs.is_empty() {
                    return Err(err(format!("input node `{}` must not have inputs", node.name)));
                }
            }
        }
        Ok(())
    }

    /// Inputs of node `i` are existing outputs of earlier nodes (topological order).
    fn check_node_inputs(&self, i: usize, node: &Node) -> Result<()> {
        for (j, e) in node.inputs.iter().enumerate() {
            if e.node_id as usize >= i {
                return Err(err(format!(
                    "node `{}` inputs[{j}] refers to node {}, which does not come before it (nodes must be in topological order)",
                    node.name, e.node_id
                )));
            }
            let outs = self.num_outputs_of(e.node_id as usize);
            if e.index >= outs {
                return Err(err(format!(
                    "node `{}` inputs[{j}] refers to output {} of node {}, which has {}",
                    node.name,
                    e.index,
                    e.node_id,
                    count(outs as usize, "output")
                )));
            }
        }
        Ok(())
    }

    fn check_control_deps(&self, node: &Node) -> Result<()> {
        let n = self.nodes.len();
        match node.control_deps.iter().find(|&&d| d as usize >= n) {
            Some(d) => Err(err(format!("node `{}` control_deps refers to node {d} of {n}", node.name))),
            None => Ok(()),
        }
    }

    /// `arg_nodes` name existing input (non-op) nodes.
    fn check_arg_nodes(&self) -> Result<()> {
        let n = self.nodes.len();
        for (i, &a_id) in self.arg_nodes.iter().enumerate() {
            let node = self
                .nodes
                .get(a_id as usize)
                .ok_or_else(|| err(format!("arg_nodes[{i}] = {a_id} is out of range ({n} nodes)")))?;
            if node.is_op() {
                return Err(err(format!("arg_nodes[{i}] = {a_id} (`{}`) is an op, not an input", node.name)));
            }
        }
        Ok(())
    }

    /// `heads` name existing outputs.
    fn check_heads(&self) -> Result<()> {
        let n = self.nodes.len();
        for (i, h) in self.heads.iter().enumerate() {
            if h.node_id as usize >= n || h.index >= self.num_outputs_of(h.node_id as usize) {
                return Err(err(format!("heads[{i}] = [{}, {}] is out of range", h.node_id, h.index)));
            }
        }
        Ok(())
    }

    /// Every entry's shape and dtype give a representable byte size.
    fn check_entry_sizes(&self) -> Result<()> {
        let a = &self.attrs;
        for (eid, (shape, &dtype)) in a.shape.iter().zip(&a.dltype).enumerate() {
            data_size(shape, dtype)
                .map_err(|e| err(format!("entry {eid}: shape {shape:?} with dtype {dtype}: {}", e.detail())))?;
        }
        Ok(())
    }

    /// Entries sharing a storage id are on the same device type.
    fn check_storage_devices(&self) -> Result<()> {
        let Some(dev) = &self.attrs.device_index else {
            return Ok(());
        };
        let mut sid_dev: BTreeMap<u32, (i32, usize)> = BTreeMap::new();
        for (eid, (&sid, &d)) in self.attrs.storage_id.iter().zip(dev).enumerate() {
            match sid_dev.get(&sid) {
                Some(&(other, first)) if other != d => {
                    return Err(err(format!(
                        "storage_id {sid} is shared by entry {first} on device type {other} and entry {eid} on device type {d}"
                    )));
                }
                Some(_) => {}
                None => {
                    sid_dev.insert(sid, (d, eid));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        std::fs::read_to_string(format!("{}/tests/data/tvm-0.18/{name}/graph.json", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
    }

    #[test]
    fn parses_tvm_graphs() {
        for (name, nodes) in
            [("mlp", 6), ("seed000", 5), ("seed004", 7), ("chain500", 502), ("resnet18", 75), ("inception_v3", 314)]
        {
            let g = Graph::parse(&data(name)).unwrap();
            assert_eq!(g.nodes.len(), nodes, "{name}");
            assert_eq!(g.attrs.shape.len(), g.num_entries());
        }
    }

    #[test]
    fn rejects_bad_graphs_with_names() {
        let good: Json = serde_json::from_str(&data("seed004")).unwrap();
        type Mutation = Box<dyn Fn(&mut Json)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|g| g["nodes"][4]["inputs"][0][0] = 9.into()), "does not come before it"),
            (Box::new(|g| g["nodes"][4]["inputs"][0][1] = 3.into()), "which has 1 output"),
            (Box::new(|g| g["attrs"]["dltype"][1][0] = "floaty".into()), "unknown dtype `floaty`"),
            (Box::new(|g| g["attrs"]["shape"][1][0] = serde_json::json!([-1, 2])), "negative dim -1"),
            (Box::new(|g| g["attrs"]["storage_id"][1] = serde_json::json!([0, 1])), "storage_id has 2 entries"),
            (Box::new(|g| g["arg_nodes"][0] = 99.into()), "arg_nodes[0] = 99"),
            (Box::new(|g| g["heads"][0][0] = 99.into()), "heads[0]"),
            (Box::new(|g| g["nodes"][4]["op"] = "conv".into()), "unknown op `conv`"),
            (
                Box::new(|g| {
                    g["nodes"][4]["attrs"].as_object_mut().unwrap().remove("func_name");
                }),
                "lack `func_name`",
            ),
            (Box::new(|g| g["bogus"] = 1.into()), "unknown top-level key `bogus`"),
            (
                Box::new(|g| {
                    g.as_object_mut().unwrap().remove("heads");
                }),
                "missing `heads`",
            ),
            (
                Box::new(|g| {
                    g["attrs"]["device_index"][1][2] = 2.into();
                    g["attrs"]["storage_id"][1][2] = 0.into();
                }),
                "storage_id 0 is shared",
            ),
            (Box::new(|g| g["attrs"]["shape"][1][0] = serde_json::json!([i64::MAX, i64::MAX])), "overflows"),
            (Box::new(|g| g["node_row_ptr"][1] = 5.into()), "node_row_ptr"),
        ];
        for (mutate, want) in cases {
            let mut g = good.clone();
            mutate(&mut g);
            let e = Graph::from_json(&g).unwrap_err();
            assert!(e.message().contains(want), "expected `{want}` in `{e}`");
        }
        assert!(Graph::parse("{").unwrap_err().message().contains("not valid JSON"));
    }
}
