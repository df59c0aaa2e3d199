//! Global packed functions the runtime installs itself, above everything they call: the
//! registry below knows none of them; the crate's `init` installs them with [`install`].

use super::base::error::{Error, Result};
use super::container::{map_object, FfiArrayObj, MapObj};
use super::function::packed::{Args, FunctionText, Module, PackedFunc, Value};
use super::function::registry;
use super::module::library::system_lib;
use super::tensor::ndarray::NDArray;
use super::tensor::params::{load_params, save_params};

mod device;
mod tensor;

/// Register the built-in globals (once; later calls do nothing). A name registered before the
/// first call keeps its function.
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The OpenCL driver (its library is opened on its first call, not here).
        let _ = crate::runtime::device::register_device_api(
            crate::abi::device_type::OPENCL,
            &crate::runtime::device::opencl::API,
        );
        for (name, f) in all() {
            registry::register_built_in(name, f);
        }
        for (name, f) in super::module::blob::loader_globals() {
            registry::register_built_in(&name, f);
        }
        if let Err(e) = super::extra::record_methods::install()
            .and_then(|_| super::collections::list_map_globals::install_converters())
            .and_then(|_| super::extra::structural_mutate::install_hooks())
        {
            // Only a broken method table gets here (the tvm-ffi tests call every method).
            eprintln!("tvm-runtime: registering tvm-ffi's own methods failed: {e}");
        }
    });
}

fn all() -> Vec<(&'static str, PackedFunc)> {
    let mut all = super::collections::tvm_globals::globals();
    all.extend(super::collections::tvm_globals::shape_globals());
    all.extend(params_globals());
    all.extend(tensor::globals());
    all.extend(device::globals());
    all.extend(module_globals());
    all.extend(ffi_module_globals());
    all.extend(super::collections::array_globals::globals());
    all.extend(super::collections::list_map_globals::globals());
    all.extend(super::extra::deep_copy::globals());
    all.extend(super::collections::recursive::globals());
    all.extend(super::extra::repr::globals());
    all.extend(super::extra::dataclass::globals());
    all.extend(super::extra::json::globals());
    all.extend(super::extra::serialization::globals());
    all.extend(super::extra::structural_equal::globals());
    all.extend(super::extra::structural_visit::globals());
    all.extend(super::extra::structural_mutate::globals());
    all.extend(super::extra::visit_error::globals());
    all.extend(super::module::time_evaluator::globals());
    all
}

fn params_from_map(args: &Args<'_>, i: usize) -> Result<Vec<u8>> {
    let o = args.object(i)?;
    let map = o
        .downcast::<MapObj>()
        .ok_or_else(|| Error::type_error(format!("argument {i}: expected Map<String, NDArray>")))?;
    let arrays = map
        .0
        .iter()
        .map(|(k, v)| {
            NDArray::from_object(v)
                .map(|a| (k.as_str(), a))
                .ok_or_else(|| Error::type_error(format!("param `{k}` is not an NDArray")))
        })
        .collect::<Result<Vec<_>>>()?;
    save_params(arrays.iter().map(|(k, a)| (*k, a.tensor())))
}

fn params_to_map(params: Vec<(String, super::tensor::ndarray::NDArray)>) -> Value {
    Value::Object(map_object(params.into_iter().map(|(k, a)| (k, a.to_object_ref())).collect()))
}

fn params_globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("runtime.SaveParams", PackedFunc::from_typed(|args| Ok(Value::Bytes(params_from_map(&args, 0)?)))),
        // Relay's name for the same function; TVM's debug executor dumps tensors through it.
        ("tvm.relay._save_param_dict", PackedFunc::from_typed(|args| Ok(Value::Bytes(params_from_map(&args, 0)?)))),
        ("runtime.LoadParams", PackedFunc::from_typed(|args| Ok(params_to_map(load_params(args.bytes(0)?)?)))),
        (
            "runtime.SaveParamsToFile",
            PackedFunc::from_typed(|args| {
                let bytes = params_from_map(&args, 0)?;
                let path = args.string(1)?;
                std::fs::write(&path, bytes).map_err(|e| Error::io(format!("cannot write `{path}`: {e}")))?;
                Ok(Value::Null)
            }),
        ),
        (
            "runtime.LoadParamsFromFile",
            PackedFunc::from_typed(|args| {
                let path = args.string(0)?;
                Ok(params_to_map(super::tensor::params::load_params_file(std::path::Path::new(&path))?))
            }),
        ),
    ]
}

