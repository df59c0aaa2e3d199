//! Tensor globals: allocation under both generations' names (`runtime.TVMArrayAllocWithScope`,
//! TVM 0.18; `runtime.TVMTensorAllocWithScope`, the tvm-ffi releases), and the tvm-ffi releases'
//! views, copies and storage comparison (`runtime.TVMTensor*`).

use crate::abi::DLDataType;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::dlpack::dtype::data_size;
use crate::runtime::dlpack::tensor_ref::TensorRef;
use crate::runtime::function::packed::{Args, PackedFunc, Value};
use crate::runtime::tensor::ndarray::{self, NDArray};

pub(super) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("runtime.TVMArrayAllocWithScope", PackedFunc::from_typed(alloc_with_scope)),
        ("runtime.TVMTensorAllocWithScope", PackedFunc::from_typed(alloc_with_scope)),
        ("runtime.TVMTensorCreateView", PackedFunc::from_typed(create_view)),
        (
            "runtime.TVMTensorCopyFromBytes",
            PackedFunc::from_typed(|args| {
                let t = args.tensor(0)?;
                // SAFETY: the caller hands `nbytes` readable bytes at `data` (the function's
                // contract, as in TVM: a raw pointer and its length).
                let bytes = unsafe { host_bytes(&args, 1, 2)? };
                ndarray::copy_from_bytes(t, bytes).map(|()| Value::Null)
            }),
        ),
        (
            "runtime.TVMTensorCopyToBytes",
            PackedFunc::from_typed(|args| {
                let t = args.tensor(0)?;
                // SAFETY: the caller hands `nbytes` writable bytes at `data`, not overlapping the
                // tensor (the function's contract, as in TVM).
                let bytes = unsafe { host_bytes_mut(&args, 1, 2)? };
                ndarray::copy_to_bytes(t, bytes).map(|()| Value::Null)
            }),
        ),
        (
            "runtime.TVMTensorCopyFromTo",
            PackedFunc::from_typed(|args| {
                ndarray::copy_from_to(args.tensor(0)?, args.tensor(1)?).map(|()| Value::Null)
            }),
        ),
        (
            "runtime.TVMTensorIsStorageShared",
            PackedFunc::from_typed(|args| Ok(Value::Bool(storage_shared(args.tensor(0)?, args.tensor(1)?)?))),
        ),
    ]
}

/// (shape, dtype, device, scope: str or None) as `tvm.runtime.empty` calls it.
fn alloc_with_scope(args: Args<'_>) -> Result<Value> {
    let shape = args.typed::<ShapeTupleObj>(0, "a shape")?;
    let dtype = dtype_arg(&args, 1)?;
    let dev = args.device(2)?;
    if args.len() > 3 && args.code(3)? != crate::abi::type_code::NULLPTR {
        let scope = args.string(3)?;
        if !matches!(scope.as_str(), "" | "global") {
            return Err(Error::unsupported(format!("memory scope `{scope}` is not supported")));
        }
    }
    Ok(Value::NDArray(NDArray::empty(shape.dims()?, dtype, dev)?))
}

fn dtype_arg(args: &Args<'_>, i: usize) -> Result<DLDataType> {
    match args.to_value(i)? {
        Value::DataType(t) => Ok(t),
        Value::Str(s) => DLDataType::parse(&s),
        v => Err(Error::type_error(format!("argument {i}: expected a dtype, got {}", v.type_name()))),
    }
}

/// (tensor, shape, dtype, relative_byte_offset): a view of a compact tensor's memory, which must
/// hold it (a `ValueError` otherwise, as in TVM).
fn create_view(args: Args<'_>) -> Result<Value> {
    let t = args.ndarray(0)?;
    t.tensor().check_contiguous("the viewed tensor")?;
    let shape = args.typed::<ShapeTupleObj>(1, "a shape")?;
    let dtype = dtype_arg(&args, 2)?;
    let offset = if args.len() > 3 { args.int(3)? } else { 0 };
    let offset =
        usize::try_from(offset).map_err(|_| Error::value(format!("relative_byte_offset {offset} is negative")))?;
    let (need, have) = (data_size(shape.dims()?, dtype)?, t.nbytes());
    if !matches!(offset.checked_add(need), Some(end) if end <= have) {
        // TVM's words, which callers match on.
        let dims = |d: &[i64]| format!("[{}]", d.iter().map(i64::to_string).collect::<Vec<_>>().join(", "));
        return Err(Error::value(format!(
            "View with shape {} and datatype {dtype} would have a size of {need} bytes.  This would occupy bytes \
             {offset} <= i_byte < {} within the backing array.  However, the Tensor being viewed only contains \
             {have} bytes (shape = {}, dtype= {}).",
            dims(shape.dims()?),
            offset.saturating_add(need),
            dims(t.shape()),
            t.dtype()
        )));
    }
    Ok(Value::NDArray(t.create_view_of(offset, shape, dtype)?))
}

/// Whether two tensors cover the same bytes of one device (TVM's `Tensor::IsStorageShared`).
fn storage_shared(a: TensorRef<'_>, b: TensorRef<'_>) -> Result<bool> {
    let same_device = (a.device().device_type, a.device().device_id) == (b.device().device_type, b.device().device_id);
    Ok(same_device && a.data_addr() == b.data_addr() && a.byte_size()? == b.byte_size()?)
}

/// The `len` bytes at pointer argument `ptr` (NULL only when `len` is 0).
///
/// # Safety
/// The pointer must be readable for that many bytes while the slice lives.
unsafe fn host_bytes<'a>(args: &Args<'a>, ptr: usize, len: usize) -> Result<&'a [u8]> {
    let (p, n) = (args.handle(ptr)? as *const u8, byte_count(args, len)?);
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::value(format!("argument {ptr}: NULL data pointer for {n} bytes")));
    }
    // SAFETY: non-null and readable for `n` bytes (caller contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// [`host_bytes`], writable.
///
/// # Safety
/// The pointer must be writable for that many bytes, and not aliased, while the slice lives.
unsafe fn host_bytes_mut<'a>(args: &Args<'a>, ptr: usize, len: usize) -> Result<&'a mut [u8]> {
    let (p, n) = (args.handle(ptr)? as *mut u8, byte_count(args, len)?);
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::value(format!("argument {ptr}: NULL data pointer for {n} bytes")));
    }
    // SAFETY: non-null, writable and unaliased for `n` bytes (caller contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

fn byte_count(args: &Args<'_>, i: usize) -> Result<usize> {
    let n = args.int(i)?;
    usize::try_from(n).map_err(|_| Error::value(format!("argument {i}: byte count {n} is negative")))
}
