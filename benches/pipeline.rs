//! The request pipeline (`TVMPipeline*`) against one executor, each side measured in the same
//! run, through the C API as an application would use them:
//!
//! * throughput: G core groups x T threads (4 requests in flight per group, all kept
//!   outstanding) against one executor using all G*T threads for its kernels, requests back to
//!   back; for every (G, T) that fits the cores (`BENCH_CORES`, default: this machine's);
//! * latency: submit -> wait of one request at a time against a synchronous set_input / run /
//!   get_output, on the demo model (tiny): the asynchronous path's overhead in microseconds;
//! * memory: RSS of a pipeline (G groups, 2G contexts) against one executor plus one more set of
//!   activations per extra context, each measured in a fresh child process (also on a model
//!   whose weights dwarf its activations).
//!
//! `BENCH_ONLY=latency|throughput|memory` runs one part; `BENCH_ROUNDS` sets the rounds.
//!
//! Models: the demo model and the larger CNN (`Spec::large()`, ~26 ms per inference on one
//! core), both built by the repository (`examples/demo/model.rs`).

#[path = "common/mod.rs"]
mod common;
#[path = "../examples/demo/model.rs"]
mod model;

use common::*;
use std::collections::VecDeque;
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::pipeline::*;
use tvm_runtime::ffi::graph_executor::*;
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModLoadFromFile};

/// A model to measure: its library and tensor shapes.
struct Model {
    name: String,
    so: PathBuf,
    input: Vec<i64>,
    output: Vec<i64>,
    /// Measured for memory only.
    memory_only: bool,
}

impl Model {
    /// The model of `spec`, built unless `built` says the parent process built it already (a
    /// memory child must not build: the weights it would make and free stay in the allocator
    /// and hide the growth being measured).
    fn of(spec: &model::Spec, memory_only: bool, built: bool) -> Model {
        let so = match built {
            true => model::target_dir().join("demo").join(format!("{}_model.so", spec.name)),
            false => model::build_spec(spec).unwrap_or_else(|e| panic!("building {}: {e}", spec.name)),
        };
        Model {
            name: spec.name.clone(),
            so,
            input: spec.input_shape().to_vec(),
            output: spec.output_shape().to_vec(),
            memory_only,
        }
    }
}

/// The demo, the large CNN, and for memory a model whose 8 MiB of weights dwarf its
/// activations (one conv stage, then a dense layer of 16384 x 128), so a copy of the weights per
/// context would show.
fn models(built: bool) -> Vec<Model> {
    let wide = model::Spec::wide_conv();
    vec![
        Model::of(&model::Spec::demo(), false, built),
        Model::of(&model::Spec::large(), false, built),
        Model::of(&wide, true, built),
    ]
}

fn load(so: &Path) -> *mut c_void {
    let path = CString::new(so.to_str().unwrap()).unwrap();
    let mut m = std::ptr::null_mut();
    check(unsafe { TVMModLoadFromFile(path.as_ptr(), c"".as_ptr(), &mut m) }, "load");
    m
}

fn executor(factory: *mut c_void, threads: usize) -> *mut TVMGraphExecutor {
    let dev = DLDevice::cpu(0);
    let opts = CString::new(format!("intra_op_threads={threads}")).unwrap();
    let mut g = std::ptr::null_mut();
    check(unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory, &dev, 1, opts.as_ptr(), &mut g) }, "executor");
    g
}

fn pipeline(factory: *mut c_void, options: &str) -> *mut TVMPipeline {
    let dev = DLDevice::cpu(0);
    let opts = CString::new(options).unwrap();
    let mut p = std::ptr::null_mut();
    check(unsafe { TVMPipelineCreate(factory, &dev, 1, opts.as_ptr(), &mut p) }, "pipeline");
    p
}

/// One synchronous inference.
fn infer(g: *mut TVMGraphExecutor, x: &mut Buffer, y: &mut Buffer) {
    check(unsafe { TVMGraphExecutorSetInputByIndex(g, 0, &x.tensor()) }, "set_input");
    check(unsafe { TVMGraphExecutorRun(g) }, "run");
    check(unsafe { TVMGraphExecutorGetOutput(g, 0, &mut y.tensor()) }, "get_output");
}