fn module_globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        (
            "runtime.config_threadpool",
            PackedFunc::from_typed(|args| {
                // (mode, nthreads, [cpu ids as strings...]): the calling thread's pool from now on.
                let _mode = if args.is_empty() { 1 } else { args.int(0)? };
                let nthreads = if args.len() > 1 { args.int(1)? } else { 0 };
                let mut cpus = Vec::new();
                for i in 2..args.len() {
                    let s = args.string(i)?;
                    cpus.push(
                        s.trim().parse::<usize>().map_err(|_| Error::value(format!("cpu id `{s}` is not a number")))?,
                    );
                }
                let n = if nthreads > 0 {
                    nthreads as usize
                } else if !cpus.is_empty() {
                    cpus.len()
                } else {
                    super::threads::pool::default_num_threads()
                };
                use super::threads::pool::{set_thread_pool, shared_pool, PoolKey};
                // Shared: a program that configures every thread the same way starts one pool.
                set_thread_pool(shared_pool(PoolKey {
                    threads: n,
                    cpus: (!cpus.is_empty()).then_some(cpus),
                    slot: 0,
                })?);
                Ok(Value::Null)
            }),
        ),
        (
            "runtime.NumThreads",
            PackedFunc::from_typed(|_| Ok(Value::Int(super::threads::pool::current_pool().num_threads() as i64))),
        ),
        (
            "runtime.module.loadfile_so",
            PackedFunc::from_typed(|args| Ok(Value::Module(super::module::dso::load_so(&args.string(0)?)?))),
        ),
        (
            "runtime.module.loadfile_cl",
            PackedFunc::from_typed(|args| Ok(Value::Module(super::module::opencl::load_file(&args.string(0)?)?))),
        ),
        ("runtime.SystemLib", PackedFunc::from_typed(system_lib_global)),
        ("runtime.ModuleLoadFromFile", PackedFunc::from_typed(load_module_global)),
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
                    .ok_or_else(|| Error::index(format!("import index {i} out of range (module has {n})")))
            }),
        ),
    ]
}

/// `ModuleLoadFromFile(path[, format])`.
fn load_module_global(args: Args<'_>) -> Result<Value> {
    let fmt = if args.len() > 1 { args.string(1)? } else { String::new() };
    Ok(Value::Module(Module::load_from_file(&args.string(0)?, &fmt)?))
}

/// `SystemLib([prefix])`.
fn system_lib_global(args: Args<'_>) -> Result<Value> {
    let prefix = if args.is_empty() { String::new() } else { args.string(0)? };
    Ok(Value::Module(system_lib(&prefix)?))
}

/// A flag argument, given as a bool or an int (tvm-ffi passes bools).
fn flag(args: &Args<'_>, i: usize) -> Result<bool> {
    match args.to_value(i)? {
        Value::Bool(b) => Ok(b),
        Value::Int(v) => Ok(v != 0),
        v => Err(Error::type_error(format!("argument {i}: expected bool, got {}", v.type_name()))),
    }
}

/// Modules kept loaded for the life of the process (`ffi.ModuleGlobalsAdd`): never released,
/// since functions they registered may still be called while the process exits.
static KEPT_MODULES: parking_lot::Mutex<Vec<Module>> = parking_lot::Mutex::new(Vec::new());

/// `ffi.ModuleGlobalsAdd` / `ffi.ModuleGlobalsRemove`: keep a module (once) or let it go.
fn keep_module_global(keep: bool) -> PackedFunc {
    PackedFunc::from_typed(move |args| {
        let m = args.module(0)?;
        let mut kept = KEPT_MODULES.lock();
        kept.retain(|k| !Module::ptr_eq(k, &m));
        if keep {
            kept.push(m);
        }
        Ok(Value::Null)
    })
}

