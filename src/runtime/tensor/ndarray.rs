//! NDArray: a refcounted container whose `DLTensor` sits right after the object header: at offset
//! 24 of the tvm-ffi handle (an `ffi.Tensor`), 16 of the TVM 0.18 handle.
//!
//! `TVMArrayHandle` is the address of that `DLTensor`; the tvm-ffi header is 24 bytes before it.

use crate::abi::{DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::runtime::base::cptr;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::ShapeTupleObj;
use crate::runtime::device::{device_api, ALLOC_ALIGNMENT};
use crate::runtime::dlpack::dtype::data_size;
use crate::runtime::dlpack::tensor_ref::{host_view_of, TensorRef};
use crate::runtime::object::live;
use crate::runtime::object::{
    header::{LegacyPtr, ObjPtr, ObjectHeader, ObjectRef, ObjectType, MADE_HERE},
    type_table::type_index,
};
use std::ffi::c_void;
use std::mem::ManuallyDrop;

/// Offset from the object header to the `DLTensor` (the handle).
pub const DLTENSOR_OFFSET: usize = 24;

/// Who owns the memory behind `dl_tensor.data`.
enum DataOwner {
    /// Allocated through the device API of `device`; freed the same way.
    Device(DLDevice),
    /// A view sharing the data of another NDArray.
    Parent(#[allow(dead_code)] NDArray),
    /// Imported through DLPack: the producer's deleter runs on drop.
    DLPack(*mut DLManagedTensor),
    /// Imported through DLPack 1.x (versioned): the producer's deleter runs on drop.
    DLPackVersioned(*mut DLManagedTensorVersioned),
    /// Memory owned by someone else who keeps it alive (e.g. a zero-copy input).
    External,
    /// A tensor object made by foreign tvm-ffi code, whose memory this array views.
    Object(#[allow(dead_code)] ObjectRef),
}

/// Payload of an NDArray object. The first three fields mirror TVM's container layout.
#[repr(C)]
pub struct NDArrayData {
    /// Offset 24 from the header (16 from the 0.18 handle): the array handle points here.
    pub dl_tensor: DLTensor,
    /// Offset 64 of the 0.18 handle: the memory owner (parent container, DLPack tensor, or NULL).
    manager_ctx: *mut c_void,
    /// Offset 72 of the 0.18 handle: TVM's `shape_`, the ShapeTuple object that owns the array `dl_tensor.shape`
    /// points to (C++ code compiled against TVM's headers reads it in `NDArray::Shape()`). The
    /// strides are owned through `dl_tensor.strides` (a boxed slice of `ndim` values, turned into
    /// a raw pointer so it stays valid wherever the struct moves).
    shape_tuple: ManuallyDrop<LegacyPtr<ShapeTupleObj>>,
    /// Whether the shape tuple lives in the array's own block (made with it, released by the
    /// object's deleter after the payload: [`ObjPtr::new_with_companion`]); else a shared one,
    /// released with the payload.
    shape_in_block: bool,
    owner: DataOwner,
    /// Whether `dl_tensor.strides` is ours to free (else NULL, or the producer's array, alive
    /// as long as `owner` holds the producer's tensor).
    owns_strides: bool,
}

/// Where an array's strides come from.
enum Strides {
    /// None given: compact row-major (`strides` NULL).
    Compact,
    /// A copy the array owns.
    Owned(Box<[i64]>),
    /// The producer's own array, alive as long as the array's owner keeps the producer's tensor
    /// (a DLPack tensor until its deleter runs, a foreign tensor object): no copy.
    Borrowed(*mut i64),
}

// SAFETY: the raw pointers refer to memory owned by this container (or by the DLPack producer,
// whose deleter the DLPack contract lets any thread call); access follows NDArray's rules
// (shared reads, writes by the user who coordinates them), as in TVM.
unsafe impl Send for NDArrayData {}
// SAFETY: as above.
unsafe impl Sync for NDArrayData {}

impl ObjectType for NDArrayData {
    const TYPE_INDEX: u32 = type_index::NDARRAY;
}

/// Free a slice made by `Box::into_raw` in `build`.
///
/// # Safety
/// `p` must come from `Box::<[i64]>::into_raw` with `len` elements, and not be freed yet.
unsafe fn free_dims(p: *mut i64, len: usize) {
    // SAFETY: by this function's contract `p`/`len` are exactly a boxed slice not yet freed.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) });
}

/// A dimension array as the raw pointer the `DLTensor` keeps: the boxed slice leaked, or for a
/// 0-d tensor the valid shared address of [`cptr::dims_ptr`] (an empty box's pointer dangles,
/// and C code must never see one).
fn into_dims(dims: Box<[i64]>) -> *mut i64 {
    if dims.is_empty() {
        cptr::dims_ptr(&[])
    } else {
        Box::into_raw(dims) as *mut i64
    }
}

impl Drop for NDArrayData {
    #[inline]
    fn drop(&mut self) {
        if !self.shape_in_block {
            // SAFETY: a shared shape tuple's reference, ours, given up once (here).
            unsafe { ManuallyDrop::drop(&mut self.shape_tuple) };
        }
        let n = self.dl_tensor.ndim as usize;
        if self.owns_strides && n > 0 && !self.dl_tensor.strides.is_null() {
            // SAFETY: `build` made the strides with `ndim` elements (`into_dims`); they are
            // freed once, here. With no dims they are the shared address of `cptr`, never freed.
            unsafe { free_dims(self.dl_tensor.strides, n) };
        }
        match self.owner {
            DataOwner::Device(dev) => {
                if let Ok(api) = device_api(dev.device_type) {
                    // SAFETY: the data was allocated by this API for this array and is freed once.
                    let _ = unsafe { api.free_data_space(dev, self.dl_tensor.data) };
                }
            }
            DataOwner::Parent(_) | DataOwner::External | DataOwner::Object(_) => {}
            DataOwner::DLPack(m) => {
                // SAFETY: `m` is the producer's tensor we took over in `from_dlpack`; its
                // deleter is called exactly once, here.
                unsafe {
                    if let Some(del) = (*m).deleter {
                        del(m);
                    }
                }
            }
            DataOwner::DLPackVersioned(m) => {
                // SAFETY: as for `DLPack`, taken over in `from_dlpack_versioned`.
                unsafe {
                    if let Some(del) = (*m).deleter {
                        del(m);
                    }
                }
            }
        }
    }
}

/// A reference-counted n-dimensional array.
pub type NDArray = ObjPtr<NDArrayData>;

impl NDArrayData {
    pub fn shape(&self) -> &[i64] {
        // SAFETY: `build` pointed `shape` at the `ndim` values of `shape_tuple`, which this
        // struct owns.
        unsafe { std::slice::from_raw_parts(self.dl_tensor.shape, self.dl_tensor.ndim as usize) }
    }
    pub fn dtype(&self) -> DLDataType {
        self.dl_tensor.dtype
    }
    pub fn device(&self) -> DLDevice {
        self.dl_tensor.device
    }
    pub fn strides(&self) -> Option<&[i64]> {
        // SAFETY: as for `shape`, when present.
        (!self.dl_tensor.strides.is_null())
            .then(|| unsafe { std::slice::from_raw_parts(self.dl_tensor.strides, self.dl_tensor.ndim as usize) })
    }
    /// Bytes of the (compact) data.
    pub fn nbytes(&self) -> usize {
        data_size(self.shape(), self.dl_tensor.dtype).expect("checked at construction")
    }
    pub fn data_ptr(&self) -> *mut c_void {
        self.dl_tensor.data
    }
}

impl NDArrayData {
    /// The array as a tensor reference (its shape, strides and data are its own).
    pub fn tensor(&self) -> TensorRef<'_> {
        // SAFETY: `build` gave the array `ndim` shape (and stride) values it owns, and its data
        // is memory of its size on its device, owned by it or by its owner (`DataOwner`).
        unsafe { TensorRef::new(&self.dl_tensor) }
    }
}

impl NDArray {
    /// The handle C sees (`TVMArrayHandle`): the `DLTensor` 24 bytes into the object. Derived
    /// from the object pointer, so the header stays reachable from it (`header_of_handle`).
    pub fn as_dltensor_ptr(&self) -> *mut DLTensor {
        // SAFETY: the payload starts `DLTENSOR_OFFSET` bytes into the object (layout test).
        unsafe { (self.as_header() as *mut u8).add(DLTENSOR_OFFSET) as *mut DLTensor }
    }
}

/// A new shape tuple object holding `dims`.
pub fn shape_tuple(dims: &[i64]) -> ObjPtr<ShapeTupleObj> {
    ShapeTupleObj::new(dims)
}

/// The shape of an array being made.
enum Shape<'a> {
    /// Dimensions to copy into a shape tuple in the array's own block (one allocation).
    Copied(&'a [i64]),
    /// A shape tuple object the array shares (views of one shape made many times).
    Shared(ObjPtr<ShapeTupleObj>),
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn build(
    data: *mut c_void,
    shape: Shape<'_>,
    strides: Strides,
    dtype: DLDataType,
    device: DLDevice,
    byte_offset: u64,
    manager_ctx: *mut c_void,
    owner: DataOwner,
) -> Result<NDArray> {
    let dims = match &shape {
        Shape::Copied(dims) => dims,
        Shape::Shared(tuple) => tuple.dims()?,
    };
    let (n, first) = (dims.len(), dims.as_ptr() as *mut i64);
    let ndim = i32::try_from(n).map_err(|_| Error::value(format!("ndim {n} is too large")))?;
    if matches!(&strides, Strides::Owned(s) if s.len() != n) {
        return Err(Error::value("strides and shape differ in length"));
    }
    let (strides, owns_strides) = match strides {
        Strides::Compact => (std::ptr::null_mut(), false),
        Strides::Owned(s) => (into_dims(s), true),
        Strides::Borrowed(p) => (p, false),
    };
    // The struct literals below are written straight into the object's block (no payload moved
    // through the stack: that costs more than the rest of the construction).
    let dl_tensor = DLTensor { data, device, ndim, dtype, shape: std::ptr::null_mut(), strides, byte_offset };
    Ok(match shape {
        Shape::Shared(tuple) => {
            let shape_tuple = ManuallyDrop::new(LegacyPtr::new(tuple));
            let dl_tensor = DLTensor { shape: first, ..dl_tensor };
            NDArray::new(NDArrayData {
                dl_tensor,
                manager_ctx,
                shape_tuple,
                shape_in_block: false,
                owner,
                owns_strides,
            })
        }
        Shape::Copied(dims) => {
            // SAFETY: `inline` writes the `ndim + 1` values it reports as its `tail_len`; the
            // array keeps the tuple's reference unreleased (`shape_in_block`).
            unsafe {
                ObjPtr::new_with_companion(
                    dims.len() + 1,
                    |first| ShapeTupleObj::inline(dims, first),
                    |tuple| NDArrayData {
                        dl_tensor: DLTensor { shape: tuple.first(), ..dl_tensor },
                        manager_ctx,
                        shape_tuple: ManuallyDrop::new(LegacyPtr::new(tuple)),
                        shape_in_block: true,
                        owner,
                        owns_strides,
                    },
                )
            }
        }
    })
}

impl NDArray {
    /// A new, uninitialised array allocated on `device` (64-byte aligned data).
    pub fn empty(shape: &[i64], dtype: DLDataType, device: DLDevice) -> Result<NDArray> {
        dtype.validate_for_alloc()?;
        let nbytes = data_size(shape, dtype)?;
        let api = device_api(device.device_type)?;
        let align = ALLOC_ALIGNMENT.max(dtype.element_bytes());
        let data = api.alloc_data_space(device, nbytes, align, dtype)?;
        build(
            data,
            Shape::Copied(shape),
            Strides::Compact,
            dtype,
            device,
            0,
            std::ptr::null_mut(),
            DataOwner::Device(device),
        )
        .inspect_err(|_| {
            // SAFETY: allocated just above and not handed out.
            let _ = unsafe { api.free_data_space(device, data) };
        })
    }

    /// A new, uninitialised float32 array of at least `bytes` bytes (whole 4-byte elements, at
    /// least one): a graph storage slot, viewed as tensors of any dtype.
    pub fn empty_bytes(bytes: usize, device: DLDevice) -> Result<NDArray> {
        NDArray::empty(&[bytes.div_ceil(4).max(1) as i64], DLDataType::FLOAT32, device)
    }

    /// A CPU array holding a copy of `bytes` (length must match).
    pub fn from_bytes(shape: &[i64], dtype: DLDataType, bytes: &[u8]) -> Result<NDArray> {
        let arr = NDArray::empty(shape, dtype, DLDevice::cpu(0))?;
        arr.copy_from_bytes(bytes)?;
        Ok(arr)
    }

    /// A view of this array's memory with another shape/dtype that must fit in it.
    pub fn create_view(&self, shape: &[i64], dtype: DLDataType) -> Result<NDArray> {
        self.create_view_at(0, shape, dtype)
    }

    /// A view of `shape`/`dtype` starting `offset` bytes into this array's memory, which must
    /// hold it. The view's data pointer is the parent's plus `offset` (its `byte_offset` stays the
    /// parent's), so it is for devices whose memory has plain addresses, as CPU memory does.
    pub fn create_view_at(&self, offset: usize, shape: &[i64], dtype: DLDataType) -> Result<NDArray> {
        self.create_view_of(offset, shape_tuple(shape), dtype)
    }

    /// [`NDArray::create_view_at`] with the shape as a shape tuple object the view shares (a
    /// caller making many views of one shape makes the tuple once).
    pub fn create_view_of(&self, offset: usize, shape: ObjPtr<ShapeTupleObj>, dtype: DLDataType) -> Result<NDArray> {
        let need = data_size(shape.dims()?, dtype)?;
        let have = self.nbytes();
        if !matches!(offset.checked_add(need), Some(end) if end <= have) {
            let at = if offset == 0 { String::new() } else { format!(" at offset {offset}") };
            return Err(Error::value(format!("view of {need} bytes{at} does not fit in an array of {have} bytes")));
        }
        // Host memory is addressed directly; device memory by its handle, which the view keeps
        // while its byte offset moves (as TVM's views of device arrays do).
        let (data, byte_offset) = if is_host_like(self.dl_tensor.device.device_type) {
            // SAFETY: `offset + need <= have`, so the address stays inside this array's memory.
            (unsafe { (self.dl_tensor.data as *mut u8).add(offset) } as *mut c_void, self.dl_tensor.byte_offset)
        } else {
            (self.dl_tensor.data, self.dl_tensor.byte_offset + offset as u64)
        };
        build(
            data,
            Shape::Shared(shape),
            Strides::Compact,
            dtype,
            self.dl_tensor.device,
            byte_offset,
            self.as_header() as *mut c_void,
            DataOwner::Parent(self.clone()),
        )
    }

    /// A view of `shape`/`dtype` starting `offset` bytes into this array's memory, with the
    /// parent's data pointer and the offset in its `byte_offset` on every device (as tvm-ffi's
    /// `Tensor::CreateView` makes them): kernels whose buffers declare an element offset read
    /// it from there, and assume the data pointer itself is aligned.
    pub fn create_view_by_offset(&self, offset: usize, shape: &[i64], dtype: DLDataType) -> Result<NDArray> {
        let need = data_size(shape, dtype)?;
        if !matches!(offset.checked_add(need), Some(end) if end <= self.nbytes()) {
            return Err(Error::value(format!(
                "view of {need} bytes at offset {offset} does not fit in an array of {} bytes",
                self.nbytes()
            )));
        }
        build(
            self.dl_tensor.data,
            Shape::Copied(shape),
            Strides::Compact,
            dtype,
            self.dl_tensor.device,
            self.dl_tensor.byte_offset + offset as u64,
            self.as_header() as *mut c_void,
            DataOwner::Parent(self.clone()),
        )
    }

    /// A borrowed tvm-ffi view of this array, for a call in tvm-ffi's convention
    /// ([`PackedFunc::call_any`](crate::runtime::function::packed::PackedFunc)); valid while the
    /// array is.
    pub fn as_any_view(&self) -> crate::abi::TVMFFIAny {
        let h = self.as_header();
        // SAFETY: the header of a live object (this reference keeps it alive).
        let type_index = unsafe { (*h).type_index } as i32;
        crate::abi::TVMFFIAny::ptr(type_index, h as *const c_void)
    }

    /// An array over memory this runtime does not own (nothing is freed on drop).
    ///
    /// # Safety
    /// `data` must point to memory on `device` valid for reads and writes of the array's byte
    /// size (`shape` × `dtype`), suitably aligned for `dtype`, and stay valid for as long as the
    /// returned array or any view or handle derived from it is alive. Nothing frees it.
    pub unsafe fn borrowed(data: *mut c_void, shape: &[i64], dtype: DLDataType, device: DLDevice) -> Result<NDArray> {
        data_size(shape, dtype)?;
        build(data, Shape::Copied(shape), Strides::Compact, dtype, device, 0, std::ptr::null_mut(), DataOwner::External)
    }

    /// Adopt a DLPack tensor (compact, 64-byte aligned); its deleter runs when the array dies.
    ///
    /// # Safety
    /// `m` must be non-null and point to a valid `DLManagedTensor` (its `dl_tensor` shape/strides
    /// arrays hold `ndim` values and its data is valid for the described bytes) that stays valid
    /// until its deleter runs. On success the caller hands ownership over: the array calls the
    /// deleter exactly once, possibly on another thread. On error nothing is taken over and the
    /// caller still owns `m`.
    pub unsafe fn from_dlpack(m: *mut DLManagedTensor) -> Result<NDArray> {
        // SAFETY: the caller's contract.
        unsafe { Self::from_dlpack_checked(m, ALLOC_ALIGNMENT, true) }
    }

    /// [`NDArray::from_dlpack`] for DLPack 1.x's versioned tensor, with tvm-ffi's checks:
    /// `data + byte_offset` aligned to `require_alignment` (0: any), contiguous if asked;
    /// strided tensors are taken with their strides.
    ///
    /// # Safety
    /// As [`NDArray::from_dlpack`].
    pub unsafe fn from_dlpack_versioned(
        m: *mut DLManagedTensorVersioned,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<NDArray> {
        // SAFETY: the caller hands over a valid managed tensor.
        let t = unsafe { TensorRef::new(&(*m).dl_tensor) };
        Self::adopt_dlpack(t, require_alignment, require_contiguous, m as *mut c_void, DataOwner::DLPackVersioned(m))
    }

    /// [`NDArray::from_dlpack`] with tvm-ffi's checks (see [`NDArray::from_dlpack_versioned`]).
    ///
    /// # Safety
    /// As [`NDArray::from_dlpack`].
    pub unsafe fn from_dlpack_checked(
        m: *mut DLManagedTensor,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<NDArray> {
        // SAFETY: the caller hands over a valid managed tensor.
        let t = unsafe { TensorRef::new(&(*m).dl_tensor) };
        Self::adopt_dlpack(t, require_alignment, require_contiguous, m as *mut c_void, DataOwner::DLPack(m))
    }

    /// A view of `source`'s memory described by `prototype` (tvm-ffi's
    /// `TVMFFITensorCreateUnsafeView`): its data pointer, shape, strides, dtype, device and byte
    /// offset are copied; `source` is kept alive by the view. Whether the prototype's data lies
    /// inside `source` is the caller's word, as in tvm-ffi.
    pub fn unsafe_view(source: &NDArray, prototype: TensorRef<'_>) -> Result<NDArray> {
        let raw = prototype.raw();
        let strides = prototype.strides().map_or(Strides::Compact, |s| Strides::Owned(s.into()));
        let ctx = source.as_header() as *mut c_void;
        let owner = DataOwner::Parent(source.clone());
        build(raw.data, Shape::Copied(prototype.shape()?), strides, raw.dtype, raw.device, raw.byte_offset, ctx, owner)
    }

    /// The array an object is: one of ours, or a view of an `ffi.Tensor` made by foreign tvm-ffi
    /// code (whose payload past the `DLTensor` is its own), keeping that object alive. `None` for
    /// other objects.
    pub fn from_object(obj: &ObjectRef) -> Option<NDArray> {
        if let Some(a) = obj.downcast::<NDArrayData>() {
            return Some(a);
        }
        if obj.type_index() != type_index::NDARRAY {
            return None;
        }
        // SAFETY: an `ffi.Tensor` has its `DLTensor` right after the header (tvm-ffi's layout),
        // valid while the object lives, which the view makes sure of.
        let t = unsafe { TensorRef::new(&*((obj.as_header() as *const u8).add(DLTENSOR_OFFSET) as *const DLTensor)) };
        let raw = t.raw();
        // The object keeps its strides alive as long as the view keeps it.
        let strides = t.strides().map_or(Strides::Compact, |s| Strides::Borrowed(s.as_ptr() as *mut i64));
        let owner = DataOwner::Object(obj.clone());
        build(
            raw.data,
            Shape::Copied(t.shape().ok()?),
            strides,
            raw.dtype,
            raw.device,
            raw.byte_offset,
            std::ptr::null_mut(),
            owner,
        )
        .ok()
    }

    /// An array over a producer's tensor `t`, which `owner` releases; nothing is taken over on error.
    /// Inlined, so `owner` is made in place (passed through memory, its tag and pointer were
    /// read back by one wider load, which stalls).
    #[inline(always)]
    fn adopt_dlpack(
        t: TensorRef<'_>,
        align: usize,
        contiguous: bool,
        ctx: *mut c_void,
        owner: DataOwner,
    ) -> Result<NDArray> {
        if contiguous {
            t.check_contiguous("DLPack")?;
        }
        let addr = t.data_addr() as usize;
        if align > 1 && addr % align != 0 {
            return Err(Error::value(format!("DLPack tensor data is not {align}-byte aligned (address {addr:#x})")));
        }
        let shape = t.shape()?;
        data_size(shape, t.dtype())?;
        let raw = t.raw();
        // The producer's strides stay valid until its deleter runs, when this array dies.
        let strides = t.strides().map_or(Strides::Compact, |s| Strides::Borrowed(s.as_ptr() as *mut i64));
        build(raw.data, Shape::Copied(shape), strides, raw.dtype, raw.device, raw.byte_offset, ctx, owner)
    }

    /// Recover the array from a handle (`TVMArrayHandle`) and take a new reference.
    ///
    /// # Safety
    /// `handle` must be the `DLTensor` of a live NDArray container made by this runtime (as
    /// returned by [`NDArray::as_dltensor_ptr`]), kept alive by some reference for the duration
    /// of the call. A bare `DLTensor` not embedded in such a container is not allowed: the type
    /// check reads the header in front of it.
    pub unsafe fn from_handle_borrowed(handle: *mut DLTensor) -> Result<NDArray> {
        // SAFETY: the same contract as `header_of_handle`'s.
        let header = unsafe { Self::header_of_handle(handle)? };
        // SAFETY: a live container of this runtime with the NDArray type index is an
        // `Obj<NDArrayData>` (contract above); the caller keeps its own reference.
        Ok(unsafe { NDArray::from_borrowed(header) })
    }

    /// Header of the container that owns `handle`, checked to be an NDArray.
    ///
    /// # Safety
    /// `handle` must be the `DLTensor` of a live NDArray container made by this runtime (as
    /// returned by [`NDArray::as_dltensor_ptr`]), kept alive for the duration of the call. The
    /// returned header is only valid while some reference keeps the container alive.
    pub unsafe fn header_of_handle(handle: *mut DLTensor) -> Result<*mut ObjectHeader> {
        // By this function's contract `handle` lies `DLTENSOR_OFFSET` bytes into a live container,
        // so stepping back stays inside it and reaches the header; in the checked mode that is
        // verified first (a made-up handle may point anywhere, hence no `sub`).
        let header = (handle as *mut u8).wrapping_sub(DLTENSOR_OFFSET) as *mut ObjectHeader;
        if live::checking() && !live::is_live(header as usize) {
            return Err(live::not_live(handle as usize, "NDArray"));
        }
        // SAFETY: the header is live (same reason).
        if unsafe { (*header).type_index != type_index::NDARRAY || (*header).padding != MADE_HERE } {
            return Err(Error::type_error("handle is not an NDArray created by this runtime"));
        }
        Ok(header)
    }

    /// Copy `bytes` into this (contiguous) array; length must equal its byte size.
    pub fn copy_from_bytes(&self, bytes: &[u8]) -> Result<()> {
        copy_from_bytes(self.tensor(), bytes)
    }

    /// A new compact array on `dev` holding this one's elements (always a copy).
    pub fn copy_to(&self, dev: DLDevice) -> Result<NDArray> {
        let out = NDArray::empty(self.shape(), self.dtype(), dev)?;
        copy_from_to(self.tensor(), out.tensor())?;
        Ok(out)
    }

    /// Copy this (contiguous) array out into `bytes`; length must equal its byte size.
    pub fn copy_to_bytes(&self, bytes: &mut [u8]) -> Result<()> {
        copy_to_bytes(self.tensor(), bytes)
    }

    /// The data as a byte vector (copied).
    pub fn to_vec_u8(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.nbytes()];
        self.copy_to_bytes(&mut v)?;
        Ok(v)
    }
}

/// Copy host bytes into any tensor (`TVMArrayCopyFromBytes`), then synchronize.
pub fn copy_from_bytes(t: TensorRef<'_>, bytes: &[u8]) -> Result<()> {
    let n = t.byte_size()?;
    if bytes.len() != n {
        return Err(Error::value(format!("copy from bytes: got {} bytes, the array holds {n} bytes", bytes.len())));
    }
    t.check_contiguous("destination")?;
    let src = host_view_of(t, bytes.as_ptr() as *mut c_void);
    let api = device_api(t.device().device_type)?;
    // SAFETY: `src` is `bytes` (n bytes, read only) with `t`'s shape, which outlives the call;
    // on the NULL stream the copy is done on return.
    unsafe { api.copy_data_from_to(TensorRef::new(&src), t, std::ptr::null_mut())? };
    api.stream_sync(t.device(), std::ptr::null_mut())
}

/// Copy any tensor out into host bytes (`TVMArrayCopyToBytes`), then synchronize.
pub fn copy_to_bytes(t: TensorRef<'_>, bytes: &mut [u8]) -> Result<()> {
    let n = t.byte_size()?;
    if bytes.len() != n {
        return Err(Error::value(format!(
            "copy to bytes: got a buffer of {} bytes, the array holds {n} bytes",
            bytes.len()
        )));
    }
    t.check_contiguous("source")?;
    let dst = host_view_of(t, bytes.as_mut_ptr() as *mut c_void);
    let api = device_api(t.device().device_type)?;
    // SAFETY: `dst` is `bytes` (n writable bytes, borrowed mutably) with `t`'s shape; on the
    // NULL stream the copy is done on return.
    unsafe { api.copy_data_from_to(t, TensorRef::new(&dst), std::ptr::null_mut())? };
    api.stream_sync(t.device(), std::ptr::null_mut())
}

fn is_host_like(device_type: i32) -> bool {
    use crate::abi::device_type::*;
    matches!(device_type, CPU | CUDA_HOST | ROCM_HOST)
}

/// Copy between tensors on compatible devices, done on return.
pub fn copy_from_to(from: TensorRef<'_>, to: TensorRef<'_>) -> Result<()> {
    // SAFETY: on the NULL stream the copy is done before this returns.
    unsafe { copy_from_to_on(from, to, std::ptr::null_mut()) }
}

/// Copy between tensors on compatible devices (`TVMArrayCopyFromTo`), ordered on `stream`.
///
/// # Safety
/// As [`DeviceApi::copy_data_from_to`](crate::runtime::device::DeviceApi::copy_data_from_to): on a
/// non-NULL stream both tensors' data must stay valid until the stream has run the copy.
pub unsafe fn copy_from_to_on(from: TensorRef<'_>, to: TensorRef<'_>, stream: *mut c_void) -> Result<()> {
    let (a, b) = (from.device().device_type, to.device().device_type);
    if a != b && !is_host_like(a) && !is_host_like(b) {
        return Err(Error::value(format!(
            "cannot copy between {} and {}: one side must be the host",
            from.device(),
            to.device()
        )));
    }
    let nf = from.byte_size()?;
    let nt = to.byte_size()?;
    if nf != nt {
        return Err(Error::value(format!("copy size mismatch: source has {nf} bytes, destination has {nt} bytes")));
    }
    let dev = if a != crate::abi::device_type::CPU { from.device() } else { to.device() };
    // SAFETY: forwarded contract.
    unsafe { device_api(dev.device_type)?.copy_data_from_to(from, to, stream) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn container_layout_matches_tvm() {
        use crate::runtime::object::header::Obj;
        assert_eq!(offset_of!(NDArrayData, dl_tensor), 0);
        assert_eq!(offset_of!(NDArrayData, manager_ctx), 48);
        assert_eq!(offset_of!(NDArrayData, shape_tuple), 56);
        let a = NDArray::empty(&[2, 3], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let handle = a.as_dltensor_ptr() as usize;
        assert_eq!(handle - a.as_header() as usize, DLTENSOR_OFFSET);
        assert_eq!(std::mem::size_of::<Obj<()>>(), 24);
        assert_eq!(a.data_ptr() as usize % 64, 0);
        // TVM's `shape_`: the ShapeTuple object that `dl_tensor.shape` points into.
        assert_eq!(a.shape_tuple.to_object_ref().type_index(), type_index::SHAPE_TUPLE);
        assert_eq!(a.shape_tuple.dims().unwrap(), &[2, 3]);
        assert_eq!(a.shape_tuple.dims().unwrap().as_ptr(), a.dl_tensor.shape as *const i64);
        let scalar = NDArray::empty(&[], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        assert_eq!(scalar.shape_tuple.dims().unwrap().as_ptr(), scalar.dl_tensor.shape as *const i64);
        assert!(!scalar.dl_tensor.shape.is_null());
    }

    #[test]
    fn an_array_and_its_shape_tuple_share_one_block_and_either_may_die_first() {
        let a = NDArray::empty(&[2, 3], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let tuple = a.shape_tuple.to_object_ref();
        let (at, tuple_at) = (a.as_header() as usize, tuple.as_header() as usize);
        assert!(tuple_at > at && tuple_at - at < 256, "the tuple in the array's block");
        drop(a);
        // The block stays while the tuple is held; the tuple's last reference frees it.
        let dims = tuple.downcast::<ShapeTupleObj>().unwrap();
        assert_eq!(dims.dims().unwrap(), &[2, 3]);
        drop((dims, tuple));
        // A view shares its parent's tuple when given one, and keeps its own otherwise.
        let a = NDArray::empty(&[6], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
        let shared = shape_tuple(&[2, 3]);
        let v = a.create_view_of(0, shared.clone(), DLDataType::FLOAT32).unwrap();
        assert_eq!(v.shape_tuple.to_object_ref().as_header(), shared.as_header());
        drop((a, v));
        assert_eq!(shared.dims().unwrap(), &[2, 3]);
    }

    #[test]
    fn an_array_and_its_shape_tuple_let_go_of_on_threads_in_any_order() {
        for round in 0..100 {
            let a = NDArray::empty(&[2, 3], DLDataType::FLOAT32, DLDevice::cpu(0)).unwrap();
            let threads: Vec<_> = (0..4)
                .map(|i| {
                    let a = a.clone();
                    std::thread::spawn(move || {
                        let tuple = a.shape_tuple.to_object_ref().downcast::<ShapeTupleObj>().unwrap();
                        if i % 2 == 0 {
                            drop(a);
                        }
                        assert_eq!(tuple.dims().unwrap(), &[2, 3], "round {round}");
                    })
                })
                .collect();
            drop(a);
            for t in threads {
                t.join().unwrap();
            }
        }
    }

    #[test]
    fn storage_slots_are_whole_float32_elements() {
        for (bytes, elems) in [(0, 1), (1, 1), (4, 1), (5, 2), (1000, 250)] {
            let a = NDArray::empty_bytes(bytes, DLDevice::cpu(0)).unwrap();
            assert_eq!((a.shape(), a.dtype()), (&[elems][..], DLDataType::FLOAT32), "{bytes} bytes");
        }
    }

    #[test]
    fn bytes_views_and_errors() {
        let vals: Vec<f32> = (0..6).map(|i| i as f32 * 1.5).collect();
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = NDArray::from_bytes(&[2, 3], DLDataType::FLOAT32, &bytes).unwrap();
        assert_eq!(a.to_vec_u8().unwrap(), bytes);
        let v = a.create_view(&[6], DLDataType::FLOAT32).unwrap();
        assert_eq!(v.data_ptr(), a.data_ptr());
        assert_eq!(a.ref_count(), 2);
        drop(a);
        assert_eq!(v.to_vec_u8().unwrap(), bytes);
        assert!(v.create_view(&[7], DLDataType::FLOAT32).is_err());
        assert!(v.copy_from_bytes(&bytes[..4]).unwrap_err().message().contains("got 4 bytes"));
        assert!(NDArray::empty(&[2], DLDataType::new(2, 12, 1), DLDevice::cpu(0)).is_err());
        assert!(NDArray::empty(&[2], DLDataType::FLOAT32, DLDevice { device_type: 2, device_id: 0 })
            .unwrap_err()
            .message()
            .contains("cuda"));
    }
}
