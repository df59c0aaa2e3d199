//! Libraries written by the tvm-ffi releases (tests/data/relax-0.27 and tir-0.27, apache-tvm
//! 0.27): the module tree of `__tvm_ffi__library_bin`, `__tvm_ffi_<name>` kernels called directly
//! as packed functions (with or without a library bin, a parallel one among them), a kernel's own
//! error raised through `TVMFFIErrorSetRaisedFromCStrParts`, libraries whose kernels need context
//! pointers the runtime cannot fill, and malformed library bins.

#[path = "common/mod.rs"]
mod common;

use common::repo;
use tvm_runtime::abi::{DLDataType, DLDevice};
use tvm_runtime::runtime::function::packed::{Module, Value};
use tvm_runtime::runtime::module::tvm_ffi_library::load_library_bin;
use tvm_runtime::runtime::tensor::ndarray::NDArray;

const F32: DLDataType = DLDataType { code: 2, bits: 32, lanes: 1 };
const CPU: DLDevice = DLDevice { device_type: 1, device_id: 0 };

fn load(model: &str) -> Module {
    tvm_runtime::init();
    let path = repo().join("tests/data/relax-0.27").join(model).join("lib.so");
    Module::load_from_file(path.to_str().unwrap(), "").unwrap()
}

fn floats(path: &str) -> Vec<f32> {
    let b = std::fs::read(repo().join("tests/data/relax-0.27").join(path)).unwrap();
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn array(shape: &[i64], data: &[f32]) -> NDArray {
    let a = NDArray::empty(shape, F32, CPU).unwrap();
    let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    a.copy_from_bytes(&bytes).unwrap();
    a
}

fn values(a: &NDArray) -> Vec<f32> {
    a.to_vec_u8().unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn the_root_is_the_executable_and_imports_the_library() {
    let root = load("one_kernel");
    assert_eq!(root.type_key(), "relax.VMExecutable");
    let imports = root.imports();
    assert_eq!(imports.len(), 1);
    assert_eq!(imports[0].type_key(), "library");
}

#[test]
fn a_kernel_is_called_as_a_packed_function() {
    let lib = load("one_kernel").imports()[0].clone();
    let add = lib.get_function("add", false).unwrap().expect("the __tvm_ffi_add kernel as `add`");
    let (x, y) = (floats("one_kernel/main0_in0.bin"), floats("one_kernel/main0_in1.bin"));
    let out = NDArray::empty(&[4, 4], F32, CPU).unwrap();
    let r = add.call(&[
        Value::NDArray(array(&[4, 4], &x)),
        Value::NDArray(array(&[4, 4], &y)),
        Value::NDArray(out.clone()),
    ]);
    assert!(matches!(r, Ok(Value::Null)), "{r:?}");
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_eq!(values(&out), want);
}

#[test]
fn a_kernel_that_raises_is_an_error_with_its_message_and_the_kernel_still_works() {
    let lib = load("one_kernel").imports()[0].clone();
    let add = lib.get_function("add", false).unwrap().unwrap();
    let small = NDArray::empty(&[2, 4], F32, CPU).unwrap();
    let ok = NDArray::empty(&[4, 4], F32, CPU).unwrap();
    let err = add.call(&[Value::NDArray(small), Value::NDArray(ok.clone()), Value::NDArray(ok.clone())]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("add") && msg.contains("shape"), "the kernel's own message: {msg}");
    let err = add.call(&[Value::Int(3), Value::NDArray(ok.clone()), Value::NDArray(ok.clone())]).unwrap_err();
    assert!(!err.to_string().is_empty());
    let err = add.call(&[Value::NDArray(ok.clone())]).unwrap_err();
    assert!(err.to_string().contains("arg") || err.to_string().contains("num"), "{err}");
    add.call(&[Value::NDArray(ok.clone()), Value::NDArray(ok.clone()), Value::NDArray(ok)]).unwrap();
}

fn load_tir(file: &str) -> tvm_runtime::runtime::base::error::Result<Module> {
    tvm_runtime::init();
    let path = repo().join("tests/data/tir-0.27").join(file);
    Module::load_from_file(path.to_str().unwrap(), "")
}

/// A library of plain TIR has no library bin: the library module is the root, and its kernel
/// (a `parallel` loop, run through `__TVMBackendParallelLaunch`) is called like the others.
#[test]
fn a_plain_tir_library_runs_its_parallel_kernel() {
    const N: usize = 64;
    let lib = load_tir("parallel_matmul.so").unwrap();
    assert_eq!(lib.type_key(), "library");
    assert!(lib.imports().is_empty());
    let matmul = lib.get_function("matmul", false).unwrap().expect("the __tvm_ffi_matmul kernel");
    let a: Vec<f32> = (0..N * N).map(|i| ((i * 7 % 13) as f32 - 6.0) / 4.0).collect();
    let b: Vec<f32> = (0..N * N).map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0).collect();
    let c = NDArray::empty(&[N as i64, N as i64], F32, CPU).unwrap();
    let shape = [N as i64, N as i64];
    let args = [Value::NDArray(array(&shape, &a)), Value::NDArray(array(&shape, &b)), Value::NDArray(c.clone())];
    matmul.call(&args).unwrap();
    // Every product and partial sum is a multiple of 1/32 below 2^10: exact in f32, in any order.
    let want: Vec<f32> = (0..N * N).map(|ij| (0..N).map(|k| a[ij / N * N + k] * b[k * N + ij % N]).sum()).collect();
    assert_eq!(values(&c), want);
    let small = NDArray::empty(&[N as i64, 4], F32, CPU).unwrap();
    let err = matmul.call(&[args[0].clone(), args[1].clone(), Value::NDArray(small)]).unwrap_err();
    assert!(err.to_string().contains("C.shape[1]"), "the kernel's own message: {err}");
}

/// A kernel that calls a packed function (`T.call_packed("testing.echo", A.data)`) reaches the
/// global through the context pointers tvm-ffi codegen uses (`__TVMFFIEnvModLookupFromImports`,
/// `__TVMFFIHandleInitOnce`, `__TVMFFIFunctionCall`): the function gets the tensor's data
/// pointer, once per call, and its error comes back as the kernel's.
#[test]
fn a_kernel_calls_a_packed_function_through_the_tvm_ffi_context() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tvm_runtime::runtime::base::error::Error;
    use tvm_runtime::runtime::function::packed::PackedFunc;
    use tvm_runtime::runtime::function::registry;
    let seen = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let (s, c) = (seen.clone(), calls.clone());
    let echo = PackedFunc::from_typed(move |args| {
        c.fetch_add(1, Ordering::SeqCst);
        let p = args.handle(0)? as usize;
        if s.swap(p, Ordering::SeqCst) == usize::MAX {
            return Err(Error::value("testing.echo was told to fail"));
        }
        Ok(Value::Null)
    });
    registry::register("testing.echo", echo, true).unwrap();
    let lib = load_tir("call_packed.so").expect("a library whose kernels call packed functions loads");
    let kernel = lib.get_function("call_packed", false).unwrap().expect("the kernel");
    let a = array(&[4], &[1.0, 2.0, 3.0, 4.0]);
    for round in 1..=3 {
        kernel.call(&[Value::NDArray(a.clone())]).unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), a.data_ptr() as usize, "the tensor's data pointer");
        assert_eq!(calls.load(Ordering::SeqCst), round);
    }
    seen.store(usize::MAX, Ordering::SeqCst);
    let err = kernel.call(&[Value::NDArray(a.clone())]).unwrap_err();
    assert!(err.to_string().contains("testing.echo was told to fail"), "{err}");
    kernel.call(&[Value::NDArray(a)]).unwrap();
}

