//! The graph executor: graph JSON model and validation ([`json`]), the shared immutable
//! [`plan::Plan`], per-run [`executor::Executor`] contexts, the executor as a TVM module, and
//! the `GraphExecutorFactory` packed by `export_library`.

pub mod executor;
pub mod factory;
pub mod json;
pub mod module;
pub mod plan;

pub use executor::Executor;
pub use json::Graph;
pub use plan::Plan;
