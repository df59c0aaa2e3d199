//! tvm-ffi's reflection over the one type table: type information, fields, attribute columns,
//! and the records of tvm-ffi's own reflected types.

pub mod fields;
pub mod records;
pub mod type_info;
