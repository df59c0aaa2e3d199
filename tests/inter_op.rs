//! Inter-op parallelism through the C API on TVM's own compiled seed-004 model (two independent
//! adds, then a multiply): every option combination gives TVM's recorded output, and bad options
//! are errors naming the key.

mod common;
use common::*;
use std::ffi::CString;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::ffi::graph_executor::*;

/// An executor from the factory with `options`, or the error text.
fn create(factory: &Mod, options: &str) -> Result<*mut TVMGraphExecutor, String> {
    let dev = DLDevice::cpu(0);
    let opts = CString::new(options).unwrap();
    let mut g = std::ptr::null_mut();
    // SAFETY: a live factory handle, one device, a C string and an out-pointer.
    let rc = unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory.0, &dev, 1, opts.as_ptr(), &mut g) };
    if rc == 0 {
        Ok(g)
    } else {
        Err(last_error())
    }
}

#[test]
fn every_option_combination_gives_tvms_output() {
    let factory = load_module(&seed004_so("inter_op")).unwrap();
    let want = f32s(&tvm_data("seed004", "output_0.bin"));
    for options in [
        "",
        "inter_op_threads=2",
        "inter_op_threads=2,intra_op_threads=1",
        "inter_op_threads=3,memory_plan=parallel",
        "inter_op_threads=1,intra_op_threads=1,memory_plan=parallel",
    ] {
        let g = create(&factory, options).unwrap();
        for _ in 0..20 {
            let got = run_seed004(g);
            assert_eq!(bytes_of(&got), bytes_of(&want), "options `{options}`");
        }
        // SAFETY: live executor.
        ok(unsafe { TVMGraphExecutorFree(g) });
    }
}

#[test]
fn bad_options_name_the_key() {
    let factory = load_module(&seed004_so("inter_op")).unwrap();
    for (options, want) in [
        ("inter_op_threads=0", "option `inter_op_threads`"),
        ("inter_op_threads=two", "option `inter_op_threads`"),
        ("intra_op_threads=-1", "option `intra_op_threads`"),
        ("memory_plan=smallest", "option `memory_plan`"),
        ("workers=2", "unknown option `workers`"),
        ("inter_op_threads", "`inter_op_threads` is not key=value"),
        ("inter_op_threads=2,inter_op_threads=2", "given twice"),
    ] {
        let e = create(&factory, options).unwrap_err();
        assert!(e.contains(want), "`{options}`: {e}");
    }
}

#[test]
fn a_parallel_profile_has_a_lane_per_worker() {
    let factory = load_module(&seed004_so("inter_op")).unwrap();
    let g = create(&factory, "inter_op_threads=2,intra_op_threads=1").unwrap();
    run_seed004(g);
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: live executor and out-pointer.
    ok(unsafe { TVMGraphExecutorProfile(g, 1, &mut text) });
    // SAFETY: the executor owns the text until its next profile call.
    let trace: serde_json::Value =
        serde_json::from_str(unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap()).unwrap();
    let ops: Vec<_> = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(ops.len(), 3, "{trace}");
    // SAFETY: live executor.
    ok(unsafe { TVMGraphExecutorFree(g) });
}

#[test]
fn the_schedule_as_dot_shows_the_independent_adds() {
    let factory = load_module(&seed004_so("inter_op")).unwrap();
    let g = create(&factory, "inter_op_threads=2").unwrap();
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: live executor and out-pointer.
    ok(unsafe { TVMGraphExecutorScheduleDot(g, &mut text) });
    // SAFETY: the executor owns the text until its next call.
    let dot = unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap().to_string();
    assert!(dot.starts_with("digraph schedule {"), "{dot}");
    // Both adds on level 0, the multiply on level 1 after both; no storage hazard in this plan.
    assert!(dot.contains("subgraph level_0 { rank=same; op0 [label=\"tvmgen_default_fused_add\\nlevel 0\""), "{dot}");
    assert!(dot.contains("op1 [label=\"tvmgen_default_fused_add_1\\nlevel 0\""), "{dot}");
    assert!(dot.contains("op2 [label=\"tvmgen_default_fused_multiply\\nlevel 1\", style=bold]"), "{dot}");
    assert!(dot.contains("op0 -> op2") && dot.contains("op1 -> op2") && !dot.contains("storage"), "{dot}");
    // SAFETY: live executor.
    ok(unsafe { TVMGraphExecutorFree(g) });
}
