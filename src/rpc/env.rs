//! The functions a TVM host calls on the server by name, bound to one session: its work
//! directory (`tvm.rpc.server.upload`, `download`, `remove`, `workpath`, `load_module`) and
//! the module helpers (`ModuleGetFunction`, `ImportModule`) and MetaSchedule's
//! `tvm.contrib.random.random_fill_for_measure`. They are looked up before the
//! global registry and exist only inside a session, so they never leak into the process's
//! registry and two sessions never see each other's files.

use super::link;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, Module, PackedFunc, Value};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The session's work directory and its functions.
pub struct Env {
    dir: Arc<PathBuf>,
    functions: HashMap<&'static str, PackedFunc>,
}

impl Env {
    /// The functions over `dir` (an existing directory the session owns).
    pub fn new(dir: PathBuf) -> Env {
        let dir = Arc::new(dir);
        let mut functions = HashMap::new();
        let with_dir = |f: fn(&Path, Args<'_>) -> Result<Value>| {
            let dir = dir.clone();
            PackedFunc::from_typed(move |args| f(&dir, args))
        };
        functions.insert("tvm.rpc.server.workpath", with_dir(workpath));
        functions.insert("tvm.rpc.server.upload", with_dir(upload));
        functions.insert("tvm.rpc.server.download", with_dir(download));
        functions.insert("tvm.rpc.server.remove", with_dir(remove));
        functions.insert("tvm.rpc.server.load_module", with_dir(load_module));
        functions.insert("tvm.rpc.server.ModuleGetFunction", PackedFunc::from_typed(module_get_function));
        functions.insert("tvm.rpc.server.ImportModule", PackedFunc::from_typed(import_module));
        functions.insert(
            "tvm.contrib.random.random_fill_for_measure",
            PackedFunc::from_typed(link::random_fill_for_measure),
        );
        Env { dir, functions }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A session function by its TVM name.
    pub fn get(&self, name: &str) -> Option<PackedFunc> {
        self.functions.get(name).cloned()
    }
}

/// `name` inside `dir`: relative, without `..`, and not through a symbolic link.
pub fn confined(dir: &Path, name: &str) -> Result<PathBuf> {
    let rel = Path::new(name);
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    if name.is_empty() || !plain {
        return Err(Error::value(format!(
            "file name {name:?} must be a relative path inside the session's work directory (no `..`, no absolute path)"
        )));
    }
    let mut path = dir.to_path_buf();
    for c in rel.components() {
        path.push(c);
        if path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::value(format!("file name {name:?} goes through a symbolic link")));
        }
    }
    Ok(path)
}

fn path_arg(dir: &Path, args: &Args<'_>) -> Result<PathBuf> {
    confined(dir, &args.string(0)?)
}

fn workpath(dir: &Path, args: Args<'_>) -> Result<Value> {
    Ok(Value::Str(path_arg(dir, &args)?.to_string_lossy().into_owned()))
}

fn upload(dir: &Path, args: Args<'_>) -> Result<Value> {
    args.expect_len(2, "tvm.rpc.server.upload(file name, bytes)")?;
    let path = path_arg(dir, &args)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(format!("upload: {}: {e}", parent.display())))?;
    }
    std::fs::write(&path, args.bytes(1)?).map_err(|e| Error::io(format!("upload: {}: {e}", path.display())))?;
    Ok(Value::Null)
}

fn download(dir: &Path, args: Args<'_>) -> Result<Value> {
    let path = path_arg(dir, &args)?;
    std::fs::read(&path).map(Value::Bytes).map_err(|e| Error::io(format!("download: {}: {e}", path.display())))
}

/// Remove a file; `""` (the work directory itself, which MetaSchedule removes after each
/// candidate) is left to the end of the session, which removes the directory.
fn remove(dir: &Path, args: Args<'_>) -> Result<Value> {
    if args.string(0)?.is_empty() {
        return Ok(Value::Null);
    }
    let path = path_arg(dir, &args)?;
    std::fs::remove_file(&path).map_err(|e| Error::io(format!("remove: {}: {e}", path.display())))?;
    Ok(Value::Null)
}

fn load_module(dir: &Path, args: Args<'_>) -> Result<Value> {
    let path = link::loadable(&path_arg(dir, &args)?, confined)?;
    Module::load_from_file(&path.to_string_lossy(), "").map(Value::Module)
}

/// `(module, name, query_imports)`: the function, or NULL when the module has none (the host
/// turns that into its own error naming the function).
fn module_get_function(args: Args<'_>) -> Result<Value> {
    args.expect_len(3, "tvm.rpc.server.ModuleGetFunction(module, name, query_imports)")?;
    let f = args.module(0)?.get_function(&args.string(1)?, args.int(2)? != 0)?;
    Ok(f.map(Value::Func).unwrap_or(Value::Null))
}

fn import_module(args: Args<'_>) -> Result<Value> {
    args.expect_len(2, "tvm.rpc.server.ImportModule(parent, child)")?;
    args.module(0)?.import(&args.module(1)?)?;
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_work_directory() {
        let dir = std::env::temp_dir().join(format!("rpc-env-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(confined(&dir, "a/b.so").unwrap(), dir.join("a/b.so"));
        for bad in ["", "../x", "/etc/passwd", "a/../../x", "./x"] {
            let e = confined(&dir, bad).unwrap_err().to_string();
            assert!(e.contains("relative path inside"), "{bad}: {e}");
        }
        std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
        let e = confined(&dir, "out/x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
