//! The Relax VM on the libraries TVM 0.18 (`relax.build`) and apache-tvm 0.27 (`tvm.compile`)
//! wrote: every case of both manifests through the Rust API and through the C API as a C user
//! calls it, many threads on one VM, the stateful API, and the errors a caller can provoke.

mod common;

use common::{f32s, last_error, ok, repo};
use serde_json::Value as Json;
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIByteArray, TVMValue};
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncFree, TVMFuncGetGlobal};
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModGetFunction, TVMModLoadFromFile};
use tvm_runtime::runtime::function::packed::{Module, PackedFunc, Value};
use tvm_runtime::runtime::tensor::ndarray::NDArray;
use tvm_runtime::vm::{Executable, Format, VmModule};

/// One recorded call: function, inputs and outputs (shape, raw little-endian f32 bytes).
struct Case {
    name: String,
    func: String,
    inputs: Vec<(Vec<i64>, Vec<u8>)>,
    outputs: Vec<(Vec<i64>, Vec<u8>)>,
    tuple: bool,
}

struct Model {
    name: String,
    lib: PathBuf,
    cases: Vec<Case>,
}

fn tensors(dir: &Path, list: &Json) -> Vec<(Vec<i64>, Vec<u8>)> {
    let list = list.as_array().expect("tensor list");
    list.iter()
        .map(|t| {
            assert_eq!(t["dtype"], "float32");
            let shape = t["shape"].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
            let p = dir.join(t["file"].as_str().unwrap());
            (shape, std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        })
        .collect()
}

fn models(version: &str) -> Vec<Model> {
    let root = repo().join("tests/data").join(version);
    let manifest: Json = serde_json::from_slice(&std::fs::read(root.join("manifest.json")).unwrap()).unwrap();
    let mut out = Vec::new();
    for (name, m) in manifest["models"].as_object().unwrap() {
        let lib = root.join(m["lib"].as_str().unwrap());
        let dir = lib.parent().unwrap().to_path_buf();
        let cases = m["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| Case {
                name: c["name"].as_str().unwrap().to_string(),
                func: c["func"].as_str().unwrap().to_string(),
                inputs: tensors(&dir, &c["inputs"]),
                outputs: tensors(&dir, &c["outputs"]),
                tuple: c["tuple"].as_bool().unwrap(),
            })
            .collect();
        out.push(Model { name: name.clone(), lib, cases });
    }
    assert!(!out.is_empty());
    out
}

/// Within 1e-5 of the recorded value, relative to max(1, |recorded|).
fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{what}: element {i}: got {g}, recorded {w}");
    }
}

// ---- Rust API ---------------------------------------------------------------------------------

fn load_vm(lib: &Path) -> Module {
    tvm_runtime::init();
    let exec = Module::load_from_file(lib.to_str().unwrap(), "").unwrap();
    let vm = exec.get_function("vm_load_executable", false).unwrap().unwrap().call(&[]).unwrap().into_module().unwrap();
    let init = vm.get_function("vm_initialization", false).unwrap().unwrap();
    init.call(&[Value::Int(1), Value::Int(0), Value::Int(2)]).unwrap();
    vm
}

fn input_arrays(c: &Case) -> Vec<Value> {
    c.inputs.iter().map(|(s, b)| Value::NDArray(NDArray::from_bytes(s, DLDataType::FLOAT32, b).unwrap())).collect()
}

/// The result's tensors: one NDArray, or each element of a tuple (a runtime Array).
fn result_arrays(v: Value) -> Vec<NDArray> {
    match v {
        Value::NDArray(a) => vec![a],
        Value::Object(o) => {
            let size = tvm_runtime::runtime::function::registry::get("runtime.ArraySize").unwrap();
            let item = tvm_runtime::runtime::function::registry::get("runtime.ArrayGetItem").unwrap();
            let n = size.call(&[Value::Object(o.clone())]).unwrap().as_int().unwrap();
            (0..n)
                .map(|i| item.call(&[Value::Object(o.clone()), Value::Int(i)]).unwrap().into_ndarray().unwrap())
                .collect()
        }
        other => panic!("unexpected result {}", other.type_name()),
    }
}

fn check_outputs(what: &str, c: &Case, got: &[NDArray]) {
    assert_eq!(got.len(), c.outputs.len(), "{what}: output count");
    for (i, (a, (shape, bytes))) in got.iter().zip(&c.outputs).enumerate() {
        assert_eq!(a.shape(), &shape[..], "{what}: output {i} shape");
        assert_close(&format!("{what}: output {i}"), &f32s(&a.to_vec_u8().unwrap()), &f32s(bytes));
    }
}

fn run_rust(version: &str) -> usize {
    let mut n = 0;
    for m in models(version) {
        let vm = load_vm(&m.lib);
        for c in &m.cases {
            let f = vm.get_function(&c.func, false).unwrap().unwrap();
            let out = f.call(&input_arrays(c)).unwrap_or_else(|e| panic!("{} {}: {e}", m.name, c.name));
            assert_eq!(matches!(out, Value::Object(_)), c.tuple, "{} {}: tuple result", m.name, c.name);
            check_outputs(&format!("{version} {} {}", m.name, c.name), c, &result_arrays(out));
            n += 1;
        }
    }
    n
}

#[test]
fn tvm018_every_case_rust_api() {
    assert_eq!(run_rust("relax-0.18"), 7);
}

// ---- C API ------------------------------------------------------------------------------------

struct CMod(*mut c_void);
impl Drop for CMod {
    fn drop(&mut self) {
        ok(unsafe { TVMModFree(self.0) });
    }
}
struct CFunc(*mut c_void);
impl Drop for CFunc {
    fn drop(&mut self) {
        ok(unsafe { TVMFuncFree(self.0) });
    }
}

fn c_load(path: &Path) -> Result<CMod, String> {
    common::check_handles();
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let mut m = std::ptr::null_mut();
    match unsafe { TVMModLoadFromFile(p.as_ptr(), c"".as_ptr(), &mut m) } {
        0 => Ok(CMod(m)),
        _ => Err(last_error()),
    }
}

fn c_func(m: &CMod, name: &str) -> Option<CFunc> {
    let n = CString::new(name).unwrap();
    let mut f = std::ptr::null_mut();
    ok(unsafe { TVMModGetFunction(m.0, n.as_ptr(), 0, &mut f) });
    (!f.is_null()).then_some(CFunc(f))
}

fn c_global(name: &str) -> CFunc {
    let n = CString::new(name).unwrap();
    let mut f = std::ptr::null_mut();
    ok(unsafe { TVMFuncGetGlobal(n.as_ptr(), &mut f) });
    CFunc(f)
}

fn c_call(f: &CFunc, vals: &[(TVMValue, i32)]) -> Result<(TVMValue, i32), String> {
    let mut v: Vec<TVMValue> = vals.iter().map(|x| x.0).collect();
    let mut c: Vec<i32> = vals.iter().map(|x| x.1).collect();
    let (mut ret, mut code) = (TVMValue::null(), 0);
    match unsafe { TVMFuncCall(f.0, v.as_mut_ptr(), c.as_mut_ptr(), v.len() as i32, &mut ret, &mut code) } {
        0 => Ok((ret, code)),
        _ => Err(last_error()),
    }
}

