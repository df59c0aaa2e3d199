//! `runtime::module::tvm_ffi_library::load_library_bin` (the `__tvm_ffi__library_bin` of a library written by
//! a tvm-ffi release of TVM) on arbitrary bytes, with every registered binary loader reachable
//! (the Relax VM executable among them).
//!
//! The library module is a real `LibraryModule` over a symbol table with no symbols, so nothing
//! is written through a context symbol and no kernel is resolved.
//!
//! Properties checked: no panic, crash or unbounded allocation; a loaded tree can be walked (to a
//! bounded depth: an import tree may share children) and an executable in it describes itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::c_void;
use std::sync::Arc;
use tvm_runtime::runtime::module::tvm_ffi_library::load_library_bin;
use tvm_runtime::runtime::module::library::{LibraryModule, SymbolSource};
use tvm_runtime::runtime::function::packed::Module;

struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn symbol(&self, _name: &str) -> Option<*mut c_void> {
        None
    }
}

fn walk(m: &Module, depth: usize) {
    let _ = m.type_key();
    if m.type_key() == "relax.VMExecutable" {
        if let Ok(Some(f)) = m.get_function("describe", false) {
            let _ = f.call(&[]);
        }
    }
    if depth < 4 {
        for child in m.imports() {
            walk(&child, depth + 1);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let lib = Module::from_node(LibraryModule::new(Arc::new(NoSymbols)));
    if let Ok(root) = load_library_bin(data, lib) {
        walk(&root, 0);
    }
});
