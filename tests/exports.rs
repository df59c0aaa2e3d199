//! The shared library exports exactly TVM's C ABI: every one of TVM 0.18's `TVM*` exports and
//! no Rust-mangled symbol.

mod common;
use common::library_dir;
use std::process::Command;

/// The 56 `TVM*` functions exported by TVM 0.18's libtvm_runtime.so.
const TVM_EXPORTS: &[&str] = &[
    "TVMAPISetLastError",
    "TVMAPISetLastPythonError",
    "TVMArrayAlloc",
    "TVMArrayCopyFromBytes",
    "TVMArrayCopyFromTo",
    "TVMArrayCopyToBytes",
    "TVMArrayFree",
    "TVMArrayFromDLPack",
    "TVMArrayGetTypeIndex",
    "TVMArrayToDLPack",
    "TVMBackendAllocWorkspace",
    "TVMBackendAnyListMoveFromPackedReturn",
    "TVMBackendAnyListResetItem",
    "TVMBackendAnyListSetPackedArg",
    "TVMBackendFreeWorkspace",
    "TVMBackendGetFuncFromEnv",
    "TVMBackendParallelBarrier",
    "TVMBackendParallelLaunch",
    "TVMBackendRegisterEnvCAPI",
    "TVMBackendRegisterSystemLibSymbol",
    "TVMBackendRunOnce",
    "TVMByteArrayFree",
    "TVMCFuncSetReturn",
    "TVMCbArgToReturn",
    "TVMDLManagedTensorCallDeleter",
    "TVMDeviceAllocDataSpace",
    "TVMDeviceAllocDataSpaceWithScope",
    "TVMDeviceCopyDataFromTo",
    "TVMDeviceFreeDataSpace",
    "TVMDropLastPythonError",
    "TVMFuncCall",
    "TVMFuncCreateFromCFunc",
    "TVMFuncFree",
    "TVMFuncGetGlobal",
    "TVMFuncListGlobalNames",
    "TVMFuncRegisterGlobal",
    "TVMFuncRemoveGlobal",
    "TVMGetLastBacktrace",
    "TVMGetLastError",
    "TVMGetLastPythonError",
    "TVMModFree",
    "TVMModGetFunction",
    "TVMModImport",
    "TVMModLoadFromFile",
    "TVMObjectDerivedFrom",
    "TVMObjectFree",
    "TVMObjectGetTypeIndex",
    "TVMObjectRetain",
    "TVMObjectTypeIndex2Key",
    "TVMObjectTypeKey2Index",
    "TVMSetStream",
    "TVMStreamCreate",
    "TVMStreamFree",
    "TVMStreamStreamSynchronize",
    "TVMSynchronize",
    "TVMThrowLastError",
];

fn dynamic_symbols() -> Vec<String> {
    let so = library_dir().join("libtvm_runtime.so");
    assert!(so.exists(), "{} was not built", so.display());
    let out =
        Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output().expect("`nm` (binutils) must be installed");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

#[test]
fn exports_every_tvm_symbol() {
    assert_eq!(TVM_EXPORTS.len(), 56);
    let syms = dynamic_symbols();
    let missing: Vec<_> = TVM_EXPORTS.iter().filter(|n| !syms.iter().any(|s| s == *n)).collect();
    assert!(missing.is_empty(), "missing exports: {missing:?}");
}

#[test]
fn exports_no_rust_symbols() {
    let mangled: Vec<_> = dynamic_symbols()
        .into_iter()
        .filter(|s| s.starts_with("_ZN") || s.starts_with("_R") || s.contains("rust"))
        .collect();
    assert!(mangled.is_empty(), "Rust symbols leak from the C library: {mangled:?}");
}

type ArrayAlloc = unsafe extern "C" fn(*const i64, i32, i32, i32, i32, i32, i32, *mut *mut std::ffi::c_void) -> i32;
type ArrayFree = unsafe extern "C" fn(*mut std::ffi::c_void) -> i32;
type GetGlobal = unsafe extern "C" fn(*const std::ffi::c_char, *mut *mut std::ffi::c_void) -> i32;

/// Exercise one loaded copy of the library through its own symbols.
fn use_library(lib: &libloading::Library) {
    unsafe {
        let alloc: libloading::Symbol<ArrayAlloc> = lib.get(b"TVMArrayAlloc").unwrap();
        let free: libloading::Symbol<ArrayFree> = lib.get(b"TVMArrayFree").unwrap();
        let get: libloading::Symbol<GetGlobal> = lib.get(b"TVMFuncGetGlobal").unwrap();
        let shape = [4i64, 4];
        let mut h = std::ptr::null_mut();
        assert_eq!(alloc(shape.as_ptr(), 2, 2, 32, 1, 1, 0, &mut h), 0);
        assert_eq!(free(h), 0);
        let mut f = std::ptr::null_mut();
        assert_eq!(get(c"runtime.SystemLib".as_ptr(), &mut f), 0);
        assert!(!f.is_null());
    }
}

#[test]
fn library_can_be_opened_twice_and_beside_another_copy() {
    let so = library_dir().join("libtvm_runtime.so");
    let a = unsafe { libloading::Library::new(&so) }.unwrap();
    let b = unsafe { libloading::Library::new(&so) }.unwrap();
    use_library(&a);
    use_library(&b);
    // A second, distinct copy (another image, e.g. another runtime build) beside the first.
    let dir = std::env::temp_dir().join(format!("tvm-runtime-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libtvm_runtime_copy.so");
    std::fs::copy(&so, &copy).unwrap();
    let c = unsafe {
        libloading::os::unix::Library::open(
            Some(&copy),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .unwrap();
    use_library(&libloading::Library::from(c));
    drop(b);
    use_library(&a);
    let _ = std::fs::remove_dir_all(&dir);
}
