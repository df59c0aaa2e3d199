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
pub mod module;
pub mod profiler;
pub mod session;
pub mod shortcut;
pub mod value;

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
}
