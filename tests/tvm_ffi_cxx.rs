//! tvm-ffi's C++ API on this runtime: a kernel library in tvm-ffi's quickstart style
//! (`TVM_FFI_DLL_EXPORT_TYPED_FUNC`) and a C++ program that loads it with
//! `tvm::ffi::Module::LoadFromFile` and calls it on tensors (c_tests/tvm_ffi_cxx/), both compiled
//! against tvm-ffi's headers (third_party/tvm_ffi/include) and linked against libtvm_runtime.so.

mod common;
use common::{library_dir, repo, scratch};
use std::path::Path;
use std::process::Command;

/// Compile `source` with the C++ compiler (`$CXX`, else `c++`) against tvm-ffi's headers and
/// this build's library.
fn compile(source: &Path, out: &Path, extra: &[&str]) {
    let lib_dir = library_dir();
    let status = Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
        .args(["-std=c++17", "-O1", "-isystem"])
        .arg(repo().join("third_party/tvm_ffi/include"))
        .args(extra)
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(&lib_dir)
        .arg("-ltvm_runtime")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .status()
        .expect("a C++ compiler (c++ or $CXX)");
    assert!(status.success(), "compiling {} failed", source.display());
}

/// That a program exited 0 printing only OK, else its output (`what` names it).
fn assert_printed_ok(out: &std::process::Output, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "OK",
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cxx_program_loads_and_calls_a_quickstart_kernel() {
    let dir = scratch("tvm_ffi_cxx");
    let sources = repo().join("c_tests/tvm_ffi_cxx");
    let kernel = dir.join("add_one.so");
    let loader = dir.join("loader");
    compile(&sources.join("add_one_kernel.cc"), &kernel, &["-shared", "-fPIC"]);
    compile(&sources.join("loader.cc"), &loader, &[]);
    let out = Command::new(&loader).arg(&kernel).output().expect("run the loader");
    assert_printed_ok(&out, "loader");
}

/// A C++ program on tvm-ffi's C++ API alone runs a library apache-tvm 0.27's `tvm.compile`
/// built (the Relax VM: `vm_load_executable`, `vm_initialization`, `main`) on this runtime and
/// gets apache-tvm's recorded output.
#[test]
fn cxx_program_runs_a_tvm_compile_library() {
    let dir = scratch("tvm_ffi_cxx_relax");
    let loader = dir.join("relax_loader");
    compile(&repo().join("c_tests/tvm_ffi_cxx/relax_loader.cc"), &loader, &[]);
    let data = repo().join("tests/data/relax-0.27/mlp");
    let out = Command::new(&loader)
        .arg(data.join("lib.so"))
        .arg("main")
        .arg(data.join("main0_in0.bin"))
        .arg("4,32")
        .arg(data.join("main0_out0.bin"))
        .output()
        .expect("run the Relax loader");
    assert_printed_ok(&out, "relax loader");
}

/// A kernel library's function that takes objects (`ffi::Tensor`, `ffi::Array<int64_t>`,
/// `ffi::Function`, `ffi::String`), loaded and called in this process through the runtime's
/// module API, as a Python package built on tvm-ffi calls its kernels.
#[test]
fn a_kernel_library_function_takes_objects() {
    use tvm_runtime::abi::{DLDataType, DLDevice};
    use tvm_runtime::runtime::function::packed::{PackedFunc, Value};
    use tvm_runtime::runtime::{function::registry, Module, NDArray};
    let dir = scratch("tvm_ffi_cxx_objects");
    let kernel = dir.join("add_one.so");
    compile(&repo().join("c_tests/tvm_ffi_cxx/add_one_kernel.cc"), &kernel, &["-shared", "-fPIC"]);
    tvm_runtime::init();
    let lib = Module::load_from_file(kernel.to_str().unwrap(), "").unwrap();
    let combine = lib.get_function("combine", true).unwrap().expect("combine is exported");
    let x = NDArray::empty(&[4], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
    x.copy_from_bytes(&[1.0f32, 2.0, 3.0, 4.5].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<_>>()).unwrap();
    let scale = registry::require("ffi.Array").unwrap().call(&[Value::Int(3), Value::Int(7)]).unwrap();
    let plus_100 = PackedFunc::from_typed(|args| Ok(Value::Int(args.int(0)? + 100)));
    let args = [Value::NDArray(x), scale, Value::Func(plus_100), Value::Str("a tag of 17 bytes".into())];
    let out = combine.call(&args).unwrap();
    // sum 10.5 * 3 + 2 items + (17 + 100)
    assert!(matches!(out, Value::Float(v) if v == 10.5 * 3.0 + 2.0 + 117.0), "{out:?}");
    // A wrong argument is the kernel's own type error, raised through the call.
    let x = NDArray::empty(&[1], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
    let e = combine.call(&[Value::NDArray(x), Value::Int(3), Value::Null, Value::Str("t".into())]).unwrap_err();
    assert!(e.message().contains("Array"), "{e}");
}

/// Maps and dicts cross between this runtime and C++ code compiled against tvm-ffi's headers,
/// which hash, find, insert and erase inline (c_tests/tvm_ffi_cxx/map_interop.cc): each side
/// finds, changes and walks what the other built, small and dense, across the move between.
#[test]
fn maps_cross_between_cxx_and_the_runtime_in_both_layouts() {
    let dir = scratch("tvm_ffi_cxx_maps");
    let program = dir.join("map_interop");
    compile(&repo().join("c_tests/tvm_ffi_cxx/map_interop.cc"), &program, &[]);
    let out = Command::new(&program).output().expect("run the map program");
    assert_printed_ok(&out, "map interop");
}