fn int(v: i64) -> (TVMValue, i32) {
    (TVMValue { v_int64: v }, tc::INT)
}

/// A C user's NDArray (`TVMArrayAlloc`) filled with `bytes`.
fn c_array(shape: &[i64], bytes: &[u8]) -> *mut DLTensor {
    use tvm_runtime::ffi::legacy::array::{TVMArrayAlloc, TVMArrayCopyFromBytes};
    let mut t = std::ptr::null_mut();
    ok(unsafe { TVMArrayAlloc(shape.as_ptr(), shape.len() as i32, 2, 32, 1, 1, 0, &mut t) });
    ok(unsafe { TVMArrayCopyFromBytes(t, bytes.as_ptr() as *mut c_void, bytes.len()) });
    t
}

fn c_array_values(t: *mut DLTensor) -> CTensor {
    use tvm_runtime::ffi::legacy::array::TVMArrayCopyToBytes;
    let shape = unsafe { std::slice::from_raw_parts((*t).shape, (*t).ndim as usize) }.to_vec();
    let mut bytes = vec![0u8; shape.iter().product::<i64>() as usize * 4];
    ok(unsafe { TVMArrayCopyToBytes(t, bytes.as_mut_ptr() as *mut c_void, bytes.len()) });
    (shape, f32s(&bytes))
}

/// Load, `vm_load_executable`, `vm_initialization(1, 0, 2)` as a C program does.
fn c_vm(lib: &Path) -> (CMod, CMod) {
    let exec = c_load(lib).unwrap();
    let load = c_func(&exec, "vm_load_executable").expect("vm_load_executable");
    let (vm, code) = c_call(&load, &[]).unwrap();
    assert_eq!(code, tc::MODULE_HANDLE);
    let vm = CMod(unsafe { vm.v_handle });
    let init = c_func(&vm, "vm_initialization").unwrap();
    c_call(&init, &[int(1), int(0), int(2)]).unwrap();
    (exec, vm)
}

/// The tensors of a C result: an NDArray handle, or a tuple read with `runtime.ArraySize/GetItem`.
fn c_results(ret: TVMValue, code: i32) -> Vec<CTensor> {
    use tvm_runtime::ffi::legacy::array::TVMArrayFree;
    use tvm_runtime::ffi::legacy::object::TVMObjectFree;
    match code {
        tc::NDARRAY_HANDLE => {
            let t = unsafe { ret.v_handle } as *mut DLTensor;
            let out = c_array_values(t);
            ok(unsafe { TVMArrayFree(t) });
            vec![out]
        }
        tc::OBJECT_HANDLE => {
            let arr = (unsafe { ret.v_handle }, tc::OBJECT_HANDLE);
            let (n, _) = c_call(&c_global("runtime.ArraySize"), &[(TVMValue { v_handle: arr.0 }, arr.1)]).unwrap();
            let get = c_global("runtime.ArrayGetItem");
            let out = (0..unsafe { n.v_int64 })
                .map(|i| {
                    let (item, code) = c_call(&get, &[(TVMValue { v_handle: arr.0 }, arr.1), int(i)]).unwrap();
                    assert_eq!(code, tc::NDARRAY_HANDLE);
                    c_results(item, code).remove(0)
                })
                .collect();
            ok(unsafe { TVMObjectFree(arr.0) });
            out
        }
        c => panic!("unexpected result type code {c}"),
    }
}

/// A tensor read back through the C API: shape and values.
type CTensor = (Vec<i64>, Vec<f32>);

fn c_run_case(vm: &CMod, c: &Case) -> Result<Vec<CTensor>, String> {
    use tvm_runtime::ffi::legacy::array::TVMArrayFree;
    let f = c_func(vm, &c.func).expect("function of the manifest");
    let inputs: Vec<*mut DLTensor> = c.inputs.iter().map(|(s, b)| c_array(s, b)).collect();
    let args: Vec<_> = inputs.iter().map(|&t| (TVMValue { v_handle: t as *mut c_void }, tc::NDARRAY_HANDLE)).collect();
    let out = c_call(&f, &args).map(|(r, code)| c_results(r, code));
    for t in inputs {
        ok(unsafe { TVMArrayFree(t) });
    }
    out
}

fn run_c(version: &str) -> usize {
    let mut n = 0;
    for m in models(version) {
        let (_exec, vm) = c_vm(&m.lib);
        for c in &m.cases {
            let what = format!("{version} {} {} (C API)", m.name, c.name);
            let got = c_run_case(&vm, c).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.len(), c.outputs.len(), "{what}: outputs");
            for ((shape, vals), (want_shape, want)) in got.iter().zip(&c.outputs) {
                assert_eq!(shape, want_shape, "{what}");
                assert_close(&what, vals, &f32s(want));
            }
            n += 1;
        }
    }
    n
}

#[test]
fn tvm018_every_case_c_api() {
    assert_eq!(run_c("relax-0.18"), 7);
}

// ---- 0.27 (tvm-ffi libraries) -----------------------------------------------------------------

/// Whether this runtime loads tvm-ffi libraries (their `__tvm_ffi_<name>` kernels); if not, the
/// reason, printed by the tests that then skip.
fn ffi_libraries_load() -> Result<(), String> {
    tvm_runtime::init();
    let lib = repo().join("tests/data/relax-0.27/one_kernel/lib.so");
    let exec = Module::load_from_file(lib.to_str().unwrap(), "").map_err(|e| e.to_string())?;
    let found = exec.imports().iter().any(|m| m.get_function("add", true).ok().flatten().is_some());
    if found {
        Ok(())
    } else {
        Err("the library module does not resolve the `__tvm_ffi_add` kernel as `add`".into())
    }
}

/// Every case of a set of tvm-ffi libraries through `run` (the Rust or the C API), or a line
/// saying why not where this build does not load them.
fn ffi_set(version: &str, run: fn(&str) -> usize) {
    match ffi_libraries_load() {
        Ok(()) => {
            let cases: usize = models(version).iter().map(|m| m.cases.len()).sum();
            assert!(cases >= 9, "{version}: only {cases} cases in its manifest");
            assert_eq!(run(version), cases, "{version}: every case of the manifest runs");
        }
        Err(why) => println!("SKIPPED: {version} (tvm-ffi libraries) cannot be loaded yet: {why}"),
    }
}

#[test]
fn tvm027_every_case_rust_api() {
    ffi_set("relax-0.27", run_rust);
}

#[test]
fn tvm027_every_case_c_api() {
    ffi_set("relax-0.27", run_c);
}

// ---- the same cases through tvm-ffi's C ABI (`TVMFFIFunctionCall`) ----------------------------

