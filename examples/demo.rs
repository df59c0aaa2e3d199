//! Demo: build a small image classifier into a TVM-style `export_library` .so, then run it
//! through the runtime's C API and check it.
//!
//!     cargo run --release --example demo [-- --seed N --runs N]
//!
//! The repository builds the model itself (examples/demo/model.rs): hand-written kernels with
//! TVM's compiled-kernel ABI (examples/demo/kernels.c), graph JSON in TVM's format and
//! pseudo-random weights packed as a `GraphExecutorFactory` module blob, all compiled by `cc`
//! into `target/demo/demo_model.so`. The program then uses only the C API (TVMModLoadFromFile,
//! TVMGraphExecutorCreateFromFactory, SetInput, Run, GetOutput, Profile), compares the class
//! probabilities with a pure-Rust reference implementation, and reports latency and each op's
//! median time over several profiled runs (the library's profile helpers only summarize the
//! traces `TVMGraphExecutorProfile` returns).

#[path = "demo/capi.rs"]
mod capi;
#[path = "demo/model.rs"]
mod model;

use std::process::ExitCode;
use std::time::Instant;
use tvm_runtime::graph::profile::{median_timings, profile_table};

const TOLERANCE: f32 = 1e-5;
/// Profiled runs; each op's time is its median over them.
const PROFILE_RUNS: usize = 20;

const USAGE: &str = "\
usage: cargo run --release --example demo [-- --seed N --runs N]

Builds the demo model into target/demo/demo_model.so, runs it through the C API, checks it
against a Rust reference and reports latency and per-op times.

  --seed N   which image to classify: a ring and a bar placed by N (default 0)
  --runs N   timed runs for the latency figures (default 200)
  --help     this text";

/// The demo's options: `None` when `--help` asked for the usage text.
struct Options {
    seed: u64,
    runs: usize,
}

fn options(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options { seed: 0, runs: 200 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let number = |v: Option<&String>| {
            v.and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| format!("{a} needs a non-negative integer\n\n{USAGE}"))
        };
        match a.as_str() {
            "--help" | "-h" => return Ok(None),
            "--seed" => o.seed = number(it.next())?,
            "--runs" => o.runs = number(it.next())?.max(1) as usize,
            other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
        }
    }
    Ok(Some(o))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match options(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(o.seed, o.runs) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(seed: u64, runs: usize) -> Result<bool, String> {
    println!("demo model: 1x1x16x16 image -> conv3x3(8)+relu -> maxpool -> conv3x3(16)+relu -> maxpool -> dense(10) -> softmax");
    let t0 = Instant::now();
    let so = model::build()?;
    println!(
        "built {} ({} kernels, graph JSON, {} weights, {} bytes of module blob) in {:.2} s",
        so.strip_prefix(model::repo_dir()).unwrap_or(&so).display(),
        model::kernel_names().len(),
        model::params().len(),
        model::module_blob().len(),
        t0.elapsed().as_secs_f64()
    );

    // Everything below goes through the C API only.
    let lib = capi::Library::load(&so)?;
    let mut exec = capi::Executor::new(&lib)?;
    let image = model::input_image(seed);
    let mut probs = vec![0f32; model::NUM_CLASSES];
    exec.set_input(model::INPUT_NAME, &image, &model::INPUT_SHAPE)?;
    exec.run()?;
    exec.get_output(0, &mut probs, &model::OUTPUT_SHAPE)?;

    let class = model::argmax(&probs);
    println!(
        "\ninput image seed {seed}: predicted class {class} (p = {:.4}; the weights are seeded pseudo-random, \
         so the class is arbitrary but deterministic)",
        probs[class]
    );
    for row in probs.chunks(5).enumerate() {
        let cells: Vec<String> = row.1.iter().enumerate().map(|(j, p)| format!("{}: {p:.4}", row.0 * 5 + j)).collect();
        println!("  {}", cells.join("   "));
    }

    let want = model::reference(&image);
    let diff = model::max_abs_diff(&probs, &want);
    let ok = diff < TOLERANCE && model::argmax(&want) == class;
    println!("check against the Rust reference: max |diff| = {diff:.2e} -> {}", if ok { "OK" } else { "MISMATCH" });
    if !ok {
        eprintln!("runtime: {probs:?}\nreference: {want:?}");
        return Ok(false);
    }

    // Latency of TVMGraphExecutorRun (the whole graph, input already set).
    for _ in 0..20 {
        exec.run()?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        exec.run()?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let threads = match capi::num_threads() {
        Ok(1) => "1 thread".to_string(),
        Ok(n) => format!("{n} threads"),
        Err(_) => "? threads".to_string(),
    };
    println!(
        "\nlatency of TVMGraphExecutorRun over {runs} runs ({threads}): median {:.1} us, p90 {:.1} us",
        percentile(&times, 0.5),
        percentile(&times, 0.9)
    );

    // Per-op times from one run disagree with the latency above whenever that run is disturbed:
    // each op's median over several runs (the runs above warmed everything up), as `tvm-rt profile`.
    let profiled = (0..PROFILE_RUNS).map(|_| exec.profile_run()).collect::<Result<Vec<_>, _>>()?;
    println!("\nper-op profile, each op's median of {PROFILE_RUNS} runs (TVMGraphExecutorProfile):");
    print!("{}", profile_table(&median_timings(&profiled)));
    Ok(true)
}
