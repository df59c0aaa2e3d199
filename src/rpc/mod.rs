//! An RPC server speaking TVM's RPC protocol ("0.8.0") to TVM 0.18 and apache-tvm 0.2x hosts, so
//! a TVM host can upload, run and time models on a machine that has only this runtime:
//! `tvm.rpc.connect(host, port)`, then `remote.upload`, `remote.load_module`, the graph executor
//! or the Relax VM, remote arrays and `time_evaluator`, exactly as against TVM's own servers.
//!
//! Read top-down: [`wire`] (the byte format) < [`codec`] (the two generations' value encodings)
//! < [`link`] (object files linked for loading, measurement inputs) < [`env`](mod@env) (the per-session
//! server functions) <
//! [`session`] (one host's packets, its handles and memory) < [`tracker`] (registration) <
//! [`server`] (listening, handshake, one session at a time). Only `abi` and `runtime` are used:
//! models are reached the way the host reaches them, by module functions and globals.

pub mod codec;
pub mod env;
pub mod link;
pub mod server;
pub mod session;
pub mod tracker;
pub mod wire;