/// Call a tvm-ffi function object with values (owned for the call) and take its result.
fn ffi_call(f: *mut c_void, vals: Vec<Value>) -> Result<Value, String> {
    use tvm_runtime::ffi::tvm_ffi::c_api::TVMFFIFunctionCall;
    let mut anys: Vec<TVMFFIAny> = vals.into_iter().map(Value::into_any).collect();
    let mut out = TVMFFIAny::NONE;
    let rc = unsafe { TVMFFIFunctionCall(f, anys.as_mut_ptr(), anys.len() as i32, &mut out) };
    for a in anys {
        drop(unsafe { Value::adopt_any(a) });
    }
    match rc {
        0 => Ok(unsafe { Value::adopt_any(out) }.unwrap()),
        _ => Err(last_error()),
    }
}

/// A global through `TVMFFIFunctionGetGlobal` (an owned tvm-ffi handle).
fn ffi_global(name: &str) -> *mut c_void {
    use tvm_runtime::ffi::tvm_ffi::c_api::TVMFFIFunctionGetGlobal;
    let n = TVMFFIByteArray { data: name.as_ptr() as *const _, size: name.len() };
    let mut f = std::ptr::null_mut();
    ok(unsafe { TVMFFIFunctionGetGlobal(&n, &mut f) });
    assert!(!f.is_null(), "global {name}");
    f
}

/// `ffi.ModuleGetFunction(module, name)` as a tvm-ffi handle.
fn ffi_module_function(get: *mut c_void, m: &Value, name: &str) -> *mut c_void {
    match ffi_call(get, vec![m.clone(), Value::from(name), Value::Bool(true)]).unwrap() {
        Value::Func(f) => f.into_raw() as *mut c_void,
        other => panic!("{name}: {}", other.type_name()),
    }
}

/// Every case as a program on tvm-ffi's C ABI alone runs it: `ffi.ModuleLoadFromFile`,
/// `vm_load_executable`, `vm_initialization`, then each function with `ffi.Tensor` arguments.
fn run_ffi(version: &str) -> usize {
    use tvm_runtime::ffi::tvm_ffi::c_api::TVMFFIObjectDecRef;
    let (load, get) = (ffi_global("ffi.ModuleLoadFromFile"), ffi_global("ffi.ModuleGetFunction"));
    let mut n = 0;
    for m in models(version) {
        let exec = ffi_call(load, vec![Value::from(m.lib.to_str().unwrap())]).unwrap();
        let load_exec = ffi_module_function(get, &exec, "vm_load_executable");
        let vm = ffi_call(load_exec, vec![]).unwrap();
        let init = ffi_module_function(get, &vm, "vm_initialization");
        ffi_call(init, vec![Value::Int(1), Value::Int(0), Value::Int(2)]).unwrap();
        for c in &m.cases {
            let what = format!("{version} {} {} (tvm-ffi C API)", m.name, c.name);
            let f = ffi_module_function(get, &vm, &c.func);
            let out = ffi_call(f, input_arrays(c)).unwrap_or_else(|e| panic!("{what}: {e}"));
            check_outputs(&what, c, &result_arrays(out));
            ok(unsafe { TVMFFIObjectDecRef(f) });
            n += 1;
        }
        for f in [load_exec, init] {
            ok(unsafe { TVMFFIObjectDecRef(f) });
        }
    }
    for f in [load, get] {
        ok(unsafe { TVMFFIObjectDecRef(f) });
    }
    n
}

#[test]
fn tvm027_every_case_tvm_ffi_api() {
    ffi_set("relax-0.27", run_ffi);
}

#[test]
fn tvm018_every_case_tvm_ffi_api() {
    assert_eq!(run_ffi("relax-0.18"), 7);
}

