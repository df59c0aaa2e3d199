//! The execution plan: everything about a model that does not change between runs, built once
//! and shared (`Arc`) by every executor of the model: the validated graph, the kernel module,
//! the storage layout per storage id, the op list with argument entry ids, and the weights.

use super::deps::{OpGraph, TaskGraph};
use super::json::Graph;
use crate::abi::{DLDataType, DLDevice, DLTensor, TVMBackendPackedCFunc};
use crate::runtime::base::cptr::dims_ptr;
use crate::runtime::base::error::{self, Error, Result};
use crate::runtime::dlpack::dtype::data_size;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::function::packed::{Module, PackedFunc};
use crate::runtime::tensor::ndarray::NDArray;
use once_cell::sync::OnceCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// One storage slot: its size (TVM's rule: max entry bytes rounded up to 4) and device.
#[derive(Clone, Debug)]
pub struct StorageSpec {
    pub bytes: usize,
    pub device: DLDevice,
    /// Every entry in this slot is a graph input (so the slot can hold shared weights).
    pub inputs_only: bool,
}

/// How an op runs.
#[derive(Clone)]
pub enum OpKind {
    /// A compiled kernel, called directly with prebuilt arguments.
    Kernel(TVMBackendPackedCFunc),
    /// Any other packed function.
    Packed(PackedFunc),
    /// `__nop`: output aliases input.
    Nop,
    /// `__copy`: cross-device copy of arg 0 into arg 1.
    Copy,
}

#[derive(Clone)]
pub struct OpSpec {
    pub node_id: u32,
    pub kind: OpKind,
    /// Entry ids: inputs then outputs.
    pub args: Vec<u32>,
    pub flatten: bool,
}

/// Immutable per-model state.
pub struct Plan {
    pub graph: Graph,
    pub module: Module,
    pub devices: Vec<DLDevice>,
    pub storage: Vec<StorageSpec>,
    pub entry_device: Vec<DLDevice>,
    pub ops: Vec<OpSpec>,
    /// Element count per entry (the 1-D shape used by `flatten_data` ops).
    pub flat_shapes: Vec<[i64; 1]>,
    input_index: HashMap<String, usize>,
    output_index: HashMap<String, usize>,
    /// Weights shared by every executor: per storage id, the array that backs it.
    pub(crate) shared_storage: Vec<Option<NDArray>>,
    /// Names of inputs whose values came with the plan (params).
    pub(crate) param_inputs: Vec<bool>,
    /// The ops grouped into chains for inter-op runs: built on first use, once per plan.
    task_graph: OnceCell<Arc<TaskGraph>>,
}

fn storage_device(devices: &[DLDevice], device_type: i32) -> DLDevice {
    devices.iter().copied().find(|d| d.device_type == device_type).unwrap_or(devices[0])
}

/// Storage slots and each entry's device, from the graph's storage ids, shapes and devices.
fn storage_layout(graph: &Graph, devices: &[DLDevice]) -> Result<(Vec<StorageSpec>, Vec<DLDevice>)> {
    let n_entries = graph.num_entries();
    let attrs = &graph.attrs;
    let mut input_entries = vec![false; n_entries];
    for &nid in &graph.arg_nodes {
        input_entries[graph.entry_id(nid, 0)] = true;
    }
    let mut entry_device = Vec::with_capacity(n_entries);
    let mut slots: Vec<Option<StorageSpec>> = Vec::new();
    for eid in 0..n_entries {
        let dev_type = attrs.device_index.as_ref().map_or(devices[0].device_type, |d| d[eid]);
        let dev = storage_device(devices, dev_type);
        entry_device.push(dev);
        let bytes = entry_bytes_checked(graph, eid)?;
        let slot = storage_slot(&mut slots, attrs.storage_id[eid] as usize, eid, n_entries)?
            .get_or_insert(StorageSpec { bytes: 0, device: dev, inputs_only: true });
        if slot.device.device_type != dev.device_type {
            return Err(Error::value(format!(
                "graph executor: storage_id {} is used on device types {} and {}",
                attrs.storage_id[eid], slot.device.device_type, dev.device_type
            )));
        }
        slot.bytes = slot.bytes.max(bytes);
        slot.inputs_only &= input_entries[eid];
    }
    let storage = slots
        .into_iter()
        .map(|s| {
            let mut s = s.unwrap_or(StorageSpec { bytes: 0, device: devices[0], inputs_only: false });
            s.bytes = s.bytes.div_ceil(4) * 4;
            s
        })
        .collect();
    Ok((storage, entry_device))
}

