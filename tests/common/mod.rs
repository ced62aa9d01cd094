//! Test harness shared by the integration tests: starts real redis-server / valkey-server
//! processes with the module loaded, and talks to them with a small RESP2/RESP3 client.
//!
//! Environment:
//! - `SCALEBLOOM_SERVER`: server binary (default `redis-server` from PATH).
//! - `SCALEBLOOM_MODULE`: module to load (default `<crate>/target/release/libscalebloom.so`).
//! - `SCALEBLOOM_REDIS_CLI`: `redis-cli` for `--cluster create` (default from PATH; `cluster.rs`).
#![allow(dead_code)]

pub mod cluster;

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub mod hostile;

// ---------------------------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------------------------

pub fn server_binary() -> String {
    std::env::var("SCALEBLOOM_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

pub fn module_path() -> PathBuf {
    let p = match std::env::var("SCALEBLOOM_MODULE") {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libscalebloom.so"),
    };
    if !p.is_file() {
        panic!(
            "module not found at {}: build it with `cargo build --release` or set SCALEBLOOM_MODULE \
             to the path of a module .so",
            p.display()
        );
    }
    p
}

// ---------------------------------------------------------------------------------------------
// Temporary directory, removed on drop
// ---------------------------------------------------------------------------------------------

pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::SeqCst);
            let path = std::env::temp_dir().join(format!(
                "scalebloom-test-{}-{}-{}-{}",
                tag,
                std::process::id(),
                n,
                nanos
            ));
            if std::fs::create_dir(&path).is_ok() {
                return TempDir { path };
            }
        }
        panic!("could not create a temporary directory");
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// How to start a server.
#[derive(Clone, Default)]
pub struct ServerOpts {
    /// Arguments given after `--loadmodule <so>`.
    pub module_args: Vec<String>,
    /// Extra server arguments (`--name value` pairs, each element one argv entry). They come
    /// after the defaults, so they override them (e.g. `--appendonly yes`).
    pub extra_args: Vec<String>,
    /// Do not load the module at all.
    pub no_module: bool,
    /// Start in cluster mode (see [`ServerOpts::cluster`]).
    pub cluster: bool,
}

impl ServerOpts {
    pub fn new() -> ServerOpts {
        ServerOpts::default()
    }
    pub fn module_args(mut self, args: &[&str]) -> ServerOpts {
        self.module_args = args.iter().map(|s| s.to_string()).collect();
        self
    }
    /// Adds `--name value`.
    pub fn arg(mut self, name: &str, value: &str) -> ServerOpts {
        self.extra_args.push(format!("--{}", name));
        self.extra_args.push(value.to_string());
        self
    }
    pub fn without_module(mut self) -> ServerOpts {
        self.no_module = true;
        self
    }
    /// Cluster mode: `cluster-enabled yes`, a cluster bus port chosen free like the client port,
    /// and a cluster config file of its own in the server's directory.
    pub fn cluster(mut self) -> ServerOpts {
        self.cluster = true;
        self
    }
}

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    /// The cluster bus port, for a server started with [`ServerOpts::cluster`].
    pub bus_port: Option<u16>,
    dir: Arc<TempDir>,
    log: PathBuf,
    stderr: PathBuf,
}

/// `n` distinct ports that were free a moment ago (all are held at once while choosing, so they
/// differ). Another process may still take one before the server binds it: starting retries.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0")).collect();
    listeners.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

const STARTUP_DEADLINE: Duration = Duration::from_secs(60);

impl Server {
    /// A server with the module loaded and no module arguments, in a fresh directory.
    pub fn start() -> Server {
        Server::start_with(ServerOpts::new())
    }

    pub fn start_with(opts: ServerOpts) -> Server {
        Server::start_in(Arc::new(TempDir::new("srv")), opts)
    }

    /// Starts a server in `dir` (which may hold an RDB / AOF from an earlier server).
    pub fn start_in(dir: Arc<TempDir>, opts: ServerOpts) -> Server {
        match Server::try_start_in(dir, opts) {
            Ok(s) => s,
            Err(e) => panic!("server did not start: {}", e),
        }
    }

