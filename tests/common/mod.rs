//! Helpers for integration tests: build kernel libraries with the system C compiler and drive
//! the runtime through its C API (the exported `TVM*` functions, called as C would).
#![allow(dead_code)]

use std::ffi::{c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use tvm_runtime::abi::{type_code as tc, DLDevice, DLTensor, TVMByteArray, TVMValue};
use tvm_runtime::ffi::legacy::error::TVMGetLastError;
use tvm_runtime::ffi::legacy::func::{TVMFuncCall, TVMFuncFree, TVMFuncGetGlobal};
use tvm_runtime::ffi::legacy::module::{TVMModFree, TVMModGetFunction, TVMModLoadFromFile};

const LIBS: [&str; 2] = ["libtvm_runtime.so", "libtvm_runtime.a"];

/// The directory holding libtvm_runtime.so/.a of this build: the test binary's own directory
/// (`target/<profile>/deps/`), else `target/<profile>/` (what `cargo build` uplifted).
pub fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test binary");
    let deps = exe.parent().expect("test binary has a parent directory");
    let candidates = [deps.to_path_buf(), deps.parent().unwrap_or(deps).to_path_buf()];
    candidates.iter().find(|dir| LIBS.iter().all(|lib| dir.join(lib).is_file())).cloned().unwrap_or_else(|| {
        panic!(
            "libtvm_runtime.so/.a not found in {} or {}: cargo should have built them with \
                 the library target (crate-type cdylib + staticlib)",
            candidates[0].display(),
            candidates[1].display()
        )
    })
}

/// Every file under `dir` (its subfolders included) whose extension is `ext`.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_with_extension(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            files.push(path);
        }
    }
    files
}

/// Every `.rs` file under `dir`, its subfolders included.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    files_with_extension(dir, "rs")
}

