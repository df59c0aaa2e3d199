//! The two host generations' value encodings. Framing, handshake, packet codes and the "0.8.0"
//! banner are the same for TVM 0.18 and apache-tvm 0.2x hosts; what differs is the `i32` before
//! each value of a packed sequence (0.18: a `TVMArgTypeCode`; 0.2x: a tvm-ffi type index), how
//! objects, strings and bytes are laid out, and how a call's result is announced. A session picks
//! one [`Codec`] from the first packet that tells (see [`detect`]) and reads and writes every
//! packed sequence through it.
//!
//! | value           | 0.18 code | 0.2x index                                   |
//! |-----------------|-----------|----------------------------------------------|
//! | none / NULL     | 4         | 0                                            |
//! | int, bool       | 0, 15     | 1, 2                                         |
//! | float           | 2         | 3                                            |
//! | opaque handle   | 3         | 4                                            |
//! | data type, device, DLTensor | 5, 6, 7 | 5, 6, 7 (same layout)           |
//! | string          | 11        | 8 (raw), or 11 / 65 + `u32` 65 (object form) |
//! | bytes           | 12        | 9 (byte array), or 12 / 66 + `u32` 66        |
//! | function, module handle | 10, 9 | 68, 73                                   |
//! | remote object   | 8 + `u32` 9 | its index + `u32` 115                      |

use super::wire::{Codec, HeldKind, Reader, Returned, WireResult, WireValue, Writer};
use crate::abi::type_code as tc;

/// TVM 0.18 hosts: `TVMArgTypeCode`s.
pub struct Tvm018;
/// apache-tvm 0.2x hosts: tvm-ffi type indices.
pub struct Ffi;

pub static TVM018: Tvm018 = Tvm018;
pub static FFI: Ffi = Ffi;

/// The type index 0.18 sends objects under (`kRuntimeRPCObjectRefTypeIndex`).
const TVM018_OBJECT_INDEX: u32 = 9;

/// tvm-ffi type indices (`TVMFFITypeIndex`) as 0.2x hosts send them: the ABI's own, as `i32`.
pub mod index {
    pub use crate::abi::ffi_type_index::{
        BOOL, BYTE_ARRAY_PTR, DATA_TYPE, DEVICE, DLTENSOR_PTR, FLOAT, INT, NONE, OPAQUE_PTR, RAW_STR, SMALL_BYTES,
        SMALL_STR,
    };
    use crate::runtime::object::type_table::type_index as object;
    /// First object index; objects carry a second `u32` index after it.
    pub const OBJECT_BEGIN: i32 = crate::abi::ffi_type_index::STATIC_OBJECT_BEGIN;
    pub const STR: i32 = object::STRING as i32;
    pub const BYTES: i32 = object::BYTES as i32;
    pub const FUNCTION: i32 = object::PACKED_FUNC as i32;
    pub const TENSOR: i32 = object::NDARRAY as i32;
    pub const MODULE: i32 = object::MODULE as i32;
    /// apache/tvm's `kRuntimeRPCObjectRef` (tvm-ffi's dynamic range begins at 128; 128 - 13).
    pub const RPC_OBJECT_REF: i32 = 115;
}

/// Values laid out alike by both generations.
fn read_common(r: &mut Reader<'_>, code: i32) -> WireResult<Option<WireValue>> {
    Ok(Some(match code {
        tc::DATA_TYPE => {
            let t = r.dtype()?;
            r.i32("data type padding")?;
            WireValue::DType(t)
        }
        tc::DEVICE => WireValue::Device(r.device()?),
        tc::DLTENSOR_HANDLE => WireValue::Tensor(r.tensor()?),
        _ => return Ok(None),
    }))
}