    /// Starts a server; `Err(log)` when the process exits before it answers PING (for reasons
    /// other than a port clash, which is retried with another port).
    pub fn try_start_in(dir: Arc<TempDir>, opts: ServerOpts) -> Result<Server, String> {
        let module = if opts.no_module { None } else { Some(module_path()) };
        let mut last_err = String::new();
        for attempt in 0..20 {
            // A cluster node also listens on its bus port. Redis' default is port + 10000, which
            // may be taken or above 65535; `cluster-port` (Redis 7.0+, Valkey) names one that was
            // just found free instead, and a clash on either port is retried like any other.
            let ports = free_ports(if opts.cluster { 2 } else { 1 });
            let (port, bus_port) = (ports[0], ports.get(1).copied());
            let log = dir.path().join(format!("server-{}-{}.log", port, attempt));
            let mut cmd = Command::new(server_binary());
            cmd.arg("--port")
                .arg(port.to_string())
                .arg("--bind")
                .arg("127.0.0.1")
                .arg("--save")
                .arg("")
                .arg("--appendonly")
                .arg("no")
                .arg("--dir")
                .arg(dir.path())
                .arg("--logfile")
                .arg(&log)
                .arg("--daemonize")
                .arg("no")
                .arg("--enable-debug-command")
                .arg("local")
                .arg("--enable-module-command")
                .arg("local");
            if let Some(bus) = bus_port {
                cmd.args(["--cluster-enabled", "yes", "--cluster-port", &bus.to_string()]);
                cmd.arg("--cluster-config-file").arg(format!("nodes-{}.conf", port));
            }
            for a in &opts.extra_args {
                cmd.arg(a);
            }
            if let Some(m) = &module {
                cmd.arg("--loadmodule").arg(m);
                for a in &opts.module_args {
                    cmd.arg(a);
                }
            }
            let stderr_path = dir.path().join(format!("stderr-{}-{}.txt", port, attempt));
            let stderr_file = std::fs::File::create(&stderr_path).expect("create stderr file");
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::from(stderr_file));
            let child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => panic!("cannot run server binary {:?}: {}", server_binary(), e),
            };
            let mut server = Server {
                child: Some(child),
                port,
                bus_port,
                dir: dir.clone(),
                log: log.clone(),
                stderr: stderr_path.clone(),
            };
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(exited) => {
                    let text = server.log_text();
                    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
                    server.kill();
                    last_err =
                        format!("{}\n--- log ---\n{}\n--- stderr ---\n{}", exited, text, stderr);
                    if text.contains("Address already in use")
                        || stderr.contains("Address already in use")
                    {
                        continue; // another process took the port: retry
                    }
                    return Err(last_err);
                }
            }
        }
        Err(last_err)
    }

    /// Polls PING until the server answers PONG (not LOADING). Err when the process exited.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    return Err(format!("server exited during startup with {}", status));
                }
            }
            if let Ok(mut conn) = Conn::try_connect(self.port) {
                if let Ok(v) = conn.try_cmd(&["PING"]) {
                    if v == Value::Simple("PONG".into()) {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                return Err("server did not answer PING before the deadline".to_string());
            }
            std::thread::yield_now();
            std::thread::sleep(Duration::from_millis(5)); // polling interval, not synchronisation
        }
    }

    pub fn dir(&self) -> Arc<TempDir> {
        self.dir.clone()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// What the server process wrote to stderr (Rust's panic hook writes there, even for a
    /// panic the module catches).
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Lines of the log and of stderr that report a panic, caught or not.
    pub fn panic_lines(&self) -> Vec<String> {
        let (log, stderr) = (self.log_text(), self.stderr_text());
        log.lines()
            .chain(stderr.lines())
            .filter(|l| l.contains("panicked") || l.contains("panic caught"))
            .map(str::to_string)
            .collect()
    }

    /// A RESP2 connection.
    pub fn conn(&self) -> Conn {
        Conn::connect(self.port)
    }

    /// A RESP3 connection (HELLO 3 already sent).
    pub fn conn3(&self) -> Conn {
        let mut c = Conn::connect(self.port);
        let v = c.cmd(&["HELLO", "3"]);
        assert!(matches!(v, Value::Map(_)), "HELLO 3 did not answer a map: {:?}", v);
        c
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Asserts the server is alive: process running and PING answered.
    pub fn assert_alive(&mut self) {
        assert!(self.is_running(), "server process died; log:\n{}", self.log_tail(60));
        let mut c = Conn::try_connect(self.port)
            .unwrap_or_else(|e| panic!("cannot connect: {}; log:\n{}", e, self.log_tail(60)));
        let v = c
            .try_cmd(&["PING"])
            .unwrap_or_else(|e| panic!("PING failed: {}; log:\n{}", e, self.log_tail(60)));
        assert_eq!(v, Value::Simple("PONG".into()));
    }

    /// The last lines of the server log; for a crash, the start of the bug report instead.
    pub fn log_tail(&self, lines: usize) -> String {
        let t = self.log_text();
        let v: Vec<&str> = t.lines().collect();
        if let Some(i) =
            v.iter().position(|l| l.contains("BUG REPORT START") || l.contains("ASSERTION FAILED"))
        {
            let from = i.saturating_sub(5);
            return v[from..(from + lines).min(v.len())].join("\n");
        }
        v[v.len().saturating_sub(lines)..].join("\n")
    }

    /// SHUTDOWN (with the given modifiers, e.g. `&["NOSAVE"]`) and wait for the process to exit.
    pub fn shutdown(mut self, modifiers: &[&str]) {
        {
            let mut c = self.conn();
            let mut args = vec!["SHUTDOWN"];
            args.extend_from_slice(modifiers);
            // The server closes the connection: the reply is a read error, or an error reply.
            match c.try_cmd(&args) {
                Err(_) => {}
                Ok(v) => panic!("SHUTDOWN answered {:?}", v),
            }
        }
        if let Some(mut c) = self.child.take() {
            let status = c.wait().expect("wait for server");
            assert!(
                status.success(),
                "server exited with {} after SHUTDOWN; log:\n{}",
                status,
                self.log_tail(40)
            );
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let crashed = match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
            None => false,
        };
        if std::thread::panicking() || crashed {
            eprintln!(
                "--- server on port {} ({}) log tail ---\n{}\n---",
                self.port,
                if crashed { "process had exited" } else { "test panicked" },
                self.log_tail(40)
            );
        }
        self.kill();
    }
}

/// Polls `f` until it returns true; panics with `what` after a generous deadline.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        if Instant::now() > deadline {
            panic!("timed out waiting for: {}", what);
        }
        std::thread::sleep(Duration::from_millis(5)); // polling interval
    }
}

