//! The RPC server: listen on a port, shake hands (magic, `client:<key>` / `server:<key>`), serve
//! one session at a time as TVM's servers do (the next client waits in the listen queue), each
//! session in its own work directory that is removed when it ends; optionally register with a
//! tracker (`python -m tvm.exec.rpc_tracker`) so hosts find the device by key.
//!
//! A session ends when the host shuts it down or disconnects, on a transport error, on a packet
//! over the size limit, or at its timeout; whatever happens to one session, the server accepts
//! the next client.

use super::env::Env;
use super::session::{Session, Step};
use super::wire::RPC_MAGIC;
use crate::runtime::base::error::{Error, Result};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the server runs (`tvm-rt rpc-server` options; the C API's `key=value` options).
#[derive(Clone, Debug)]
pub struct Options {
    pub host: String,
    pub port: u16,
    /// Last port tried when `port` is taken (inclusive; `port` alone when equal).
    pub port_end: u16,
    pub key: String,
    /// `host:port` of a tracker to register with.
    pub tracker: Option<String>,
    /// Where session work directories are made (default: the system temporary directory).
    pub workdir: Option<PathBuf>,
    /// Longest a session may last.
    pub session_timeout: Option<Duration>,
    /// Largest packet accepted, in bytes.
    pub max_packet: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            host: "127.0.0.1".into(),
            port: 9091,
            port_end: 9199,
            key: String::new(),
            tracker: None,
            workdir: None,
            session_timeout: None,
            max_packet: 1 << 30,
        }
    }
}

/// Option names of [`Options::parse`].
pub const OPTION_KEYS: &[&str] =
    &["host", "port", "port_end", "key", "tracker", "workdir", "session_timeout", "max_packet"];

impl Options {
    /// From `"key=value,key=value"` (NULL or empty: the defaults); unknown keys and bad values
    /// are errors naming the key.
    pub fn parse(text: &str) -> Result<Options> {
        let mut o = Options::default();
        let mut port_end = None;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) =
                item.split_once('=').ok_or_else(|| Error::value(format!("option `{item}` is not key=value")))?;
            let num = |what: &str| {
                v.parse::<u64>().map_err(|_| Error::value(format!("option `{what}`: `{v}` is not a number")))
            };
            let port = |what: &str| {
                u16::try_from(num(what)?).map_err(|_| Error::value(format!("option `{what}`: {v} is not a port")))
            };
            match k.trim() {
                "host" => o.host = v.to_string(),
                "port" => o.port = port("port")?,
                "port_end" => port_end = Some(port("port_end")?),
                "key" => o.key = v.to_string(),
                "tracker" => o.tracker = Some(v.to_string()),
                "workdir" => o.workdir = Some(PathBuf::from(v)),
                "session_timeout" => o.session_timeout = Some(Duration::from_secs(num("session_timeout")?)),
                "max_packet" => o.max_packet = num("max_packet")?,
                other => {
                    return Err(Error::value(format!("unknown option `{other}` (known: {})", OPTION_KEYS.join(", "))));
                }
            }
        }
        o.port_end = port_end.unwrap_or(o.port);
        if o.port_end < o.port {
            return Err(Error::value(format!("option `port_end`: {} is below port {}", o.port_end, o.port)));
        }
        Ok(o)
    }
}

/// A bound server, not yet serving.
pub struct Server {
    listener: TcpListener,
    options: Options,
    stop: Arc<AtomicBool>,
    /// Bumped when a session starts and when it ends: odd while one runs.
    sessions: Arc<AtomicU64>,
}

