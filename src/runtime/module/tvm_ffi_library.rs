//! Libraries written by the tvm-ffi releases of TVM (apache-tvm 0.25 and later): the modules
//! packed in `__tvm_ffi__library_bin`, and kernels exported as `__tvm_ffi_<name>` with the
//! tvm-ffi calling convention, called as ordinary packed functions.
//!
//! Library bin layout: `<nbytes: u64> <indptr: vec<u64>> <children: vec<u64>>`, then per module
//! `<kind: str>` and, except for `_lib` (the library itself), `<bytes: str>`, handed to the
//! loader global `ffi.Module.load_from_bytes.<kind>` where one is registered, else to the binary
//! loader registered for `kind` (the same registry `__tvm_dev_mblob` uses).

use crate::abi::{ffi_type_index as ti, type_code as tc, TVMFFIAny, TVMFFIByteArray, TVMFFISafeCallType};
use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{error_from_callee, last_error_generation, Error, Result};
use crate::runtime::function::packed::{Args, Module, PackedFunc, Value};
use crate::runtime::function::registry;
use crate::runtime::module::blob::{binary_loader, link_import_tree};
use crate::runtime::object::type_table::type_index;
use crate::runtime::tensor::ndarray::NDArray;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};

/// The symbol holding the packed modules.
pub const LIBRARY_BIN: &str = "__tvm_ffi__library_bin";
/// The `void*` slot the library module's address goes into.
pub const LIBRARY_CTX: &str = "__tvm_ffi__library_ctx";
/// What a kernel `<name>` is exported as.
pub const KERNEL_PREFIX: &str = "__tvm_ffi_";

/// Rebuild the module tree of a library bin (`data` starts at the u64 length); `lib` is the
/// library module. Returns the root module.
pub fn load_library_bin(data: &[u8], lib: Module) -> Result<Module> {
    let mut outer = Reader::new(data, "tvm-ffi library bin");
    let n = outer.u64("library bin length")?;
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= outer.remaining())
        .ok_or_else(|| outer.error(format!("length {n} exceeds the {} bytes available", outer.remaining())))?;
    let mut r = Reader::new(outer.bytes(n, "library bin payload")?, "tvm-ffi library bin");
    let indptr = r.u64s("import tree indptr")?;
    let children = r.u64s("import tree child indices")?;
    let count = indptr.len().checked_sub(1).ok_or_else(|| r.error("empty import tree indptr"))?;
    // Each module is at least a kind's length.
    if count > r.remaining() / 8 {
        return Err(r.error(format!("{count} modules cannot fit in {} bytes", r.remaining())));
    }
    let mut modules = Vec::with_capacity(count);
    for i in 0..count {
        modules.push(read_module(&mut r, i, &lib)?);
    }
    link_import_tree(modules, (indptr, children))
}

fn read_module(r: &mut Reader<'_>, i: usize, lib: &Module) -> Result<Module> {
    let kind = r.string(&format!("kind of module {i}"))?;
    if kind == "_lib" {
        return Ok(lib.clone());
    }
    let field = format!("bytes of module {i} (`{kind}`)");
    let len = r.count(&field, 1)?;
    let bytes = r.bytes(len, &field)?;
    let context = |e: Error| e.context(format!("loading module {i} (`{kind}`)"));
    // As tvm-ffi's library: a loader registered as `ffi.Module.load_from_bytes.<kind>` (apache-tvm's
    // runtime registers its own, e.g. for `relax.VMExecutable`) decodes the module; the
    // runtime's own decoders serve the kinds nobody registered so.
    if let Some(loader) = registry::get(&format!("{LOAD_FROM_BYTES}{kind}")) {
        return loader.call(&[Value::Bytes(bytes.to_vec())]).and_then(Value::into_module).map_err(context);
    }
    let loader = binary_loader(&kind)?;
    loader(&mut Reader::new(bytes, "module bytes")).map_err(context)
}

/// The prefix of tvm-ffi's loader globals for modules in a library bin.
const LOAD_FROM_BYTES: &str = "ffi.Module.load_from_bytes.";

/// The runtime exports tvm-ffi kernels import without naming the library that provides them.
const KERNEL_IMPORTS: [&std::ffi::CStr; 2] = [c"TVMFFIErrorSetRaisedFromCStrParts", c"TVMFFIErrorSetRaisedFromCStr"];

