//! TVM's RPC wire format (protocol "0.8.0"): packets, packed argument sequences and the values
//! in them, read from and written to byte buffers. Everything is little-endian and unpadded:
//! a packet is `u64 length` then `i32 code` and a body; a packed sequence is `i32 count`,
//! one `i32` per value naming its kind, then each value (ints and floats as 8 bytes, a data type
//! as 4 bytes plus 4 of padding, a device as two `i32`, strings and bytes as `u64 length` + bytes,
//! handles as `u64`, a `DLTensor` as data `u64`, device, `i32` ndim, data type, `i64` shape, `u64`
//! byte offset, and an object as a `u32` type index + `u64` handle). Which `i32` names which kind
//! depends on the host's generation: see [`super::codec`].
//!
//! Reading never trusts a length: every count and size is checked against the bytes left, so a
//! malformed packet is an error naming what was wrong, never a panic or a huge allocation.

use crate::abi::{type_code as tc, DLDataType, DLDevice};

/// The protocol version TVM 0.18 speaks (`kRPCProtocolVer`).
pub const PROTOCOL_VERSION: &str = "0.8.0";
/// Magic of the RPC handshake (`RPC_MAGIC`); +1 answers a duplicate key, +2 a key mismatch.
pub const RPC_MAGIC: i32 = 0xff271;
/// Magic of the tracker protocol (`RPC_TRACKER_MAGIC`).
pub const TRACKER_MAGIC: i32 = 0x2f271;
/// Most dimensions a tensor on the wire may have.
pub const MAX_NDIM: i32 = 64;

/// Packet codes (`RPCCode`).
pub mod code {
    pub const SHUTDOWN: i32 = 1;
    pub const INIT_SERVER: i32 = 2;
    pub const CALL_FUNC: i32 = 3;
    pub const RETURN: i32 = 4;
    pub const EXCEPTION: i32 = 5;
    pub const COPY_FROM_REMOTE: i32 = 6;
    pub const COPY_TO_REMOTE: i32 = 7;
    pub const COPY_ACK: i32 = 8;
    pub const GET_GLOBAL_FUNC: i32 = 9;
    pub const FREE_HANDLE: i32 = 10;
    pub const DEV_SET_DEVICE: i32 = 11;
    pub const DEV_GET_ATTR: i32 = 12;
    pub const DEV_ALLOC_DATA: i32 = 13;
    pub const DEV_FREE_DATA: i32 = 14;
    pub const DEV_STREAM_SYNC: i32 = 15;
    pub const COPY_AMONG_REMOTE: i32 = 16;
    pub const DEV_ALLOC_DATA_WITH_SCOPE: i32 = 17;
    pub const DEV_CREATE_STREAM: i32 = 18;
    pub const DEV_FREE_STREAM: i32 = 19;
    pub const DEV_SET_STREAM: i32 = 20;
    pub const DEV_GET_CURRENT_STREAM: i32 = 21;
}

/// A tensor description as the wire carries it: `data` is an address on the server.
#[derive(Clone, Debug, PartialEq)]
pub struct WireTensor {
    pub data: u64,
    pub device: DLDevice,
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
    pub byte_offset: u64,
}

impl WireTensor {
    /// Bytes of the (compact) data, or `None` when the shape or dtype make no sense.
    pub fn nbytes(&self) -> Option<u64> {
        let elem = (self.dtype.bits as u64 * self.dtype.lanes as u64).div_ceil(8);
        self.shape.iter().try_fold(elem, |n, &d| u64::try_from(d).ok().and_then(|d| n.checked_mul(d)))
    }
}

/// One value of a packed sequence.
#[derive(Clone, Debug, PartialEq)]
pub enum WireValue {
    /// `kDLInt`, `kDLUInt` and `kTVMArgBool` (the code says which).
    Int(i32, i64),
    Float(f64),
    /// A handle under its type code (opaque, module, packed function): a server address or id.
    Handle(i32, u64),
    Null,
    DType(DLDataType),
    Device(DLDevice),
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    Tensor(WireTensor),
    /// An object handle (`kTVMObjectHandle` with type index 9).
    Object(u64),
}

impl WireValue {
    /// An `int` value (`kDLInt` 0).
    pub fn int(v: i64) -> WireValue {
        WireValue::Int(tc::INT, v)
    }
}

/// What a call returned, before a generation announces it.
#[derive(Clone, Debug, PartialEq)]
pub enum Returned {
    /// Sent as itself: none, numbers, data types, devices, strings, bytes.
    Plain(WireValue),
    /// A tensor the session holds: its description and its handle.
    Tensor(WireTensor, u64),
    /// A handle to something else the session holds.
    Held(HeldKind, u64),
}

/// The kind of a [`Returned::Held`] handle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HeldKind {
    Module,
    Func,
    Opaque,
    /// Another object, by its type index.
    Object(u32),
}

