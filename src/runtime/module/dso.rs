//! Loading compiled libraries (`runtime.module.loadfile_so`): dlopen (lazy, local), fill the
//! context pointers, rebuild the modules packed in `__tvm_dev_mblob`, point `__tvm_module_ctx`
//! at the library module.
//!
//! One library module exists per mapped image: `dlopen` of the same file returns the same
//! image with one `__tvm_module_ctx`, so a second load reuses the live library module instead of
//! re-pointing the context at a module that may die first.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::Module;
use crate::runtime::module::blob::{blob_bytes, load_import_tree};
use crate::runtime::module::elf;
use crate::runtime::module::library::{init_library_context, LibraryModule, SymbolSource};
use crate::runtime::module::tvm_ffi_library;
use crate::runtime::object::header::{self, ObjPtr, ObjectHeader};
use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::Arc;

/// A dlopen'd library; closed when the last module or function using it is released.
pub struct DsoLibrary {
    /// Keeps the library mapped (closed on drop); symbols are read through `image`.
    _lib: Library,
    /// The dlopen handle, identifying the mapped image.
    image: usize,
    /// The names the library defines, read from its file; `None` where its section headers
    /// could not tell. A name not among them is not looked up: loading probes for many
    /// optional symbols, and a miss walks every library the image depends on.
    defined: Option<HashSet<String>>,
}

impl SymbolSource for DsoLibrary {
    fn symbol(&self, name: &str) -> Option<*mut c_void> {
        if self.defined.as_ref().is_some_and(|d| !d.contains(name)) {
            return None;
        }
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: `image` is this library's live dlopen handle; we only read the symbol's address
        // (interpreting it is the caller's business). Plain dlsym: a miss is common here (probing
        // for optional symbols), and libloading would format dlerror's message for each one.
        let addr = unsafe { libc::dlsym(self.image as *mut c_void, name.as_ptr()) };
        (!addr.is_null()).then_some(addr)
    }
    fn function(&self, name: &str) -> Option<*mut c_void> {
        let addr = self.symbol(name)?;
        is_own_function(self.image as *mut c_void, addr).then_some(addr)
    }
}

/// Whether `addr` is a function (ELF type FUNC or IFUNC) defined in the image opened as
/// `handle`: a graph naming a data symbol, or a libc function reachable through the library's
/// dependencies, must not be called as a kernel.
fn is_own_function(handle: *mut c_void, addr: *mut c_void) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const RTLD_DL_SYMENT: libc::c_int = 1;
        const RTLD_DL_LINKMAP: libc::c_int = 2;
        const STT_FUNC: u8 = 2;
        const STT_GNU_IFUNC: u8 = 10;
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let mut sym: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointers; `addr` was returned by dlsym.
        if unsafe { libc::dladdr1(addr, &mut info, &mut sym, RTLD_DL_SYMENT) } == 0 || sym.is_null() {
            return false;
        }
        // SAFETY: with RTLD_DL_SYMENT, `sym` points to the ElfW(Sym) entry of the symbol.
        let kind = unsafe { (*(sym as *const libc::Elf64_Sym)).st_info } & 0xf;
        if kind != STT_FUNC && kind != STT_GNU_IFUNC {
            return false;
        }
        let mut owner: *mut c_void = std::ptr::null_mut();
        let mut mine: *mut c_void = std::ptr::null_mut();
        // SAFETY: valid out-pointers; `handle` is a live dlopen handle.
        unsafe {
            if libc::dladdr1(addr, &mut info, &mut owner, RTLD_DL_LINKMAP) == 0
                || libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, &mut mine as *mut *mut c_void as *mut c_void) != 0
            {
                return false;
            }
        }
        !owner.is_null() && owner == mine
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (handle, addr);
        true
    }
}

impl Drop for DsoLibrary {
    fn drop(&mut self) {
        let mut live = LIVE_IMAGES.lock();
        if live.get(&self.image).is_some_and(|e| e.source == self as *const DsoLibrary as usize) {
            live.remove(&self.image);
        }
    }
}

/// The library module currently bound to each mapped image (not owning: see `try_retain`).
struct LiveImage {
    module: usize,
    source: usize,
}

static LIVE_IMAGES: Lazy<Mutex<HashMap<usize, LiveImage>>> = Lazy::new(Default::default);

/// A new reference to `header` if its count is still above zero (the object is not dying).
fn try_retain(header: *mut ObjectHeader) -> Option<Module> {
    // SAFETY: entries of LIVE_IMAGES are removed (under the same lock held by our caller) before
    // the module's memory is freed, so the header is readable here; a reference taken is ours.
    unsafe { header::try_retain(header).then(|| ObjPtr::from_raw(header)) }
}

/// The file `dlopen(path)` opens and its metadata: `path` itself when it has a '/', else the
/// first regular file of that name in a directory of `LD_LIBRARY_PATH` (an empty entry is the
/// current directory, as for the loader). `None` when there is no such file: dlopen then
/// reports a missing file itself, or finds the name where the loader looks next (the
/// executable's and libraries' run paths, the loader cache, the system directories), which
/// holds installed libraries and is not checked.
fn file_dlopen_opens(path: &str) -> Option<(PathBuf, std::fs::Metadata)> {
    if path.contains('/') {
        return std::fs::metadata(path).ok().map(|m| (PathBuf::from(path), m));
    }
    let dirs = std::env::var_os("LD_LIBRARY_PATH")?;
    std::env::split_paths(&dirs).find_map(|dir| {
        let file = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir }.join(path);
        std::fs::metadata(&file).ok().filter(|m| m.is_file()).map(|m| (file, m))
    })
}