/// apache-tvm's own C client of the Relax VM bench (benches/relax_vm/peer.c: tvm-ffi's C API
/// only, `ffi.ModuleLoadFromFile`, `vm_load_executable`, tensors from DLPack), compiled against
/// tvm-ffi's own headers and linked to this library instead of apache-tvm's, loads and calls
/// every apache-tvm 0.27 model unchanged.
#[test]
fn apache_tvms_c_client_runs_on_this_library() {
    if ffi_libraries_load().is_err() {
        return println!("SKIPPED: tvm-ffi libraries cannot be loaded here");
    }
    let dir = common::scratch("relax_vm_peer_client");
    let client = dir.join("peer_on_ours");
    let lib_dir = common::library_dir();
    let status = std::process::Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(repo().join("benches/relax_vm"))
        .arg("-I")
        .arg(repo().join("c_tests/third_party/tvm_ffi/include"))
        .arg(repo().join("benches/relax_vm/peer.c"))
        .arg("-L")
        .arg(&lib_dir)
        .arg("-ltvm_runtime")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .args(["-lpthread", "-o"])
        .arg(&client)
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling peer.c against this library");
    for m in models("relax-0.27") {
        let c = &m.cases[0];
        let mut cmd = std::process::Command::new(&client);
        cmd.arg(&m.lib).arg(&c.func).args(["0", "0"]);
        for (i, (shape, bytes)) in c.inputs.iter().enumerate() {
            let file = dir.join(format!("{}_{i}.bin", m.name));
            std::fs::write(&file, bytes).unwrap();
            cmd.arg(&file).arg(shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"));
        }
        let out = cmd.env_remove("LD_LIBRARY_PATH").output().expect("the client runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("\"load_us\""),
            "{}: {text}{}",
            m.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// apache-tvm 0.25's libraries of the same models (its kernels and executables differ from
/// 0.27's byte for byte), through the Rust and the C API.
#[test]
fn tvm025_every_case_rust_and_c_api() {
    ffi_set("relax-0.25", run_rust);
    ffi_set("relax-0.25", run_c);
}

/// The executable bytes inside a tvm-ffi library: the `__tvm_ffi__library_bin` symbol's module
/// list (`<nbytes u64> <indptr vec<u64>> <child vec<u64>>`, then per module `<kind str>` and,
/// except for `_lib`, `<bytes str>`), read from the ELF file.
fn ffi_executable_bytes(lib: &Path) -> Vec<u8> {
    let file = std::fs::read(lib).unwrap();
    let bin = elf_symbol(&file, "__tvm_ffi__library_bin").expect("__tvm_ffi__library_bin");
    let u64_at = |o: usize| u64::from_le_bytes(bin[o..o + 8].try_into().unwrap()) as usize;
    let mut pos = 8;
    let indptr = u64_at(pos);
    pos += 8 + 8 * indptr;
    let child = u64_at(pos);
    pos += 8 + 8 * child;
    for _ in 0..indptr - 1 {
        let n = u64_at(pos);
        let kind = std::str::from_utf8(&bin[pos + 8..pos + 8 + n]).unwrap().to_string();
        pos += 8 + n;
        if kind == "_lib" {
            continue;
        }
        let n = u64_at(pos);
        if kind == "relax.VMExecutable" {
            return bin[pos + 8..pos + 8 + n].to_vec();
        }
        pos += 8 + n;
    }
    panic!("no relax.VMExecutable in {}", lib.display());
}

/// The bytes of the dynamic symbol `name` of a little-endian ELF64 file (from its section).
fn elf_symbol<'a>(f: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let u16_at = |o: usize| u16::from_le_bytes(f[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(f[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(f[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3A), u16_at(0x3C));
    let section = |i: usize| {
        let s = shoff + i * shentsize;
        (u32_at(s + 4), u64_at(s + 0x10), u64_at(s + 0x18), u64_at(s + 0x20), u32_at(s + 0x28))
    };
    let dynsym = (0..shnum).map(section).find(|s| s.0 == 11)?; // SHT_DYNSYM
    let strtab = section(dynsym.4).2;
    for k in 0..dynsym.3 / 24 {
        let s = dynsym.2 + k * 24;
        let n = strtab + u32_at(s);
        let end = n + f[n..].iter().position(|&b| b == 0)?;
        if &f[n..end] == name.as_bytes() {
            let (addr, size) = (u64_at(s + 8), u64_at(s + 16));
            let sec = (0..shnum).map(section).find(|x| x.1 <= addr && addr < x.1 + x.3 && x.0 != 8)?;
            let off = sec.2 + (addr - sec.1);
            return Some(&f[off..off + size]);
        }
    }
    None
}

#[test]
fn tvm027_executables_parse() {
    let mut seen = 0;
    for m in models("relax-0.27") {
        let exec = Executable::parse(&ffi_executable_bytes(&m.lib)).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        assert_eq!(exec.format, Format::TvmFfi, "{}", m.name);
        assert_eq!(exec.version, "0.14");
        let text = exec.as_text();
        assert!(text.contains("@main:") && text.contains("vm.builtin.alloc_storage"), "{}:\n{text}", m.name);
        if m.name == "dyn" {
            assert!(text.contains("vm.builtin.make_prim_value in: %1, i1, i0"), "{text}");
            let d: Json = serde_json::from_str(&tvm_runtime::vm::describe::describe(&exec)).unwrap();
            assert_eq!(d["format"], "tvm-ffi");
            assert_eq!(d["functions"][0]["params"][0]["shape"], serde_json::json!(["n", 16]));
            assert_eq!(d["functions"][0]["params"][0]["dtype"], "float32");
        }
        if m.name == "cnn" {
            assert!(text.contains("vm.builtin.reshape"), "{text}");
        }
        seen += 1;
    }
    assert_eq!(seen, 7, "mlp, tuple, dyn, two_funcs, one_kernel, cnn, if_cond");
}

// ---- describe, stateful API, threads ------------------------------------------------------------

fn lib018(model: &str) -> PathBuf {
    repo().join("tests/data/relax-0.18").join(model).join("lib.so")
}

#[test]
fn describe_reports_functions_and_params() {
    tvm_runtime::init();
    let exec = Module::load_from_file(lib018("two_funcs").to_str().unwrap(), "").unwrap();
    assert_eq!(exec.type_key(), "relax.Executable");
    let d = exec.get_function("describe", false).unwrap().unwrap().call(&[]).unwrap().into_string().unwrap();
    let d: Json = serde_json::from_str(&d).unwrap();
    assert_eq!(d["format"], "tvm-0.18");
    assert_eq!(d["version"], "0.14");
    assert_eq!(d["constants"], 19);
    let second = d["functions"].as_array().unwrap().iter().find(|f| f["name"] == "second").unwrap();
    assert_eq!(second["kind"], "vm_func");
    assert_eq!(second["registers"], 7);
    assert_eq!(second["instructions"], 16);
    assert_eq!(
        second["params"],
        serde_json::json!([
            {"name": "a", "dtype": "float32", "shape": [4, 8]},
            {"name": "b", "dtype": "float32", "shape": [8, 3]},
        ])
    );
    let has = exec.get_function("has_function", false).unwrap().unwrap();
    assert!(matches!(has.call(&["second".into()]).unwrap(), Value::Bool(true)));
    assert!(matches!(has.call(&["third".into()]).unwrap(), Value::Bool(false)));
}

#[test]
fn stateful_api_and_function_info() {
    let vm = load_vm(&lib018("tuple"));
    let case = &models("relax-0.18").into_iter().find(|m| m.name == "tuple").unwrap().cases[0];
    let f = |n: &str| vm.get_function(n, false).unwrap().unwrap();
    assert_eq!(f("get_function_arity").call(&["main".into()]).unwrap().as_int().unwrap(), 2);
    let p1 = f("get_function_param_name").call(&["main".into(), Value::Int(1)]).unwrap();
    assert_eq!(p1.into_string().unwrap(), "y");
    let e = f("get_output").call(&["main".into(), Value::Int(0)]).unwrap_err();
    assert!(e.message().contains("invoke_stateful"), "{e}");
    let e = f("invoke_stateful").call(&["main".into()]).unwrap_err();
    assert!(e.message().contains("set_input"), "{e}");
    let mut args = vec![Value::from("main")];
    args.extend(input_arrays(case));
    f("set_input").call(&args).unwrap();
    f("invoke_stateful").call(&["main".into()]).unwrap();
    assert_eq!(f("get_output_arity").call(&["main".into()]).unwrap().as_int().unwrap(), 2);
    let e = f("get_output").call(&["main".into()]).unwrap_err();
    assert!(e.message().contains("cannot return a tuple"), "{e}");
    let outs: Vec<NDArray> = (0..2)
        .map(|i| f("get_output").call(&["main".into(), Value::Int(i)]).unwrap().into_ndarray().unwrap())
        .collect();
    check_outputs("stateful tuple", case, &outs);
    // save_function binds the inputs: the saved name then runs with no arguments.
    let mut args = vec![Value::from("main"), Value::from("bound"), Value::Int(1)];
    args.extend(input_arrays(case));
    f("save_function").call(&args).unwrap();
    check_outputs("saved function", case, &result_arrays(f("bound").call(&[]).unwrap()));
    // invoke_closure calls a function value with the arguments that follow it.
    let mut args = vec![Value::Func(f("main"))];
    args.extend(input_arrays(case));
    check_outputs("invoke_closure", case, &result_arrays(f("invoke_closure").call(&args).unwrap()));
}

#[test]
fn blob_loader_takes_the_executable_with_or_without_its_length() {
    use tvm_runtime::runtime::base::byteio::Reader;
    let bytes = ffi_executable_bytes(&repo().join("tests/data/relax-0.27/tuple/lib.so"));
    let prefixed = [&(bytes.len() as u64).to_le_bytes()[..], &bytes].concat();
    for data in [&bytes, &prefixed] {
        let m = tvm_runtime::vm::module::load_binary(&mut Reader::new(data, "test")).unwrap();
        assert_eq!(m.type_key(), "relax.VMExecutable");
    }
    let e =
        tvm_runtime::vm::module::load_binary(&mut Reader::new(&prefixed[..prefixed.len() - 1], "test")).unwrap_err();
    assert!(e.message().contains("exceeds"), "{e}");
}

/// Run `case` on `vm` from `threads` threads, `calls` times each; every result's bytes.
fn run_threads(vm: &Module, case: &Case, threads: usize, calls: usize) -> Vec<Vec<u8>> {
    let f = vm.get_function(&case.func, false).unwrap().unwrap();
    let out = Arc::new(parking_lot::Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (f, out) = (f.clone(), out.clone());
            s.spawn(move || {
                for _ in 0..calls {
                    let r = f.call(&input_arrays(case)).unwrap();
                    let bytes = result_arrays(r).iter().flat_map(|a| a.to_vec_u8().unwrap()).collect();
                    out.lock().push(bytes);
                }
            });
        }
    });
    Arc::try_unwrap(out).ok().unwrap().into_inner()
}

