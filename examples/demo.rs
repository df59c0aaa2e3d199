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

fn arg(name: &str, default: u64) -> Result<u64, String> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => {
            args.get(i + 1).and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a non-negative integer"))
        }
        None => Ok(default),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, String> {
    let seed = arg("--seed", 0)?;
    let runs = arg("--runs", 200)?.max(1) as usize;

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
