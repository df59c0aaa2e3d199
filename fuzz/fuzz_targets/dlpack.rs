//! DLPack import through tvm-ffi's C API (`TVMFFITensorFromDLPack`, `...Versioned`) of managed
//! tensors whose version, flags, rank, shape, strides, dtype, device, byte offset and alignment
//! request come from the input, over a buffer of this target's (the import must not read it).
//!
//! Properties checked: no panic or crash; a refused tensor stays the caller's (its deleter not
//! run); an accepted one reports the shape it was given, exports back to DLPack (whose deleter
//! runs), and runs the caller's deleter exactly once when released.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use tvm_runtime::abi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor};
use tvm_runtime::ffi::tvm_ffi::c_api::TVMFFIObjectDecRef;
use tvm_runtime::ffi::tvm_ffi::tensor::{
    TVMFFITensorFromDLPack, TVMFFITensorFromDLPackVersioned, TVMFFITensorToDLPackVersioned,
};

static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn delete_versioned(_: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn delete_legacy(_: *mut DLManagedTensor) {
    DELETED.fetch_add(1, Ordering::SeqCst);
}

/// Reads the input front to back; zeros past its end.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
}

/// The memory tensors point into: aligned, and never read by an import.
#[repr(align(256))]
struct Buffer(#[allow(dead_code)] [u8; 4096]);
static mut BUFFER: Buffer = Buffer([0; 4096]);

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let mut b = Bytes(data);
    let mode = b.u8();
    let ndim = (b.u8() as i8) as i32 % 10;
    let rank = ndim.clamp(0, 9) as usize;
    let mut shape: Vec<i64> = (0..rank).map(|_| b.i64() % 1_000_000_007).collect();
    let mut strides: Vec<i64> = (0..rank).map(|_| b.i64() % 4096).collect();
    let dtype = DLDataType { code: b.u8() % 8, bits: b.u8(), lanes: u16::from_le_bytes(b.take()) };
    let device = DLDevice { device_type: (b.u8() % 20) as i32, device_id: (b.u8() % 4) as i32 };
    let byte_offset = (b.u8() as u64) * (b.u8() as u64);
    let align = [0, 1, 64, 256, -1][b.u8() as usize % 5];
    let contiguous = (mode >> 1) & 1;
    // Only its address is taken; nothing here reads or writes it.
    let base = std::ptr::addr_of_mut!(BUFFER) as *mut u8;
    let data_ptr = match mode >> 2 & 3 {
        0 => std::ptr::null_mut(),
        k => base.wrapping_add(k as usize * 8) as *mut c_void,
    };
    let dl = DLTensor {
        data: data_ptr,
        device,
        ndim,
        dtype,
        shape: if mode & 16 != 0 && rank > 0 { std::ptr::null_mut() } else { shape.as_mut_ptr() },
        strides: if mode & 32 != 0 { std::ptr::null_mut() } else { strides.as_mut_ptr() },
        byte_offset,
    };
    DELETED.store(0, Ordering::SeqCst);
    let mut out: *mut c_void = std::ptr::null_mut();
    // SAFETY: the managed tensors live on this frame until the tensor made of them is released
    // below (or the import failed); their pointers are valid for `rank` values.
    let rc = unsafe {
        if mode & 1 == 0 {
            let mut m = DLManagedTensorVersioned {
                version: DLPackVersion { major: b.u8() as u32 % 3, minor: b.u8() as u32 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags: b.u8() as u64,
                dl_tensor: dl,
            };
            let rc = TVMFFITensorFromDLPackVersioned(&mut m, align, contiguous as i32, &mut out);
            finish(rc, out, &shape);
            rc
        } else {
            let mut m = DLManagedTensor { dl_tensor: dl, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_legacy) };
            let rc = TVMFFITensorFromDLPack(&mut m, align, contiguous as i32, &mut out);
            finish(rc, out, &shape);
            rc
        }
    };
    let deleted = DELETED.load(Ordering::SeqCst);
    assert_eq!(deleted, (rc == 0) as usize, "the caller's deleter ran {deleted} times (import returned {rc})");
});

/// After an import: an accepted tensor reports its shape, exports, and is released.
///
/// # Safety
/// `out` is the tensor the import made when `rc` is 0.
unsafe fn finish(rc: i32, out: *mut c_void, shape: &[i64]) {
    if rc != 0 {
        assert_eq!(DELETED.load(Ordering::SeqCst), 0, "a refused tensor's deleter ran");
        return;
    }
    // The DLTensor of a tvm-ffi tensor follows its 24-byte header.
    let dl = unsafe { &*((out as *const u8).add(24) as *const DLTensor) };
    let got = unsafe { std::slice::from_raw_parts(dl.shape, dl.ndim as usize) };
    assert_eq!(got, shape, "the tensor's shape is not the one imported");
    let mut back: *mut DLManagedTensorVersioned = std::ptr::null_mut();
    if unsafe { TVMFFITensorToDLPackVersioned(out, &mut back) } == 0 {
        if let Some(d) = unsafe { (*back).deleter } {
            unsafe { d(back) };
        }
    }
    assert_eq!(unsafe { TVMFFIObjectDecRef(out) }, 0);
}
