//! `tvm-rt bench`: latency percentiles and throughput of whole runs, on one executor (with
//! inter-op and intra-op threads) or on the request pipeline (core groups, requests in flight).

use crate::fail::Failure;
use crate::inputs::{feed, Fill, InputArgs};
use crate::model::{describe, ExecArgs, Model, ModelArgs};
use crate::vm::{self, no_executor_options, VmArgs, VmModel};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use tvm_runtime::abi::DLDevice;
use tvm_runtime::graph::options::PipelineOptions;
use tvm_runtime::graph::pipeline::Pipeline;
use tvm_runtime::runtime::tensor::ndarray::NDArray;

/// Measure latency (median, mean, p90, p99, min, max) and throughput of whole runs
#[derive(clap::Args, Debug)]
#[command(after_help = crate::EXIT_CODES)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    pub(crate) vm: VmArgs,
    #[command(flatten)]
    pub(crate) inputs: InputArgs,
    /// Unmeasured runs first
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) warmup: u64,
    /// Measured runs
    #[arg(long, value_name = "N", default_value_t = 100, conflicts_with = "duration",
          value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Measure for this long instead of a number of runs (e.g. 5s, 500ms, 1m)
    #[arg(long, value_name = "TIME")]
    duration: Option<humantime::Duration>,
    #[command(flatten)]
    pub(crate) exec: ExecArgs,
    #[command(flatten)]
    pipeline: PipelineArgs,
    /// Print JSON instead of text
    #[arg(long)]
    pub(crate) json: bool,
}

/// The request pipeline (`TVMPipelineCreate`): any of these runs the benchmark on it.
#[derive(clap::Args, Debug)]
#[group(id = "pipeline_options", multiple = true)]
struct PipelineArgs {
    /// Pipeline: groups of cores, each running one request at a time [default: one per core]
    #[arg(long, value_name = "N")]
    core_groups: Option<usize>,
    /// Pipeline: threads of each group's kernels [default: the cores divided among the groups]
    #[arg(long, value_name = "N")]
    threads_per_group: Option<usize>,
    /// Pipeline: requests being processed at once [default: 2 per group]
    #[arg(long, value_name = "N")]
    in_flight: Option<usize>,
}

impl PipelineArgs {
    /// The pipeline's options, when any is given.
    fn options(&self) -> Result<Option<PipelineOptions>, Failure> {
        let given = [("core_groups", self.core_groups), ("threads_per_group", self.threads_per_group)];
        let pairs: Vec<String> = given
            .into_iter()
            .chain([("in_flight", self.in_flight)])
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
            .collect();
        if pairs.is_empty() {
            return Ok(None);
        }
        self.warn_about_oversubscription();
        PipelineOptions::parse(Some(&pairs.join(","))).map(Some).map_err(Failure::usage)
    }
}

impl PipelineArgs {
    /// More core groups than CPUs runs, but the groups share cores (and are not pinned):
    /// say so, since the numbers then measure time slicing more than the model.
    fn warn_about_oversubscription(&self) {
        let cpus = tvm_runtime::runtime::threads::pool::allowed_cpus().len();
        if let Some(groups) = self.core_groups.filter(|&g| g > cpus) {
            eprintln!(
                "tvm-rt: warning: --core-groups {groups} is more than the {cpus} CPU(s) this process may use: \
                 the groups share cores and are not pinned"
            );
        }
    }
}

/// When measuring stops.
#[derive(Clone, Copy)]
pub(crate) enum Stop {
    Runs(u64),
    After(Duration),
}

impl Stop {
    fn more(self, done: u64, started: Instant) -> bool {
        match self {
            Stop::Runs(n) => done < n,
            // At least one run, so there is a latency to report.
            Stop::After(d) => done == 0 || started.elapsed() < d,
        }
    }
}

#[derive(Serialize)]
struct Report {
    model: String,
    executor: String,
    warmup_runs: u64,
    runs: usize,
    wall_s: f64,
    latency_ms: Latency,
    /// Completed runs per second of wall time.
    throughput_per_s: f64,
}

#[derive(Serialize)]
struct Latency {
    median: f64,
    mean: f64,
    p90: f64,
    p99: f64,
    min: f64,
    max: f64,
}

pub fn main(args: Args) -> Result<(), Failure> {
    if let Some(model) = vm::open(&args.model)? {
        return bench_vm(&args, &model);
    }
    args.vm.graph_only()?;
    let model = args.model.load(args.exec.memory_plan())?;
    let (stop, show_progress) = args.stop();
    let (executor, latencies, wall) = measure(&args, &model, stop, show_progress)?;
    report(&args, model.source, executor, latencies, wall)
}

