//! Loading a ~100 MB params blob (10 float32 arrays of 10 MiB, written by our own writer):
//! file read + parse, through `tvm_runtime::runtime::tensor::params::load_params` and through the
//! global `runtime.LoadParams` called via the C API, vs just `std::fs::read` of the file.

#[path = "common/mod.rs"]
mod common;

use common::*;
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tvm_runtime::abi::{type_code as tc, DLDataType, TVMByteArray, TVMValue};
use tvm_runtime::runtime::tensor::params::{load_params, load_params_file, save_params};
use tvm_runtime::runtime::NDArray;

const N_ARRAYS: usize = 10;
const ELEMS: usize = 10 << 18; // 2.6 M float32 = 10 MiB per array

fn value_at(array: usize, i: usize) -> f32 {
    (array * 1000 + i % 1000) as f32
}

fn blob_path() -> PathBuf {
    let path = scratch("params_load").join("params_100mb.bin");
    let expected =
        16 + 8 + (0..N_ARRAYS).map(|i| 8 + format!("w{i}").len()).sum::<usize>() + 8 + N_ARRAYS * (48 + ELEMS * 4);
    if std::fs::metadata(&path).map(|m| m.len() as usize).ok() != Some(expected) {
        let arrays: Vec<(String, NDArray)> = (0..N_ARRAYS)
            .map(|a| {
                let bytes: Vec<u8> = (0..ELEMS).flat_map(|i| value_at(a, i).to_le_bytes()).collect();
                (format!("w{a}"), NDArray::from_bytes(&[ELEMS as i64], DLDataType::FLOAT32, &bytes).unwrap())
            })
            .collect();
        let blob = save_params(arrays.iter().map(|(n, a)| (n.as_str(), a.tensor()))).unwrap();
        assert_eq!(blob.len(), expected, "blob layout");
        std::fs::write(&path, blob).unwrap();
    }
    path
}

fn check(path: &Path) {
    let p = load_params(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(p.len(), N_ARRAYS);
    for (a, (name, arr)) in p.iter().enumerate() {
        assert_eq!(name, &format!("w{a}"));
        assert_eq!(arr.shape(), &[ELEMS as i64]);
        let bytes = arr.to_vec_u8().unwrap();
        for i in [0, 1, 999, 1000, ELEMS - 1] {
            let v = f32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
            assert_eq!(v, value_at(a, i), "w{a}[{i}]");
        }
    }
}

fn main() {
    let path = blob_path();
    let size = std::fs::metadata(&path).unwrap().len();
    check(&path);
    println!("params_load: blob {} ({:.1} MB, {N_ARRAYS} arrays)", path.display(), size as f64 / 1e6);

    // runtime.LoadParams through the C API, as a C or Python caller would use it.
    let name = CString::new("runtime.LoadParams").unwrap();
    let mut func = std::ptr::null_mut();
    assert_eq!(unsafe { tvm_runtime::ffi::legacy::func::TVMFuncGetGlobal(name.as_ptr(), &mut func) }, 0);
    assert!(!func.is_null(), "runtime.LoadParams is registered");

    let p1 = path.clone();
    let mut read_only = move || {
        keep(std::fs::read(&p1).unwrap());
    };
    let p2 = path.clone();
    let mut read_parse = move || {
        let bytes = std::fs::read(&p2).unwrap();
        let params = load_params(&bytes).unwrap();
        assert_eq!(params.len(), N_ARRAYS);
        keep(params);
    };
    let p3 = path.clone();
    let mut read_c_api = move || {
        let bytes = std::fs::read(&p3).unwrap();
        let arr = TVMByteArray { data: bytes.as_ptr() as *const _, size: bytes.len() };
        let mut args = [TVMValue { v_handle: &arr as *const TVMByteArray as *mut c_void }];
        let mut codes = [tc::BYTES];
        let mut ret = TVMValue::null();
        let mut code = 0;
        let rc = unsafe {
            tvm_runtime::ffi::legacy::func::TVMFuncCall(
                func,
                args.as_mut_ptr(),
                codes.as_mut_ptr(),
                1,
                &mut ret,
                &mut code,
            )
        };
        assert_eq!(rc, 0, "runtime.LoadParams failed");
        assert_eq!(code, tc::OBJECT_HANDLE);
        // The map (and its arrays) are released here, as a caller would when done.
        assert_eq!(unsafe { tvm_runtime::ffi::legacy::object::TVMObjectFree(ret.v_handle) }, 0);
    };
    // Loading the file: headers parsed as they are read, tensor data read straight into the
    // arrays (what runtime.LoadParamsFromFile does). This is the claim: loading a params file
    // costs at most 1.5x reading it into memory.
    let p4 = path.clone();
    let mut load_file = move || {
        let params = load_params_file(&p4).unwrap();
        assert_eq!(params.len(), N_ARRAYS);
        keep(params);
    };
    let r = compare_stats(
        &mut [&mut load_file, &mut read_parse, &mut read_c_api, &mut read_only],
        Duration::from_millis(50),
        10,
        2,
    );
    report("params_load (file)", "load_params_file", r[0].median / 1e6, "read", r[3].median / 1e6, "ms", Some(1.5));
    report("params_load (bytes)", "read+load_params", r[1].median / 1e6, "read", r[3].median / 1e6, "ms", None);
    report("params_load (C API)", "read+runtime.LoadParams", r[2].median / 1e6, "read", r[3].median / 1e6, "ms", None);
    report_best("params_load (file)", "load_params_file", r[0].min / 1e6, "read", r[3].min / 1e6, "ms");
    unsafe { tvm_runtime::ffi::legacy::func::TVMFuncFree(func) };
}