/// Polls `f` until it returns `Ok`; after the same deadline as [`wait_until`] panics with
/// `what` and the last `Err` (which says what was still missing).
pub fn poll_until<T>(what: &str, mut f: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => {
                panic!("timed out waiting for: {}; last state: {}", what, e)
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)), // polling interval
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RESP values
// ---------------------------------------------------------------------------------------------

#[derive(Clone, PartialEq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Bool(bool),
    Double(f64),
    Null,
    Verbatim(String, Vec<u8>),
    BigNumber(String),
    Push(Vec<Value>),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Simple(s) => write!(f, "+{}", s),
            Value::Error(s) => write!(f, "-{}", s),
            Value::Int(i) => write!(f, ":{}", i),
            Value::Bulk(None) => write!(f, "$nil"),
            Value::Bulk(Some(b)) => {
                if b.len() > 200 {
                    write!(f, "${:?}...({} bytes)", String::from_utf8_lossy(&b[..200]), b.len())
                } else {
                    write!(f, "${:?}", String::from_utf8_lossy(b))
                }
            }
            Value::Array(None) => write!(f, "*nil"),
            Value::Array(Some(v)) => f.debug_list().entries(v).finish(),
            Value::Map(m) => f.debug_map().entries(m.iter().map(|(k, v)| (k, v))).finish(),
            Value::Set(v) => write!(f, "~{:?}", v),
            Value::Bool(b) => write!(f, "#{}", if *b { "t" } else { "f" }),
            Value::Double(d) => write!(f, ",{}", d),
            Value::Null => write!(f, "_"),
            Value::Verbatim(t, b) => write!(f, "={}:{:?}", t, String::from_utf8_lossy(b)),
            Value::BigNumber(s) => write!(f, "({}", s),
            Value::Push(v) => write!(f, ">{:?}", v),
        }
    }
}

