//! DLPack's types given meaning: element types in TVM 0.18's spelling and in tvm-ffi's, and
//! [`tensor_ref::TensorRef`], a `DLTensor` vouched for once at the door.

pub mod dtype;
pub mod dtype_tvm_ffi;
pub mod tensor_ref;
