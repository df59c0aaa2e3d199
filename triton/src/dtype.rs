//! Element types: Triton's (`TRITONSERVER_DataType`, `TYPE_FP32` in a model configuration,
//! `FP32` on the wire) and the runtime's (`DLDataType`, `float32`).

use crate::sys::datatype as dt;
use tvm_runtime::abi::DLDataType;

/// Triton's code, its name without `TYPE_`, and the runtime's name of the same type.
const TYPES: [(u32, &str, &str); 13] = [
    (dt::BOOL, "BOOL", "bool"),
    (dt::UINT8, "UINT8", "uint8"),
    (dt::UINT16, "UINT16", "uint16"),
    (dt::UINT32, "UINT32", "uint32"),
    (dt::UINT64, "UINT64", "uint64"),
    (dt::INT8, "INT8", "int8"),
    (dt::INT16, "INT16", "int16"),
    (dt::INT32, "INT32", "int32"),
    (dt::INT64, "INT64", "int64"),
    (dt::FP16, "FP16", "float16"),
    (dt::FP32, "FP32", "float32"),
    (dt::FP64, "FP64", "float64"),
    (dt::BF16, "BF16", "bfloat16"),
];

fn runtime_name(d: DLDataType) -> String {
    d.to_string()
}

/// Triton's code for a runtime type, if Triton has one.
pub fn triton_code(d: DLDataType) -> Option<u32> {
    let name = runtime_name(d);
    TYPES.iter().find(|t| t.2 == name).map(|t| t.0)
}

/// The configuration's name (`TYPE_FP32`) for a runtime type, if Triton has one.
pub fn config_name(d: DLDataType) -> Option<String> {
    let name = runtime_name(d);
    TYPES.iter().find(|t| t.2 == name).map(|t| format!("TYPE_{}", t.1))
}

/// The runtime's type of a configuration's `TYPE_FP32`.
pub fn from_config_name(name: &str) -> Option<DLDataType> {
    let t = TYPES.iter().find(|t| name.strip_prefix("TYPE_") == Some(t.1))?;
    DLDataType::parse(t.2).ok()
}

/// The wire name (`FP32`) of Triton's code, for messages.
pub fn wire_name(code: u32) -> String {
    TYPES.iter().find(|t| t.0 == code).map_or_else(|| format!("type code {code}"), |t| t.1.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_both_ways() {
        let f32 = DLDataType::parse("float32").unwrap();
        assert_eq!(triton_code(f32), Some(dt::FP32));
        assert_eq!(config_name(f32).as_deref(), Some("TYPE_FP32"));
        assert_eq!(wire_name(dt::INT64), "INT64");
        assert_eq!(triton_code(DLDataType::parse("float32x4").unwrap()), None);
    }
}
