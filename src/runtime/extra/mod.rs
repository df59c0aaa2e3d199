//! tvm-ffi's extras, which nothing in the core depends on: structural equality, hashing,
//! walks and mutation, the access paths of visit errors, repr, JSON and object graphs, deep
//! copy, dataclass initialisers and the methods of tvm-ffi's own records.

pub mod dataclass;
pub mod deep_copy;
pub mod json;
pub mod record_methods;
pub mod repr;
pub mod serialization;
pub mod structural_equal;
pub mod structural_mutate;
mod structural_types;
pub mod structural_visit;
pub mod visit_error;
