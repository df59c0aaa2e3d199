//! Modules made by C++ code compiled against tvm-ffi's headers (subclasses of `ModuleObj`,
//! e.g. apache-tvm's own runtime modules). Their payload is a C++ object, so they are foreign
//! objects here: a [`Module`] over one ([`CxxModule`]) reaches its virtual functions through
//! the C++ part of this library (`cxx/ffi_cxx_api.cc`), and goes back out as the object itself.
//! A `HostedModule` (how that C++ part shows one of our modules to C++ code) is unwrapped to
//! the module inside.

use crate::abi::TVMFFIAny;
use crate::runtime::base::error::{error_from_callee, last_error_generation, Error, Result};
use crate::runtime::function::packed::{FuncObj, FunctionText, Module, ModuleNode, ModuleObj, PackedFunc, Value};
use crate::runtime::module::library::context_symbols;
use crate::runtime::object::{
    header::{ObjectHeader, ObjectRef},
    type_table::{type_index, type_index_to_key},
};
use std::any::Any;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// How the C++ part visits one registered context symbol (`ctx`, name, address).
type SymbolVisit = unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void);

extern "C" {
    fn tvmrt_cxx_install_symbol_lister(lister: unsafe extern "C" fn(SymbolVisit, *mut c_void));
    fn tvmrt_cxx_module_unwrap(module: *mut ObjectHeader) -> *mut ObjectHeader;
    fn tvmrt_cxx_module_kind(module: *mut ObjectHeader, out: *mut *const c_char) -> c_int;
    fn tvmrt_cxx_module_import(module: *mut ObjectHeader, other: *mut ObjectHeader) -> c_int;
    fn tvmrt_cxx_module_clear_imports(module: *mut ObjectHeader) -> c_int;
    fn tvmrt_cxx_module_lookup_from_imports(
        module: *mut ObjectHeader,
        name: *const c_char,
        out: *mut *mut ObjectHeader,
    ) -> c_int;
    fn tvmrt_cxx_module_get_function(
        module: *mut ObjectHeader,
        name: *const c_char,
        len: usize,
        out: *mut *mut ObjectHeader,
    ) -> c_int;
    fn tvmrt_cxx_module_query(
        module: *mut ObjectHeader,
        what: c_int,
        a: *const c_char,
        a_len: usize,
        b: *const c_char,
        b_len: usize,
        out: *mut TVMFFIAny,
    ) -> c_int;
}

/// What [`CxxModule::query`] asks a C++ module (the `what` of `tvmrt_cxx_module_query`).
#[derive(Clone, Copy)]
enum Query {
    FunctionDoc = 0,
    FunctionMetadata = 1,
    PropertyMask = 2,
    InspectSource = 3,
    WriteFormats = 4,
    WriteToFile = 5,
    ImplementsFunction = 6,
    Imports = 7,
}

/// Give the C++ part (`Module::VisitContextSymbols`) the context symbols' table.
pub fn install() {
    // SAFETY: stores a function pointer; `list_context_symbols` lives as long as the library.
    unsafe { tvmrt_cxx_install_symbol_lister(list_context_symbols) };
}

/// Calls `visit(ctx, name, address)` for each registered context symbol.
///
/// # Safety
/// `visit` must be callable with `ctx` and does not unwind (the C++ part copies the pair).
unsafe extern "C" fn list_context_symbols(visit: SymbolVisit, ctx: *mut c_void) {
    for (name, address) in context_symbols() {
        // Names come from C strings (`TVMFFIEnvModRegisterContextSymbol`): no interior NUL.
        let Ok(name) = CString::new(name) else { continue };
        // SAFETY: the caller's contract; the name outlives the call.
        unsafe { visit(ctx, name.as_ptr(), address as *mut c_void) };
    }
}

/// Whether `obj` is a module object C++ code made (a `ModuleObj` subclass: its type index says
/// module, and it lacks the mark of objects made here).
fn made_by_cxx(obj: &ObjectRef) -> bool {
    obj.type_index() == type_index::MODULE && !obj.made_here()
}

/// A module object made by C++ code.
pub struct CxxModule {
    obj: ObjectRef,
    kind: String,
}

/// The error a C++ call raised (it returned `rc` != 0).
fn raised(generation: u64, what: &str) -> Error {
    error_from_callee(generation, || Error::runtime(format!("C++ module: {what} failed without raising an error")))
}