/// Make the functions tvm-ffi kernels import reachable from them, or say why they cannot be:
/// called before any kernel of a tvm-ffi library can run (when its library bin is read, and
/// when one of its `__tvm_ffi_<name>` kernels is looked up, since libraries of plain TIR carry no
/// bin). `what` names the library or kernel in the error.
///
/// The kernels find their imports only in the global scope, which this library is not part of
/// when it was opened RTLD_LOCAL (Python's ctypes default, most dlopen users). Re-opening our own
/// image with RTLD_NOLOAD | RTLD_GLOBAL promotes it without loading anything; kernels bind
/// lazily, so promoting before the first call is enough. A program that links the runtime
/// statically exports the symbols itself only when linked with `-rdynamic`; without, the first
/// kernel error would end the process with "symbol lookup error", so such kernels are refused.
pub fn expose_runtime_exports(what: &str) -> Result<()> {
    static VISIBLE: AtomicBool = AtomicBool::new(false);
    if VISIBLE.load(Ordering::Acquire) {
        return Ok(());
    }
    make_own_symbols_global();
    for name in KERNEL_IMPORTS {
        // SAFETY: a lookup in the global scope by a NUL-terminated name.
        if unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }.is_null() {
            return Err(Error::unsupported(format!(
                "cannot use {what}: its kernels (built by a tvm-ffi release of TVM) call `{}`, which this \
                 process does not export globally; link the program with -rdynamic, or load libtvm_runtime.so \
                 as a shared library",
                name.to_string_lossy()
            )));
        }
    }
    VISIBLE.store(true, Ordering::Release);
    Ok(())
}

/// Promote the runtime's symbols to the global scope before opening a library that imports one
/// of them by name (`imports`: its undefined dynamic symbols). TVM's C host code calls
/// `TVMBackendAllocWorkspace`, `TVMAPISetLastError`, ... directly rather than through context
/// pointers; opened with RTLD_LOCAL, the runtime would not satisfy those calls and the first
/// one would end the process. Libraries that import nothing of ours leave the scope as it is.
pub fn expose_for_imports(imports: &[String]) {
    // Every export of the runtime is named `TVM*` (tests/exports.rs keeps it so): other imports
    // (libc's, ...) are not looked up at all, and dladdr, a linear scan, runs only for these.
    let ours = |name: &&String| {
        let (Ok(c), Some(h)) = (std::ffi::CString::new(name.as_str()), own_image()) else { return false };
        // SAFETY: a lookup by a NUL-terminated name in a handle of this image (kept open).
        let addr = unsafe { libc::dlsym(h as *mut c_void, c.as_ptr()) };
        // The lookup also searches our dependencies: keep what this image defines.
        !addr.is_null()
            && image_of(addr).map(|i| i.dli_fbase) == image_of(own_file_name as *const c_void).map(|i| i.dli_fbase)
    };
    if imports.iter().filter(|n| n.starts_with("TVM")).any(|n| ours(&n)) {
        make_own_symbols_global();
    }
}

/// A handle of the image this code is in (the shared library, or the program that links the
/// runtime statically), opened once with RTLD_NOLOAD and kept.
fn own_image() -> Option<usize> {
    static HANDLE: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *HANDLE.get_or_init(|| {
        // SAFETY: RTLD_NOLOAD maps nothing: it returns a reference to an image already mapped
        // (ours), kept for the life of the process.
        let h = unsafe { libc::dlopen(own_file_name()?, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        (!h.is_null()).then_some(h as usize)
    })
}

/// Promote this library's symbols to the global scope (once; see [`expose_runtime_exports`]).
fn make_own_symbols_global() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Some(name) = own_file_name() else { return };
        // SAFETY: RTLD_NOLOAD only changes the flags of an image already mapped (ours); the
        // extra reference it takes is dropped at once, the promotion stays.
        unsafe {
            let h = libc::dlopen(name, libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL);
            if !h.is_null() {
                libc::dlclose(h);
            }
        }
    });
}

/// The file name the loader knows this image by (a string the loader owns for the image's life).
fn own_file_name() -> Option<*const libc::c_char> {
    image_of(own_file_name as *const c_void).map(|i| i.dli_fname).filter(|n| !n.is_null())
}

/// What the loader knows of the image that holds `addr`.
fn image_of(addr: *const c_void) -> Option<libc::Dl_info> {
    // SAFETY: Dl_info is plain data; all-zero is a valid value for dladdr to overwrite.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; dladdr only reads the loader's tables.
    (unsafe { libc::dladdr(addr, &mut info) } != 0).then_some(info)
}

