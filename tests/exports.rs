//! The shared library exports exactly TVM's C ABI: every one of TVM 0.18's `TVM*` exports and
//! no Rust-mangled symbol.

mod common;
use common::library_dir;
use std::process::Command;

/// The 56 `TVM*` functions exported by TVM 0.18's libtvm_runtime.so.
const TVM_EXPORTS: &[&str] = &[
    "TVMAPISetLastError", "TVMAPISetLastPythonError", "TVMArrayAlloc", "TVMArrayCopyFromBytes",
    "TVMArrayCopyFromTo", "TVMArrayCopyToBytes", "TVMArrayFree", "TVMArrayFromDLPack",
    "TVMArrayGetTypeIndex", "TVMArrayToDLPack", "TVMBackendAllocWorkspace",
    "TVMBackendAnyListMoveFromPackedReturn", "TVMBackendAnyListResetItem",
    "TVMBackendAnyListSetPackedArg", "TVMBackendFreeWorkspace", "TVMBackendGetFuncFromEnv",
    "TVMBackendParallelBarrier", "TVMBackendParallelLaunch", "TVMBackendRegisterEnvCAPI",
    "TVMBackendRegisterSystemLibSymbol", "TVMBackendRunOnce", "TVMByteArrayFree",
    "TVMCFuncSetReturn", "TVMCbArgToReturn", "TVMDLManagedTensorCallDeleter",
    "TVMDeviceAllocDataSpace", "TVMDeviceAllocDataSpaceWithScope", "TVMDeviceCopyDataFromTo",
    "TVMDeviceFreeDataSpace", "TVMDropLastPythonError", "TVMFuncCall", "TVMFuncCreateFromCFunc",
    "TVMFuncFree", "TVMFuncGetGlobal", "TVMFuncListGlobalNames", "TVMFuncRegisterGlobal",
    "TVMFuncRemoveGlobal", "TVMGetLastBacktrace", "TVMGetLastError", "TVMGetLastPythonError",
    "TVMModFree", "TVMModGetFunction", "TVMModImport", "TVMModLoadFromFile", "TVMObjectDerivedFrom",
    "TVMObjectFree", "TVMObjectGetTypeIndex", "TVMObjectRetain", "TVMObjectTypeIndex2Key",
    "TVMObjectTypeKey2Index", "TVMSetStream", "TVMStreamCreate", "TVMStreamFree",
    "TVMStreamStreamSynchronize", "TVMSynchronize", "TVMThrowLastError",
];

fn dynamic_symbols() -> Vec<String> {
    let so = library_dir().join("libtvm_runtime.so");
    assert!(so.exists(), "{} was not built", so.display());
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("`nm` (binutils) must be installed");
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
