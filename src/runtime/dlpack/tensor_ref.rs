//! [`TensorRef`]: a `DLTensor` from outside the runtime, vouched for once at the door, so that
//! everything behind the door (sizes, contiguity checks, copies) is safe code.
//!
//! A raw `&DLTensor` promises nothing about where its `shape`, `strides` and `data` pointers
//! lead. A `TensorRef` is made only by an `unsafe` constructor whose caller promises it, or from
//! an array this runtime owns.

use crate::abi::{DLDataType, DLDevice, DLTensor};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::dtype::data_size;
use std::ffi::c_void;

/// A borrowed `DLTensor` whose pointers are valid for `'a`: `shape` holds `ndim` values (or
/// `ndim` is 0), `strides` is NULL or holds `ndim` values, and `data` (after `byte_offset`), when
/// the tensor has bytes, is memory on `device` that the tensor's extent may be read from and
/// written to, with no other writer while the reference is used.
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    t: &'a DLTensor,
}

impl<'a> TensorRef<'a> {
    /// Vouch for `t`.
    ///
    /// # Safety
    /// `t`'s pointers must be valid for `'a` as the type's documentation says. A negative `ndim`,
    /// or a NULL `shape` with `ndim > 0`, is tolerated (reported as an error by [`Self::shape`]).
    pub unsafe fn new(t: &'a DLTensor) -> Self {
        TensorRef { t }
    }

    /// Vouch for the tensor at `p`; NULL is an error naming `name`.
    ///
    /// # Safety
    /// A non-NULL `p` must point to a `DLTensor` satisfying [`Self::new`]'s contract for `'a`.
    pub unsafe fn from_ptr(p: *const DLTensor, name: &str) -> Result<Self> {
        // SAFETY: the caller's contract covers a non-NULL `p`.
        match unsafe { p.as_ref() } {
            Some(t) => Ok(TensorRef { t }),
            None => Err(Error::value(format!("argument `{name}` is NULL"))),
        }
    }

    /// The plain struct (its pointers are only as good as this reference's contract).
    pub fn raw(&self) -> &'a DLTensor {
        self.t
    }
    pub fn dtype(&self) -> DLDataType {
        self.t.dtype
    }
    pub fn device(&self) -> DLDevice {
        self.t.device
    }
    /// Address of the first byte (`data + byte_offset`).
    pub fn data_addr(&self) -> *mut c_void {
        (self.t.data as usize).wrapping_add(self.t.byte_offset as usize) as *mut c_void
    }

    /// The shape (empty for ndim 0); a negative ndim or a NULL shape is an error.
    pub fn shape(&self) -> Result<&'a [i64]> {
        let n = usize::try_from(self.t.ndim).map_err(|_| Error::value(format!("negative ndim {}", self.t.ndim)))?;
        if n == 0 {
            return Ok(&[]);
        }
        if self.t.shape.is_null() {
            return Err(Error::value(format!("tensor has ndim {n} but its shape pointer is NULL")));
        }
        // SAFETY: non-NULL, and `ndim` values by the constructor's contract.
        Ok(unsafe { std::slice::from_raw_parts(self.t.shape, n) })
    }

    /// The strides, `None` when compact (NULL).
    pub fn strides(&self) -> Option<&'a [i64]> {
        if self.t.strides.is_null() || self.t.ndim <= 0 {
            return None;
        }
        // SAFETY: non-NULL, and `ndim` values by the constructor's contract.
        Some(unsafe { std::slice::from_raw_parts(self.t.strides, self.t.ndim as usize) })
    }

    /// Bytes of the data, `prod(shape) * element bytes` (TVM's `GetDataSize`).
    pub fn byte_size(&self) -> Result<usize> {
        data_size(self.shape()?, self.t.dtype)
    }

    /// Whether strides are absent or equal to compact row-major strides (extent-1 dims ignored).
    pub fn is_contiguous(&self) -> bool {
        let (shape, strides) = match (self.shape(), self.strides()) {
            (Ok(s), Some(st)) => (s, st),
            (Ok(_), None) => return true,
            (Err(_), _) => return false,
        };
        let mut expected: i64 = 1;
        for i in (0..shape.len()).rev() {
            if shape[i] != 1 && strides[i] != expected {
                return false;
            }
            expected = expected.saturating_mul(shape[i]);
        }
        true
    }

    /// Error unless contiguous; `what` names the tensor in the message.
    pub fn check_contiguous(&self, what: &str) -> Result<()> {
        if self.is_contiguous() {
            Ok(())
        } else {
            Err(Error::value(format!(
                "{what} tensor is strided (non-contiguous); only compact row-major tensors are supported here"
            )))
        }
    }
}

/// A `DLTensor*` carried in a [`crate::runtime::Value`] without being followed. Made only by an
/// `unsafe` constructor, so a value passed on as an argument keeps [`crate::runtime::Args`]'
/// contract: safe code cannot smuggle an arbitrary address to a function that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawTensor(*mut DLTensor);

impl RawTensor {
    /// # Safety
    /// `p` must satisfy [`TensorRef::new`]'s contract for as long as the value (or any copy of
    /// it) may be passed as an argument.
    pub unsafe fn new(p: *mut DLTensor) -> Self {
        RawTensor(p)
    }
    pub fn as_ptr(self) -> *mut DLTensor {
        self.0
    }
}

/// A compact host tensor over `bytes`, shaped like `like` (same dtype and shape).
///
/// The returned struct borrows `like`'s shape pointer: use it only while `like` lives.
pub(crate) fn host_view_of(like: TensorRef<'_>, data: *mut c_void) -> DLTensor {
    DLTensor { data, device: DLDevice::cpu(0), strides: std::ptr::null_mut(), byte_offset: 0, ..*like.raw() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &mut [i64], strides: Option<&mut [i64]>) -> DLTensor {
        DLTensor {
            data: std::ptr::null_mut(),
            device: DLDevice::cpu(0),
            ndim: shape.len() as i32,
            dtype: DLDataType::FLOAT32,
            shape: shape.as_mut_ptr(),
            strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: 0,
        }
    }

    #[test]
    fn contiguity_and_size() {
        let mut shape = [2i64, 3];
        let mut strides = [3i64, 1];
        let t = tensor(&mut shape, Some(&mut strides));
        // SAFETY: shape and strides hold ndim values; no data is touched.
        let r = unsafe { TensorRef::new(&t) };
        assert!(r.is_contiguous());
        assert_eq!(r.byte_size().unwrap(), 24);
        let mut strides = [1i64, 2];
        let t = tensor(&mut shape, Some(&mut strides));
        // SAFETY: as above.
        let r = unsafe { TensorRef::new(&t) };
        assert!(!r.is_contiguous());
        assert!(r.check_contiguous("input").unwrap_err().message().contains("input tensor is strided"));
    }

    #[test]
    fn bad_shapes_are_errors() {
        let mut shape = [2i64];
        let mut t = tensor(&mut shape, None);
        t.ndim = -1;
        // SAFETY: a negative ndim is tolerated by the contract.
        assert_eq!(unsafe { TensorRef::new(&t) }.shape().unwrap_err().message(), "ValueError: negative ndim -1");
        t.ndim = 2;
        t.shape = std::ptr::null_mut();
        // SAFETY: a NULL shape is tolerated by the contract.
        assert!(unsafe { TensorRef::new(&t) }.byte_size().unwrap_err().message().contains("shape pointer is NULL"));
        // SAFETY: NULL is reported, not followed.
        assert!(unsafe { TensorRef::from_ptr(std::ptr::null(), "data") }.is_err());
    }
}
