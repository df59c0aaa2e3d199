//! Weight shards as MLC-LLM models ship them, and the process-wide tensor cache the models read
//! their weights from (`vm.builtin.tensor_cache.*`, and TVM 0.18's names
//! `vm.builtin.ndarray_cache.*`; `vm.builtin.param_*_from_cache*`).
//!
//! A weight directory holds `tensor-cache.json` (`ndarray-cache.json` before apache-tvm 0.22,
//! read when the new name is absent) and binary shards:
//!
//! ```text
//! {"metadata": {...}, "records": [                      one entry per shard file
//!   {"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 32, "md5sum": "...",
//!    "records": [{"name": "x_0", "shape": [3], "dtype": "int32", "format": "raw",
//!                 "nbytes": 12, "byteOffset": 0}, ...]}, ...]}
//! ```
//!
//! A record's `format` is `raw` (its bytes as the tensor holds them) or `f32-to-bf16` (a float32
//! tensor stored as the upper halves of its values; other dtypes so labelled are raw). Each
//! shard is read whole and checked (its size, each record's place and size) before any of its
//! tensors enters the cache; an error names the shard and the record.

use crate::abi::{DLDataType, DLDevice};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::container::FfiArrayObj;
use crate::runtime::function::packed::{Args, Module, ModuleNode, PackedFunc, Value};
use crate::runtime::object::header::ObjectRef;
use crate::runtime::tensor::ndarray::NDArray;
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;

/// The cache: tensors by name, shared by every model in the process (as TVM's).
static CACHE: Lazy<Mutex<HashMap<String, NDArray>>> = Lazy::new(|| Mutex::new(HashMap::new()));

pub(super) fn globals() -> Vec<(String, PackedFunc)> {
    let mut out = Vec::new();
    for prefix in ["vm.builtin.tensor_cache", "vm.builtin.ndarray_cache"] {
        let cache = |f: fn(Args<'_>) -> Result<Value>| PackedFunc::from_typed(f);
        out.push((format!("{prefix}.load"), cache(load_global)));
        out.push((format!("{prefix}.get"), cache(|a| Ok(get(&a.string(0)?).map_or(Value::Null, Value::NDArray)))));
        out.push((format!("{prefix}.update"), cache(update_global)));
        out.push((
            format!("{prefix}.remove"),
            cache(|a| {
                Ok({
                    remove(&a.string(0)?);
                    Value::Null
                })
            }),
        ));
        out.push((
            format!("{prefix}.clear"),
            cache(|_| {
                Ok({
                    clear();
                    Value::Null
                })
            }),
        ));
    }
    let named = |name: &str, f: fn(Args<'_>) -> Result<Value>| (name.to_string(), PackedFunc::from_typed(f));
    out.extend([
        named("vm.builtin.param_array_from_cache", |a| by_prefix(&a.string(0)?, a.int(1)?).map(array)),
        named("vm.builtin.param_array_from_cache_by_name", |a| by_names(&names_of(a.to_value(0)?)?).map(array)),
        named("vm.builtin.param_array_from_cache_by_name_unpacked", |a| by_names(&unpacked_names(&a)?).map(array)),
        named("vm.builtin.param_module_from_cache", |a| by_prefix(&a.string(0)?, a.int(1)?).map(param_module)),
        named("vm.builtin.param_module_from_cache_by_name", |a| by_names(&names_of(a.to_value(0)?)?).map(param_module)),
    ]);
    out
}

/// The cached tensor `name`.
pub fn get(name: &str) -> Option<NDArray> {
    CACHE.lock().get(name).cloned()
}

/// Puts `tensor` in the cache as `name`; one already there is an error unless `replace`.
pub fn update(name: &str, tensor: NDArray, replace: bool) -> Result<()> {
    let mut cache = CACHE.lock();
    if !replace && cache.contains_key(name) {
        return Err(Error::internal(format!("Name {name} already exists in the cache")));
    }
    cache.insert(name.to_string(), tensor);
    Ok(())
}

pub fn remove(name: &str) {
    CACHE.lock().remove(name);
}

pub fn clear() {
    CACHE.lock().clear();
}

fn load_global(args: Args<'_>) -> Result<Value> {
    args.expect_len(3, "vm.builtin.tensor_cache.load(cache_path, device_type, device_id)")?;
    let device = DLDevice { device_type: args.int(1)? as i32, device_id: args.int(2)? as i32 };
    load(Path::new(&args.string(0)?), device)?;
    Ok(Value::Null)
}

fn update_global(args: Args<'_>) -> Result<Value> {
    if !(2..=3).contains(&args.len()) {
        return Err(Error::value("vm.builtin.tensor_cache.update(name, tensor[, override]) takes 2 or 3 arguments"));
    }
    let t = match args.to_value(1)? {
        Value::NDArray(t) => t,
        // A bare DLTensor (an RPC client's) is copied into a tensor of the cache's own.
        Value::DLTensor(raw) => {
            // SAFETY: a `RawTensor` is vouched for while it may be passed as an argument
            // (`RawTensor::new`'s contract); this copy runs inside that call.
            let t = unsafe { crate::runtime::dlpack::tensor_ref::TensorRef::new(&*raw.as_ptr()) };
            let copy = NDArray::empty(t.shape()?, t.dtype(), t.device())?;
            crate::runtime::tensor::ndarray::copy_from_to(t, copy.tensor())?;
            copy
        }
        other => {
            return Err(Error::type_error(format!(
                "vm.builtin.tensor_cache.update: argument 1 must be a tensor, got {}",
                other.type_name()
            )))
        }
    };
    let replace = args.len() == 3 && args.int(2)? != 0;
    update(&args.string(0)?, t, replace)?;
    Ok(Value::Null)
}

/// Loads every shard of the weight directory `dir` onto `device` into the cache (a name loaded
/// before is replaced).
pub fn load(dir: &Path, device: DLDevice) -> Result<()> {
    let index =
        ["tensor-cache.json", "ndarray-cache.json"].iter().map(|n| dir.join(n)).find(|p| p.exists()).ok_or_else(
            || Error::io(format!("Cannot open {}: no such file", dir.join("tensor-cache.json").display())),
        )?;
    let text =
        std::fs::read_to_string(&index).map_err(|e| Error::io(format!("Cannot open {}: {e}", index.display())))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::value(format!("{}: not JSON ({e})", index.display())))?;
    let shards = json
        .get("records")
        .and_then(|r| r.as_array())
        .ok_or_else(|| Error::value(format!("{}: no `records` list of shards", index.display())))?;
    for (i, shard) in shards.iter().enumerate() {
        let tensors =
            load_shard(dir, shard, device).map_err(|e| e.context(format!("{}: shard {i}", index.display())))?;
        CACHE.lock().extend(tensors);
    }
    Ok(())
}

/// Key `key` of a JSON object, or an error naming it and `what`.
fn field<'a>(v: &'a serde_json::Value, key: &str, what: &str) -> Result<&'a serde_json::Value> {
    v.get(key).ok_or_else(|| Error::key(format!("{what} has no `{key}`")))
}

