//! Modules' lookups that reach the global registry: `TVMBackendGetFuncFromEnv` (imports, then
//! globals) and `TVMModLoadFromFile` (a loader global per format). The module object itself
//! ([`Module`], [`ModuleNode`]) is in [`packed`](crate::runtime::function::packed): values carry modules and modules
//! hand out packed functions, so the two are defined together. Loaders for files are globals named
//! `runtime.module.loadfile_<format>`.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Module, Value};
use crate::runtime::function::registry;
use crate::runtime::object::header::ObjectHeader;

impl Module {
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

    /// `TVMModLoadFromFile`: dispatch on `format` (or the file extension) to the loader global
    /// for it, under either generation's name: TVM 0.18's `runtime.module.loadfile_<format>`,
    /// else tvm-ffi's `ffi.Module.load_from_file.<format>` (apache-tvm's compiler registers its
    /// `.ll` loader so). Both take the file name and the format.
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
        let names = [format!("runtime.module.loadfile_{fmt}"), format!("ffi.Module.load_from_file.{fmt}")];
        let Some((loader_name, loader)) = names.iter().find_map(|n| registry::get(n).map(|f| (n, f))) else {
            return Err(Error::value(format!(
                "cannot load module `{file_name}`: unknown format `{fmt}` (no loader `{}` or `{}` is registered)",
                names[0], names[1]
            )));
        };
        loader
            .call(&[Value::Str(file_name.to_string()), Value::Str(format.to_string())])?
            .into_module()
            .map_err(|e| e.context(format!("loader `{loader_name}` did not return a module")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::function::packed::{ModuleNode, PackedFunc};
    use std::any::Any;

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

    /// The modules C++'s `imports_` (tvm-ffi's reflected field) lists for `m`.
    fn reflected_imports(m: &Module) -> Vec<usize> {
        let fields = crate::runtime::reflection::fields::named_field_values(&m.to_object_ref()).unwrap();
        let [(name, _, Value::Object(array))] = &fields[..] else { panic!("one field: {fields:?}") };
        assert_eq!(name, "imports_");
        let items = crate::runtime::collections::list_map::sequence_items(array).unwrap().unwrap();
        items.iter().map(|v| v.clone().into_module().unwrap().as_header() as usize).collect()
    }

    #[test]
    fn the_reflected_imports_follow_the_import_list() {
        let a = Module::from_node(Named("a".into(), &[]));
        let b = Module::from_node(Named("b".into(), &[]));
        let c = Module::from_node(Named("c".into(), &[]));
        assert!(reflected_imports(&a).is_empty());
        a.import(&b).unwrap();
        let before = reflected_imports(&a);
        a.import(&c).unwrap();
        let header = |m: &Module| m.as_header() as usize;
        assert_eq!((before, reflected_imports(&a)), (vec![header(&b)], vec![header(&b), header(&c)]));
        a.clear_imports();
        assert!(reflected_imports(&a).is_empty());
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
