//! The RPC server's C entry points. `TVMRPCServerLoop` mirrors TVM's `RPCServerLoop(int sockfd)`
//! (what apps/cpp_rpc calls after its own handshake; also registered as TVM's global
//! `rpc.ServerLoop`); `TVMRPCServerRun` is the whole server, as `tvm-rt rpc-server` runs it.

use crate::rpc::server::{serve_socket, Options, Server};
use crate::runtime::base::error::{Error, Result};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::function::registry;
use std::ffi::{c_char, c_int};
use std::net::TcpStream;
use std::os::fd::FromRawFd;

/// Take ownership of socket `fd` and serve one RPC session on it.
///
/// # Safety
/// `fd` must be an open, connected stream socket the caller hands over (it is closed here).
unsafe fn serve_fd(fd: c_int) -> Result<()> {
    if fd < 0 {
        return Err(Error::value(format!("argument `sockfd` is {fd}, not a socket")));
    }
    // SAFETY: the caller hands over an open, connected socket (function contract).
    serve_socket(unsafe { TcpStream::from_raw_fd(fd) })
}

/// Serve one RPC session on `sockfd`, a connected socket whose handshake (magic and keys) the
/// caller did, as TVM's `RPCServerLoop(int sockfd)`; returns when the host shuts the session
/// down or disconnects, and closes the socket. 0 on success, -1 with `TVMGetLastError` set.
/// The host on the other end runs code on this machine (it uploads and loads libraries): hand
/// over only connections from hosts you trust, accepted on a loopback address unless only
/// trusted machines reach this one; the key of the handshake is no password.
///
/// # Safety
/// `sockfd` must be an open, connected stream socket the caller hands over.
#[no_mangle]
pub unsafe extern "C" fn TVMRPCServerLoop(sockfd: c_int) -> c_int {
    ffi_boundary!("TVMRPCServerLoop", {
        // SAFETY: forwarded contract.
        unsafe { serve_fd(sockfd)? };
        Ok(0)
    })
}

/// Run the RPC server until it fails (it serves clients one at a time, forever). `options`:
/// NULL or `"key=value,..."` with `host` (default 127.0.0.1), `port` (9091), `port_end` (the
/// last port tried when `port` is taken; default `port`), `key` (""), `tracker` (`host:port` of
/// a TVM RPC tracker to register with), `workdir` (where session directories are made; default
/// the temporary directory), `session_timeout` (seconds), `max_packet` (bytes, default 1 GiB).
/// Returns -1 with `TVMGetLastError` set when it cannot start (bad option, no free port, no
/// tracker) or stops on an error. A client runs code on this machine (it uploads and loads
/// libraries): on a `host` other than loopback (0.0.0.0: every interface) any machine that
/// reaches it can, and a warning saying so is printed to stderr; a client with another `key` is
/// refused, as by TVM's servers, but the key is no password.
///
/// # Safety
/// `options` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn TVMRPCServerRun(options: *const c_char) -> c_int {
    ffi_boundary!("TVMRPCServerRun", {
        // SAFETY: NULL or NUL-terminated (C contract).
        let text = unsafe { super::options_arg(options)? };
        let server = Server::bind(Options::parse(text.unwrap_or(""))?)?;
        server.warn_if_exposed();
        eprintln!("tvm-rt rpc-server: listening on port {}", server.port());
        server.serve()?;
        Ok(0)
    })
}

/// TVM's global `rpc.ServerLoop(sockfd)`.
pub fn install() {
    let f = PackedFunc::from_typed(|args| {
        let fd = c_int::try_from(args.int(0)?).map_err(|_| Error::value("rpc.ServerLoop: sockfd out of range"))?;
        // SAFETY: TVM's contract for this global: the caller hands over a connected socket.
        unsafe { serve_fd(fd)? };
        Ok(Value::Null)
    });
    registry::register_built_in("rpc.ServerLoop", f);
}
