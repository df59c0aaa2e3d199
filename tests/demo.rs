//! The demo model (examples/demo): built by the repository itself into an export_library-style
//! .so, run through the C API and checked against an independent Rust implementation.

#[path = "../examples/demo/capi.rs"]
mod capi;
#[path = "../examples/demo/model.rs"]
mod model;

use capi::{Executor, Library};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::{Arc, Barrier, OnceLock};
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice, DLTensor, TVMValue};
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncFree};
use tvm_runtime::ffi::legacy::module::TVMModGetFunction;

const TOL: f32 = 1e-5;

/// Build the .so once per test binary.
fn model_so() -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| model::build().unwrap_or_else(|e| panic!("building the demo model: {e}"))).clone()
}

fn predict(exec: &mut Executor, image: &[f32]) -> Vec<f32> {
    predict_spec(exec, &model::Spec::demo(), image)
}

fn predict_spec(exec: &mut Executor, spec: &model::Spec, image: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; spec.num_classes];
    exec.set_input(model::INPUT_NAME, image, &spec.input_shape()).unwrap();
    exec.run().unwrap();
    exec.get_output(0, &mut out, &spec.output_shape()).unwrap();
    out
}

fn check_probs(got: &[f32], image: &[f32], what: &str) {
    let want = model::reference(image);
    let diff = model::max_abs_diff(got, &want);
    assert!(diff < TOL, "{what}: max |diff| {diff:e} vs reference\n got  {got:?}\n want {want:?}");
    let sum: f32 = got.iter().sum();
    assert!((sum - 1.0).abs() < TOL, "{what}: probabilities sum to {sum}");
    assert!(got.iter().all(|p| (0.0..=1.0).contains(p)), "{what}: {got:?}");
    assert_eq!(model::argmax(got), model::argmax(&want), "{what}: predicted class");
}

#[test]
fn outputs_match_the_reference() {
    let lib = Library::load(&model_so()).unwrap();
    let mut exec = Executor::new(&lib).unwrap();
    let mut classes = std::collections::BTreeSet::new();
    for seed in 0..8 {
        let image = model::input_image(seed);
        let got = predict(&mut exec, &image);
        check_probs(&got, &image, &format!("seed {seed}"));
        classes.insert(model::argmax(&got));
        // Running again with the same input gives the same bits.
        assert_eq!(predict(&mut exec, &image), got, "seed {seed}: rerun");
    }
    // Not a degenerate network: different images give different answers.
    assert!(classes.len() >= 2, "every image predicted as {classes:?}");
}

#[test]
fn demo_spec_matches_the_demo_constants() {
    let spec = model::Spec::demo();
    assert_eq!(spec.input_shape(), model::INPUT_SHAPE);
    assert_eq!(spec.input_len(), model::INPUT_LEN);
    assert_eq!(spec.output_shape(), model::OUTPUT_SHAPE);
    assert_eq!(model::kernel_names_spec(&spec), model::kernel_names());
}

/// The larger CNN (`Spec::large`): its generated per-layer kernels compute what the reference
/// does, to the demo's tolerance.
#[test]
fn large_cnn_matches_the_reference() {
    let spec = model::Spec::large();
    let so = model::build_spec(&spec).unwrap_or_else(|e| panic!("building the {} model: {e}", spec.name));
    assert!(so.ends_with("demo/cnn_model.so"), "{}", so.display());
    let lib = Library::load(&so).unwrap();
    let mut exec = Executor::new(&lib).unwrap();
    let mut classes = std::collections::BTreeSet::new();
    for seed in 0..3 {
        let image = model::input_for(&spec, seed);
        let got = predict_spec(&mut exec, &spec, &image);
        let want = model::reference_spec(&spec, &image);
        let diff = model::max_abs_diff(&got, &want);
        assert!(diff < TOL, "seed {seed}: max |diff| {diff:e} vs reference\n got  {got:?}\n want {want:?}");
        assert_eq!(model::argmax(&got), model::argmax(&want), "seed {seed}: predicted class");
        classes.insert(model::argmax(&got));
    }
    // Not a degenerate network: different images give different answers.
    assert!(classes.len() >= 2, "every image predicted as {classes:?}");
}