/// Refuse a library `dlopen` could not map safely: the loader trusts the file, and a truncated
/// library faults inside it (SIGBUS) instead of failing. The ELF header and tables of the file
/// dlopen will open are checked first ([`elf::check`]); a directory or a device is refused too.
/// Returns the library's dynamic symbols (`None` where they cannot be read).
fn check_library_file(path: &str) -> Result<Option<elf::DynamicSymbols>> {
    if !cfg!(all(target_os = "linux", target_pointer_width = "64")) {
        return Ok(None);
    }
    let Some((file, meta)) = file_dlopen_opens(path) else { return Ok(None) };
    let found = if file.as_os_str() == path { String::new() } else { format!(" (found as {})", file.display()) };
    let fail = |what: &dyn std::fmt::Display| Error::value(format!("cannot load library `{path}`{found}: {what}"));
    if meta.is_dir() {
        return Err(fail(&"is a directory, not a shared library"));
    }
    if !meta.is_file() {
        return Err(fail(&"is not a regular file"));
    }
    let file =
        std::fs::File::open(&file).map_err(|e| Error::io(format!("cannot load library `{path}`{found}: {e}")))?;
    let bytes = elf::FileBytes { file, len: meta.len() };
    elf::check(&bytes, elf::Expected::host()).map_err(|e| fail(&e))?;
    // The loader reads no section headers: tables it would not need are not a reason to refuse.
    Ok(elf::dynamic_symbols(&bytes, elf::Expected::host()).unwrap_or_default())
}

/// `runtime.module.loadfile_so`: load a compiled library and the modules packed in it.
pub fn load_so(path: &str) -> Result<Module> {
    let functions = crate::runtime::module::library::context_functions()?;
    let symbols = check_library_file(path)?;
    tvm_ffi_library::expose_for_imports(symbols.as_ref().map_or(&[][..], |s| &s.imports));
    let defined = symbols.map(|s| s.defined);
    // SAFETY: loading a library runs its initializers; that is what the caller asked for.
    let lib = unsafe { Library::open(Some(path), RTLD_LAZY | RTLD_LOCAL) }.map_err(|e| {
        let reason = std::error::Error::source(&e).map(|s| format!(": {s}")).unwrap_or_default();
        // dlopen looks a name without '/' up in the library search path, not in the current
        // directory; say so, since `model.so` for a file here is the usual slip.
        let hint = if path.contains('/') {
            String::new()
        } else {
            format!(
                " (a file name without '/' is searched for in the library search path, as dlopen does: \
                 use ./{path} or an absolute path)"
            )
        };
        Error::io(format!("cannot load library `{path}`: {e}{reason}{hint}"))
    })?;
    let (lib, image) = lib_handle(lib);
    let lib_module = {
        let mut live = LIVE_IMAGES.lock();
        match live.get(&image).and_then(|e| try_retain(e.module as *mut ObjectHeader)) {
            // Already loaded: `lib` (one more dlopen reference) is closed on drop here.
            Some(m) => m,
            None => {
                let source = Arc::new(DsoLibrary { _lib: lib, image, defined });
                let module = Module::from_node(LibraryModule::new(source.clone()));
                init_library_context(&*source, &module, functions);
                live.insert(
                    image,
                    LiveImage { module: module.as_header() as usize, source: Arc::as_ptr(&source) as usize },
                );
                module
            }
        }
    };
    let symbols = lib_module.node().as_any().downcast_ref::<LibraryModule>().expect("library module").symbols().clone();
    if let Some(addr) = symbols.symbol(tvm_ffi_library::LIBRARY_BIN) {
        tvm_ffi_library::expose_runtime_exports(&format!("`{path}`"))?;
        let bin = blob_bytes(addr)?;
        let root =
            tvm_ffi_library::load_library_bin(bin, lib_module).map_err(|e| e.context(format!("loading `{path}`")))?;
        release_pages(bin);
        return Ok(root);
    }
    match symbols.symbol("__tvm_dev_mblob") {
        Some(addr) => {
            let blob = blob_bytes(addr)?;
            let root = load_import_tree(blob, lib_module).map_err(|e| e.context(format!("loading `{path}`")))?;
            release_pages(blob);
            Ok(root)
        }
        None => Ok(lib_module),
    }
}

/// Tell the kernel the pages wholly inside `bytes`, a packed blob just parsed, are not needed:
/// the modules built from it hold their own copies (the weights among them), and a resident
/// blob would count every weight twice. Those pages belong to the library's file mapping and
/// are never written, so this only drops them from memory: a later read (loading the library
/// again) faults them back in from the file, unchanged.
fn release_pages(bytes: &[u8]) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
    let start = (bytes.as_ptr() as usize).div_ceil(page) * page;
    let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
    if end > start {
        // SAFETY: the range is whole pages of the mapped blob; MADV_DONTNEED on clean pages of a
        // file mapping discards nothing but residency (their content comes back from the file).
        unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_DONTNEED) };
    }
}

/// The dlopen handle: stable while the image stays mapped; we only compare it.
fn lib_handle(lib: Library) -> (Library, usize) {
    let raw = lib.into_raw();
    // SAFETY: `raw` came from `into_raw` just above; ownership returns to the new value.
    (unsafe { Library::from_raw(raw) }, raw as usize)
}