impl Value {
    pub fn is_err(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null | Value::Bulk(None) | Value::Array(None))
    }

    pub fn is_ok(&self) -> bool {
        *self == Value::Simple("OK".into())
    }

    /// The text of an error reply; panics on anything else.
    pub fn err_text(&self) -> &str {
        match self {
            Value::Error(s) => s,
            other => panic!("expected an error reply, got {:?}", other),
        }
    }

    pub fn as_int(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            other => panic!("expected an integer reply, got {:?}", other),
        }
    }

    /// A 1/0 answer of the add/exists family: an integer in RESP2, a boolean in RESP3.
    pub fn as_bit(&self) -> i64 {
        match self {
            Value::Int(i @ (0 | 1)) => *i,
            Value::Bool(b) => *b as i64,
            other => panic!("expected 1/0 or a boolean, got {:?}", other),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Value::Bulk(Some(b)) => b,
            Value::Simple(s) => s.as_bytes(),
            Value::Verbatim(_, b) => b,
            other => panic!("expected a string reply, got {:?}", other),
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("reply is not UTF-8")
    }

    pub fn as_array(&self) -> &[Value] {
        match self {
            Value::Array(Some(v)) | Value::Set(v) | Value::Push(v) => v,
            other => panic!("expected an array reply, got {:?}", other),
        }
    }

    pub fn as_map(&self) -> &[(Value, Value)] {
        match self {
            Value::Map(m) => m,
            other => panic!("expected a map reply, got {:?}", other),
        }
    }

    /// Key/value pairs of a RESP3 map, or of a RESP2 flat array of alternating names and values.
    pub fn pairs(&self) -> Vec<(Value, Value)> {
        match self {
            Value::Map(m) => m.clone(),
            Value::Array(Some(v)) => {
                assert!(v.len() % 2 == 0, "odd-length array cannot be read as pairs: {:?}", self);
                v.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
            }
            other => panic!("expected a map or a flat array, got {:?}", other),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    pub port: u16,
}

/// Safety net only (never a test threshold): a reply that never comes fails the test instead of
/// hanging it forever.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn show_args<A: AsRef<[u8]>>(args: &[A]) -> String {
    let parts: Vec<String> = args
        .iter()
        .take(12)
        .map(|a| {
            let a = a.as_ref();
            if a.len() > 60 {
                format!("<{} bytes>", a.len())
            } else {
                String::from_utf8_lossy(a).into_owned()
            }
        })
        .collect();
    let more =
        if args.len() > 12 { format!(" ...(+{} args)", args.len() - 12) } else { String::new() };
    format!("{}{}", parts.join(" "), more)
}

impl Conn {
    pub fn try_connect(port: u16) -> std::io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        let w = s.try_clone()?;
        Ok(Conn { reader: BufReader::new(s), writer: w, port })
    }

    pub fn connect(port: u16) -> Conn {
        Conn::try_connect(port).unwrap_or_else(|e| panic!("connect to 127.0.0.1:{}: {}", port, e))
    }

    /// Sends a command and reads its reply (pushes are skipped).
    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<Value> {
        self.writer.write_all(&encode(args))?;
        self.read_reply()
    }

    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Value {
        match self.try_cmd(args) {
            Ok(v) => v,
            Err(e) => panic!("command `{}` failed at the connection level: {}", show_args(args), e),
        }
    }

    /// Sends all commands at once, then reads one reply per command.
    pub fn pipeline<A: AsRef<[u8]>>(&mut self, cmds: &[Vec<A>]) -> Vec<Value> {
        let mut buf = Vec::new();
        for c in cmds {
            buf.extend_from_slice(&encode(c));
        }
        self.writer.write_all(&buf).expect("write pipeline");
        (0..cmds.len())
            .map(|_| self.read_reply().unwrap_or_else(|e| panic!("pipeline read: {}", e)))
            .collect()
    }

    // ---- assertions on single commands ----

    pub fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let v = self.cmd(args);
        assert!(v.is_ok(), "`{}` expected +OK, got {:?}", show_args(args), v);
    }

    pub fn int<A: AsRef<[u8]>>(&mut self, args: &[A]) -> i64 {
        match self.cmd(args) {
            Value::Int(i) => i,
            v => panic!("`{}` expected an integer, got {:?}", show_args(args), v),
        }
    }

    /// Runs a command that must fail; returns the error text.
    pub fn err<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        match self.cmd(args) {
            Value::Error(e) => e,
            v => panic!("`{}` expected an error, got {:?}", show_args(args), v),
        }
    }

    /// Runs a command that must fail with exactly `expected`.
    pub fn expect_err<A: AsRef<[u8]>>(&mut self, args: &[A], expected: &str) {
        let v = self.cmd(args);
        assert_eq!(v, Value::Error(expected.to_string()), "`{}`", show_args(args));
    }

    // ---- server introspection ----

    /// A field of `INFO <section>`.
    pub fn info_field(&mut self, section: &str, field: &str) -> Option<String> {
        let v = self.cmd(&["INFO", section]);
        let text = String::from_utf8_lossy(v.as_bytes()).into_owned();
        let prefix = format!("{}:", field);
        text.lines().find_map(|l| l.strip_prefix(&prefix).map(|s| s.trim().to_string()))
    }

    pub fn used_memory(&mut self) -> i64 {
        self.info_field("memory", "used_memory")
            .expect("used_memory in INFO memory")
            .parse()
            .unwrap()
    }

    pub fn exists_key(&mut self, key: &str) -> bool {
        self.int(&["EXISTS", key]) == 1
    }

    pub fn digest(&mut self, key: &str) -> String {
        let v = self.cmd(&["DEBUG", "DIGEST-VALUE", key]);
        let arr = v.as_array();
        assert_eq!(arr.len(), 1, "DEBUG DIGEST-VALUE {} -> {:?}", key, v);
        arr[0].as_str().to_string()
    }

    /// CONFIG GET of one parameter (RESP2 pairs or RESP3 map).
    pub fn config_get(&mut self, name: &str) -> Option<String> {
        let v = self.cmd(&["CONFIG", "GET", name]);
        assert!(!v.is_err(), "CONFIG GET {} -> {:?}", name, v);
        v.pairs().into_iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v.as_str().to_string())
    }

    // ---- bloom helpers ----

    /// BF.DEBUG lines.
    pub fn bf_debug(&mut self, key: &str) -> Vec<String> {
        let v = self.cmd(&["BF.DEBUG", key]);
        v.as_array().iter().map(|x| x.as_str().to_string()).collect()
    }

    /// BF.INFO of a key, read from a RESP2 connection.
    pub fn bf_info(&mut self, key: &str) -> BfInfo {
        let v = self.cmd(&["BF.INFO", key]);
        BfInfo::parse(&v)
    }

    pub fn bf_card(&mut self, key: &str) -> i64 {
        self.int(&["BF.CARD", key])
    }

    /// BF.MADD of many items; returns the raw per-item replies.
    pub fn madd(&mut self, key: &str, items: &[String]) -> Vec<Value> {
        let mut args: Vec<&[u8]> = vec![b"BF.MADD", key.as_bytes()];
        args.extend(items.iter().map(|s| s.as_bytes()));
        let v = self.cmd(&args);
        match v {
            Value::Array(Some(a)) => a,
            other => panic!("BF.MADD {} ({} items) -> {:?}", key, items.len(), other),
        }
    }

    /// BF.MEXISTS of many items as 1/0.
    pub fn mexists(&mut self, key: &str, items: &[String]) -> Vec<i64> {
        let mut args: Vec<&[u8]> = vec![b"BF.MEXISTS", key.as_bytes()];
        args.extend(items.iter().map(|s| s.as_bytes()));
        let v = self.cmd(&args);
        v.as_array().iter().map(|x| x.as_bit()).collect()
    }

    /// Asserts every item is reported present.
    pub fn assert_all_present(&mut self, key: &str, items: &[String]) {
        for chunk in items.chunks(1000) {
            let r = self.mexists(key, chunk);
            for (item, bit) in chunk.iter().zip(r) {
                assert_eq!(bit, 1, "item {:?} of key {:?} is missing (false negative)", item, key);
            }
        }
    }

    /// The SCANDUMP chunks of a key: (iterator, data) pairs, as a client would store them.
    pub fn scandump_all(&mut self, key: &str) -> Vec<(i64, Vec<u8>)> {
        let mut out = Vec::new();
        let mut it: i64 = 0;
        for _ in 0..100_000 {
            let v = self.cmd(&["BF.SCANDUMP", key, &it.to_string()]);
            let a = v.as_array();
            assert_eq!(a.len(), 2, "BF.SCANDUMP {} {} -> {:?}", key, it, v);
            let next = a[0].as_int();
            let data = a[1].as_bytes().to_vec();
            if next == 0 {
                assert!(
                    data.is_empty(),
                    "final SCANDUMP chunk must be empty, got {} bytes",
                    data.len()
                );
                return out;
            }
            out.push((next, data));
            it = next;
        }
        panic!("SCANDUMP of {} never ended", key);
    }

    fn read_line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        let n = self.reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if line.len() < 2 || line[line.len() - 2] != b'\r' {
            return Err(bad(format!("line without CRLF: {:?}", String::from_utf8_lossy(&line))));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn read_exact_crlf(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; n + 2];
        self.reader.read_exact(&mut buf)?;
        if &buf[n..] != b"\r\n" {
            return Err(bad("bulk payload not followed by CRLF".into()));
        }
        buf.truncate(n);
        Ok(buf)
    }

    /// Reads one reply, skipping out-of-band pushes.
    pub fn read_reply(&mut self) -> std::io::Result<Value> {
        loop {
            match self.read_value()? {
                Value::Push(_) => continue,
                v => return Ok(v),
            }
        }
    }

    fn read_value(&mut self) -> std::io::Result<Value> {
        let line = self.read_line()?;
        if line.is_empty() {
            return Err(bad("empty reply line".into()));
        }
        let body = String::from_utf8_lossy(&line[1..]).into_owned();
        let num = |s: &str| -> std::io::Result<i64> {
            s.parse::<i64>().map_err(|_| bad(format!("bad number {:?}", s)))
        };
        Ok(match line[0] {
            b'+' => Value::Simple(body),
            b'-' => Value::Error(body),
            b':' => Value::Int(num(&body)?),
            b'$' => {
                let n = num(&body)?;
                if n < 0 {
                    Value::Bulk(None)
                } else {
                    Value::Bulk(Some(self.read_exact_crlf(n as usize)?))
                }
            }
            b'*' => {
                let n = num(&body)?;
                if n < 0 {
                    Value::Array(None)
                } else {
                    let mut v = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        v.push(self.read_value()?);
                    }
                    Value::Array(Some(v))
                }
            }
            b'%' => {
                let n = num(&body)?;
                let mut m = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let k = self.read_value()?;
                    let v = self.read_value()?;
                    m.push((k, v));
                }
                Value::Map(m)
            }
            b'~' => {
                let n = num(&body)?;
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.read_value()?);
                }
                Value::Set(v)
            }
            b'>' => {
                let n = num(&body)?;
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.read_value()?);
                }
                Value::Push(v)
            }
            b'|' => {
                // attribute: read and discard, then the real value follows
                let n = num(&body)?;
                for _ in 0..(2 * n) {
                    self.read_value()?;
                }
                return self.read_value();
            }
            b'#' => match body.as_str() {
                "t" => Value::Bool(true),
                "f" => Value::Bool(false),
                _ => return Err(bad(format!("bad boolean {:?}", body))),
            },
            b',' => {
                let d = match body.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" | "-nan" => f64::NAN,
                    s => s.parse::<f64>().map_err(|_| bad(format!("bad double {:?}", s)))?,
                };
                Value::Double(d)
            }
            b'_' => Value::Null,
            b'(' => Value::BigNumber(body),
            b'!' => {
                let n = num(&body)?;
                let b = self.read_exact_crlf(n as usize)?;
                Value::Error(String::from_utf8_lossy(&b).into_owned())
            }
            b'=' => {
                let n = num(&body)?;
                let b = self.read_exact_crlf(n as usize)?;
                if b.len() < 4 || b[3] != b':' {
                    return Err(bad("verbatim string without a format prefix".into()));
                }
                Value::Verbatim(String::from_utf8_lossy(&b[..3]).into_owned(), b[4..].to_vec())
            }
            other => return Err(bad(format!("unknown reply type byte {:?}", other as char))),
        })
    }
}

