//! Artifacts written by TVM 0.18 (graph JSON, params, the `__tvm_dev_mblob` of an
//! `export_library` .so) run through the C API with kernels we compile ourselves, and give the
//! outputs TVM recorded.

mod common;
use common::*;
use tvm_runtime::abi::{type_code as tc, DLDevice};

/// Build `<model>.so` = our kernels + TVM's blob bytes verbatim.
fn model_so(model: &str) -> std::path::PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let out = scratch("tvm_artifacts").join(format!("{model}.so"));
    let mut built = BUILT.lock().unwrap();
    if !built.iter().any(|m| m == model) {
        build_so(&out, &[kernels_c()], Some(&tvm_data(model, "mblob.bin")));
        built.push(model.to_string());
    }
    out
}

fn run_model(model: &str, inputs: &[(&str, &[i64])], out_shape: &[i64]) {
    let lib = load_module(&model_so(model)).unwrap();
    let default = get_function(&lib, "default").expect("factory function `default`");
    let (v, code) = call(&default, &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let gmod = Mod(unsafe { v.v_handle });
    let set_input = get_function(&gmod, "set_input").unwrap();
    let run = get_function(&gmod, "run").unwrap();
    let get_output = get_function(&gmod, "get_output").unwrap();
    let mut keep = Vec::new();
    for (name, shape) in inputs {
        let data = f32s(&tvm_data(model, &format!("input_{name}.bin")));
        let mut t = HostTensor::new(shape, &data);
        call(&set_input, &[Arg::Str(name), Arg::Tensor(t.ptr())]).unwrap();
        keep.push(t);
    }
    let want = f32s(&tvm_data(model, "output_0.bin"));
    let mut out = HostTensor::new(out_shape, &vec![0.0; want.len()]);
    for _ in 0..2 {
        call(&run, &[]).unwrap();
        call(&get_output, &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
        assert_close(&out.values(), &want, 1e-5);
    }
}

#[test]
fn mlp_matches_tvm() {
    run_model("mlp", &[("x", &[2, 8])], &[2, 4]);
}

#[test]
fn seed000_matches_tvm() {
    run_model("seed000", &[("a", &[1, 10]), ("b", &[1, 10]), ("c", &[1, 10])], &[1, 10]);
}

#[test]
fn seed004_matches_tvm() {
    run_model("seed004", &[("x1", &[10, 2]), ("y1", &[10, 2]), ("x2", &[10, 2]), ("y2", &[10, 2])], &[10, 2]);
}

#[test]
fn chain500_matches_tvm() {
    run_model("chain500", &[("x", &[1])], &[1]);
}

#[test]
fn params_file_round_trips_byte_for_byte() {
    for model in ["mlp", "seed000", "seed004", "chain500"] {
        let bytes = tvm_data(model, "params.bin");
        let load = global("runtime.LoadParams");
        let save = global("runtime.SaveParams");
        let (map, code) = call(&load, &[Arg::Bytes(&bytes)]).unwrap();
        assert_eq!(code, tc::OBJECT_HANDLE);
        let mut vals = [map];
        let mut codes = [tc::OBJECT_HANDLE];
        let mut ret = tvm_runtime::abi::TVMValue::null();
        let mut rcode = 0;
        ok(unsafe {
            tvm_runtime::ffi::legacy::func::TVMFuncCall(
                save.0,
                vals.as_mut_ptr(),
                codes.as_mut_ptr(),
                1,
                &mut ret,
                &mut rcode,
            )
        });
        assert_eq!(rcode, tc::BYTES);
        let arr = unsafe { &*(ret.v_handle as *const tvm_runtime::abi::TVMByteArray) };
        let again = unsafe { std::slice::from_raw_parts(arr.data as *const u8, arr.size) };
        assert_eq!(again, &bytes[..], "{model}");
        ok(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(map.v_handle) });
    }
}

#[test]
fn factory_blob_round_trips_byte_for_byte() {
    use tvm_runtime::graph::factory::GraphExecutorFactory;
    for model in ["mlp", "seed000", "seed004", "chain500"] {
        let blob = tvm_data(model, "mblob.bin");
        let lib = load_module(&model_so(model)).unwrap();
        let (tk, _) = call(&global("runtime.ModuleGetTypeKey"), &[Arg::Module(&lib)]).unwrap();
        assert_eq!(unsafe { std::ffi::CStr::from_ptr(tk.v_str) }.to_str().unwrap(), "GraphExecutorFactory");
        // The factory's graph JSON is the graph TVM wrote.
        let (json, code) = call(&get_function(&lib, "get_graph_json").unwrap(), &[]).unwrap();
        assert_eq!(code, tc::STR);
        let json = unsafe { std::ffi::CStr::from_ptr(json.v_str) }.to_str().unwrap().to_string();
        assert_eq!(json.as_bytes(), &tvm_data(model, "graph.json")[..], "{model}");
        // Re-serializing the factory reproduces TVM's payload.
        let m = unsafe {
            tvm_runtime::runtime::object::header::ObjPtr::<tvm_runtime::runtime::function::packed::ModuleObj>::from_borrowed(
                tvm_runtime::runtime::object::header::legacy::header(lib.0),
            )
        };
        let f = m.node().as_any().downcast_ref::<GraphExecutorFactory>().unwrap();
        let payload = f.save_binary().unwrap();
        let key = b"GraphExecutorFactory";
        let start = 8 + 8 + 8 + key.len();
        assert_eq!(&blob[start..start + payload.len()], &payload[..], "{model}");
    }
}