#[test]
fn many_threads_on_one_vm_match_one_thread() {
    let runs = [("relax-0.18", "mlp"), ("relax-0.18", "dyn"), ("relax-0.18", "two_funcs"), ("relax-0.18", "tuple")];
    let runs = runs.into_iter().chain([("relax-0.27", "cnn"), ("relax-0.27", "dyn"), ("relax-0.27", "two_funcs")]);
    for (version, model) in runs {
        let m = models(version).into_iter().find(|m| m.name == model).unwrap();
        let vm = load_vm(&m.lib);
        for case in &m.cases {
            let one = run_threads(&vm, case, 1, 1).remove(0);
            let many = run_threads(&vm, case, 8, 25);
            assert_eq!(many.len(), 200);
            assert!(many.iter().all(|b| *b == one), "{version} {model} {}: a threaded result differs", case.name);
        }
    }
}

#[test]
fn pooled_storage_is_reused_across_calls() {
    let vm = load_vm(&lib018("mlp"));
    let case = &models("relax-0.18").into_iter().find(|m| m.name == "mlp").unwrap().cases[0];
    let f = vm.get_function("main", false).unwrap().unwrap();
    let first = result_arrays(f.call(&input_arrays(case)).unwrap()).remove(0);
    let addr = first.data_ptr();
    drop(first);
    // The output's storage went back to the pool when the caller dropped it: the next call reuses it.
    let second = result_arrays(f.call(&input_arrays(case)).unwrap()).remove(0);
    assert_eq!(second.data_ptr(), addr);
    check_outputs("reused storage", case, std::slice::from_ref(&second));
    // While the caller holds an output, a new call must not write into it.
    let third = result_arrays(f.call(&input_arrays(case)).unwrap()).remove(0);
    assert_ne!(third.data_ptr(), second.data_ptr());
    check_outputs("held output", case, &[second]);
}

/// Every case of both generations, called plainly (call sites with a shortcut run it) and under
/// an instrument that lets every call through (the VM then runs every builtin itself): the
/// outputs are bit-identical, and the static-shape models have their checks and allocations
/// decoded into shortcuts.
#[test]
fn shortcuts_change_no_result() {
    use tvm_runtime::vm::shortcut::Shortcut;
    for version in ["relax-0.18", "relax-0.25", "relax-0.27"] {
        for m in models(version) {
            let vm = load_vm(&m.lib);
            let session = VmModule::of(&vm).unwrap().session().unwrap();
            let count = |f: fn(&Shortcut) -> bool| session.shortcuts.iter().flatten().filter(|s| f(s)).count();
            let checks = count(|s| matches!(s, Shortcut::CheckTensor { .. } | Shortcut::MatchShape { .. }));
            assert!(checks > 0, "{version} {}: no argument check has a shortcut", m.name);
            if m.name == "mlp" {
                assert!(count(|s| matches!(s, Shortcut::AllocStorage { .. })) > 0, "{version} mlp: alloc_storage");
                assert!(count(|s| matches!(s, Shortcut::AllocTensor { .. })) > 0, "{version} mlp: alloc_tensor");
            }
            for c in &m.cases {
                let f = vm.get_function(&c.func, false).unwrap().unwrap();
                let bytes = |v: Value| {
                    result_arrays(v).iter().map(|a| (a.shape().to_vec(), a.to_vec_u8().unwrap())).collect::<Vec<_>>()
                };
                let plain = bytes(f.call(&input_arrays(c)).unwrap());
                let through = PackedFunc::from_typed(|_| Ok(Value::Int(0)));
                let set = vm.get_function("set_instrument", false).unwrap().unwrap();
                set.call(&[Value::Func(through)]).unwrap();
                let builtins = bytes(f.call(&input_arrays(c)).unwrap());
                set.call(&[Value::Null]).unwrap();
                assert_eq!(plain, builtins, "{version} {} {}", m.name, c.name);
                assert_eq!(plain, bytes(f.call(&input_arrays(c)).unwrap()), "{version} {} {} again", m.name, c.name);
            }
        }
    }
}

/// `vm_profiler_load_executable` gives a VM with TVM's `profile(name, *args)`: the call run once
/// with every kernel call timed, the report in TVM's JSON; a plain VM has no `profile`.
#[test]
fn profiler_vm_reports_every_kernel_call() {
    for version in ["relax-0.18", "relax-0.27"] {
        let m = models(version).into_iter().find(|m| m.name == "mlp").unwrap();
        tvm_runtime::init();
        let exec = Module::load_from_file(m.lib.to_str().unwrap(), "").unwrap();
        let load =
            |name: &str| exec.get_function(name, false).unwrap().unwrap().call(&[]).unwrap().into_module().unwrap();
        let (vm, plain) = (load("vm_profiler_load_executable"), load("vm_load_executable"));
        assert!(plain.get_function("profile", false).unwrap().is_none(), "{version}: a plain VM has no profile");
        vm.get_function("vm_initialization", false).unwrap().unwrap().call(&[1, 0, 2].map(Value::Int)).unwrap();
        let case = &m.cases[0];
        let profile = vm.get_function("profile", false).unwrap().unwrap();
        let args = [vec![Value::Str("main".into())], input_arrays(case)].concat();
        let report: Json = serde_json::from_str(&profile.call(&args).unwrap().into_string().unwrap()).unwrap();
        let calls = report["calls"].as_array().unwrap();
        let session = VmModule::of(&vm).unwrap().session().unwrap();
        let kernels: Vec<&str> = session
            .exec
            .code_of(&session.exec.functions[session.vm_function("main").unwrap()])
            .iter()
            .filter_map(|i| match *i {
                tvm_runtime::vm::bytecode::Instr::Call { func, .. } => {
                    Some(&session.exec.functions[func as usize].name)
                }
                _ => None,
            })
            .filter(|n| !n.starts_with("vm.builtin."))
            .map(|n| n.as_str())
            .collect();
        let names: Vec<&str> = calls.iter().map(|c| c["Name"].as_str().unwrap()).collect();
        assert_eq!(names, kernels, "{version}: one row per kernel call, in order");
        let mut sum = 0.0;
        for c in calls {
            let us = c["Duration (us)"]["microseconds"].as_f64().unwrap();
            assert!(us > 0.0 && c["Count"]["count"] == 1 && c["Device"] == "cpu0", "{c}");
            assert!(c["Argument Shapes"].as_str().unwrap().starts_with("float32["), "{c}");
            sum += us;
        }
        let total = report["device_metrics"]["cpu0"]["Duration (us)"]["microseconds"].as_f64().unwrap();
        assert!(total >= sum, "{version}: the whole call ({total} us) holds its kernel calls ({sum} us)");
        let e = profile.call(&[Value::Str("nope".into())]).unwrap_err();
        assert!(e.message().contains("Unknown function: nope"), "{e}");
        let main = vm.get_function("main", false).unwrap().unwrap();
        check_outputs("profiler VM main", case, &result_arrays(main.call(&input_arrays(case)).unwrap()));
    }
}

