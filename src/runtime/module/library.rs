//! Library modules: kernels found by symbol name in a compiled library, called with TVM's
//! backend calling convention, plus the process-wide system library.
//!
//! A [`SymbolSource`] abstracts where symbols come from (the system-library table now; a
//! dlopen'd `.so` in the loader), so symbol lookup, context-pointer setup and kernel wrapping are
//! shared.

use crate::abi::{type_code as tc, TVMBackendPackedCFunc, TVMFFISafeCallType, TVMValue};
use crate::runtime::base::error::{error_from_callee, last_error_generation, Error, Result};
use crate::runtime::function::packed::{
    call_safe, FunctionText, Module, ModuleNode, PackedFunc, Value, CXX_VPTR_BYTES,
};
use crate::runtime::module::tvm_ffi_library::{expose_runtime_exports, wrap_ffi_kernel, KERNEL_PREFIX};
use once_cell::sync::{Lazy, OnceCell};
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::Arc;

/// Where a library module finds its symbols.
pub trait SymbolSource: Send + Sync + 'static {
    /// Address of `name`, if the library has it.
    fn symbol(&self, name: &str) -> Option<*mut c_void>;
    /// Address of `name` if it is a function defined by this library itself (not data, not a
    /// function of a library it depends on). Sources that cannot tell use `symbol`.
    fn function(&self, name: &str) -> Option<*mut c_void> {
        self.symbol(name)
    }
}

/// A module whose functions are kernels looked up by symbol (`type_key` "library").
pub struct LibraryModule {
    symbols: Arc<dyn SymbolSource>,
}

impl LibraryModule {
    pub fn new(symbols: Arc<dyn SymbolSource>) -> Self {
        LibraryModule { symbols }
    }
    pub fn symbols(&self) -> &Arc<dyn SymbolSource> {
        &self.symbols
    }
}

impl ModuleNode for LibraryModule {
    fn type_key(&self) -> &str {
        "library"
    }

