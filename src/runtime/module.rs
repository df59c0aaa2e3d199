//! Modules: named collections of packed functions with imports.
//!
//! A module object holds a [`ModuleNode`] (what kind of module it is) and its import list.
//! Loaders for files are globals named `runtime.module.loadfile_<format>`.

use super::error::{Error, Result};
use super::object::{type_index, ObjPtr, ObjectHeader, ObjectType};
use super::packed::{PackedFunc, Value};
use super::registry;
use crate::abi::TVMBackendPackedCFunc;
use parking_lot::{Mutex, RwLock};
use std::any::Any;
use std::collections::HashMap;

/// What a kind of module provides.
pub trait ModuleNode: Send + Sync + 'static {
    /// TVM's type key (`library`, `GraphExecutorFactory`, ...).
    fn type_key(&self) -> &str;
    /// A function this module itself provides (imports are searched by [`Module`]).
    /// `this` is the module object, for functions that must keep it alive.
    fn get_function(&self, name: &str, this: &Module) -> Result<Option<PackedFunc>>;
    /// The raw compiled function behind `name`, for callers that invoke kernels directly
    /// (the graph executor's run loop). Only library modules have them.
    fn get_backend_function(&self, _name: &str) -> Option<TVMBackendPackedCFunc> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// Payload of a module object.
pub struct ModuleObj {
    node: Box<dyn ModuleNode>,
    imports: RwLock<Vec<Module>>,
    /// Functions handed to compiled code by `TVMBackendGetFuncFromEnv` (borrowed by it).
    env_cache: Mutex<HashMap<String, PackedFunc>>,
}

impl ObjectType for ModuleObj {
    const TYPE_INDEX: u32 = type_index::MODULE;
}

/// A reference-counted module.
pub type Module = ObjPtr<ModuleObj>;

/// Serializes import edits so that the cycle check and the insertion are atomic.
static IMPORT_LOCK: Mutex<()> = Mutex::new(());

impl ModuleObj {
    pub fn node(&self) -> &dyn ModuleNode {
        &*self.node
    }
    pub fn type_key(&self) -> &str {
        self.node.type_key()
    }
    /// A snapshot of the import list.
    pub fn imports(&self) -> Vec<Module> {
        self.imports.read().clone()
    }
}

