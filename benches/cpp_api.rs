//! TVM's C++ API over our C ABI: `run()` of a graph executor through `PackedFunc::operator()`
//! (include/tvm/runtime/packed_func.h) vs the C API on the same executor (`TVMFuncCall` on the
//! same "run" function), and vs `TVMGraphExecutorRun` on an executor of the same graph. Graphs:
//! `graph_run`'s 500-op chain of trivial kernels, and a 1-op chain where the call itself
//! dominates.
//!
//! The measuring happens in a C++ program (benches/fixtures/cpp_run.cc) linked against this
//! build's libtvm_runtime.so, all sides interleaved in one process; this binary builds it with
//! `c++` (`$CXX` if set), runs it, and reports.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn build_program(out: &Path, lib_dir: &Path) {
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(repo().join("include"))
        .arg(repo().join("benches/fixtures/cpp_run.cc"))
        .arg("-L")
        .arg(lib_dir)
        .arg("-ltvm_runtime")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(out)
        .status()
        .expect("a C++ compiler (c++) must be installed");
    assert!(status.success(), "compiling benches/fixtures/cpp_run.cc failed");
}

/// Runs the measuring program on a chain of `n` ops; (median, fastest) ns per run of each side.
fn measure(program: &Path, kernels: &Path, lib_dir: &Path, n: usize) -> Vec<(String, f64, f64)> {
    let json = scratch("cpp_api").join(format!("chain_{n}.json"));
    std::fs::write(&json, chain_json(n)).unwrap();
    let out = Command::new(program)
        .arg(kernels)
        .arg(&json)
        .args(["40", "5", "2"])
        .env("LD_LIBRARY_PATH", lib_dir)
        .output()
        .expect("running cpp_run");
    assert!(out.status.success(), "cpp_run failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect()
}

fn main() {
    let lib_dir = library_dir();
    let dir = scratch("cpp_api");
    let kernels = build_so(&dir.join("chain_kernels.so"), &[repo().join("benches/fixtures/chain_kernels.c")]);
    let program = dir.join("cpp_run");
    build_program(&program, &lib_dir);
    for n in [500, 1] {
        let s = measure(&program, &kernels, &lib_dir, n);
        let get = |name: &str| s.iter().find(|(k, _, _)| k == name).map(|&(_, m, b)| (m, b)).expect(name);
        let (cpp, cpp_best) = get("cpp_packed_func");
        let (c, c_best) = get("c_tvm_func_call");
        let (ge, ge_best) = get("c_graph_executor_run");
        let name = format!("cpp_api ({n}-op chain)");
        let target = if n == 500 { Some(1.02) } else { None };
        report(&name, "C++ run()", cpp, "TVMFuncCall(run)", c, "ns/run", target);
        report_best(&name, "C++ run()", cpp_best, "TVMFuncCall(run)", c_best, "ns/run");
        report(&name, "C++ run()", cpp, "TVMGraphExecutorRun", ge, "ns/run", None);
        report_best(&name, "C++ run()", cpp_best, "TVMGraphExecutorRun", ge_best, "ns/run");
    }
}