/// tvm-ffi's module globals (`ffi.Module*`), over the same modules as TVM 0.18's.
fn ffi_module_globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("ffi.ModuleGlobalsAdd", keep_module_global(true)),
        ("ffi.ModuleGlobalsRemove", keep_module_global(false)),
        ("ffi.ModuleLoadFromFile", PackedFunc::from_typed(load_module_global)),
        ("ffi.Module.create.const_loader", PackedFunc::from_typed(create_const_loader)),
        (
            // (path, function names): an object file export_library links in.
            "runtime.ModuleLoadStaticLibrary",
            PackedFunc::from_typed(|args| {
                let names = args.object(1)?;
                let names = super::collections::list_map::sequence_items(&names)?
                    .ok_or_else(|| Error::type_error("argument 1: expected an array of function names"))?;
                let names = names.into_iter().map(Value::into_string).collect::<Result<Vec<_>>>()?;
                Ok(Value::Module(super::module::static_library::load_file(&args.string(0)?, names)?))
            }),
        ),
        (
            "ffi.Module.load_from_file.so",
            PackedFunc::from_typed(|args| Ok(Value::Module(super::module::dso::load_so(&args.string(0)?)?))),
        ),
        (
            "ffi.ModuleGetFunction",
            PackedFunc::from_typed(|args| {
                let query_imports = args.len() < 3 || flag(&args, 2)?;
                Ok(args.module(0)?.get_function(&args.string(1)?, query_imports)?.map_or(Value::Null, Value::Func))
            }),
        ),
        (
            "ffi.ModuleImplementsFunction",
            PackedFunc::from_typed(|args| {
                let query_imports = args.len() >= 3 && flag(&args, 2)?;
                Ok(Value::Bool(args.module(0)?.implements_function(&args.string(1)?, query_imports)?))
            }),
        ),
        ("ffi.ModuleGetKind", PackedFunc::from_typed(|args| Ok(Value::Str(args.module(0)?.type_key().to_string())))),
        (
            "ffi.ModuleImportModule",
            PackedFunc::from_typed(|args| {
                args.module(0)?.import_module(&args.module(1)?)?;
                Ok(Value::Null)
            }),
        ),
        (
            "ffi.ModuleClearImports",
            PackedFunc::from_typed(|args| {
                args.module(0)?.clear_module_imports()?;
                Ok(Value::Null)
            }),
        ),
        ("ffi.SystemLib", PackedFunc::from_typed(system_lib_global)),
        ("ffi.ModuleGetFunctionDoc", function_text_global(FunctionText::Doc)),
        ("ffi.ModuleGetFunctionMetadata", function_text_global(FunctionText::Metadata)),
        (
            "ffi.ModuleGetPropertyMask",
            PackedFunc::from_typed(|args| Ok(Value::Int(args.module(0)?.node().property_mask()))),
        ),
        (
            "ffi.ModuleInspectSource",
            PackedFunc::from_typed(|args| {
                let format = if args.len() > 1 { args.string(1)? } else { String::new() };
                Ok(Value::Str(args.module(0)?.node().inspect_source(&format)?))
            }),
        ),
        (
            "ffi.ModuleGetWriteFormats",
            PackedFunc::from_typed(|args| {
                let formats = args.module(0)?.node().write_formats()?;
                let items = formats.into_iter().map(|f| Value::Str(f).into_any()).collect();
                Ok(Value::Object(FfiArrayObj::new(items).to_object_ref()))
            }),
        ),
        (
            "ffi.ModuleWriteToFile",
            PackedFunc::from_typed(|args| {
                args.module(0)?.node().write_to_file(&args.string(1)?, &args.string(2)?)?;
                Ok(Value::Null)
            }),
        ),
    ]
}

/// `ffi.ModuleGetFunctionDoc` / `ffi.ModuleGetFunctionMetadata(module, name, query_imports)`:
/// the module's own text of the function, else (when asked) the first import's, else None.
fn function_text_global(which: FunctionText) -> PackedFunc {
    fn find(m: &Module, which: FunctionText, name: &str, query_imports: bool) -> Result<Option<String>> {
        if let Some(text) = m.node().function_text(which, name)? {
            return Ok(Some(text));
        }
        if query_imports {
            for import in m.imports() {
                if let Some(text) = find(&import, which, name, true)? {
                    return Ok(Some(text));
                }
            }
        }
        Ok(None)
    }
    PackedFunc::from_typed(move |args| {
        let query_imports = args.len() > 2 && flag(&args, 2)?;
        Ok(find(&args.module(0)?, which, &args.string(1)?, query_imports)?.map_or(Value::Null, Value::Str))
    })
}

