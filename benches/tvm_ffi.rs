//! tvm-ffi's C API from C: a packed call (`TVMFFIFunctionCall` on a C function made by
//! `TVMFFIFunctionCreate`), a DLPack 1.x tensor taken in (`TVMFFITensorFromDLPackVersioned`,
//! then released) and handed out (`TVMFFITensorToDLPackVersioned`, then its deleter): this
//! library against the real `libtvm_ffi.so` (apache-tvm-ffi,
//! found beside apache-tvm as for the other benches: `bash benches/setup_tvm_peer.sh`). The same
//! client, benches/tvm_ffi/call.c, is built against tvm-ffi's own header and linked to each
//! library; each run is its own process, the two alternate `TVM_FFI_BENCH_REPS` times (default
//! 7), and medians are reported.
//!
//! On x86-64 the same runs also price the tests this runtime's call makes before its jump
//! (`TVMFFIFunctionCall` checks its handle, its result slot and the handle's type; tvm-ffi's
//! jumps at once): the real library's client runs again with a stand-in for that one export
//! preloaded (benches/tvm_ffi/call_floor.S), its own jump, the jump after a no-op, after one
//! NULL test and after this runtime's three tests, so the library, the client and the callee
//! stay the same and only the export's instructions differ.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn build(out: &Path, lib_dir: &Path, lib: &str) -> PathBuf {
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(repo().join("c_tests/third_party/tvm_ffi/include"))
        .arg(repo().join("benches/tvm_ffi/call.c"))
        .arg("-L")
        .arg(lib_dir)
        .arg(format!("-l{lib}"))
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(out)
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling benches/tvm_ffi/call.c against {}", lib_dir.display());
    out.to_path_buf()
}

/// The client's output: one JSON object of nanoseconds per operation.
fn run_client(client: &Path, args: &[&str], preload: Option<&Path>) -> serde_json::Value {
    let mut cmd = Command::new(client);
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    if let Some(p) = preload {
        cmd.env("LD_PRELOAD", p);
    }
    let out = cmd.output().expect("the client runs");
    assert!(out.status.success(), "{}: {}", client.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn field(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The client's nanoseconds per operation: a call, a DLPack import, a DLPack export.
fn per_op_ns(client: &Path) -> [f64; 3] {
    let v = run_client(client, &["1"], None);
    ["call_ns", "dlpack_in_ns", "dlpack_out_ns"].map(|k| field(&v, k))
}

/// The stand-ins for `TVMFFIFunctionCall` (see the module's comment), by what they do before
/// the jump; empty off x86-64.
const FLOOR: [&str; 4] = ["nothing (tvm-ffi's own jump)", "a no-op", "one NULL test", "this runtime's three tests"];

fn build_floor(dir: &Path) -> Vec<PathBuf> {
    if !cfg!(target_arch = "x86_64") {
        return Vec::new();
    }
    (0..FLOOR.len())
        .map(|v| {
            let out = dir.join(format!("call_floor{v}.so"));
            let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
                .args(["-shared", &format!("-DVARIANT={v}")])
                .arg(repo().join("benches/tvm_ffi/call_floor.S"))
                .arg("-o")
                .arg(&out)
                .status()
                .expect("cc runs");
            assert!(status.success(), "assembling benches/tvm_ffi/call_floor.S (VARIANT={v})");
            out
        })
        .collect()
}

const CASES: [&str; 3] = [
    "TVMFFIFunctionCall of a C function",
    "DLPack import (TVMFFITensorFromDLPackVersioned + release)",
    "DLPack export (TVMFFITensorToDLPackVersioned + deleter)",
];

fn main() {
    let reps: usize = std::env::var("TVM_FFI_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let dir = scratch("tvm_ffi");
    let ours = build(&dir.join("call_ours"), &repo().join("target/release"), "tvm_runtime");
    let real = peer_paths().ok().and_then(|(_, deps)| deps.into_iter().next());
    let Some(real) = real else {
        let runs: Vec<[f64; 3]> = (0..reps).map(|_| per_op_ns(&ours)).collect();
        for (i, case) in CASES.iter().enumerate() {
            let ns = median(&mut runs.iter().map(|r| r[i]).collect::<Vec<_>>());
            println!(
                "tvm_ffi {case}: ours {} ns (the real libtvm_ffi.so not found: benches/setup_tvm_peer.sh)",
                fmt(ns)
            );
        }
        return;
    };
    let peer = build(&dir.join("call_real"), real.parent().unwrap(), "tvm_ffi");
    let floor = build_floor(&dir);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut stand_in: Vec<Vec<f64>> = vec![Vec::new(); floor.len()];
    for _ in 0..reps {
        a.push(per_op_ns(&ours));
        b.push(per_op_ns(&peer));
        for (so, ns) in floor.iter().zip(&mut stand_in) {
            ns.push(field(&run_client(&peer, &["1", "call"], Some(so)), "call_ns"));
        }
    }
    println!("tvm_ffi: {reps} alternating runs, each the median of batches for 1 s per case");
    for (i, case) in CASES.iter().enumerate() {
        let (mut x, mut y): (Vec<f64>, Vec<f64>) = (a.iter().map(|r| r[i]).collect(), b.iter().map(|r| r[i]).collect());
        report(case, "ours", median(&mut x), "libtvm_ffi.so", median(&mut y), "ns", Some(1.0));
    }
    let real_call = median(&mut b.iter().map(|r| r[0]).collect::<Vec<_>>());
    for (what, mut ns) in FLOOR.iter().zip(stand_in) {
        let name = format!("TVMFFIFunctionCall on libtvm_ffi.so, doing {what} before its jump");
        report(&name, "stand-in", median(&mut ns), "libtvm_ffi.so", real_call, "ns", None);
    }
}
