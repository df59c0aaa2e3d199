//! Errors in TVM's `Kind: message` shape and the thread-local last-error slot.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::fmt;
use std::sync::Arc;

/// `n` of `what` in words, for messages: "1 output", "3 outputs".
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A runtime error. `Display` gives `Kind: message`, the shape TVM's frontends parse.
/// Boxed, so that a `Result` costs a pointer beside its value on the paths that succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(Box<Details>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Details {
    text: String,
    /// The exact bytes a callee stored, when they are not valid UTF-8 (kept byte for byte).
    raw: Option<Vec<u8>>,
    /// The error is a frontend (Python) error object's, stored on this thread.
    python: bool,
    /// The object this error was raised as (tvm-ffi's `ffi.Error`, with its backtrace, cause
    /// chain and context), when it came in as one: it goes back out as that object.
    origin: Option<Origin>,
}

/// An error's object, type-erased here (error objects are made above this file). Errors compare
/// by what they say: two with the same text are equal whatever their origin.
#[derive(Clone)]
struct Origin(Arc<dyn Any + Send + Sync>);

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Origin")
    }
}

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Origin {}

// An origin is never changed through the error (only cloned and handed on), so a panic cannot
// leave one half-updated: errors stay as unwind-safe as their texts.
impl std::panic::UnwindSafe for Origin {}
impl std::panic::RefUnwindSafe for Origin {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn with_kind(kind: &str, msg: impl fmt::Display) -> Self {
        Error::from_text(format!("{kind}: {msg}"))
    }
    /// A value was out of its allowed set (bad shape, unknown name, ...).
    pub fn value(msg: impl fmt::Display) -> Self {
        Self::with_kind("ValueError", msg)
    }
    /// An argument had the wrong type code or an object the wrong type.
    pub fn type_error(msg: impl fmt::Display) -> Self {
        Self::with_kind("TypeError", msg)
    }
    /// An index was out of range.
    pub fn index(msg: impl fmt::Display) -> Self {
        Self::with_kind("IndexError", msg)
    }
    /// A name that is not among a table's (a graph's input names). TVM's Python raises
    /// `RuntimeError` there; the Python package's `KeyError` is also one (a `TVMError`).
    pub fn key(msg: impl fmt::Display) -> Self {
        Self::with_kind("KeyError", msg)
    }
    /// A lookup by name failed.
    pub fn attribute(msg: impl fmt::Display) -> Self {
        Self::with_kind("AttributeError", msg)
    }
    /// Something the runtime does not support.
    pub fn unsupported(msg: impl fmt::Display) -> Self {
        Self::with_kind("NotImplementedError", msg)
    }
    /// A failure of the runtime itself (a bug, an allocation failure, ...).
    pub fn internal(msg: impl fmt::Display) -> Self {
        Self::with_kind("InternalError", msg)
    }
    /// An operating-system or file error.
    pub fn io(msg: impl fmt::Display) -> Self {
        Self::with_kind("OSError", msg)
    }
    /// A generic runtime error (`TVMError`).
    pub fn runtime(msg: impl fmt::Display) -> Self {
        Self::with_kind("TVMError", msg)
    }
    fn from_text(text: String) -> Self {
        Error(Box::new(Details { text, raw: None, python: false, origin: None }))
    }
    /// An error raised as `object`, whose `Kind: message` is `text`. The object goes on with
    /// the error, through [`Error::context`] and [`Error::nested`] too (where the text changes,
    /// whoever hands the error out as an object decides what the new text's object keeps).
    pub fn from_object<T: Any + Send + Sync>(text: impl Into<String>, object: T) -> Self {
        let mut e = Error::from_text(text.into());
        e.0.origin = Some(Origin(Arc::new(object)));
        e
    }
    /// `new`, keeping the object this error was raised as.
    fn keep_origin(&self, mut new: Error) -> Error {
        new.0.origin = self.0.origin.clone();
        new
    }
    /// The object this error was raised as, if it was one of type `T`.
    pub fn object<T: Any>(&self) -> Option<&T> {
        self.0.origin.as_ref().and_then(|o| o.0.downcast_ref())
    }
    /// An error whose text is taken as it is (already formatted, e.g. set by a C callback).
    /// Text without a `Kind:` prefix gets `TVMError: ` so frontends can still classify it.
    pub fn raw(text: impl Into<String>) -> Self {
        let text = text.into();
        if has_kind_prefix(&text) {
            Error::from_text(text)
        } else {
            Error::runtime(text)
        }
    }
    /// Prefix the message with context, keeping the kind: `Kind: context: message`.
    pub fn context(self, ctx: impl fmt::Display) -> Self {
        let text = match self.0.text.split_once(": ") {
            Some((kind, msg)) if has_kind_prefix(&self.0.text) => format!("{kind}: {ctx}: {msg}"),
            _ => format!("{ctx}: {}", self.0.text),
        };
        self.keep_origin(Error::from_text(text))
    }
    /// This error under a heading, keeping its kind: `Kind: heading:` then the message on the
    /// next line, each of its lines indented by two spaces (how tvm-ffi nests an error in one
    /// about the value that caused it).
    pub fn nested(self, heading: impl fmt::Display) -> Self {
        let kind = match self.0.text.split_once(": ") {
            Some((kind, _)) if has_kind_prefix(&self.0.text) => kind,
            _ => "TVMError",
        };
        self.keep_origin(Self::with_kind(kind, format!("{heading}:\n  {}", self.detail().replace('\n', "\n  "))))
    }
    pub fn message(&self) -> &str {
        &self.0.text
    }
    /// The message without its `Kind: ` prefix, for embedding in another error.
    pub fn detail(&self) -> &str {
        match self.0.text.split_once(": ") {
            Some((_, rest)) if has_kind_prefix(&self.0.text) => rest,
            _ => &self.0.text,
        }
    }
}

