//! Bucketed executors (seed 002) through the Rust API: dispatch, padding, true-shape outputs,
//! weights shared between buckets, and the errors for requests and versions that do not fit.
//! The C API's side is in `buckets_capi.rs` and `c_tests/test_buckets.c`.

mod common;

use common::*;
use std::sync::{Arc, OnceLock};
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::graph::buckets::{BucketContext, BucketSet};
use tvm_runtime::graph::factory::GraphExecutorFactory;
use tvm_runtime::graph::options::BucketOptions;
use tvm_runtime::graph::{Frame, Front};
use tvm_runtime::runtime::{Module, NDArray};

/// `y = (a + b) * w`, a and b `[n, 4]`, the weight `w` `[1]` (= 2): elementwise kernels of the
/// test fixture, whose shapes come from their tensors.
fn add_mul_json(n: i64) -> String {
    let op = |name: &str, func: &str, inputs: &str| {
        format!(
            r#"{{"op": "tvm_op", "name": "{name}", "attrs": {{"func_name": "{func}", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0"}}, "inputs": [{inputs}]}}"#
        )
    };
    format!(
        r#"{{"nodes": [{{"op": "null", "name": "a", "inputs": []}}, {{"op": "null", "name": "b", "inputs": []}},
{}, {{"op": "null", "name": "w", "inputs": []}}, {}],
"arg_nodes": [0, 1, 3], "heads": [[4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5],
"attrs": {{"dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32"]],
"storage_id": ["list_int", [0, 1, 2, 3, 4]],
"shape": ["list_shape", [[{n}, 4], [{n}, 4], [{n}, 4], [1], [{n}, 4]]]}}}}"#,
        op("add", "tvmgen_default_fused_add", "[0, 0, 0], [1, 0, 0]"),
        op("mul", "tvmgen_default_fused_multiply", "[2, 0, 0], [3, 0, 0]"),
    )
}

fn kernel_lib() -> Module {
    static SO: OnceLock<std::path::PathBuf> = OnceLock::new();
    tvm_runtime::init();
    let so = SO.get_or_init(|| build_so(&scratch("buckets").join("kernels.so"), &[kernels_c()], None));
    Module::load_from_file(so.to_str().unwrap(), "").expect("kernel library")
}

fn weight(value: f32) -> NDArray {
    NDArray::from_bytes(&[1], DLDataType::FLOAT32, &value.to_le_bytes()).unwrap()
}

/// A factory module of the add-mul model at batch `n`, with the weight `w`.
fn factory(n: i64, w: NDArray) -> (Module, String) {
    let m = Module::from_node(GraphExecutorFactory::new(add_mul_json(n), vec![("w".into(), w)], "default".into()));
    m.import(&kernel_lib()).unwrap();
    (m, format!("batch {n}"))
}

fn add_mul_buckets(batches: &[i64], options: Option<&str>) -> Arc<BucketSet> {
    let versions: Vec<_> = batches.iter().map(|&n| factory(n, weight(2.0))).collect();
    BucketSet::from_factories(&versions, &[DLDevice::cpu(0)], BucketOptions::parse(options).unwrap()).unwrap()
}

fn array(shape: &[i64], values: &[f32]) -> NDArray {
    NDArray::from_bytes(shape, DLDataType::FLOAT32, &bytes_of(values)).unwrap()
}

fn values(a: &NDArray) -> Vec<f32> {
    f32s(&a.to_vec_u8().unwrap())
}

/// Run the add-mul model on `n` rows and return `y` through both output paths.
fn run_rows(ctx: &mut BucketContext, n: i64, seed: f32) -> (Vec<f32>, Vec<f32>) {
    let a: Vec<f32> = (0..n * 4).map(|i| seed + i as f32).collect();
    let b: Vec<f32> = (0..n * 4).map(|i| 0.5 * i as f32 - seed).collect();
    ctx.set_input(0, array(&[n, 4], &a).tensor()).unwrap();
    ctx.set_input(1, array(&[n, 4], &b).tensor()).unwrap();
    ctx.run().unwrap();
    assert_eq!(ctx.output_info(0).unwrap().shape, &[n, 4]);
    let out = NDArray::empty(&[n, 4], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
    ctx.get_output_into(0, out.tensor()).unwrap();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x + y) * 2.0).collect();
    assert_eq!(values(&out), want, "rows {n}");
    (values(&out), values(&ctx.get_output(0).unwrap()))
}