    /// A kernel exported with the tvm-ffi convention (`__tvm_ffi_<name>`, the releases since
    /// apache-tvm 0.25) if there is one, else the packed-function symbol `<name>` (TVM 0.18).
    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        if let Some(p) = self.symbols.function(&format!("{KERNEL_PREFIX}{name}")) {
            expose_runtime_exports(&format!("kernel `{name}`"))?;
            // SAFETY: `__tvm_ffi_<name>` functions of a TVM library follow the tvm-ffi
            // safe-call convention (what apache-tvm's codegen exports under that prefix).
            let f = unsafe { std::mem::transmute::<*mut c_void, TVMFFISafeCallType>(p) };
            return Ok(Some(wrap_ffi_kernel(f, this.clone())));
        }
        Ok(self.get_backend_function(name).map(|f| wrap_backend_func(f, this.clone())))
    }

    fn get_backend_function(&self, name: &str) -> Option<TVMBackendPackedCFunc> {
        let target = if name == "__tvm_main__" {
            // The entry symbol is a NUL-terminated string naming the real entry function.
            match self.symbols.symbol("__tvm_main__") {
                // SAFETY: by TVM's convention `__tvm_main__` is a constant C string.
                Some(p) => unsafe { CStr::from_ptr(p as *const std::ffi::c_char) }.to_string_lossy().into_owned(),
                None => return None,
            }
        } else {
            name.to_string()
        };
        self.symbols.function(&target).map(|p| {
            // SAFETY: symbols looked up as functions in a TVM library follow the backend
            // packed-function convention (TVM's ABI for compiled kernels).
            unsafe { std::mem::transmute::<*mut c_void, TVMBackendPackedCFunc>(p) }
        })
    }

    /// A library built by tvm-ffi keeps each text as a function of no arguments returning a
    /// string, under `__tvm_ffi__doc_<name>` / `__tvm_ffi__metadata_<name>`.
    fn function_text(&self, which: FunctionText, name: &str) -> Result<Option<String>> {
        let Some(p) = self.symbols.function(&format!("{}{name}", which.symbol_prefix())) else {
            return Ok(None);
        };
        expose_runtime_exports(&format!("the text of `{name}`"))?;
        // SAFETY: tvm-ffi's libraries export these symbols as safe-call functions (its
        // `TVM_FFI_DLL_EXPORT_TYPED_FUNC` documentation and metadata getters).
        let f = unsafe { std::mem::transmute::<*mut c_void, TVMFFISafeCallType>(p) };
        // SAFETY: the getter takes no context and no arguments.
        let text = unsafe { call_safe(f, std::ptr::null_mut(), Vec::new())? };
        let kind = text.type_name();
        // (A long text comes back as an `ffi.String` object.)
        text.into_string()
            .map(Some)
            .map_err(|_| Error::type_error(format!("`{}{name}` returned {kind}, not a string", which.symbol_prefix())))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Wrap a compiled kernel as a packed function. `keep_alive` (the module that owns the code)
/// lives as long as the function.
pub fn wrap_backend_func(f: TVMBackendPackedCFunc, keep_alive: Module) -> PackedFunc {
    PackedFunc::from_fn(move |args, ret| {
        let _owner = &keep_alive;
        let mut rv = TVMValue::null();
        let mut rcode: c_int = tc::NULLPTR;
        let n = c_int::try_from(args.len()).map_err(|_| Error::value("too many arguments"))?;
        let generation = last_error_generation();
        // SAFETY: the argument arrays are valid for the call; the kernel follows TVM's backend
        // convention and only reads `n` values; it never writes the return slots on void return,
        // which is why they are pre-set to NULL.
        let status = unsafe { f(args.values_ptr(), args.codes_ptr(), n, &mut rv, &mut rcode, std::ptr::null_mut()) };
        if status != 0 {
            return Err(error_from_callee(generation, || {
                Error::runtime(format!("kernel returned {status} without setting an error message"))
            }));
        }
        if rcode != tc::NULLPTR {
            // SAFETY: a kernel's returned value carries ownership of any object it names.
            *ret = unsafe { Value::adopt_c(rv, rcode)? };
        }
        Ok(())
    })
}

/// The runtime functions a kernel library calls back through its `__TVM*` context pointers
/// (`__TVMFuncCall`, `__TVMBackendParallelLaunch`, ...), by symbol name. They are the exported
/// C functions, which live in the C-API layer above this one: that layer installs the table once
/// ([`install_context_functions`]) and library loading passes it on.
#[derive(Clone, Copy)]
pub struct ContextFunctions {
    /// `(symbol name, function address)`; every address is a function of the prototype TVM
    /// declares for that symbol in `c_backend_api.h` / `c_runtime_api.h`.
    pub entries: &'static [(&'static str, usize)],
}

static CONTEXT_FUNCTIONS: OnceCell<ContextFunctions> = OnceCell::new();

/// Install the table the C-API layer provides; the first installation wins.
pub fn install_context_functions(table: ContextFunctions) {
    let _ = CONTEXT_FUNCTIONS.set(table);
}

/// The installed table, or an error: without it, loaded kernels would call NULL pointers.
pub fn context_functions() -> Result<ContextFunctions> {
    CONTEXT_FUNCTIONS.get().copied().ok_or_else(|| {
        Error::internal(
            "the runtime's backend functions are not installed, so kernel libraries cannot be loaded \
             (call tvm_runtime::init() before loading through the Rust API)",
        )
    })
}

