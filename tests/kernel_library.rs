//! Kernel libraries built from C with TVM's kernel ABI, loaded and called through the C API:
//! context pointers, `__tvm_main__`, calls back into the runtime, failing kernels and tasks,
//! and malformed import blobs.

mod common;
use common::*;
use std::ffi::c_void;
use tvm_runtime::abi::{type_code as tc, DLDevice, TVMValue};
use tvm_runtime::ffi::legacy::func::{TVMCFuncSetReturn, TVMFuncCreateFromCFunc, TVMFuncRegisterGlobal};
use tvm_runtime::runtime::base::byteio::Writer;
use tvm_runtime::runtime::module::blob::{write_import_tree, BlobEntry};

fn kernels_only_so() -> std::path::PathBuf {
    static ONCE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| build_so(&scratch("kernel_library").join("kernels.so"), &[kernels_c()], None)).clone()
}

unsafe extern "C" fn env_value(
    _args: *mut TVMValue,
    _codes: *mut i32,
    _n: i32,
    ret: *mut c_void,
    _res: *mut c_void,
) -> i32 {
    let mut v = TVMValue { v_int64: 4242 };
    let mut code = tc::INT;
    TVMCFuncSetReturn(ret, &mut v, &mut code, 1)
}

#[test]
fn plain_library_kernels_and_entry_function() {
    let lib = load_module(&kernels_only_so()).unwrap();
    let (tk, _) = call(&global("runtime.ModuleGetTypeKey"), &[Arg::Module(&lib)]).unwrap();
    assert_eq!(unsafe { std::ffi::CStr::from_ptr(tk.v_str) }.to_str().unwrap(), "library");
    let main = get_function(&lib, "__tvm_main__").expect("__tvm_main__ names an entry");
    let mut a = HostTensor::new(&[3], &[1.0, 2.0, 3.0]);
    let mut b = HostTensor::new(&[3], &[10.0, 20.0, 30.0]);
    let mut out = HostTensor::new(&[3], &[0.0; 3]);
    call(&main, &[Arg::Tensor(a.ptr()), Arg::Tensor(b.ptr()), Arg::Tensor(out.ptr())]).unwrap();
    assert_eq!(out.values(), vec![11.0, 22.0, 33.0]);
    assert!(get_function(&lib, "no_such_kernel").is_none());
}

#[test]
fn kernel_errors_surface_with_their_message() {
    let lib = load_module(&kernels_only_so()).unwrap();
    let add = get_function(&lib, "tvmgen_default_fused_add").unwrap();
    let mut a = HostTensor::new(&[3], &[1.0, 2.0, 3.0]);
    let mut out = HostTensor::new(&[3], &[0.0; 3]);
    let e = call(&add, &[Arg::Tensor(a.ptr()), Arg::Int(1), Arg::Tensor(out.ptr())]).unwrap_err();
    assert!(e.contains("argument 1 must be a tensor, got type code 0"), "{e}");
    let e = call(&add, &[Arg::Tensor(a.ptr())]).unwrap_err();
    assert!(e.contains("expects 3 arguments"), "{e}");
    // A task failing inside a parallel launch fails the kernel, with the task's message.
    let bad = get_function(&lib, "test_failing_parallel").unwrap();
    let e = call(&bad, &[]).unwrap_err();
    assert!(e.contains("Task 0 error") && e.contains("task failed on purpose"), "{e}");
    // And the library keeps working.
    let mut b = HostTensor::new(&[3], &[1.0, 1.0, 1.0]);
    call(&add, &[Arg::Tensor(a.ptr()), Arg::Tensor(b.ptr()), Arg::Tensor(out.ptr())]).unwrap();
    assert_eq!(out.values(), vec![2.0, 3.0, 4.0]);
}

#[test]
fn kernels_call_globals_through_the_module_context() {
    let mut f = std::ptr::null_mut();
    ok(unsafe { TVMFuncCreateFromCFunc(Some(env_value), std::ptr::null_mut(), None, &mut f) });
    ok(unsafe { TVMFuncRegisterGlobal(c"test.env_value".as_ptr(), f, 1) });
    let _f = Func(f);
    let lib = load_module(&kernels_only_so()).unwrap();
    let k = get_function(&lib, "test_env_call").unwrap();
    let (v, code) = call(&k, &[]).unwrap();
    assert_eq!(code, tc::INT);
    assert_eq!(unsafe { v.v_int64 }, 4242);
    // Loading the same library again reuses the live library module: the context stays valid.
    let again = load_module(&kernels_only_so()).unwrap();
    drop(again);
    let (v, _) = call(&k, &[]).unwrap();
    assert_eq!(unsafe { v.v_int64 }, 4242);
}