#[test]
fn every_batch_runs_in_the_smallest_covering_bucket() {
    let set = add_mul_buckets(&[4, 1, 2], None);
    let extents: Vec<_> = set.buckets().iter().map(|b| b.extents.clone()).collect();
    assert_eq!(extents, vec![vec![1, 1], vec![2, 2], vec![4, 4]], "sorted by volume, dims a:0 and b:0");
    let mut ctx = BucketContext::new(set).unwrap();
    for (n, bucket) in [(1, 0), (2, 1), (3, 2), (4, 2), (1, 0), (3, 2), (2, 1)] {
        let (copied, viewed) = run_rows(&mut ctx, n, n as f32);
        assert_eq!(ctx.current_bucket(), bucket, "batch {n}");
        assert_eq!(copied, viewed);
    }
}

#[test]
fn pads_with_the_pad_value_and_cuts_outputs_to_the_true_shape() {
    let mut ctx = BucketContext::new(add_mul_buckets(&[1, 4], Some("pad_value=-3"))).unwrap();
    run_rows(&mut ctx, 2, 1.0);
    // The padded rows of the input are the pad value, and the run computed them.
    let front = ctx.bucket_front(1).unwrap();
    let a = values(&front.lock().unwrap().get_input(0).unwrap());
    assert_eq!(&a[8..], &[-3.0; 8]);
    let y = values(&front.lock().unwrap().get_output(0).unwrap());
    assert_eq!(&y[8..], &[-12.0; 8]);
}