/// Bytes of entry `eid`, after checking the storage scope and dtype this runtime supports.
fn entry_bytes_checked(graph: &Graph, eid: usize) -> Result<usize> {
    let attrs = &graph.attrs;
    if let Some(scope) = attrs.storage_scope.as_ref().map(|s| s[eid].as_str()) {
        if !matches!(scope, "" | "global") {
            return Err(Error::unsupported(format!(
                "graph executor: entry {eid} uses storage scope `{scope}`, which this runtime does not support"
            )));
        }
    }
    let dtype: DLDataType = attrs.dltype[eid];
    let bits = dtype.bits as usize * dtype.lanes as usize;
    if bits % 8 != 0 && bits != 1 && bits != 4 {
        return Err(Error::value(format!("graph executor: entry {eid} has dtype {dtype} of {bits} bits")));
    }
    data_size(&attrs.shape[eid], dtype)
}

/// The slot for storage id `sid`, growing the table (within reason) to reach it.
fn storage_slot(
    slots: &mut Vec<Option<StorageSpec>>,
    sid: usize,
    eid: usize,
    n_entries: usize,
) -> Result<&mut Option<StorageSpec>> {
    if sid >= slots.len() {
        if sid > n_entries.saturating_mul(2) + 1024 {
            return Err(Error::value(format!(
                "graph executor: entry {eid} has storage_id {sid}, far beyond the {n_entries} entries"
            )));
        }
        slots.resize(sid + 1, None);
    }
    Ok(&mut slots[sid])
}

/// Every op node with its arguments (inputs then outputs) and how it runs; each function the
/// graph names must exist in `module` (or its imports).
fn resolve_ops(graph: &Graph, module: &Module) -> Result<Vec<OpSpec>> {
    let mut ops = Vec::new();
    for (nid, node) in graph.nodes.iter().enumerate() {
        let Some(attrs) = node.attrs.as_ref().filter(|_| node.is_op()) else { continue };
        let mut args: Vec<u32> = node.inputs.iter().map(|e| graph.entry_of(*e) as u32).collect();
        for k in 0..attrs.num_outputs {
            args.push(graph.entry_id(nid as u32, k) as u32);
        }
        let kind = op_kind(&node.name, &attrs.func_name, args.len(), module)?;
        ops.push(OpSpec { node_id: nid as u32, kind, args, flatten: attrs.flatten_data });
    }
    Ok(ops)
}

fn op_kind(node: &str, func_name: &str, n_args: usize, module: &Module) -> Result<OpKind> {
    Ok(match func_name {
        "__nop" => OpKind::Nop,
        "__copy" if n_args != 2 => {
            return Err(Error::value(format!("graph executor: `__copy` node `{node}` needs 1 input and 1 output")))
        }
        "__copy" => OpKind::Copy,
        name => match module.get_backend_function(name) {
            Some(f) => OpKind::Kernel(f),
            None => match module.get_function(name, true)? {
                Some(f) => OpKind::Packed(f),
                None => {
                    return Err(Error::attribute(format!(
                        "graph executor: node `{node}` calls `{name}`, which the module does not provide"
                    )))
                }
            },
        },
    })
}

/// Input names to input indices, and output names (`node:k`, and `node` for k = 0) to output
/// indices; the first of duplicate names wins.
fn name_indices(graph: &Graph) -> (HashMap<String, usize>, HashMap<String, usize>) {
    let mut input_index = HashMap::new();
    for (i, &nid) in graph.arg_nodes.iter().enumerate() {
        input_index.entry(graph.nodes[nid as usize].name.clone()).or_insert(i);
    }
    let mut output_index = HashMap::new();
    for (i, h) in graph.heads.iter().enumerate() {
        let node = &graph.nodes[h.node_id as usize];
        output_index.entry(format!("{}:{}", node.name, h.index)).or_insert(i);
        if h.index == 0 {
            output_index.entry(node.name.clone()).or_insert(i);
        }
    }
    (input_index, output_index)
}

/// How a caller names an input, output or node.
#[derive(Clone, Copy, Debug)]
pub enum Key<'a> {
    Name(&'a str),
    Index(i64),
}

/// What a caller may know about an input or output tensor. Borrowed from the plan.
#[derive(Clone, Debug)]
pub struct TensorInfo<'a> {
    /// Input node name, or output name (`node`, or `node:k` for output k > 0 of a node).
    pub name: String,
    pub shape: &'a [i64],
    pub dtype: DLDataType,
    /// Bytes of the tensor's data.
    pub nbytes: usize,
    /// The input is a weight (a param of the plan, or loaded by `load_params`).
    pub is_param: bool,
}

pub(crate) fn index_in_range(index: i64, n: usize, what: &str) -> Result<usize> {
    let i = usize::try_from(index).map_err(|_| Error::index(format!("{what} index {index} is negative")))?;
    if i >= n {
        return Err(Error::index(format!("{what} index {i} out of range (the graph has {})", error::count(n, what))));
    }
    Ok(i)
}