pub fn repo() -> PathBuf {
    check_handles();
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn tvm_data(model: &str, file: &str) -> Vec<u8> {
    let p = repo().join("tests/data/tvm-0.18").join(model).join(file);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A scratch directory for this test binary.
pub fn scratch(name: &str) -> PathBuf {
    check_handles();
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("test-scratch").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// C source defining `__tvm_dev_mblob` with exactly `blob` (as export_library embeds it).
pub fn blob_c_source(blob: &[u8]) -> String {
    let mut s = String::from("__attribute__((visibility(\"default\"))) const unsigned char __tvm_dev_mblob[");
    s += &format!("{}] = {{", blob.len());
    for (i, b) in blob.iter().enumerate() {
        if i % 24 == 0 {
            s += "\n";
        }
        s += &format!("{b},");
    }
    s += "\n};\n";
    s
}

/// Compile `sources` (paths) plus an optional embedded blob into a shared library. The library
/// is written under a temporary name and renamed into place, so tests building the same library
/// at once (threads of one test binary, or several binaries) never load a half-written file.
pub fn build_so(out: &Path, sources: &[PathBuf], blob: Option<&[u8]>) -> PathBuf {
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let unique = format!("{}.{}", std::process::id(), BUILDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    let tmp = out.with_extension(format!("{unique}.tmp.so"));
    let mut cmd = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cmd.args(["-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"])
        .arg("-I")
        .arg(repo().join("include"))
        .args(sources);
    let blob_c = blob.map(|blob| {
        let c = out.with_extension(format!("{unique}.blob.c"));
        std::fs::write(&c, blob_c_source(blob)).unwrap();
        c
    });
    cmd.args(&blob_c);
    cmd.arg("-o").arg(&tmp);
    let status = cmd.status().expect("a C compiler (cc) must be installed");
    if let Some(c) = blob_c {
        let _ = std::fs::remove_file(c);
    }
    assert!(status.success(), "compiling {} failed", out.display());
    std::fs::rename(&tmp, out).unwrap();
    out.to_path_buf()
}

pub fn kernels_c() -> PathBuf {
    repo().join("tests/fixtures/kernels.c")
}

/// Turn on the checked-handle mode (`TVM_RUNTIME_CHECK_HANDLES`) for this test process, as the
/// C test programs run: every object handle passed in is validated. Takes effect if nothing made
/// an object yet; the helpers here (`repo`, `scratch`, loading, calling) call it first, so a
/// test that starts with them runs checked.
/// Returns whether the mode is on.
pub fn check_handles() -> bool {
    tvm_runtime::runtime::object::live::request_checking(true)
}

pub fn last_error() -> String {
    // SAFETY: the runtime returns NULL or a valid C string.
    let p = TVMGetLastError();
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Panics with the runtime's message on a non-zero status.
pub fn ok(rc: i32) {
    assert_eq!(rc, 0, "call failed: {}", last_error());
}

/// Owned handles freed on drop.
#[derive(Debug)]
pub struct Mod(pub *mut c_void);
impl Drop for Mod {
    fn drop(&mut self) {
        unsafe { ok(TVMModFree(self.0)) };
    }
}
#[derive(Debug)]
pub struct Func(pub *mut c_void);
impl Drop for Func {
    fn drop(&mut self) {
        unsafe { ok(TVMFuncFree(self.0)) };
    }
}

pub fn load_module(path: &Path) -> Result<Mod, String> {
    check_handles();
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let mut m = std::ptr::null_mut();
    let rc = unsafe { TVMModLoadFromFile(p.as_ptr(), c"".as_ptr(), &mut m) };
    if rc == 0 {
        Ok(Mod(m))
    } else {
        Err(last_error())
    }
}

pub fn get_function(m: &Mod, name: &str) -> Option<Func> {
    let n = CString::new(name).unwrap();
    let mut f = std::ptr::null_mut();
    unsafe { ok(TVMModGetFunction(m.0, n.as_ptr(), 1, &mut f)) };
    (!f.is_null()).then(|| Func(f))
}

pub fn global(name: &str) -> Func {
    check_handles();
    let n = CString::new(name).unwrap();
    let mut f = std::ptr::null_mut();
    unsafe { ok(TVMFuncGetGlobal(n.as_ptr(), &mut f)) };
    assert!(!f.is_null(), "global {name} missing");
    Func(f)
}

/// An argument for [`call`].
pub enum Arg<'a> {
    Int(i64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Device(DLDevice),
    Tensor(*mut DLTensor),
    Module(&'a Mod),
    Object(*mut c_void),
}

/// Call through `TVMFuncCall`; returns (value, type code) or the error message.
pub fn call(f: &Func, args: &[Arg<'_>]) -> Result<(TVMValue, i32), String> {
    check_handles();
    let mut strings = Vec::new();
    let mut arrays = Vec::new();
    let mut vals = Vec::new();
    let mut codes = Vec::new();
    for a in args {
        let (v, c) = match a {
            Arg::Int(i) => (TVMValue { v_int64: *i }, tc::INT),
            Arg::Str(s) => {
                strings.push(CString::new(*s).unwrap());
                (TVMValue { v_str: strings.last().unwrap().as_ptr() }, tc::STR)
            }
            Arg::Bytes(b) => {
                arrays.push(Box::new(TVMByteArray { data: b.as_ptr() as *const _, size: b.len() }));
                (TVMValue { v_handle: &**arrays.last().unwrap() as *const TVMByteArray as *mut c_void }, tc::BYTES)
            }
            Arg::Device(d) => (TVMValue { v_device: *d }, tc::DEVICE),
            Arg::Tensor(t) => (TVMValue { v_handle: *t as *mut c_void }, tc::DLTENSOR_HANDLE),
            Arg::Module(m) => (TVMValue { v_handle: m.0 }, tc::MODULE_HANDLE),
            Arg::Object(o) => (TVMValue { v_handle: *o }, tc::OBJECT_HANDLE),
        };
        vals.push(v);
        codes.push(c);
    }
    let mut ret = TVMValue::null();
    let mut code = 0;
    let rc = unsafe { TVMFuncCall(f.0, vals.as_mut_ptr(), codes.as_mut_ptr(), vals.len() as i32, &mut ret, &mut code) };
    if rc == 0 {
        Ok((ret, code))
    } else {
        Err(last_error())
    }
}

/// A host tensor over a Vec (kept 64-byte aligned by over-allocating).
pub struct HostTensor {
    buf: Vec<u8>,
    offset: usize,
    pub shape: Vec<i64>,
    pub t: DLTensor,
}

impl HostTensor {
    pub fn new(shape: &[i64], data: &[f32]) -> Box<HostTensor> {
        let n: i64 = shape.iter().product();
        assert_eq!(n as usize, data.len());
        let mut h = Box::new(HostTensor {
            buf: vec![0u8; data.len() * 4 + 64],
            offset: 0,
            shape: shape.to_vec(),
            t: DLTensor {
                data: std::ptr::null_mut(),
                device: DLDevice::cpu(0),
                ndim: shape.len() as i32,
                dtype: tvm_runtime::abi::DLDataType::FLOAT32,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        });
        let base = h.buf.as_ptr() as usize;
        h.offset = (64 - base % 64) % 64;
        let off = h.offset;
        h.buf[off..off + data.len() * 4].copy_from_slice(&bytes_of(data));
        h.t.data = unsafe { h.buf.as_mut_ptr().add(off) } as *mut c_void;
        h.t.shape = h.shape.as_mut_ptr();
        h
    }
    /// Overwrite the data (same element count).
    pub fn set_values(&mut self, data: &[f32]) {
        let n: i64 = self.shape.iter().product();
        assert_eq!(n as usize, data.len());
        let off = self.offset;
        self.buf[off..off + data.len() * 4].copy_from_slice(&bytes_of(data));
    }
    pub fn values(&self) -> Vec<f32> {
        let n: i64 = self.shape.iter().product();
        f32s(&self.buf[self.offset..self.offset + n as usize * 4])
    }
    pub fn ptr(&mut self) -> *mut DLTensor {
        &mut self.t
    }
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w}");
    }
}

/// TVM's seed-004 model (two independent adds, then a multiply) linked with the fixture kernels,
/// built once into this test binary's scratch directory `dir`.
pub fn seed004_so(dir: &str) -> PathBuf {
    static SO: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SO.get_or_init(|| {
        build_so(&scratch(dir).join("seed004.so"), &[kernels_c()], Some(&tvm_data("seed004", "mblob.bin")))
    })
    .clone()
}

/// Run seed 004 through executor `g` on TVM's recorded inputs; its output.
pub fn run_seed004(g: *mut tvm_runtime::ffi::graph_executor::TVMGraphExecutor) -> Vec<f32> {
    use tvm_runtime::ffi::graph_executor::{TVMGraphExecutorGetOutput, TVMGraphExecutorRun, TVMGraphExecutorSetInput};
    let mut keep = Vec::new();
    for name in ["x1", "y1", "x2", "y2"] {
        let data = f32s(&tvm_data("seed004", &format!("input_{name}.bin")));
        let mut t = HostTensor::new(&[10, 2], &data);
        let cname = CString::new(name).unwrap();
        // SAFETY: live executor, C string, valid tensor.
        ok(unsafe { TVMGraphExecutorSetInput(g, cname.as_ptr(), t.ptr()) });
        keep.push(t);
    }
    let mut out = HostTensor::new(&[10, 2], &[0.0; 20]);
    // SAFETY: live executor and a valid output tensor.
    ok(unsafe { TVMGraphExecutorRun(g) });
    ok(unsafe { TVMGraphExecutorGetOutput(g, 0, out.ptr()) });
    out.values()
}
