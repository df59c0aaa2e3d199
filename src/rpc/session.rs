//! One RPC session: the packets of one connected host, answered in order. The session owns
//! what it handed out: every object the host holds (functions, modules, arrays) sits in a
//! handle table under an id the host sees instead of an address, and every byte range the host
//! may name by address (arrays it was given, buffers it allocated) sits in a region table. A
//! host can therefore only reach memory it was given: a freed handle, an unknown address or a
//! range past a buffer's end is an `Exception` naming it, and the session goes on. Dropping the
//! session frees everything at once.

use super::codec;
use super::env::Env;
use super::wire::{self, code, Codec, HeldKind, Reader, Returned, WireResult, WireTensor, WireValue, Writer};
use crate::abi::{device_type, dtype_code, type_code as tc, DLDataType, DLDevice, DLTensor};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::dlpack::tensor_ref::RawTensor;
use crate::runtime::function::packed::Value;
use crate::runtime::function::registry;
use crate::runtime::tensor::ndarray::NDArray;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;

/// What the transport does after a packet.
pub enum Step {
    /// Send these bytes and read the next packet.
    Reply(Vec<u8>),
    /// The host said goodbye (`Shutdown`).
    End,
}

/// A byte range the host may name by address.
struct Region {
    len: u64,
    /// Handles (and allocations) keeping it alive; the region goes when it drops to 0.
    holders: usize,
    /// The memory itself when the host allocated it (`DevAllocData`); returned arrays are kept
    /// alive by their handle instead.
    owned: Option<NDArray>,
}

/// Ids given to the host, and the address ranges it may name.
#[derive(Default)]
struct Handles {
    next: u64,
    table: HashMap<u64, Value>,
    regions: BTreeMap<u64, Region>,
}

/// First handle id (never 0, which the host reads as NULL); ids step by 16.
const FIRST_ID: u64 = 0x10_0000;

impl Handles {
    fn insert(&mut self, v: Value) -> u64 {
        if self.next == 0 {
            self.next = FIRST_ID;
        }
        let id = self.next;
        self.next += 16;
        if let Value::NDArray(a) = &v {
            self.hold(a.data_ptr() as u64, a.nbytes() as u64, None);
        }
        self.table.insert(id, v);
        id
    }

    fn get(&self, id: u64, what: &str) -> Result<&Value> {
        self.table.get(&id).ok_or_else(|| {
            Error::value(format!("{what}: handle {id:#x} is not held by this session (freed, or never given)"))
        })
    }

    fn free(&mut self, id: u64) -> Result<()> {
        match self.table.remove(&id) {
            Some(Value::NDArray(a)) => {
                self.release(a.data_ptr() as u64);
                Ok(())
            }
            Some(_) => Ok(()),
            None => Err(Error::value(format!("FreeHandle: handle {id:#x} is not held by this session (freed twice?)"))),
        }
    }

    fn hold(&mut self, start: u64, len: u64, owned: Option<NDArray>) {
        let r = self.regions.entry(start).or_insert(Region { len, holders: 0, owned: None });
        r.len = r.len.max(len);
        r.holders += 1;
        if owned.is_some() {
            r.owned = owned;
        }
    }

    fn release(&mut self, start: u64) {
        if let Some(r) = self.regions.get_mut(&start) {
            r.holders -= 1;
            if r.holders == 0 {
                self.regions.remove(&start);
            }
        }
    }

    /// The address of `nbytes` at `data + offset`, when a live region holds all of them.
    fn locate(&self, data: u64, offset: u64, nbytes: u64) -> Result<*mut u8> {
        let (&start, r) =
            self.regions.range(..=data).next_back().filter(|(&s, r)| data - s < r.len.max(1)).ok_or_else(|| {
                Error::value(format!("address {data:#x} is not in an array or buffer this session holds"))
            })?;
        let end = (data - start).checked_add(offset).and_then(|o| o.checked_add(nbytes));
        if end.map_or(true, |e| e > r.len) {
            return Err(Error::value(format!(
                "{nbytes} bytes at offset {offset} of address {data:#x} run past the end of its {}-byte buffer",
                r.len
            )));
        }
        Ok((data + offset) as *mut u8)
    }
}

/// Tensors made from the host's descriptions, alive for one call.
#[derive(Default)]
struct Views {
    tensors: Vec<Box<DLTensor>>,
    #[allow(clippy::vec_box)]
    shapes: Vec<Box<[i64]>>,
}