/// The demo at batch 4 (`demo_b4`, generated kernels, the demo's weights): each row of its
/// output is bit for bit the batch-1 demo's output for that image, and matches the reference.
#[test]
fn batch_rows_equal_batch_one_runs_bit_for_bit() {
    let spec = model::Spec::demo().with_batch(4);
    assert_eq!((spec.name.as_str(), spec.batch), ("demo_b4", 4));
    assert_eq!(spec.with_batch(1), model::Spec::demo());
    assert_eq!(spec.with_batch(2).name, "demo_b2");
    assert_eq!(model::params_blob_spec(&spec), model::params_blob(), "weights differ across batch sizes");
    let so = model::build_spec(&spec).unwrap_or_else(|e| panic!("building {}: {e}", spec.name));
    assert!(so.ends_with("demo/demo_b4_model.so"), "{}", so.display());
    let batched = Library::load(&so).unwrap();
    let mut exec4 = Executor::new(&batched).unwrap();
    let single = Library::load(&model_so()).unwrap();
    let mut exec1 = Executor::new(&single).unwrap();
    for seeds in [[0u64, 1, 2, 3], [9, 4, 9, 17]] {
        let input = model::input_batch(&spec, &seeds);
        assert_eq!(input.len(), spec.batch_input_len());
        let mut out = vec![0f32; 4 * spec.num_classes];
        exec4.set_input(model::INPUT_NAME, &input, &spec.input_shape()).unwrap();
        exec4.run().unwrap();
        exec4.get_output(0, &mut out, &spec.output_shape()).unwrap();
        for (row, &seed) in out.chunks(spec.num_classes).zip(&seeds) {
            let image = model::input_image(seed);
            let one = predict(&mut exec1, &image);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(row), bits(&one), "seed {seed}: batch-4 row vs batch-1 run");
            check_probs(row, &image, &format!("batch 4, seed {seed}"));
        }
    }
}

#[test]
fn graph_json_and_params_blob_give_the_same_outputs() {
    // The older deployment flow: graph JSON + kernels module + params blob.
    let lib = Library::load(&model_so()).unwrap();
    let mut from_factory = Executor::new(&lib).unwrap();
    let mut from_graph = Executor::from_graph(&model::graph_json(), &lib).unwrap();
    from_graph.load_params(&model::params_blob()).unwrap();
    for seed in [3, 11] {
        let image = model::input_image(seed);
        assert_eq!(predict(&mut from_graph, &image), predict(&mut from_factory, &image), "seed {seed}");
    }
}