/// One host generation's encoding of values.
pub trait Codec: Sync {
    /// The generation, for messages.
    fn name(&self) -> &'static str;
    /// The `i32` that precedes `v` in a packed sequence.
    fn type_code(&self, v: &WireValue) -> i32;
    /// The value announced by `code` (already read).
    fn read_value(&self, r: &mut Reader<'_>, code: i32) -> WireResult<WireValue>;
    /// Whether a packed sequence lists all codes before the values (0.18), or each code right
    /// before its value (0.2x).
    fn codes_ahead(&self) -> bool;
    /// A remote object's bytes after its code.
    fn write_object(&self, w: &mut Writer, handle: u64);
    /// The values of the `Return` of a call that returned `r`.
    fn reply(&self, r: Returned) -> Vec<WireValue>;
}

/// Reads a packet body; every read is bounded by the bytes left.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub type WireResult<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn bytes(&mut self, n: u64, what: &str) -> WireResult<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(format!(
                "{what}: {n} bytes announced but only {} left in the packet (at byte {})",
                self.remaining(),
                self.pos
            ));
        }
        let out = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> WireResult<[u8; N]> {
        Ok(self.bytes(N as u64, what)?.try_into().expect("N bytes"))
    }
    pub fn i32(&mut self, what: &str) -> WireResult<i32> {
        self.array(what).map(i32::from_le_bytes)
    }
    pub fn u32(&mut self, what: &str) -> WireResult<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    pub fn i64(&mut self, what: &str) -> WireResult<i64> {
        self.array(what).map(i64::from_le_bytes)
    }
    pub fn u64(&mut self, what: &str) -> WireResult<u64> {
        self.array(what).map(u64::from_le_bytes)
    }
    pub fn device(&mut self) -> WireResult<DLDevice> {
        Ok(DLDevice { device_type: self.i32("device type")?, device_id: self.i32("device id")? })
    }
    pub fn dtype(&mut self) -> WireResult<DLDataType> {
        let b: [u8; 4] = self.array("data type")?;
        Ok(DLDataType { code: b[0], bits: b[1], lanes: u16::from_le_bytes([b[2], b[3]]) })
    }
    /// `u64 length` + bytes.
    pub fn blob(&mut self, what: &str) -> WireResult<Vec<u8>> {
        let n = self.u64(what)?;
        Ok(self.bytes(n, what)?.to_vec())
    }

    pub fn tensor(&mut self) -> WireResult<WireTensor> {
        let data = self.u64("tensor data")?;
        let device = self.device()?;
        let ndim = self.i32("tensor ndim")?;
        if !(0..=MAX_NDIM).contains(&ndim) {
            return Err(format!("tensor ndim {ndim} (0 to {MAX_NDIM} allowed)"));
        }
        let dtype = self.dtype()?;
        let shape = (0..ndim).map(|_| self.i64("tensor shape")).collect::<WireResult<Vec<_>>>()?;
        let byte_offset = self.u64("tensor byte offset")?;
        Ok(WireTensor { data, device, dtype, shape, byte_offset })
    }

    /// A packed sequence (`RecvPackedSeq`) in `codec`'s encoding.
    pub fn packed_seq(&mut self, codec: &dyn Codec) -> WireResult<Vec<WireValue>> {
        let n = self.i32("argument count")?;
        // Each value takes at least its 4-byte type code: a count the packet cannot hold is refused
        // before anything is allocated for it.
        if n < 0 || n as u64 * 4 > self.remaining() as u64 {
            return Err(format!("argument count {n} does not fit the {} bytes left", self.remaining()));
        }
        if !codec.codes_ahead() {
            return (0..n)
                .map(|i| {
                    let c = self.i32("type code")?;
                    codec.read_value(self, c).map_err(|e| format!("argument {i}: {e}"))
                })
                .collect();
        }
        let codes = (0..n).map(|_| self.i32("type code")).collect::<WireResult<Vec<_>>>()?;
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| codec.read_value(self, c).map_err(|e| format!("argument {i}: {e}")))
            .collect()
    }

    /// Refuse bytes after the last field.
    pub fn finish(&self, what: &str) -> WireResult<()> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(format!("{what}: {n} unexpected bytes at the end of the packet")),
        }
    }
}