/// Wrap the tvm-ffi kernel `f` as a packed function; `keep_alive` owns its code. tvm-ffi callers
/// call the kernel itself; TVM 0.18 and Rust callers' arguments are converted here.
pub fn wrap_ffi_kernel(f: TVMFFISafeCallType, keep_alive: Module) -> PackedFunc {
    PackedFunc::from_kernel(f, move |args, ret| {
        let _owner = &keep_alive;
        let mut conv = Converted::default();
        let mut inline = [TVMFFIAny::NONE; INLINE_ARGS];
        let mut spilled = Vec::new();
        let values = if args.len() <= INLINE_ARGS {
            &mut inline[..args.len()]
        } else {
            spilled.resize(args.len(), TVMFFIAny::NONE);
            &mut spilled[..]
        };
        for (i, v) in values.iter_mut().enumerate() {
            *v = conv.push(&args, i)?;
        }
        let n = i32::try_from(values.len()).map_err(|_| Error::value("too many arguments"))?;
        let mut result = TVMFFIAny::NONE;
        let generation = last_error_generation();
        // SAFETY: `values` (and the strings and byte arrays they point into, held by `conv`)
        // live across the call; the kernel follows the tvm-ffi convention and writes only
        // `result`, which is ours.
        let status = unsafe { f(std::ptr::null_mut(), values.as_ptr(), n, &mut result) };
        if status != 0 {
            return Err(error_from_callee(generation, || {
                Error::runtime(format!("kernel returned {status} without raising an error"))
            }));
        }
        // SAFETY: the kernel's owned result.
        *ret = unsafe { Value::adopt_any(result)? };
        Ok(())
    })
}

/// Arguments a kernel call converts on the stack (more spill to the heap).
const INLINE_ARGS: usize = 16;

/// Storage the converted arguments point into, alive for one call.
#[derive(Default)]
struct Converted {
    strings: Vec<CString>,
    bytes: Vec<(Box<TVMFFIByteArray>, Box<[u8]>)>,
    /// Owned object values, released after the call.
    objects: Vec<TVMFFIAny>,
}

impl Drop for Converted {
    fn drop(&mut self) {
        for a in &self.objects {
            // SAFETY: each was made owned by `into_any` in `push` and is released once here.
            unsafe { crate::runtime::object::header::release_any(a) };
        }
    }
}

impl Converted {
    fn push(&mut self, args: &Args<'_>, i: usize) -> Result<TVMFFIAny> {
        let (code, value) = (args.codes()[i], args.values()[i]);
        // The common kernel arguments, converted without taking a reference or allocating.
        match code {
            tc::INT => {
                // SAFETY: the type code says the union holds an int.
                return Ok(TVMFFIAny::int(ti::INT, unsafe { value.v_int64 }));
            }
            tc::NDARRAY_HANDLE if !unsafe { value.v_handle }.is_null() => {
                // SAFETY: the type code says the union holds an NDArray handle, checked by
                // `header_of_handle` (as `to_value` does) before it is passed on.
                let p = unsafe { value.v_handle } as *mut crate::abi::DLTensor;
                // A tensor object, as tvm-ffi's library passes one: kernels compiled by TVM take
                // it or a bare `DLTensor*`; C++ functions typed `ffi::Tensor` take only it. The
                // caller's reference keeps it alive for the call.
                let header = unsafe { NDArray::header_of_handle(p) }?;
                return Ok(TVMFFIAny::ptr(type_index::NDARRAY as i32, header as *const c_void));
            }
            _ => {}
        }
        Ok(match args.to_value(i)? {
            Value::Null => TVMFFIAny::NONE,
            Value::Int(v) => TVMFFIAny::int(ti::INT, v),
            Value::Bool(b) => TVMFFIAny::int(ti::BOOL, b as i64),
            Value::Float(v) => TVMFFIAny::float(v),
            Value::Handle(p) => TVMFFIAny::ptr(ti::OPAQUE_PTR, p),
            Value::DataType(t) => TVMFFIAny::pod(ti::DATA_TYPE, t),
            Value::Device(d) => TVMFFIAny::pod(ti::DEVICE, d),
            Value::DLTensor(t) => TVMFFIAny::ptr(ti::DLTENSOR_PTR, t.as_ptr() as *const c_void),
            Value::Str(s) => self.string(CString::new(s).map_err(|_| arg_error(i, "a string with a NUL byte"))?),
            Value::RawStr(s) => self.string(s),
            Value::Bytes(b) => self.byte_array(b),
            // Objects (tensors, functions, modules, containers, ...) as tvm-ffi values, held by
            // `self` until the call returns.
            object => {
                let any = object.into_any();
                self.objects.push(any);
                any
            }
        })
    }

    fn string(&mut self, s: CString) -> TVMFFIAny {
        let any = TVMFFIAny::ptr(ti::RAW_STR, s.as_ptr() as *const c_void);
        self.strings.push(s);
        any
    }

    fn byte_array(&mut self, b: Vec<u8>) -> TVMFFIAny {
        // The byte array and the bytes it points at are boxed: neither moves while `self` grows.
        let data: Box<[u8]> = b.into_boxed_slice();
        let arr = Box::new(TVMFFIByteArray { data: data.as_ptr() as *const c_char, size: data.len() });
        let any = TVMFFIAny::ptr(ti::BYTE_ARRAY_PTR, &*arr as *const TVMFFIByteArray as *const c_void);
        self.bytes.push((arr, data));
        any
    }
}

fn arg_error(i: usize, what: &str) -> Error {
    Error::type_error(format!("argument {i}: a {what} cannot be passed to a tvm-ffi kernel"))
}
