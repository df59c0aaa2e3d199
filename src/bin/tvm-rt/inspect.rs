//! `tvm-rt inspect`: what a model takes and gives, what it runs, and the memory it plans.

use crate::fail::Failure;
use crate::model::{is_manifest, load_buckets, MemoryPlanArg, ModelArgs};
use crate::table::{render, thousands};
use serde::Serialize;
use std::collections::BTreeMap;
use tvm_runtime::graph::buckets::BucketSet;
use tvm_runtime::graph::options::ExecutorOptions;
use tvm_runtime::graph::Plan;

/// Show a model's inputs, outputs, ops, kernels, weights and storage plan (a Relax VM
/// executable's functions, their parameters' dtypes and shapes)
#[derive(clap::Args, Debug)]
#[command(after_help = crate::EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// Print JSON instead of tables
    #[arg(long)]
    json: bool,
    /// The storage plan to show
    #[arg(long, value_enum, default_value_t = MemoryPlanArg::Tvm)]
    memory_plan: MemoryPlanArg,
}

#[derive(Serialize)]
struct Report {
    model: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    /// Op nodes of the graph (`tvm_op`), nops included.
    ops: usize,
    kernels: Vec<Kernel>,
    params: Params,
    storage: Storage,
    /// For a bucket manifest: the versions a bucketed executor dispatches to (the rest of the
    /// report describes the largest).
    #[serde(skip_serializing_if = "Option::is_none")]
    buckets: Option<Buckets>,
}

#[derive(Serialize)]
struct Buckets {
    /// The dynamic input axes, as `input:axis`.
    dynamic_axes: Vec<String>,
    /// Smallest padded input volume first: the order requests try them in.
    versions: Vec<Version>,
    /// Activation memory of one execution context: one arena for every bucket.
    arena_bytes: usize,
}

#[derive(Serialize)]
struct Version {
    file: String,
    /// The extent of each dynamic axis.
    extents: Vec<i64>,
    /// Data inputs' shapes.
    inputs: Vec<Vec<i64>>,
}

#[derive(Serialize)]
struct Tensor {
    name: String,
    shape: Vec<i64>,
    dtype: String,
    bytes: usize,
    param: bool,
}

#[derive(Serialize)]
struct Kernel {
    name: String,
    count: usize,
}

#[derive(Serialize)]
struct Params {
    count: usize,
    bytes: usize,
}

#[derive(Serialize)]
struct Storage {
    memory_plan: String,
    slots: Vec<Slot>,
    /// Bytes of the slots holding inputs and activations: all allocated at once, so the peak.
    peak_activation_bytes: usize,
    /// What the same entries would take without sharing slots.
    unshared_activation_bytes: usize,
    /// Bytes of the slots holding weights.
    param_bytes: usize,
}

#[derive(Serialize)]
struct Slot {
    id: usize,
    bytes: usize,
    /// `param` (weights), `input` (data inputs only) or `activation`.
    kind: &'static str,
    /// The graph entries sharing the slot (`node`, or `node:k` for output k > 0).
    entries: Vec<String>,
}

pub fn main(args: Args) -> Result<(), Failure> {
    if let Some(model) = crate::vm::open(&args.model)? {
        return crate::vm::inspect(&model, args.json);
    }
    let report = match args.model.model.as_deref().filter(|p| is_manifest(p)) {
        Some(manifest) => {
            let mut options = ExecutorOptions::parse(None).map_err(Failure::usage)?;
            options.memory_plan = args.memory_plan.plan();
            let set = load_buckets(manifest, options, args.model.device)?;
            let mut r = report(&set.largest().plan, manifest.display().to_string(), args.memory_plan.name().into());
            r.buckets = Some(buckets(&set));
            r
        }
        None => {
            let model = args.model.load(args.memory_plan.plan())?;
            report(&model.plan, model.source, args.memory_plan.name().to_string())
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
    } else {
        print!("{}", text(&report));
    }
    Ok(())
}

fn report(plan: &Plan, model: String, memory_plan: String) -> Report {
    let inputs: Vec<Tensor> = (0..plan.num_inputs())
        .map(|i| tensor(plan, plan.input_name(i).to_string(), plan.input_entry(i), plan.is_param_input(i)))
        .collect();
    let outputs =
        (0..plan.num_outputs()).map(|i| tensor(plan, plan.output_name(i), plan.output_entry(i), false)).collect();
    let weights: Vec<&Tensor> = inputs.iter().filter(|t| t.param).collect();
    let params = Params { count: weights.len(), bytes: weights.iter().map(|t| t.bytes).sum() };
    let ops = plan.graph.nodes.iter().filter(|n| n.is_op()).count();
    let storage = storage(plan, memory_plan);
    Report { model, kernels: kernels(plan), ops, params, storage, inputs, outputs, buckets: None }
}

fn buckets(set: &BucketSet) -> Buckets {
    let plan = &set.largest().plan;
    let dynamic_axes = set.dims().iter().map(|d| format!("{}:{}", plan.input_name(d.input), d.axis)).collect();
    let versions = set
        .buckets()
        .iter()
        .map(|b| {
            let p = &b.plan;
            let data = (0..p.num_inputs()).filter(|&i| !p.is_param_input(i));
            let inputs = data.map(|i| p.entry_shape(p.input_entry(i)).to_vec()).collect();
            Version { file: b.label.clone(), extents: b.extents.clone(), inputs }
        })
        .collect();
    Buckets { dynamic_axes, versions, arena_bytes: set.arena_bytes() }
}

fn tensor(plan: &Plan, name: String, eid: usize, param: bool) -> Tensor {
    Tensor {
        name,
        shape: plan.entry_shape(eid).to_vec(),
        dtype: plan.entry_dtype(eid).to_string(),
        bytes: plan.entry_bytes(eid),
        param,
    }
}

/// Distinct kernel names with how many ops call each, most called first.
fn kernels(plan: &Plan) -> Vec<Kernel> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for attrs in plan.graph.nodes.iter().filter_map(|n| n.attrs.as_ref()) {
        *counts.entry(attrs.func_name.as_str()).or_default() += 1;
    }
    let mut v: Vec<Kernel> = counts.into_iter().map(|(name, count)| Kernel { name: name.to_string(), count }).collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    v
}