impl Server {
    /// Bind the first free port of `port..=port_end`.
    pub fn bind(options: Options) -> Result<Server> {
        let mut last = None;
        for port in options.port..=options.port_end {
            match TcpListener::bind((options.host.as_str(), port)) {
                Ok(listener) => {
                    return Ok(Server {
                        listener,
                        options,
                        stop: Arc::new(AtomicBool::new(false)),
                        sessions: Arc::new(AtomicU64::new(0)),
                    })
                }
                Err(e) => last = Some(e),
            }
        }
        Err(Error::io(format!(
            "cannot listen on {}:{}..{}: {}",
            options.host,
            options.port,
            options.port_end,
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// Print a warning to stderr when the server listens on more than loopback (its socket's
    /// address is not 127.x or ::1): a client that reaches it uploads a library and runs its
    /// code here.
    pub fn warn_if_exposed(&self) {
        let Ok(addr) = self.listener.local_addr() else { return };
        if !addr.ip().is_loopback() {
            eprintln!(
                "tvm-rt rpc-server: warning: listening on {addr}, beyond this machine: any client that reaches \
                 it can upload a library and run its code here, as this user. The device key is no password \
                 (it travels in clear text and only picks which clients are served): listen on 127.0.0.1, \
                 the default, unless only trusted machines can reach this address"
            );
        }
    }

    /// A flag that, once set, makes [`Server::serve`] return after the current session.
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Accept and serve clients, one at a time, until stopped.
    pub fn serve(&self) -> Result<()> {
        let matchkey = Arc::new(parking_lot::Mutex::new(self.options.key.clone()));
        let _tracker = match &self.options.tracker {
            Some(addr) => Some(super::tracker::Registration::start(
                addr,
                &self.options.key,
                self.port(),
                matchkey.clone(),
                self.sessions.clone(),
                self.stop.clone(),
            )?),
            None => None,
        };
        self.listener.set_nonblocking(true).map_err(|e| Error::io(format!("listen socket: {e}")))?;
        while !self.stop.load(Ordering::Acquire) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let key = matchkey.lock().clone();
                    self.sessions.fetch_add(1, Ordering::AcqRel);
                    self.serve_client(stream, &key);
                    self.sessions.fetch_add(1, Ordering::AcqRel);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("accept: {e}"))),
            }
        }
        Ok(())
    }

    /// One client, from the handshake to the end of its session; never fails the server.
    fn serve_client(&self, mut stream: TcpStream, matchkey: &str) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_nodelay(true);
        let Ok(opts) = handshake(&mut stream, matchkey, &self.options.key) else { return };
        let timeout = opts.or(self.options.session_timeout);
        let Ok(dir) = session_dir(self.options.workdir.as_deref()) else { return };
        let mut session = Session::new(Env::new(dir.clone()));
        run_session(&mut stream, &mut session, self.options.max_packet, timeout.map(|t| Instant::now() + t));
        drop(session);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Exchange magic and keys; the client's session timeout (`-timeout=S` after its key), if any.
/// A wrong magic or key ends the connection (a wrong key with TVM's mismatch code).
fn handshake(stream: &mut TcpStream, matchkey: &str, key: &str) -> std::io::Result<Option<Duration>> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let magic = read_i32(stream)?;
    if magic != RPC_MAGIC {
        return Err(std::io::Error::other("not an RPC client"));
    }
    let len = read_i32(stream)?;
    if !(0..=4096).contains(&len) {
        return Err(std::io::Error::other("key length"));
    }
    let mut client_key = vec![0u8; len as usize];
    stream.read_exact(&mut client_key)?;
    let client_key = String::from_utf8_lossy(&client_key);
    let mut words = client_key.split_whitespace();
    if words.next() != Some(&format!("client:{matchkey}")) {
        stream.write_all(&(RPC_MAGIC + 2).to_le_bytes())?;
        return Err(std::io::Error::other("key mismatch"));
    }
    let timeout = words.find_map(|w| w.strip_prefix("-timeout=")).and_then(|s| s.parse::<f64>().ok());
    let server_key = format!("server:{key}");
    let mut reply = RPC_MAGIC.to_le_bytes().to_vec();
    reply.extend_from_slice(&(server_key.len() as i32).to_le_bytes());
    reply.extend_from_slice(server_key.as_bytes());
    stream.write_all(&reply)?;
    stream.set_read_timeout(None)?;
    Ok(timeout.filter(|t| *t > 0.0).map(Duration::from_secs_f64))
}

