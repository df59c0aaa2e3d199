//! A run before any `set_input` computes on zeroed inputs: its output is the output of an
//! all-zero input, byte for byte, in every process (the executor's input storage is zeroed at
//! creation, even where the allocator hands back memory a freed executor wrote).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::*;

/// Set in the child process: the model to run.
const CHILD_ENV: &str = "TVM_RUNTIME_TEST_UNSET_INPUTS_MODEL";
/// Marks the child's output bytes on its stdout (after the test harness's `test ... ` text).
const MARK: &str = "@@OUTPUT\t";

struct G(*mut TVMGraphExecutor);
impl Drop for G {
    fn drop(&mut self) {
        ok(unsafe { TVMGraphExecutorFree(self.0) });
    }
}

fn executor(factory: &Mod) -> G {
    let mut g = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &DLDevice::cpu(0), 1, &mut g) });
    G(g)
}

fn set_x(g: &G, value: f32) {
    let mut x = HostTensor::new(&[2, 8], &[value; 16]);
    ok(unsafe { TVMGraphExecutorSetInput(g.0, c"x".as_ptr(), x.ptr()) });
}

fn run_and_output(g: &G) -> Vec<u8> {
    ok(unsafe { TVMGraphExecutorRun(g.0) });
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    ok(unsafe { TVMGraphExecutorGetOutput(g.0, 0, out.ptr()) });
    bytes_of(&out.values())
}

/// The output of a run without `set_input`, on an executor created after another one wrote
/// large values into its input and was freed (the allocator may hand its memory back).
fn output_without_set_input(model: &Path) -> Vec<u8> {
    let factory = load_module(model).unwrap();
    for _ in 0..4 {
        let dirty = executor(&factory);
        set_x(&dirty, 1.0e3);
        run_and_output(&dirty);
    }
    run_and_output(&executor(&factory))
}

/// The output for an input whose every element is `value`.
fn output_of_input(model: &Path, value: f32) -> Vec<u8> {
    let factory = load_module(model).unwrap();
    let g = executor(&factory);
    set_x(&g, value);
    run_and_output(&g)
}

fn mlp_so() -> PathBuf {
    build_so(&scratch("unset_inputs").join("mlp.so"), &[kernels_c()], Some(&tvm_data("mlp", "mblob.bin")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The child: prints the output of a run without `set_input` (only when started by the test).
#[test]
fn unset_inputs_child() {
    let Some(model) = std::env::var_os(CHILD_ENV) else { return };
    println!("{MARK}{}", hex(&output_without_set_input(Path::new(&model))));
}

fn child_output(model: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["unset_inputs_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, model)
        .output()
        .expect("start the child test process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let line =
        stdout.lines().find_map(|l| Some(l.split_once(MARK)?.1)).unwrap_or_else(|| panic!("no output line: {stdout}"));
    line.to_string()
}

#[test]
fn run_before_set_input_computes_on_zeros_in_every_process() {
    let model = mlp_so();
    let zeros = output_of_input(&model, 0.0);
    assert_eq!(output_without_set_input(&model), zeros, "unset input differs from a zero input in this process");
    assert_ne!(
        output_of_input(&model, 1.0e3),
        zeros,
        "the model's output must depend on its input for this test to mean anything"
    );
    for child in 0..2 {
        assert_eq!(child_output(&model), hex(&zeros), "child process {child}: unset input differs from a zero input");
    }
}