impl Codec for Tvm018 {
    fn name(&self) -> &'static str {
        "TVM 0.18"
    }

    fn type_code(&self, v: &WireValue) -> i32 {
        match v {
            WireValue::Int(c, _) | WireValue::Handle(c, _) => *c,
            WireValue::Float(_) => tc::FLOAT,
            WireValue::Null => tc::NULLPTR,
            WireValue::DType(_) => tc::DATA_TYPE,
            WireValue::Device(_) => tc::DEVICE,
            WireValue::Str(_) => tc::STR,
            WireValue::Bytes(_) => tc::BYTES,
            WireValue::Tensor(_) => tc::DLTENSOR_HANDLE,
            WireValue::Object(_) => tc::OBJECT_HANDLE,
        }
    }

    fn read_value(&self, r: &mut Reader<'_>, code: i32) -> WireResult<WireValue> {
        if let Some(v) = read_common(r, code)? {
            return Ok(v);
        }
        Ok(match code {
            tc::INT | tc::UINT | tc::BOOL => WireValue::Int(code, r.i64("int")?),
            tc::FLOAT => WireValue::Float(f64::from_bits(r.u64("float")?)),
            tc::OPAQUE_HANDLE | tc::MODULE_HANDLE | tc::PACKED_FUNC_HANDLE => WireValue::Handle(code, r.u64("handle")?),
            tc::NULLPTR => WireValue::Null,
            tc::STR => WireValue::Str(r.blob("string")?),
            tc::BYTES => WireValue::Bytes(r.blob("bytes")?),
            tc::OBJECT_HANDLE => match r.u32("object type index")? {
                TVM018_OBJECT_INDEX => WireValue::Object(r.u64("object handle")?),
                t => return Err(format!("object of type index {t} (only RPC object references, index 9, cross RPC)")),
            },
            c => return Err(format!("type code {c} ({}) cannot be sent over RPC", tc::name(c))),
        })
    }

    fn codes_ahead(&self) -> bool {
        true
    }

    fn write_object(&self, w: &mut Writer, handle: u64) {
        w.u32(TVM018_OBJECT_INDEX);
        w.u64(handle);
    }

    fn reply(&self, r: Returned) -> Vec<WireValue> {
        let lead = |c: i32| WireValue::int(c as i64);
        match r {
            Returned::Plain(WireValue::Int(_, b)) => vec![lead(tc::INT), WireValue::int(b)],
            Returned::Plain(v) => vec![lead(self.type_code(&v)), v],
            Returned::Tensor(t, h) => {
                vec![lead(tc::NDARRAY_HANDLE), WireValue::Tensor(t), WireValue::Handle(tc::OPAQUE_HANDLE, h)]
            }
            Returned::Held(kind, h) => {
                let c = match kind {
                    HeldKind::Module => tc::MODULE_HANDLE,
                    HeldKind::Func => tc::PACKED_FUNC_HANDLE,
                    HeldKind::Opaque => tc::OPAQUE_HANDLE,
                    HeldKind::Object(_) => tc::OBJECT_HANDLE,
                };
                vec![lead(c), WireValue::Handle(tc::OPAQUE_HANDLE, h)]
            }
        }
    }
}

impl Codec for Ffi {
    fn name(&self) -> &'static str {
        "apache-tvm 0.2x"
    }

    fn type_code(&self, v: &WireValue) -> i32 {
        match v {
            WireValue::Int(tc::BOOL, _) => index::BOOL,
            WireValue::Int(..) => index::INT,
            WireValue::Handle(tc::MODULE_HANDLE, _) => index::MODULE,
            WireValue::Handle(tc::PACKED_FUNC_HANDLE, _) => index::FUNCTION,
            WireValue::Handle(..) => index::OPAQUE_PTR,
            WireValue::Float(_) => index::FLOAT,
            WireValue::Null => index::NONE,
            WireValue::DType(_) => index::DATA_TYPE,
            WireValue::Device(_) => index::DEVICE,
            WireValue::Str(_) => index::RAW_STR,
            WireValue::Bytes(_) => index::BYTE_ARRAY_PTR,
            WireValue::Tensor(_) => index::DLTENSOR_PTR,
            WireValue::Object(_) => index::RPC_OBJECT_REF,
        }
    }

    fn read_value(&self, r: &mut Reader<'_>, code: i32) -> WireResult<WireValue> {
        if let Some(v) = read_common(r, code)? {
            return Ok(v);
        }
        Ok(match code {
            index::NONE => WireValue::Null,
            index::INT => WireValue::Int(tc::INT, r.i64("int")?),
            index::BOOL => WireValue::Int(tc::BOOL, r.i64("bool")?),
            index::FLOAT => WireValue::Float(f64::from_bits(r.u64("float")?)),
            index::OPAQUE_PTR => WireValue::Handle(tc::OPAQUE_HANDLE, r.u64("opaque pointer")?),
            index::FUNCTION => WireValue::Handle(tc::PACKED_FUNC_HANDLE, r.u64("function handle")?),
            index::MODULE => WireValue::Handle(tc::MODULE_HANDLE, r.u64("module handle")?),
            index::RAW_STR => WireValue::Str(r.blob("string")?),
            index::BYTE_ARRAY_PTR => WireValue::Bytes(r.blob("bytes")?),
            c if c >= index::OBJECT_BEGIN || c == index::SMALL_STR || c == index::SMALL_BYTES => {
                match r.u32("object type index")? as i32 {
                    index::STR => WireValue::Str(r.blob("string")?),
                    index::BYTES => WireValue::Bytes(r.blob("bytes")?),
                    index::RPC_OBJECT_REF => WireValue::Object(r.u64("object handle")?),
                    t => {
                        return Err(format!(
                            "object of type index {t} after {c} (only strings 65, bytes 66 and remote objects 115 \
                             cross RPC)"
                        ))
                    }
                }
            }
            c => return Err(format!("type index {c} cannot be sent over RPC")),
        })
    }

    fn codes_ahead(&self) -> bool {
        false
    }

    fn write_object(&self, w: &mut Writer, handle: u64) {
        w.u32(index::RPC_OBJECT_REF as u32);
        w.u64(handle);
    }

    fn reply(&self, r: Returned) -> Vec<WireValue> {
        let lead = |c: i32| WireValue::int(c as i64);
        match r {
            Returned::Plain(WireValue::Str(s)) => vec![lead(index::STR), WireValue::Str(s)],
            Returned::Plain(WireValue::Bytes(b)) => vec![lead(index::BYTES), WireValue::Bytes(b)],
            Returned::Plain(v) => vec![lead(self.type_code(&v)), v],
            Returned::Tensor(t, h) => {
                vec![lead(index::TENSOR), WireValue::Tensor(t), WireValue::Handle(tc::OPAQUE_HANDLE, h)]
            }
            Returned::Held(kind, h) => {
                let c = match kind {
                    HeldKind::Module => index::MODULE,
                    HeldKind::Func => index::FUNCTION,
                    HeldKind::Opaque => index::OPAQUE_PTR,
                    HeldKind::Object(t) => t as i32,
                };
                vec![lead(c), WireValue::Handle(tc::OPAQUE_HANDLE, h)]
            }
        }
    }
}

