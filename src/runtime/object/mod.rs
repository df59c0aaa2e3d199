//! The object model: tvm-ffi's header and counts seen by both ABIs, typed and untyped
//! references, the one type table, the checked-handle live set and the handle table for opaque
//! handles.

pub mod handles;
pub mod header;
pub mod live;
pub mod type_table;
