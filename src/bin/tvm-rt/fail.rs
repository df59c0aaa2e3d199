//! Why a command failed, and the exit code that tells a script (listed in `tvm-rt --help`).

use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;
use tvm_runtime::runtime::base::error::{panic_message, Error};

/// A failed command: its message and exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

/// An output differs from the expected one (`run --compare`).
pub const MISMATCH: u8 = 1;
/// Bad arguments or input files.
pub const USAGE: u8 = 2;
/// The runtime failed.
pub const RUNTIME: u8 = 3;

impl Failure {
    pub fn usage(message: impl Display) -> Failure {
        Failure { code: USAGE, message: message.to_string() }
    }

    pub fn runtime(message: impl Display) -> Failure {
        Failure { code: RUNTIME, message: message.to_string() }
    }

    pub fn mismatch(message: impl Display) -> Failure {
        Failure { code: MISMATCH, message: message.to_string() }
    }

    /// A problem with the file at `path`.
    pub fn file(path: &Path, problem: impl Display) -> Failure {
        Failure::usage(format!("{}: {problem}", path.display()))
    }

    /// Print the message and give the exit code.
    pub fn report(self) -> ExitCode {
        eprintln!("tvm-rt: error: {}", self.message);
        ExitCode::from(self.code)
    }
}

/// Runtime errors from running a model (loading errors are mapped to [`USAGE`] where they
/// happen, naming the file).
impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::runtime(e)
    }
}

/// Turn errors into usage failures about one file.
pub trait FileContext<T> {
    fn in_file(self, path: &Path) -> Result<T, Failure>;
}

impl<T, E: Display> FileContext<T> for Result<T, E> {
    fn in_file(self, path: &Path) -> Result<T, Failure> {
        self.map_err(|e| Failure::file(path, e))
    }
}

/// Panics print one line, no backtrace: the user sees a message, not the program's insides.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let what = panic_message(info.payload());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("tvm-rt: panic{place}: {what}");
    }));
}
