//! tvm-ffi's backtraces (`TVMFFIBacktrace`): the frames of the calling thread's native stack,
//! most recent first, one `  File "<file>", line <n>, in <function>` line each, the order and
//! format tvm-ffi's Python package joins with its own frames.
//!
//! Frames are named from the loaded images' dynamic symbol tables (C++ names demangled); no
//! debug information is read, so every native frame reads `File "<unknown>", line 0`. Frames of
//! this library are left out (they carry nothing about the caller's code); frames without a
//! symbol, and the plumbing tvm-ffi also hides (its function-call templates, the C library's
//! start-up), are skipped. Unless asked to cross it, the walk stops at the FFI boundary: this
//! library's function-call entry points, or the Python interpreter's frames (Python reports
//! those itself). `TVM_TRACEBACK_LIMIT` caps the number of frames (512 by default).

/// The default cap on the frames in one backtrace (tvm-ffi's).
const DEFAULT_LIMIT: usize = 512;

/// Symbol prefixes of frames that are left out: call plumbing and runtime start-up.
const HIDDEN: [&str; 6] = [
    "tvm::ffi::Function",
    "tvm::ffi::detail::",
    "TVMFFIBacktrace",
    "TVMFFIErrorSetRaisedFromCStr",
    "__libc_",
    "ffi_call_",
];

/// Symbol prefixes of frames where a walk that does not cross the FFI boundary stops.
const BOUNDARY: [&str; 6] =
    ["TVMFFIFunctionCall", "TVMFuncCall", "slot_tp_call", "object_is_not_callable", "_Py", "PyObject"];

/// A backtrace in tvm-ffi's text format: the caller's own frame (`file`, `line`, `func`) when
/// it names one (then the native frame of that caller is not repeated), followed by the native
/// frames below it.
pub fn backtrace(site: Option<(&str, i32, &str)>, cross_boundary: bool) -> String {
    let mut out = Frames { text: String::new(), count: 0, limit: limit() };
    if let Some((file, line, func)) = site {
        if !hidden(func) {
            out.push(file, line, func);
        }
    }
    native::walk(&mut out, usize::from(site.is_some()), cross_boundary);
    out.text
}

/// The cap from `TVM_TRACEBACK_LIMIT` (a non-negative integer; anything else gives the default).
fn limit() -> usize {
    std::env::var("TVM_TRACEBACK_LIMIT").ok().and_then(|v| v.parse::<u32>().ok()).map_or(DEFAULT_LIMIT, |v| v as usize)
}

fn hidden(symbol: &str) -> bool {
    HIDDEN.iter().any(|p| symbol.starts_with(p))
}

fn at_boundary(symbol: &str) -> bool {
    BOUNDARY.iter().any(|p| symbol.starts_with(p))
}

/// The lines written so far.
struct Frames {
    text: String,
    count: usize,
    limit: usize,
}

impl Frames {
    fn full(&self) -> bool {
        self.count >= self.limit
    }

    fn push(&mut self, file: &str, line: i32, func: &str) {
        if !self.full() {
            self.text.push_str(&format!("  File \"{file}\", line {line}, in {func}\n"));
            self.count += 1;
        }
    }
}

/// What a walk does with one native frame's symbol (`None`: no symbol known).
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Stop,
    Skip,
    Show,
}