/// (Map<String, Tensor>, Map<String, Array<String>>): constants by name, and the constants of
/// each external symbol.
fn create_const_loader(args: Args<'_>) -> Result<Value> {
    use super::collections::list_map::{map_items, sequence_items};
    let constants = map_items(&args.object(0)?)?
        .into_iter()
        .map(|(k, v)| Ok((k.into_string()?, v.into_ndarray()?)))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.context("argument 0 (constants by name)"))?;
    let symbols = map_items(&args.object(1)?)?
        .into_iter()
        .map(|(k, v)| {
            let Value::Object(names) = v else { return Err(Error::type_error("expected an array of names")) };
            let names = sequence_items(&names)?.ok_or_else(|| Error::type_error("expected an array of names"))?;
            Ok((k.into_string()?, names.into_iter().map(Value::into_string).collect::<Result<Vec<_>>>()?))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.context("argument 1 (constants by symbol)"))?;
    super::module::const_loader::create(constants, symbols).map(Value::Module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{DLDataType, DLDevice};
    use crate::runtime::container::shape_object;
    use crate::runtime::function::registry::require;

    #[test]
    fn kept_modules_are_held_once_until_removed() {
        let m = crate::runtime::module::const_loader::load_metadata_module(
            &mut crate::runtime::base::byteio::Reader::new(&[], "none"),
        )
        .unwrap();
        let held = || KEPT_MODULES.lock().iter().filter(|k| Module::ptr_eq(k, &m)).count();
        let (add, remove) = (keep_module_global(true), keep_module_global(false));
        add.call(&[Value::Module(m.clone())]).unwrap();
        add.call(&[Value::Module(m.clone())]).unwrap();
        assert_eq!(held(), 1);
        remove.call(&[Value::Module(m.clone())]).unwrap();
        assert_eq!(held(), 0);
        assert!(add.call(&[Value::Int(1)]).is_err());
    }

    #[test]
    fn module_introspection_globals() {
        install();
        let m = crate::runtime::module::const_loader::load_metadata_module(
            &mut crate::runtime::base::byteio::Reader::new(&[], "none"),
        )
        .unwrap();
        let call = |name: &str, rest: Vec<Value>| {
            let mut args = vec![Value::Module(m.clone())];
            args.extend(rest);
            require(name).unwrap().call(&args)
        };
        let mask = call("ffi.ModuleGetPropertyMask", vec![]).unwrap().as_int().unwrap();
        assert_eq!(mask, crate::runtime::function::packed::module_property::RUNNABLE);
        assert!(
            matches!(call("ffi.ModuleInspectSource", vec![Value::Str("c".into())]).unwrap(), Value::Str(s) if s.is_empty())
        );
        let formats = call("ffi.ModuleGetWriteFormats", vec![]).unwrap();
        let Value::Object(o) = formats else { panic!("formats are not an array") };
        assert_eq!(o.downcast::<FfiArrayObj>().unwrap().items().len(), 0);
        let e = call("ffi.ModuleWriteToFile", vec![Value::Str("x.bin".into()), Value::Str("bin".into())]).unwrap_err();
        assert!(e.message().contains("does not support WriteToFile"), "{e}");
        for text in ["ffi.ModuleGetFunctionDoc", "ffi.ModuleGetFunctionMetadata"] {
            assert!(matches!(call(text, vec![Value::Str("main".into()), Value::Bool(true)]).unwrap(), Value::Null));
        }
    }

    #[test]
    fn array_alloc_with_scope_and_device_attr() {
        install();
        let alloc = require("runtime.TVMArrayAllocWithScope").unwrap();
        let a = alloc
            .call(&[
                Value::Object(shape_object(&[2, 3])),
                Value::DataType(DLDataType::FLOAT32),
                Value::Device(DLDevice::cpu(0)),
                Value::Null,
            ])
            .unwrap()
            .into_ndarray()
            .unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a.data_ptr() as usize % 64, 0);
        let e = alloc
            .call(&[
                Value::Object(shape_object(&[2])),
                "float32".into(),
                Value::Device(DLDevice::cpu(0)),
                "texture".into(),
            ])
            .unwrap_err();
        assert!(e.message().contains("texture"));
        let attr = require("runtime.GetDeviceAttr").unwrap();
        assert_eq!(attr.call(&[Value::Int(1), Value::Int(0), Value::Int(0)]).unwrap().as_int().unwrap(), 1);
        assert_eq!(attr.call(&[Value::Int(2), Value::Int(0), Value::Int(0)]).unwrap().as_int().unwrap(), 0);
    }

    #[test]
    fn params_globals_round_trip_maps() {
        install();
        let a = crate::runtime::tensor::ndarray::NDArray::from_bytes(
            &[2],
            DLDataType::FLOAT32,
            &[0, 0, 128, 63, 0, 0, 0, 64],
        )
        .unwrap();
        let map = require("runtime.Map").unwrap().call(&[Value::from("w"), Value::NDArray(a)]).unwrap();
        let bytes = match require("runtime.SaveParams").unwrap().call(&[map]).unwrap() {
            Value::Bytes(b) => b,
            v => panic!("expected bytes, got {}", v.type_name()),
        };
        let back = require("runtime.LoadParams").unwrap().call(&[Value::Bytes(bytes)]).unwrap();
        let w = require("runtime.MapGetItem").unwrap().call(&[back, "w".into()]).unwrap().into_ndarray().unwrap();
        assert_eq!(w.to_vec_u8().unwrap(), vec![0, 0, 128, 63, 0, 0, 0, 64]);
    }
}
