//! The Relax virtual machine: executables of TVM 0.18 (`relax.build`) and of the tvm-ffi releases
//! (`tvm.compile`) parsed into one [`Executable`] ([`executable`], instructions in [`bytecode`]),
//! run by an interpreter whose shared, immutable part is the [`Session`] (executable, constants,
//! resolved kernels) and whose per-call part is the [`Frame`] (registers, storage pool), with the
//! builtins the compilers emit ([`builtins`]) and TVM's module functions ([`module`]).

pub mod builtins;
pub mod bytecode;
pub mod describe;
pub mod executable;
pub mod frame;
mod globals;
pub mod module;
pub mod profiler;
pub mod session;
pub mod shortcut;
pub mod value;

use crate::runtime::base::byteio::Reader;
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{Args, PackedFunc, Value};
pub use executable::{Executable, Format};
pub use frame::Frame;
pub use module::{ExecutableModule, VmModule};
pub use session::{AllocatorKind, Session};
pub use value::VmValue;

/// Register the VM with the runtime: the blob loaders for the root module of a Relax
/// `export_library` file, `relax.Executable` (TVM 0.18) and `relax.VMExecutable` (tvm-ffi).
/// Called by the crate's `init`, the composition root.
pub(crate) fn install() {
    for key in ["relax.Executable", "relax.VMExecutable"] {
        crate::runtime::module::blob::register_binary_loader(key, module::load_binary);
    }
    // An executable saved alone (`Executable.export_library` writes a library; `save` bytes).
    for name in ["ffi.Module.load_from_file.relax.VMExecutable", "relax.ExecutableLoadFromFile"] {
        crate::runtime::function::registry::register_built_in(name, PackedFunc::from_typed(load_file_global));
    }
    globals::install();
}

/// (path[, format]): the executable whose bytes are the file at `path`.
fn load_file_global(args: Args<'_>) -> Result<Value> {
    let path = args.string(0)?;
    let bytes = std::fs::read(&path).map_err(|e| Error::io(format!("cannot read `{path}`: {e}")))?;
    let mut r = Reader::new(&bytes, "VM executable");
    module::load_binary(&mut r).map(Value::Module)
}