/// Whether `text` starts with an error kind followed by `": "` (e.g. `ValueError: ...`).
/// Kinds end in `Error`, so a kernel's `fused_add: bad shape` is not mistaken for one.
pub(crate) fn has_kind_prefix(text: &str) -> bool {
    match text.split_once(": ") {
        Some((kind, _)) => kind.ends_with("Error") && kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl std::error::Error for Error {}

/// The thread's last error, owned by the thread.
struct LastError {
    message: Option<CString>,
    /// Incremented on every store, so a caller can tell whether a callee set an error.
    generation: u64,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = const {
        RefCell::new(LastError { message: None, generation: 0 })
    };
    static LAST_PYTHON_ERROR: Cell<*mut std::ffi::c_void> = const { Cell::new(std::ptr::null_mut()) };
    /// Copy of `LastError::generation` in a slot with nothing to drop: reading it (done around
    /// every kernel call) is a single thread-local load.
    static LAST_ERROR_GENERATION: Cell<u64> = const { Cell::new(0) };
    /// What the last error was raised as: it stands while its generation is the latest.
    static RAISED: RefCell<Option<Raised>> = const { RefCell::new(None) };
}

/// An error raised as an object: the generation its text got, the object, and the text when it
/// is not the object's own (the runtime's context added).
struct Raised {
    generation: u64,
    origin: Origin,
    text: Option<String>,
}

fn store(c: CString, keep_python: bool) {
    if !keep_python {
        // A new error replaces a stored frontend error object (one slot, as in TVM).
        let old = python::replace(std::ptr::null_mut());
        // SAFETY: `old` is the frontend object stored by TVMAPISetLastPythonError, whose
        // reference the slot owned. As in TVM, only the frontend stores one, on a thread that
        // calls into the runtime holding its interpreter lock, so the hook may run here.
        unsafe { crate::runtime::base::env_capi::dec_ref(old) };
    }
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.message = Some(c);
        e.generation = e.generation.wrapping_add(1);
        LAST_ERROR_GENERATION.with(|g| g.set(e.generation));
    });
}

/// Store `bytes` (any encoding, as given) as this thread's last error.
pub fn set_last_error_bytes(bytes: &[u8]) {
    // Interior NULs cannot cross the C boundary: cut there, as a C string would.
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    store(CString::new(&bytes[..end]).expect("no interior NUL"), false);
}

/// Store `text` as this thread's last error.
pub fn set_last_error_text(text: &str) {
    // Interior NULs cannot cross the C boundary; show them escaped instead of truncating.
    let c = CString::new(text).unwrap_or_else(|_| CString::new(text.replace('\0', "\\0")).expect("NULs were replaced"));
    store(c, false);
}

/// Store `err` as this thread's last error.
pub fn set_last_error(err: &Error) {
    match &err.0.raw {
        Some(bytes) => store(CString::new(bytes.clone()).unwrap_or_default(), err.0.python),
        None => {
            let c = CString::new(err.0.text.as_str())
                .unwrap_or_else(|_| CString::new(err.0.text.replace('\0', "\\0")).expect("NULs were replaced"));
            store(c, err.0.python);
        }
    }
    if let Some(origin) = &err.0.origin {
        let text = Some(err.0.text.clone());
        RAISED.with(|r| {
            *r.borrow_mut() = Some(Raised { generation: last_error_generation(), origin: origin.clone(), text })
        });
    }
}

/// Keep `object` as what this thread's last error was raised as; the caller has just stored
/// that error's text (the object's own). [`take_raised_object`] hands it back while that text
/// is the latest.
pub fn keep_raised_object<T: Any + Send + Sync>(object: T) {
    let origin = Origin(Arc::new(object));
    RAISED.with(|r| *r.borrow_mut() = Some(Raised { generation: last_error_generation(), origin, text: None }));
}