impl CxxModule {
    /// The object C++ code made (what goes back out for this module).
    pub fn object(&self) -> &ObjectRef {
        &self.obj
    }

    /// One of the module's virtual functions that take up to two strings, its result owned.
    fn query(&self, what: Query, a: &str, b: &str) -> Result<Value> {
        let mut out = TVMFFIAny::NONE;
        let generation = last_error_generation();
        // SAFETY: a live C++ module object (held by `self.obj`); the strings are valid for their
        // lengths; `out` is writable. The call catches every C++ exception.
        let rc = unsafe {
            tvmrt_cxx_module_query(
                self.obj.as_header(),
                what as c_int,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
                &mut out,
            )
        };
        if rc != 0 {
            return Err(raised(generation, "a module query"));
        }
        // SAFETY: the C++ side moved its result into `out`.
        unsafe { Value::adopt_any(out) }
    }

    fn text(&self, what: Query, name: &str) -> Result<Option<String>> {
        match self.query(what, name, "")? {
            Value::Null => Ok(None),
            v => self.string(v).map(Some),
        }
    }

    /// The items of the array a query without arguments returns; `call` names it in the error.
    fn items(&self, what: Query, call: &str) -> Result<Vec<Value>> {
        let v = self.query(what, "", "")?;
        let items = match &v {
            Value::Object(o) => crate::runtime::collections::list_map::sequence_items(o)?,
            _ => None,
        };
        items.ok_or_else(|| Error::type_error(format!("C++ module `{}`: {call} gave no array", self.kind)))
    }

    /// A string the module returned (inline, or an `ffi.String` object when long).
    fn string(&self, v: Value) -> Result<String> {
        let kind = v.type_name();
        v.into_string()
            .map_err(|_| Error::type_error(format!("C++ module `{}`: expected a string, got {kind}", self.kind)))
    }
}

impl ModuleNode for CxxModule {
    fn type_key(&self) -> &str {
        &self.kind
    }

    fn get_function(&self, name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        let mut out = std::ptr::null_mut();
        let generation = last_error_generation();
        // SAFETY: a live C++ module object (held by `self.obj`); `name` is valid for `len`
        // bytes; `out` is writable. The call catches every C++ exception.
        let rc =
            unsafe { tvmrt_cxx_module_get_function(self.obj.as_header(), name.as_ptr().cast(), name.len(), &mut out) };
        if rc != 0 {
            return Err(raised(generation, "GetFunction"));
        }
        if out.is_null() {
            return Ok(None);
        }
        // SAFETY: the C++ side handed over one owned reference to a function object.
        let f = unsafe { ObjectRef::from_raw(out) };
        f.downcast::<FuncObj>().map(Some).ok_or_else(|| {
            Error::type_error(format!("C++ module `{}`: GetFunction(`{name}`) returned a non-function", self.kind))
        })
    }

    fn function_text(&self, which: FunctionText, name: &str) -> Result<Option<String>> {
        self.text(if which == FunctionText::Doc { Query::FunctionDoc } else { Query::FunctionMetadata }, name)
    }

    fn property_mask(&self) -> i64 {
        // A module whose mask cannot be read claims no property.
        match self.query(Query::PropertyMask, "", "") {
            Ok(Value::Int(mask)) => mask,
            _ => 0,
        }
    }

    fn inspect_source(&self, format: &str) -> Result<String> {
        Ok(self.text(Query::InspectSource, format)?.unwrap_or_default())
    }

    fn write_formats(&self) -> Result<Vec<String>> {
        self.items(Query::WriteFormats, "GetWriteFormats")?.into_iter().map(|f| self.string(f)).collect()
    }

    fn write_to_file(&self, file: &str, format: &str) -> Result<()> {
        self.query(Query::WriteToFile, file, format).map(drop)
    }

    fn implements_function(&self, name: &str, _this: &Module) -> Result<bool> {
        match self.query(Query::ImplementsFunction, name, "")? {
            Value::Bool(b) => Ok(b),
            v => {
                Err(Error::type_error(format!("C++ module `{}`: ImplementsFunction gave {}", self.kind, v.type_name())))
            }
        }
    }

