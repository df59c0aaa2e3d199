//! The `tvm-rt` command-line tool, run as a user runs it, on the demo model (an export_library
//! .so) and on TVM 0.18's artifacts (graph JSON + our kernels + params). Expected outputs come
//! from the C API (the demo) or from TVM itself (tests/data), never from the tool.

#[path = "../examples/demo/capi.rs"]
mod capi;
mod common;
#[path = "../examples/demo/model.rs"]
mod model;

use common::{build_so, f32s, kernels_c, repo, scratch, tvm_data};
use npyz::WriterBuilder;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    /// The process exited with `code`; on another code, show everything it printed.
    fn expect(self, code: i32) -> Output {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        assert!(!self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"), "{}", self.stderr);
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

fn tvm_rt(args: &[&str]) -> Output {
    tvm_rt_in(&std::env::current_dir().unwrap(), args)
}

/// `tvm-rt args` run in the directory `cwd`.
fn tvm_rt_in(cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-rt")).current_dir(cwd).args(args).output().expect("running tvm-rt");
    Output {
        code: out.status.code().expect("an exit code, not a signal"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn dir() -> PathBuf {
    scratch("cli")
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test paths")
}

/// The demo model, built once per test binary.
fn demo() -> &'static str {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    path_str(SO.get_or_init(|| model::build().unwrap_or_else(|e| panic!("building the demo model: {e}"))))
}

/// The demo's weights as a params file.
fn demo_params() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let p = dir().join("demo.params");
        std::fs::write(&p, model::params_blob()).unwrap();
        p
    })
    .clone()
}

/// tests/fixtures/kernels.c as a kernel library (no module blob).
fn kernels_so() -> &'static str {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    path_str(SO.get_or_init(|| build_so(&dir().join("kernels.so"), &[kernels_c()], None)))
}