impl Module {
    pub fn from_node(node: impl ModuleNode) -> Module {
        Module::new(ModuleObj {
            node: Box::new(node),
            imports: RwLock::new(Vec::new()),
            env_cache: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `target` is reachable from `self` through imports (or is `self`).
    fn reaches(&self, target: &Module) -> bool {
        let mut stack = vec![self.clone()];
        let mut seen = std::collections::HashSet::new();
        while let Some(m) = stack.pop() {
            if Module::ptr_eq(&m, target) {
                return true;
            }
            if seen.insert(m.as_header() as usize) {
                stack.extend(m.imports());
            }
        }
        false
    }

    /// Append `dep` to this module's imports; an import that would close a cycle is an error.
    pub fn import(&self, dep: &Module) -> Result<()> {
        let _guard = IMPORT_LOCK.lock();
        if dep.reaches(self) {
            return Err(Error::value(format!(
                "cannot import module `{}` into `{}`: the import would create a cycle",
                dep.type_key(),
                self.type_key()
            )));
        }
        self.imports.write().push(dep.clone());
        Ok(())
    }

    /// Look up `name` in this module, then (if asked) depth-first through its imports.
    pub fn get_function(&self, name: &str, query_imports: bool) -> Result<Option<PackedFunc>> {
        if let Some(f) = self.node.get_function(name, self)? {
            return Ok(Some(f));
        }
        if query_imports {
            for m in self.imports() {
                if let Some(f) = m.get_function(name, true)? {
                    return Ok(Some(f));
                }
            }
        }
        Ok(None)
    }

    /// The raw compiled function behind `name`, searching imports depth-first. The function
    /// stays valid while this module lives.
    pub fn get_backend_function(&self, name: &str) -> Option<TVMBackendPackedCFunc> {
        self.node
            .get_backend_function(name)
            .or_else(|| self.imports().iter().find_map(|m| m.get_backend_function(name)))
    }

    /// `TVMBackendGetFuncFromEnv`: the imports (recursively), then the global registry.
    /// The returned handle is borrowed: it stays valid while this module lives.
    pub fn get_func_from_env(&self, name: &str) -> Result<*mut ObjectHeader> {
        if let Some(f) = self.env_cache.lock().get(name) {
            return Ok(f.as_header());
        }
        let mut found = None;
        for m in self.imports() {
            if let Some(f) = m.get_function(name, true)? {
                found = Some(f);
                break;
            }
        }
        let f = match found.or_else(|| registry::get(name)) {
            Some(f) => f,
            None => {
                return Err(Error::attribute(format!(
                    "Cannot find function `{name}` in the imported modules or global registry"
                )))
            }
        };
        let mut cache = self.env_cache.lock();
        let kept = cache.entry(name.to_string()).or_insert(f);
        Ok(kept.as_header())
    }

    /// `TVMModLoadFromFile`: dispatch on `format` (or the file extension) to
    /// `runtime.module.loadfile_<format>`.
    pub fn load_from_file(file_name: &str, format: &str) -> Result<Module> {
        let fmt = if format.is_empty() {
            match file_name.rsplit_once('.') {
                Some((_, ext)) if !ext.contains('/') => ext,
                _ => "",
            }
        } else {
            format
        };
        if fmt.is_empty() {
            return Err(Error::value(format!(
                "cannot load module `{file_name}`: no format given and the file name has no extension"
            )));
        }
        let fmt = match fmt {
            "dll" | "dylib" | "dso" => "so",
            f => f,
        };
        let loader_name = format!("runtime.module.loadfile_{fmt}");
        let loader = registry::get(&loader_name).ok_or_else(|| {
            Error::value(format!(
                "cannot load module `{file_name}`: unknown format `{fmt}` (no loader `{loader_name}` is registered)"
            ))
        })?;
        loader
            .call(&[Value::Str(file_name.to_string()), Value::Str(format.to_string())])?
            .into_module()
            .map_err(|e| e.context(format!("loader `{loader_name}` did not return a module")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(String, &'static [&'static str]);
    impl ModuleNode for Named {
        fn type_key(&self) -> &str {
            &self.0
        }
        fn get_function(&self, name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
            let key = self.0.clone();
            Ok(self.1.contains(&name).then(|| PackedFunc::from_typed(move |_| Ok(Value::from(key.as_str())))))
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn imports_and_cycles() {
        let a = Module::from_node(Named("a".into(), &["fa"]));
        let b = Module::from_node(Named("b".into(), &["fb", "fa"]));
        let c = Module::from_node(Named("c".into(), &["fc"]));
        a.import(&b).unwrap();
        b.import(&c).unwrap();
        assert!(a.get_function("fc", false).unwrap().is_none());
        let fc = a.get_function("fc", true).unwrap().unwrap();
        assert_eq!(fc.call(&[]).unwrap().into_string().unwrap(), "c");
        let fa = a.get_function("fa", true).unwrap().unwrap();
        assert_eq!(fa.call(&[]).unwrap().into_string().unwrap(), "a");
        assert!(c.import(&a).unwrap_err().message().contains("cycle"));
        assert!(a.import(&a).unwrap_err().message().contains("cycle"));
        // Diamond imports are fine.
        a.import(&c).unwrap();
        // Env lookup skips the module's own functions, searches imports, then globals.
        let h = a.get_func_from_env("fb").unwrap();
        assert_eq!(h, a.get_func_from_env("fb").unwrap());
        assert!(a.get_func_from_env("nothing.here").unwrap_err().message().contains("nothing.here"));
    }

    #[test]
    fn load_from_file_dispatch() {
        let err = Module::load_from_file("model.weird", "").unwrap_err();
        assert!(err.message().contains("unknown format `weird`"), "{err}");
        assert!(Module::load_from_file("noext", "").is_err());
        registry::register(
            "runtime.module.loadfile_unittestfmt",
            PackedFunc::from_typed(|args| {
                let path = args.string(0)?;
                Ok(Value::Module(Module::from_node(Named(path, &[]))))
            }),
            true,
        )
        .unwrap();
        let m = Module::load_from_file("x/y.unittestfmt", "").unwrap();
        assert_eq!(m.type_key(), "x/y.unittestfmt");
    }
}
