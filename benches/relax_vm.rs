//! The Relax VM against apache-tvm's own (the PyPI package's `libtvm_runtime.so` +
//! `libtvm_ffi.so`), on the same files (tests/data/relax-0.27, written by apache-tvm 0.27):
//! load (file -> first call done, in the process, each runtime initialized first: TVM's static
//! initializers run before main, ours at the first API call, which the client makes before the
//! timer and times as init), start (the whole process, spawn to exit, of a client that loads,
//! calls once and exits: it counts both runtimes' initialization), per-call latency, peak
//! RSS of the whole process, and calls/s from 1 and 2 threads on one VM (ours only: TVM's VM
//! object is single-threaded).
//!
//! Each side is a small C program (benches/relax_vm/ours.c over our C API, peer.c over the
//! tvm-ffi C API, measuring code shared in client.h; peer.c also runs unchanged on this library,
//! built against tvm-ffi's headers: the "ours tvm-ffi" row), run as its own process so RSS and load
//! time are each runtime's alone; the two alternate, `RELAX_VM_BENCH_REPS` times (default 5)
//! per model, `RELAX_VM_BENCH_SECONDS` of calls each (default 1), and medians are reported.
//! Without TVM (see `common::peer_paths`; `bash benches/setup_tvm_peer.sh` installs it) ours is
//! measured alone.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Model {
    name: &'static str,
    args: Vec<String>,
}

fn models() -> Vec<Model> {
    let dir = repo().join("tests/data/relax-0.27");
    let input = |m: &str, f: &str, shape: &str| vec![dir.join(m).join(f).display().to_string(), shape.to_string()];
    vec![
        Model {
            name: "one_kernel",
            args: [input("one_kernel", "main0_in0.bin", "4x4"), input("one_kernel", "main0_in1.bin", "4x4")].concat(),
        },
        Model { name: "mlp", args: input("mlp", "main0_in0.bin", "4x32") },
        Model { name: "cnn", args: input("cnn", "main0_in0.bin", "1x3x16x16") },
    ]
}

fn compile(out: &Path, source: &str, include: &[PathBuf], libs: &[(PathBuf, &str)]) -> Result<PathBuf, String> {
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]).arg(repo().join("benches/relax_vm").join(source));
    for dir in include {
        cmd.arg("-I").arg(dir);
    }
    // --no-as-needed: TVM's runtime registers the VM loader from its initializers; the client
    // names none of its symbols, and an as-needed link would drop it.
    cmd.arg("-Wl,--no-as-needed");
    for (dir, name) in libs {
        cmd.arg("-L").arg(dir).arg(format!("-l{name}")).arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    let status = cmd.arg("-lpthread").arg("-o").arg(out).status().map_err(|e| format!("cc: {e}"))?;
    if !status.success() {
        return Err(format!("compiling benches/relax_vm/{source} failed"));
    }
    Ok(out.to_path_buf())
}

fn build_ours(scratch: &Path) -> PathBuf {
    let lib = library_dir();
    compile(&scratch.join("ours"), "ours.c", &[repo().join("include")], &[(lib, "tvm_runtime")]).unwrap()
}

/// apache-tvm's client (peer.c, over the tvm-ffi C API), unchanged, built against tvm-ffi's own
/// headers and linked to this library: the tvm-ffi path of this runtime.
fn build_ours_ffi(scratch: &Path) -> PathBuf {
    let include = repo().join("c_tests/third_party/tvm_ffi/include");
    compile(&scratch.join("ours_ffi"), "peer.c", &[include], &[(library_dir(), "tvm_runtime")]).unwrap()
}

fn build_peer(scratch: &Path) -> Result<PathBuf, String> {
    let (lib, deps) = peer_paths()?;
    let ffi = deps.first().ok_or("no libtvm_ffi.so beside TVM's runtime")?;
    let ffi_dir = ffi.parent().unwrap().to_path_buf();
    let include = ffi_dir.parent().unwrap().join("include");
    let libs = [(ffi_dir, "tvm_ffi"), (lib.parent().unwrap().to_path_buf(), "tvm_runtime")];
    compile(&scratch.join("peer"), "peer.c", &[include], &libs)
}

#[derive(Default, Clone)]
struct Sample {
    init_us: f64,
    load_us: f64,
    start_us: f64,
    call_us: f64,
    p90_us: f64,
    calls_per_s: f64,
    maxrss_kb: f64,
}

fn field(line: &str, key: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("bad client output {line:?}: {e}"));
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {line}"))
}