fn read_i32(s: &mut impl Read) -> std::io::Result<i32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    Ok(i32::from_le_bytes(b))
}

/// A fresh work directory for one session.
fn session_dir(base: Option<&std::path::Path>) -> std::io::Result<PathBuf> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let base = base.map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let dir = base.join(format!("tvm-rt-rpc-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

const TIMEOUT_MESSAGE: &str = "RPCSessionTimeoutError: the session's time limit was reached";

/// Serve packets from `stream` until the session ends (see the module comment).
pub fn run_session(
    stream: &mut (impl Read + Write + Timeouts),
    session: &mut Session,
    max_packet: u64,
    deadline: Option<Instant>,
) {
    let mut inbox = Inbox::default();
    loop {
        if let Some(d) = deadline {
            match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => {
                    let _ = stream.set_read_deadline(Some(left));
                }
                _ => {
                    let _ = stream.write_all(&session.exception(TIMEOUT_MESSAGE));
                    return;
                }
            }
        }
        let mut len = [0u8; 8];
        if let Err(e) = inbox.read_exact(stream, &mut len) {
            if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut {
                let _ = stream.write_all(&session.exception(TIMEOUT_MESSAGE));
            }
            return;
        }
        let len = u64::from_le_bytes(len);
        if len > max_packet {
            let msg = format!("RPCError: a packet of {len} bytes is over this server's limit of {max_packet} bytes");
            let _ = stream.write_all(&session.exception(&msg));
            return;
        }
        if len == 0 {
            continue;
        }
        let mut body = vec![0u8; len as usize];
        if inbox.read_exact(stream, &mut body).is_err() {
            return;
        }
        match session.handle(&body) {
            Step::Reply(bytes) => {
                if stream.write_all(&bytes).is_err() {
                    return;
                }
            }
            Step::End => return,
        }
    }
}

/// What was read from the host and not used yet: a small call's length and body, and often the
/// next packets, come in one `read`.
struct Inbox {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Default for Inbox {
    fn default() -> Inbox {
        Inbox { buf: vec![0; 64 << 10].into(), start: 0, end: 0 }
    }
}

impl Inbox {
    /// Fill `out` from what is buffered, then from `stream` (a large rest straight into `out`).
    fn read_exact(&mut self, stream: &mut impl Read, out: &mut [u8]) -> std::io::Result<()> {
        let mut done = 0;
        while done < out.len() {
            if self.start == self.end {
                if out.len() - done >= self.buf.len() {
                    return stream.read_exact(&mut out[done..]);
                }
                self.start = 0;
                self.end = match stream.read(&mut self.buf) {
                    Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                    Err(e) => return Err(e),
                };
            }
            let n = (self.end - self.start).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.buf[self.start..self.start + n]);
            self.start += n;
            done += n;
        }
        Ok(())
    }
}

/// Read timeouts of a transport (a TCP stream; tests use others).
pub trait Timeouts {
    fn set_read_deadline(&mut self, left: Option<Duration>) -> std::io::Result<()>;
}

impl Timeouts for TcpStream {
    fn set_read_deadline(&mut self, left: Option<Duration>) -> std::io::Result<()> {
        self.set_read_timeout(left)
    }
}

/// TVM's `RPCServerLoop(sockfd)`: serve one session on a connected socket whose handshake the
/// caller did; the socket is closed at the end. The work directory is a fresh temporary one.
pub fn serve_socket(stream: TcpStream) -> Result<()> {
    let mut stream = stream;
    let dir = session_dir(None).map_err(|e| Error::io(format!("session work directory: {e}")))?;
    let mut session = Session::new(Env::new(dir.clone()));
    run_session(&mut stream, &mut session, Options::default().max_packet, None);
    drop(session);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