impl Args {
    /// When measuring stops, and whether to show a progress bar.
    pub(crate) fn stop(&self) -> (Stop, bool) {
        let stop = self.duration.map_or(Stop::Runs(self.runs), |d| Stop::After(d.into()));
        (stop, !self.json && std::io::stdout().is_terminal() && std::io::stderr().is_terminal())
    }

    /// Refuse the pipeline's options (for a Relax VM).
    pub(crate) fn no_pipeline(&self) -> Result<(), Failure> {
        match self.pipeline.options()? {
            Some(_) => {
                Err(Failure::usage("--core-groups, --threads-per-group and --in-flight are graph executor options"))
            }
            None => Ok(()),
        }
    }
}

/// Print what was measured, as text or JSON.
pub(crate) fn report(
    args: &Args,
    model: String,
    executor: String,
    latencies: Vec<Duration>,
    wall: Duration,
) -> Result<(), Failure> {
    let report = Report {
        model,
        executor,
        warmup_runs: args.warmup,
        runs: latencies.len(),
        wall_s: wall.as_secs_f64(),
        throughput_per_s: latencies.len() as f64 / wall.as_secs_f64().max(1e-12),
        latency_ms: latency(latencies),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("a report serializes"));
    } else {
        print!("{}", text(&report));
    }
    Ok(())
}

/// Measure on one executor, or on the pipeline when pipeline options are given: what ran,
/// the latencies and the wall time.
fn measure(args: &Args, model: &Model, stop: Stop, show: bool) -> Result<(String, Vec<Duration>, Duration), Failure> {
    let arrays = args.inputs.arrays(&model.plan, Some(Fill::Random))?;
    let Some(options) = args.pipeline.options()? else {
        let options = args.exec.options()?;
        let front = args.exec.executor(model)?;
        feed(&front, &arrays)?;
        let step = || front.run().map_err(Failure::from);
        let (latencies, wall) = measure_executor(args.warmup, stop, show, step)?;
        return Ok((describe(&options), latencies, wall));
    };
    if args.exec.inter_op_threads != 1 || args.exec.intra_op_threads.is_some() {
        return Err(Failure::usage("--inter-op-threads and --intra-op-threads are not pipeline options"));
    }
    let inputs: Vec<NDArray> = arrays.into_iter().map(|(_, a)| a).collect();
    let (latencies, wall) = measure_pipeline(model, &options, &inputs, (args.warmup, stop), show)?;
    Ok((describe_pipeline(&options), latencies, wall))
}

fn progress_bar(stop: Stop, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let (len, template) = match stop {
        Stop::Runs(n) => (n, "{bar:40} {pos}/{len} runs, {elapsed}"),
        Stop::After(d) => (d.as_millis() as u64, "{bar:40} {elapsed} of {msg}"),
    };
    let bar = ProgressBar::new(len).with_style(ProgressStyle::with_template(template).expect("a valid template"));
    if let Stop::After(d) = stop {
        bar.set_message(humantime::format_duration(d).to_string());
    }
    bar
}

fn advance(bar: &ProgressBar, stop: Stop, started: Instant) {
    match stop {
        Stop::Runs(_) => bar.inc(1),
        Stop::After(_) => bar.set_position(started.elapsed().as_millis() as u64),
    }
}

/// Warm up, then time `step` until `stop`; the latencies and the wall time.
pub(crate) fn measure_executor(
    warmup: u64,
    stop: Stop,
    show_progress: bool,
    step: impl Fn() -> Result<(), Failure>,
) -> Result<(Vec<Duration>, Duration), Failure> {
    for _ in 0..warmup {
        step()?;
    }
    let bar = progress_bar(stop, show_progress);
    let mut latencies = Vec::new();
    let started = Instant::now();
    while stop.more(latencies.len() as u64, started) {
        let t = Instant::now();
        step()?;
        latencies.push(t.elapsed());
        advance(&bar, stop, started);
    }
    let wall = started.elapsed();
    bar.finish_and_clear();
    Ok((latencies, wall))
}