fn text<'a>(v: &'a serde_json::Value, key: &str, what: &str) -> Result<&'a str> {
    field(v, key, what)?.as_str().ok_or_else(|| Error::type_error(format!("{what}: `{key}` is not a string")))
}

fn count(v: &serde_json::Value, key: &str, what: &str) -> Result<usize> {
    let n = field(v, key, what)?;
    n.as_u64().map(|n| n as usize).ok_or_else(|| Error::type_error(format!("{what}: `{key}` is not a count ({n})")))
}

/// The tensors of one shard, all checked and made before any enters the cache.
fn load_shard(dir: &Path, shard: &serde_json::Value, device: DLDevice) -> Result<Vec<(String, NDArray)>> {
    let path = text(shard, "dataPath", "the shard")?;
    let what = format!("shard `{path}`");
    if text(shard, "format", &what)? != "raw-shard" {
        return Err(Error::value(format!("{what}: only the `raw-shard` format is supported")));
    }
    let bytes = std::fs::read(dir.join(path)).map_err(|e| Error::io(format!("{what}: cannot read it: {e}")))?;
    let expected = count(shard, "nbytes", &what)?;
    if bytes.len() != expected {
        return Err(Error::value(format!(
            "{what} has {} bytes where the cache says {expected}: it was not downloaded completely (download it again)",
            bytes.len()
        )));
    }
    let records = field(shard, "records", &what)?
        .as_array()
        .ok_or_else(|| Error::type_error(format!("{what}: `records` is not a list")))?;
    records.iter().map(|r| load_record(&bytes, r, &what, device)).collect()
}

