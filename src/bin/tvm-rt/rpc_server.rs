//! `tvm-rt rpc-server`: TVM's RPC server protocol ("0.8.0") over this runtime, so a TVM host
//! (`tvm.rpc.connect`, a tuning session through a tracker) can upload, run and time models here.

use crate::fail::Failure;
use std::path::PathBuf;
use tvm_runtime::rpc::server::{Options, Server};

/// Serve TVM hosts over RPC: one session at a time, each in its own work directory
#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on: 127.0.0.1 is this machine only; 0.0.0.0 (every interface) or
    /// another address lets other machines connect, and any that does runs code here (it uploads
    /// and loads libraries), so a warning is printed
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (the first free one of --port..=--port-end)
    #[arg(long, default_value_t = 9091)]
    port: u16,
    /// Last port to try when --port is taken (default: --port only)
    #[arg(long)]
    port_end: Option<u16>,
    /// The device's key, as TVM's: hosts connect with it (key=K), or find the server through
    /// --tracker by it; a client with another key is refused, but the key is no password
    #[arg(long, default_value = "")]
    key: String,
    /// A TVM RPC tracker (host:port) to register with
    #[arg(long)]
    tracker: Option<String>,
    /// Where each session's work directory is made (default: the temporary directory)
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// End a session after this many seconds
    #[arg(long)]
    session_timeout: Option<u64>,
    /// Largest packet accepted, in bytes (uploads come in one packet)
    #[arg(long, default_value_t = 1 << 30)]
    max_packet: u64,
}

pub fn main(a: Args) -> Result<(), Failure> {
    let port_end = a.port_end.unwrap_or(a.port);
    if port_end < a.port {
        return Err(Failure::usage(format!("--port-end {port_end} is below --port {}", a.port)));
    }
    let options = Options {
        host: a.host,
        port: a.port,
        port_end,
        key: a.key,
        tracker: a.tracker,
        workdir: a.workdir,
        session_timeout: a.session_timeout.map(std::time::Duration::from_secs),
        max_packet: a.max_packet,
    };
    let server = Server::bind(options.clone()).map_err(|e| Failure::usage(e.message()))?;
    // The warning comes first: once the line scripts wait for is out (the port may differ from
    // --port), everything before it is.
    server.warn_if_exposed();
    println!("tvm-rt rpc-server: listening on {}:{} key={:?}", options.host, server.port(), options.key);
    use std::io::Write;
    let _ = std::io::stdout().flush();
    server.serve().map_err(|e| Failure::runtime(e.message()))
}