fn bad(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg)
}

// ---------------------------------------------------------------------------------------------
// BF.INFO
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct BfInfo {
    pub capacity: i64,
    pub size: i64,
    pub filters: i64,
    pub items: i64,
    /// None for a nonscaling filter.
    pub expansion: Option<i64>,
}

impl BfInfo {
    pub fn parse(v: &Value) -> BfInfo {
        let pairs = v.pairs();
        let get = |name: &str| -> Value {
            pairs
                .iter()
                .find(|(k, _)| k.as_str() == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("BF.INFO has no {:?}: {:?}", name, v))
        };
        let exp = get("Expansion rate");
        BfInfo {
            capacity: get("Capacity").as_int(),
            size: get("Size").as_int(),
            filters: get("Number of filters").as_int(),
            items: get("Number of items inserted").as_int(),
            expansion: if exp.is_null() { None } else { Some(exp.as_int()) },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Items, data helpers
// ---------------------------------------------------------------------------------------------

/// `n` distinct item names with a prefix.
pub fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{}:{}", prefix, i)).collect()
}

/// Items whose MADD reply was 1 (genuinely added).
pub fn added(items: &[String], replies: &[Value]) -> Vec<String> {
    items
        .iter()
        .zip(replies)
        .filter(|(_, r)| matches!(r, Value::Int(1) | Value::Bool(true)))
        .map(|(i, _)| i.clone())
        .collect()
}

/// Deterministic pseudo random numbers (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Redis' CRC-64 (Jones polynomial, reflected, init 0, no final xor), as used by DUMP payloads.
pub fn crc64(data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95AC_9329_AC4B_C9B5; // bit-reversed 0xad93d23594c935a9
    let mut crc: u64 = 0;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            if crc & 1 == 1 {
                crc = (crc >> 1) ^ POLY_REFLECTED;
            } else {
                crc >>= 1;
            }
        }
    }
    crc
}