/// Names and indices resolved from the plan alone, the same for every front end (a bucketed
/// context resolves them without taking an executor).
impl Plan {
    /// The input named or numbered by `key`; unknown names list the inputs.
    pub fn input_key(&self, key: Key<'_>) -> Result<usize> {
        match key {
            Key::Name(name) => self.input_index(name).ok_or_else(|| {
                let names: Vec<&str> = (0..self.num_inputs()).map(|i| self.input_name(i)).collect();
                Error::key(format!("graph has no input named `{name}` (inputs: {})", names.join(", ")))
            }),
            Key::Index(i) => index_in_range(i, self.num_inputs(), "input"),
        }
    }

    /// The output named (`node` or `node:k`) or numbered by `key`.
    pub fn output_key(&self, key: Key<'_>) -> Result<usize> {
        match key {
            Key::Name(name) => {
                self.output_index(name).ok_or_else(|| Error::attribute(format!("graph has no output named `{name}`")))
            }
            Key::Index(i) => index_in_range(i, self.num_outputs(), "output"),
        }
    }

    /// The graph node named or numbered by `key` (for debugging a node's output).
    pub fn node_key(&self, key: Key<'_>) -> Result<usize> {
        let nodes = &self.graph.nodes;
        match key {
            Key::Name(name) => nodes
                .iter()
                .position(|n| n.name == name)
                .ok_or_else(|| Error::attribute(format!("graph has no node named `{name}`"))),
            Key::Index(k) => usize::try_from(k)
                .ok()
                .filter(|&k| k < nodes.len())
                .ok_or_else(|| Error::index(format!("node index {k} out of range ({} nodes)", nodes.len()))),
        }
    }
}

/// The plan's ops as a dependency graph (see `deps.rs`).
impl Plan {
    /// What op `i` reads and writes, as entry ids.
    pub(crate) fn op_io(&self, i: usize) -> (&[u32], &[u32]) {
        let op = &self.ops[i];
        let n_in = self.graph.nodes[op.node_id as usize].inputs.len();
        op.args.split_at(n_in)
    }

    /// The name of op `i`'s graph node.
    pub fn op_name(&self, i: usize) -> &str {
        &self.graph.nodes[self.ops[i].node_id as usize].name
    }

    /// Which op waits for which, from the data and the storage they share.
    pub fn op_graph(&self) -> OpGraph {
        let sid = |eid: u32| self.graph.attrs.storage_id[eid as usize] as usize;
        OpGraph::new(self.ops.len(), self.storage.len(), |i| self.op_io(i), sid)
    }

    /// The op graph as Graphviz dot, ops named by their nodes.
    pub fn schedule_dot(&self) -> String {
        self.op_graph().to_dot(|i| self.op_name(i).to_string())
    }

    /// The ops in chains for inter-op runs, shared by every executor of this plan.
    pub fn task_graph(&self) -> Arc<TaskGraph> {
        self.task_graph.get_or_init(|| Arc::new(TaskGraph::new(&self.op_graph()))).clone()
    }
}

impl Plan {
    /// Build a plan; every kernel named by the graph must exist in `module` (or its imports).
    pub fn new(graph: Graph, module: Module, devices: &[DLDevice]) -> Result<Plan> {
        if devices.is_empty() {
            return Err(Error::value("graph executor: at least one device is required"));
        }
        let (storage, entry_device) = storage_layout(&graph, devices)?;
        let ops = resolve_ops(&graph, &module)?;
        let flat_shapes = graph.attrs.shape.iter().map(|s| [s.iter().product::<i64>()]).collect();
        let (input_index, output_index) = name_indices(&graph);
        let n_storage = storage.len();
        let n_inputs = graph.arg_nodes.len();
        Ok(Plan {
            graph,
            module,
            devices: devices.to_vec(),
            storage,
            entry_device,
            ops,
            flat_shapes,
            input_index,
            output_index,
            shared_storage: vec![None; n_storage],
            param_inputs: vec![false; n_inputs],
            task_graph: OnceCell::new(),
        })
    }