/// `n` requests through the pipeline, `window` outstanding at a time.
fn pipelined(p: *mut TVMPipeline, bufs: &mut [(Buffer, Buffer)], n: usize) {
    let mut outstanding: VecDeque<u64> = VecDeque::new();
    for k in 0..n {
        if outstanding.len() == bufs.len() {
            check(unsafe { TVMPipelineWait(p, outstanding.pop_front().unwrap()) }, "wait");
        }
        let (x, y) = &mut bufs[k % bufs.len()];
        let mut id = 0;
        check(unsafe { TVMPipelineSubmit(p, &x.tensor(), 1, &mut y.tensor(), 1, &mut id) }, "submit");
        outstanding.push_back(id);
    }
    for id in outstanding {
        check(unsafe { TVMPipelineWait(p, id) }, "wait");
    }
}

fn cores() -> usize {
    std::env::var("BENCH_CORES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// (G, T) pairs with G*T = the cores (and, on 2 cores, 1x1 too).
fn configs(cores: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = (1..=cores).filter(|g| cores % g == 0).map(|g| (g, cores / g)).collect();
    if cores <= 2 {
        v.insert(0, (1, 1));
    }
    v
}

/// Requests per sample so a sample takes about `target`.
fn requests_for(g: *mut TVMGraphExecutor, m: &Model, target: Duration) -> usize {
    let (mut x, mut y) = (Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0));
    infer(g, &mut x, &mut y);
    let t = Instant::now();
    for _ in 0..3 {
        infer(g, &mut x, &mut y);
    }
    let per = t.elapsed().as_secs_f64() / 3.0;
    ((target.as_secs_f64() / per) as usize).clamp(8, 20_000)
}

fn throughput(m: &Model, factory: *mut c_void) {
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    for (groups, threads) in configs(cores()) {
        let g = executor(factory, groups * threads);
        let n = requests_for(g, m, Duration::from_millis(400));
        let p =
            pipeline(factory, &format!("core_groups={groups},threads_per_group={threads},in_flight={}", 4 * groups));
        let mut bufs: Vec<(Buffer, Buffer)> = (0..4 * groups)
            .map(|k| (Buffer::filled(&m.input, 0.1 * k as f32), Buffer::filled(&m.output, 0.0)))
            .collect();
        let (mut x, mut y) = (Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0));
        pipelined(p, &mut bufs, n);
        let (mut exec_rate, mut pipe_rate) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = Instant::now();
            (0..n).for_each(|_| infer(g, &mut x, &mut y));
            exec_rate.push(n as f64 / t.elapsed().as_secs_f64());
            let t = Instant::now();
            pipelined(p, &mut bufs, n);
            pipe_rate.push(n as f64 / t.elapsed().as_secs_f64());
        }
        let (e, q) = (median(&mut exec_rate), median(&mut pipe_rate));
        let goal = if groups > 1 { " (goal >= 1.1)" } else { "" };
        println!(
            "pipeline throughput [{}] {groups}x{threads}: pipeline {e_q:.1} req/s, executor with {} threads {e:.1} req/s, ratio {:.2}{goal}",
            m.name,
            groups * threads,
            q / e,
            e_q = q
        );
        check(unsafe { TVMPipelineFree(p) }, "free");
        check(unsafe { TVMGraphExecutorFree(g) }, "free");
    }
}

fn latency(m: &Model, factory: *mut c_void) {
    let g = executor(factory, 1);
    let p = pipeline(factory, "core_groups=1,threads_per_group=1,in_flight=1");
    let (mut x, mut y) = (Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0));
    let mut bufs = vec![(Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0))];
    let stats = compare_stats(
        &mut [&mut || infer(g, &mut x, &mut y), &mut || pipelined(p, &mut bufs, 1)],
        Duration::from_millis(20),
        9,
        5,
    );
    let (sync, asynch) = (stats[0].median, stats[1].median);
    let overhead_us = (asynch - sync) / 1e3;
    let verdict = if overhead_us <= 10.0 { "met" } else { "MISSED" };
    println!(
        "pipeline latency [{}]: submit->wait {} ns, synchronous set_input/run/get_output {} ns, overhead {overhead_us:.1} us (goal <= 10 us: {verdict}); fastest samples {} vs {} ns",
        m.name,
        fmt(asynch),
        fmt(sync),
        fmt(stats[1].min),
        fmt(stats[0].min)
    );
    check(unsafe { TVMPipelineFree(p) }, "free");
    check(unsafe { TVMGraphExecutorFree(g) }, "free");
}

