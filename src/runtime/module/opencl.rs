//! TVM's `opencl` device module: OpenCL C source and a table of its kernels, which host code
//! calls as packed functions (the kernel's arguments, then one integer per launch tag). Both
//! generations' payloads are read: `str fmt | u64 n | n × {str key, str name, vec<DLDataType>
//! arg_types, vec<str> launch_param_tags[, vec<i32> arg_extra_tags (0.2x)]} | str source`.

use crate::abi::{dtype_code, DLDataType, DLDevice};
use crate::runtime::base::byteio::{Input, Reader};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::device::opencl::{KernelArg, Program};
use crate::runtime::function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// One kernel of the table.
#[derive(Clone)]
struct Kernel {
    name: String,
    arg_types: Vec<DLDataType>,
    launch_tags: Vec<String>,
}

struct OpenClModule {
    program: Arc<Program>,
    kernels: HashMap<String, Kernel>,
    source: String,
}

/// Decodes an `opencl` module's payload (either generation).
pub fn load_binary(r: &mut Reader<'_>) -> Result<Module> {
    // A payload of its own (tvm-ffi's library bin, `ffi.Module.load_from_bytes.opencl`) is the
    // tvm-ffi generation's; a place in TVM 0.18's module blob, 0.18's.
    let own = r.what() == "module bytes";
    let (kernels, source) = read(r, own)?;
    if own && !r.is_at_end() {
        return Err(Error::value("opencl module: bytes left after the source (not an opencl payload?)"));
    }
    let program = Arc::new(Program::new(&source)?);
    Ok(Module::from_node(OpenClModule { program, kernels, source }))
}

/// `runtime.module.loadfile_cl`: OpenCL C source in `path` and its function table in the meta
/// file TVM writes beside it (`NAME.tvm_meta.json`: `{"tvm_version", "func_info": {key: {"name",
/// "arg_types", "launch_param_tags" (or the older "thread_axis_tags")}}}`).
pub fn load_file(path: &str) -> Result<Module> {
    let source = std::fs::read_to_string(path).map_err(|e| Error::value(format!("{path}: {e}")))?;
    let stem = path.rsplit_once('.').filter(|(s, _)| !s.ends_with('/')).map_or(path, |(s, _)| s);
    let meta = format!("{stem}.tvm_meta.json");
    let text = std::fs::read_to_string(&meta).map_err(|e| Error::value(format!("{meta} (the kernels' table): {e}")))?;
    let kernels = meta_table(&text).map_err(|e| e.context(&meta))?;
    let program = Arc::new(Program::new(&source)?);
    Ok(Module::from_node(OpenClModule { program, kernels, source }))
}

/// The kernels of a meta file's `func_info`.
fn meta_table(text: &str) -> Result<HashMap<String, Kernel>> {
    let json: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::value(format!("not JSON: {e}")))?;
    let info =
        json.get("func_info").and_then(|f| f.as_object()).ok_or_else(|| Error::value("no object `func_info`"))?;
    let strings = |entry: &serde_json::Value, field: &str| -> Result<Vec<String>> {
        let Some(v) = entry.get(field) else { return Ok(Vec::new()) };
        let items = v.as_array().ok_or_else(|| Error::value(format!("`{field}` is not a list")))?;
        items
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| Error::value(format!("`{field}`: not a string: {x}")))
            })
            .collect()
    };
    let mut kernels = HashMap::with_capacity(info.len());
    for (key, entry) in info {
        let in_entry = |e: Error| e.context(format!("func_info.{key}"));
        let arg_types = strings(entry, "arg_types")
            .map_err(in_entry)?
            .iter()
            .map(|t| DLDataType::parse(t))
            .collect::<Result<Vec<_>>>()
            .map_err(in_entry)?;
        let mut launch_tags = strings(entry, "launch_param_tags").map_err(in_entry)?;
        if entry.get("launch_param_tags").is_none() {
            launch_tags = strings(entry, "thread_axis_tags").map_err(in_entry)?;
        }
        kernels.insert(key.clone(), Kernel { name: key.clone(), arg_types, launch_tags });
    }
    Ok(kernels)
}