/// The generation of the host that sent `body` (a packet after its length: code, then the rest),
/// when this packet tells. Only a packet with a packed sequence of at least one value can
/// (InitServer, CallFunc and the calls 9..=21). It is read whole under each generation; when
/// exactly one reads it without error or bytes left over, that one. When both do, the reading
/// that holds an int or a string names its generation (0.2x's first). A 0.27 host's first call,
/// `DevGetAttr [Device(2, 0), Int 0]`, is `02000000 06000000 <device> 01000000 <int>`: read as
/// 0.18 it is a device and a float, with no int; a 0.18 host's `GetGlobalFunc [str]` has code 11,
/// which 0.2x would have to follow by `u32` 65. Otherwise the packet does not tell.
pub fn detect(body: &[u8]) -> Option<&'static dyn Codec> {
    let mut r = Reader::new(body);
    match r.i32("packet code").ok()? {
        super::wire::code::INIT_SERVER => drop(r.blob("protocol version").ok()?),
        super::wire::code::CALL_FUNC => drop(r.u64("function handle").ok()?),
        c if (super::wire::code::GET_GLOBAL_FUNC..=super::wire::code::DEV_GET_CURRENT_STREAM).contains(&c) => {}
        _ => return None,
    }
    let seq = &body[body.len() - r.remaining()..];
    let read = |c: &dyn Codec| {
        let mut r = Reader::new(seq);
        r.packed_seq(c).ok().filter(|v| !v.is_empty() && r.remaining() == 0)
    };
    let telling = |v: &Vec<WireValue>| v.iter().any(|v| matches!(v, WireValue::Int(tc::INT, _) | WireValue::Str(_)));
    match (read(&FFI), read(&TVM018)) {
        (Some(_), None) => Some(&FFI),
        (None, Some(_)) => Some(&TVM018),
        (Some(f), Some(_)) if telling(&f) => Some(&FFI),
        (Some(_), Some(o)) if telling(&o) => Some(&TVM018),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{DLDataType, DLDevice};
    use crate::rpc::wire::WireTensor;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The bytes that decide, as the hosts send them (packet code first, length prefix dropped).
    #[test]
    fn first_calls_tell_the_generation() {
        // apache-tvm 0.27, as seen on the wire: DevGetAttr [Device(2, 0) index 6, Int 0 index 1]
        // (does CUDA exist), each index right before its value.
        let ffi = hex("0c000000 02000000 06000000 02000000 00000000 01000000 0000000000000000");
        assert_eq!(detect(&ffi).unwrap().name(), "apache-tvm 0.2x");
        // TVM 0.18: GetGlobalFunc [str code 11 "tvm.rpc.server.upload"].
        let mut old = hex("09000000 01000000 0b000000 1500000000000000");
        old.extend_from_slice(b"tvm.rpc.server.upload");
        assert_eq!(detect(&old).unwrap().name(), "TVM 0.18");
        // 0.18's DevGetAttr [Device, int code 0]: under 0.2x the 0 is None and 8 bytes are left.
        let old_attr = hex("0c000000 02000000 06000000 00000000 02000000 00000000 0000000000000000");
        assert_eq!(detect(&old_attr).unwrap().name(), "TVM 0.18");
        // 0.2x's GetGlobalFunc [RawStr 8 "x"]; 0.18 would read an object (then type index 1).
        let ffi_get = hex("09000000 01000000 08000000 0100000000000000 78");
        assert_eq!(detect(&ffi_get).unwrap().name(), "apache-tvm 0.2x");
        // 0.2x's DevAllocDataWithScope [DLTensor, None]: 0.18 would need 8 more bytes.
        let mut w = Writer::packet(super::super::wire::code::DEV_ALLOC_DATA_WITH_SCOPE);
        let t = WireTensor {
            data: 0,
            device: DLDevice::cpu(0),
            dtype: DLDataType::FLOAT32,
            shape: vec![4],
            byte_offset: 0,
        };
        w.packed_seq(&FFI, &[WireValue::Tensor(t), WireValue::Null]);
        assert_eq!(detect(&w.finish()[8..]).unwrap().name(), "apache-tvm 0.2x");
        // No arguments (InitServer of both), or a copy packet: not yet.
        assert!(detect(&hex("02000000 0500000000000000 302e382e30 00000000")).is_none());
        assert!(detect(&hex("06000000")).is_none());
    }

    #[test]
    fn ffi_values_round_trip_and_objects_carry_a_second_index() {
        let values = vec![
            WireValue::int(-3),
            WireValue::Int(tc::BOOL, 1),
            WireValue::Float(0.5),
            WireValue::Null,
            WireValue::Handle(tc::OPAQUE_HANDLE, 7),
            WireValue::Handle(tc::MODULE_HANDLE, 8),
            WireValue::Handle(tc::PACKED_FUNC_HANDLE, 9),
            WireValue::Str(b"s".to_vec()),
            WireValue::Bytes(vec![1, 2]),
            WireValue::Object(10),
        ];
        let mut w = Writer::packet(0);
        w.packed_seq(&FFI, &values);
        let p = w.finish();
        assert_eq!(&p[16..32], hex("01000000 fdffffffffffffff 02000000"), "index, value, next index");
        let mut r = Reader::new(&p[12..]);
        assert_eq!(r.packed_seq(&FFI).unwrap(), values);
        assert!(p.ends_with(&hex("73000000 0a00000000000000")), "object: u32 115, then the handle");
        // Bytes in the object form, as a 0.27 host uploads: 66, u32 66, length, data.
        let up = hex("01000000 42000000 42000000 0200000000000000 0102");
        assert_eq!(Reader::new(&up).packed_seq(&FFI).unwrap(), [WireValue::Bytes(vec![1, 2])]);
        let bad = hex("01000000 46000000 46000000 0000000000000000");
        let e = Reader::new(&bad).packed_seq(&FFI).unwrap_err();
        assert!(e.contains("object of type index 70 after 70"), "{e}");
    }

    #[test]
    fn replies_lead_with_the_generations_code() {
        let t =
            WireTensor { data: 1, device: DLDevice::cpu(0), dtype: DLDataType::FLOAT32, shape: vec![], byte_offset: 0 };
        let lead = |c: &dyn Codec, r: Returned| c.reply(r)[0].clone();
        for (r, old, new) in [
            (Returned::Plain(WireValue::Null), 4, 0),
            (Returned::Plain(WireValue::Int(tc::BOOL, 1)), 0, 2),
            (Returned::Plain(WireValue::Str(b"a".to_vec())), 11, 65),
            (Returned::Plain(WireValue::Bytes(vec![])), 12, 66),
            (Returned::Tensor(t.clone(), 5), 13, 70),
            (Returned::Held(HeldKind::Module, 5), 9, 73),
            (Returned::Held(HeldKind::Func, 5), 10, 68),
            (Returned::Held(HeldKind::Object(71), 5), 8, 71),
        ] {
            assert_eq!(lead(&TVM018, r.clone()), WireValue::int(old), "{r:?}");
            assert_eq!(lead(&FFI, r.clone()), WireValue::int(new), "{r:?}");
        }
    }
}