/// In a child: RSS growth from loading the model through `what` ("exec N": N executors, each
/// run once; "pipe G": a pipeline of G groups with 2G contexts, each used once).
fn child(what: &str, so: &Path, m: &Model) {
    tvm_runtime::init();
    let base = rss_bytes();
    let factory = load(so);
    let (kind, n) = what.split_once(' ').unwrap();
    let n: usize = n.parse().unwrap();
    let (mut x, mut y) = (Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0));
    let mut keep_exec = Vec::new();
    let mut keep_pipe = Vec::new();
    if kind == "exec" {
        for _ in 0..n {
            let g = executor(factory, 1);
            infer(g, &mut x, &mut y);
            keep_exec.push(g);
        }
    } else {
        let p = pipeline(factory, &format!("core_groups={n},threads_per_group=1,in_flight={}", 2 * n));
        let mut bufs: Vec<(Buffer, Buffer)> =
            (0..2 * n).map(|_| (Buffer::filled(&m.input, 0.5), Buffer::filled(&m.output, 0.0))).collect();
        pipelined(p, &mut bufs, 8 * n);
        keep_pipe.push(p);
    }
    println!("{}", rss_bytes() - base);
    keep_pipe.into_iter().for_each(|p| check(unsafe { TVMPipelineFree(p) }, "free"));
    keep_exec.into_iter().for_each(|g| check(unsafe { TVMGraphExecutorFree(g) }, "free"));
    check(unsafe { TVMModFree(factory) }, "free");
}

fn rss_of(what: &str, m: &Model) -> f64 {
    child_measure(&[("PIPELINE_BENCH_CHILD", what), ("PIPELINE_BENCH_MODEL", &m.name)])
}

fn memory(m: &Model) {
    let (one, two) = (rss_of("exec 1", m), rss_of("exec 2", m));
    let activations = (two - one).max(0.0);
    for groups in [1, 2] {
        let contexts = 2 * groups;
        let pipe = rss_of(&format!("pipe {groups}"), m);
        let expected = one + (contexts - 1) as f64 * activations;
        let ratio = pipe / expected;
        let verdict = if ratio <= 1.1 { "met" } else { "MISSED" };
        println!(
            "pipeline memory [{}] {groups} groups, {contexts} contexts: {:.1} MiB, one executor {:.1} MiB + {} x {:.2} MiB of activations = {:.1} MiB, ratio {ratio:.2} (target <= 1.1: {verdict})",
            m.name,
            pipe / 1048576.0,
            one / 1048576.0,
            contexts - 1,
            activations / 1048576.0,
            expected / 1048576.0
        );
    }
}

fn main() {
    let child_of = std::env::var("PIPELINE_BENCH_CHILD");
    let models = models(child_of.is_ok());
    if let Ok(what) = child_of {
        let name = std::env::var("PIPELINE_BENCH_MODEL").unwrap();
        let m = models.iter().find(|m| m.name == name).unwrap();
        return child(&what, &m.so, m);
    }
    tvm_runtime::init();
    println!("pipeline bench: {} cores (BENCH_CORES), load average {}", cores(), load_note());
    // BENCH_ONLY=latency|throughput|memory runs one part.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let part = |name: &str| only.is_empty() || only == name;
    for m in &models {
        let factory = load(&m.so);
        if m.name == "demo" && part("latency") {
            latency(m, factory);
        }
        if part("throughput") && !m.memory_only {
            throughput(m, factory);
        }
        check(unsafe { TVMModFree(factory) }, "free");
        if part("memory") {
            memory(m);
        }
    }
}
