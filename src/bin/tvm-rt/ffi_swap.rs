//! `tvm-rt ffi-swap`: put this runtime's `libtvm_ffi.so` in place of the one inside a Python
//! environment's `tvm_ffi` package (the apache-tvm-ffi wheel), keeping the wheel's own file as
//! a backup beside it, and put that backup back with `--restore`. With `--tvm-runtime`, apache-tvm's
//! `tvm/lib/libtvm_runtime.so` becomes a link to that same library (in the tvm-ffi generation
//! this runtime is one library: loaded under either name, the process holds one copy, one
//! registry and one type table).
//!
//! Packages are found with `importlib.util.find_spec`, which locates them without running their
//! `__init__.py` (importing `tvm_ffi` would load the very library being replaced).

use crate::fail::{Failure, FileContext};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The library inside the package's `lib/` folder.
const LIBRARY: &str = "libtvm_ffi.so";
/// The wheel's own library, kept beside it while ours is in place.
const BACKUP: &str = "libtvm_ffi.so.orig";
/// A symbol every tvm-ffi library exports: what tells a library from another file.
const MARK: &[u8] = b"TVMFFIFunctionCall\0";

/// apache-tvm's runtime library, inside its package's `lib/` folder.
const TVM_RUNTIME: &str = "libtvm_runtime.so";
/// apache-tvm's own runtime library, kept beside the link to ours.
const TVM_RUNTIME_BACKUP: &str = "libtvm_runtime.so.orig";

/// Prints the folder of the package named by argv[1]; exits 3 when there is none.
const FIND_PACKAGE: &str = "import importlib.util, sys
spec = importlib.util.find_spec(sys.argv[1])
if spec is None or not spec.submodule_search_locations:
    sys.exit(3)
sys.stdout.write(list(spec.submodule_search_locations)[0])";

/// Use this runtime as a Python environment's tvm-ffi: replace tvm_ffi/lib/libtvm_ffi.so of
/// the apache-tvm-ffi package (the original is kept as libtvm_ffi.so.orig), or put it back
#[derive(clap::Args)]
pub struct Args {
    /// The Python interpreter whose tvm_ffi package to change (e.g. .venv/bin/python)
    #[arg(long)]
    python: PathBuf,
    /// The libtvm_ffi.so to install (default: the one beside this executable, where
    /// `cargo build --release` puts both)
    #[arg(long, conflicts_with = "restore")]
    library: Option<PathBuf>,
    /// Put the packages' original libraries back (from libtvm_ffi.so.orig and, where
    /// `--tvm-runtime` made one, tvm/lib/libtvm_runtime.so.orig)
    #[arg(long)]
    restore: bool,
    /// Also make apache-tvm's tvm/lib/libtvm_runtime.so a link to the installed library (the
    /// original is kept as libtvm_runtime.so.orig), for `TVM_USE_RUNTIME_LIB=1`
    #[arg(long, conflicts_with = "restore")]
    tvm_runtime: bool,
}

pub fn main(a: Args) -> Result<(), Failure> {
    let lib_dir = package_dir(&a.python, "tvm_ffi", "apache-tvm-ffi")?.join("lib");
    let (installed, backup) = (lib_dir.join(LIBRARY), lib_dir.join(BACKUP));
    if a.restore {
        return restore_all(&a.python, &installed, &backup);
    }
    let ours = match a.library {
        Some(path) => path,
        None => beside_this_program()?,
    };
    // Found first, so that a missing apache-tvm changes nothing.
    let tvm_lib = match a.tvm_runtime {
        true => Some(package_dir(&a.python, "tvm", "apache-tvm")?.join("lib")),
        false => None,
    };
    swap(&ours, &installed, &backup)?;
    if let Some(tvm_lib) = tvm_lib {
        link_runtime(&installed, &tvm_lib.join(TVM_RUNTIME), &tvm_lib.join(TVM_RUNTIME_BACKUP))?;
    }
    Ok(())
}