/// `--graph G --lib L --params P` for a TVM 0.18 model of tests/data.
fn trio(model: &str) -> Vec<String> {
    let data = repo().join("tests/data/tvm-0.18").join(model);
    let arg = |f: &str| data.join(f).to_str().unwrap().to_string();
    ["--graph", &arg("graph.json"), "--lib", kernels_so(), "--params", &arg("params.bin")]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The subcommand `more[0]`, then the model arguments `base`, then the rest of `more`.
fn with<'a>(base: &'a [String], more: &[&'a str]) -> Vec<&'a str> {
    more[..1].iter().copied().chain(base.iter().map(String::as_str)).chain(more[1..].iter().copied()).collect()
}

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) -> String {
    let file = std::fs::File::create(path).unwrap();
    let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(file).begin_nd().unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
    path_str(path).to_string()
}

fn read_f32_npy(path: &Path) -> (Vec<u64>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
    (npy.shape().to_vec(), npy.into_vec::<f32>().unwrap())
}

/// The demo's image `seed` as a .npy file, and the probabilities the C API computes for it.
fn demo_case(seed: u64) -> (String, Vec<f32>) {
    let image = model::input_image(seed);
    let npy = write_npy(&dir().join(format!("image{seed}.npy")), &[1, 1, 16, 16], &image);
    let lib = capi::Library::load(Path::new(demo())).unwrap();
    let mut exec = capi::Executor::new(&lib).unwrap();
    let mut probs = vec![0f32; model::NUM_CLASSES];
    exec.set_input(model::INPUT_NAME, &image, &model::INPUT_SHAPE).unwrap();
    exec.run().unwrap();
    exec.get_output(0, &mut probs, &model::OUTPUT_SHAPE).unwrap();
    (npy, probs)
}

const SOFTMAX: &str = "tvmgen_default_fused_nn_softmax";

// ---------------------------------------------------------------------------------------------
// inspect

#[test]
fn inspect_shows_inputs_kernels_params_and_storage() {
    let out = tvm_rt(&["inspect", demo()]).expect(0);
    let s = &out.stdout;
    for want in ["data", "[1, 1, 16, 16]", "float32", "[10, 256]", "10,240", SOFTMAX, "[1, 10]"] {
        assert!(s.contains(want), "missing `{want}`:\n{s}");
    }
    for k in model::kernel_names() {
        assert!(s.contains(&k), "missing kernel `{k}`:\n{s}");
    }
    let param_bytes: usize = model::params().iter().map(|p| p.data.len() * 4).sum();
    assert!(s.contains(&format!("params: 6 tensors, {} bytes", thousands(param_bytes))), "{s}");
    assert!(s.contains("storage plan (tvm memory plan)") && s.contains("peak activation memory"), "{s}");
    // The reshape nop shares its input's storage.
    let line = s.lines().find(|l| l.contains("reshape_nop") && l.contains("activation")).expect("nop's slot");
    assert!(line.contains("tvmgen_default_fused_nn_max_pool2d_1"), "{line}");
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[test]
fn inspect_json_describes_the_demo() {
    let j = tvm_rt(&["inspect", demo(), "--json"]).expect(0).json();
    let inputs = j["inputs"].as_array().unwrap();
    assert_eq!(inputs[0]["name"], "data");
    assert_eq!(inputs[0]["shape"], serde_json::json!([1, 1, 16, 16]));
    assert_eq!(inputs[0]["dtype"], "float32");
    assert_eq!(inputs[0]["param"], false);
    let params = model::params();
    for p in &params {
        let row = inputs.iter().find(|i| i["name"] == p.name.as_str()).unwrap_or_else(|| panic!("{}", p.name));
        assert_eq!(row["shape"], serde_json::json!(p.shape));
        assert_eq!(row["param"], true);
    }
    assert_eq!(j["outputs"][0]["name"], SOFTMAX);
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([1, 10]));
    assert_eq!(j["ops"], 7);
    let kernels: Vec<&str> = j["kernels"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    for k in model::kernel_names() {
        assert!(kernels.contains(&k.as_str()), "{k} not in {kernels:?}");
    }
    assert!(kernels.contains(&"__nop"));
    assert_eq!(j["params"]["count"], params.len());
    let param_bytes: usize = params.iter().map(|p| p.data.len() * 4).sum();
    assert_eq!(j["params"]["bytes"], param_bytes);
    let slots = j["storage"]["slots"].as_array().unwrap();
    let non_param: u64 = slots.iter().filter(|s| s["kind"] != "param").map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(j["storage"]["peak_activation_bytes"], non_param);
    assert_eq!(j["storage"]["param_bytes"].as_u64().unwrap() as usize, param_bytes);
    assert!(j["storage"]["unshared_activation_bytes"].as_u64().unwrap() > non_param);
    let entries: usize = slots.iter().map(|s| s["entries"].as_array().unwrap().len()).sum();
    assert_eq!(entries, 14, "every graph entry is in one slot");
}

#[test]
fn inspect_a_graph_json_kernels_and_params_trio() {
    let j = tvm_rt(&with(&trio("mlp"), &["inspect", "--json"])).expect(0).json();
    let inputs = j["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 4);
    assert_eq!((inputs[0]["name"].as_str(), inputs[0]["param"].as_bool()), (Some("x"), Some(false)));
    assert_eq!(inputs[0]["shape"], serde_json::json!([2, 8]));
    assert!(inputs[1..].iter().all(|i| i["param"] == true));
    assert_eq!(j["ops"], 2);
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([2, 4]));
    let parallel = tvm_rt(&with(&trio("seed004"), &["inspect", "--json", "--memory-plan", "parallel"])).expect(0);
    assert_eq!(parallel.json()["storage"]["memory_plan"], "parallel");
}

// ---------------------------------------------------------------------------------------------
// run

#[test]
fn run_compares_with_the_c_api_output_and_writes_it() {
    let (image, probs) = demo_case(5);
    let want = write_npy(&dir().join("want5.npy"), &[1, 10], &probs);
    let got = dir().join("got5.npy");
    let compare = format!("{SOFTMAX}={want}");
    let output = format!("0={}", path_str(&got));
    let out = tvm_rt(&["run", demo(), "-i", &format!("data={image}"), "--compare", &compare, "-o", &output]).expect(0);
    assert!(out.stdout.contains(&format!("compare `{SOFTMAX}` with {want}: OK")), "{}", out.stdout);
    assert!(out.stdout.contains("max abs error 0.000e0"), "{}", out.stdout);
    let (shape, values) = read_f32_npy(&got);
    assert_eq!(shape, vec![1, 10]);
    assert_eq!(values, probs, "the written output is the C API's, bit for bit");
}

#[test]
fn run_fails_a_comparison_with_exit_code_1() {
    let (image, mut probs) = demo_case(6);
    probs[3] += 0.01;
    let want = write_npy(&dir().join("want6_off.npy"), &[1, 10], &probs);
    let out = tvm_rt(&["run", demo(), "-i", &format!("data={image}"), "-c", &format!("0={want}")]).expect(1);
    let s = &out.stdout;
    assert!(s.contains("MISMATCH: 1 of 10 elements differ"), "{s}");
    assert!(s.contains("max abs error 1.000e-2"), "{s}");
    assert!(s.contains("first at index [0, 3]"), "{s}");
    assert!(out.stderr.contains(&format!("output `{SOFTMAX}` differs")), "{}", out.stderr);
    // Within a looser tolerance it passes.
    tvm_rt(&["run", demo(), "-i", &format!("data={image}"), "-c", &format!("0={want}"), "--atol", "0.02"]).expect(0);
}

#[test]
fn run_matches_tvm_on_its_own_artifacts() {
    for (name, inputs, shape) in [
        ("mlp", vec![("x", vec![2u64, 8])], vec![2u64, 4]),
        ("seed000", vec![("a", vec![1, 10]), ("b", vec![1, 10]), ("c", vec![1, 10])], vec![1, 10]),
    ] {
        let mut args = with(&trio(name), &["run"]).into_iter().map(String::from).collect::<Vec<_>>();
        for (input, dims) in inputs {
            let data = f32s(&tvm_data(name, &format!("input_{input}.bin")));
            let npy = write_npy(&dir().join(format!("{name}_{input}.npy")), &dims, &data);
            args.extend(["--input".to_string(), format!("{input}={npy}")]);
        }
        let want = write_npy(&dir().join(format!("{name}_out.npy")), &shape, &f32s(&tvm_data(name, "output_0.bin")));
        args.extend(["--compare".into(), format!("0={want}"), "--atol".into(), "1e-5".into()]);
        let out = tvm_rt(&args.iter().map(String::as_str).collect::<Vec<_>>()).expect(0);
        assert!(out.stdout.contains(": OK ("), "{name}: {}", out.stdout);
    }
}

#[test]
fn run_fills_inputs_from_a_seed_and_writes_every_output() {
    let a = dir().join("fill_a");
    let b = dir().join("fill_b");
    for d in [&a, &b] {
        tvm_rt(&["run", demo(), "--fill", "random", "--seed", "7", "--output-dir", path_str(d)]).expect(0);
    }
    let file = format!("{SOFTMAX}.npy");
    let (shape, first) = read_f32_npy(&a.join(&file));
    assert_eq!(shape, vec![1, 10]);
    assert!((first.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{first:?}");
    assert_eq!(read_f32_npy(&b.join(&file)).1, first, "the same seed gives the same output");
    let zeros = dir().join("fill_zeros");
    tvm_rt(&["run", demo(), "--fill", "zeros", "--output-dir", path_str(&zeros)]).expect(0);
    let lib = capi::Library::load(Path::new(demo())).unwrap();
    let mut exec = capi::Executor::new(&lib).unwrap();
    let mut probs = vec![0f32; 10];
    exec.set_input(model::INPUT_NAME, &[0.0; model::INPUT_LEN], &model::INPUT_SHAPE).unwrap();
    exec.run().unwrap();
    exec.get_output(0, &mut probs, &model::OUTPUT_SHAPE).unwrap();
    assert_eq!(read_f32_npy(&zeros.join(&file)).1, probs);
}

// ---------------------------------------------------------------------------------------------
// bench and profile

fn check_latency(j: &Value) {
    let l = &j["latency_ms"];
    let v = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("latency_ms.{k} in {j}"));
    assert!(v("min") > 0.0 && v("min") <= v("median") && v("median") <= v("p90"), "{j}");
    assert!(v("p90") <= v("p99") && v("p99") <= v("max") && v("mean") <= v("max"), "{j}");
    assert!(j["throughput_per_s"].as_f64().unwrap() > 0.0, "{j}");
}

#[test]
fn bench_reports_latency_percentiles_and_throughput() {
    let out = tvm_rt(&["bench", demo(), "--runs", "30", "--warmup", "2"]).expect(0);
    for want in ["median", "mean", "p90", "p99", "min", "max", "throughput:", "measured: 30 runs"] {
        assert!(out.stdout.contains(want), "missing `{want}`:\n{}", out.stdout);
    }
    assert!(out.stderr.is_empty(), "no progress bar off a terminal: {}", out.stderr);
    let j = tvm_rt(&["bench", demo(), "--runs", "25", "--json", "--inter-op-threads", "2"]).expect(0).json();
    assert_eq!(j["runs"], 25);
    assert!(j["executor"].as_str().unwrap().contains("inter-op workers: 2"), "{j}");
    check_latency(&j);
}

#[test]
fn bench_for_a_duration_and_on_the_pipeline() {
    let j = tvm_rt(&["bench", demo(), "--duration", "200ms", "--json"]).expect(0).json();
    assert!(j["wall_s"].as_f64().unwrap() >= 0.2, "{j}");
    assert!(j["runs"].as_u64().unwrap() >= 1, "{j}");
    check_latency(&j);
    let args = ["bench", demo(), "--runs", "40", "--core-groups", "2", "--in-flight", "4", "--json"];
    let j = tvm_rt(&args).expect(0).json();
    assert_eq!(j["runs"], 40);
    let executor = j["executor"].as_str().unwrap();
    assert!(executor.contains("core groups: 2") && executor.contains("in flight: 4"), "{executor}");
    check_latency(&j);
    let seed004 = trio("seed004");
    let trio_args = with(&seed004, &["bench", "--runs", "5", "--json"]);
    check_latency(&tvm_rt(&trio_args).expect(0).json());
}

#[test]
fn profile_ranks_ops_and_kernels_and_writes_a_trace() {
    let trace = dir().join("trace.json");
    let out = tvm_rt(&["profile", demo(), "--runs", "3", "--trace", path_str(&trace)]).expect(0);
    let s = &out.stdout;
    assert!(s.contains("ops (7 of 7), slowest first") && s.contains("kernels (7), slowest first"), "{s}");
    assert!(s.contains("cum %") && s.contains("reshape_nop"), "{s}");
    let events: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let ops: Vec<&str> = events["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(ops.len(), 7, "{ops:?}");
    assert!(ops.contains(&SOFTMAX));

    let j = tvm_rt(&["profile", demo(), "--runs", "2", "--json"]).expect(0).json();
    let rows = j["ops"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    let times: Vec<f64> = rows.iter().map(|r| r["time_us"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "slowest first: {times:?}");
    let last = rows.last().unwrap()["cumulative_percent"].as_f64().unwrap();
    assert!((last - 100.0).abs() < 1e-6, "{last}");
    let kernels = j["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 7);
    assert!(kernels.iter().all(|k| k["calls"] == 1));
    let total: f64 = kernels.iter().map(|k| k["time_us"].as_f64().unwrap()).sum();
    assert!((total - j["total_us"].as_f64().unwrap()).abs() < 1e-6);
}

#[test]
fn profile_groups_ops_by_kernel() {
    // chain500: 500 ops calling a handful of kernels.
    let j = tvm_rt(&with(&trio("chain500"), &["profile", "--runs", "1", "--json", "--fill", "zeros"])).expect(0).json();
    let ops = j["ops"].as_array().unwrap().len();
    let kernels = j["kernels"].as_array().unwrap();
    assert!(kernels.len() < ops, "{} kernels for {ops} ops", kernels.len());
    let calls: u64 = kernels.iter().map(|k| k["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls as usize, ops);
}

// ---------------------------------------------------------------------------------------------
// dot

#[test]
fn dot_writes_the_graph_and_the_schedule() {
    let s = tvm_rt(&["dot", demo()]).expect(0).stdout;
    assert!(s.starts_with("digraph model {") && s.trim_end().ends_with('}'), "{s}");
    assert!(s.contains("n0 [label=\"data\\n[1, 1, 16, 16] float32\""), "{s}");
    assert!(s.contains("fillcolor=lightgrey") && s.contains("-> out0;"), "{s}");
    let no_params = tvm_rt(&["dot", demo(), "--no-params"]).expect(0).stdout;
    assert!(!no_params.contains("lightgrey") && !no_params.contains("label=\"p0"), "{no_params}");
    let file = dir().join("schedule.dot");
    tvm_rt(&["dot", demo(), "--schedule", "--inter-op-threads", "2", "-o", path_str(&file)]).expect(0);
    let sched = std::fs::read_to_string(&file).unwrap();
    assert!(sched.contains("digraph schedule") && sched.contains("// ops: 7;"), "{sched}");
    assert!(sched.contains("2 inter-op workers, memory plan tvm"), "{sched}");
}

// ---------------------------------------------------------------------------------------------
// params

#[test]
fn params_list_shows_every_tensor() {
    let file = demo_params();
    let out = tvm_rt(&["params", "list", path_str(&file)]).expect(0);
    for p in model::params() {
        let line = out.stdout.lines().find(|l| l.trim_start().starts_with(&format!("{} ", p.name))).unwrap();
        assert!(line.contains(&format!("{:?}", p.shape)) && line.contains("float32"), "{line}");
    }
    let j = tvm_rt(&["params", "list", path_str(&file), "--json"]).expect(0).json();
    assert_eq!(j["tensors"].as_array().unwrap().len(), 6);
    assert_eq!(j["tensors"][4]["shape"], serde_json::json!([10, 256]));
    assert_eq!(j["tensors"][4]["bytes"], 10240);
}

fn round_trip(file: &Path, names: &[String], tag: &str) {
    let out_dir = dir().join(format!("extract_{tag}"));
    tvm_rt(&["params", "extract", path_str(file), "--out", path_str(&out_dir)]).expect(0);
    let packed = dir().join(format!("packed_{tag}.params"));
    let pairs: Vec<String> =
        names.iter().map(|n| format!("{n}={}", path_str(&out_dir.join(format!("{n}.npy"))))).collect();
    let mut args = vec!["params", "pack", "--out", path_str(&packed)];
    args.extend(pairs.iter().map(String::as_str));
    tvm_rt(&args).expect(0);
    assert!(std::fs::read(&packed).unwrap() == std::fs::read(file).unwrap(), "{tag}: not byte-identical");
}

#[test]
fn params_extract_then_pack_is_byte_identical() {
    let demo = model::params();
    let (_, p4) = read_f32_npy(&{
        round_trip(&demo_params(), &demo.iter().map(|p| p.name.clone()).collect::<Vec<_>>(), "demo");
        dir().join("extract_demo/p4.npy")
    });
    assert_eq!(p4, demo[4].data, "extracted values");
    // A params file TVM wrote.
    let file = repo().join("tests/data/tvm-0.18/mlp/params.bin");
    round_trip(&file, &["p0".into(), "p1".into(), "p2".into()], "mlp");
}

// ---------------------------------------------------------------------------------------------
// errors

fn fails(args: &[&str], code: i32, message: &str) {
    let out = tvm_rt(args).expect(code);
    assert!(out.stderr.contains(message), "{args:?}: `{message}` not in:\n{}", out.stderr);
}

#[test]
fn input_errors_name_the_file_and_exit_2() {
    let d = dir();
    let image = write_npy(&d.join("good_image.npy"), &[1, 1, 16, 16], &model::input_image(1));
    let small = write_npy(&d.join("small.npy"), &[16, 16], &[0f32; 256]);
    let doubles = write_npy(&d.join("doubles.npy"), &[1, 1, 16, 16], &[0f64; 256]);
    let garbage = d.join("garbage.npy");
    std::fs::write(&garbage, b"this is not numpy").unwrap();
    let garbage = path_str(&garbage);
    let so = demo();
    fails(&["inspect", "no/such/model.so"], 2, "no/such/model.so: no such file");
    fails(&["run", so], 2, "missing input `data` (float32 [1, 1, 16, 16]): give --input data=FILE.npy");
    fails(
        &["run", so, "-i", &format!("image={image}")],
        2,
        "the model has no input named `image` (data inputs: `data`)",
    );
    fails(&["run", so, "-i", &format!("p0={image}")], 2, "`p0` is a weight of the model, not a data input");
    fails(&["run", so, "-i", &format!("data={garbage}")], 2, &format!("{garbage}: not a valid .npy file"));
    fails(&["run", so, "-i", "data=missing.npy"], 2, "missing.npy: ");
    let shape_msg = format!("{small}: input `data` is float32 [1, 1, 16, 16], the file holds float32 [16, 16]");
    fails(&["run", so, "-i", &format!("data={small}")], 2, &shape_msg);
    fails(&["run", so, "-i", &format!("data={doubles}")], 2, "the file holds float64 [1, 1, 16, 16]");
    fails(&["run", so, "--fill", "zeros", "-c", &format!("logits={image}")], 2, "no output named `logits`");
    let compare_msg = format!("{image}: output `{SOFTMAX}` is float32 [1, 10], the file holds float32 [1, 1, 16, 16]");
    fails(&["run", so, "--fill", "zeros", "-c", &format!("0={image}")], 2, &compare_msg);
    fails(&["run", kernels_so()], 2, "not a GraphExecutorFactory");
    let graph = repo().join("tests/data/tvm-0.18/mlp/graph.json");
    fails(&["inspect", path_str(&graph)], 2, "is graph JSON: give --graph");
    fails(&["params", "list", garbage], 2, &format!("{garbage}: "));
    fails(&["params", "list", "missing.params"], 2, "missing.params: no such file");
    let data = repo().join("tests/data/tvm-0.18/mlp");
    let mlp_graph = path_str(&data.join("graph.json")).to_string();
    let args = ["inspect", "--graph", &mlp_graph, "--lib", kernels_so(), "--params", "none.params"];
    fails(&args, 2, "none.params: no such file");
    fails(&["inspect", "--graph", garbage, "--lib", kernels_so()], 2, &format!("{garbage}: "));
    let failure_lib = build_so(&d.join("other_kernels.so"), &[repo().join("tests/fixtures/failure_kernels.c")], None);
    let args = ["inspect", "--graph", &mlp_graph, "--lib", path_str(&failure_lib)];
    fails(&args, 2, &format!("{mlp_graph} with {}: ", path_str(&failure_lib)));
    let args = ["bench", so, "--core-groups", "1", "--inter-op-threads", "2"];
    fails(&args, 2, "--inter-op-threads and --intra-op-threads are not pipeline options");
    fails(&["bench", so, "--core-groups", "2", "--in-flight", "1"], 2, "option `in_flight`");
    fails(&["params", "pack", "--out", path_str(&d.join("x.params")), &format!("a={garbage}")], 2, garbage);
}

/// A model typed as a bare file name is the file in the current directory (dlopen alone would
/// search the library path for it), for a library, a manifest and its entries alike; a bad file
/// so named gets its own error, not "No such file".
#[test]
fn a_model_named_without_a_directory_is_the_file_here() {
    let here = dir().join("bare_names");
    let _ = std::fs::remove_dir_all(&here);
    std::fs::create_dir_all(here.join("models.so")).unwrap();
    std::fs::copy(demo(), here.join("demo_model.so")).unwrap();
    std::fs::write(here.join("demo.buckets"), "demo_model.so\n").unwrap();
    std::fs::write(here.join("empty.so"), b"").unwrap();
    std::fs::write(
        here.join("noise.so"),
        (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(here.join("package.json"), br#"{"name": "not a graph", "version": "1.0"}"#).unwrap();
    std::fs::copy(repo().join("tests/data/tvm-0.18/mlp/graph.json"), here.join("graph.json")).unwrap();
    let out = tvm_rt_in(&here, &["inspect", "demo_model.so"]).expect(0).stdout;
    assert!(out.contains("model: demo_model.so"), "{out}");
    let out = tvm_rt_in(&here, &["inspect", "demo.buckets"]).expect(0).stdout;
    assert!(out.contains("buckets: 1 versions"), "{out}");
    tvm_rt_in(&here, &["run", "demo_model.so", "--fill", "zeros"]).expect(0);
    let fails_here = |args: &[&str], message: &str| {
        let e = tvm_rt_in(&here, args).expect(2).stderr;
        assert!(e.contains(message), "{args:?}: `{message}` not in:\n{e}");
        e
    };
    fails_here(&["inspect", "empty.so"], "empty.so`: the file is 0 bytes, too short for an ELF header");
    fails_here(&["inspect", "noise.so"], "noise.so`: invalid ELF header: not an ELF file");
    fails_here(&["inspect", "models.so"], "models.so: is a directory");
    fails_here(&["run", "models.so"], "models.so: is a directory");
    std::fs::copy(kernels_so(), here.join("kernels.so")).unwrap();
    std::fs::copy(repo().join("tests/data/tvm-0.18/mlp/params.bin"), here.join("params.bin")).unwrap();
    let trio = ["inspect", "--graph", "graph.json", "--lib", "kernels.so", "--params", "params.bin"];
    tvm_rt_in(&here, &trio).expect(0);
    fails_here(&["inspect", "--graph", "graph.json", "--lib", "models.so"], "models.so: is a directory");
    fails_here(&["inspect", "--graph", "graph.json", "--lib", "empty.so"], "too short for an ELF header");
    fails_here(&["inspect", "--graph", "graph.json", "--lib", "kernels.so", "--params", "models.so"], "is a directory");
    let e = fails_here(&["inspect", "package.json"], "package.json: is a JSON file, but not a TVM graph");
    assert!(!e.contains("graph JSON"), "{e}");
    fails_here(&["inspect", "graph.json"], "graph.json: is graph JSON: give --graph");
}

/// More core groups than the process has CPUs: a warning on stderr, and the benchmark runs.
#[test]
fn more_core_groups_than_cpus_warns_and_runs() {
    let cpus = tvm_runtime::runtime::threads::pool::allowed_cpus().len();
    let groups = (cpus + 1).to_string();
    let out = tvm_rt(&["bench", demo(), "--runs", "6", "--core-groups", &groups, "--json"]).expect(0);
    let warning = format!("warning: --core-groups {groups} is more than the {cpus} CPU(s) this process may use");
    assert!(out.stderr.contains(&warning), "{}", out.stderr);
    assert_eq!(out.json()["runs"], 6);
    let out = tvm_rt(&["bench", demo(), "--runs", "2", "--core-groups", "1"]).expect(0);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
}

/// Every cut of a library (the demo model, the fixture kernels) is refused with exit code 2
/// and a message naming the file, as a model and as --lib; never a signal (`expect` checks).
#[test]
fn truncated_libraries_exit_2_naming_the_file() {
    let cut_dir = dir().join("cuts");
    std::fs::create_dir_all(&cut_dir).unwrap();
    let graph = repo().join("tests/data/tvm-0.18/mlp/graph.json");
    for (name, lib) in [("demo", demo()), ("kernels", kernels_so())] {
        let bytes = std::fs::read(lib).unwrap();
        let cuts: Vec<usize> = (0..24).map(|k| k * bytes.len() / 24).chain([63, 64, bytes.len() - 1]).collect();
        for cut in cuts {
            // A new file per cut: rewriting a mapped library in place would fault this process.
            let file = cut_dir.join(format!("{name}_{cut}.so"));
            std::fs::write(&file, &bytes[..cut]).unwrap();
            let f = path_str(&file);
            let args = if name == "demo" {
                vec!["inspect", f]
            } else {
                vec!["inspect", "--graph", path_str(&graph), "--lib", f]
            };
            let e = tvm_rt(&args).expect(2).stderr;
            let said = e.contains("the file is truncated") || e.contains("too short for an ELF header");
            assert!(said && e.contains(&format!("cannot load library `{f}`")), "{name} cut at {cut}: {e}");
            std::fs::remove_file(&file).unwrap();
        }
    }
}

#[test]
fn usage_errors_exit_2_and_help_lists_the_exit_codes() {
    fails(&["run"], 2, "MODEL.so");
    fails(&["run", demo(), "--fill", "sometimes"], 2, "invalid value 'sometimes'");
    fails(&["bench", demo(), "--duration", "5 parsecs"], 2, "--duration");
    fails(&["bench", demo(), "--inter-op-threads", "0"], 2, "option `inter_op_threads`");
    fails(&["run", demo(), "--input", "data"], 2, "`data` is not NAME=FILE");
    for cmd in ["inspect", "run", "bench", "profile", "dot"] {
        let out = tvm_rt(&[cmd, "--help"]).expect(0);
        assert!(out.stdout.contains("Exit codes:") && out.stdout.contains("usage or input error"), "{cmd}");
    }
    let help = tvm_rt(&["--help"]).expect(0).stdout;
    for cmd in ["inspect", "run", "bench", "profile", "dot", "params"] {
        assert!(help.contains(&format!("  {cmd} ")), "{cmd} missing from:\n{help}");
    }
}

/// A kernel that fails while running: exit code 3 with the kernel's message.
#[test]
fn a_failing_kernel_exits_3() {
    let lib = build_so(&dir().join("failure_kernels.so"), &[repo().join("tests/fixtures/failure_kernels.c")], None);
    let graph = serde_json::json!({
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {"op": "tvm_op", "name": "double_node", "inputs": [[0, 0, 0]],
             "attrs": {"num_outputs": "1", "num_inputs": "1", "flatten_data": "0", "func_name": "fs_double_checked"}},
        ],
        "arg_nodes": [0], "heads": [[1, 0, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32", "float32"]],
            "storage_id": ["list_int", [0, 1]],
            "shape": ["list_shape", [[1, 4], [1, 4]]],
        },
        "node_row_ptr": [0, 1, 2],
    });
    let graph_file = dir().join("failing.json");
    std::fs::write(&graph_file, graph.to_string()).unwrap();
    let x = write_npy(&dir().join("negative.npy"), &[1, 4], &[1f32, -1.0, 2.0, 3.0]);
    let args = ["run", "--graph", path_str(&graph_file), "--lib", path_str(&lib), "-i"];
    let out = tvm_rt(&[&args[..], &[&format!("x={x}")]].concat()).expect(3);
    assert!(out.stderr.contains("fs_double_checked"), "{}", out.stderr);
    let positive = write_npy(&dir().join("positive.npy"), &[1, 4], &[1f32, 1.0, 2.0, 3.0]);
    let out = tvm_rt(&[&args[..], &[&format!("x={positive}")]].concat()).expect(0);
    assert!(out.stdout.contains("[2.000000, 2.000000, 4.000000, 6.000000]"), "{}", out.stdout);
}

/// A bucket manifest of the demo at batch 1, 2, 4, 8: inspect lists the versions a bucketed
/// executor dispatches to, run feeds inputs of any covered shape; the others refuse it.
#[test]
fn inspect_shows_the_buckets_of_a_manifest() {
    let paths: Vec<String> = [8, 2, 1, 4]
        .iter()
        .map(|&b| model::build_spec(&model::Spec::demo().with_batch(b)).unwrap().to_str().unwrap().to_string())
        .collect();
    let manifest = dir().join("demo.buckets");
    std::fs::write(&manifest, format!("# the demo at four batch sizes\n{}\n", paths.join("\n"))).unwrap();
    let j = tvm_rt(&["inspect", path_str(&manifest), "--json"]).expect(0).json();
    let b = &j["buckets"];
    assert_eq!(b["dynamic_axes"], serde_json::json!(["data:0"]));
    let extents: Vec<Value> = b["versions"].as_array().unwrap().iter().map(|v| v["extents"].clone()).collect();
    assert_eq!(
        extents,
        [serde_json::json!([1]), serde_json::json!([2]), serde_json::json!([4]), serde_json::json!([8])]
    );
    assert_eq!(b["versions"][2]["inputs"], serde_json::json!([[4, 1, 16, 16]]));
    assert!(b["versions"][3]["file"].as_str().unwrap().ends_with("demo_b8_model.so"));
    assert_eq!(j["inputs"][0]["shape"], serde_json::json!([8, 1, 16, 16]), "the report is the largest bucket's");
    let arena = b["arena_bytes"].as_u64().unwrap();
    assert!(arena > 0 && arena <= j["storage"]["peak_activation_bytes"].as_u64().unwrap());
    let text = tvm_rt(&["inspect", path_str(&manifest)]).expect(0).stdout;
    assert!(text.contains("buckets: 4 versions over dynamic axes data:0"), "{text}");
    // Three images run in the batch-4 bucket; each output row is the C API's batch-1 result.
    let cases: Vec<(String, Vec<f32>)> = (0..3).map(|k| demo_case(40 + k)).collect();
    let images: Vec<f32> = (0..3).flat_map(|k| model::input_image(40 + k)).collect();
    let x = write_npy(&dir().join("three.npy"), &[3, 1, 16, 16], &images);
    let y = dir().join("three_out.npy");
    let input = format!("data={x}");
    let output = format!("0={}", path_str(&y));
    let out = tvm_rt(&["run", path_str(&manifest), "-i", &input, "-o", &output]).expect(0).stdout;
    assert!(out.contains("bucket 2 (") && out.contains("extents [4]"), "{out}");
    let (shape, got) = read_f32_npy(&y);
    assert_eq!(shape, [3, 10]);
    let want: Vec<f32> = cases.iter().flat_map(|(_, p)| p.clone()).collect();
    assert_eq!(got, want);
    let nine = write_npy(&dir().join("nine.npy"), &[9, 1, 16, 16], &vec![0f32; 9 * 256]);
    let e = tvm_rt(&["run", path_str(&manifest), "-i", &format!("data={nine}")]).expect(2).stderr;
    assert!(e.contains("axis 0: extent 9 is beyond the largest bucket's 8"), "{e}");
    let e = tvm_rt(&["bench", path_str(&manifest)]).expect(2).stderr;
    assert!(e.contains("is a bucket manifest"), "{e}");
    std::fs::write(&manifest, format!("{}\n{}\n", paths[0], paths[0])).unwrap();
    let e = tvm_rt(&["inspect", path_str(&manifest)]).expect(2).stderr;
    assert!(e.contains("have the same input shapes"), "{e}");
}

#[test]
fn a_worker_thread_the_os_refuses_is_an_error_not_a_panic() {
    // std reads RUST_MIN_STACK for threads started without an explicit stack size: an absurd
    // one makes every spawn fail, as an exhausted machine would.
    let out = Command::new(env!("CARGO_BIN_EXE_tvm-rt"))
        .env("RUST_MIN_STACK", "100000000000000")
        .args(["bench", demo(), "--inter-op-threads", "2", "--intra-op-threads", "2"])
        .output()
        .expect("running tvm-rt");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit code 3: the runtime failed (not 101, a panic; not a signal).
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cannot start worker thread `tvm-worker-1`"), "{stderr}");
}

/// `tvm-rt rpc-server --port 0 args` started: its port (from the line it prints) and the process.
fn rpc_server(args: &[&str]) -> (u16, std::process::Child) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tvm-rt"))
        .args(["rpc-server", "--port", "0", "--workdir", path_str(&dir())])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting tvm-rt rpc-server");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    // "tvm-rt rpc-server: listening on HOST:PORT key=..."
    let port = line.split_whitespace().find_map(|w| w.rsplit_once(':')?.1.parse().ok());
    (port.unwrap_or_else(|| panic!("no port in {line:?}")), child)
}

/// The addresses TCP sockets listen on at `port`, from the kernel's tables (what `ss -ltn` shows).
fn listening_on(port: u16) -> Vec<std::net::IpAddr> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for fields in text.lines().skip(1).map(|l| l.split_whitespace().collect::<Vec<_>>()) {
            let (addr, at) = fields[1].split_once(':').unwrap();
            if fields[3] != "0A" || u16::from_str_radix(at, 16) != Ok(port) {
                continue; // 0A: LISTEN
            }
            // The address as the kernel prints it: 32-bit words in the machine's byte order.
            let bytes: Vec<u8> = (0..addr.len() / 8)
                .flat_map(|i| u32::from_str_radix(&addr[i * 8..i * 8 + 8], 16).unwrap().to_ne_bytes())
                .collect();
            found.push(match bytes.len() {
                4 => std::net::IpAddr::from(<[u8; 4]>::try_from(bytes).unwrap()),
                _ => std::net::IpAddr::from(<[u8; 16]>::try_from(bytes).unwrap()),
            });
        }
    }
    found
}

/// The server's listening sockets and what it printed to stderr until it was stopped.
fn rpc_server_sockets(args: &[&str]) -> (Vec<std::net::IpAddr>, String) {
    let (port, mut child) = rpc_server(args);
    let sockets = listening_on(port);
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    (sockets, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn rpc_server_listens_on_loopback_unless_told_and_warns_when_told() {
    let (sockets, stderr) = rpc_server_sockets(&[]);
    assert_eq!(sockets, ["127.0.0.1".parse::<std::net::IpAddr>().unwrap()], "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    let (sockets, stderr) = rpc_server_sockets(&["--host", "0.0.0.0", "--key", "dev"]);
    assert_eq!(sockets, ["0.0.0.0".parse::<std::net::IpAddr>().unwrap()], "{stderr}");
    assert!(stderr.contains("warning: listening on 0.0.0.0:"), "{stderr}");
    assert!(stderr.contains("any client that reaches it can upload a library and run its code here"), "{stderr}");
}

/// A Python environment holding only a fake `tvm_ffi` package (its `__init__.py` fails, so a
/// lookup that imports it fails too): (the interpreter to pass as --python, the package's lib/).
/// The interpreter is a wrapper running `python3 -S`, so no installed package is ever seen.
fn fake_python_env(name: &str, with_library: bool) -> (PathBuf, PathBuf) {
    let root = dir().join(name);
    let _ = std::fs::remove_dir_all(&root);
    let lib = root.join("site/tvm_ffi/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(root.join("site/tvm_ffi/__init__.py"), "raise ImportError('tvm_ffi must not be imported')\n")
        .unwrap();
    if with_library {
        std::fs::write(lib.join("libtvm_ffi.so"), b"the wheel's own library").unwrap();
    }
    let python = root.join("python");
    let site = root.join("site");
    std::fs::write(&python, format!("#!/bin/sh\nPYTHONPATH='{}' exec python3 -S \"$@\"\n", path_str(&site))).unwrap();
    let mut permissions = std::fs::metadata(&python).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&python, permissions).unwrap();
    (python, lib)
}

/// This build's shared library: a real tvm-ffi library (it exports TVMFFIFunctionCall).
fn our_library() -> PathBuf {
    common::library_dir().join("libtvm_runtime.so")
}

fn ffi_swap(python: &Path, more: &[&str]) -> Output {
    let args: Vec<&str> = ["ffi-swap", "--python", path_str(python)].into_iter().chain(more.iter().copied()).collect();
    tvm_rt(&args)
}

#[test]
fn ffi_swap_replaces_the_packages_library_and_restores_it() {
    let (python, lib) = fake_python_env("ffi_swap", true);
    let (installed, backup) = (lib.join("libtvm_ffi.so"), lib.join("libtvm_ffi.so.orig"));
    let ours = std::fs::read(our_library()).unwrap();

    let out = ffi_swap(&python, &["--library", path_str(&our_library())]).expect(0);
    assert!(out.stdout.contains("libtvm_ffi.so.orig"), "{}", out.stdout);
    assert!(std::fs::read(&installed).unwrap() == ours, "the package's library is not ours");
    assert_eq!(std::fs::read(&backup).unwrap(), b"the wheel's own library");
    // Again: nothing to do, and the backup still holds the original.
    ffi_swap(&python, &["--library", path_str(&our_library())]).expect(0);
    assert_eq!(std::fs::read(&backup).unwrap(), b"the wheel's own library");

    ffi_swap(&python, &["--restore"]).expect(0);
    assert_eq!(std::fs::read(&installed).unwrap(), b"the wheel's own library");
    assert!(!backup.exists());
}

#[test]
fn ffi_swap_keeps_a_backup_it_finds_and_checks_what_it_installs() {
    let (python, lib) = fake_python_env("ffi_swap_backup", true);
    let (installed, backup) = (lib.join("libtvm_ffi.so"), lib.join("libtvm_ffi.so.orig"));
    std::fs::write(&backup, b"an older original").unwrap();
    let out = ffi_swap(&python, &["--library", path_str(&our_library())]).expect(2);
    assert!(out.stderr.contains("a backup exists already") && out.stderr.contains("--restore"), "{}", out.stderr);
    assert_eq!(std::fs::read(&backup).unwrap(), b"an older original");
    assert_eq!(std::fs::read(&installed).unwrap(), b"the wheel's own library");

    std::fs::remove_file(&backup).unwrap();
    let not_a_library = dir().join("ffi_swap_backup/python");
    let out = ffi_swap(&python, &["--library", path_str(&not_a_library)]).expect(2);
    assert!(out.stderr.contains("not a tvm-ffi shared library"), "{}", out.stderr);
    let out = ffi_swap(&python, &["--library", "/nonexistent/libtvm_ffi.so"]).expect(2);
    assert!(out.stderr.contains("/nonexistent/libtvm_ffi.so"), "{}", out.stderr);
    assert!(!backup.exists());
    assert_eq!(std::fs::read(&installed).unwrap(), b"the wheel's own library");
}

#[test]
fn ffi_swap_names_what_it_did_not_find() {
    let (python, lib) = fake_python_env("ffi_swap_missing", false);
    let out = ffi_swap(&python, &["--library", path_str(&our_library())]).expect(2);
    assert!(
        out.stderr.contains(path_str(&lib.join("libtvm_ffi.so"))) && out.stderr.contains("no such file"),
        "{}",
        out.stderr
    );
    let out = ffi_swap(&python, &["--restore"]).expect(2);
    assert!(
        out.stderr.contains(path_str(&lib.join("libtvm_ffi.so.orig"))) && out.stderr.contains("nothing to restore"),
        "{}",
        out.stderr
    );

    std::fs::remove_dir_all(lib.parent().unwrap()).unwrap();
    let out = ffi_swap(&python, &["--restore"]).expect(2);
    assert!(out.stderr.contains("no tvm_ffi package is installed"), "{}", out.stderr);
    let out = ffi_swap(Path::new("/nonexistent/python3"), &["--restore"]).expect(2);
    assert!(out.stderr.contains("--python /nonexistent/python3: cannot run it"), "{}", out.stderr);
}

#[test]
fn ffi_swap_links_apache_tvms_runtime_library_to_the_installed_one_and_restores_it() {
    let (python, lib) = fake_python_env("ffi_swap_tvm_runtime", true);
    let out = ffi_swap(&python, &["--library", path_str(&our_library()), "--tvm-runtime"]).expect(2);
    assert!(out.stderr.contains("no tvm package is installed for it (pip install apache-tvm)"), "{}", out.stderr);
    assert_eq!(std::fs::read(lib.join("libtvm_ffi.so")).unwrap(), b"the wheel's own library");

    let site = lib.parent().unwrap().parent().unwrap();
    let tvm_lib = site.join("tvm/lib");
    std::fs::create_dir_all(&tvm_lib).unwrap();
    std::fs::write(site.join("tvm/__init__.py"), "raise ImportError('tvm must not be imported')\n").unwrap();
    let (runtime, backup) = (tvm_lib.join("libtvm_runtime.so"), tvm_lib.join("libtvm_runtime.so.orig"));
    std::fs::write(&runtime, b"apache-tvm's own runtime").unwrap();
    for _ in 0..2 {
        ffi_swap(&python, &["--library", path_str(&our_library()), "--tvm-runtime"]).expect(0);
        assert_eq!(std::fs::read_link(&runtime).unwrap(), lib.join("libtvm_ffi.so"));
        assert_eq!(std::fs::read(&runtime).unwrap(), std::fs::read(our_library()).unwrap());
        assert_eq!(std::fs::read(&backup).unwrap(), b"apache-tvm's own runtime");
    }
    ffi_swap(&python, &["--restore"]).expect(0);
    assert_eq!(std::fs::read(&runtime).unwrap(), b"apache-tvm's own runtime");
    assert_eq!(std::fs::read(lib.join("libtvm_ffi.so")).unwrap(), b"the wheel's own library");
    assert!(!backup.exists() && !lib.join("libtvm_ffi.so.orig").exists());
}