// ---- errors ---------------------------------------------------------------------------------------

#[test]
fn caller_errors_are_reported_and_the_vm_keeps_working() {
    tvm_runtime::init();
    let exec = Module::load_from_file(lib018("mlp").to_str().unwrap(), "").unwrap();
    let vm = exec.get_function("vm_load_executable", false).unwrap().unwrap().call(&[]).unwrap().into_module().unwrap();
    let main = vm.get_function("main", false).unwrap().unwrap();
    let case = &models("relax-0.18").into_iter().find(|m| m.name == "mlp").unwrap().cases[0];
    let e = main.call(&input_arrays(case)).unwrap_err();
    assert!(e.message().contains("vm_initialization"), "{e}");
    let init = vm.get_function("vm_initialization", false).unwrap().unwrap();
    let e = init.call(&[Value::Int(1), Value::Int(0)]).unwrap_err();
    assert!(e.message().contains("triples"), "{e}");
    let e = init.call(&[Value::Int(1), Value::Int(0), Value::Int(7)]).unwrap_err();
    assert!(e.message().contains("allocator type 7"), "{e}");
    let e = init.call(&[Value::Int(2), Value::Int(0), Value::Int(2)]).unwrap_err();
    assert!(e.message().contains("device type 2 (cuda) is not supported"), "{e}");
    init.call(&[1, 0, 1, 1, 0, 1].map(Value::Int)).unwrap();
    assert!(vm.get_function("no_such_function", false).unwrap().is_none());

    let arr =
        |shape: &[i64], dtype: DLDataType| Value::NDArray(NDArray::empty(shape, dtype, DLDevice::cpu(0)).unwrap());
    let f32 = DLDataType::FLOAT32;
    let e = main.call(&[arr(&[4, 32], f32), arr(&[4, 32], f32)]).unwrap_err();
    assert!(e.message().contains("expects 1 arguments (x), but 2 arguments were provided"), "{e}");
    let e = main.call(&[arr(&[4, 32], DLDataType::INT64)]).unwrap_err();
    assert!(e.message().contains("expect Tensor with dtype float32 but get int64"), "{e}");
    let e = main.call(&[arr(&[4, 32, 1], f32)]).unwrap_err();
    assert!(e.message().contains("expect Tensor with ndim 2 but get 3"), "{e}");
    let e = main.call(&[arr(&[4, 31], f32)]).unwrap_err();
    assert!(e.message().contains("shape[1] is 31 but 32 is required"), "{e}");
    assert!(e.message().contains("param=x"), "the check names the parameter: {e}");
    let e = main.call(&[Value::Int(3)]).unwrap_err();
    assert!(e.message().starts_with("TypeError:") && e.message().contains("expect a Tensor but get int"), "{e}");
    check_outputs("after errors", case, &result_arrays(main.call(&input_arrays(case)).unwrap()));
}

#[test]
fn a_failing_kernel_is_an_error_and_the_vm_keeps_working() {
    // A hand-written executable calling the tuple model's `add` kernel on tensors of the wrong
    // shape: the kernel's own check fails.
    tvm_runtime::init();
    let lib = Module::load_from_file(lib018("tuple").to_str().unwrap(), "").unwrap().imports()[0].clone();
    let mut w = Words::default();
    w.u64(tvm_runtime::vm::executable::MAGIC_V1);
    w.str("0.14");
    w.u64(2);
    w.func(1, "main", 0, 2, 2, 2, &["x", "y"]);
    w.func(0, "add", 0, 0, -2, 0, &[]);
    w.u64(0); // constants
    w.vec(&[0, 7]);
    w.vec(&[1, 1 << 54, 1, 3, 0, 0, 0, 2, 0]);
    let exec = Arc::new(Executable::parse(&w.0).unwrap());
    let m = Module::from_node(tvm_runtime::vm::ExecutableModule { exec });
    m.import(&lib).unwrap();
    let vm = tvm_runtime::vm::module::vm_module(m).unwrap();
    VmModule::of(&vm).unwrap().initialize(&[DLDevice::cpu(0)], tvm_runtime::vm::AllocatorKind::Pooled).unwrap();
    let main = vm.get_function("main", false).unwrap().unwrap();
    let t = |s: &[i64]| Value::NDArray(NDArray::empty(s, DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap());
    for _ in 0..3 {
        let e = main.call(&[t(&[2, 2]), t(&[2, 2])]).unwrap_err();
        assert!(e.message().contains("in `main` at instruction 0 (`add`)"), "{e}");
    }
    let x = NDArray::from_bytes(&[4, 8], DLDataType::FLOAT32, &common::bytes_of(&[1.5; 32])).unwrap();
    let r = main.call(&[Value::NDArray(x.clone()), Value::NDArray(x.clone())]).unwrap().into_ndarray().unwrap();
    assert_eq!(r.data_ptr(), x.data_ptr(), "main returns x");
    assert_eq!(f32s(&x.to_vec_u8().unwrap()), vec![3.0; 32], "add(x, x, x) wrote x + x into x");
}

/// Little-endian words of a hand-written executable.
#[derive(Default)]
struct Words(Vec<u8>);
impl Words {
    fn u64(&mut self, v: u64) {
        self.0.extend(v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend(s.as_bytes());
    }
    fn vec(&mut self, v: &[i64]) {
        self.u64(v.len() as u64);
        v.iter().for_each(|x| self.0.extend(x.to_le_bytes()));
    }
    #[allow(clippy::too_many_arguments)]
    fn func(&mut self, kind: i32, name: &str, start: i64, end: i64, args: i64, regs: i64, params: &[&str]) {
        self.0.extend(kind.to_le_bytes());
        self.str(name);
        for v in [start, end, args, regs] {
            self.0.extend(v.to_le_bytes());
        }
        self.u64(params.len() as u64);
        params.iter().for_each(|p| self.str(p));
    }
}

#[test]
fn c_api_errors_leave_handles_working() {
    let (_exec, vm) = c_vm(&lib018("dyn"));
    let m = models("relax-0.18").into_iter().find(|m| m.name == "dyn").unwrap();
    assert!(c_func(&vm, "missing").is_none());
    let main = c_func(&vm, "main").unwrap();
    let mut t = common::HostTensor::new(&[1, 16], &[0.0; 16]);
    // A bare DLTensor is copied in, as TVM's VM does (TVM's RPC host sends remote arrays so).
    let (ret, code) = c_call(&main, &[(TVMValue { v_handle: t.ptr() as *mut c_void }, tc::DLTENSOR_HANDLE)]).unwrap();
    assert_eq!(code, tc::NDARRAY_HANDLE);
    // SAFETY: an array handle the call returned, freed once.
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(ret.v_handle as *mut DLTensor) });
    let bad = c_array(&[2, 15], &[0; 120]);
    let e = c_call(&main, &[(TVMValue { v_handle: bad as *mut c_void }, tc::NDARRAY_HANDLE)]).unwrap_err();
    assert!(e.contains("shape[1] is 15 but 16 is required"), "{e}");
    ok(unsafe { tvm_runtime::ffi::legacy::array::TVMArrayFree(bad) });
    for c in &m.cases {
        let got = c_run_case(&vm, c).unwrap();
        assert_close("dyn after errors", &got[0].1, &f32s(&c.outputs[0].1));
    }
}