/// The folder of the package `name` (from the pip distribution `dist`) that `python` imports.
fn package_dir(python: &Path, name: &str, dist: &str) -> Result<PathBuf, Failure> {
    let out = Command::new(python)
        .args(["-c", FIND_PACKAGE, name])
        .output()
        .map_err(|e| Failure::usage(format!("--python {}: cannot run it: {e}", python.display())))?;
    match out.status.code() {
        Some(0) if !out.stdout.is_empty() => Ok(PathBuf::from(OsString::from_vec(out.stdout))),
        Some(3) => Err(Failure::usage(format!(
            "--python {}: no {name} package is installed for it (pip install {dist})",
            python.display()
        ))),
        _ => Err(Failure::usage(format!(
            "--python {}: looking up {name} failed: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// `libtvm_ffi.so` in this executable's folder.
fn beside_this_program() -> Result<PathBuf, Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::usage(format!("cannot find this executable: {e}")))?;
    let path = exe.with_file_name(LIBRARY);
    if !path.is_file() {
        return Err(Failure::file(&path, "no such file: build it (cargo build --release) or name one with --library"));
    }
    Ok(path)
}

/// The bytes of the library at `path`, checked to be a tvm-ffi shared library.
fn read_library(path: &Path) -> Result<Vec<u8>, Failure> {
    let bytes = std::fs::read(path).in_file(path)?;
    if !bytes.starts_with(b"\x7fELF") || !bytes.windows(MARK.len()).any(|w| w == MARK) {
        return Err(Failure::file(path, "not a tvm-ffi shared library (an ELF file exporting TVMFFIFunctionCall)"));
    }
    Ok(bytes)
}

fn swap(ours: &Path, installed: &Path, backup: &Path) -> Result<(), Failure> {
    let new = read_library(ours)?;
    if !installed.is_file() {
        return Err(Failure::file(installed, "no such file: the tvm_ffi package has no library to replace"));
    }
    if std::fs::read(installed).in_file(installed)? == new {
        println!("{} is {} already", installed.display(), ours.display());
        return Ok(());
    }
    if backup.exists() {
        return Err(Failure::file(
            backup,
            format!(
                "a backup exists already and {} is not {}: run `tvm-rt ffi-swap --restore` first \
                 (or, if the package was reinstalled since, remove the stale backup)",
                installed.display(),
                ours.display()
            ),
        ));
    }
    std::fs::copy(installed, backup).in_file(backup)?;
    replace(installed, &new)?;
    println!("{} is now {} (the original is {})", installed.display(), ours.display(), backup.display());
    Ok(())
}

/// Write `bytes` beside `target` and rename them over it, so that no reader ever sees a
/// half-written library (a process that has the old one loaded keeps its copy).
fn replace(target: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let staged = target.with_file_name(format!(".{LIBRARY}.tvm-rt-new"));
    let permissions = std::fs::metadata(target).in_file(target)?.permissions();
    let written = std::fs::write(&staged, bytes)
        .and_then(|()| std::fs::set_permissions(&staged, permissions))
        .and_then(|()| std::fs::rename(&staged, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written.in_file(target)
}

/// Make `runtime` (apache-tvm's library) a link to `installed` (ours, in the tvm_ffi package),
/// keeping the original as `backup`. A link, not a copy: the dynamic loader knows a file it has
/// loaded already by its device and inode, so both names load one library.
fn link_runtime(installed: &Path, runtime: &Path, backup: &Path) -> Result<(), Failure> {
    if std::fs::read_link(runtime).is_ok_and(|target| target == installed) {
        println!("{} is a link to {} already", runtime.display(), installed.display());
        return Ok(());
    }
    if !runtime.is_file() {
        return Err(Failure::file(runtime, "no such file: the tvm package has no runtime library to replace"));
    }
    if backup.exists() {
        return Err(Failure::file(
            backup,
            format!(
                "a backup exists already and {} is not a link to {}: run `tvm-rt ffi-swap --restore` first",
                runtime.display(),
                installed.display()
            ),
        ));
    }
    std::fs::rename(runtime, backup).in_file(backup)?;
    if let Err(e) = std::os::unix::fs::symlink(installed, runtime) {
        let _ = std::fs::rename(backup, runtime);
        return Err(Failure::file(runtime, format!("cannot make the link: {e}")));
    }
    println!("{} is now a link to {} (the original is {})", runtime.display(), installed.display(), backup.display());
    Ok(())
}

/// Put back every original ffi-swap kept: tvm_ffi's library and, where a backup is found,
/// apache-tvm's runtime library.
fn restore_all(python: &Path, installed: &Path, backup: &Path) -> Result<(), Failure> {
    let tvm_lib = package_dir(python, "tvm", "apache-tvm").ok().map(|dir| dir.join("lib"));
    if let Some(lib) = tvm_lib.filter(|lib| lib.join(TVM_RUNTIME_BACKUP).is_file()) {
        let runtime = lib.join(TVM_RUNTIME);
        if std::fs::symlink_metadata(&runtime).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&runtime).in_file(&runtime)?;
        }
        restore(&runtime, &lib.join(TVM_RUNTIME_BACKUP))?;
    }
    restore(installed, backup)
}

fn restore(installed: &Path, backup: &Path) -> Result<(), Failure> {
    if !backup.is_file() {
        return Err(Failure::file(backup, "no such file: nothing to restore (was ffi-swap run for this Python?)"));
    }
    std::fs::rename(backup, installed).in_file(installed)?;
    println!("{} is the package's original again", installed.display());
    Ok(())
}
