//! The RPC server driven by a small protocol client over real sockets: the handshake, a TVM
//! model uploaded, loaded and run through the remote graph executor with TVM's recorded numbers,
//! remote arrays, the time evaluator, handles freed once, and every kind of bad input: each
//! answered (an `Exception` naming it, or the connection closed) while the server goes on to
//! serve the next client. The client speaks as a TVM 0.18 host or, where the test says so, as an
//! apache-tvm 0.2x host (src/rpc/codec.rs); recorded sessions of real hosts of both generations
//! are replayed. tests/rpc_host/host_flow.py and host_flow_027.py run the flows from real hosts.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tvm_runtime::abi::{type_code as tc, DLDataType, DLDevice};
use tvm_runtime::rpc::codec::{FFI, TVM018};
use tvm_runtime::rpc::server::{Options, Server};
use tvm_runtime::rpc::wire::{self, code, Codec, Reader, WireTensor, WireValue, Writer, RPC_MAGIC};

/// A server on an ephemeral loopback port, serving on a thread until dropped.
struct Running {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    workdir: std::path::PathBuf,
}

impl Running {
    fn start(key: &str, extra: impl FnOnce(&mut Options)) -> Running {
        tvm_runtime::init();
        let workdir = scratch("rpc").join(format!("work-{key}-{}", std::process::id()));
        std::fs::create_dir_all(&workdir).unwrap();
        let mut o = Options {
            host: "127.0.0.1".into(),
            port: 0,
            port_end: 0,
            key: key.into(),
            workdir: Some(workdir.clone()),
            ..Options::default()
        };
        extra(&mut o);
        let server = Server::bind(o).unwrap();
        let (port, stop) = (server.port(), server.stopper());
        let thread = std::thread::spawn(move || server.serve().unwrap());
        Running { port, stop, thread: Some(thread), workdir }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

struct Client {
    s: TcpStream,
    /// The host generation this client speaks as.
    codec: &'static dyn Codec,
}

type Reply = Result<Vec<WireValue>, String>;

impl Client {
    /// Connect with `key`; the server's answer code when it refuses.
    fn connect(port: u16, key: &str) -> Result<Client, i32> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let k = format!("client:{key}");
        let mut hello = RPC_MAGIC.to_le_bytes().to_vec();
        hello.extend_from_slice(&(k.len() as i32).to_le_bytes());
        hello.extend_from_slice(k.as_bytes());
        s.write_all(&hello).unwrap();
        let answer = read_i32(&mut s);
        if answer != RPC_MAGIC {
            return Err(answer);
        }
        let n = read_i32(&mut s);
        let mut server_key = vec![0u8; n as usize];
        s.read_exact(&mut server_key).unwrap();
        assert!(String::from_utf8(server_key).unwrap().starts_with("server:"));
        Ok(Client { s, codec: &TVM018 })
    }

    /// Connected and initialized (`InitServer` with protocol 0.8.0), as a TVM 0.18 host.
    fn session(port: u16, key: &str) -> Client {
        Client::session_as(port, key, &TVM018)
    }

    /// Connected and initialized as a host of `codec`'s generation.
    fn session_as(port: u16, key: &str, codec: &'static dyn Codec) -> Client {
        let mut c = Client::connect(port, key).unwrap();
        c.codec = codec;
        let mut w = Writer::packet(code::INIT_SERVER);
        w.blob(b"0.8.0");
        w.packed_seq(codec, &[]);
        assert_eq!(c.exchange(w.finish()).unwrap(), [], "InitServer returns no value");
        c
    }

    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// The next packet: its code and the rest of its body.
    fn recv(&mut self) -> (i32, Vec<u8>) {
        let mut len = [0u8; 8];
        self.s.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u64::from_le_bytes(len) as usize];
        self.s.read_exact(&mut body).unwrap();
        (i32::from_le_bytes(body[..4].try_into().unwrap()), body[4..].to_vec())
    }

