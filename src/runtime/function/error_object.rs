//! tvm-ffi's error objects (`ffi.Error`): kind, message and backtrace in tvm-ffi's
//! `TVMFFIErrorCell` layout right after the header, which tvm-ffi code reads inline, plus the
//! cause chain and extra context. The thread's raised error is one slot with the last-error text
//! (`base/error.rs`): an error raised as an object is kept beside the text it set, and handed back
//! as that object while the text is still the latest; otherwise one is made from the text. An
//! error that came in as an object carries it through the runtime's own code (`Error::object`),
//! so a callback's error leaves a function of ours as the object it was raised as.

use crate::abi::{TVMFFIAny, TVMFFIByteArray};
use crate::runtime::base::error::{
    has_kind_prefix, keep_raised_object, last_error_message, panic_message, take_raised_object, Error, Result,
};
use crate::runtime::object::{
    header::{ObjPtr, ObjectRef, ObjectType},
    type_table::type_index,
};
use std::cell::UnsafeCell;
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
            let e = &(*(obj as *mut crate::runtime::object::header::Obj<ErrorObj>)).data;
            let new = crate::runtime::function::packed::byte_array(&*backtrace);
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
        Self::from_text_with(text, b"", None)
    }

    /// [`ErrorObj::from_text`] with a backtrace and a cause.
    fn from_text_with(text: &str, backtrace: &[u8], cause: Option<ObjectRef>) -> Self {
        let (kind, message) = match text.split_once(": ") {
            Some((k, m)) if has_kind_prefix(text) => (k, m),
            _ => ("TVMError", text),
        };
        Self::new(kind.as_bytes(), message.as_bytes(), backtrace, cause, None)
    }

    /// `Kind: message`, as the last-error text shows it.
    pub fn text(&self) -> String {
        // SAFETY: the arrays describe the object's own boxes.
        let (k, m) = unsafe {
            (
                crate::runtime::function::packed::byte_array(&self.kind),
                crate::runtime::function::packed::byte_array(&self.message),
            )
        };
        format!("{}: {}", String::from_utf8_lossy(k), String::from_utf8_lossy(m))
    }
}

/// The body of a function of ours that C++ code calls through a table or a hook column (a
/// structural mutation's or visit's), a panic turned into an error naming `what`: nothing
/// unwinds into C++.
pub fn catch_native<T>(what: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|p| Err(Error::internal(format!("panic in {what}: {}", panic_message(&*p)))))
}

/// `e` as such a function returns an error: an owned `ffi.Error` value, the object `e` was
/// raised as when it came in as one.
pub fn error_any(e: &Error) -> TVMFFIAny {
    object_any(error_object(e))
}

/// The object `e` was raised as, or a new one with its text.
pub fn error_object(e: &Error) -> ObjPtr<ErrorObj> {
    object_for(&e.to_string(), e.object::<ObjPtr<ErrorObj>>().cloned())
}

/// The error object for an error that says `text` and was raised as `origin` (if it was): the
/// origin itself when it says the same; else a new object saying `text` (context the runtime
/// added on the way out), with the origin's backtrace (where a callback's frames are) and the
/// origin as its cause.
fn object_for(text: &str, origin: Option<ObjPtr<ErrorObj>>) -> ObjPtr<ErrorObj> {
    match origin {
        Some(o) if o.text() == text => o,
        Some(o) => {
            // SAFETY: the origin's backtrace array describes its own box, alive while `o` is;
            // only the error's owner replaces it, on its own thread (tvm-ffi's contract), and
            // this thread is the one handing the error on.
            let backtrace = unsafe { crate::runtime::function::packed::byte_array(&*o.backtrace.get()) }.to_vec();
            ObjPtr::new(ErrorObj::from_text_with(text, &backtrace, Some(o.to_object_ref())))
        }
        None => ObjPtr::new(ErrorObj::from_text(text)),
    }
}

