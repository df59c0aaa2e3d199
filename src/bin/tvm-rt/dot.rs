//! `tvm-rt dot`: the graph, or the inter-op schedule, as Graphviz dot.

use crate::fail::{Failure, FileContext};
use crate::model::{ExecArgs, ModelArgs};
use std::path::PathBuf;
use tvm_runtime::graph::Plan;

/// Write the graph (or, with --schedule, the op schedule) as Graphviz dot (`dot -Tsvg`)
#[derive(clap::Args, Debug)]
#[command(after_help = crate::EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// The op schedule instead: ops by level, data edges, storage-reuse hazards (dashed red; they
    /// depend on --memory-plan), the critical path in bold
    #[arg(long)]
    schedule: bool,
    /// Leave the weights out of the graph
    #[arg(long)]
    no_params: bool,
    /// Write to a file instead of standard output
    #[arg(long, short = 'o', value_name = "FILE.dot")]
    output: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
}

pub fn main(args: Args) -> Result<(), Failure> {
    let model = args.model.load(args.exec.memory_plan())?;
    let dot = match args.schedule {
        true => schedule_dot(&model.plan, &args.exec)?,
        false => graph_dot(&model.plan, !args.no_params),
    };
    match &args.output {
        Some(path) => std::fs::write(path, dot).in_file(path),
        None => {
            print!("{dot}");
            Ok(())
        }
    }
}

/// The runtime's schedule dot, headed by what the inter-op runner makes of it.
fn schedule_dot(plan: &Plan, exec: &ExecArgs) -> Result<String, Failure> {
    let options = exec.options()?;
    let ops = plan.op_graph();
    let tasks = plan.task_graph();
    let head = format!(
        "// ops: {}; tasks (chains an inter-op worker runs in order): {}; critical path: {} ops;\n\
         // {} inter-op workers, memory plan {}\n",
        ops.len(),
        tasks.tasks.len(),
        ops.critical_path().len(),
        options.inter_op_threads,
        exec.memory_plan.name()
    );
    Ok(head + &plan.schedule_dot())
}

fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Inputs as ellipses (weights grey), ops as boxes with their kernel, every entry's shape and
/// dtype on its node, outputs as plain labels.
fn graph_dot(plan: &Plan, with_params: bool) -> String {
    let graph = &plan.graph;
    let param_node =
        |nid: usize| graph.arg_nodes.iter().position(|&a| a as usize == nid).is_some_and(|i| plan.is_param_input(i));
    let mut s = String::from("digraph model {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n");
    for (nid, node) in graph.nodes.iter().enumerate() {
        if !with_params && param_node(nid) {
            continue;
        }
        let eid = graph.entry_id(nid as u32, 0);
        let tensor = format!("{:?} {}", plan.entry_shape(eid), plan.entry_dtype(eid));
        let (kernel, style) = match &node.attrs {
            Some(a) if a.func_name != node.name => (format!("\\n{}", quoted(&a.func_name)), "shape=box"),
            Some(_) => (String::new(), "shape=box"),
            None if param_node(nid) => (String::new(), "shape=ellipse, style=filled, fillcolor=lightgrey"),
            None => (String::new(), "shape=ellipse"),
        };
        s += &format!("  n{nid} [label=\"{}{kernel}\\n{tensor}\", {style}];\n", quoted(&node.name));
        for input in &node.inputs {
            if with_params || !param_node(input.node_id as usize) {
                s += &format!("  n{} -> n{nid};\n", input.node_id);
            }
        }
    }
    for (i, head) in graph.heads.iter().enumerate() {
        s += &format!("  out{i} [label=\"output {i}\", shape=plaintext];\n  n{} -> out{i};\n", head.node_id);
    }
    s + "}\n"
}
