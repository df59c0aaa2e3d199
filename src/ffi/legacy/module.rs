//! Modules: loading, imports, function lookup.

use crate::ffi::ptr::{borrow_handle, check_type, out_param};
use crate::runtime::base::error::Result;
use crate::runtime::function::packed::{Module, ModuleObj};
use crate::runtime::object::header::release;
use std::ffi::{c_char, c_int, c_void};

/// A module from a C handle (new reference), checked to be a module.
///
/// # Safety
/// `handle` must be NULL or a live object.
pub(crate) unsafe fn module_arg(handle: *mut c_void, name: &str) -> Result<Module> {
    // SAFETY: NULL or a live object, as this function's contract requires.
    unsafe { borrow_handle::<ModuleObj>(handle, "Module") }.map_err(|e| e.context(format!("argument `{name}`")))
}

/// Load a module from a file through `runtime.module.loadfile_<format>`; `format` NULL or ""
/// means the file's extension. `*out` is an owned handle.
///
/// A shared library is opened with `dlopen`, as TVM does, so a name without '/' is searched for
/// in the library search path (LD_LIBRARY_PATH, run paths, the loader cache, the system
/// directories), not in the current directory: write `./model.so` for a file there (the error
/// says so when a bare name is not found). Before `dlopen`, the file it will open (the path
/// itself, or for a bare name the first match in LD_LIBRARY_PATH) is checked: a directory, a
/// file that is not a shared library ELF file of this machine, or a truncated one (its program
/// headers, segments or section headers reaching past the end of the file) is refused with an
/// error naming the file and what is wrong, instead of faulting inside the loader.
///
/// # Safety
/// `file_name` must be NULL (an error) or a NUL-terminated string, `format` NULL or one; `out` must
/// be NULL (an error) or valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMModLoadFromFile(
    file_name: *const c_char,
    format: *const c_char,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMModLoadFromFile", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: C string arguments (caller contract).
        let file_name = unsafe { c_str!(file_name)? };
        let format = if format.is_null() { "" } else { unsafe { c_str!(format)? } };
        let m = Module::load_from_file(file_name, format)?;
        *out = m.into_legacy();
        Ok(0)
    })
}

/// Make `mod_` import `dep` (it takes its own reference). Cycles are rejected.
///
/// # Safety
/// `mod_` and `dep` must each be NULL (an error) or a live object handle of this runtime (their
/// types are checked).
#[no_mangle]
pub unsafe extern "C" fn TVMModImport(mod_: *mut c_void, dep: *mut c_void) -> c_int {
    ffi_boundary!("TVMModImport", {
        // SAFETY: live handles (caller contract); types checked.
        let (m, d) = unsafe { (module_arg(mod_, "mod")?, module_arg(dep, "dep")?) };
        m.import(&d)?;
        Ok(0)
    })
}

/// Look up a function; with `query_imports` non-zero, imports are searched depth-first.
/// `*out` is an owned handle, or NULL when absent (still success).
///
/// # Safety
/// `mod_` must be NULL (an error) or a live object handle of this runtime (its type is checked);
/// `func_name` must be NULL (an error) or a NUL-terminated string; `out` must be NULL (an error) or
/// valid for writing one handle.
#[no_mangle]
pub unsafe extern "C" fn TVMModGetFunction(
    mod_: *mut c_void,
    func_name: *const c_char,
    query_imports: c_int,
    out: *mut *mut c_void,
) -> c_int {
    ffi_boundary!("TVMModGetFunction", {
        // SAFETY: out-parameters are valid for writes when non-NULL (C contract).
        let out = unsafe { out_param(out, "out")? };
        // SAFETY: live handle and C string (caller contract).
        let m = unsafe { module_arg(mod_, "mod")? };
        let name = unsafe { c_str!(func_name)? };
        let f = m.get_function(name, query_imports != 0)?;
        *out = f.map_or(std::ptr::null_mut(), |f| f.into_legacy());
        Ok(0)
    })
}

/// Release a module handle (NULL is a no-op, as in TVM). Functions taken from it stay valid.
///
/// # Safety
/// `mod_` must be NULL or a live object handle of this runtime (its type is checked) holding one
/// reference that the caller owns and gives up.
#[no_mangle]
pub unsafe extern "C" fn TVMModFree(mod_: *mut c_void) -> c_int {
    ffi_boundary!("TVMModFree", {
        if mod_.is_null() {
            return Ok(0);
        }
        // SAFETY: live handle; type checked before the release of the caller's reference.
        unsafe {
            let header = check_type::<ModuleObj>(mod_, "Module")?;
            release(header);
        }
        Ok(0)
    })
}