/// The error a callee (a hook, a table's entry) returned as a value: the error object it is, as
/// an error of ours that carries it; a value of the error type that is no `ffi.Error` made
/// here or by tvm-ffi's layout is an error saying `what` failed.
pub fn returned_error(value: Option<ObjectRef>, what: &str) -> Error {
    match value.and_then(|o| o.downcast::<ErrorObj>()) {
        Some(e) => Error::from_object(e.text(), e),
        None => Error::raw(format!("TVMError: {what} failed")),
    }
}

/// An error object as an owned value (its reference goes with it).
pub fn object_any(e: ObjPtr<ErrorObj>) -> TVMFFIAny {
    TVMFFIAny::ptr(type_index::ERROR as i32, e.into_raw() as *const c_void)
}

/// Remember `e` as this thread's raised error; the caller has just stored its text.
pub fn keep_raised(e: ObjPtr<ErrorObj>) {
    keep_raised_object(e);
}

/// Hand out this thread's raised error (the object raised, or one made from the last-error
/// text) and clear it; `None` when nothing was raised.
pub fn take_raised() -> Option<ObjPtr<ErrorObj>> {
    match take_raised_object::<ObjPtr<ErrorObj>>() {
        Some((object, None)) => Some(object),
        Some((object, Some(text))) => Some(object_for(&text, Some(object))),
        None => last_error_message().map(|text| ObjPtr::new(ErrorObj::from_text(&text))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::base::error::{error_from_callee, last_error_generation, set_last_error, set_last_error_text};

    /// Raise `e` as `TVMFFIErrorSetRaised` does (a callback's error, say), then read it back as
    /// the runtime reads a callee's failure.
    fn raised_by_callee(e: &ObjPtr<ErrorObj>) -> Error {
        let before = last_error_generation();
        set_last_error_text(&e.text());
        keep_raised(e.clone());
        error_from_callee(before, || Error::runtime("the callee raised nothing"))
    }

    fn callback_error() -> ObjPtr<ErrorObj> {
        ObjPtr::new(ErrorObj::new(b"ValueError", b"deep", b"  File \"cb.py\", line 3, in cb\n", None, None))
    }

    fn same(a: &ObjPtr<ErrorObj>, b: &ObjPtr<ErrorObj>) -> bool {
        a.as_header() == b.as_header()
    }

    #[test]
    fn an_error_raised_as_an_object_leaves_the_runtime_as_that_object() {
        let raised = callback_error();
        let e = raised_by_callee(&raised);
        assert_eq!(e.to_string(), "ValueError: deep");
        assert!(same(&error_object(&e), &raised), "handed to C++ as the object itself");
        set_last_error(&e); // a function of the runtime fails with it
        assert!(same(&take_raised().unwrap(), &raised), "and raised to its caller as that object");
    }

    #[test]
    fn context_added_on_the_way_keeps_the_frames_and_the_cause() {
        let raised = callback_error();
        let e = raised_by_callee(&raised).context("in `main` at instruction 2");
        set_last_error(&e);
        let out = take_raised().unwrap();
        assert_eq!(out.text(), "ValueError: in `main` at instruction 2: deep");
        // SAFETY: the object's own backtrace array.
        let backtrace = unsafe { crate::runtime::function::packed::byte_array(&*out.backtrace.get()) };
        assert_eq!(backtrace, b"  File \"cb.py\", line 3, in cb\n", "the callback's frames");
        let cause = out.cause_chain.clone().and_then(|c| c.downcast::<ErrorObj>()).unwrap();
        assert!(same(&cause, &raised), "the raised object is the cause");
        assert_eq!(error_object(&e).text(), out.text());
    }

    #[test]
    fn a_later_error_of_the_runtime_does_not_take_the_object() {
        let raised = callback_error();
        let _ = raised_by_callee(&raised);
        set_last_error(&Error::value("something else"));
        let out = take_raised().unwrap();
        assert!(!same(&out, &raised));
        assert_eq!(out.text(), "ValueError: something else");
        let fresh = Error::value("made here");
        assert_eq!(error_object(&fresh).text(), "ValueError: made here");
    }
}
