//! `tvm-rt` on Relax VM executables, run as a user runs it: inspect, run (every recorded case of
//! TVM 0.18's libraries in tests/data/relax-0.18, compared with TVM's own outputs), bench, and
//! the errors of bad arguments. Expected outputs come from TVM (the manifest's files), never
//! from the tool.

mod common;

use common::{repo, scratch};
use npyz::WriterBuilder;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn expect(self, code: i32) -> Output {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

fn tvm_rt(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-rt")).args(args).output().expect("running tvm-rt");
    Output {
        code: out.status.code().expect("an exit code, not a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn data(set: &str) -> PathBuf {
    repo().join("tests/data").join(set)
}

fn manifest(set: &str) -> Value {
    serde_json::from_slice(&std::fs::read(data(set).join("manifest.json")).unwrap()).unwrap()
}

fn lib(set: &str, model: &str) -> String {
    data(set).join(manifest(set)["models"][model]["lib"].as_str().unwrap()).to_str().unwrap().to_string()
}

fn shape_of(t: &Value) -> Vec<u64> {
    t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect()
}

/// The raw float32 file a manifest entry names, as a .npy file in `dir`.
fn as_npy(folder: &Path, t: &Value, dir: &Path, name: &str) -> String {
    let bytes = std::fs::read(folder.join(t["file"].as_str().unwrap())).unwrap();
    let values: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let path = dir.join(name);
    let file = std::fs::File::create(&path).unwrap();
    let mut w = npyz::WriteOptions::new().default_dtype().shape(&shape_of(t)).writer(file).begin_nd().unwrap();
    w.extend(values.iter().copied()).unwrap();
    w.finish().unwrap();
    path.to_str().unwrap().to_string()
}

fn read_f32_npy(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    (npy.shape().to_vec(), npy.into_vec::<f32>().unwrap())
}

/// Every case of `set`: inputs from .npy files, every output compared (1e-5 relative) with
/// TVM's, and written to a folder where it reads back as the expected array.
fn run_every_case(set: &str) {
    let m = manifest(set);
    for (model, entry) in m["models"].as_object().unwrap() {
        let folder = data(set).join(entry["lib"].as_str().unwrap()).parent().unwrap().to_path_buf();
        for case in entry["cases"].as_array().unwrap() {
            let tag = format!("{set}-{model}-{}", case["name"].as_str().unwrap());
            let dir = scratch(&format!("cli-vm/{tag}"));
            let func = case["func"].as_str().unwrap();
            let lib = lib(set, model);
            let mut args: Vec<String> = ["run", &lib, "--function", func].iter().map(|s| s.to_string()).collect();
            for (k, t) in case["inputs"].as_array().unwrap().iter().enumerate() {
                let npy = as_npy(&folder, t, &dir, &format!("in{k}.npy"));
                args.extend(["-i".to_string(), format!("{}={npy}", t["name"].as_str().unwrap())]);
            }
            let outputs = case["outputs"].as_array().unwrap();
            for (k, t) in outputs.iter().enumerate() {
                let npy = as_npy(&folder, t, &dir, &format!("want{k}.npy"));
                args.extend(["--compare".to_string(), format!("{k}={npy}")]);
            }
            let out_dir = dir.join("out");
            args.extend(["--output-dir".to_string(), out_dir.to_str().unwrap().to_string()]);
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = tvm_rt(&argv).expect(0);
            assert_eq!(out.stdout.matches(": OK (").count(), outputs.len(), "{tag}:\n{}", out.stdout);
            for (k, t) in outputs.iter().enumerate() {
                let (shape, got) = read_f32_npy(&out_dir.join(format!("{func}_{k}.npy")));
                let (_, want) = read_f32_npy(&dir.join(format!("want{k}.npy")));
                assert_eq!(shape, shape_of(t), "{tag} output {k}");
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{tag} output {k}: {g} vs {w}");
                }
            }
        }
    }
}

#[test]
fn run_matches_tvm_0_18_on_every_recorded_case() {
    run_every_case("relax-0.18");
}

/// apache-tvm 0.27's and 0.25's libraries: run where this runtime reads tvm-ffi libraries as VM
/// executables; where it does not (they open as plain kernel libraries), the test says so and
/// checks nothing else.
#[test]
fn run_matches_apache_tvm_0_25_and_0_27_on_every_recorded_case() {
    let probe = tvm_rt(&["inspect", &lib("relax-0.27", "mlp")]);
    if probe.code == 2 && probe.stderr.contains("holds a `library` module") {
        eprintln!("skipped: this runtime opens apache-tvm 0.27 libraries as kernel libraries, not VM executables");
        return;
    }
    run_every_case("relax-0.27");
    run_every_case("relax-0.25");
}

#[test]
fn inspect_lists_functions_parameters_and_symbolic_shapes() {
    let out = tvm_rt(&["inspect", &lib("relax-0.18", "two_funcs")]).expect(0);
    assert!(out.stdout.contains("Relax VM executable (tvm-0.18"), "{}", out.stdout);
    assert!(out.stdout.contains("function main (") && out.stdout.contains("function second ("), "{}", out.stdout);
    let rows: Vec<Vec<&str>> = out.stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.contains(&vec!["a", "float32", "[4,", "8]"]), "{}", out.stdout);
    assert!(rows.contains(&vec!["b", "float32", "[8,", "3]"]), "{}", out.stdout);
    let dyn_text = tvm_rt(&["inspect", &lib("relax-0.18", "dyn")]).expect(0).stdout;
    assert!(
        dyn_text.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["x", "float32", "[n,", "16]"]),
        "{dyn_text}"
    );
    let j = tvm_rt(&["inspect", "--json", &lib("relax-0.18", "dyn")]).expect(0).json();
    let x = &j["relax_vm"]["functions"][0]["params"][0];
    assert_eq!((x["name"].as_str(), x["dtype"].as_str()), (Some("x"), Some("float32")));
    assert_eq!(x["shape"], serde_json::json!(["n", 16]));
    assert_eq!(j["relax_vm"]["format"], "tvm-0.18");
}

