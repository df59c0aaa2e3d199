//! Registration with a TVM RPC tracker (`python -m tvm.exec.rpc_tracker`), in its protocol:
//! magic `0x2f271` both ways, then JSON messages framed by an `i32` length. The server sends
//! `[UPDATE_INFO, {"key": "server:<key>", "addr": [null, port]}]` and `[PUT, key, [port,
//! matchkey], null]`; a host asking the tracker for `key` is given the address and the
//! matchkey, and connects with `client:<matchkey>`, so the plain key no longer matches (as with
//! TVM's servers). A background thread keeps the connection alive (`GET_PENDING_MATCHKEYS`
//! every 2 s) and puts a fresh matchkey after each session or when the tracker dropped it while
//! the server is idle (never during a session, as TVM's servers);
//! it reconnects when the tracker goes away (every 2 s, for as long as the server runs).
//!
//! A tracker that is not up yet when the server starts is waited for: the first registration is
//! tried every 2 s for up to [`FIRST_PATIENCE`], each failure logged to stderr, before the server
//! gives up with the last error. Losing and regaining the tracker later is logged once each.

use super::wire::TRACKER_MAGIC;
use crate::runtime::base::error::{Error, Result};
use parking_lot::Mutex;
use serde_json::{json, Value as Json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const PUT: i64 = 3;
const UPDATE_INFO: i64 = 5;
const GET_PENDING_MATCHKEYS: i64 = 7;
const SUCCESS: i64 = 0;
const PING_PERIOD: Duration = Duration::from_secs(2);
/// How long the first registration is retried while the tracker cannot be reached.
pub const FIRST_PATIENCE: Duration = Duration::from_secs(60);

/// A live registration; dropping it stops its thread.
pub struct Registration {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Link {
    addr: String,
    key: String,
    port: u16,
    matchkey: Arc<Mutex<String>>,
}

impl Registration {
    /// Register (an error when the tracker cannot be reached now), then keep registered.
    pub fn start(
        addr: &str,
        key: &str,
        port: u16,
        matchkey: Arc<Mutex<String>>,
        sessions: Arc<AtomicU64>,
        server_stop: Arc<AtomicBool>,
    ) -> Result<Registration> {
        let link = Link { addr: addr.to_string(), key: key.to_string(), port, matchkey };
        let conn = link.register_patiently(&server_stop).map_err(|e| Error::io(format!("tracker {addr}: {e}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tvm-rt-rpc-tracker".into())
            .spawn(move || link.keep(conn, &sessions, &flag, &server_stop))
            .map_err(|e| Error::io(format!("cannot start the tracker thread: {e}")))?;
        Ok(Registration { stop, thread: Some(thread) })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Link {
    /// Connect, say who we are, and put a fresh matchkey.
    fn register(&self) -> std::io::Result<TcpStream> {
        let mut conn = TcpStream::connect(&self.addr)?;
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        conn.write_all(&TRACKER_MAGIC.to_le_bytes())?;
        let mut b = [0u8; 4];
        conn.read_exact(&mut b)?;
        if i32::from_le_bytes(b) != TRACKER_MAGIC {
            return Err(std::io::Error::other("not an RPC tracker"));
        }
        let info = json!([UPDATE_INFO, {"key": format!("server:{}", self.key), "addr": [Json::Null, self.port]}]);
        expect_success(&mut conn, &info)?;
        self.put(&mut conn)?;
        Ok(conn)
    }

    /// [`Link::register`], retried every [`PING_PERIOD`] for up to [`FIRST_PATIENCE`] (or until
    /// the server stops), each failure logged.
    fn register_patiently(&self, stop: &AtomicBool) -> std::io::Result<TcpStream> {
        let start = std::time::Instant::now();
        loop {
            match self.register() {
                Ok(conn) => return Ok(conn),
                Err(e) if start.elapsed() + PING_PERIOD > FIRST_PATIENCE || stop.load(Ordering::Acquire) => {
                    return Err(std::io::Error::other(format!("{e} (tried for {} s)", start.elapsed().as_secs())))
                }
                Err(e) => {
                    eprintln!("tvm-rt rpc-server: tracker {}: {e}; trying again in 2 s", self.addr);
                    std::thread::sleep(PING_PERIOD);
                }
            }
        }
    }

    /// After the tracker connection failed with `e`: register again, every [`PING_PERIOD`]
    /// until it works or the server stops (the loss and the recovery logged once each).
    fn reconnect(&self, conn: &mut TcpStream, e: std::io::Error, stopped: &dyn Fn() -> bool) {
        eprintln!("tvm-rt rpc-server: lost tracker {}: {e}; registering again every 2 s", self.addr);
        while !stopped() {
            match self.register() {
                Ok(c) => {
                    eprintln!("tvm-rt rpc-server: registered with tracker {} again", self.addr);
                    *conn = c;
                    return;
                }
                Err(_) => std::thread::sleep(PING_PERIOD),
            }
        }
    }

    fn put(&self, conn: &mut TcpStream) -> std::io::Result<()> {
        let fresh = format!("{}:{}", self.key, random_suffix());
        expect_success(conn, &json!([PUT, self.key, [self.port, fresh], Json::Null]))?;
        *self.matchkey.lock() = fresh;
        Ok(())
    }

    /// Ping, re-put and reconnect until stopped.
    fn keep(&self, mut conn: TcpStream, sessions: &AtomicU64, stop: &AtomicBool, server_stop: &AtomicBool) {
        let mut seen = sessions.load(Ordering::Acquire);
        let mut missing = 0;
        let mut last = std::time::Instant::now();
        let stopped = || stop.load(Ordering::Acquire) || server_stop.load(Ordering::Acquire);
        while !stopped() {
            std::thread::sleep(Duration::from_millis(100));
            // A session that just ended is announced at once (the next host may be waiting).
            let ended = sessions.load(Ordering::Acquire);
            if last.elapsed() < PING_PERIOD && (ended == seen || ended % 2 == 1) {
                continue;
            }
            last = std::time::Instant::now();
            let step = (|| -> std::io::Result<()> {
                let now = sessions.load(Ordering::Acquire);
                if now % 2 == 1 {
                    // Serving: the tracker handed the matchkey out; putting it again would send
                    // the next host to a busy server.
                    missing = 0;
                    return Ok(());
                }
                let pending = send_recv(&mut conn, &json!([GET_PENDING_MATCHKEYS]))?;
                let key = self.matchkey.lock().clone();
                let listed = pending.as_array().is_some_and(|a| a.iter().any(|k| k.as_str() == Some(&key)));
                missing = if listed { 0 } else { missing + 1 };
                if now != seen || missing >= 3 {
                    seen = now;
                    missing = 0;
                    self.put(&mut conn)?;
                }
                Ok(())
            })();
            if let Err(e) = step {
                self.reconnect(&mut conn, e, &stopped);
            }
        }
    }
}

fn send_recv(conn: &mut TcpStream, msg: &Json) -> std::io::Result<Json> {
    let text = msg.to_string();
    let mut out = (text.len() as i32).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    conn.write_all(&out)?;
    let mut b = [0u8; 4];
    conn.read_exact(&mut b)?;
    let len = i32::from_le_bytes(b);
    if !(0..=(1 << 20)).contains(&len) {
        return Err(std::io::Error::other(format!("tracker reply of {len} bytes")));
    }
    let mut body = vec![0u8; len as usize];
    conn.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| std::io::Error::other(format!("tracker reply: {e}")))
}

fn expect_success(conn: &mut TcpStream, msg: &Json) -> std::io::Result<()> {
    match send_recv(conn, msg)? {
        Json::Number(n) if n.as_i64() == Some(SUCCESS) => Ok(()),
        other => Err(std::io::Error::other(format!("tracker answered {other} to {msg}"))),
    }
}

/// A random decimal suffix for a matchkey (as TVM's `random_key`).
fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    format!("0.{}", h.finish())
}