    /// Attach weights: each named input that exists gets `array` as shared, read-only storage
    /// (no copy when the array fits the slot on the right device; otherwise one copy here).
    /// Names that are not inputs are ignored, as TVM does.
    pub fn set_params(&mut self, params: &[(String, NDArray)]) -> Result<()> {
        for (name, arr) in params {
            let Some(index) = self.input_index(name) else { continue };
            let eid = self.input_entry(index);
            self.check_tensor(eid, arr.tensor(), &format!("param `{name}`"))?;
            let sid = self.graph.attrs.storage_id[eid] as usize;
            let spec = &self.storage[sid];
            let shareable = spec.inputs_only && arr.device() == spec.device && arr.nbytes() >= spec.bytes;
            let backing = if shareable {
                arr.clone()
            } else if spec.inputs_only {
                let copy = NDArray::empty(&[spec.bytes.div_ceil(4) as i64], DLDataType::FLOAT32, spec.device)?;
                let view = copy.create_view(arr.shape(), arr.dtype())?;
                crate::runtime::tensor::ndarray::copy_from_to(arr.tensor(), view.tensor())?;
                copy
            } else {
                return Err(Error::value(format!(
                    "graph executor: param `{name}` shares storage_id {sid} with computed entries, so it cannot be a shared weight"
                )));
            };
            self.shared_storage[sid] = Some(backing);
            self.param_inputs[index] = true;
        }
        Ok(())
    }

    /// The shared weight array behind input `name`, if it is a param of the plan.
    pub fn shared_weight(&self, name: &str) -> Option<&NDArray> {
        let eid = self.input_entry(self.input_index(name)?);
        self.shared_storage[self.graph.attrs.storage_id[eid] as usize].as_ref()
    }

    /// Bytes of every storage slot together (activations and weights, as planned).
    pub fn storage_bytes(&self) -> usize {
        self.storage.iter().map(|s| s.bytes).sum()
    }

    pub fn num_inputs(&self) -> usize {
        self.graph.arg_nodes.len()
    }
    pub fn num_outputs(&self) -> usize {
        self.graph.heads.len()
    }
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.input_index.get(name).copied()
    }
    pub fn output_index(&self, name: &str) -> Option<usize> {
        self.output_index.get(name).copied()
    }
    pub fn input_name(&self, index: usize) -> &str {
        &self.graph.nodes[self.graph.arg_nodes[index] as usize].name
    }
    pub fn output_name(&self, index: usize) -> String {
        let h = self.graph.heads[index];
        let name = &self.graph.nodes[h.node_id as usize].name;
        if h.index == 0 {
            name.clone()
        } else {
            format!("{name}:{}", h.index)
        }
    }
    pub fn input_entry(&self, index: usize) -> usize {
        self.graph.entry_id(self.graph.arg_nodes[index], 0)
    }
    pub fn output_entry(&self, index: usize) -> usize {
        self.graph.entry_of(self.graph.heads[index])
    }
    pub fn entry_shape(&self, eid: usize) -> &[i64] {
        &self.graph.attrs.shape[eid]
    }
    pub fn entry_dtype(&self, eid: usize) -> DLDataType {
        self.graph.attrs.dltype[eid]
    }
    /// Entry `eid`'s tensor over `data`: its shape (pointing into the plan), dtype and device,
    /// compact.
    pub fn entry_tensor(&self, eid: usize, data: *mut c_void) -> DLTensor {
        let shape = self.entry_shape(eid);
        DLTensor {
            data,
            device: self.entry_device[eid],
            ndim: shape.len() as i32,
            dtype: self.entry_dtype(eid),
            shape: dims_ptr(shape),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        }
    }
    pub fn entry_bytes(&self, eid: usize) -> usize {
        data_size(self.entry_shape(eid), self.entry_dtype(eid)).expect("validated")
    }
    /// Whether input `index` got its value from the plan's params.
    pub fn is_param_input(&self, index: usize) -> bool {
        self.param_inputs[index]
    }

    /// A caller's tensor that the runtime will copy into or out of entry `eid` later, on a
    /// stream: dtype and shape as planned, compact, and its data present. `what` names it in
    /// an error and is formatted only then (this check is on every request's path).
    pub fn check_caller_tensor(&self, eid: usize, t: TensorRef<'_>, what: &dyn Fn() -> String) -> Result<()> {
        let fits = t.dtype() == self.entry_dtype(eid)
            && t.shape()? == self.entry_shape(eid)
            && t.is_contiguous()
            && (!t.raw().data.is_null() || self.entry_bytes(eid) == 0);
        if fits {
            return Ok(());
        }
        let what = what();
        self.check_tensor(eid, t, &what)?;
        t.check_contiguous(&what)?;
        Err(Error::value(format!("{what}: data pointer is NULL")))
    }

    /// Check a tensor against entry `eid`: dtype and shape must match exactly.
    pub fn check_tensor(&self, eid: usize, t: TensorRef<'_>, what: &str) -> Result<()> {
        let want_dtype = self.entry_dtype(eid);
        if t.dtype() != want_dtype {
            return Err(Error::value(format!("{what}: expected dtype {want_dtype}, got {}", t.dtype())));
        }
        let shape = t.shape()?;
        let want = self.entry_shape(eid);
        if shape != want {
            return Err(Error::value(format!("{what}: expected shape {want:?}, got {shape:?}")));
        }
        Ok(())
    }
}