    fn own_imports(&self) -> Result<Option<Vec<Module>>> {
        let items = self.items(Query::Imports, "imports()")?;
        let module = |item: Value| match item {
            Value::Module(m) => Ok(m),
            v => Err(Error::type_error(format!("C++ module `{}` imports a {}", self.kind, v.type_name()))),
        };
        items.into_iter().map(module).collect::<Result<_>>().map(Some)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Module {
    /// The module an object is: one made here, the one inside a `HostedModule`, or a module
    /// over a C++ `ModuleObj`. `None` for objects that are not modules.
    pub fn from_object(obj: &ObjectRef) -> Result<Option<Module>> {
        if let Some(m) = obj.downcast::<ModuleObj>() {
            return Ok(Some(m));
        }
        if !made_by_cxx(obj) {
            return Ok(None);
        }
        // SAFETY: a live module object made by C++ code (its type index says ModuleObj).
        let inner = unsafe { tvmrt_cxx_module_unwrap(obj.as_header()) };
        if !inner.is_null() {
            // SAFETY: the hosted module is alive while `obj` holds it; we take our own reference.
            return Ok(unsafe { ObjectRef::from_borrowed(inner) }.downcast::<ModuleObj>());
        }
        let mut kind = std::ptr::null();
        let generation = last_error_generation();
        // SAFETY: as above; `kind` is writable.
        if unsafe { tvmrt_cxx_module_kind(obj.as_header(), &mut kind) } != 0 || kind.is_null() {
            return Err(raised(generation, "kind()"));
        }
        // SAFETY: `kind()` returns a NUL-terminated string the module keeps.
        let kind = unsafe { CStr::from_ptr(kind) }.to_string_lossy().into_owned();
        Ok(Some(Module::from_node(CxxModule { obj: obj.clone(), kind })))
    }

    /// `TVMFFIEnvModLookupFromImports` on the module object `obj` (what compiled code passes as
    /// `__tvm_ffi__library_ctx`): the module's imports, then the globals; the function is
    /// borrowed, kept by the module. A module made here looks up as `TVMBackendGetFuncFromEnv`
    /// does; one C++ code made (apache-tvm's LLVM JIT module) searches its own import list and
    /// keeps the function in its own lookup cache, as tvm-ffi's library does.
    pub fn lookup_from_imports(obj: &ObjectRef, name: &str) -> Result<*mut ObjectHeader> {
        if let Some(m) = obj.downcast::<ModuleObj>() {
            return m.get_func_from_env(name);
        }
        if !made_by_cxx(obj) {
            let index = obj.type_index();
            let key = type_index_to_key(index).unwrap_or_else(|_| format!("type index {index}"));
            return Err(Error::type_error(format!("the library context is a {key}, not a module")));
        }
        let name = CString::new(name).map_err(|_| Error::value("a function name with a NUL byte"))?;
        let mut out = std::ptr::null_mut();
        let generation = last_error_generation();
        // SAFETY: a live module object C++ code made (its type says so); `name` is NUL-terminated,
        // `out` writable. The call catches every C++ exception.
        if unsafe { tvmrt_cxx_module_lookup_from_imports(obj.as_header(), name.as_ptr(), &mut out) } != 0 {
            return Err(raised(generation, "the lookup of an imported function"));
        }
        Ok(out)
    }

    /// The object to hand out for this module: a C++ module goes out as itself.
    pub fn into_object(self) -> ObjectRef {
        match self.node().as_any().downcast_ref::<CxxModule>() {
            Some(cxx) => cxx.obj.clone(),
            None => self.to_object_ref(),
        }
    }

    /// `ffi.ModuleImportModule`: a C++ module keeps its imports in its own list.
    pub fn import_module(&self, dep: &Module) -> Result<()> {
        let Some(cxx) = self.node().as_any().downcast_ref::<CxxModule>() else {
            return self.import(dep);
        };
        let dep = dep.clone().into_object();
        let generation = last_error_generation();
        // SAFETY: both are live module objects; the C++ side takes its own reference to `dep`.
        match unsafe { tvmrt_cxx_module_import(cxx.obj.as_header(), dep.as_header()) } {
            0 => Ok(()),
            _ => Err(raised(generation, "ImportModule")),
        }
    }

    /// `ffi.ModuleClearImports`.
    pub fn clear_module_imports(&self) -> Result<()> {
        let Some(cxx) = self.node().as_any().downcast_ref::<CxxModule>() else {
            self.clear_imports();
            return Ok(());
        };
        let generation = last_error_generation();
        // SAFETY: a live C++ module object.
        match unsafe { tvmrt_cxx_module_clear_imports(cxx.obj.as_header()) } {
            0 => Ok(()),
            _ => Err(raised(generation, "ClearImports")),
        }
    }
}
