//! Pointers from C become references here, and only here: out-parameters, `(pointer, length)`
//! slices where NULL is allowed for length 0, and object handles checked against their type.
//! Each check names the argument, so a bad call gets a message a C programmer can act on.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::object::live;
use crate::runtime::object::{
    header::{legacy, ObjPtr, ObjectHeader, ObjectType},
    type_table::kind_name,
};
use std::ffi::c_void;
use std::mem::ManuallyDrop;

/// The out-parameter `p` as a reference; NULL is an error naming `name`.
///
/// # Safety
/// A non-NULL `p` must be valid for writes of a `T` and unaliased for `'a`.
pub(crate) unsafe fn out_param<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    // SAFETY: the caller's contract covers a non-NULL `p`.
    unsafe { p.as_mut() }.ok_or_else(|| null_error(name))
}

/// The function type inside a nullable C function-pointer typedef (`Option<unsafe extern "C"
/// fn(..)>`), so that a callback checked non-NULL is kept with its typedef's signature, not a
/// copy of it.
pub(crate) trait Nullable {
    type Fn: Copy;
}
impl<F: Copy> Nullable for Option<F> {
    type Fn = F;
}
pub(crate) type NonNullFn<T> = <T as Nullable>::Fn;

/// `len` elements at `p`. NULL is allowed when `len` is 0 (C code passes it for empty arrays).
///
/// # Safety
/// For `len > 0`, a non-NULL `p` must point to `len` initialised `T`s, valid and unmodified
/// for `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::value(format!("argument `{name}` is NULL but its length is {len}")));
    }
    // SAFETY: non-NULL and, by the caller's contract, `len` valid elements for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// `len` writable elements at `p`; NULL is allowed when `len` is 0.
///
/// # Safety
/// For `len > 0`, a non-NULL `p` must point to `len` initialised `T`s, valid for reads and
/// writes and unaliased for `'a`.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Error::value(format!("argument `{name}` is NULL but its length is {len}")));
    }
    // SAFETY: non-NULL and, by the caller's contract, `len` valid, unaliased elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Error unless the live object behind `handle` has `T`'s type. In the checked mode
/// ([`crate::runtime::object::live`]) a handle that is not a live object is an error too, found before
/// anything is read through it.
///
/// # Safety
/// `handle` must point to a live object (in the checked mode: or to anything at all).
pub(crate) unsafe fn check_type<T: ObjectType>(handle: *mut c_void, what: &str) -> Result<*mut ObjectHeader> {
    let header = legacy::checked_header(handle, kind_name(T::TYPE_INDEX))?;
    // SAFETY: a live object's header lies before its 0.18 handle (caller contract).
    let ti = unsafe { (*header).type_index };
    if ti != T::TYPE_INDEX {
        let ti = legacy::index_of(ti);
        return Err(Error::type_error(format!("handle {handle:p} is not a {what} (type index {ti})")));
    }
    Ok(header)
}

/// The header of the object behind a C handle: not NULL, and of `T`'s type.
///
/// # Safety
/// `handle` must be NULL or point to a live object.
unsafe fn checked_header<T: ObjectType>(handle: *mut c_void, what: &str) -> Result<*mut ObjectHeader> {
    if handle.is_null() {
        return Err(Error::value(format!("{what} handle is NULL")));
    }
    // SAFETY: non-NULL and live (caller contract).
    unsafe { check_type::<T>(handle, what) }
}

/// A new reference to the object behind a C handle, checked against the expected type.
///
/// # Safety
/// `handle` must be NULL or point to a live object.
pub(crate) unsafe fn borrow_handle<T: ObjectType>(handle: *mut c_void, what: &str) -> Result<ObjPtr<T>> {
    // SAFETY: the caller's contract; the header is then a live object of type `T`, and
    // `from_borrowed` takes its own reference.
    unsafe { Ok(ObjPtr::from_borrowed(checked_header::<T>(handle, what)?)) }
}

