//! The graph executor: graph JSON model and validation ([`json`]), the shared immutable
//! [`plan::Plan`], per-run [`executor::Executor`] contexts, the calls every kind of executor
//! answers ([`frame`]), the one front door callers share ([`front`]), its asynchronous stages on
//! streams ([`phases`]), profiling ([`profile`], traces written by [`chrome_trace`]), the
//! executor as a TVM module ([`module`]), and the `GraphExecutorFactory` packed by
//! `export_library`.

pub mod buckets;
pub mod chrome_trace;
pub mod deps;
pub mod executor;
pub mod factory;
pub mod frame;
pub mod front;
pub mod json;
pub mod memory_plan;
pub mod module;
pub mod options;
pub mod phases;
pub mod pipeline;
pub mod plan;
pub mod profile;
pub mod runner;
pub mod schedule;

pub use executor::Executor;
pub use frame::Frame;
pub use front::{Front, FrontGuard};
pub use json::Graph;
pub use plan::Plan;
pub use plan::{Key, TensorInfo};

/// Register the graph executor with the runtime: the blob loader for the factory modules
/// `export_library` packs, and TVM's `tvm.graph_executor*` globals. Called by [`crate::init`].
pub(crate) fn install() {
    use crate::runtime::{function::registry, module::blob};
    blob::register_binary_loader("GraphExecutorFactory", factory::load_binary);
    blob::register_binary_loader("GraphRuntimeFactory", factory::load_binary);
    for (name, f) in module::globals().into_iter().chain(factory::globals()) {
        // Only a user's earlier registration under the same name can be there: theirs wins.
        registry::register_built_in(name, f);
    }
}