/// Take what this thread's last error was raised as, if that was an object of type `T` and the
/// error is still the latest; with it the error's text when the runtime's code changed it on
/// the way (context added), `None` when the error says what the object says.
pub fn take_raised_object<T: Any + Clone>() -> Option<(T, Option<String>)> {
    let raised = RAISED.with(|r| r.borrow_mut().take())?;
    if raised.generation != last_error_generation() {
        return None;
    }
    Some((raised.origin.0.downcast_ref::<T>()?.clone(), raised.text))
}

/// What the latest error was raised as, if it was raised as an object.
fn latest_origin() -> Option<Origin> {
    let latest = |r: &Raised| (r.generation == last_error_generation()).then(|| r.origin.clone());
    RAISED.with(|r| r.borrow().as_ref().and_then(latest))
}

/// Pointer to this thread's last error message, or NULL if none was ever set.
/// Valid until the next error is stored on this thread.
pub fn last_error_ptr() -> *const std::ffi::c_char {
    LAST_ERROR.with(|e| e.borrow().message.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()))
}

/// A copy of this thread's last error message.
pub fn last_error_message() -> Option<String> {
    LAST_ERROR.with(|e| e.borrow().message.as_deref().map(|m: &CStr| m.to_string_lossy().into_owned()))
}

/// Counter of stores on this thread; compare before/after a callback.
#[inline]
pub fn last_error_generation() -> u64 {
    LAST_ERROR_GENERATION.with(|g| g.get())
}

/// The error a callee left on this thread after returning a failure code, or `fallback`
/// if it set none since `generation_before`.
pub fn error_from_callee(generation_before: u64, fallback: impl FnOnce() -> Error) -> Error {
    if last_error_generation() != generation_before {
        let stored = LAST_ERROR.with(|e| e.borrow().message.as_ref().map(|m| m.as_bytes().to_vec()));
        if let Some(bytes) = stored {
            let mut e = match String::from_utf8(bytes) {
                Ok(text) => Error::raw(text),
                Err(bad) => {
                    let mut e = Error::raw(String::from_utf8_lossy(bad.as_bytes()).into_owned());
                    e.0.raw = Some(bad.into_bytes());
                    e
                }
            };
            e.0.python = !python::get().is_null();
            e.0.origin = latest_origin();
            return e;
        }
    }
    fallback()
}

/// Frontend error objects (`TVMAPISetLastPythonError`): stored opaque, one per thread.
pub mod python {
    use super::LAST_PYTHON_ERROR;
    use std::ffi::c_void;

    pub fn replace(obj: *mut c_void) -> *mut c_void {
        LAST_PYTHON_ERROR.with(|c| c.replace(obj))
    }
    pub fn get() -> *mut c_void {
        LAST_PYTHON_ERROR.with(|c| c.get())
    }
}

/// The text a panic carries (`panic!` with a literal or a formatted message); other payloads
/// give "unknown panic payload".
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    match payload.downcast_ref::<&str>() {
        Some(s) => s,
        None => payload.downcast_ref::<String>().map_or("unknown panic payload", String::as_str),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_errors_keep_their_kind_and_indent_their_lines() {
        let e = Error::value("expected int\n  got None").nested("T.__ffi_init__() field 'x'");
        assert_eq!(e.message(), "ValueError: T.__ffi_init__() field 'x':\n  expected int\n    got None");
        assert_eq!(Error::raw("plain").nested("h").message(), "TVMError: h:\n  plain");
    }

    #[test]
    fn panic_messages_of_each_payload() {
        let text = |f: fn()| panic_message(&*std::panic::catch_unwind(f).unwrap_err()).to_string();
        let got = [text(|| panic!("literal")), text(|| panic!("formatted {}", 7)), text(|| std::panic::panic_any(7u8))];
        assert_eq!(got, ["literal", "formatted 7", "unknown panic payload"]);
    }

    #[test]
    fn kinds_and_context() {
        let e = Error::value("bad shape").context("set_input");
        assert_eq!(e.message(), "ValueError: set_input: bad shape");
        assert_eq!(Error::raw("plain text").message(), "TVMError: plain text");
        assert_eq!(Error::raw("TypeError: x").message(), "TypeError: x");
        assert_eq!(Error::raw("a b: c").message(), "TVMError: a b: c");
        assert_eq!(Error::raw("fused_add: bad").message(), "TVMError: fused_add: bad");
    }

    #[test]
    fn last_error_is_thread_local() {
        set_last_error(&Error::value("here"));
        let g = last_error_generation();
        std::thread::spawn(|| assert!(last_error_ptr().is_null())).join().unwrap();
        assert_eq!(last_error_message().as_deref(), Some("ValueError: here"));
        set_last_error_text("with\0nul");
        assert_eq!(last_error_message().as_deref(), Some("with\\0nul"));
        assert_ne!(g, last_error_generation());
    }
}