#[test]
fn functions_keep_their_library_loaded() {
    let lib = load_module(&kernels_only_so()).unwrap();
    let add = get_function(&lib, "tvmgen_default_fused_multiply").unwrap();
    drop(lib);
    let mut a = HostTensor::new(&[2], &[3.0, 4.0]);
    let mut b = HostTensor::new(&[1], &[2.0]);
    let mut out = HostTensor::new(&[2], &[0.0; 2]);
    call(&add, &[Arg::Tensor(a.ptr()), Arg::Tensor(b.ptr()), Arg::Tensor(out.ptr())]).unwrap();
    assert_eq!(out.values(), vec![6.0, 8.0]);
}

fn so_with_blob(name: &str, blob: &[u8]) -> std::path::PathBuf {
    build_so(&scratch("kernel_library").join(format!("{name}.so")), &[kernels_c()], Some(blob))
}

#[test]
fn malformed_blobs_are_errors_naming_the_problem() {
    let good = tvm_data("seed000", "mblob.bin");
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    cases.push(("truncated", good[..good.len() / 2].to_vec(), "length prefix says"));
    let mut w = Writer::new();
    w.u64(1);
    w.string("cuda");
    let unknown = {
        let mut o = Writer::new();
        o.u64(w.buf.len() as u64);
        o.bytes(&w.buf);
        o.into_bytes()
    };
    cases.push(("unknown_type", unknown, "module of type `cuda`"));
    let mut huge_count = good.clone();
    huge_count[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    cases.push(("huge_count", huge_count, "module count is 18446744073709551615"));
    cases.push(("bad_tree", write_import_tree(&[BlobEntry::Lib], &[0, 5], &[0]), "not a valid CSR index"));
    cases.push(("cycle", write_import_tree(&[BlobEntry::Lib], &[0, 1], &[0]), "cycle"));
    let mut inner_len = good.clone();
    inner_len[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes()); // type key length
    cases.push(("bad_key_len", inner_len, "type key of entry 0 is 1099511627776"));
    for (name, blob, want) in cases {
        let e = match load_module(&so_with_blob(name, &blob)) {
            Ok(_) => panic!("{name}: loaded a malformed blob"),
            Err(e) => e,
        };
        assert!(e.contains(want), "{name}: expected `{want}` in `{e}`");
    }
    // The process keeps working: a good blob still loads and runs.
    let lib = load_module(&so_with_blob("good", &good)).unwrap();
    let default = get_function(&lib, "default").unwrap();
    let (v, _) = call(&default, &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    let _g = Mod(unsafe { v.v_handle });
}

#[test]
fn missing_file_and_unknown_format() {
    let e = load_module(std::path::Path::new("/nonexistent/model.so")).unwrap_err();
    assert!(e.contains("cannot load library `/nonexistent/model.so`"), "{e}");
    assert!(!e.contains("use ./"), "a path with '/' needs no hint: {e}");
    // A bare name goes to dlopen's search path, not the current directory: the message says so.
    let e = load_module(std::path::Path::new("no_such_model.so")).unwrap_err();
    assert!(e.contains("cannot load library `no_such_model.so`"), "{e}");
    assert!(e.contains("use ./no_such_model.so or an absolute path"), "{e}");
    let e = load_module(std::path::Path::new("/tmp/model.onnx")).unwrap_err();
    assert!(e.contains("unknown format `onnx`"), "{e}");
}

#[test]
fn system_library_with_a_packed_blob_runs_the_model() {
    use tvm_runtime::ffi::legacy::backend::TVMBackendRegisterSystemLibSymbol;
    // Stand in for an app that links kernels statically: its static constructors register
    // every kernel, the context pointers and the blob under a prefix.
    let so = build_so(&scratch("kernel_library").join("static_kernels.so"), &[kernels_c()], None);
    let lib = unsafe { libloading::Library::new(&so) }.unwrap();
    let blob: &'static [u8] = Box::leak(tvm_data("mlp", "mblob.bin").into_boxed_slice());
    let names = [
        "tvmgen_default_fused_nn_contrib_dense_pack_add_nn_relu",
        "tvmgen_default_fused_nn_contrib_dense_pack",
        "__TVMAPISetLastError",
        "__TVMBackendParallelLaunch",
        "__TVMBackendParallelBarrier",
        "__TVMBackendAllocWorkspace",
        "__TVMBackendFreeWorkspace",
        "__tvm_module_ctx",
    ];
    for n in names {
        let sym = unsafe { lib.get::<*mut c_void>(n.as_bytes()).unwrap().try_as_raw_ptr().unwrap() };
        let name = std::ffi::CString::new(format!("mlpsys_{n}")).unwrap();
        ok(unsafe { TVMBackendRegisterSystemLibSymbol(name.as_ptr(), sym) });
    }
    ok(unsafe { TVMBackendRegisterSystemLibSymbol(c"mlpsys___tvm_dev_mblob".as_ptr(), blob.as_ptr() as *mut c_void) });
    let (v, code) = call(&global("runtime.SystemLib"), &[Arg::Str("mlpsys_")]).unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let factory = Mod(unsafe { v.v_handle });
    let (v, _) = call(&get_function(&factory, "default").unwrap(), &[Arg::Device(DLDevice::cpu(0))]).unwrap();
    let g = Mod(unsafe { v.v_handle });
    let mut x = HostTensor::new(&[2, 8], &f32s(&tvm_data("mlp", "input_x.bin")));
    call(&get_function(&g, "set_input").unwrap(), &[Arg::Str("x"), Arg::Tensor(x.ptr())]).unwrap();
    call(&get_function(&g, "run").unwrap(), &[]).unwrap();
    let mut out = HostTensor::new(&[2, 4], &[0.0; 8]);
    call(&get_function(&g, "get_output").unwrap(), &[Arg::Int(0), Arg::Tensor(out.ptr())]).unwrap();
    assert_close(&out.values(), &f32s(&tvm_data("mlp", "output_0.bin")), 1e-5);
    std::mem::forget(lib); // registered symbols stay valid for the process
}

/// The imports the loader reads before `dlopen` (to decide whether the runtime must be global):
/// a library calling runtime functions by name lists them; what it defines is not listed.
#[test]
fn a_librarys_imports_are_read_from_its_dynamic_symbols() {
    use tvm_runtime::runtime::module::elf::{undefined_symbols, Expected, FileBytes};
    let dir = scratch("kernel_library");
    let src = dir.join("c_host.c");
    std::fs::write(
        &src,
        "#include <stdint.h>\n#include <tvm/runtime/c_backend_api.h>\n\
         __attribute__((visibility(\"default\"))) int c_host_entry(int64_t n) {\n\
           void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)n, 0, 8);\n\
           if (!w) { TVMAPISetLastError(\"no workspace\"); return -1; }\n\
           return TVMBackendFreeWorkspace(1, 0, w);\n}\n",
    )
    .unwrap();
    let so = build_so(&dir.join("c_host.so"), &[src], None);
    let file = std::fs::File::open(&so).unwrap();
    let bytes = FileBytes { len: file.metadata().unwrap().len(), file };
    let imports = undefined_symbols(&bytes, Expected::host()).unwrap();
    for name in ["TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace", "TVMAPISetLastError"] {
        assert!(imports.iter().any(|n| n == name), "{name} missing from {imports:?}");
    }
    assert!(!imports.iter().any(|n| n == "c_host_entry"), "a defined symbol listed: {imports:?}");
    // What it defines, which symbol lookups are limited to, is read in the same pass.
    let file = std::fs::File::open(&so).unwrap();
    let bytes = FileBytes { len: file.metadata().unwrap().len(), file };
    let symbols = tvm_runtime::runtime::module::elf::dynamic_symbols(&bytes, Expected::host()).unwrap().unwrap();
    assert!(symbols.defined.contains("c_host_entry"), "{:?}", symbols.defined);
    assert!(!symbols.defined.contains("TVMAPISetLastError"), "an import listed as defined");
    assert_eq!(symbols.imports, imports);
    let kernels = std::fs::File::open(kernels_only_so()).unwrap();
    let bytes = FileBytes { len: kernels.metadata().unwrap().len(), file: kernels };
    let imports = undefined_symbols(&bytes, Expected::host()).unwrap();
    assert!(!imports.iter().any(|n| n.starts_with("TVM")), "context pointers only, yet {imports:?}");
}