/// Replaces the CRC trailer of a DUMP payload so that it matches the (modified) body.
pub fn fix_dump_crc(payload: &mut [u8]) {
    assert!(payload.len() >= 10, "payload too short for a DUMP trailer");
    let n = payload.len() - 8;
    let crc = crc64(&payload[..n]);
    payload[n..].copy_from_slice(&crc.to_le_bytes());
}

/// Whether a payload's CRC trailer matches its body.
pub fn dump_crc_ok(payload: &[u8]) -> bool {
    let n = payload.len() - 8;
    crc64(&payload[..n]).to_le_bytes() == payload[n..]
}

// ---------------------------------------------------------------------------------------------
// DUMP payload of a module value: parse the module's opcode stream so single fields can be patched
// ---------------------------------------------------------------------------------------------

/// One value saved by the module through the RedisModule_Save* API.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Uint(u64),
    Sint(i64),
    Float(f32),
    Double(f64),
    /// A string; `lzf` when stored LZF-compressed (then the bytes are the compressed form).
    Str {
        bytes: Vec<u8>,
        lzf: Option<u64>,
    },
    /// A string stored with an integer encoding.
    IntStr(i64, u8),
}

/// A parsed DUMP payload of a module value.
#[derive(Debug, Clone)]
pub struct ModulePayload {
    pub type_byte: u8,
    pub module_id: Vec<u8>,
    pub fields: Vec<Field>,
    /// The 2-byte RDB version of the trailer.
    pub version: [u8; 2],
}

