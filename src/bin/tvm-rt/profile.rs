//! `tvm-rt profile`: time every op over several runs; per-op and per-kernel tables sorted by
//! time, and a Chrome / Perfetto trace.

use crate::fail::{Failure, FileContext};
use crate::inputs::{feed, Fill, InputArgs};
use crate::model::{describe, ExecArgs, ModelArgs};
use crate::table::render;
use crate::vm::{no_executor_options, open as vm_open, VmModel, POOLED_ALLOCATOR};
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::graph::profile::{chrome_trace, median_timings};
use tvm_runtime::graph::runner::OpTiming;
use tvm_runtime::runtime::function::packed::Value;
use tvm_runtime::vm::profiler::{timed_session, KernelCall};
use tvm_runtime::vm::session::AllocatorKind;
use tvm_runtime::vm::{ExecutableModule, Frame};

/// Time every op: per-op and per-kernel tables sorted by time, and a Chrome trace
#[derive(clap::Args, Debug)]
#[command(after_help = crate::EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    pub(crate) vm: crate::vm::VmArgs,
    #[command(flatten)]
    pub(crate) inputs: InputArgs,
    /// Unprofiled runs first
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(crate) warmup: usize,
    /// Profiled runs; each op's time is its median over them
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) runs: u32,
    /// Show only the N slowest ops (0: all)
    #[arg(long, value_name = "N", default_value_t = 0)]
    top: usize,
    /// Write the last profiled run as a Chrome trace (chrome://tracing, ui.perfetto.dev)
    #[arg(long, value_name = "FILE.json")]
    trace: Option<PathBuf>,
    /// Print JSON instead of tables
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) exec: ExecArgs,
}

#[derive(Serialize)]
struct Report {
    model: String,
    executor: String,
    runs: u32,
    /// Sum of the ops' median times.
    total_us: f64,
    ops: Vec<Row>,
    kernels: Vec<Row>,
}

/// One op, or one kernel over every op that calls it.
#[derive(Serialize, Clone)]
struct Row {
    name: String,
    /// The op's kernel (ops only).
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_id: Option<u32>,
    /// Ops calling the kernel (kernels only).
    #[serde(skip_serializing_if = "Option::is_none")]
    calls: Option<usize>,
    /// Median microseconds per run (kernels: the sum over their ops).
    time_us: f64,
    percent: f64,
    cumulative_percent: f64,
}

pub fn main(args: Args) -> Result<(), Failure> {
    if let Some(model) = vm_open(&args.model)? {
        return profile_vm(&args, &model);
    }
    args.vm.graph_only()?;
    let model = args.model.load(args.exec.memory_plan())?;
    let options = args.exec.options()?;
    let front = args.exec.executor(&model)?;
    feed(&front, &args.inputs.arrays(&model.plan, Some(Fill::Random))?)?;
    for _ in 0..args.warmup {
        front.run()?;
    }
    let mut runs = Vec::with_capacity(args.runs as usize);
    for _ in 0..args.runs {
        runs.push(front.run_profiled()?);
    }
    report(&args, model.source, describe(&options), &runs)
}

/// Print the tables (or JSON) of the profiled runs and write the trace of the last.
pub(crate) fn report(args: &Args, model: String, executor: String, runs: &[Vec<OpTiming>]) -> Result<(), Failure> {
    if let Some(path) = &args.trace {
        let last = runs.last().expect("at least one run");
        std::fs::write(path, chrome_trace(last)).in_file(path)?;
    }
    let ops = op_rows(runs);
    let report = Report {
        model,
        executor,
        runs: args.runs,
        total_us: ops.iter().map(|r| r.time_us).sum(),
        kernels: kernel_rows(&ops),
        ops,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
    } else {
        print!("{}", text(&report, args.top));
        if let Some(path) = &args.trace {
            println!("wrote a Chrome trace of the last run to {}", path.display());
        }
    }
    Ok(())
}

/// Each op's median time over the runs, slowest first.
fn op_rows(runs: &[Vec<OpTiming>]) -> Vec<Row> {
    let rows = median_timings(runs)
        .iter()
        .map(|t| Row { time_us: t.duration_ns as f64 / 1000.0, ..row(&t.name, Some(t), None) })
        .collect();
    ranked(rows)
}

