//! `runtime::module::blob::load_import_tree` (the `__tvm_dev_mblob` of an `export_library` .so) on
//! arbitrary bytes. Every registered binary loader (GraphExecutorFactory / GraphRuntimeFactory,
//! const_loader / metadata, metadata_module) is reachable from the blob.
//!
//! The library module is a real `LibraryModule` over a fake symbol table: it has no `__tvm_main__`
//! and none of the `__TVMBackend*` / `__tvm_*` context symbols (so nothing is written through a
//! symbol), and every other name resolves to a kernel that does nothing and returns 0. That lets
//! a GraphExecutorFactory from the blob be instantiated and run, which drives `Plan::new` and
//! `Plan::set_params` (the blob's params checked against its graph) and the executor's direct
//! kernel calls. Graphs whose entries need more than 64 MiB are not instantiated.
//!
//! Properties checked: no panic, crash or unbounded allocation; a loaded tree can be walked and
//! its modules answer the functions TVM's tools ask for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use tvm_runtime::abi::{DLDevice, TVMValue};
use tvm_runtime::graph::Graph;
use tvm_runtime::runtime::module::blob::load_import_tree;
use tvm_runtime::runtime::dlpack::dtype::data_size;
use tvm_runtime::runtime::module::library::{LibraryModule, SymbolSource};
use tvm_runtime::runtime::function::packed::Module;
use tvm_runtime::runtime::function::packed::Value;

const MAX_ENTRY_BYTES: usize = 64 << 20;

unsafe extern "C" fn noop_kernel(
    _args: *mut TVMValue,
    _codes: *mut c_int,
    _num_args: c_int,
    _ret: *mut TVMValue,
    _ret_code: *mut c_int,
    _resource: *mut c_void,
) -> c_int {
    0
}

/// Every kernel name resolves to `noop_kernel`; reserved `__` names resolve to nothing.
struct NoopKernels;

impl SymbolSource for NoopKernels {
    fn symbol(&self, name: &str) -> Option<*mut c_void> {
        if name.starts_with("__") {
            None
        } else {
            Some(noop_kernel as *mut c_void)
        }
    }
}

/// Whether the graph JSON parses and all its entries together fit in the budget.
fn small_graph(json: &str) -> bool {
    let Ok(g) = Graph::parse(json) else { return false };
    let mut total = 0usize;
    for (shape, dtype) in g.attrs.shape.iter().zip(&g.attrs.dltype) {
        match data_size(shape, *dtype).ok().and_then(|b| total.checked_add(b)) {
            Some(t) if t <= MAX_ENTRY_BYTES => total = t,
            _ => return false,
        }
    }
    true
}

fn exercise_factory(m: &Module) {
    let Ok(Some(get_json)) = m.get_function("get_graph_json", false) else { return };
    let Ok(Value::Str(json)) = get_json.call(&[]) else { return };
    if !small_graph(&json) {
        return;
    }
    let Ok(Some(create)) = m.get_function("default", false) else { return };
    let Ok(Value::Module(exec)) = create.call(&[Value::Device(DLDevice::cpu(0))]) else { return };
    if let Ok(Some(run)) = exec.get_function("run", false) {
        let _ = run.call(&[]);
    }
    if let Ok(Some(get_output)) = exec.get_function("get_output", false) {
        let _ = get_output.call(&[Value::Int(0)]);
    }
}

fn walk(m: &Module, depth: usize, seen: &mut usize) {
    // The import graph is a DAG (cycles are rejected) but may share nodes: bound the walk.
    if depth > 16 || *seen > 256 {
        return;
    }
    *seen += 1;
    for name in ["get_graph_json", "get_graph_params", "get_symbol", "get_const_vars", "__tvm_main__"] {
        let _ = m.get_function(name, false);
    }
    if matches!(m.type_key(), "GraphExecutorFactory" | "GraphRuntimeFactory") {
        exercise_factory(m);
    }
    for imp in m.imports() {
        walk(&imp, depth + 1, seen);
    }
}

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let lib = Module::from_node(LibraryModule::new(Arc::new(NoopKernels)));
    if let Ok(root) = load_import_tree(data, lib) {
        walk(&root, 0, &mut 0);
    }
});
