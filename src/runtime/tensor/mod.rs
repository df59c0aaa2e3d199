//! NDArray, the tensor object both ABIs hand out, and TVM's binary tensor and parameter formats.

pub mod ndarray;
pub mod params;