/// A bucketed context behind `Front<dyn Frame>`, as the C handle holds it: the calls every frame
/// answers go through its guard, one caller at a time; `is` and `lock_as` reach the context's own
/// calls; the calls only a plain executor has are refused, naming the call.
#[test]
fn a_bucketed_front_answers_as_a_frame_and_refuses_plain_only_calls() {
    let ctx = BucketContext::new(add_mul_buckets(&[1, 4], None)).unwrap();
    let front: Front<dyn Frame> = Front::new(ctx).into();
    assert!(front.is::<BucketContext>() && !front.is::<tvm_runtime::graph::Executor>());
    let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
    {
        let mut frame = front.lock().unwrap();
        frame.set_input(0, array(&[3, 4], &a).tensor()).unwrap();
        frame.set_input(1, array(&[3, 4], &a).tensor()).unwrap();
        let busy = front.lock().err().expect("a second caller is refused").to_string();
        assert!(busy.contains("graph executor is in use by another thread"), "{busy}");
    }
    front.run().unwrap();
    assert_eq!(front.lock_as::<BucketContext>().unwrap().current_bucket(), 1);
    let out = NDArray::empty(&[3, 4], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
    front.lock().unwrap().get_output_into(0, out.tensor()).unwrap();
    assert_eq!(values(&out), a.iter().map(|x| 4.0 * x).collect::<Vec<_>>());
    let e = front.plain("TVMGraphExecutorRunAsync").err().expect("refused").to_string();
    assert!(e.contains("TVMGraphExecutorRunAsync is not supported on a bucketed executor"), "{e}");
    let e = front.run_async(std::ptr::null_mut()).unwrap_err().to_string();
    assert!(e.contains("run_async is not supported on a bucketed executor"), "{e}");
    let e = front.lock_as::<tvm_runtime::graph::Executor>().err().expect("not an executor").to_string();
    assert!(e.contains("not of the kind asked for"), "{e}");
}

#[test]
fn a_request_changing_bucket_midway_keeps_its_inputs() {
    let mut ctx = BucketContext::new(add_mul_buckets(&[1, 2, 4], None)).unwrap();
    run_rows(&mut ctx, 1, 0.0);
    // `a` with 3 rows while `b` still has 1: bucket 4; then `b` with 3 rows too.
    let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
    ctx.set_input(0, array(&[3, 4], &a).tensor()).unwrap();
    assert_eq!(ctx.current_bucket(), 2);
    ctx.set_input(1, array(&[3, 4], &a).tensor()).unwrap();
    ctx.run().unwrap();
    let want: Vec<f32> = a.iter().map(|x| 4.0 * x).collect();
    assert_eq!(values(&ctx.get_output(0).unwrap()), want);
    // Smaller again: `a` with 1 row leaves the request in bucket 4 until `b` follows.
    ctx.set_input(0, array(&[1, 4], &a[..4]).tensor()).unwrap();
    assert_eq!(ctx.current_bucket(), 2);
    ctx.set_input(1, array(&[1, 4], &a[..4]).tensor()).unwrap();
    assert_eq!(ctx.current_bucket(), 0);
    ctx.run().unwrap();
    assert_eq!(values(&ctx.get_output(0).unwrap()), [0.0, 4.0, 8.0, 12.0]);
}

#[test]
fn outputs_that_follow_disagreeing_inputs_are_an_error_at_run() {
    let mut ctx = BucketContext::new(add_mul_buckets(&[1, 4], None)).unwrap();
    ctx.set_input(0, array(&[3, 4], &[0.0; 12]).tensor()).unwrap();
    ctx.set_input(1, array(&[2, 4], &[0.0; 8]).tensor()).unwrap();
    let e = ctx.run().unwrap_err().to_string();
    assert!(e.contains("output `mul` axis 0 follows input `a` axis 0 (3) and input `b` axis 0 (2)"), "{e}");
}

#[test]
fn requests_out_of_range_name_input_axis_extent_and_limit() {
    let mut ctx = BucketContext::new(add_mul_buckets(&[1, 2], None)).unwrap();
    let e = |ctx: &mut BucketContext, shape: &[i64]| {
        let n = shape.iter().product::<i64>() as usize;
        ctx.set_input(0, array(shape, &vec![0.0; n]).tensor()).unwrap_err().to_string()
    };
    let msg = e(&mut ctx, &[3, 4]);
    assert!(msg.contains("set_input `a` axis 0: extent 3 is beyond the largest bucket's 2"), "{msg}");
    let msg = e(&mut ctx, &[2, 5]);
    assert!(msg.contains("set_input `a` axis 1: extent 5, but this axis is static: 4 in every bucket"), "{msg}");
    let msg = e(&mut ctx, &[2, 4, 1]);
    assert!(msg.contains("expected 2 axes"), "{msg}");
    let ints = NDArray::empty(&[1, 4], DLDataType::new(0, 32, 1), DLDevice::cpu(0)).unwrap();
    let msg = ctx.set_input(0, ints.tensor()).unwrap_err().to_string();
    assert!(msg.contains("expected dtype float32"), "{msg}");
    // The failed calls changed nothing: a valid request still runs.
    run_rows(&mut ctx, 2, 5.0);
}

#[test]
fn weights_are_one_array_for_every_bucket_and_contexts() {
    let set = add_mul_buckets(&[1, 2, 4, 8], None);
    let w: Vec<_> = set.buckets().iter().map(|b| b.plan.shared_weight("w").unwrap().data_ptr() as usize).collect();
    assert!(w.iter().all(|&p| p == w[0]), "one weight array: {w:?}");
    // Two contexts over one set, on two threads, give the same numbers.
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let set = set.clone();
            std::thread::spawn(move || {
                let mut ctx = BucketContext::new(set).unwrap();
                for i in 0..200 {
                    run_rows(&mut ctx, 1 + (i + t) % 8, i as f32);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
}

#[test]
fn versions_that_differ_are_refused() {
    let devs = [DLDevice::cpu(0)];
    let opts = BucketOptions::parse(None).unwrap();
    let err = |versions: &[(Module, String)]| {
        BucketSet::from_factories(versions, &devs, opts).err().expect("refused").to_string()
    };
    let e = err(&[factory(1, weight(2.0)), factory(2, weight(3.0))]);
    assert!(e.contains("batch 1 and batch 2 differ: weight `w` has other values"), "{e}");
    let e = err(&[factory(1, weight(2.0)), factory(1, weight(2.0))]);
    assert!(e.contains("batch 1 and batch 1 have the same input shapes"), "{e}");
    let renamed = add_mul_json(2).replace(r#""name": "b""#, r#""name": "c""#);
    let m = Module::from_node(GraphExecutorFactory::new(renamed, vec![("w".into(), weight(2.0))], "default".into()));
    m.import(&kernel_lib()).unwrap();
    let e = err(&[factory(1, weight(2.0)), (m, "renamed".into())]);
    assert!(e.contains("input 1 is `b` in one and `c` in the other"), "{e}");
    let e = err(&[]);
    assert!(e.contains("no versions"), "{e}");
    let gpu = BucketSet::from_factories(&[factory(1, weight(2.0))], &[DLDevice { device_type: 2, device_id: 0 }], opts);
    assert!(gpu.err().unwrap().to_string().contains("not supported"));
}