#[test]
fn run_prints_and_writes_a_tuple_per_element() {
    let dir = scratch("cli-vm/tuple");
    let out = tvm_rt(&["run", &lib("relax-0.18", "tuple"), "--fill", "random", "--output-dir", dir.to_str().unwrap()])
        .expect(0);
    assert!(out.stdout.contains("output 0: float32 [4, 8]"), "{}", out.stdout);
    assert!(out.stdout.contains("output 1: float32 [4]"), "{}", out.stdout);
    let (s0, x0) = read_f32_npy(&dir.join("main_0.npy"));
    let (s1, x1) = read_f32_npy(&dir.join("main_1.npy"));
    assert_eq!((s0, s1), (vec![4, 8], vec![4]));
    assert!(x0.iter().chain(&x1).all(|v| v.is_finite()) && x0.iter().any(|&v| v != 0.0));
}

#[test]
fn a_mismatch_exits_1() {
    let set = "relax-0.18";
    let folder = data(set).join("mlp");
    let case = &manifest(set)["models"]["mlp"]["cases"][0];
    let dir = scratch("cli-vm/mismatch");
    let x = as_npy(&folder, &case["inputs"][0], &dir, "x.npy");
    // Zeros: the model's output for this input is not all zeros.
    let wrong_path = dir.join("zeros.npy");
    let file = std::fs::File::create(&wrong_path).unwrap();
    let mut w = npyz::WriteOptions::new().default_dtype().shape(&[4, 10]).writer(file).begin_nd().unwrap();
    w.extend([0f32; 40].iter().copied()).unwrap();
    w.finish().unwrap();
    let out = tvm_rt(&["run", &lib(set, "mlp"), "-i", &format!("x={x}"), "-c", &format!("0={}", wrong_path.display())]);
    let out = out.expect(1);
    assert!(out.stdout.contains("MISMATCH"), "{}", out.stdout);
    assert!(out.stderr.contains("output `0` differs"), "{}", out.stderr);
}

#[test]
fn bench_times_a_chosen_function() {
    let out = tvm_rt(&["bench", &lib("relax-0.18", "two_funcs"), "--function", "second", "--runs", "25", "--json"]);
    let j = out.expect(0).json();
    assert_eq!(j["runs"], 25);
    assert!(j["executor"].as_str().unwrap().contains("function second"), "{j}");
    let l = &j["latency_ms"];
    assert!(l["min"].as_f64().unwrap() > 0.0 && l["min"].as_f64() <= l["median"].as_f64());
}