/// Requests kept `in_flight` at once, each with its own output arrays; a request's latency is
/// from its submit to its wait returning, waited for in submission order.
fn measure_pipeline(
    model: &Model,
    options: &PipelineOptions,
    inputs: &[NDArray],
    (warmup, stop): (u64, Stop),
    show_progress: bool,
) -> Result<(Vec<Duration>, Duration), Failure> {
    let plan = &model.plan;
    let pipeline = Pipeline::new(plan.clone(), options)?;
    let slots: Vec<Vec<NDArray>> = (0..options.in_flight)
        .map(|_| {
            (0..plan.num_outputs())
                .map(|i| {
                    let eid = plan.output_entry(i);
                    NDArray::empty(plan.entry_shape(eid), plan.entry_dtype(eid), DLDevice::cpu(0))
                })
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let window = Window { pipeline: &pipeline, inputs, slots: &slots };
    window.drive(Stop::Runs(warmup), &ProgressBar::hidden())?;
    let bar = progress_bar(stop, show_progress);
    let started = Instant::now();
    let latencies = window.drive(stop, &bar)?;
    let wall = started.elapsed();
    bar.finish_and_clear();
    Ok((latencies, wall))
}

/// Requests submitted over a fixed set of output slots.
struct Window<'a> {
    pipeline: &'a Pipeline,
    inputs: &'a [NDArray],
    slots: &'a [Vec<NDArray>],
}

impl Window<'_> {
    fn submit(&self, slot: usize) -> Result<u64, Failure> {
        let inputs: Vec<_> = self.inputs.iter().map(|a| a.tensor()).collect();
        let outputs: Vec<_> = self.slots[slot].iter().map(|a| a.tensor()).collect();
        // SAFETY: the arrays outlive the request: `drive` waits for every request it submits
        // before returning, and a slot's outputs are given to one request at a time.
        Ok(unsafe { self.pipeline.submit(&inputs, &outputs, None)? })
    }

    fn drive(&self, stop: Stop, bar: &ProgressBar) -> Result<Vec<Duration>, Failure> {
        let mut pending: VecDeque<(u64, Instant, usize)> = VecDeque::new();
        let mut free: Vec<usize> = (0..self.slots.len()).rev().collect();
        let mut latencies = Vec::new();
        let started = Instant::now();
        let mut submitted = 0;
        loop {
            while stop.more(submitted, started) && !free.is_empty() {
                let slot = free.pop().expect("a free slot");
                let at = Instant::now();
                pending.push_back((self.submit(slot)?, at, slot));
                submitted += 1;
            }
            let Some((id, at, slot)) = pending.pop_front() else { break };
            let result = self.pipeline.wait(id);
            latencies.push(at.elapsed());
            free.push(slot);
            advance(bar, stop, started);
            if let Err(e) = result {
                self.wait_all(pending);
                return Err(e.into());
            }
        }
        Ok(latencies)
    }

    /// Wait for the requests still out (after a failure: their results no longer matter).
    fn wait_all(&self, pending: VecDeque<(u64, Instant, usize)>) {
        for (id, _, _) in pending {
            let _ = self.pipeline.wait(id);
        }
    }
}

fn describe_pipeline(o: &PipelineOptions) -> String {
    let pinned = if o.cpus.is_some() { "pinned" } else { "not pinned" };
    format!(
        "pipeline; core groups: {}; threads per group: {} ({pinned}); requests in flight: {}",
        o.core_groups, o.threads_per_group, o.in_flight
    )
}

/// Nearest-rank percentiles of the latencies, in milliseconds.
fn latency(mut latencies: Vec<Duration>) -> Latency {
    latencies.sort_unstable();
    let ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    let rank = |p: f64| ms[((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
    Latency {
        median: rank(0.5),
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
        p90: rank(0.9),
        p99: rank(0.99),
        min: ms[0],
        max: ms[ms.len() - 1],
    }
}

fn text(r: &Report) -> String {
    let l = &r.latency_ms;
    let mut s = format!("model: {}\nexecutor: {}\n", r.model, r.executor);
    s += &format!("warm-up: {} runs; measured: {} runs in {:.3} s\n\n", r.warmup_runs, r.runs, r.wall_s);
    let cells: Vec<String> = [l.median, l.mean, l.p90, l.p99, l.min, l.max].iter().map(|v| format!("{v:.4}")).collect();
    s += &crate::table::render(
        &["latency (ms)", " median", " mean", " p90", " p99", " min", " max"],
        &[[vec![String::new()], cells].concat()],
    );
    s + &format!("\nthroughput: {:.1} runs/s\n", r.throughput_per_s)
}

// --- a VM executable ----------------------------------------------------------------------------------

/// `tvm-rt bench` on a VM executable: whole calls of the function, on the same arrays.
fn bench_vm(args: &Args, model: &VmModel) -> Result<(), Failure> {
    no_executor_options(&args.exec)?;
    args.no_pipeline()?;
    let arrays = model.arrays(&args.vm, &args.inputs, Some(Fill::Random))?;
    let call = model.call(&args.vm, arrays)?;
    let (stop, show) = args.stop();
    let (latencies, wall) = measure_executor(args.warmup, stop, show, || call().map(drop))?;
    let executor = format!("cpu; Relax VM, function {}, pooled allocator", args.vm.name());
    report(args, model.source.clone(), executor, latencies, wall)
}