/// Each entry's name: its node's, with `:k` for output k > 0.
fn entry_names(plan: &Plan) -> Vec<String> {
    let graph = &plan.graph;
    let mut names = vec![String::new(); graph.num_entries()];
    for (nid, node) in graph.nodes.iter().enumerate() {
        for k in 0..graph.num_outputs_of(nid) {
            let name = if k == 0 { node.name.clone() } else { format!("{}:{k}", node.name) };
            names[graph.entry_id(nid as u32, k)] = name;
        }
    }
    names
}

fn storage(plan: &Plan, memory_plan: String) -> Storage {
    let names = entry_names(plan);
    let param_entries: Vec<usize> =
        (0..plan.num_inputs()).filter(|&i| plan.is_param_input(i)).map(|i| plan.input_entry(i)).collect();
    let mut slots: Vec<Slot> = (plan.storage.iter().enumerate())
        .map(|(id, s)| Slot {
            id,
            bytes: s.bytes,
            kind: if s.inputs_only { "input" } else { "activation" },
            entries: vec![],
        })
        .collect();
    let mut unshared_activation_bytes = 0;
    for (eid, &sid) in plan.graph.attrs.storage_id.iter().enumerate() {
        slots[sid as usize].entries.push(names[eid].clone());
        if param_entries.contains(&eid) {
            slots[sid as usize].kind = "param";
        } else {
            unshared_activation_bytes += plan.entry_bytes(eid);
        }
    }
    let bytes_of = |param: bool| slots.iter().filter(|s| (s.kind == "param") == param).map(|s| s.bytes).sum();
    Storage {
        memory_plan,
        peak_activation_bytes: bytes_of(false),
        param_bytes: bytes_of(true),
        unshared_activation_bytes,
        slots,
    }
}

fn tensor_rows(tensors: &[Tensor]) -> Vec<Vec<String>> {
    let kind = |t: &Tensor| if t.param { "param" } else { "data" };
    tensors
        .iter()
        .map(|t| vec![t.name.clone(), format!("{:?}", t.shape), t.dtype.clone(), thousands(t.bytes), kind(t).into()])
        .collect()
}

fn text(r: &Report) -> String {
    let n_data = r.inputs.iter().filter(|t| !t.param).count();
    let mut s = format!("model: {}\n\n", r.model);
    s += &format!("inputs: {n_data} data, {} params\n", r.params.count);
    s += &render(&["name", "shape", "dtype", " bytes", "kind"], &tensor_rows(&r.inputs));
    s += &format!("\noutputs: {}\n", r.outputs.len());
    let outputs: Vec<Vec<String>> =
        tensor_rows(&r.outputs).into_iter().map(|mut row| row.drain(..4).collect()).collect();
    s += &render(&["name", "shape", "dtype", " bytes"], &outputs);
    s += &format!("\nops: {}, {} distinct kernels\n", r.ops, r.kernels.len());
    let kernels: Vec<Vec<String>> = r.kernels.iter().map(|k| vec![k.count.to_string(), k.name.clone()]).collect();
    s += &render(&[" ops", "kernel"], &kernels);
    s += &format!("\nparams: {} tensors, {} bytes\n", r.params.count, thousands(r.params.bytes));
    s += &storage_text(&r.storage);
    if let Some(b) = &r.buckets {
        s += &buckets_text(b);
    }
    s
}

fn buckets_text(b: &Buckets) -> String {
    let mut s = format!(
        "\nbuckets: {} versions over dynamic axes {} (the report above is the largest)\n",
        b.versions.len(),
        b.dynamic_axes.join(", ")
    );
    let rows: Vec<Vec<String>> = (b.versions.iter().enumerate())
        .map(|(i, v)| {
            let inputs: Vec<String> = v.inputs.iter().map(|s| format!("{s:?}")).collect();
            vec![i.to_string(), format!("{:?}", v.extents), inputs.join(" "), v.file.clone()]
        })
        .collect();
    s += &render(&[" bucket", "extents", "inputs", "file"], &rows);
    s + &format!("activation arena: {} bytes per execution context, shared by every bucket\n", thousands(b.arena_bytes))
}

fn storage_text(st: &Storage) -> String {
    let mut s = format!("\nstorage plan ({} memory plan): {} storage ids\n", st.memory_plan, st.slots.len());
    let rows: Vec<Vec<String>> = st
        .slots
        .iter()
        .map(|sl| vec![sl.id.to_string(), thousands(sl.bytes), sl.kind.to_string(), sl.entries.join(", ")])
        .collect();
    s += &render(&[" sid", " bytes", "kind", "entries"], &rows);
    s += &format!(
        "peak activation memory: {} bytes (inputs and activations; {} without sharing storage)\n",
        thousands(st.peak_activation_bytes),
        thousands(st.unshared_activation_bytes)
    );
    s + &format!("weights: {} bytes\n", thousands(st.param_bytes))
}
