//! tvm-ffi's error objects (`ffi.Error`): kind, message and backtrace in tvm-ffi's
//! `TVMFFIErrorCell` layout right after the header, which tvm-ffi code reads inline, plus the
//! cause chain and extra context. The thread's raised error is one slot with the last-error text
//! (`error.rs`): an error raised as an object is kept beside the text it set, and handed back
//! as that object while the text is still the latest; otherwise one is made from the text.

use super::error::{has_kind_prefix, last_error_generation, last_error_message, panic_message, Error, Result};
use super::object::{type_index, ObjPtr, ObjectRef, ObjectType};
use crate::abi::{TVMFFIAny, TVMFFIByteArray};
use std::cell::{RefCell, UnsafeCell};
use std::ffi::c_void;

/// `update_backtrace(self, backtrace, mode)` as tvm-ffi's cell declares it.
type UpdateBacktrace = unsafe extern "C" fn(*mut c_void, *const TVMFFIByteArray, i32);

/// Payload of an `ffi.Error`: the cell first (tvm-ffi's layout), then what its arrays point into.
#[repr(C)]
pub struct ErrorObj {
    kind: TVMFFIByteArray,
    message: TVMFFIByteArray,
    backtrace: UnsafeCell<TVMFFIByteArray>,
    update_backtrace: UpdateBacktrace,
    cause_chain: Option<ObjectRef>,
    extra_context: Option<ObjectRef>,
    /// What `kind` and `message` point into.
    _texts: Box<[Box<[u8]>; 2]>,
    backtrace_text: UnsafeCell<Box<[u8]>>,
}

// SAFETY: the arrays point into boxes the object owns, never written after construction except
// the backtrace, which tvm-ffi's contract lets only the error's owner update (as its own does).
unsafe impl Send for ErrorObj {}
// SAFETY: as above.
unsafe impl Sync for ErrorObj {}

impl ObjectType for ErrorObj {
    const TYPE_INDEX: u32 = type_index::ERROR;
    const LAYOUT_SHARED: bool = true;
}

/// A NUL-terminated copy of `bytes` and the array describing it (without the NUL).
fn owned_text(bytes: &[u8]) -> (Box<[u8]>, TVMFFIByteArray) {
    let b: Box<[u8]> = bytes.iter().copied().chain([0]).collect();
    let arr = TVMFFIByteArray { data: b.as_ptr() as *const _, size: bytes.len() };
    (b, arr)
}

unsafe extern "C" fn update_backtrace(obj: *mut c_void, backtrace: *const TVMFFIByteArray, mode: i32) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `obj` is a live `ffi.Error` made here and `backtrace` a valid array (tvm-ffi's
        // contract for this callback); the owner updates it, nobody reads it meanwhile.
        unsafe {
            let e = &(*(obj as *mut super::object::Obj<ErrorObj>)).data;
            let new = super::packed::byte_array(&*backtrace);
            let mut text =
                if mode == 1 { (&*e.backtrace_text.get())[..(*e.backtrace.get()).size].to_vec() } else { Vec::new() };
            text.extend_from_slice(new);
            let (b, arr) = owned_text(&text);
            *e.backtrace_text.get() = b;
            *e.backtrace.get() = arr;
        }
    });
}

impl ErrorObj {
    pub fn new(
        kind: &[u8],
        message: &[u8],
        backtrace: &[u8],
        cause: Option<ObjectRef>,
        extra: Option<ObjectRef>,
    ) -> Self {
        let (k, kind) = owned_text(kind);
        let (m, message) = owned_text(message);
        let (b, bt) = owned_text(backtrace);
        ErrorObj {
            kind,
            message,
            backtrace: UnsafeCell::new(bt),
            update_backtrace,
            cause_chain: cause,
            extra_context: extra,
            _texts: Box::new([k, m]),
            backtrace_text: UnsafeCell::new(b),
        }
    }

    /// An error object from our `Kind: message` text (`TVMError` when it names no kind).
    pub fn from_text(text: &str) -> Self {
        let (kind, message) = match text.split_once(": ") {
            Some((k, m)) if has_kind_prefix(text) => (k, m),
            _ => ("TVMError", text),
        };
        Self::new(kind.as_bytes(), message.as_bytes(), b"", None, None)
    }

    /// `Kind: message`, as the last-error text shows it.
    pub fn text(&self) -> String {
        // SAFETY: the arrays describe the object's own boxes.
        let (k, m) = unsafe { (super::packed::byte_array(&self.kind), super::packed::byte_array(&self.message)) };
        format!("{}: {}", String::from_utf8_lossy(k), String::from_utf8_lossy(m))
    }
}

thread_local! {
    /// An error raised as an object, with the last-error generation its text got.
    static RAISED: RefCell<Option<(u64, ObjPtr<ErrorObj>)>> = const { RefCell::new(None) };
}

/// The body of a function of ours that C++ code calls through a table or a hook column (a
/// structural mutation's or visit's), a panic turned into an error naming `what`: nothing
/// unwinds into C++.
pub fn catch_native<T>(what: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|p| Err(Error::internal(format!("panic in {what}: {}", panic_message(&*p)))))
}

/// `e` as such a function returns an error: an owned `ffi.Error` value.
pub fn error_any(e: &Error) -> TVMFFIAny {
    object_any(ObjPtr::new(ErrorObj::from_text(&e.to_string())))
}

/// An error object as an owned value (its reference goes with it).
pub fn object_any(e: ObjPtr<ErrorObj>) -> TVMFFIAny {
    TVMFFIAny::ptr(type_index::ERROR as i32, e.into_raw() as *const c_void)
}

/// Remember `e` as this thread's raised error; the caller has just stored its text.
pub fn keep_raised(e: ObjPtr<ErrorObj>) {
    let generation = last_error_generation();
    RAISED.with(|r| *r.borrow_mut() = Some((generation, e)));
}

/// Hand out this thread's raised error (the object raised, or one made from the last-error
/// text) and clear it; `None` when nothing was raised.
pub fn take_raised() -> Option<ObjPtr<ErrorObj>> {
    let kept = RAISED.with(|r| r.borrow_mut().take());
    if let Some((generation, e)) = kept {
        if generation == last_error_generation() {
            return Some(e);
        }
    }
    last_error_message().map(|text| ObjPtr::new(ErrorObj::from_text(&text)))
}
