//! Global packed functions the runtime installs itself.

use super::library::system_lib;
use super::module::Module;
use super::packed::{PackedFunc, Value};

pub(crate) fn all() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "runtime.SystemLib",
            PackedFunc::from_typed(|args| {
                let prefix = if args.is_empty() { String::new() } else { args.string(0)? };
                Ok(Value::Module(system_lib(&prefix)))
            }),
        ),
        (
            "runtime.ModuleLoadFromFile",
            PackedFunc::from_typed(|args| {
                let fmt = if args.len() > 1 { args.string(1)? } else { String::new() };
                Ok(Value::Module(Module::load_from_file(&args.string(0)?, &fmt)?))
            }),
        ),
        (
            "runtime.ModuleGetTypeKey",
            PackedFunc::from_typed(|args| Ok(Value::Str(args.module(0)?.type_key().to_string()))),
        ),
        (
            "runtime.ModuleImportsSize",
            PackedFunc::from_typed(|args| Ok(Value::Int(args.module(0)?.imports().len() as i64))),
        ),
        (
            "runtime.ModuleGetImport",
            PackedFunc::from_typed(|args| {
                let m = args.module(0)?;
                let i = args.int(1)?;
                let imports = m.imports();
                let n = imports.len();
                usize::try_from(i)
                    .ok()
                    .and_then(|i| imports.into_iter().nth(i))
                    .map(Value::Module)
                    .ok_or_else(|| super::error::Error::index(format!("import index {i} out of range (module has {n})")))
            }),
        ),
    ]
}