fn read_len(buf: &[u8], pos: &mut usize) -> Result<(u64, Option<u8>), String> {
    let b = *buf.get(*pos).ok_or("eof in length")?;
    *pos += 1;
    match b >> 6 {
        0 => Ok(((b & 0x3f) as u64, None)),
        1 => {
            let b2 = *buf.get(*pos).ok_or("eof in 14-bit length")?;
            *pos += 1;
            Ok(((((b & 0x3f) as u64) << 8) | b2 as u64, None))
        }
        2 => {
            let n = if b == 0x80 {
                4
            } else if b == 0x81 {
                8
            } else {
                return Err(format!("bad length byte {:#x}", b));
            };
            let s = buf.get(*pos..*pos + n).ok_or("eof in long length")?;
            *pos += n;
            Ok((s.iter().fold(0u64, |a, &x| (a << 8) | x as u64), None))
        }
        _ => Ok((0, Some(b & 0x3f))),
    }
}

/// rdbSaveLen.
pub fn write_len(out: &mut Vec<u8>, v: u64) {
    if v < (1 << 6) {
        out.push(v as u8);
    } else if v < (1 << 14) {
        out.push(((v >> 8) as u8) | 0x40);
        out.push(v as u8);
    } else if v <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

impl ModulePayload {
    pub fn parse(payload: &[u8]) -> Result<ModulePayload, String> {
        if payload.len() < 11 {
            return Err("payload too short".into());
        }
        let body = &payload[..payload.len() - 10];
        let version = [payload[payload.len() - 10], payload[payload.len() - 9]];
        let mut pos = 0;
        let type_byte = body[0];
        if type_byte != 7 {
            return Err(format!("not a RDB_TYPE_MODULE_2 value (type {})", type_byte));
        }
        pos += 1;
        let id_start = pos;
        read_len(body, &mut pos)?;
        let module_id = body[id_start..pos].to_vec();
        let mut fields = Vec::new();
        loop {
            let (op, enc) = read_len(body, &mut pos)?;
            if enc.is_some() {
                return Err("encoded opcode".into());
            }
            match op {
                0 => break,
                1 | 2 => {
                    let (v, e) = read_len(body, &mut pos)?;
                    if e.is_some() {
                        return Err("encoded integer".into());
                    }
                    fields.push(if op == 1 { Field::Sint(v as i64) } else { Field::Uint(v) });
                }
                3 => {
                    let s = body.get(pos..pos + 4).ok_or("eof in float")?;
                    pos += 4;
                    fields.push(Field::Float(f32::from_le_bytes(s.try_into().unwrap())));
                }
                4 => {
                    let s = body.get(pos..pos + 8).ok_or("eof in double")?;
                    pos += 8;
                    fields.push(Field::Double(f64::from_le_bytes(s.try_into().unwrap())));
                }
                5 => {
                    let (len, enc) = read_len(body, &mut pos)?;
                    match enc {
                        None => {
                            let s = body.get(pos..pos + len as usize).ok_or("eof in string")?;
                            pos += len as usize;
                            fields.push(Field::Str { bytes: s.to_vec(), lzf: None });
                        }
                        Some(e @ 0..=2) => {
                            let n = 1usize << e;
                            let s = body.get(pos..pos + n).ok_or("eof in int string")?;
                            pos += n;
                            let mut v: i64 = 0;
                            for (i, &x) in s.iter().enumerate() {
                                v |= (x as i64) << (8 * i);
                            }
                            let shift = 64 - 8 * n as u32;
                            fields.push(Field::IntStr((v << shift) >> shift, e));
                        }
                        Some(3) => {
                            let (clen, _) = read_len(body, &mut pos)?;
                            let (ulen, _) = read_len(body, &mut pos)?;
                            let s =
                                body.get(pos..pos + clen as usize).ok_or("eof in lzf string")?;
                            pos += clen as usize;
                            fields.push(Field::Str { bytes: s.to_vec(), lzf: Some(ulen) });
                        }
                        Some(e) => return Err(format!("bad string encoding {}", e)),
                    }
                }
                other => return Err(format!("unknown module opcode {}", other)),
            }
        }
        if pos != body.len() {
            return Err(format!("{} trailing bytes after EOF opcode", body.len() - pos));
        }
        Ok(ModulePayload { type_byte, module_id, fields, version })
    }

    /// Serialises back into a DUMP payload with a correct CRC.
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = vec![self.type_byte];
        out.extend_from_slice(&self.module_id);
        for f in &self.fields {
            match f {
                Field::Sint(v) => {
                    write_len(&mut out, 1);
                    write_len(&mut out, *v as u64);
                }
                Field::Uint(v) => {
                    write_len(&mut out, 2);
                    write_len(&mut out, *v);
                }
                Field::Float(v) => {
                    write_len(&mut out, 3);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                Field::Double(v) => {
                    write_len(&mut out, 4);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                Field::Str { bytes, lzf: None } => {
                    write_len(&mut out, 5);
                    write_len(&mut out, bytes.len() as u64);
                    out.extend_from_slice(bytes);
                }
                Field::Str { bytes, lzf: Some(ulen) } => {
                    write_len(&mut out, 5);
                    out.push(0xC3);
                    write_len(&mut out, bytes.len() as u64);
                    write_len(&mut out, *ulen);
                    out.extend_from_slice(bytes);
                }
                Field::IntStr(v, e) => {
                    write_len(&mut out, 5);
                    out.push(0xC0 | e);
                    let n = 1usize << e;
                    out.extend_from_slice(&v.to_le_bytes()[..n]);
                }
            }
        }
        write_len(&mut out, 0);
        out.extend_from_slice(&self.version);
        out.extend_from_slice(&[0u8; 8]);
        fix_dump_crc(&mut out);
        out
    }
}