    /// Send a packet; the values of its `Return`, or the message of its `Exception`.
    fn exchange(&mut self, packet: Vec<u8>) -> Reply {
        self.send(&packet);
        let (c, body) = self.recv();
        let values = Reader::new(&body).packed_seq(self.codec).unwrap();
        match (c, values.as_slice()) {
            (code::RETURN, _) => Ok(values),
            (code::EXCEPTION, [WireValue::Str(m)]) => Err(String::from_utf8_lossy(m).into_owned()),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn syscall(&mut self, c: i32, args: &[WireValue]) -> Reply {
        let mut w = Writer::packet(c);
        w.packed_seq(self.codec, args);
        self.exchange(w.finish())
    }

    fn global(&mut self, name: &str) -> Option<u64> {
        match self.syscall(code::GET_GLOBAL_FUNC, &[WireValue::Str(name.into())]).unwrap().as_slice() {
            [WireValue::Handle(_, 0)] => None,
            [WireValue::Handle(_, h)] => Some(*h),
            other => panic!("GetGlobalFunc answered {other:?}"),
        }
    }

    fn call(&mut self, f: u64, args: &[WireValue]) -> Reply {
        let mut w = Writer::packet(code::CALL_FUNC);
        w.u64(f);
        w.packed_seq(self.codec, args);
        self.exchange(w.finish())
    }

    /// Call global `name`; its result values (type code first).
    fn call_global(&mut self, name: &str, args: &[WireValue]) -> Reply {
        let f = self.global(name).unwrap_or_else(|| panic!("no global {name}"));
        let out = self.call(f, args);
        self.free(f, tc::PACKED_FUNC_HANDLE).unwrap();
        out
    }

    /// `FreeHandle`: 0.18 hosts name the handle's type code, 0.2x hosts send the handle alone.
    fn free(&mut self, h: u64, type_code: i32) -> Reply {
        let mut args = vec![WireValue::Handle(tc::OPAQUE_HANDLE, h), WireValue::int(type_code as i64)];
        if self.codec.name() != TVM018.name() {
            args.pop();
        }
        self.syscall(code::FREE_HANDLE, &args)
    }

    fn copy_to(&mut self, t: &WireTensor, bytes: &[u8]) -> Reply {
        let mut w = Writer::packet(code::COPY_TO_REMOTE);
        w.tensor(t);
        w.u64(bytes.len() as u64);
        w.raw(bytes);
        self.exchange(w.finish())
    }

    fn copy_from(&mut self, t: &WireTensor, n: u64) -> Result<Vec<u8>, String> {
        let mut w = Writer::packet(code::COPY_FROM_REMOTE);
        w.tensor(t);
        w.u64(n);
        self.send(&w.finish());
        match self.recv() {
            (code::COPY_ACK, data) => Ok(data),
            (code::EXCEPTION, body) => match Reader::new(&body).packed_seq(self.codec).unwrap().as_slice() {
                [WireValue::Str(m)] => Err(String::from_utf8_lossy(m).into_owned()),
                other => panic!("{other:?}"),
            },
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn shutdown(mut self) {
        self.send(&Writer::packet(code::SHUTDOWN).finish());
    }
}

fn read_i32(s: &mut TcpStream) -> i32 {
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    i32::from_le_bytes(b)
}

fn handle(v: &[WireValue], want_code: i32) -> u64 {
    match v {
        [WireValue::Int(_, c), WireValue::Handle(_, h)] if *c == want_code as i64 => *h,
        other => panic!("expected a handle of type code {want_code}, got {other:?}"),
    }
}

fn ndarray(v: &[WireValue]) -> (WireTensor, u64) {
    match v {
        [WireValue::Int(_, 13), WireValue::Tensor(t), WireValue::Handle(_, h)] => (t.clone(), *h),
        other => panic!("expected an array, got {other:?}"),
    }
}

fn s(text: &str) -> WireValue {
    WireValue::Str(text.into())
}

/// Upload seed 004, load it and create its graph executor remotely; the executor module.
fn remote_executor(c: &mut Client) -> u64 {
    let so = std::fs::read(seed004_so("rpc")).unwrap();
    c.call_global("tvm.rpc.server.upload", &[s("seed004.so"), WireValue::Bytes(so)]).unwrap();
    let lib = handle(&c.call_global("tvm.rpc.server.load_module", &[s("seed004.so")]).unwrap(), tc::MODULE_HANDLE);
    let get = |c: &mut Client, m: u64, name: &str| {
        let args = [WireValue::Handle(tc::MODULE_HANDLE, m), s(name), WireValue::int(1)];
        handle(&c.call_global("tvm.rpc.server.ModuleGetFunction", &args).unwrap(), tc::PACKED_FUNC_HANDLE)
    };
    let default = get(c, lib, "default");
    let gmod = handle(&c.call(default, &[WireValue::Device(DLDevice::cpu(0))]).unwrap(), tc::MODULE_HANDLE);
    c.free(default, tc::PACKED_FUNC_HANDLE).unwrap();
    c.free(lib, tc::MODULE_HANDLE).unwrap();
    gmod
}

fn module_fn(c: &mut Client, m: u64, name: &str) -> u64 {
    let args = [WireValue::Handle(tc::MODULE_HANDLE, m), s(name), WireValue::int(1)];
    handle(&c.call_global("tvm.rpc.server.ModuleGetFunction", &args).unwrap(), tc::PACKED_FUNC_HANDLE)
}

#[test]
fn a_model_runs_remotely_with_tvms_numbers() {
    let server = Running::start("", |_| {});
    let mut c = Client::session(server.port, "");
    let gmod = remote_executor(&mut c);
    let get_input = module_fn(&mut c, gmod, "get_input");
    // As TVM's host sets an input from numpy: the executor's own tensor, written in place.
    for name in ["x1", "y1", "x2", "y2"] {
        let (t, h) = ndarray(&c.call(get_input, &[s(name)]).unwrap());
        assert_eq!((t.shape.as_slice(), t.dtype), (&[10, 2][..], DLDataType::FLOAT32));
        c.copy_to(&t, &tvm_data("seed004", &format!("input_{name}.bin"))).unwrap();
        c.free(h, tc::NDARRAY_HANDLE).unwrap();
    }
    let run = module_fn(&mut c, gmod, "run");
    c.call(run, &[]).unwrap();
    let get_output = module_fn(&mut c, gmod, "get_output");
    let (out, h) = ndarray(&c.call(get_output, &[WireValue::int(0)]).unwrap());
    let got = f32s(&c.copy_from(&out, 80).unwrap());
    assert_close(&got, &f32s(&tvm_data("seed004", "output_0.bin")), 1e-6);
    // The same tensor returned twice: two handles, each freed once; the second free fails.
    let (_, h2) = ndarray(&c.call(get_output, &[WireValue::int(0)]).unwrap());
    c.free(h, tc::NDARRAY_HANDLE).unwrap();
    assert!(c.copy_from(&out, 80).is_ok(), "the other handle keeps the tensor reachable");
    c.free(h2, tc::NDARRAY_HANDLE).unwrap();
    let e = c.free(h2, tc::NDARRAY_HANDLE).unwrap_err();
    assert!(e.contains("not held by this session"), "{e}");
    let e = c.copy_from(&out, 80).unwrap_err();
    assert!(e.contains("not in an array or buffer this session holds"), "{e}");
    c.shutdown();
}

#[test]
fn time_evaluator_times_a_remote_function() {
    let server = Running::start("", |_| {});
    let mut c = Client::session(server.port, "");
    let gmod = remote_executor(&mut c);
    let args = [
        WireValue::Handle(tc::MODULE_HANDLE, gmod),
        s("run"),
        WireValue::int(1),
        WireValue::int(0),
        WireValue::int(5),
        WireValue::int(3),
        WireValue::int(0),
        WireValue::int(100),
        WireValue::int(0),
        WireValue::int(1),
        WireValue::int(0),
        s(""),
    ];
    let timer = handle(&c.call_global("runtime.RPCTimeEvaluator", &args).unwrap(), tc::PACKED_FUNC_HANDLE);
    match c.call(timer, &[]).unwrap().as_slice() {
        [WireValue::Int(_, 12), WireValue::Bytes(b)] => {
            assert_eq!(b.len(), 3 * 8);
            for t in b.chunks(8).map(|x| f64::from_le_bytes(x.try_into().unwrap())) {
                assert!(t > 0.0 && t < 1.0, "{t} s per run");
            }
        }
        other => panic!("{other:?}"),
    }
    c.shutdown();
}

#[test]
fn remote_buffers_round_trip_and_stay_in_bounds() {
    let server = Running::start("", |_| {});
    let mut c = Client::session(server.port, "");
    let dev = WireValue::Device(DLDevice::cpu(0));
    let ptr = match c
        .syscall(
            code::DEV_ALLOC_DATA,
            &[dev.clone(), WireValue::int(24), WireValue::int(64), WireValue::DType(DLDataType::FLOAT32)],
        )
        .unwrap()
        .as_slice()
    {
        [WireValue::Handle(_, p)] => *p,
        other => panic!("{other:?}"),
    };
    let t = WireTensor {
        data: ptr,
        device: DLDevice::cpu(0),
        dtype: DLDataType::FLOAT32,
        shape: vec![2, 3],
        byte_offset: 0,
    };
    let data: Vec<u8> = (0..24u8).collect();
    c.copy_to(&t, &data).unwrap();
    assert_eq!(c.copy_from(&t, 24).unwrap(), data);
    // A chunk at an offset, as TVM's host splits large copies.
    c.copy_to(&WireTensor { byte_offset: 16, ..t.clone() }, &[9; 8]).unwrap();
    assert_eq!(&c.copy_from(&t, 24).unwrap()[16..], &[9; 8]);
    for (tensor, n, want) in [
        (WireTensor { byte_offset: 20, ..t.clone() }, 8, "run past the end of its 24-byte buffer"),
        (WireTensor { data: ptr + 4096, ..t.clone() }, 4, "not in an array or buffer"),
        (WireTensor { data: 0x1000, ..t.clone() }, 4, "not in an array or buffer"),
    ] {
        let e = c.copy_to(&tensor, &vec![0; n]).unwrap_err();
        assert!(e.contains(want), "{e}");
        let e = c.copy_from(&tensor, n as u64).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
    let u = WireTensor { data: ptr, shape: vec![6], ..t.clone() };
    let ptr2 = match c
        .syscall(code::DEV_ALLOC_DATA_WITH_SCOPE, &[WireValue::Tensor(u.clone()), WireValue::Null])
        .unwrap()
        .as_slice()
    {
        [WireValue::Handle(_, p)] => *p,
        other => panic!("{other:?}"),
    };
    let v = WireTensor { data: ptr2, ..u.clone() };
    c.syscall(code::COPY_AMONG_REMOTE, &[WireValue::Tensor(u), WireValue::Tensor(v.clone()), WireValue::Null]).unwrap();
    assert_eq!(&c.copy_from(&v, 24).unwrap()[16..], &[9; 8]);
    c.syscall(code::DEV_FREE_DATA, &[dev.clone(), WireValue::Handle(tc::OPAQUE_HANDLE, ptr)]).unwrap();
    let e = c.syscall(code::DEV_FREE_DATA, &[dev.clone(), WireValue::Handle(tc::OPAQUE_HANDLE, ptr)]).unwrap_err();
    assert!(e.contains("not a buffer this session allocated"), "{e}");
    assert!(c.copy_from(&t, 4).is_err(), "a freed buffer was read");
    // Device queries: the CPU exists, a GPU does not (0, not an error), streams are NULL.
    let exists = |c: &mut Client, t: i32| {
        c.syscall(
            code::DEV_GET_ATTR,
            &[WireValue::Device(DLDevice { device_type: t, device_id: 0 }), WireValue::int(0)],
        )
        .unwrap()
    };
    assert_eq!(exists(&mut c, 1), vec![WireValue::int(1)]);
    assert_eq!(exists(&mut c, 2), vec![WireValue::int(0)]);
    assert_eq!(c.syscall(code::DEV_CREATE_STREAM, &[dev.clone()]).unwrap(), vec![WireValue::Null]);
    c.syscall(code::DEV_STREAM_SYNC, &[dev, WireValue::Null]).unwrap();
    c.shutdown();
}

#[test]
fn errors_are_answered_and_the_session_goes_on() {
    let server = Running::start("", |_| {});
    let mut c = Client::session(server.port, "");
    assert_eq!(c.global("tvm.rpc.server.GetCRTMaxPacketSize"), None, "a missing global is handle 0, not an error");
    let gmod = remote_executor(&mut c);
    // A failing call: wrong shape for an input.
    let set_input = module_fn(&mut c, gmod, "set_input");
    let get_input = module_fn(&mut c, gmod, "get_input");
    let bad = ndarray(&c.call(get_input, &[s("x1")]).unwrap()).0;
    let e =
        c.call(set_input, &[s("x1"), WireValue::Tensor(WireTensor { shape: vec![5, 2], ..bad.clone() })]).unwrap_err();
    assert!(e.contains("x1"), "{e}");
    // A missing function of a module is NULL; a freed or never-given handle is an error.
    let args = [WireValue::Handle(tc::MODULE_HANDLE, gmod), s("no_such_function"), WireValue::int(1)];
    assert_eq!(
        c.call_global("tvm.rpc.server.ModuleGetFunction", &args).unwrap(),
        vec![WireValue::int(4), WireValue::Null]
    );
    let e = c.call(0xdead0, &[]).unwrap_err();
    assert!(e.contains("handle 0xdead0 is not held by this session"), "{e}");
    let e = c.call(gmod, &[]).unwrap_err();
    assert!(e.contains("is a Module, not a function"), "{e}");
    // Files stay inside the session's work directory.
    for name in ["../x", "/etc/passwd"] {
        let e = c.call_global("tvm.rpc.server.upload", &[s(name), WireValue::Bytes(vec![1])]).unwrap_err();
        assert!(e.contains("inside the session's work directory"), "{e}");
    }
    let e = c.call_global("tvm.rpc.server.load_module", &[s("missing.so")]).unwrap_err();
    assert!(e.contains("missing.so"), "{e}");
    // Malformed packets inside a well-framed packet get an Exception; the session goes on.
    let mut w = Writer::packet(code::CALL_FUNC);
    w.u64(gmod);
    w.i32(3);
    let e = c.exchange(w.finish()).unwrap_err();
    assert!(e.contains("malformed packet"), "{e}");
    let mut w = Writer::packet(99);
    w.i32(0);
    assert!(c.exchange(w.finish()).unwrap_err().contains("unknown packet code 99"));
    let e = c.syscall(code::FREE_HANDLE, &[s("x")]).unwrap_err();
    assert!(e.contains("is not one this server knows"), "{e}");
    let run = module_fn(&mut c, gmod, "run");
    c.call(run, &[]).unwrap();
    c.shutdown();
}

/// After each broken client, a normal session works: the server never stops.
#[test]
fn broken_clients_do_not_stop_the_server() {
    let server = Running::start("dev", |o| o.max_packet = 1 << 20);
    let port = server.port;
    let works = || {
        let mut c = Client::session(port, "dev");
        assert!(c.global("runtime.RPCTimeEvaluator").is_some());
        c.shutdown();
    };
    let raw = |bytes: &[u8]| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = s.write_all(bytes);
        s
    };
    drop(raw(b"GET / HTTP/1.1\r\n\r\n"));
    works();
    drop(raw(&0x12345i32.to_le_bytes()));
    works();
    assert_eq!(Client::connect(port, "other").err(), Some(RPC_MAGIC + 2), "a wrong key gets the mismatch code");
    assert_eq!(Client::connect(port, "").err(), Some(RPC_MAGIC + 2));
    works();
    let mut huge = RPC_MAGIC.to_le_bytes().to_vec();
    huge.extend_from_slice(&i32::MAX.to_le_bytes());
    drop(raw(&huge));
    works();
    // Inside a session: a packet over the limit gets an Exception and the session ends.
    let mut c = Client::session(port, "dev");
    c.send(&(1u64 << 40).to_le_bytes());
    let (code, _) = c.recv();
    assert_eq!(code, code::EXCEPTION);
    works();
    // Half a packet, then the client is gone.
    let mut c = Client::session(port, "dev");
    c.send(&100u64.to_le_bytes());
    c.send(&[3, 0, 0]);
    drop(c);
    works();
    // A packet before InitServer.
    let mut c = Client::connect(port, "dev").unwrap();
    let e = c.syscall(code::GET_GLOBAL_FUNC, &[s("x")]).unwrap_err();
    assert!(e.contains("before InitServer"), "{e}");
    drop(c);
    // A wrong protocol version.
    let mut c = Client::connect(port, "dev").unwrap();
    let mut w = Writer::packet(code::INIT_SERVER);
    w.blob(b"0.7.0");
    w.packed_seq(&TVM018, &[]);
    assert!(c.exchange(w.finish()).unwrap_err().contains("does not match the server's 0.8.0"));
    drop(c);
    works();
}

#[test]
fn sessions_share_nothing_and_clean_up_their_files() {
    let server = Running::start("", |_| {});
    let mut c = Client::session(server.port, "");
    c.call_global("tvm.rpc.server.upload", &[s("a/b.bin"), WireValue::Bytes(vec![7; 10])]).unwrap();
    let path = match c.call_global("tvm.rpc.server.workpath", &[s("a/b.bin")]).unwrap().as_slice() {
        [_, WireValue::Str(p)] => std::path::PathBuf::from(String::from_utf8(p.clone()).unwrap()),
        other => panic!("{other:?}"),
    };
    assert!(path.starts_with(&server.workdir) && path.is_file());
    let held = remote_executor(&mut c);
    c.shutdown();
    let mut c = Client::session(server.port, "");
    let e = c.call(held, &[]).unwrap_err();
    assert!(e.contains("not held by this session"), "a handle crossed sessions: {e}");
    match c.call_global("tvm.rpc.server.download", &[s("a/b.bin")]) {
        Err(e) => assert!(e.contains("b.bin"), "{e}"),
        Ok(v) => panic!("a file crossed sessions: {v:?}"),
    }
    c.shutdown();
    // The first session's directory is gone once it ended.
    let t0 = std::time::Instant::now();
    while path.exists() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!path.exists(), "{} outlived its session", path.display());
}

#[test]
fn a_session_ends_at_its_timeout() {
    let server = Running::start("", |o| o.session_timeout = Some(Duration::from_secs(1)));
    let mut c = Client::session(server.port, "");
    std::thread::sleep(Duration::from_millis(1200));
    let (code, body) = c.recv();
    assert_eq!(code, code::EXCEPTION);
    assert!(String::from_utf8_lossy(&body).contains("RPCSessionTimeoutError"));
    let mut c = Client::session(server.port, "");
    assert!(c.global("runtime.RPCTimeEvaluator").is_some());
}

/// The reply bytes are TVM's: a void return is 12 bytes of body, code 4, one NULL.
#[test]
fn reply_bytes_match_tvms_layout() {
    assert_eq!(wire::return_void(&TVM018), [12, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0]);
    let e = wire::exception_packet(&TVM018, "x");
    assert_eq!(e, [21, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 11, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'x']);
    // apache-tvm 0.2x: None is type index 0, a message a RawStr (index 8).
    assert_eq!(wire::return_void(&FFI), [12, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    let e = wire::exception_packet(&FFI, "x");
    assert_eq!(e, [21, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, b'x']);
}

/// The `rpc_session` fuzzer's seeds (host packet streams) through one session each, as the
/// fuzzer runs them: every packet answered with one well-formed reply, files served from the
/// session's directory, out-of-range copies refused.
#[test]
fn fuzz_seeds_replay_through_a_session() {
    use tvm_runtime::rpc::env::Env;
    use tvm_runtime::rpc::session::{Session, Step};
    tvm_runtime::init();
    let dir = repo().join("fuzz/corpus/rpc_session");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let work = scratch("rpc").join(format!("seed-{seen}"));
        std::fs::create_dir_all(&work).unwrap();
        let mut session = Session::new(Env::new(work));
        let (mut rest, mut codes) = (&data[..], Vec::new());
        while rest.len() >= 8 {
            let len = (u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize).min(rest.len() - 8);
            match session.handle(&rest[8..8 + len]) {
                Step::Reply(b) => {
                    assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()) as usize, b.len() - 8);
                    codes.push(i32::from_le_bytes(b[8..12].try_into().unwrap()));
                }
                Step::End => codes.push(-1),
            }
            rest = &rest[8 + len..];
        }
        assert!(
            !codes.is_empty() && codes.iter().all(|c| [code::RETURN, code::EXCEPTION, code::COPY_ACK, -1].contains(c))
        );
        if path.file_name().unwrap().to_string_lossy().starts_with("ffi_") {
            // The 0.2x seed is read as 0.2x: every call answered, none refused.
            assert_eq!(session.generation(), Some(FFI.name()), "{}", path.display());
            assert!(!codes.contains(&code::EXCEPTION), "{}: {codes:?}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 3, "{}: {seen} seeds", dir.display());
}

/// Packets of a recorded stream (each body after its length prefix).
fn packets(stream: &[u8]) -> Vec<Vec<u8>> {
    let (mut out, mut rest) = (Vec::new(), stream);
    while rest.len() >= 8 {
        let n = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
        out.push(rest[8..8 + n].to_vec());
        rest = &rest[8 + n..];
    }
    assert!(rest.is_empty(), "a recorded stream ends in half a packet");
    out
}

/// What the recorded server's handles and addresses are in this server. TVM's handles are
/// addresses, so one object returned twice has one recorded handle (freed twice) and two of ours.
struct Translation {
    ids: std::collections::HashMap<u64, Vec<u64>>,
    /// The recorded host's generation.
    codec: &'static dyn Codec,
}

impl Translation {
    fn get(&self, v: u64) -> u64 {
        if v == 0 {
            return 0;
        }
        let ours = self.ids.get(&v).and_then(|l| l.last());
        *ours.unwrap_or_else(|| panic!("the recording names {v:#x}, which no reply gave"))
    }

    /// The handle a `FreeHandle` of recorded handle `v` frees (each of ours once).
    fn take(&mut self, v: u64) -> u64 {
        let ours = self.ids.get_mut(&v).and_then(|l| l.pop());
        ours.unwrap_or_else(|| panic!("the recording frees {v:#x} more often than it was given"))
    }

    fn learn(&mut self, recorded: u64, ours: u64) {
        self.ids.entry(recorded).or_default().push(ours);
    }

    fn value(&self, v: &WireValue) -> WireValue {
        match v {
            WireValue::Handle(c, h) => WireValue::Handle(*c, self.get(*h)),
            WireValue::Object(h) => WireValue::Object(self.get(*h)),
            WireValue::Tensor(t) => WireValue::Tensor(self.tensor(t)),
            v => v.clone(),
        }
    }

    fn tensor(&self, t: &WireTensor) -> WireTensor {
        WireTensor { data: self.get(t.data), ..t.clone() }
    }

    /// A host packet with the recorded server's handles and addresses replaced by ours.
    fn request(&mut self, body: &[u8]) -> Vec<u8> {
        let mut r = Reader::new(body);
        let c = r.i32("code").unwrap();
        let mut w = Writer::packet(c);
        match c {
            code::FREE_HANDLE => match r.packed_seq(self.codec).unwrap().as_slice() {
                [WireValue::Handle(hc, h), kind @ ..] => {
                    let mut args = vec![WireValue::Handle(*hc, self.take(*h))];
                    args.extend_from_slice(kind);
                    w.packed_seq(self.codec, &args);
                }
                other => panic!("FreeHandle of {other:?}"),
            },
            code::CALL_FUNC => {
                w.u64(self.get(r.u64("handle").unwrap()));
                let args = r.packed_seq(self.codec).unwrap().iter().map(|v| self.value(v)).collect::<Vec<_>>();
                w.packed_seq(self.codec, &args);
            }
            code::COPY_TO_REMOTE | code::COPY_FROM_REMOTE => {
                w.tensor(&self.tensor(&r.tensor().unwrap()));
                let rest = r.remaining() as u64;
                w.raw(r.bytes(rest, "rest").unwrap());
            }
            c if (code::GET_GLOBAL_FUNC..=code::DEV_GET_CURRENT_STREAM).contains(&c) => {
                let args = r.packed_seq(self.codec).unwrap().iter().map(|v| self.value(v)).collect::<Vec<_>>();
                w.packed_seq(self.codec, &args);
            }
            _ => {
                let rest = r.remaining() as u64;
                w.raw(r.bytes(rest, "rest").unwrap());
            }
        }
        w.finish()[8..].to_vec()
    }

    /// Compare our reply with the recorded one, learning the handles and addresses it gives.
    fn reply(&mut self, what: &str, recorded: &[u8], ours: &[u8]) {
        let code_of = |b: &[u8]| i32::from_le_bytes(b[..4].try_into().unwrap());
        assert_eq!(code_of(ours), code_of(recorded), "{what}: reply code (ours: {:?})", String::from_utf8_lossy(ours));
        match code_of(recorded) {
            code::COPY_ACK => assert_eq!(ours[4..], recorded[4..], "{what}: the copied bytes differ"),
            // Hosts ignore InitServer's values (this server sends none, see session.rs).
            code::RETURN if what.ends_with("(code 2)") => {}
            code::RETURN => {
                let want = Reader::new(&recorded[4..]).packed_seq(self.codec).unwrap();
                let got = Reader::new(&ours[4..]).packed_seq(self.codec).unwrap();
                assert_eq!(got.len(), want.len(), "{what}: {got:?} vs recorded {want:?}");
                for (g, w) in got.iter().zip(&want) {
                    self.value_pair(what, g, w);
                }
            }
            _ => {}
        }
    }

    fn value_pair(&mut self, what: &str, got: &WireValue, want: &WireValue) {
        match (got, want) {
            (WireValue::Handle(_, g), WireValue::Handle(_, w)) | (WireValue::Object(g), WireValue::Object(w)) => {
                assert_eq!(*g == 0, *w == 0, "{what}: a NULL handle on one side only");
                self.learn(*w, *g);
            }
            (WireValue::Tensor(g), WireValue::Tensor(w)) => {
                assert_eq!((g.shape.clone(), g.dtype, g.device), (w.shape.clone(), w.dtype, w.device), "{what}");
                self.learn(w.data, g.data);
            }
            (WireValue::Bytes(g), WireValue::Bytes(w)) if g != w => {
                // Only timings differ from run to run: as many float64 seconds, all positive.
                assert_eq!(g.len(), w.len(), "{what}: bytes");
                assert!(g.chunks(8).all(|t| f64::from_le_bytes(t.try_into().unwrap()) > 0.0), "{what}: bytes");
            }
            (g, w) => assert_eq!(g, w, "{what}"),
        }
    }
}

/// Replay the host packets of recording `name` (tests/data/rpc) through one session of this
/// server, comparing each reply with the recorded server's; the number of replies compared, and
/// the generation the session saw.
fn replay(name: &str, codec: &'static dyn Codec) -> (usize, Option<&'static str>) {
    use tvm_runtime::rpc::env::Env;
    use tvm_runtime::rpc::session::{Session, Step};
    tvm_runtime::init();
    let dir = repo().join("tests/data/rpc");
    let host = packets(&std::fs::read(dir.join(format!("{name}.host.bin"))).unwrap());
    let mut server = packets(&std::fs::read(dir.join(format!("{name}.server.bin"))).unwrap()).into_iter();
    let work = scratch("rpc").join(format!("replay-{name}"));
    std::fs::create_dir_all(&work).unwrap();
    let mut session = Session::new(Env::new(work));
    let mut t = Translation { ids: Default::default(), codec };
    let mut replies = 0;
    for (i, body) in host.iter().enumerate() {
        let what = format!("host packet {i} (code {})", i32::from_le_bytes(body[..4].try_into().unwrap()));
        match session.handle(&t.request(body)) {
            Step::End => break,
            Step::Reply(ours) => {
                let recorded = server.next().unwrap_or_else(|| panic!("{what}: the recording has no reply"));
                t.reply(&what, &recorded, &ours[8..]);
                replies += 1;
            }
        }
    }
    assert_eq!(server.next(), None, "recorded replies left over");
    (replies, session.generation())
}

/// A session a real TVM 0.18 host had with TVM's own server (apps/cpp_rpc), recorded by
/// tests/rpc_host/record.py, replayed against this server: every reply has the recorded code and
/// values (the output the host copied back is TVM's, byte for byte), handles and addresses
/// translated.
#[test]
fn a_recorded_tvm_host_session_replays() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!("skipped: the recording uploads an x86-64 Linux library");
        return;
    }
    let (replies, generation) = replay("demo_session", &TVM018);
    assert!(replies > 20, "only {replies} replies replayed");
    assert_eq!(generation, Some(TVM018.name()));
}

/// A session a real apache-tvm 0.27 host had with 0.27's own server (`python -m
/// tvm.exec.rpc_server`), recorded by tests/rpc_host/record_027.py, replayed against this server:
/// the Relax VM run remotely (mlp's output, copied back, is the bytes 0.27's server computed with
/// the same library), a tuple through set_input / invoke_stateful / get_output, the time
/// evaluator, errors, a tensor round trip and a download; every reply with 0.27's codes and values.
#[test]
fn a_recorded_tvm_027_host_session_replays() {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        eprintln!("skipped: the recording uploads x86-64 Linux libraries");
        return;
    }
    let (replies, generation) = replay("relax027_session", &FFI);
    assert!(replies > 40, "only {replies} replies replayed");
    assert_eq!(generation, Some(FFI.name()));
}

/// An apache-tvm 0.2x client on a live socket: the tvm-ffi encoding end to end (the mlp library
/// run through the Relax VM with the output 0.27 computed), then bad input in that encoding, each
/// answered with an `Exception` in it (a RawStr message) while the session goes on.
#[test]
fn a_02x_client_runs_a_model_and_survives_bad_packets() {
    let server = Running::start("", |_| {});
    let mut c = Client::session_as(server.port, "", &FFI);
    let dir = repo().join("tests/data/relax-0.27/mlp");
    let so = std::fs::read(dir.join("lib.so")).unwrap();
    assert_eq!(c.call_global("tvm.rpc.server.upload", &[s("mlp.so"), WireValue::Bytes(so)]).unwrap()[0], int(0));
    let lib = handle(&c.call_global("tvm.rpc.server.load_module", &[s("mlp.so")]).unwrap(), 73);
    let get = |c: &mut Client, m: u64, name: &str| {
        let args = [WireValue::Handle(tc::MODULE_HANDLE, m), s(name), WireValue::Int(tc::BOOL, 1)];
        c.call_global("tvm.rpc.server.ModuleGetFunction", &args).unwrap()
    };
    let load = handle(&get(&mut c, lib, "vm_load_executable"), 68);
    let vm = handle(&c.call(load, &[]).unwrap(), 73);
    let init = handle(&get(&mut c, vm, "vm_initialization"), 68);
    c.call(init, &[int(1), int(0), int(2)]).unwrap();
    let main = handle(&get(&mut c, vm, "main"), 68);
    let input = remote_tensor(&mut c, &[4, 32], &std::fs::read(dir.join("main0_in0.bin")).unwrap());
    let (out, out_handle) = match c.call(main, &[WireValue::Tensor(input.clone())]).unwrap().as_slice() {
        [WireValue::Int(_, 70), WireValue::Tensor(t), WireValue::Handle(_, h)] => (t.clone(), *h),
        other => panic!("expected a tensor, got {other:?}"),
    };
    assert_eq!(out.shape, [4, 10]);
    let got = f32s(&c.copy_from(&out, 160).unwrap());
    assert_close(&got, &f32s(&std::fs::read(dir.join("main0_out0.bin")).unwrap()), 1e-5);
    c.free(out_handle, 0).unwrap();
    let e = c.free(out_handle, 0).unwrap_err();
    assert!(e.contains("not held by this session"), "{e}");
    // A missing module function is [Int 0, None]; a missing global handle 0.
    assert_eq!(get(&mut c, vm, "no_such_function"), [int(0), WireValue::Null]);
    assert_eq!(c.global("no.such.global"), None);
    // A failing call: the wrong input shape.
    let bad = WireTensor { shape: vec![2, 32], ..input.clone() };
    let e = c.call(main, &[WireValue::Tensor(bad)]).unwrap_err();
    assert!(!e.is_empty());
    // Bad packets in the 0.2x encoding.
    let e = c.call_global("tvm.rpc.server.upload", &[s("../x"), WireValue::Bytes(vec![1])]).unwrap_err();
    assert!(e.contains("inside the session's work directory"), "{e}");
    let mut w = Writer::packet(code::CALL_FUNC);
    w.u64(main);
    w.raw(&[1, 0, 0, 0, 70, 0, 0, 0, 70, 0, 0, 0]);
    let e = c.exchange(w.finish()).unwrap_err();
    assert!(e.contains("object of type index 70 after 70"), "{e}");
    let mut w = Writer::packet(code::CALL_FUNC);
    w.u64(main);
    w.raw(&[1, 0, 0, 0, 8, 0, 0, 0]);
    w.u64(u64::MAX);
    let e = c.exchange(w.finish()).unwrap_err();
    assert!(e.contains("argument 0: string: 18446744073709551615 bytes announced"), "{e}");
    let mut w = Writer::packet(code::GET_GLOBAL_FUNC);
    w.raw(&[1, 0, 0, 0, 13, 0, 0, 0]);
    let e = c.exchange(w.finish()).unwrap_err();
    assert!(e.contains("type index 13 cannot be sent"), "{e}");
    // The session still runs the model.
    let again = c.call(main, &[WireValue::Tensor(input)]).unwrap();
    assert!(matches!(again.as_slice(), [WireValue::Int(_, 70), ..]), "{again:?}");
    c.shutdown();
}

fn int(v: i64) -> WireValue {
    WireValue::int(v)
}

/// A buffer allocated as a 0.2x host does (`DevAllocDataWithScope [DLTensor, None]`), filled.
fn remote_tensor(c: &mut Client, shape: &[i64], bytes: &[u8]) -> WireTensor {
    let mut t = WireTensor {
        data: 0,
        device: DLDevice::cpu(0),
        dtype: DLDataType::FLOAT32,
        shape: shape.to_vec(),
        byte_offset: 0,
    };
    t.data = match c.syscall(code::DEV_ALLOC_DATA_WITH_SCOPE, &[WireValue::Tensor(t.clone()), WireValue::Null]) {
        Ok(v) => match v.as_slice() {
            [WireValue::Handle(_, p)] => *p,
            other => panic!("{other:?}"),
        },
        Err(e) => panic!("{e}"),
    };
    c.copy_to(&t, bytes).unwrap();
    t
}

/// A stand-in tracker on `port` for one connection: answers each message (`[]` to
/// GET_PENDING_MATCHKEYS, 0 to the rest) until it has answered a PUT, then closes, as a tracker
/// that stops; the messages it got.
fn tracker_once(port: u16) -> std::thread::JoinHandle<Vec<String>> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let t0 = std::time::Instant::now();
        let mut s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if t0.elapsed() < Duration::from_secs(15) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => panic!("the server did not come to the tracker in 15 s: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert_eq!(read_i32(&mut s), wire::TRACKER_MAGIC);
        s.write_all(&wire::TRACKER_MAGIC.to_le_bytes()).unwrap();
        let mut got = Vec::new();
        while !got.last().is_some_and(|m: &String| m.starts_with("[3,")) {
            let mut body = vec![0u8; read_i32(&mut s) as usize];
            s.read_exact(&mut body).unwrap();
            let msg = String::from_utf8(body).unwrap();
            let answer = if msg.starts_with("[7") { "[]" } else { "0" };
            s.write_all(&(answer.len() as i32).to_le_bytes()).unwrap();
            s.write_all(answer.as_bytes()).unwrap();
            got.push(msg);
        }
        got
    })
}

