//! TVM's binary formats for tensors and parameter dictionaries (byte for byte).
//!
//! NDArray record: magic `0xDD5E40F096B4A13F`, reserved u64, device (i32 type = CPU, i32 id),
//! i32 ndim, dtype (u8 code, u8 bits, u16 lanes), `i64 shape[ndim]`, i64 data_byte_size, data.
//! Params blob: magic `0xF7E58D4F05049CB7`, reserved u64, `vec<str>` names, u64 n, n records.

use crate::abi::{device_type, DLDataType};
use crate::runtime::base::byteio::{FileInput, Input, Reader, Writer};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::device_api;
use crate::runtime::dlpack::dtype::num_elements;
use crate::runtime::dlpack::tensor_ref::{host_view_of, TensorRef};
use crate::runtime::tensor::ndarray::NDArray;

pub const NDARRAY_MAGIC: u64 = 0xDD5E_40F0_96B4_A13F;
pub const NDARRAY_LIST_MAGIC: u64 = 0xF7E5_8D4F_0504_9CB7;

/// Smallest possible NDArray record (ndim 0, no data): bounds counts read from a stream.
pub const MIN_RECORD_BYTES: usize = 40;

/// Largest ndim accepted in a record (TVM has no limit; this keeps hostile input cheap).
const MAX_NDIM: i32 = 64;

/// Read one NDArray record into a new CPU array.
pub fn read_ndarray(r: &mut impl Input) -> Result<NDArray> {
    let at = r.position();
    let magic = r.u64("NDArray magic")?;
    if magic != NDARRAY_MAGIC {
        return Err(r.error_at(at, format!("bad NDArray magic {magic:#018x} (expected {NDARRAY_MAGIC:#018x})")));
    }
    r.u64("NDArray reserved field")?;
    let dev_at = r.position();
    let dev_type = r.i32("device type")?;
    let _dev_id = r.i32("device id")?;
    if dev_type != device_type::CPU {
        return Err(
            r.error_at(dev_at, format!("NDArray record is on device type {dev_type}; only CPU (1) records are valid"))
        );
    }
    let ndim_at = r.position();
    let ndim = r.i32("ndim")?;
    if !(0..=MAX_NDIM).contains(&ndim) {
        return Err(r.error_at(ndim_at, format!("ndim {ndim} is out of range 0..={MAX_NDIM}")));
    }
    let dtype_at = r.position();
    let dtype = DLDataType::new(r.u8("dtype code")?, r.u8("dtype bits")?, r.u16("dtype lanes")?);
    dtype.validate_for_alloc().map_err(|e| r.error_at(dtype_at, e.detail()))?;
    if dtype.lanes != 1 {
        return Err(r.error_at(
            dtype_at,
            format!("dtype {dtype} has {} lanes; records of vector dtypes are not supported", dtype.lanes),
        ));
    }
    let mut shape = Vec::with_capacity(ndim as usize);
    for i in 0..ndim {
        let d_at = r.position();
        let d = r.i64("shape")?;
        if d < 0 {
            return Err(r.error_at(d_at, format!("shape[{i}] is negative ({d})")));
        }
        shape.push(d);
    }
    let elems = num_elements(&shape).map_err(|e| r.error(e.detail()))?;
    let expected = (elems as u128) * (dtype.bits as u128).div_ceil(8);
    let size_at = r.position();
    let size = r.i64("data byte size")?;
    if size < 0 || size as u128 != expected {
        return Err(r.error_at(
            size_at,
            format!("data byte size {size} does not match shape {shape:?} and dtype {dtype} ({expected} bytes)"),
        ));
    }
    // Bound the allocation by the input before making it.
    if size as u64 > r.remaining() as u64 {
        return Err(r.truncated(size as usize, "tensor data"));
    }
    let arr = NDArray::empty(&shape, dtype, crate::abi::DLDevice::cpu(0))?;
    if size > 0 {
        // SAFETY: a fresh CPU array of exactly `size` bytes that nothing else references yet.
        let dst = unsafe { std::slice::from_raw_parts_mut(arr.data_ptr() as *mut u8, size as usize) };
        r.fill(dst, "tensor data")?;
    }
    Ok(arr)
}

/// Append one NDArray record (the tensor must be compact; it is copied to the host if needed).
pub fn write_ndarray(w: &mut Writer, t: TensorRef<'_>) -> Result<()> {
    let dtype = t.dtype();
    if dtype.lanes != 1 {
        return Err(Error::value(format!("cannot save dtype {dtype} with {} lanes", dtype.lanes)));
    }
    let shape = t.shape()?;
    let nbytes = t.byte_size()?;
    w.u64(NDARRAY_MAGIC);
    w.u64(0);
    w.i32(device_type::CPU);
    w.i32(0);
    w.i32(shape.len() as i32);
    w.u8(dtype.code);
    w.u8(dtype.bits);
    w.u16(dtype.lanes);
    for &d in shape {
        w.i64(d);
    }
    w.i64(nbytes as i64);
    let start = w.buf.len();
    w.buf.resize(start + nbytes, 0);
    let host = host_view_of(t, w.buf[start..].as_mut_ptr() as *mut std::ffi::c_void);
    let api = device_api(t.device().device_type)?;
    // SAFETY: `host` is the `nbytes` just reserved in the buffer, with `t`'s shape; on the NULL
    // stream the copy is done on return.
    unsafe { api.copy_data_from_to(t, TensorRef::new(&host), std::ptr::null_mut())? };
    api.stream_sync(t.device(), std::ptr::null_mut())
}

