//! Errors: the backend's own ([`Failure`], a Triton error code and a message), Triton's turned
//! into ours ([`check`]), and the panic boundary every exported function runs inside
//! ([`boundary`]): what leaves the library is a `TRITONSERVER_Error*`, never an unwinding panic.

use crate::sys::{self, code, Api};
use std::ffi::CString;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An error with the code Triton answers it with (INVALID_ARG is HTTP 400 / gRPC INVALID_ARGUMENT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u32,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Failure>;

impl Failure {
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure { code: code::INVALID_ARG, message: message.into() }
    }
    pub fn internal(message: impl Into<String>) -> Failure {
        Failure { code: code::INTERNAL, message: message.into() }
    }
    pub fn unsupported(message: impl Into<String>) -> Failure {
        Failure { code: code::UNSUPPORTED, message: message.into() }
    }
    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure { code: code::NOT_FOUND, message: message.into() }
    }

    /// The same error with `what` in front of its message.
    pub fn context(self, what: impl fmt::Display) -> Failure {
        Failure { code: self.code, message: format!("{what}: {}", self.message) }
    }

    /// A new Triton error object (the caller, or Triton, owns it).
    pub fn to_triton(&self, api: &Api) -> sys::Error {
        let text = CString::new(self.message.replace('\0', " ")).expect("NULs were replaced");
        // SAFETY: `text` is NUL-terminated; Triton copies it into the error it returns.
        unsafe { (api.TRITONSERVER_ErrorNew)(self.code, text.as_ptr()) }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The runtime's errors are the model's: a failing kernel, a bad file. Its message says which.
impl From<tvm_runtime::runtime::base::error::Error> for Failure {
    fn from(e: tvm_runtime::runtime::base::error::Error) -> Failure {
        Failure::internal(e.to_string())
    }
}

/// Triton's answer to one of its calls, as ours (its error object deleted).
pub fn check(api: &Api, err: sys::Error) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: `err` is a live error object Triton returned to us; we own it and delete it once,
    // after copying its message.
    let failure = unsafe {
        let message = sys::borrowed_str((api.TRITONSERVER_ErrorMessage)(err)).to_string();
        let code = (api.TRITONSERVER_ErrorCode)(err);
        (api.TRITONSERVER_ErrorDelete)(err);
        Failure { code, message }
    };
    Err(failure)
}

/// Run an exported function's body: its error, or a panic inside it, becomes a Triton error.
/// Without Triton's functions (the library loaded by something else) there is no way to answer,
/// so the process stops with the reason.
pub fn boundary(name: &str, body: impl FnOnce(&'static Api) -> Result<()>) -> sys::Error {
    let api = match Api::get() {
        Ok(api) => api,
        Err(why) => {
            eprintln!("libtriton_tvmrt: {name}: {why}");
            std::process::abort();
        }
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(api)));
    let failure = match outcome {
        Ok(Ok(())) => return std::ptr::null_mut(),
        Ok(Err(f)) => f,
        Err(panic) => Failure::internal(format!("{name}: internal error (a panic): {}", panic_text(&panic))),
    };
    failure.to_triton(api)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "no message"
    }
}

/// A message in the server's log.
pub fn log(api: &Api, level: u32, message: &str) {
    let text = CString::new(message.replace('\0', " ")).expect("NULs were replaced");
    // SAFETY: both strings are NUL-terminated and live for the call; the file name is static.
    let err = unsafe { (api.TRITONSERVER_LogMessage)(level, c"tvmrt".as_ptr(), 0, text.as_ptr()) };
    let _ = check(api, err);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_code() {
        let f = Failure::invalid("shape [2, 3]").context("input 'x'");
        assert_eq!(f, Failure { code: code::INVALID_ARG, message: "input 'x': shape [2, 3]".into() });
    }

    #[test]
    fn panic_text_reads_both_kinds() {
        let p = catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
        assert_eq!(panic_text(&p), "boom 1");
        let p = catch_unwind(|| std::panic::panic_any(5u8)).unwrap_err();
        assert_eq!(panic_text(&p), "no message");
    }
}