/// `--tracker` before the tracker is up: the server keeps trying and registers once it is; when
/// the tracker goes away and comes back, the server registers again.
#[test]
fn the_server_waits_for_its_tracker_and_registers_again_after_a_restart() {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
    let server = Running::start("dev", |o| o.tracker = Some(format!("127.0.0.1:{port}")));
    std::thread::sleep(Duration::from_millis(2500));
    let first = tracker_once(port).join().unwrap();
    assert!(first[0].starts_with("[5,") && first[0].contains("server:dev"), "{first:?}");
    assert!(first.last().unwrap().contains("\"dev\""), "{first:?}");
    std::thread::sleep(Duration::from_millis(1000));
    let again = tracker_once(port).join().unwrap();
    assert!(again[0].starts_with("[5,") && again.last().unwrap().starts_with("[3,"), "{again:?}");
    drop(server);
}

/// MetaSchedule's `RPCRunner` flow from a 0.2x host: a `.tar` of object files (apache-tvm 0.27's
/// `export_library("x.tar")` of a 64x64 matmul) uploaded and loaded (linked here with the system
/// compiler), inputs filled by `tvm.contrib.random.random_fill_for_measure`, the kernel run and
/// checked against a matmul computed here, then the runner's clean-up: the archive, the linked
/// library and `""`.
#[test]
fn a_tar_of_object_files_is_linked_loaded_and_run() {
    let server = Running::start("", |_| {});
    let mut c = Client::session_as(server.port, "", &FFI);
    let tar = std::fs::read(repo().join("tests/data/tir-0.27/parallel_matmul.tar")).unwrap();
    c.call_global("tvm.rpc.server.upload", &[s("tmp/tvm_tmp_mod.tar"), WireValue::Bytes(tar)]).unwrap();
    let lib = handle(&c.call_global("tvm.rpc.server.load_module", &[s("tmp/tvm_tmp_mod.tar")]).unwrap(), 73);
    let args = [WireValue::Handle(tc::MODULE_HANDLE, lib), s("matmul"), WireValue::Int(tc::BOOL, 1)];
    let matmul = handle(&c.call_global("tvm.rpc.server.ModuleGetFunction", &args).unwrap(), 68);
    let zeros = vec![0u8; 64 * 64 * 4];
    let [a, b, out] = [0, 1, 2].map(|_| remote_tensor(&mut c, &[64, 64], &zeros));
    for t in [&a, &b] {
        c.call_global("tvm.contrib.random.random_fill_for_measure", &[WireValue::Tensor(t.clone())]).unwrap();
    }
    let (x, y) = (f32s(&c.copy_from(&a, 16384).unwrap()), f32s(&c.copy_from(&b, 16384).unwrap()));
    assert!(x.iter().chain(&y).all(|v| (0.5..1.0).contains(v)), "measurement inputs out of range");
    c.call(matmul, &[a, b, out.clone()].map(WireValue::Tensor)).unwrap();
    let got = f32s(&c.copy_from(&out, 16384).unwrap());
    let want: Vec<f32> =
        (0..64 * 64).map(|ij| (0..64).map(|k| x[ij / 64 * 64 + k] * y[k * 64 + ij % 64]).sum()).collect();
    assert_close(&got, &want, 1e-4);
    for name in ["tmp/tvm_tmp_mod.tar", "tmp/tvm_tmp_mod.tar.so", ""] {
        c.call_global("tvm.rpc.server.remove", &[s(name)]).unwrap();
    }
    let e = c.call_global("tvm.rpc.server.load_module", &[s("tmp/tvm_tmp_mod.tar")]).unwrap_err();
    assert!(e.contains("tvm_tmp_mod.tar"), "{e}");
    c.shutdown();
}