pub struct Session {
    env: Env,
    handles: Handles,
    initialized: bool,
    /// Bytes of buffers the host allocated (`DevAllocData*`) and not freed, and their limit.
    allocated: u64,
    memory_limit: u64,
    /// The host's generation, once a packet told it ([`codec::detect`]).
    codec: Option<&'static dyn Codec>,
}

impl Session {
    /// A session over `env`; the host may allocate up to the machine's physical memory.
    pub fn new(env: Env) -> Session {
        Session::with_memory_limit(env, physical_memory())
    }

    /// A session whose host may hold at most `limit` bytes of allocated buffers at once.
    pub fn with_memory_limit(env: Env, limit: u64) -> Session {
        Session { env, handles: Handles::default(), initialized: false, allocated: 0, memory_limit: limit, codec: None }
    }

    /// Answer one packet (`body`: the code and what follows it, the length already read).
    pub fn handle(&mut self, body: &[u8]) -> Step {
        let mut r = Reader::new(body);
        let code = match r.i32("packet code") {
            Ok(c) => c,
            Err(e) => return Step::Reply(self.exception(&format!("RPCError: malformed packet: {e}"))),
        };
        if code == code::SHUTDOWN {
            return Step::End;
        }
        if self.codec.is_none() {
            self.codec = codec::detect(body);
        }
        let reply = match self.dispatch(code, &mut r) {
            Ok(bytes) => bytes,
            Err(e) => self.exception(&e.to_string()),
        };
        Step::Reply(reply)
    }

