//! The RPC server's session (`rpc::session::Session::handle`) on an arbitrary stream of packets:
//! the input is split into packets by its `u64` length prefixes (bounded by the bytes left), and
//! each is answered in order by one session, as the server's transport does.
//!
//! Global functions a host may look up are limited here to the session's own file functions:
//! the rest of the registry is reachable by real hosts, and some of it (`rpc.ServerLoop` on an
//! arbitrary socket number, loading arbitrary files as libraries) would act on this process.
//!
//! Properties checked: no panic, crash, out-of-bounds access (ASan) or unbounded allocation; every
//! reply is one well-formed packet (its length prefix matches) of code Return, Exception or CopyAck.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tvm_runtime::rpc::codec::{FFI, TVM018};
use tvm_runtime::rpc::env::Env;
use tvm_runtime::rpc::session::{Session, Step};
use tvm_runtime::rpc::wire::{code, Codec, Reader, WireValue};

const ALLOWED: &[&[u8]] = &[
    b"tvm.rpc.server.workpath",
    b"tvm.rpc.server.upload",
    b"tvm.rpc.server.download",
    b"tvm.rpc.server.remove",
    b"tvm.rpc.server.ModuleGetFunction",
];

/// Whether `body` asks for a global outside [`ALLOWED`], read as either host generation.
fn unsafe_lookup(body: &[u8]) -> bool {
    let mut r = Reader::new(body);
    if r.i32("code") != Ok(code::GET_GLOBAL_FUNC) {
        return false;
    }
    let args = &body[4..];
    [&TVM018 as &dyn Codec, &FFI].iter().any(|c| match Reader::new(args).packed_seq(*c) {
        Ok(v) => match v.as_slice() {
            [WireValue::Str(name)] => !ALLOWED.contains(&name.as_slice()),
            _ => false,
        },
        Err(_) => false,
    })
}

fuzz_target!(|data: &[u8]| {
    tvm_runtime::init();
    let dir = std::env::temp_dir().join(format!("rpc-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    // Buffers the host allocates are limited to 64 MiB (below libFuzzer's malloc limit).
    let mut session = Session::with_memory_limit(Env::new(dir.clone()), 64 << 20);
    let mut rest = data;
    while rest.len() >= 8 {
        let len = u64::from_le_bytes(rest[..8].try_into().unwrap()).min((rest.len() - 8) as u64) as usize;
        let body = &rest[8..8 + len];
        rest = &rest[8 + len..];
        if unsafe_lookup(body) {
            continue;
        }
        match session.handle(body) {
            Step::End => break,
            Step::Reply(bytes) => {
                assert!(bytes.len() >= 12, "a reply shorter than a packet header");
                let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
                assert_eq!(n as usize, bytes.len() - 8, "a reply's length prefix is wrong");
                let c = i32::from_le_bytes(bytes[8..12].try_into().unwrap());
                assert!(matches!(c, code::RETURN | code::EXCEPTION | code::COPY_ACK), "reply code {c}");
            }
        }
    }
    drop(session);
    let _ = std::fs::remove_dir_all(&dir);
});