/// Store the runtime's functions into the library's `__TVM*` context-function pointers and
/// point `__tvm_module_ctx` (and tvm-ffi's `__tvm_ffi__library_ctx`) at the module, so kernels can call back into the runtime.
pub fn init_library_context(symbols: &dyn SymbolSource, module: &Module, functions: ContextFunctions) {
    let registered = CONTEXT_SYMBOLS.read().clone();
    let registered = registered.iter().map(|(n, a)| (n.as_str(), *a));
    for (name, addr) in functions.entries.iter().copied().chain(registered) {
        if let Some(slot) = symbols.symbol(name) {
            // SAFETY: in TVM libraries these symbols are writable pointer-sized globals holding
            // a function pointer of the matching prototype; `addr` is such a function.
            unsafe { *(slot as *mut usize) = addr };
        }
    }
    // TVM 0.18's code passes its context to `TVMBackendGetFuncFromEnv` (a 0.18 handle), tvm-ffi's
    // to `TVMFFIEnvModLookupFromImports` (a C++ `ModuleObj*`, as tvm-ffi's library sets it: the
    // vtable pointer before the header, which modules made here carry too).
    let cxx_view = (module.as_header() as *mut u8).wrapping_sub(CXX_VPTR_BYTES) as *mut c_void;
    let contexts = [
        ("__tvm_module_ctx", module.legacy_handle()),
        (crate::runtime::module::tvm_ffi_library::LIBRARY_CTX, cxx_view),
    ];
    for (ctx, handle) in contexts {
        let Some(slot) = symbols.symbol(ctx) else { continue };
        // SAFETY: a context symbol is a writable `void*` global that compiled code passes back
        // to the runtime. The module outlives the code (the code is kept alive by the module),
        // so the pointer stays valid while kernels can run.
        unsafe { *(slot as *mut *mut c_void) = handle };
    }
}

/// Values for libraries' pointers registered at run time (tvm-ffi's
/// `TVMFFIEnvModRegisterContextSymbol`), written into each library loaded afterwards that has a
/// pointer of that name, after the runtime's own.
static CONTEXT_SYMBOLS: Lazy<RwLock<Vec<(String, usize)>>> = Lazy::new(Default::default);

/// Register `value` for libraries' `name` pointer (replacing an earlier value for it).
pub fn register_context_symbol(name: &str, value: *mut c_void) {
    let mut table = CONTEXT_SYMBOLS.write();
    table.retain(|(n, _)| n != name);
    table.push((name.to_string(), value as usize));
}

/// The values registered with [`register_context_symbol`], in registration order.
pub fn context_symbols() -> Vec<(String, usize)> {
    CONTEXT_SYMBOLS.read().clone()
}

/// Symbols registered by statically linked kernels (`TVMBackendRegisterSystemLibSymbol`).
static SYSTEM_SYMBOLS: Lazy<RwLock<HashMap<String, usize>>> = Lazy::new(Default::default);

/// `TVMBackendRegisterSystemLibSymbol`: re-registration overwrites.
pub fn register_system_symbol(name: &str, ptr: *mut c_void) {
    SYSTEM_SYMBOLS.write().insert(name.to_string(), ptr as usize);
}

/// The system-library symbol table seen through a prefix: `prefix + name`, then `name`.
struct SystemLibSymbols {
    prefix: String,
}

impl SymbolSource for SystemLibSymbols {
    fn symbol(&self, name: &str) -> Option<*mut c_void> {
        let table = SYSTEM_SYMBOLS.read();
        table.get(&format!("{}{}", self.prefix, name)).or_else(|| table.get(name)).map(|&p| p as *mut c_void)
    }
}

static SYSTEM_LIBS: Lazy<Mutex<HashMap<String, Module>>> = Lazy::new(Default::default);

/// `runtime.SystemLib(prefix)`: one module per prefix, kept for the life of the process. When
/// the statically linked code registered a `<prefix>__tvm_dev_mblob`, the modules packed in it
/// are restored and the root (e.g. a GraphExecutorFactory) is returned, as for a `.so`.
pub fn system_lib(prefix: &str) -> Result<Module> {
    let mut libs = SYSTEM_LIBS.lock();
    if let Some(m) = libs.get(prefix) {
        return Ok(m.clone());
    }
    let functions = context_functions()?;
    let symbols: Arc<dyn SymbolSource> = Arc::new(SystemLibSymbols { prefix: prefix.to_string() });
    let module = Module::from_node(LibraryModule::new(symbols.clone()));
    init_library_context(&*symbols, &module, functions);
    let root = match symbols.symbol("__tvm_dev_mblob") {
        Some(addr) => {
            crate::runtime::module::blob::load_import_tree(crate::runtime::module::blob::blob_bytes(addr)?, module)
                .map_err(|e| e.context(format!("system library `{prefix}`")))?
        }
        None => module,
    };
    libs.insert(prefix.to_string(), root.clone());
    Ok(root)
}