    /// The host's encoding: TVM 0.18's until a packet tells otherwise.
    fn codec(&self) -> &'static dyn Codec {
        self.codec.unwrap_or(&codec::TVM018)
    }

    /// The host's generation, once known.
    pub fn generation(&self) -> Option<&'static str> {
        self.codec.map(|c| c.name())
    }

    /// An `Exception` packet carrying `message`, in the host's encoding.
    pub fn exception(&self, message: &str) -> Vec<u8> {
        wire::exception_packet(self.codec(), message)
    }

    fn dispatch(&mut self, code: i32, r: &mut Reader<'_>) -> Result<Vec<u8>> {
        if code != code::INIT_SERVER && !self.initialized {
            return Err(Error::value(format!("packet code {code} before InitServer")));
        }
        match code {
            code::INIT_SERVER => self.init_server(r),
            code::CALL_FUNC => self.call_func(r),
            code::COPY_TO_REMOTE => self.copy_to_remote(r),
            code::COPY_FROM_REMOTE => self.copy_from_remote(r),
            c if (code::GET_GLOBAL_FUNC..=code::DEV_GET_CURRENT_STREAM).contains(&c) => {
                let args = wire_err(r.packed_seq(self.codec()), "syscall arguments")?;
                wire_err(r.finish("syscall"), "syscall")?;
                self.syscall(c, &args).map(|v| wire::return_packet(self.codec(), &[v]))
            }
            c => Err(Error::value(format!("unknown packet code {c}"))),
        }
    }

    fn init_server(&mut self, r: &mut Reader<'_>) -> Result<Vec<u8>> {
        let version = wire_err(r.blob("protocol version"), "InitServer")?;
        let args = wire_err(r.packed_seq(self.codec()), "InitServer arguments")?;
        if version != wire::PROTOCOL_VERSION.as_bytes() {
            return Err(Error::value(format!(
                "client protocol version {:?} does not match the server's {}",
                String::from_utf8_lossy(&version),
                wire::PROTOCOL_VERSION
            )));
        }
        match args.first() {
            None => {}
            Some(WireValue::Str(s)) if s == b"rpc.LocalSession" => {}
            Some(v) => {
                return Err(Error::unsupported(format!("session constructor {v:?}: only rpc.LocalSession is served")))
            }
        }
        if self.initialized {
            return Err(Error::value("InitServer: the session is already initialized"));
        }
        self.initialized = true;
        // No value: InitServer carries nothing that tells the generations apart, and a 0.18 void
        // (NULL, code 4) reads as a pointer to a 0.2x host. Both hosts read an empty sequence and
        // ignore InitServer's result.
        Ok(wire::return_packet(self.codec(), &[]))
    }

    fn call_func(&mut self, r: &mut Reader<'_>) -> Result<Vec<u8>> {
        let id = wire_err(r.u64("function handle"), "CallFunc")?;
        let args = wire_err(r.packed_seq(self.codec()), "CallFunc arguments")?;
        wire_err(r.finish("CallFunc"), "CallFunc")?;
        let f = match self.handles.get(id, "CallFunc")? {
            Value::Func(f) => f.clone(),
            v => {
                return Err(Error::type_error(format!(
                    "CallFunc: handle {id:#x} is a {}, not a function",
                    v.type_name()
                )))
            }
        };
        let mut views = Views::default();
        let values = args
            .iter()
            .enumerate()
            .map(|(i, a)| self.arg(a, &mut views).map_err(|e| e.context(format!("argument {i}"))))
            .collect::<Result<Vec<_>>>()?;
        let ret = f.call(&values)?;
        drop(values);
        drop(views);
        let reply = self.codec().reply(self.returned(ret)?);
        Ok(wire::return_packet(self.codec(), &reply))
    }

    /// A host value as a runtime value; tensors become views of memory this session holds.
    fn arg(&self, a: &WireValue, views: &mut Views) -> Result<Value> {
        Ok(match a {
            WireValue::Int(tc::BOOL, v) => Value::Bool(*v != 0),
            WireValue::Int(_, v) => Value::Int(*v),
            WireValue::Float(f) => Value::Float(*f),
            WireValue::Null => Value::Null,
            WireValue::DType(t) => Value::DataType(*t),
            WireValue::Device(d) => Value::Device(*d),
            WireValue::Str(s) => {
                Value::Str(String::from_utf8(s.clone()).map_err(|_| Error::value("a string argument is not UTF-8"))?)
            }
            WireValue::Bytes(b) => Value::Bytes(b.clone()),
            WireValue::Tensor(t) => self.view(t, views)?,
            WireValue::Handle(_, 0) => Value::Null,
            WireValue::Handle(code, id) => self.held(*code, *id)?,
            WireValue::Object(id) => self.held(tc::OBJECT_HANDLE, *id)?,
        })
    }

    /// A handle argument: what the session gave out under `id`, of the kind `code` says.
    fn held(&self, code: i32, id: u64) -> Result<Value> {
        let v = self.handles.get(id, "argument")?;
        let fits = match code {
            tc::MODULE_HANDLE => matches!(v, Value::Module(_)),
            tc::PACKED_FUNC_HANDLE => matches!(v, Value::Func(_)),
            _ => true,
        };
        if !fits {
            return Err(Error::type_error(format!(
                "handle {id:#x} is a {}, passed as {}",
                v.type_name(),
                tc::name(code)
            )));
        }
        Ok(v.clone())
    }

    fn view(&self, t: &WireTensor, views: &mut Views) -> Result<Value> {
        if t.device.device_type != device_type::CPU {
            return Err(Error::value(format!(
                "tensor on device type {}: this server has CPU devices only",
                t.device.device_type
            )));
        }
        let nbytes = t.nbytes().ok_or_else(|| Error::value(format!("tensor shape {:?} has no size", t.shape)))?;
        let data = self.handles.locate(t.data, t.byte_offset, nbytes)?;
        let shape: Box<[i64]> = t.shape.clone().into();
        let tensor = Box::new(DLTensor {
            data: (data as u64 - t.byte_offset) as *mut c_void,
            device: t.device,
            ndim: shape.len() as i32,
            dtype: t.dtype,
            shape: shape.as_ptr() as *mut i64,
            strides: std::ptr::null_mut(),
            byte_offset: t.byte_offset,
        });
        let ptr = &*tensor as *const DLTensor as *mut DLTensor;
        views.shapes.push(shape);
        views.tensors.push(tensor);
        // SAFETY: the struct and its shape live in `views` until the call returns; its data is a
        // range of a region this session keeps alive (checked by `locate`), on the CPU.
        Ok(Value::DLTensor(unsafe { RawTensor::new(ptr) }))
    }

    /// A call's result, what the host may hold of it put in the handle table (an array as its
    /// description and a handle, other objects as handles).
    fn returned(&mut self, v: Value) -> Result<Returned> {
        let plain = |w| Ok(Returned::Plain(w));
        let kind = match v {
            Value::Null => return plain(WireValue::Null),
            Value::Int(i) => return plain(WireValue::int(i)),
            Value::Bool(b) => return plain(WireValue::Int(tc::BOOL, b as i64)),
            Value::Float(f) => return plain(WireValue::Float(f)),
            Value::DataType(t) => return plain(WireValue::DType(t)),
            Value::Device(d) => return plain(WireValue::Device(d)),
            Value::Str(s) => return plain(WireValue::Str(s.into_bytes())),
            Value::RawStr(s) => return plain(WireValue::Str(s.into_bytes())),
            Value::Bytes(b) => return plain(WireValue::Bytes(b)),
            Value::Handle(p) => return Ok(Returned::Held(HeldKind::Opaque, p as u64)),
            Value::NDArray(a) => return self.returned_array(a),
            Value::DLTensor(_) => return Err(Error::value("a borrowed DLTensor cannot be returned over RPC")),
            Value::Module(_) => HeldKind::Module,
            Value::Func(_) => HeldKind::Func,
            Value::Object(ref o) => HeldKind::Object(o.type_index()),
        };
        Ok(Returned::Held(kind, self.handles.insert(v)))
    }

    fn returned_array(&mut self, a: NDArray) -> Result<Returned> {
        if a.strides().is_some() {
            return Err(Error::value("an array with strides cannot be returned over RPC"));
        }
        let desc = WireTensor {
            data: a.data_ptr() as u64,
            device: a.device(),
            dtype: a.dtype(),
            shape: a.shape().to_vec(),
            byte_offset: a.dl_tensor.byte_offset,
        };
        Ok(Returned::Tensor(desc, self.handles.insert(Value::NDArray(a))))
    }

    fn copy_to_remote(&mut self, r: &mut Reader<'_>) -> Result<Vec<u8>> {
        let t = wire_err(r.tensor(), "CopyToRemote")?;
        let n = wire_err(r.u64("byte count"), "CopyToRemote")?;
        let bytes = wire_err(r.bytes(n, "CopyToRemote data"), "CopyToRemote")?;
        wire_err(r.finish("CopyToRemote"), "CopyToRemote")?;
        let dst = self.handles.locate(t.data, t.byte_offset, n).map_err(|e| e.context("CopyToRemote"))?;
        // SAFETY: `locate` checked that `n` bytes at `dst` lie inside a live region.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, n as usize) };
        Ok(wire::return_void(self.codec()))
    }

    fn copy_from_remote(&mut self, r: &mut Reader<'_>) -> Result<Vec<u8>> {
        let t = wire_err(r.tensor(), "CopyFromRemote")?;
        let n = wire_err(r.u64("byte count"), "CopyFromRemote")?;
        wire_err(r.finish("CopyFromRemote"), "CopyFromRemote")?;
        let src = self.handles.locate(t.data, t.byte_offset, n).map_err(|e| e.context("CopyFromRemote"))?;
        let mut w = Writer::packet(code::COPY_ACK);
        // SAFETY: `locate` checked that `n` bytes at `src` lie inside a live region.
        w.raw(unsafe { std::slice::from_raw_parts(src, n as usize) });
        Ok(w.finish())
    }

    fn syscall(&mut self, c: i32, a: &[WireValue]) -> Result<WireValue> {
        match (c, a) {
            (code::GET_GLOBAL_FUNC, [WireValue::Str(name)]) => Ok(self.global(&String::from_utf8_lossy(name))),
            // 0.18 hosts add the handle's type code; 0.2x hosts send the handle alone.
            (code::FREE_HANDLE, [WireValue::Handle(_, id)] | [WireValue::Handle(_, id), WireValue::Int(..)]) => {
                self.handles.free(*id).map(|_| WireValue::Null)
            }
            (code::DEV_SET_DEVICE, [WireValue::Device(d)]) => cpu_only(*d).map(|_| WireValue::Null),
            (code::DEV_GET_ATTR, [WireValue::Device(d), WireValue::Int(_, kind)]) => device_attr(*d, *kind),
            (
                code::DEV_ALLOC_DATA,
                [WireValue::Device(d), WireValue::Int(_, n), WireValue::Int(..), WireValue::DType(_)],
            ) => self.alloc(*d, u64::try_from(*n).map_err(|_| Error::value(format!("DevAllocData of {n} bytes")))?),
            (code::DEV_ALLOC_DATA_WITH_SCOPE, [WireValue::Tensor(t), scope]) => {
                match scope {
                    WireValue::Null => {}
                    WireValue::Str(s) if s == b"global" => {}
                    s => return Err(Error::unsupported(format!("memory scope {s:?} (only \"global\")"))),
                }
                let n = t
                    .nbytes()
                    .ok_or_else(|| Error::value(format!("DevAllocDataWithScope: shape {:?} has no size", t.shape)))?;
                self.alloc(t.device, n)
            }
            (code::DEV_FREE_DATA, [WireValue::Device(_), WireValue::Handle(_, p)]) => self.free_data(*p),
            (code::DEV_STREAM_SYNC | code::DEV_FREE_STREAM | code::DEV_SET_STREAM, [WireValue::Device(d), _]) => {
                cpu_only(*d).map(|_| WireValue::Null)
            }
            (code::DEV_CREATE_STREAM | code::DEV_GET_CURRENT_STREAM, [WireValue::Device(d)]) => {
                cpu_only(*d).map(|_| WireValue::Null)
            }
            (code::COPY_AMONG_REMOTE, [WireValue::Tensor(from), WireValue::Tensor(to), _]) => self.copy_among(from, to),
            _ => Err(Error::value(format!(
                "RPC call {c} with arguments of type codes {:?} is not one this server knows",
                a.iter().map(|v| self.codec().type_code(v)).collect::<Vec<_>>()
            ))),
        }
    }

    /// A function by name: the session's own first, then the global registry; a handle of 0
    /// when neither has it, as TVM's servers answer (hosts probe for optional functions so).
    fn global(&mut self, name: &str) -> WireValue {
        let id = match self.env.get(name).or_else(|| registry::get(name)) {
            Some(f) => self.handles.insert(Value::Func(f)),
            None => 0,
        };
        WireValue::Handle(tc::OPAQUE_HANDLE, id)
    }

    fn alloc(&mut self, d: DLDevice, n: u64) -> Result<WireValue> {
        cpu_only(d)?;
        if self.allocated.saturating_add(n) > self.memory_limit {
            return Err(Error::value(format!(
                "cannot allocate {n} bytes: the session holds {} of its {}-byte limit",
                self.allocated, self.memory_limit
            )));
        }
        let bytes = usize::try_from(n).map_err(|_| Error::value(format!("cannot allocate {n} bytes")))?;
        let a = NDArray::empty(&[bytes.max(1) as i64], DLDataType::new(dtype_code::UINT, 8, 1), d)?;
        let p = a.data_ptr() as u64;
        self.handles.hold(p, n, Some(a));
        self.allocated += n;
        Ok(WireValue::Handle(tc::OPAQUE_HANDLE, p))
    }

    fn free_data(&mut self, p: u64) -> Result<WireValue> {
        match self.handles.regions.get(&p) {
            Some(r) if r.owned.is_some() => {
                self.allocated -= r.len;
                self.handles.regions.remove(&p);
                Ok(WireValue::Null)
            }
            _ => Err(Error::value(format!("DevFreeData: {p:#x} is not a buffer this session allocated"))),
        }
    }

    fn copy_among(&mut self, from: &WireTensor, to: &WireTensor) -> Result<WireValue> {
        let n = from.nbytes().filter(|&n| Some(n) == to.nbytes()).ok_or_else(|| {
            Error::value(format!(
                "CopyAmongRemote: shapes {:?} and {:?} hold different byte counts",
                from.shape, to.shape
            ))
        })?;
        cpu_only(from.device)?;
        cpu_only(to.device)?;
        let src = self.handles.locate(from.data, from.byte_offset, n)?;
        let dst = self.handles.locate(to.data, to.byte_offset, n)?;
        // SAFETY: both ranges lie inside live regions (`locate`); `copy` allows overlap.
        unsafe { std::ptr::copy(src, dst, n as usize) };
        Ok(WireValue::Null)
    }

    /// The session's work directory.
    pub fn workdir(&self) -> &std::path::Path {
        self.env.dir()
    }

    /// The handles the host holds now (for tests and logs).
    pub fn live_handles(&self) -> usize {
        self.handles.table.len()
    }
}

/// The machine's physical memory in bytes (no limit where it cannot be read).
fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(p), Ok(s)) if p > 0 && s > 0 => p.saturating_mul(s),
        _ => u64::MAX,
    }
}

fn wire_err<T>(r: WireResult<T>, what: &str) -> Result<T> {
    r.map_err(|e| Error::value(format!("{what}: malformed packet: {e}")))
}

fn cpu_only(d: DLDevice) -> Result<()> {
    if d.device_type == device_type::CPU {
        Ok(())
    } else {
        Err(Error::value(format!("device type {} is not available on this server (CPU only)", d.device_type)))
    }
}

/// `DevGetAttr`: whether a device exists (kind 0; 0 for devices this server lacks, as TVM's
/// servers answer); other attributes of the CPU are not reported (NULL, as TVM's CPU device).
fn device_attr(d: DLDevice, kind: i64) -> Result<WireValue> {
    match kind {
        0 => Ok(WireValue::int((d.device_type == device_type::CPU) as i64)),
        _ => cpu_only(d).map(|_| WireValue::Null),
    }
}