/// Parse a params blob into (name, array) pairs in file order.
pub fn load_params(data: &[u8]) -> Result<Vec<(String, NDArray)>> {
    load_params_from(&mut Reader::new(data, "params"))
}

/// Read a params file, each tensor's data straight from the file into its array.
pub fn load_params_file(path: &std::path::Path) -> Result<Vec<(String, NDArray)>> {
    load_params_from(&mut FileInput::open(path, "params")?)
}

/// Parse a params blob from any input.
pub fn load_params_from(r: &mut impl Input) -> Result<Vec<(String, NDArray)>> {
    let magic = r.u64("params magic")?;
    if magic != NDARRAY_LIST_MAGIC {
        return Err(r.error_at(0, format!("bad params magic {magic:#018x} (expected {NDARRAY_LIST_MAGIC:#018x})")));
    }
    r.u64("params reserved field")?;
    let names = r.strings("param names")?;
    let n = r.count("param count", MIN_RECORD_BYTES)?;
    read_named_records(r, names, n, "param")
}

/// `n` NDArray records named by `names` (whose count must be `n`); `what` names them in errors.
pub fn read_named_records(
    r: &mut impl Input,
    names: Vec<String>,
    n: usize,
    what: &str,
) -> Result<Vec<(String, NDArray)>> {
    if n != names.len() {
        return Err(r.error(format!("{what} count {n} differs from the {} names", names.len())));
    }
    let mut out = Vec::with_capacity(n);
    for name in names {
        let arr = read_ndarray(r).map_err(|e| e.context(format!("{what} `{name}`")))?;
        out.push((name, arr));
    }
    Ok(out)
}

/// Serialize (name, tensor) pairs as a params blob.
pub fn save_params<'a>(params: impl IntoIterator<Item = (&'a str, TensorRef<'a>)>) -> Result<Vec<u8>> {
    let params: Vec<_> = params.into_iter().collect();
    let mut w = Writer::new();
    w.u64(NDARRAY_LIST_MAGIC);
    w.u64(0);
    let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
    w.strings(&names);
    w.u64(params.len() as u64);
    for (name, t) in &params {
        write_ndarray(&mut w, *t).map_err(|e| e.context(format!("param `{name}`")))?;
    }
    Ok(w.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let a = NDArray::from_bytes(&[2], DLDataType::FLOAT32, &[0, 0, 128, 63, 0, 0, 0, 64]).unwrap();
        let b = NDArray::from_bytes(&[], DLDataType::new(0, 8, 1), &[7]).unwrap();
        save_params([("a", a.tensor()), ("b", b.tensor())]).unwrap()
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        let p = load_params(&bytes).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].0, "a");
        assert_eq!(p[0].1.shape(), &[2]);
        assert_eq!(p[0].1.to_vec_u8().unwrap(), vec![0, 0, 128, 63, 0, 0, 0, 64]);
        assert_eq!(p[1].1.to_vec_u8().unwrap(), vec![7]);
        let again = save_params(p.iter().map(|(n, a)| (n.as_str(), a.tensor()))).unwrap();
        assert_eq!(again, bytes);
    }

    #[test]
    fn file_loader_matches_the_in_memory_one() {
        let bytes = sample();
        let path = std::env::temp_dir().join(format!("tvm-params-{}.bin", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let a = load_params(&bytes).unwrap();
        let b = load_params_file(&path).unwrap();
        assert_eq!(a.len(), b.len());
        for ((na, xa), (nb, xb)) in a.iter().zip(&b) {
            assert_eq!(na, nb);
            assert_eq!(xa.to_vec_u8().unwrap(), xb.to_vec_u8().unwrap());
        }
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(load_params_file(&path).unwrap_err().message().contains("truncated while reading tensor data"));
        let _ = std::fs::remove_file(&path);
        assert!(load_params_file(std::path::Path::new("/nonexistent/p.bin"))
            .unwrap_err()
            .message()
            .contains("cannot open"));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample();
        for cut in 0..bytes.len() {
            let e = load_params(&bytes[..cut]).unwrap_err();
            assert!(e.message().starts_with("ValueError:"), "{e}");
        }
    }

    #[test]
    fn corrupt_fields_are_named() {
        let good = sample();
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert!(load_params(&bad).unwrap_err().message().contains("bad params magic"));
        // names: offset 16 count, then "a" (8+1), "b" (8+1); then u64 n at 16+8+9+9 = 42.
        let mut bad = good.clone();
        bad[42] = 3;
        assert!(load_params(&bad).unwrap_err().message().contains("param count"));
        let rec = 50; // first record
        let mut bad = good.clone();
        bad[rec + 16] = 2; // device type
        assert!(load_params(&bad).unwrap_err().message().contains("device type 2"));
        let mut bad = good.clone();
        bad[rec + 24] = 100; // ndim
        assert!(load_params(&bad).unwrap_err().message().contains("ndim 100"));
        let mut bad = good.clone();
        bad[rec + 29] = 12; // bits
        assert!(load_params(&bad).unwrap_err().message().contains("float12"));
        let mut bad = good;
        bad[rec + 40] = 9; // data byte size
        assert!(load_params(&bad).unwrap_err().message().contains("data byte size 9"));
    }
}