/// A library bin with the given import tree and modules (kind, optional bytes).
fn bin(indptr: &[u64], children: &[u64], modules: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
    let mut p = Vec::new();
    let vec = |p: &mut Vec<u8>, v: &[u64]| {
        p.extend((v.len() as u64).to_le_bytes());
        v.iter().for_each(|x| p.extend(x.to_le_bytes()));
    };
    vec(&mut p, indptr);
    vec(&mut p, children);
    for (kind, bytes) in modules {
        p.extend((kind.len() as u64).to_le_bytes());
        p.extend(kind.as_bytes());
        if let Some(b) = bytes {
            p.extend((b.len() as u64).to_le_bytes());
            p.extend(*b);
        }
    }
    let mut out = (p.len() as u64).to_le_bytes().to_vec();
    out.extend(p);
    out
}

#[test]
fn malformed_library_bins_are_errors_naming_what_is_wrong() {
    let lib = load("one_kernel").imports()[0].clone();
    let err = |data: &[u8]| load_library_bin(data, lib.clone()).unwrap_err().to_string();
    // the one good shape: a library alone
    let good = bin(&[0, 0], &[], &[("_lib", None)]);
    assert!(Module::ptr_eq(&load_library_bin(&good, lib.clone()).unwrap(), &lib));
    assert!(err(&good[..good.len() - 2]).contains("exceeds"), "{}", err(&good[..good.len() - 2]));
    assert!(err(&[1, 2, 3]).contains("library bin"));
    assert!(err(&bin(&[], &[], &[])).contains("empty import tree"));
    let e = err(&bin(&[0, 0], &[], &[("relax.Nonesuch", Some(b"xx"))]));
    assert!(e.contains("relax.Nonesuch"), "{e}");
    let e = err(&bin(&[0, 1], &[5], &[("_lib", None)]));
    assert!(e.contains("child index 5"), "{e}");
    let e = err(&bin(&[0, 0, 0], &[], &[("_lib", None)]));
    assert!(e.contains("2 modules cannot fit"), "{e}");
    let e = err(&bin(&[0, 0, 0], &[], &[("_lib", None), ("x", None)]));
    assert!(e.contains("kind of module 1") || e.contains("bytes of module 1"), "{e}");
    let mut huge = bin(&[0, 0], &[], &[("relax.VMExecutable", Some(b"abc"))]);
    let at = huge.len() - 3 - 8;
    huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let e = err(&huge);
    assert!(e.contains("bytes of module 0"), "{e}");
    let e = err(&bin(&[0, 0], &[], &[("relax.VMExecutable", Some(b"not an executable"))]));
    assert!(e.contains("relax.VMExecutable"), "{e}");
}