#[test]
fn two_executors_from_one_factory_run_concurrently() {
    let lib = Library::load(&model_so()).unwrap();
    let seeds: Vec<u64> = (100..140).collect();
    // Expected results, computed sequentially on a third executor.
    let mut solo = Executor::new(&lib).unwrap();
    let expected: Vec<Vec<f32>> = seeds.iter().map(|&s| predict(&mut solo, &model::input_image(s))).collect();
    drop(solo);

    let start = Arc::new(Barrier::new(2));
    let results: Vec<Vec<Vec<f32>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let mut exec = Executor::new(&lib).unwrap();
                let (seeds, start) = (&seeds, start.clone());
                scope.spawn(move || {
                    start.wait();
                    let mut out = Vec::new();
                    for _round in 0..5 {
                        out.clear();
                        // The two threads walk the inputs in opposite orders.
                        let order: Vec<usize> =
                            if t == 0 { (0..seeds.len()).collect() } else { (0..seeds.len()).rev().collect() };
                        let mut by_index = vec![Vec::new(); seeds.len()];
                        for i in order {
                            by_index[i] = predict(&mut exec, &model::input_image(seeds[i]));
                        }
                        out = by_index;
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, r) in results.iter().enumerate() {
        for (i, got) in r.iter().enumerate() {
            assert_eq!(got, &expected[i], "thread {t}, seed {}", seeds[i]);
        }
    }
    for (i, &s) in seeds.iter().enumerate().step_by(7) {
        check_probs(&expected[i], &model::input_image(s), &format!("seed {s}"));
    }
}

#[test]
fn storage_plan_reuses_slots_like_tvm() {
    let g: serde_json::Value = serde_json::from_str(&model::graph_json()).unwrap();
    let names: Vec<&str> = g["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    let sids: Vec<i64> = g["attrs"]["storage_id"][1].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(g["attrs"]["storage_id"][0], "list_int");
    assert_eq!(names.len(), sids.len());
    let sid = |name: &str| sids[names.iter().position(|n| *n == name).unwrap()];
    // reshape_nop aliases its input; the second conv and pool reuse slots freed before them.
    assert_eq!(sid("reshape_nop"), sid("tvmgen_default_fused_nn_max_pool2d_1"));
    assert_eq!(sid("tvmgen_default_fused_nn_conv2d_add_nn_relu_1"), sid("tvmgen_default_fused_nn_conv2d_add_nn_relu"));
    assert_eq!(sid("tvmgen_default_fused_nn_max_pool2d_1"), sid("tvmgen_default_fused_nn_max_pool2d"));
    assert_eq!(sids, vec![0, 1, 2, 3, 4, 5, 6, 3, 4, 4, 7, 8, 9, 10]);
    let nop = &g["nodes"].as_array().unwrap()[names.iter().position(|n| *n == "reshape_nop").unwrap()];
    assert_eq!(nop["attrs"]["func_name"], "__nop");
}

/// A kernel called directly with bad arguments fails through `__TVMAPISetLastError`, and the
/// message reaches the caller's `TVMGetLastError`.
#[test]
fn kernel_argument_checks_reach_the_caller() {
    let lib = Library::load(&model_so()).unwrap();
    let mut f: *mut c_void = std::ptr::null_mut();
    let name = CString::new("tvmgen_default_fused_nn_softmax").unwrap();
    // SAFETY: live module, C string, out-pointer; query the factory's imports (the library).
    assert_eq!(unsafe { TVMModGetFunction(lib.handle(), name.as_ptr(), 1, &mut f) }, 0, "{}", capi::last_error());
    assert!(!f.is_null(), "softmax kernel not found through the factory's imports");

    let call = |args: &mut [TVMValue], codes: &mut [i32]| -> Result<(), String> {
        let mut ret = TVMValue::null();
        let mut code = 0;
        // SAFETY: live function; arrays of equal length.
        let rc =
            unsafe { TVMFuncCall(f, args.as_mut_ptr(), codes.as_mut_ptr(), args.len() as i32, &mut ret, &mut code) };
        if rc == 0 {
            Ok(())
        } else {
            Err(capi::last_error())
        }
    };
    let mut x = vec![0.5f32; 10];
    let mut y = vec![0f32; 10];
    let mut shape = [1i64, 10];
    let mut out_shape = [1i64, 10];
    let mut bad_shape = [1i64, 9];
    let tensor = |data: &mut Vec<f32>, shape: &mut [i64]| DLTensor {
        data: data.as_mut_ptr() as *mut c_void,
        device: DLDevice::cpu(0),
        ndim: 2,
        dtype: DLDataType::FLOAT32,
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let mut tx = tensor(&mut x, &mut shape);
    let mut ty = tensor(&mut y, &mut out_shape);
    let mut tbad = tensor(&mut y, &mut bad_shape);
    let h = |t: &mut DLTensor| TVMValue { v_handle: t as *mut DLTensor as *mut c_void };

    let err = call(&mut [h(&mut tx)], &mut [tc::DLTENSOR_HANDLE]).unwrap_err();
    assert!(err.contains("num_args should be 2"), "{err}");
    let err = call(&mut [h(&mut tx), TVMValue { v_int64: 3 }], &mut [tc::DLTENSOR_HANDLE, tc::INT]).unwrap_err();
    assert!(err.contains("Expect arg[1] to be pointer"), "{err}");
    let err = call(&mut [h(&mut tx), h(&mut tbad)], &mut [tc::DLTENSOR_HANDLE; 2]).unwrap_err();
    assert!(err.contains("shape[1] has an unmatched value: expected 10"), "{err}");

    call(&mut [h(&mut tx), h(&mut ty)], &mut [tc::DLTENSOR_HANDLE; 2]).unwrap();
    assert!(y.iter().all(|p| (p - 0.1).abs() < 1e-6), "softmax of a constant row: {y:?}");
    // SAFETY: the handle from TVMModGetFunction is owned and freed once.
    assert_eq!(unsafe { TVMFuncFree(f) }, 0);
}

#[test]
fn bad_inputs_are_rejected_and_weights_stay_per_executor() {
    let lib = Library::load(&model_so()).unwrap();
    let mut a = Executor::new(&lib).unwrap();
    let mut b = Executor::new(&lib).unwrap();
    let image = model::input_image(5);

    let err = a.set_input(model::INPUT_NAME, &image[..240], &[1, 1, 15, 16]).unwrap_err();
    assert!(err.contains("TVMGraphExecutorSetInput"), "{err}");
    let err = a.set_input("no_such_input", &image, &model::INPUT_SHAPE).unwrap_err();
    assert!(err.contains("no_such_input"), "{err}");
    let mut small = vec![0f32; 9];
    a.run().unwrap();
    assert!(a.get_output(0, &mut small, &[1, 9]).is_err());
    // A failed call leaves the executor usable.
    check_probs(&predict(&mut a, &image), &image, "after errors");

    // Executors from one factory share the weights, but setting a weight on one of them
    // (TVM semantics: each has its own copy) must not change the other.
    let p = model::params();
    let zeros = vec![0f32; p[4].data.len()];
    a.set_input(&p[4].name, &zeros, &p[4].shape).unwrap();
    let got_a = predict(&mut a, &image);
    let bias = &p[5].data;
    let m = bias.iter().cloned().fold(f32::MIN, f32::max);
    let z: f32 = bias.iter().map(|v| (v - m).exp()).sum();
    let want_a: Vec<f32> = bias.iter().map(|v| (v - m).exp() / z).collect();
    assert!(model::max_abs_diff(&got_a, &want_a) < TOL, "zeroed dense weight: {got_a:?} vs softmax(bias) {want_a:?}");
    check_probs(&predict(&mut b, &image), &image, "other executor after a weight change");
    let mut c = Executor::new(&lib).unwrap();
    check_probs(&predict(&mut c, &image), &image, "new executor after a weight change");
}