#[test]
fn malformed_executables_are_errors() {
    let good = std::fs::read(lib018("mlp")).unwrap();
    assert!(!good.is_empty());
    for (bytes, want) in [
        (vec![], "truncated while reading magic"),
        (vec![0u8; 8], "is not a Relax VM executable's"),
        ([0xD225_DE2F_4214_151Du64.to_le_bytes().as_slice(), &4u64.to_le_bytes(), b"0.15"].concat(), "version `0.15`"),
        (
            [0xD225_DE2F_4214_151Eu64.to_le_bytes().as_slice(), &4u64.to_le_bytes(), b"0.14", &u64::MAX.to_le_bytes()]
                .concat(),
            "function count",
        ),
    ] {
        let e = Executable::parse(&bytes).unwrap_err();
        assert!(e.message().contains(want), "{want}: {e}");
    }
    // A constant tag of the other generation is refused, naming it.
    let mut w = Words::default();
    w.u64(tvm_runtime::vm::executable::MAGIC_V1);
    w.str("0.14");
    w.u64(0);
    w.u64(1);
    w.0.extend(70i32.to_le_bytes());
    let e = Executable::parse(&w.0).unwrap_err();
    assert!(e.message().contains("constant tag 70 is not one a tvm-0.18 executable uses"), "{e}");
    // A call to a function index outside the table.
    let mut w = Words::default();
    w.u64(tvm_runtime::vm::executable::MAGIC_V1);
    w.str("0.14");
    w.u64(1);
    w.func(1, "main", 0, 1, 0, 1, &[]);
    w.u64(0);
    w.vec(&[0]);
    w.vec(&[1, 0, 5, 0]);
    let e = Executable::parse(&w.0).unwrap_err();
    assert!(e.message().contains("function index 5 outside the table of 1"), "{e}");
}

/// Argument words of hand-written instructions (kind in the top byte).
fn imm(v: i64) -> i64 {
    (1 << 56) | (v & ((1 << 56) - 1))
}
fn fidx(v: i64) -> i64 {
    (3 << 56) | v
}
const VOID: i64 = 1 << 54;
const VMREG: i64 = (1 << 54) + 1;

/// A hand-written executable over builtins the test models do not emit: tuples and their
/// check, `If` / `Goto` on `read_if_cond`, `make_shape` without a heap, and closures.
fn control_flow_executable() -> Vec<u8> {
    // main(x, c): t = (x, x); check_tuple_info(t, 2); if c { r = t[0] } else { r = shape(7, 3) }; ret r
    let main = [
        vec![1, 2, 1, 2, 0, 0],                                         // 0 make_tuple(%0, %0) -> %2
        vec![1, VOID, 2, 3, 2, imm(2), VOID],                           // 1 check_tuple_info(%2, 2, None)
        vec![1, 3, 3, 1, 1],                                            // 2 read_if_cond(%1) -> %3
        vec![4, 3, 3],                                                  // 3 If %3 else +3
        vec![1, 4, 4, 2, 2, imm(0)],                                    // 4 tuple_getitem(%2, 0) -> %4
        vec![3, 2],                                                     // 5 goto +2
        vec![1, 4, 5, 6, VOID, imm(2), imm(0), imm(7), imm(0), imm(3)], // 6 make_shape -> %4
        vec![2, 4],                                                     // 7 ret %4
    ];
    // outer(x, c): f = make_closure(main, c); ret invoke_closure(vm, f, x)
    let outer = [
        vec![1, 2, 6, 2, fidx(0), 1],  // make_closure(f[main], %1) -> %2
        vec![1, 3, 7, 3, VMREG, 2, 0], // invoke_closure(%vm, %2, %0) -> %3
        vec![2, 3],                    // ret %3
    ];
    let (mut offsets, mut words) = (Vec::new(), Vec::new());
    for ins in main.iter().chain(outer.iter()) {
        offsets.push(words.len() as i64);
        words.extend(ins);
    }
    let mut w = Words::default();
    w.u64(tvm_runtime::vm::executable::MAGIC_V2);
    w.str("0.14");
    w.u64(9);
    w.func(1, "main", 0, 8, 2, 5, &["x", "c"]);
    for name in [
        "make_tuple",
        "check_tuple_info",
        "read_if_cond",
        "tuple_getitem",
        "make_shape",
        "make_closure",
        "invoke_closure",
    ] {
        w.func(0, &format!("vm.builtin.{name}"), 0, 0, -2, 0, &[]);
    }
    w.func(1, "outer", 8, 11, 2, 4, &["x", "c"]);
    w.u64(0); // memory scopes
    w.u64(0); // constants
    w.vec(&offsets);
    w.vec(&words);
    w.0
}

#[test]
fn control_flow_tuples_and_closures() {
    tvm_runtime::init();
    let exec = Arc::new(Executable::parse(&control_flow_executable()).unwrap());
    assert!(exec.as_text().contains("If    %3, 3"), "{}", exec.as_text());
    let m = Module::from_node(tvm_runtime::vm::ExecutableModule { exec });
    let vm = tvm_runtime::vm::module::vm_module(m).unwrap();
    vm.get_function("vm_initialization", false).unwrap().unwrap().call(&[1, 0, 2].map(Value::Int)).unwrap();
    let x = NDArray::from_bytes(&[2], DLDataType::FLOAT32, &common::bytes_of(&[1.0, 2.0])).unwrap();
    for f in ["main", "outer"] {
        let f = vm.get_function(f, false).unwrap().unwrap();
        let taken = f.call(&[Value::NDArray(x.clone()), Value::Int(1)]).unwrap().into_ndarray().unwrap();
        assert_eq!(taken.data_ptr(), x.data_ptr(), "the true branch returns the tuple's first element");
        let shape = match f.call(&[Value::NDArray(x.clone()), Value::Int(0)]).unwrap() {
            Value::Object(o) => {
                o.downcast::<tvm_runtime::runtime::container::ShapeTupleObj>().unwrap().dims().unwrap().to_vec()
            }
            other => panic!("expected a shape, got {}", other.type_name()),
        };
        assert_eq!(shape, vec![7, 3], "the false branch makes a shape");
        // A condition that is neither an int nor an integer tensor is an error naming it.
        let e = f.call(&[Value::NDArray(x.clone()), Value::NDArray(x.clone())]).unwrap_err();
        assert!(e.message().contains("read_if_cond"), "{e}");
    }
}

