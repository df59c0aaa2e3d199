//! Graph executor run loop: `run()` of a 500-node chain of trivial kernels (out = in + 1 on one
//! float), through the Rust API (`Executor::run`) and the C API (`TVMGraphExecutorRun`), vs the
//! physical limit: a plain C loop calling the same kernel 500 times with prebuilt arguments
//! (benches/fixtures/chain_kernels.c, compiled into the same .so as the kernel).

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;
use std::time::Duration;
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice, TVMValue};
use tvm_runtime::ffi::graph_executor::{
    TVMGraphExecutorCreate, TVMGraphExecutorFree, TVMGraphExecutorGetOutput, TVMGraphExecutorRun,
    TVMGraphExecutorSetInputByIndex,
};
use tvm_runtime::graph::{Executor, Graph, Plan};
use tvm_runtime::runtime::{Module, NDArray};

const N_OPS: usize = 500;

fn main() {
    tvm_runtime::init();
    let so =
        build_so(&scratch("graph_run").join("chain_kernels.so"), &[repo().join("benches/fixtures/chain_kernels.c")]);
    let module = Module::load_from_file(so.to_str().unwrap(), "").expect("loading the kernel library");
    let json = chain_json(N_OPS);
    let dev = DLDevice::cpu(0);

    let x = NDArray::from_bytes(&[1], DLDataType::FLOAT32, &2.0f32.to_le_bytes()).unwrap();
    let out = NDArray::empty(&[1], DLDataType::FLOAT32, dev).unwrap();
    let out_value = |a: &NDArray| f32::from_le_bytes(a.to_vec_u8().unwrap()[..4].try_into().unwrap());
    let want = 2.0 + N_OPS as f32;

    // Rust API: one plan, one executor.
    let plan = Arc::new(Plan::new(Graph::parse(&json).unwrap(), module.clone(), &[dev]).unwrap());
    let mut exec = Executor::new(plan).unwrap();
    exec.set_input(0, x.tensor()).unwrap();
    exec.run().unwrap();
    exec.get_output_into(0, out.tensor()).unwrap();
    assert_eq!(out_value(&out), want, "Executor::run computes the chain");

    // C API: another executor over the same module.
    let cjson = CString::new(json.clone()).unwrap();
    let mut g = std::ptr::null_mut();
    let rc = unsafe { TVMGraphExecutorCreate(cjson.as_ptr(), module.legacy_handle(), &dev, 1, &mut g) };
    assert_eq!(rc, 0, "TVMGraphExecutorCreate");
    unsafe {
        assert_eq!(TVMGraphExecutorSetInputByIndex(g, 0, &x.dl_tensor), 0);
        assert_eq!(TVMGraphExecutorRun(g), 0);
        assert_eq!(TVMGraphExecutorGetOutput(g, 0, out.as_dltensor_ptr()), 0);
    }
    assert_eq!(out_value(&out), want, "TVMGraphExecutorRun computes the chain");

    // Baseline: the same kernel called from C with prebuilt arguments over three 1-float slots
    // (x, then two alternating), as the graph's storage plan lays them out.
    let lib = unsafe { libloading::Library::new(&so) }.unwrap();
    let baseline = unsafe {
        *lib.get::<unsafe extern "C" fn(c_int, c_int, *mut TVMValue, *mut c_int) -> c_int>(b"chain_baseline").unwrap()
    };
    let slots: Vec<NDArray> = (0..3).map(|_| NDArray::empty(&[1], DLDataType::FLOAT32, dev).unwrap()).collect();
    slots[0].copy_from_bytes(&2.0f32.to_le_bytes()).unwrap();
    let slot_of = |e: usize| if e == 0 { 0 } else { 1 + (e - 1) % 2 };
    let mut args: Vec<TVMValue> = Vec::with_capacity(2 * N_OPS);
    for i in 1..=N_OPS {
        for e in [i - 1, i] {
            args.push(TVMValue { v_handle: slots[slot_of(e)].as_dltensor_ptr() as *mut c_void });
        }
    }
    let mut codes = vec![tc::DLTENSOR_HANDLE; args.len()];
    assert_eq!(unsafe { baseline(1, N_OPS as c_int, args.as_mut_ptr(), codes.as_mut_ptr()) }, 0);
    assert_eq!(out_value(&slots[slot_of(N_OPS)]), want, "the C loop computes the chain");

    let mut rust_run = || exec.run().unwrap();
    let mut c_api_run = || assert_eq!(unsafe { TVMGraphExecutorRun(g) }, 0);
    let (ap, cp) = (args.as_mut_ptr(), codes.as_mut_ptr());
    let mut c_loop = || assert_eq!(unsafe { baseline(1, N_OPS as c_int, ap, cp) }, 0);
    // Short samples, many of them, interleaved: the machine is shared, and a sample hit by
    // another process's time slice then spoils little.
    let s = compare_stats(&mut [&mut rust_run, &mut c_api_run, &mut c_loop], Duration::from_millis(2), 40, 5);
    let per_op = |ns: f64| ns / N_OPS as f64;
    println!(
        "graph_run: {N_OPS}-op chain, per run (median): Executor::run {} ns, TVMGraphExecutorRun {} ns, C loop {} ns",
        fmt(s[0].median),
        fmt(s[1].median),
        fmt(s[2].median)
    );
    report("graph_run", "Executor::run", per_op(s[0].median), "C loop", per_op(s[2].median), "ns/op", Some(1.3));
    report(
        "graph_run (C API)",
        "TVMGraphExecutorRun",
        per_op(s[1].median),
        "C loop",
        per_op(s[2].median),
        "ns/op",
        Some(1.3),
    );
    report_best("graph_run", "Executor::run", per_op(s[0].min), "C loop", per_op(s[2].min), "ns/op");
    report_best("graph_run (C API)", "TVMGraphExecutorRun", per_op(s[1].min), "C loop", per_op(s[2].min), "ns/op");

    unsafe { TVMGraphExecutorFree(g) };
    // The pointers in `args` point into `slots`: both dropped together, after the last use.
    drop((args, slots, lib));
}