/// The ops' times summed per kernel, slowest first.
fn kernel_rows(ops: &[Row]) -> Vec<Row> {
    let mut kernels: HashMap<&str, Row> = HashMap::new();
    for op in ops {
        let name = op.kernel.as_deref().unwrap_or_default();
        let k = kernels.entry(name).or_insert_with(|| row(name, None, Some(0)));
        k.time_us += op.time_us;
        k.calls = k.calls.map(|c| c + 1);
    }
    ranked(kernels.into_values().collect())
}

fn row(name: &str, op: Option<&OpTiming>, calls: Option<usize>) -> Row {
    Row {
        name: name.to_string(),
        kernel: op.map(|t| t.func_name.clone()),
        node_id: op.map(|t| t.node_id),
        calls,
        time_us: 0.0,
        percent: 0.0,
        cumulative_percent: 0.0,
    }
}

/// Sorted by time (ties by name), with each row's share and the running share.
fn ranked(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| b.time_us.total_cmp(&a.time_us).then_with(|| a.name.cmp(&b.name)));
    let total: f64 = rows.iter().map(|r| r.time_us).sum::<f64>().max(f64::MIN_POSITIVE);
    let mut cumulative = 0.0;
    for r in &mut rows {
        r.percent = 100.0 * r.time_us / total;
        cumulative += r.percent;
        r.cumulative_percent = cumulative;
    }
    rows
}

fn text(r: &Report, top: usize) -> String {
    let mut s = format!("model: {}\nexecutor: {}\n", r.model, r.executor);
    s += &format!("median of {} profiled runs per op; ops' total {:.1} us\n\n", r.runs, r.total_us);
    let shown = if top == 0 { r.ops.len() } else { top.min(r.ops.len()) };
    let ops: Vec<Vec<String>> = r.ops[..shown]
        .iter()
        .map(|o| {
            let node = o.node_id.map(|n| n.to_string()).unwrap_or_default();
            let mut cells = vec![node, o.name.clone(), o.kernel.clone().unwrap_or_default()];
            cells.extend(times(o));
            cells
        })
        .collect();
    s += &format!("ops ({} of {}), slowest first:\n", shown, r.ops.len());
    s += &render(&[" node", "op", "kernel", " time (us)", " %", " cum %"], &ops);
    let kernels: Vec<Vec<String>> = r
        .kernels
        .iter()
        .map(|k| {
            let mut cells = vec![k.name.clone(), k.calls.unwrap_or(0).to_string()];
            cells.extend(times(k));
            cells
        })
        .collect();
    s += &format!("\nkernels ({}), slowest first:\n", r.kernels.len());
    s + &render(&["kernel", " calls", " time (us)", " %", " cum %"], &kernels)
}

fn times(r: &Row) -> [String; 3] {
    [format!("{:.2}", r.time_us), format!("{:.1}", r.percent), format!("{:.1}", r.cumulative_percent)]
}

// --- a VM executable ------------------------------------------------------------------------------

/// `tvm-rt profile` on a VM executable: every kernel call of the function timed, over a
/// session of its own whose kernels are wrapped in timers (the builtins and the interpreter's
/// own work are not in the tables); the graph path's tables and trace, a call being an op.
fn profile_vm(args: &Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    let name = model.function(&args.vm)?.name.clone();
    let values: Vec<Value> =
        model.arrays(&args.vm, &args.inputs, Some(Fill::Random))?.into_iter().map(Value::NDArray).collect();
    let exec = ExecutableModule::of(&model.exec)?.exec.clone();
    let allocator = AllocatorKind::from_code(POOLED_ALLOCATOR)?;
    let (session, recording) = timed_session(&exec, &model.exec, &[DLDevice::cpu(0)], allocator)?;
    let mut frame = Frame::new(Arc::new(session));
    for _ in 0..args.warmup {
        frame.call(&name, &values)?;
    }
    let mut runs = Vec::with_capacity(args.runs as usize);
    for _ in 0..args.runs {
        recording.lock().restart();
        frame.call(&name, &values)?;
        runs.push(recording.lock().calls.iter().enumerate().map(|(i, c)| op_timing(i, c)).collect());
    }
    let executor = format!("cpu; Relax VM, function {name}, pooled allocator; kernel calls only");
    report(args, model.source.clone(), executor, &runs)
}

/// A kernel call as one op of the graph path's tables (its position in the run as the node id).
fn op_timing(i: usize, c: &KernelCall) -> OpTiming {
    OpTiming {
        node_id: i as u32,
        name: c.name.clone(),
        func_name: c.name.clone(),
        start_ns: c.start_ns,
        duration_ns: c.duration_ns,
        lane: 0,
    }
}
