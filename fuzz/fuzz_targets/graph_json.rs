//! Graph JSON: `graph::Graph::parse`, then, for graphs that validate, `graph::Plan::new` with a
//! module that provides every function name (a no-op packed function), `graph::Executor::new`
//! and one `run()`. Plans whose storage exceeds 64 MiB are not instantiated (the allocation is
//! legitimate, just too big for a fuzzer).
//!
//! Properties checked: no panic, crash or out-of-bounds access on any input; everything the
//! validator accepts can be planned, instantiated and run without panicking (errors are fine).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::any::Any;
use std::sync::Arc;
use tvm_runtime::abi::DLDevice;
use tvm_runtime::graph::{Executor, Graph, Plan};
use tvm_runtime::runtime::base::error::Result;
use tvm_runtime::runtime::function::packed::{Module, ModuleNode};
use tvm_runtime::runtime::function::packed::PackedFunc;

const MAX_STORAGE_BYTES: usize = 64 << 20;

/// A module with every function: each is a no-op.
struct AnyFunction;

impl ModuleNode for AnyFunction {
    fn type_key(&self) -> &str {
        "fuzz_any_function"
    }
    fn get_function(&self, _name: &str, _this: &Module) -> Result<Option<PackedFunc>> {
        Ok(Some(PackedFunc::from_fn(|_args, _ret| Ok(()))))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = Graph::parse(text) else { return };
    let module = Module::from_node(AnyFunction);
    let Ok(plan) = Plan::new(graph, module, &[DLDevice::cpu(0)]) else { return };
    let total = plan.storage.iter().try_fold(0usize, |acc, s| acc.checked_add(s.bytes));
    if total.is_none_or(|t| t > MAX_STORAGE_BYTES) {
        return;
    }
    let Ok(mut exec) = Executor::new(Arc::new(plan)) else { return };
    let _ = exec.run();
    for i in 0..exec.plan().num_outputs() {
        let _ = exec.get_output(i);
    }
});