/// A stand-in tracker that stays up: answers every message as [`tracker_once`] does and passes
/// each on, with the time it came.
fn tracker_log(port: u16) -> std::sync::mpsc::Receiver<(std::time::Instant, String)> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        assert_eq!(read_i32(&mut s), wire::TRACKER_MAGIC);
        s.write_all(&wire::TRACKER_MAGIC.to_le_bytes()).unwrap();
        loop {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return;
            }
            let mut body = vec![0u8; i32::from_le_bytes(len) as usize];
            s.read_exact(&mut body).unwrap();
            let msg = String::from_utf8(body).unwrap();
            let answer = if msg.starts_with("[7") { "[]" } else { "0" };
            s.write_all(&(answer.len() as i32).to_le_bytes()).unwrap();
            s.write_all(answer.as_bytes()).unwrap();
            if tx.send((std::time::Instant::now(), msg)).is_err() {
                return;
            }
        }
    });
    rx
}

/// The matchkey of a PUT message (`[3, key, [port, matchkey], null]`).
fn put_matchkey(msg: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(msg).ok()?;
    (v[0] == 3).then(|| v[2][1].as_str().map(String::from)).flatten()
}

/// With a tracker, the matchkey is put again as soon as a session ends, and never while one runs
/// (the tracker, which hands a put key to the next host, would send it to a busy server).
#[test]
fn the_tracker_gets_no_matchkey_while_a_session_runs() {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
    let log = tracker_log(port);
    let server = Running::start("dev", |o| o.tracker = Some(format!("127.0.0.1:{port}")));
    let wait = Duration::from_secs(10);
    let key = std::iter::from_fn(|| log.recv_timeout(wait).ok()).find_map(|(_, m)| put_matchkey(&m)).unwrap();
    let mut c = Client::session(server.port, &key);
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(7) {
        assert!(c.global("runtime.RPCTimeEvaluator").is_some());
        std::thread::sleep(Duration::from_millis(200));
    }
    c.shutdown();
    let ended = std::time::Instant::now();
    let (at, msg) = std::iter::from_fn(|| log.recv_timeout(wait).ok()).find(|(_, m)| m.starts_with("[3,")).unwrap();
    assert!(at >= ended, "a matchkey was put during the session: {msg}");
    assert!(at - ended < Duration::from_secs(1), "put {:?} after the session ended", at - ended);
    assert_ne!(put_matchkey(&msg).unwrap(), key, "a fresh matchkey");
}