fn run(client: &Path, model: &Model, func: &str, seconds: &str, threads: usize) -> Sample {
    let (text, _) = spawn(client, model, func, seconds, threads);
    let line = text.lines().last().unwrap_or_default();
    let (_, start) = spawn(client, model, func, "0", 0);
    Sample {
        init_us: field(line, "init_us"),
        load_us: field(line, "load_us"),
        start_us: start.as_secs_f64() * 1e6,
        call_us: field(line, "call_us"),
        p90_us: field(line, "call_us_p90"),
        calls_per_s: field(line, "calls_per_s"),
        maxrss_kb: field(line, "maxrss_kb"),
    }
}

/// One client process: its standard output and its wall time from spawn to exit.
fn spawn(client: &Path, model: &Model, func: &str, seconds: &str, threads: usize) -> (String, std::time::Duration) {
    let lib = repo().join("tests/data/relax-0.27").join(model.name).join("lib.so");
    let t0 = std::time::Instant::now();
    let out = Command::new(client)
        .arg(&lib)
        .arg(func)
        .arg(seconds)
        .arg(threads.to_string())
        .args(&model.args)
        .env("TVM_NUM_THREADS", "1")
        // Each client finds its runtime by its rpath; cargo's LD_LIBRARY_PATH (our target dir)
        // would otherwise hand the peer our libtvm_runtime.so in place of TVM's.
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("running a bench client");
    let wall = t0.elapsed();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} on {}: {}{}",
        client.display(),
        model.name,
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    (text, wall)
}

fn med(samples: &[Sample], f: fn(&Sample) -> f64) -> f64 {
    let mut v: Vec<f64> = samples.iter().map(f).collect();
    median(&mut v)
}

fn main() {
    let reps: usize = std::env::var("RELAX_VM_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let seconds = std::env::var("RELAX_VM_BENCH_SECONDS").unwrap_or_else(|_| "1".into());
    let dir = scratch("relax_vm");
    let ours = build_ours(&dir);
    let ours_ffi = build_ours_ffi(&dir);
    let peer = build_peer(&dir).map_err(|e| println!("apache-tvm not measured: {e}")).ok();
    println!("relax_vm: {reps} alternating runs per side, {seconds} s of calls each, medians; TVM_NUM_THREADS=1");
    println!(
        "{:<11} {:>12} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>10} {:>9} {:>9} {:>10} {:>10} {:>9}",
        "model",
        "side",
        "call us",
        "p90 us",
        "call x",
        "load us",
        "load x",
        "init us",
        "start us",
        "start x",
        "rss MB",
        "rss x",
        "1 thr/s",
        "2 thr x"
    );
    for model in models() {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            a.push(run(&ours, &model, "main", &seconds, 0));
            c.push(run(&ours_ffi, &model, "main", &seconds, 0));
            if let Some(p) = &peer {
                b.push(run(p, &model, "main", &seconds, 0));
            }
        }
        let t1: Vec<Sample> = (0..reps.min(3)).map(|_| run(&ours, &model, "main", &seconds, 1)).collect();
        let t2: Vec<Sample> = (0..reps.min(3)).map(|_| run(&ours, &model, "main", &seconds, 2)).collect();
        report(model.name, [&a, &c, &b], med(&t1, |s| s.calls_per_s), med(&t2, |s| s.calls_per_s));
    }
}

/// Rows for our C API, apache-tvm's client on this library (tvm-ffi API), and apache-tvm.
fn report(name: &str, [ours, ours_ffi, peer]: [&[Sample]; 3], one: f64, two: f64) {
    let row = |side: &str, s: &[Sample], base: Option<&[Sample]>, threads: Option<(f64, f64)>| {
        let ratio = |f: fn(&Sample) -> f64| base.map(|b| format!("{:.2}", med(s, f) / med(b, f))).unwrap_or_default();
        let (t1, t2) = threads.map(|(a, b)| (format!("{a:.0}"), format!("{:.2}", b / a))).unwrap_or_default();
        println!(
            "{:<11} {:>12} {:>10.3} {:>10.3} {:>9} {:>10.0} {:>10} {:>8.0} {:>10.0} {:>9} {:>9.1} {:>10} {:>10} {:>9}",
            name,
            side,
            med(s, |x| x.call_us),
            med(s, |x| x.p90_us),
            ratio(|x| x.call_us),
            med(s, |x| x.load_us),
            ratio(|x| x.load_us),
            med(s, |x| x.init_us),
            med(s, |x| x.start_us),
            ratio(|x| x.start_us),
            med(s, |x| x.maxrss_kb) / 1024.0,
            ratio(|x| x.maxrss_kb),
            t1,
            t2
        );
    };
    let base = if peer.is_empty() { None } else { Some(peer) };
    row("ours", ours, base, Some((one, two)));
    row("ours tvm-ffi", ours_ffi, base, None);
    if let Some(p) = base {
        row("apache-tvm", p, None, None);
    }
}