/// The step for a frame outside this library.
fn step(symbol: Option<&str>, cross_boundary: bool) -> Step {
    match symbol {
        Some(s) if !cross_boundary && at_boundary(s) => Step::Stop,
        Some(s) if !hidden(s) => Step::Show,
        _ => Step::Skip,
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
mod native {
    use super::{at_boundary, step, Frames, Step};
    use std::ffi::{c_char, c_int, c_void, CStr};

    /// glibc's `RTLD_DL_SYMENT` (`dlfcn.h`): `dladdr1` also gives the symbol's ELF entry.
    const RTLD_DL_SYMENT: c_int = 1;
    /// The unwinder's `_URC_NO_REASON` (go on) and `_URC_NORMAL_STOP` (stop here).
    const URC_NO_REASON: c_int = 0;
    const URC_NORMAL_STOP: c_int = 4;

    type UnwindTrace = extern "C" fn(*mut c_void, *mut c_void) -> c_int;

    extern "C" {
        fn __cxa_demangle(name: *const c_char, out: *mut c_char, len: *mut usize, status: *mut c_int) -> *mut c_char;
        fn _Unwind_Backtrace(trace: UnwindTrace, arg: *mut c_void) -> c_int;
        fn _Unwind_GetIP(context: *mut c_void) -> usize;
    }

    /// Calls `visit` with each return address on this thread's stack, most recent first, until
    /// it returns false (the stack is unwound only as far as that).
    fn each_address(mut visit: impl FnMut(usize) -> bool) {
        extern "C" fn trace(context: *mut c_void, arg: *mut c_void) -> c_int {
            // SAFETY: `arg` is the `&mut dyn FnMut` below, alive for the whole unwind.
            let visit = unsafe { &mut *(arg as *mut &mut dyn FnMut(usize) -> bool) };
            // SAFETY: the unwinder's context for this frame.
            let ip = unsafe { _Unwind_GetIP(context) };
            // No panic may unwind into the unwinder: one ends the walk.
            let go_on = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ip != 0 && visit(ip)));
            if go_on.unwrap_or(false) {
                URC_NO_REASON
            } else {
                URC_NORMAL_STOP
            }
        }
        let mut visit: &mut dyn FnMut(usize) -> bool = &mut visit;
        // SAFETY: `trace` matches the unwinder's callback type; its argument outlives the call.
        unsafe { _Unwind_Backtrace(trace, &mut visit as *mut &mut dyn FnMut(usize) -> bool as *mut c_void) };
    }

    /// The image holding `addr` and the name of the dynamic symbol that covers it, if one does.
    /// The name lives in the image's string table: valid while the image is loaded, as it is
    /// during a walk that found its code on the stack.
    fn symbol_at(addr: *const c_void) -> Option<(usize, Option<&'static CStr>)> {
        // SAFETY: plain data; all-zero is a valid value for dladdr1 to overwrite.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let mut sym: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointers; dladdr1 only reads the loader's tables.
        if unsafe { libc::dladdr1(addr, &mut info, &mut sym, RTLD_DL_SYMENT) } == 0 {
            return None;
        }
        let base = info.dli_fbase as usize;
        let sym = sym as *const libc::Elf64_Sym;
        if info.dli_sname.is_null() || info.dli_saddr.is_null() || sym.is_null() {
            return Some((base, None));
        }
        // SAFETY: dladdr1 points `sym` at the symbol's entry in the image's table.
        let size = unsafe { (*sym).st_size } as usize;
        let start = info.dli_saddr as usize;
        if !(start..start.saturating_add(size)).contains(&(addr as usize)) {
            return Some((base, None));
        }
        // SAFETY: a NUL-terminated name in the image's string table (see above).
        Some((base, Some(unsafe { CStr::from_ptr(info.dli_sname) })))
    }

    /// A C++ name demangled (other names as they are).
    fn demangle(name: &CStr) -> String {
        let mut status: c_int = -1;
        // SAFETY: a NUL-terminated name; the result is NULL or a malloc'ed string we free.
        let out = unsafe { __cxa_demangle(name.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), &mut status) };
        if out.is_null() {
            return name.to_string_lossy().into_owned();
        }
        // SAFETY: a NUL-terminated string from __cxa_demangle, freed once after the copy.
        let text = unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        unsafe { libc::free(out as *mut c_void) };
        if status == 0 {
            text
        } else {
            name.to_string_lossy().into_owned()
        }
    }

    /// The base address of this library's image.
    fn own_base() -> usize {
        static BASE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *BASE.get_or_init(|| symbol_at(super::backtrace as *const c_void).map_or(0, |(base, _)| base))
    }

    /// Appends the frames below this library's, skipping `skip` of them first (the caller that
    /// named its own frame).
    pub(super) fn walk(out: &mut Frames, mut skip: usize, cross_boundary: bool) {
        let own = own_base();
        each_address(|ip| {
            // A return address points after its call; the call itself is one byte earlier.
            let Some((base, name)) = symbol_at(ip.wrapping_sub(1) as *const c_void) else { return true };
            if base == own {
                // This library's entry points are C names: no demangling needed.
                return cross_boundary || !name.and_then(|n| n.to_str().ok()).is_some_and(at_boundary);
            }
            if skip > 0 {
                skip -= 1;
                return true;
            }
            let symbol = name.map(demangle);
            match step(symbol.as_deref(), cross_boundary) {
                Step::Stop => return false,
                Step::Skip => {}
                Step::Show => out.push("<unknown>", 0, symbol.as_deref().unwrap_or_default()),
            }
            !out.full()
        });
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")))]
mod native {
    /// No native frames where the loader cannot name them.
    pub(super) fn walk(_out: &mut super::Frames, _skip: usize, _cross_boundary: bool) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_stop_at_the_boundary_and_hide_plumbing() {
        assert_eq!(step(Some("TVMFFIFunctionCall"), false), Step::Stop);
        assert_eq!(step(Some("_PyEval_EvalFrameDefault"), false), Step::Stop);
        assert_eq!(step(Some("_PyEval_EvalFrameDefault"), true), Step::Show);
        assert_eq!(step(Some("tvm::ffi::detail::FunctionObjImpl<...>::SafeCall"), false), Step::Skip);
        assert_eq!(step(None, false), Step::Skip);
        assert_eq!(step(Some("tvm::ffi::TestApply(tvm::ffi::PackedArgs, tvm::ffi::Any*)"), false), Step::Show);
    }

    #[test]
    fn the_callers_own_frame_comes_first_in_tvm_ffi_format() {
        let text = backtrace(Some(("src/a.cc", 12, "void f()")), false);
        assert!(text.starts_with("  File \"src/a.cc\", line 12, in void f()\n"), "{text}");
        assert!(text.lines().all(|l| l.starts_with("  File \"")), "{text}");
        assert!(!backtrace(None, false).contains("File \"\""), "no empty frame without a site");
    }
}
