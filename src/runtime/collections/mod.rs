//! tvm-ffi's mutable and hashed containers (`ffi.List`, `ffi.Map`, `ffi.Dict`: any values,
//! keys hashed through reflection's hooks), recursive comparison and hashing, and the
//! container globals of both generations.

pub mod array_globals;
pub mod list_map;
pub mod list_map_globals;
pub mod map_keys;
mod map_table;
pub mod recursive;
pub(crate) mod tvm_globals;