/// The object behind a C handle for the length of one call, checked against the expected type.
/// Unchecked (the default) it is borrowed as TVM's C API does, no reference count touched, so
/// threads calling one function share no written cache line; with handles checked it holds a
/// reference of its own, so a callee that frees the handle under its own call does not pull the
/// object from under it.
///
/// # Safety
/// `handle` must be NULL or point to a live object that the caller keeps alive for the call.
pub(crate) unsafe fn handle_for_call<T: ObjectType>(handle: *mut c_void, what: &str) -> Result<CallRef<T>> {
    // SAFETY: the caller's contract is `checked_header`'s.
    let header = unsafe { checked_header::<T>(handle, what)? };
    let owned = live::checking();
    // SAFETY: a live object of type `T`, kept alive by the caller for the call. Owned, the
    // pointer holds the reference `from_borrowed` takes (released in `drop`); otherwise it is
    // never dropped, so no reference is taken or released.
    let obj = unsafe {
        if owned {
            ObjPtr::from_borrowed(header)
        } else {
            ObjPtr::from_raw(header)
        }
    };
    Ok(CallRef { obj: ManuallyDrop::new(obj), owned })
}

/// See [`handle_for_call`].
pub(crate) struct CallRef<T: ObjectType> {
    obj: ManuallyDrop<ObjPtr<T>>,
    owned: bool,
}

impl<T: ObjectType> std::ops::Deref for CallRef<T> {
    type Target = ObjPtr<T>;
    fn deref(&self) -> &ObjPtr<T> {
        &self.obj
    }
}

impl<T: ObjectType> Drop for CallRef<T> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: dropped once, here; it holds the reference `from_borrowed` took.
            unsafe { ManuallyDrop::drop(&mut self.obj) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_is_allowed_only_for_empty_slices() {
        // SAFETY: NULL with length 0, and a live array with its own length.
        unsafe {
            assert!(slice::<u8>(std::ptr::null(), 0, "data").unwrap().is_empty());
            let e = slice::<u8>(std::ptr::null(), 3, "data").unwrap_err();
            assert_eq!(e.message(), "ValueError: argument `data` is NULL but its length is 3");
            let v = [1u8, 2, 3];
            assert_eq!(slice(v.as_ptr(), 3, "data").unwrap(), &v);
            assert!(slice_mut::<u8>(std::ptr::null_mut(), 0, "out").unwrap().is_empty());
            assert!(out_param::<i32>(std::ptr::null_mut(), "out").unwrap_err().message().contains("`out` is NULL"));
        }
    }
}

/// The bytes of a `TVMFFIByteArray*` argument; NULL is an error naming it.
///
/// # Safety
/// `a` must be NULL or a valid byte array, whose bytes outlive the returned slice.
pub(crate) unsafe fn bytes_arg<'a>(a: *const crate::abi::TVMFFIByteArray, what: &str) -> Result<&'a [u8]> {
    if a.is_null() {
        return Err(null_error(what));
    }
    // SAFETY: a valid byte array (caller contract).
    Ok(unsafe { crate::runtime::function::packed::byte_array(&*a) })
}

/// A `TVMFFIByteArray*` argument as UTF-8 text; NULL or other bytes are an error naming it.
///
/// # Safety
/// As [`bytes_arg`].
pub(crate) unsafe fn text_arg<'a>(a: *const crate::abi::TVMFFIByteArray, what: &str) -> Result<&'a str> {
    // SAFETY: the caller's contract.
    std::str::from_utf8(unsafe { bytes_arg(a, what)? })
        .map_err(|_| Error::value(format!("argument `{what}` is not UTF-8")))
}

/// The header behind a tvm-ffi handle (the object's own address): not NULL, live (in the
/// checked mode), and of type `type_index`, which `kind` names in the error.
///
/// # Safety
/// `h` must be NULL or a live object (in the checked mode: or anything at all).
pub(crate) unsafe fn ffi_header(h: *mut c_void, what: &str, type_index: u32, kind: &str) -> Result<*mut ObjectHeader> {
    if h.is_null() {
        return Err(null_error(what));
    }
    live::check(h, kind)?;
    // SAFETY: a live object (caller contract; verified in the checked mode).
    let ti = unsafe { (*(h as *mut ObjectHeader)).type_index };
    if ti != type_index {
        return Err(type_error(what, kind, ti));
    }
    Ok(h as *mut ObjectHeader)
}

/// The error of a NULL pointer argument `what`.
#[cold]
fn null_error(what: &str) -> Error {
    Error::value(format!("argument `{what}` is NULL"))
}

#[cold]
fn type_error(what: &str, kind: &str, ti: u32) -> Error {
    Error::type_error(format!("argument `{what}` is not an {kind} (type index {ti})"))
}
