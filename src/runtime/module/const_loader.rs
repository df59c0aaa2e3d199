//! `const_loader` (alias `metadata`) and `metadata_module` entries of import blobs.
//!
//! A const loader holds constants for external (BYOC) functions: on first lookup of such a
//! function it calls `__init_<symbol>` from its imports with the symbol's constants, then serves
//! the function from the first import that has it.

use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::{array_object, map_object};
use crate::runtime::function::packed::{Module, ModuleNode, PackedFunc, Value};
use crate::runtime::tensor::ndarray::NDArray;
use crate::runtime::tensor::params::{read_named_records, MIN_RECORD_BYTES};
use parking_lot::Mutex;
use std::any::Any;
use std::collections::HashSet;

pub struct ConstLoaderModule {
    constants: Vec<(String, NDArray)>,
    /// For each external symbol, the names of the constants it needs.
    symbols: Vec<(String, Vec<String>)>,
    initialized: Mutex<HashSet<String>>,
}

pub(crate) fn load_binary(r: &mut Reader<'_>) -> Result<Module> {
    let names = r.strings("const_loader variables")?;
    let n = r.count("const_loader constant count", MIN_RECORD_BYTES)?;
    let constants = read_named_records(r, names, n, "constant")?;
    let syms = r.strings("const_loader symbols")?;
    let m = r.count("const_loader symbol count", 8)?;
    if m != syms.len() {
        return Err(r.error(format!("symbol count {m} differs from the {} symbols", syms.len())));
    }
    let mut symbols = Vec::with_capacity(m);
    for s in syms {
        let vars = r.strings(&format!("constants of symbol `{s}`"))?;
        for v in &vars {
            if !constants.iter().any(|(k, _)| k == v) {
                return Err(r.error(format!("symbol `{s}` needs unknown constant `{v}`")));
            }
        }
        symbols.push((s, vars));
    }
    Ok(Module::from_node(ConstLoaderModule { constants, symbols, initialized: Mutex::new(HashSet::new()) }))
}

/// `ffi.Module.create.const_loader`: constants by name, and for each external symbol the names
/// of the constants it needs (each must be one of them).
pub fn create(constants: Vec<(String, NDArray)>, symbols: Vec<(String, Vec<String>)>) -> Result<Module> {
    for (s, vars) in &symbols {
        if let Some(v) = vars.iter().find(|v| !constants.iter().any(|(k, _)| k == *v)) {
            return Err(Error::value(format!("symbol `{s}` needs unknown constant `{v}`")));
        }
    }
    Ok(Module::from_node(ConstLoaderModule { constants, symbols, initialized: Mutex::new(HashSet::new()) }))
}

impl ConstLoaderModule {
    fn init_symbol(&self, symbol: &str, vars: &[String], this: &Module) -> Result<()> {
        let mut done = self.initialized.lock();
        if done.contains(symbol) {
            return Ok(());
        }
        let init_name = format!("__init_{symbol}");
        let init =
            this.imports().iter().find_map(|m| m.get_function(&init_name, false).transpose()).transpose()?.ok_or_else(
                || Error::attribute(format!("`{init_name}` is not provided by the imports of the const loader")),
            )?;
        let arrays = vars
            .iter()
            .map(|v| {
                let a = &self.constants.iter().find(|(k, _)| k == v).expect("checked at load").1;
                a.to_object_ref()
            })
            .collect();
        let arr = array_object(arrays);
        let rc = init.call(&[Value::Object(arr)])?.as_int()?;
        if rc != 0 {
            return Err(Error::runtime(format!("`{init_name}` returned {rc}")));
        }
        done.insert(symbol.to_string());
        Ok(())
    }
}

impl ModuleNode for ConstLoaderModule {
    fn type_key(&self) -> &str {
        "const_loader"
    }

    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>> {
        if name == "get_const_var_ndarray" {
            let entries: Vec<_> = self.constants.iter().map(|(k, a)| (k.clone(), a.to_object_ref())).collect();
            return Ok(Some(PackedFunc::from_typed(move |_| Ok(Value::Object(map_object(entries.clone()))))));
        }
        if let Some((sym, vars)) = self.symbols.iter().find(|(s, _)| s == name) {
            self.init_symbol(sym, vars, this)?;
        }
        for m in this.imports() {
            if let Some(f) = m.get_function(name, true)? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `metadata_module` (AOT metadata): no payload, no functions a graph executor uses.
struct MetadataModule;

impl ModuleNode for MetadataModule {
    fn type_key(&self) -> &str {
        "metadata_module"
    }
    fn get_function(&self, _name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        Ok(None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub(crate) fn load_metadata_module(_r: &mut Reader<'_>) -> Result<Module> {
    Ok(Module::from_node(MetadataModule))
}
