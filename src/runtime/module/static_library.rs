//! `static_library` modules: an object file (`.o`) that `export_library` links into the library
//! it writes, with the names of the functions it implements. A runtime cannot call into an
//! unlinked object file: the module answers which functions it implements and lists them
//! (`get_func_names`), as apache-tvm's does, and has no callable functions.
//!
//! Bytes (tvm-ffi releases' `SaveToBytes`): the object file as a dmlc string (u64 length, bytes),
//! then the function names as a dmlc vector of strings.

use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::FfiArrayObj;
use crate::runtime::function::packed::{module_property, Module, ModuleNode, PackedFunc, Value};
use std::any::Any;

pub struct StaticLibraryModule {
    /// The object file.
    data: Vec<u8>,
    func_names: Vec<String>,
}

/// Decode a module's bytes (its length-prefixed object file, then its function names).
pub(crate) fn load_binary(r: &mut Reader<'_>) -> Result<Module> {
    let n = r.count("static_library object file length", 1)?;
    let data = r.bytes(n, "static_library object file")?.to_vec();
    let func_names = r.strings("static_library function names")?;
    Ok(Module::from_node(StaticLibraryModule { data, func_names }))
}

/// `runtime.ModuleLoadStaticLibrary`: the object file at `path`, implementing `func_names`.
pub fn load_file(path: &str, func_names: Vec<String>) -> Result<Module> {
    let data = std::fs::read(path).map_err(|e| Error::io(format!("cannot read static library `{path}`: {e}")))?;
    Ok(Module::from_node(StaticLibraryModule { data, func_names }))
}

impl StaticLibraryModule {
    /// The object file's bytes.
    pub fn object_file(&self) -> &[u8] {
        &self.data
    }
}

impl ModuleNode for StaticLibraryModule {
    fn type_key(&self) -> &str {
        "static_library"
    }

    fn get_function(&self, name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        if name != "get_func_names" {
            return Ok(None);
        }
        let names = self.func_names.clone();
        Ok(Some(PackedFunc::from_typed(move |_| {
            let items = names.iter().map(|n| Value::Str(n.clone()).into_any()).collect();
            Ok(Value::Object(FfiArrayObj::new(items).to_object_ref()))
        })))
    }

    fn implements_function(&self, name: &str, _this: &Module) -> Result<bool> {
        Ok(self.func_names.iter().any(|f| f == name))
    }

    /// Binary serializable and compilation exportable, not runnable (apache-tvm's mask).
    fn property_mask(&self) -> i64 {
        module_property::BINARY_SERIALIZABLE | module_property::COMPILATION_EXPORTABLE
    }

    fn write_formats(&self) -> Result<Vec<String>> {
        Ok(vec!["o".to_string()])
    }

    fn write_to_file(&self, file: &str, _format: &str) -> Result<()> {
        std::fs::write(file, &self.data).map_err(|e| Error::io(format!("cannot write `{file}`: {e}")))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