fn load_record(shard: &[u8], r: &serde_json::Value, shard_what: &str, device: DLDevice) -> Result<(String, NDArray)> {
    let name = text(r, "name", &format!("a record of {shard_what}"))?.to_string();
    let what = format!("record `{name}` of {shard_what}");
    let shape = field(r, "shape", &what)?
        .as_array()
        .and_then(|dims| dims.iter().map(|d| d.as_i64()).collect::<Option<Vec<i64>>>())
        .ok_or_else(|| Error::type_error(format!("{what}: `shape` is not a list of integers")))?;
    let dtype = DLDataType::parse(text(r, "dtype", &what)?).map_err(|e| e.context(&what))?;
    let (offset, nbytes) = (count(r, "byteOffset", &what)?, count(r, "nbytes", &what)?);
    let stored = offset.checked_add(nbytes).and_then(|end| shard.get(offset..end)).ok_or_else(|| {
        Error::value(format!("{what}: bytes {offset}..{offset}+{nbytes} are past the shard's {}", shard.len()))
    })?;
    let bytes = match text(r, "format", &what)? {
        "f32-to-bf16" if dtype == DLDataType::parse("float32")? => bf16_to_f32(stored),
        "raw" | "f32-to-bf16" => stored.to_vec(),
        other => return Err(Error::value(format!("{what}: unknown format `{other}` (raw or f32-to-bf16)"))),
    };
    let tensor = NDArray::empty(&shape, dtype, device).map_err(|e| e.context(&what))?;
    if tensor.nbytes() != bytes.len() {
        return Err(Error::value(format!(
            "{what}: {} bytes for shape {shape:?} of {dtype}, which holds {}",
            bytes.len(),
            tensor.nbytes()
        )));
    }
    tensor.copy_from_bytes(&bytes).map_err(|e| e.context(&what))?;
    Ok((name, tensor))
}

/// float32 values from their upper halves (little-endian bfloat16).
fn bf16_to_f32(stored: &[u8]) -> Vec<u8> {
    stored.chunks_exact(2).flat_map(|h| ((u16::from_le_bytes([h[0], h[1]]) as u32) << 16).to_le_bytes()).collect()
}

/// `prefix_0`, `prefix_1`, ...: `count` of them, or (`count` = -1) as many as the cache holds.
fn by_prefix(prefix: &str, count: i64) -> Result<Vec<NDArray>> {
    let mut out = Vec::new();
    for i in 0.. {
        if count >= 0 && i >= count {
            break;
        }
        let name = format!("{prefix}_{i}");
        match get(&name) {
            Some(t) => out.push(t),
            None if count < 0 => break,
            None => return Err(Error::internal(format!("Cannot find {name} in cache"))),
        }
    }
    Ok(out)
}

fn by_names(names: &[String]) -> Result<Vec<NDArray>> {
    names.iter().map(|n| get(n).ok_or_else(|| Error::value(format!("Cannot find parameter in cache: {n}")))).collect()
}

/// The names in an array of strings.
fn names_of(v: Value) -> Result<Vec<String>> {
    let Value::Object(o) = v else { return Err(Error::type_error("expected an array of parameter names")) };
    let items = crate::runtime::collections::list_map::sequence_items(&o)?
        .ok_or_else(|| Error::type_error("expected an array of parameter names"))?;
    items
        .into_iter()
        .map(|v| v.into_string().map_err(|_| Error::type_error("a parameter name is not a string")))
        .collect()
}

fn unpacked_names(args: &Args<'_>) -> Result<Vec<String>> {
    (0..args.len())
        .map(|i| {
            let v = args.to_value(i)?;
            let kind = v.type_name();
            v.into_string().map_err(|_| Error::value(format!("Expect string as input, but get {kind} at {i}")))
        })
        .collect()
}

fn array(tensors: Vec<NDArray>) -> Value {
    Value::Object(array_object(tensors))
}

fn array_object(tensors: Vec<NDArray>) -> ObjectRef {
    let items = tensors.into_iter().map(|t| Value::NDArray(t).into_any()).collect();
    FfiArrayObj::new(items).to_object_ref()
}

/// A module whose one function, `get_params`, returns the tensors it was made with.
struct ParamModule(ObjectRef);

impl ModuleNode for ParamModule {
    fn type_key(&self) -> &str {
        "param_module"
    }