/// The table and the source; `extra_tags`: each entry ends with 0.2x's argument tags.
fn read(r: &mut Reader<'_>, extra_tags: bool) -> Result<(HashMap<String, Kernel>, String)> {
    let fmt = r.string("opencl module format")?;
    if fmt != "cl" {
        return Err(Error::value(format!(
            "opencl module of format \"{fmt}\": this runtime runs OpenCL C source (\"cl\") only"
        )));
    }
    let n = r.count("opencl function table", 16)?;
    let mut kernels = HashMap::with_capacity(n);
    for _ in 0..n {
        let key = r.string("opencl function key")?;
        let name = r.string("opencl function name")?;
        let types = r.count("opencl argument types", 4)?;
        let arg_types = (0..types)
            .map(|_| {
                Ok(DLDataType::new(
                    r.u8("argument type code")?,
                    r.u8("argument type bits")?,
                    r.u16("argument type lanes")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let launch_tags = r.strings("opencl launch tags")?;
        if extra_tags {
            let m = r.count("opencl argument extra tags", 4)?;
            for _ in 0..m {
                let t = r.i32("argument extra tag")?;
                if t != 0 {
                    return Err(Error::value(format!(
                        "kernel {name}: argument tag {t} (a TensorMap) is not supported on OpenCL"
                    )));
                }
            }
        }
        // TVM 0.18 leaves the name empty: the key names the kernel.
        if !name.is_empty() && key != name {
            return Err(Error::value(format!("opencl function table: key \"{key}\" names function \"{name}\"")));
        }
        kernels.insert(key.clone(), Kernel { name: key, arg_types, launch_tags });
    }
    let source = r.string("opencl source")?;
    Ok((kernels, source))
}

impl ModuleNode for OpenClModule {
    fn type_key(&self) -> &str {
        "opencl"
    }

    fn get_function(&self, name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        let Some(kernel) = self.kernels.get(name).cloned() else { return Ok(None) };
        let program = self.program.clone();
        Ok(Some(PackedFunc::from_typed(move |args| launch(&program, &kernel, &args).map(|()| Value::Null))))
    }

    fn inspect_source(&self, _format: &str) -> Result<String> {
        Ok(self.source.clone())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Launches `kernel` with a host function's arguments: the kernel's, then its launch tags.
fn launch(program: &Program, kernel: &Kernel, args: &Args<'_>) -> Result<()> {
    let (n, t) = (kernel.arg_types.len(), kernel.launch_tags.len());
    if args.len() != n + t {
        return Err(Error::value(format!(
            "kernel {} takes {n} arguments and {t} launch values, got {} values",
            kernel.name,
            args.len()
        )));
    }
    let mut device = None;
    let mut values = Vec::with_capacity(n);
    for (i, ty) in kernel.arg_types.iter().enumerate() {
        values.push(match (ty.code, ty.bits) {
            (dtype_code::OPAQUE_HANDLE, _) => {
                let p = args.handle(i)?;
                device = device.or_else(|| crate::runtime::device::opencl::device_of(p));
                KernelArg::Buffer(p)
            }
            (dtype_code::INT | dtype_code::UINT, 64) => KernelArg::scalar(&args.int(i)?.to_le_bytes()),
            (dtype_code::INT | dtype_code::UINT, 32) => KernelArg::scalar(&(args.int(i)? as i32).to_le_bytes()),
            (dtype_code::FLOAT, 32) => KernelArg::scalar(&(args.float(i)? as f32).to_le_bytes()),
            (dtype_code::FLOAT, 64) => KernelArg::scalar(&args.float(i)?.to_le_bytes()),
            _ => {
                return Err(Error::value(format!(
                    "kernel {}: argument {i} of type code {} and {} bits is not supported",
                    kernel.name, ty.code, ty.bits
                )))
            }
        });
    }
    let tags = kernel
        .launch_tags
        .iter()
        .enumerate()
        .map(|(j, tag)| Ok((tag.as_str(), args.int(n + j)?)))
        .collect::<Result<Vec<_>>>()?;
    let dev = DLDevice { device_type: crate::abi::device_type::OPENCL, device_id: device.unwrap_or(0) };
    program.launch(&kernel.name, dev, &values, &tags)
}