#[test]
fn profile_times_every_kernel_call_and_writes_a_trace() {
    let trace = scratch("cli-vm/profile").join("trace.json");
    let lib = lib("relax-0.18", "two_funcs");
    let args = ["profile", &lib, "--function", "second", "--runs", "5", "--json", "--trace", trace.to_str().unwrap()];
    let j = tvm_rt(&args).expect(0).json();
    assert_eq!(j["runs"], 5);
    let ops = j["ops"].as_array().unwrap();
    // second(a, b) = softmax(main(a) @ b), main(x) = 2x + 1: four kernel calls, main's inside.
    let mut names: Vec<&str> = ops.iter().map(|o| o["kernel"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "matmul", "multiply", "softmax"], "{j}");
    assert!(ops.iter().all(|o| o["time_us"].as_f64().unwrap() > 0.0), "{j}");
    let total: f64 = ops.iter().map(|o| o["time_us"].as_f64().unwrap()).sum();
    assert!((j["total_us"].as_f64().unwrap() - total).abs() < 1e-6);
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert_eq!(t["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count(), 4);
}

fn fails(args: &[&str], message: &str) {
    let out = tvm_rt(args).expect(2);
    assert!(out.stderr.contains(message), "expected `{message}` in:\n{}", out.stderr);
}

#[test]
fn bad_arguments_exit_2_with_what_was_wrong() {
    let dyn_lib = lib("relax-0.18", "dyn");
    let mlp = lib("relax-0.18", "mlp");
    let dir = scratch("cli-vm/errors");
    let case = &manifest("relax-0.18")["models"]["dyn"]["cases"][1];
    let x3 = as_npy(&data("relax-0.18").join("dyn"), &case["inputs"][0], &dir, "x3.npy");
    let wrong = as_npy(&data("relax-0.18").join("dyn"), &case["outputs"][0], &dir, "y3.npy");
    fails(&["run", &dyn_lib, "--function", "nope", "--fill", "zeros"], "no function `nope` (functions: `main`)");
    fails(&["run", &dyn_lib, "-i", &format!("y={x3}")], "has no parameter named `y` (parameters: `x`)");
    fails(
        &["run", &dyn_lib, "-i", &format!("x={wrong}")],
        "input `x` of `main` is float32 [n, 16], the file holds float32 [6, 8]",
    );
    fails(
        &["run", &dyn_lib, "--fill", "random"],
        "float32 [n, 16], which has no fixed shape to fill: give --input x=FILE.npy",
    );
    fails(&["run", &mlp], "missing input `x` of `main` (float32 [4, 32])");
    fails(&["run", &mlp, "--fill", "zeros", "--inter-op-threads", "2"], "graph executor options");
    fails(&["bench", &mlp, "--core-groups", "2"], "graph executor options");
    fails(&["profile", &mlp, "--memory-plan", "parallel"], "graph executor options");
    fails(&["run", &mlp, "--fill", "zeros", "-o", "3=x.npy"], "`main` has no output `3` (outputs: `0`)");
    // What is not a VM executable goes the graph path, which has no functions to choose.
    let not_vm = repo().join("tests/data/relax-0.18/README.md");
    fails(&["run", not_vm.to_str().unwrap(), "--function", "main"], "only Relax VM executables have functions");
}

/// `tvm-rt run --device opencl` on an OpenCL Relax model (tests/data/opencl-0.27, expected output
/// from numpy): inputs from the host go to the device, the output comes back and matches; on the
/// CPU the same file fails naming the device its kernels need; a device kind TVM has no name for
/// is a usage error. Skipped, saying so, where no OpenCL platform is installed.
#[test]
fn run_on_an_opencl_device() {
    if let Err(e) = tvm_runtime::runtime::device::opencl::driver() {
        eprintln!("skipped: {e}");
        return;
    }
    let dir = scratch("cli-vm-opencl");
    let folder = data("opencl-0.27");
    let as_file = |what: &str, shape: &[u64]| {
        let t = serde_json::json!({ "file": format!("vm_mlp.{what}.bin"), "shape": shape });
        as_npy(&folder, &t, &dir, &format!("{what}.npy"))
    };
    let (x, y) = (as_file("input", &[5, 32]), as_file("output", &[5, 10]));
    let model = folder.join("vm_mlp.so");
    let model = model.to_str().unwrap();
    let (input, compare) = (format!("x={x}"), format!("0={y}"));
    let out = tvm_rt(&["run", model, "--device", "opencl", "--input", &input, "--compare", &compare]).expect(0);
    assert!(out.stdout.contains("OK (max abs error"), "{}", out.stdout);
    let out = tvm_rt(&["run", model, "--input", &input]).expect(3);
    assert!(out.stderr.contains("expected opencl"), "{}", out.stderr);
    let out = tvm_rt(&["run", model, "--device", "gpu:0", "--input", &input]).expect(2);
    assert!(out.stderr.contains("unknown device kind `gpu`"), "{}", out.stderr);
}