/// Builds a packet: `u64 length` (filled by [`Writer::finish`]), `i32 code`, the body.
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn packet(code: i32) -> Writer {
        let mut w = Writer { buf: Vec::with_capacity(64) };
        w.u64(0);
        w.i32(code);
        w
    }
    pub fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    pub fn blob(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.raw(b);
    }
    fn device(&mut self, d: DLDevice) {
        self.i32(d.device_type);
        self.i32(d.device_id);
    }
    fn dtype(&mut self, t: DLDataType) {
        self.raw(&[t.code, t.bits]);
        self.raw(&t.lanes.to_le_bytes());
    }
    pub fn tensor(&mut self, t: &WireTensor) {
        self.u64(t.data);
        self.device(t.device);
        self.i32(t.shape.len() as i32);
        self.dtype(t.dtype);
        for &d in &t.shape {
            self.i64(d);
        }
        self.u64(t.byte_offset);
    }

    /// A packed sequence (`SendPackedSeq`) in `codec`'s encoding.
    pub fn packed_seq(&mut self, codec: &dyn Codec, values: &[WireValue]) {
        self.i32(values.len() as i32);
        if codec.codes_ahead() {
            for v in values {
                self.i32(codec.type_code(v));
            }
        }
        for v in values {
            if !codec.codes_ahead() {
                self.i32(codec.type_code(v));
            }
            match v {
                WireValue::Int(_, i) => self.i64(*i),
                WireValue::Float(f) => self.u64(f.to_bits()),
                WireValue::Handle(_, h) => self.u64(*h),
                WireValue::Null => {}
                WireValue::DType(t) => {
                    self.dtype(*t);
                    self.i32(0);
                }
                WireValue::Device(d) => self.device(*d),
                WireValue::Str(b) | WireValue::Bytes(b) => self.blob(b),
                WireValue::Tensor(t) => self.tensor(t),
                WireValue::Object(h) => codec.write_object(self, *h),
            }
        }
    }

    /// The packet's bytes, its length field filled.
    pub fn finish(mut self) -> Vec<u8> {
        let len = (self.buf.len() - 8) as u64;
        self.buf[..8].copy_from_slice(&len.to_le_bytes());
        self.buf
    }
}

/// A `Return` packet carrying `values`.
pub fn return_packet(codec: &dyn Codec, values: &[WireValue]) -> Vec<u8> {
    let mut w = Writer::packet(code::RETURN);
    w.packed_seq(codec, values);
    w.finish()
}

/// The `Return` of a call with no result (`ReturnVoid`: one null).
pub fn return_void(codec: &dyn Codec) -> Vec<u8> {
    return_packet(codec, &[WireValue::Null])
}

/// An `Exception` packet carrying `message`.
pub fn exception_packet(codec: &dyn Codec, message: &str) -> Vec<u8> {
    let mut w = Writer::packet(code::EXCEPTION);
    w.packed_seq(codec, &[WireValue::Str(message.as_bytes().to_vec())]);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::super::codec::{FFI, TVM018};
    use super::*;

    fn every_kind() -> Vec<WireValue> {
        vec![
            WireValue::int(-7),
            WireValue::Int(tc::BOOL, 1),
            WireValue::Float(2.5),
            WireValue::Handle(tc::MODULE_HANDLE, 0x1000),
            WireValue::Null,
            WireValue::DType(DLDataType::FLOAT32),
            WireValue::Device(DLDevice::cpu(0)),
            WireValue::Str(b"name".to_vec()),
            WireValue::Bytes(vec![0, 1, 2]),
            WireValue::Tensor(WireTensor {
                data: 0xabc0,
                device: DLDevice::cpu(0),
                dtype: DLDataType::FLOAT32,
                shape: vec![2, 3],
                byte_offset: 8,
            }),
            WireValue::Object(0x2000),
        ]
    }

    #[test]
    fn every_value_kind_round_trips_and_every_cut_is_an_error() {
        let values = every_kind();
        for codec in [&TVM018 as &dyn Codec, &FFI] {
            let packet = return_packet(codec, &values);
            let len = u64::from_le_bytes(packet[..8].try_into().unwrap());
            assert_eq!(len as usize, packet.len() - 8);
            let body = &packet[12..];
            let mut r = Reader::new(body);
            assert_eq!(r.packed_seq(codec).unwrap(), values, "{}", codec.name());
            r.finish("test").unwrap();
            for cut in 0..body.len() {
                assert!(Reader::new(&body[..cut]).packed_seq(codec).is_err(), "{}: a cut at {cut}", codec.name());
            }
        }
    }

    #[test]
    fn lengths_and_counts_are_checked_before_allocating() {
        let mut w = Writer::packet(code::CALL_FUNC);
        w.i32(i32::MAX);
        let p = w.finish();
        let e = Reader::new(&p[12..]).packed_seq(&TVM018).unwrap_err();
        assert!(e.contains("argument count 2147483647 does not fit"), "{e}");
        let mut w = Writer::packet(code::CALL_FUNC);
        w.i32(1);
        w.i32(tc::STR);
        w.u64(u64::MAX);
        let p = w.finish();
        let e = Reader::new(&p[12..]).packed_seq(&TVM018).unwrap_err();
        assert!(e.contains("argument 0: string: 18446744073709551615 bytes announced"), "{e}");
        let mut w = Writer::packet(code::CALL_FUNC);
        w.i32(1);
        w.i32(tc::NDARRAY_HANDLE);
        let p = w.finish();
        let e = Reader::new(&p[12..]).packed_seq(&TVM018).unwrap_err();
        assert!(e.contains("type code 13"), "{e}");
    }

    #[test]
    fn tensor_sizes_overflow_to_none() {
        let t = WireTensor {
            data: 0,
            device: DLDevice::cpu(0),
            dtype: DLDataType::FLOAT32,
            shape: vec![i64::MAX, 4],
            byte_offset: 0,
        };
        assert_eq!(t.nbytes(), None);
        assert_eq!(WireTensor { shape: vec![2, -1], ..t.clone() }.nbytes(), None);
        assert_eq!(WireTensor { shape: vec![2, 3], ..t }.nbytes(), Some(24));
    }
}