    fn get_function(&self, name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        let params = self.0.clone();
        Ok((name == "get_params").then(|| PackedFunc::from_typed(move |_| Ok(Value::Object(params.clone())))))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn param_module(tensors: Vec<NDArray>) -> Value {
    Value::Module(Module::from_node(ParamModule(array_object(tensors))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// A weight directory as apache-tvm's `tvmjs.dump_tensor_cache(..., encode_format=
    /// "f32-to-bf16")` writes it for {x_0: int32 [1, 2, 3], x_1: float32 [1, 1.00390625,
    /// 1.0019531, -2.5e-3, 3.4e38, 1.00390625], w: float16 [[0, 1], [2, 3]]} (its bytes).
    fn write_cache(dir: &Path, prefix: &str, index: &str, shard: &[u8], shard_nbytes: usize, x1_format: &str) {
        std::fs::create_dir_all(dir).unwrap();
        let record = |name: &str, shape: &str, dtype: &str, format: &str, nbytes: usize, offset: usize| {
            format!(
                r#"{{"name": "{prefix}{name}", "shape": {shape}, "dtype": "{dtype}", "format": "{format}", "nbytes": {nbytes}, "byteOffset": {offset}}}"#
            )
        };
        let records = [
            record("x_0", "[3]", "int32", "f32-to-bf16", 12, 0),
            record("x_1", "[6]", "float32", x1_format, 12, 12),
            record("w", "[2, 2]", "float16", "f32-to-bf16", 8, 24),
        ];
        let json = format!(
            r#"{{"metadata": {{}}, "records": [{{"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": {shard_nbytes}, "records": [{}], "md5sum": ""}}]}}"#,
            records.join(", ")
        );
        std::fs::write(dir.join(index), json).unwrap();
        std::fs::write(dir.join("params_shard_0.bin"), shard).unwrap();
    }

    fn u32s(t: &NDArray) -> Vec<u32> {
        t.to_vec_u8().unwrap().chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn shards_load_into_the_cache_as_apache_tvm_loads_them() {
        let root = std::env::temp_dir().join(format!("tvmrt-tensor-cache-{}", std::process::id()));
        let shard = hex("010000000200000003000000803f803f803f24bb7f7f803f0000003c00400042");
        let cpu = DLDevice::cpu(0);
        write_cache(&root.join("good"), "good.", "tensor-cache.json", &shard, 32, "f32-to-bf16");
        load(&root.join("good"), cpu).unwrap();
        assert_eq!(u32s(&get("good.x_0").unwrap()), [1, 2, 3], "an int32 record labelled f32-to-bf16 is raw");
        let x1 = u32s(&get("good.x_1").unwrap());
        assert_eq!(x1, [0x3f800000, 0x3f800000, 0x3f800000, 0xbb240000, 0x7f7f0000, 0x3f800000]);
        assert_eq!(get("good.w").unwrap().to_vec_u8().unwrap(), hex("0000003c00400042"));

        // Parameters by prefix (as many as there are, or exactly so many) and by name.
        assert_eq!(by_prefix("good.x", -1).unwrap().len(), 2);
        let e = by_prefix("good.x", 3).unwrap_err();
        assert!(e.message().contains("Cannot find good.x_2 in cache"), "{e}");
        assert_eq!(by_names(&["good.w".into(), "good.x_1".into()]).unwrap().len(), 2);
        let e = by_names(&["good.nope".into()]).unwrap_err();
        assert!(e.message().contains("Cannot find parameter in cache: good.nope"), "{e}");
        let Value::Module(m) = param_module(by_prefix("good.x", 2).unwrap()) else { panic!("a module") };
        let params = m.get_function("get_params", false).unwrap().unwrap().call(&[]).unwrap();
        assert_eq!(
            crate::runtime::collections::list_map::sequence_items(&match params {
                Value::Object(o) => o,
                other => panic!("an array, not {other:?}"),
            })
            .unwrap()
            .unwrap()
            .len(),
            2
        );

        // The name before apache-tvm 0.22, read when the new one is absent.
        write_cache(&root.join("legacy"), "legacy.", "ndarray-cache.json", &shard, 32, "f32-to-bf16");
        load(&root.join("legacy"), cpu).unwrap();
        assert_eq!(get("legacy.x_1").unwrap().nbytes(), 24);

        // Updates refuse a name already there unless told to replace it.
        let t = get("good.x_0").unwrap();
        assert!(update("good.x_0", t.clone(), false).unwrap_err().message().contains("already exists"));
        update("good.x_0", t, true).unwrap();
        remove("good.x_0");
        assert!(get("good.x_0").is_none());

        // Bad shards: each error names the shard or the record, and nothing of the shard loads.
        let bad = |name: &str, shard: &[u8], nbytes: usize, x1_format: &str| {
            write_cache(&root.join(name), &format!("{name}."), "tensor-cache.json", shard, nbytes, x1_format);
            let e = load(&root.join(name), cpu).unwrap_err();
            assert!(get(&format!("{name}.x_0")).is_none(), "{name}: nothing of a bad shard loads");
            e.message().to_string()
        };
        let e = bad("short", &shard[..31], 32, "f32-to-bf16");
        assert!(e.contains("shard `params_shard_0.bin` has 31 bytes where the cache says 32"), "{e}");
        let e = bad("past", &shard[..20], 20, "f32-to-bf16");
        assert!(
            e.contains("record `past.x_1` of shard `params_shard_0.bin`: bytes 12..12+12 are past the shard's 20"),
            "{e}"
        );
        let e = bad("format", &shard, 32, "f16-to-f8");
        assert!(e.contains("record `format.x_1` of shard `params_shard_0.bin`: unknown format `f16-to-f8`"), "{e}");
        let e = bad("size", &shard, 32, "raw");
        assert!(
            e.contains(
                "record `size.x_1` of shard `params_shard_0.bin`: 12 bytes for shape [6] of float32, which holds 24"
            ),
            "{e}"
        );
        let e = load(&root.join("absent"), cpu).unwrap_err();
        assert!(e.message().contains("Cannot open"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