/// A module of kernels written here, standing in for a library (`get_function` by name).
struct RustKernels;
impl tvm_runtime::runtime::function::packed::ModuleNode for RustKernels {
    fn type_key(&self) -> &str {
        "library"
    }
    fn get_function(
        &self,
        name: &str,
        _this: &Module,
    ) -> tvm_runtime::runtime::base::error::Result<Option<tvm_runtime::runtime::function::packed::PackedFunc>> {
        Ok((name == "add").then(|| {
            tvm_runtime::runtime::function::packed::PackedFunc::from_typed(|args| {
                let (x, y, out) = (args.ndarray(0)?, args.ndarray(1)?, args.ndarray(2)?);
                let (x, y) = (f32s(&x.to_vec_u8()?), f32s(&y.to_vec_u8()?));
                let sum: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
                out.copy_from_bytes(&common::bytes_of(&sum))?;
                Ok(Value::Null)
            })
        }))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The 0.27 `one_kernel` executable (tvm-ffi format: memory scopes, ffi constant tags, the
/// 5-argument alloc_storage) run by the interpreter with its one kernel, `add`, written here:
/// the bytecode path of the newer format, independent of loading tvm-ffi kernel libraries.
#[test]
fn tvm027_bytecode_runs_with_a_kernel_written_here() {
    tvm_runtime::init();
    let m = models("relax-0.27").into_iter().find(|m| m.name == "one_kernel").unwrap();
    let exec = Arc::new(Executable::parse(&ffi_executable_bytes(&m.lib)).unwrap());
    let exec_module = Module::from_node(tvm_runtime::vm::ExecutableModule { exec });
    exec_module.import(&Module::from_node(RustKernels)).unwrap();
    let vm = tvm_runtime::vm::module::vm_module(exec_module).unwrap();
    vm.get_function("vm_initialization", false).unwrap().unwrap().call(&[1, 0, 2].map(Value::Int)).unwrap();
    let f = vm.get_function("main", false).unwrap().unwrap();
    for c in &m.cases {
        check_outputs("0.27 one_kernel", c, &result_arrays(f.call(&input_arrays(c)).unwrap()));
    }
}

/// Every seed of the `relax_exec` fuzzer with bytes changed at pseudo-random places (single
/// bytes, whole 8-byte words set to extreme values, cuts): parsing, `as_text`, `stats` and
/// `describe` never panic (overflow checks are on in test builds), whatever they conclude.
#[test]
fn mutated_executables_never_panic() {
    let dir = repo().join("fuzz/corpus/relax_exec");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut parsed, mut total) = (0, 0);
    for e in std::fs::read_dir(dir).unwrap() {
        let seed = std::fs::read(e.unwrap().path()).unwrap();
        for _ in 0..1500 {
            let mut b = seed.clone();
            let at = next() as usize % b.len();
            match next() % 4 {
                0 => b[at] ^= 1 << (next() % 8),
                1 => b[at] = next() as u8,
                2 if at + 8 <= b.len() => {
                    let v = [u64::MAX, i64::MAX as u64, 1 << 63, 1 << 54, (1 << 54) + 1, next()][next() as usize % 6];
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
                _ => b.truncate(at),
            }
            let r = std::panic::catch_unwind(|| {
                Executable::parse(&b).map(|x| {
                    let _ = (x.as_text(), x.stats());
                    serde_json::from_str::<Json>(&tvm_runtime::vm::describe::describe(&x))
                        .expect("describe gives JSON");
                })
            });
            assert!(r.is_ok(), "a mutated executable made the parser panic");
            parsed += matches!(r, Ok(Ok(()))) as usize;
            total += 1;
        }
    }
    assert_eq!(total, 11 * 1500);
    assert!(parsed > 0 && parsed < total, "{parsed} of {total} mutants parsed");
}

/// `set_instrument` as TVM's Python `VirtualMachine` uses it: called before and after every
/// call instruction with the function's name; returning 1 before a kernel skips it. And a bare
/// `DLTensor*` argument (what TVM's RPC host sends) is copied into an array the VM owns.
#[test]
fn instrument_and_dltensor_arguments() {
    use std::sync::Mutex;
    let vm = load_vm(&lib018("mlp"));
    let case = &models("relax-0.18").into_iter().find(|m| m.name == "mlp").unwrap().cases[0];
    let f = |n: &str| vm.get_function(n, false).unwrap().unwrap();
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let log = seen.clone();
    let instrument = tvm_runtime::runtime::function::packed::PackedFunc::from_typed(move |args| {
        log.lock().unwrap().push((args.string(1)?, args.int(2)? != 0));
        Ok(Value::Int(0))
    });
    f("set_instrument").call(&[Value::Func(instrument)]).unwrap();
    check_outputs("instrumented", case, &result_arrays(f("main").call(&input_arrays(case)).unwrap()));
    let calls = seen.lock().unwrap().clone();
    assert!(!calls.is_empty() && calls.len() % 2 == 0, "{calls:?}");
    assert!(calls.iter().any(|(n, _)| n.starts_with("vm.builtin.")), "{calls:?}");
    let kernels: Vec<_> = calls.iter().filter(|(n, before)| *before && !n.starts_with("vm.builtin.")).collect();
    assert!(!kernels.is_empty(), "no kernel call seen: {calls:?}");
    f("set_instrument").call(&[Value::Null]).unwrap();
    seen.lock().unwrap().clear();
    f("main").call(&input_arrays(case)).unwrap();
    assert!(seen.lock().unwrap().is_empty(), "a cleared instrument was called");
    let e = f("set_instrument").call(&[Value::Int(3)]).unwrap_err();
    assert!(e.message().contains("expects a function or a name"), "{e}");
    // DLTensor arguments: copied, so the caller's memory can change after the call.
    let arrays = input_arrays(case);
    let raw: Vec<Value> = arrays
        .iter()
        .map(|v| match v {
            // SAFETY: the array outlives the call that takes the pointer.
            Value::NDArray(a) => Value::DLTensor(unsafe {
                tvm_runtime::runtime::dlpack::tensor_ref::RawTensor::new(a.as_dltensor_ptr())
            }),
            _ => unreachable!(),
        })
        .collect();
    check_outputs("DLTensor arguments", case, &result_arrays(f("main").call(&raw).unwrap()));
}

#[test]
fn memory_manager_clear_releases_idle_frames_while_threads_call() {
    let m = models("relax-0.27").into_iter().find(|m| m.name == "cnn").unwrap();
    let vm = load_vm(&m.lib);
    let case = &m.cases[0];
    let clear = tvm_runtime::runtime::function::registry::require("vm.builtin.memory_manager.clear").unwrap();
    let one = run_threads(&vm, case, 1, 1).remove(0);
    clear.call(&[]).unwrap();
    assert_eq!(run_threads(&vm, case, 1, 1).remove(0), one, "a call after the clear differs");
    // Clears from another thread while 4 threads call: every result as one thread's.
    let done = std::sync::atomic::AtomicBool::new(false);
    let many = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                clear.call(&[]).unwrap();
                std::thread::yield_now();
            }
        });
        let many = run_threads(&vm, case, 4, 25);
        done.store(true, std::sync::atomic::Ordering::Release);
        many
    });
    assert_eq!(many.len(), 100);
    assert!(many.iter().all(|b| *b == one), "a result during clears differs");
}
