//! Starting real redis-server / valkey-server processes with the module loaded: where the
//! binaries are, a temporary directory per server, [`ServerOpts`], [`Server`] (start on a free
//! port, logs, liveness, shutdown), and polling helpers.
//!
//! Environment:
//! - `SCALEBLOOM_SERVER`: server binary (default `redis-server` from PATH).
//! - `SCALEBLOOM_MODULE`: module to load (default `<crate>/target/release/libscalebloom.so`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::resp::{Conn, Value};

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
    /// A configuration file, given first (the other arguments override its lines).
    pub config_file: Option<PathBuf>,
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
    /// Starts the server with the configuration file `path` (the defaults and `extra_args`
    /// override its lines, as command-line options do).
    pub fn config_file(mut self, path: &Path) -> ServerOpts {
        self.config_file = Some(path.to_path_buf());
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

    /// A server replicating `primary` (default options), returned once its link is up, with a
    /// connection to it.
    pub fn start_replica_of(primary: &Server) -> (Server, Conn) {
        Server::start_replica(primary.port, None, ServerOpts::new())
    }

    /// A server with `opts` replicating the server on `upstream`, started in `dir` if given (it
    /// may hold an RDB or AOF of an earlier server), returned once its link is up, with a
    /// connection to it.
    pub fn start_replica(
        upstream: u16,
        dir: Option<Arc<TempDir>>,
        opts: ServerOpts,
    ) -> (Server, Conn) {
        let opts = opts.arg("replicaof", &format!("127.0.0.1 {upstream}"));
        let r = match dir {
            Some(dir) => Server::start_in(dir, opts),
            None => Server::start_with(opts),
        };
        let mut rc = r.conn();
        rc.wait_link_up();
        (r, rc)
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
            if let Some(conf) = &opts.config_file {
                cmd.arg(conf);
            }
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

    /// The server log as written (Redis escapes binary data it logs, but the log is not
    /// promised to be UTF-8); empty if there is none yet.
    pub fn log_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.log).unwrap_or_default()
    }

    pub fn log_text(&self) -> String {
        String::from_utf8_lossy(&self.log_bytes()).into_owned()
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

    /// SHUTDOWN (with `modifiers`), then a server with `opts` started in the same directory:
    /// a restart on the RDB or AOF this one left.
    pub fn restart(self, modifiers: &[&str], opts: ServerOpts) -> Server {
        let dir = self.dir();
        self.shutdown(modifiers);
        Server::start_in(dir, opts)
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

/// Waits until `replica` has applied everything `primary` has sent so far (replication offsets
/// are the same along a chain of replicas, so `replica` may be a replica's replica).
pub fn wait_caught_up(primary: &mut Conn, replica: &mut Conn) {
    let offset: i64 =
        primary.info_field("replication", "master_repl_offset").unwrap().parse().unwrap();
    wait_until("replica to reach the primary's offset", || {
        replica
            .info_field("replication", "slave_repl_offset")
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|o| o >= offset)
    });
}

impl Conn {
    /// Waits until this server (a replica) reports its link to its primary up.
    pub fn wait_link_up(&mut self) {
        wait_until("replica link up", || {
            self.info_field("replication", "master_link_status").as_deref() == Some("up")
        });
    }

    /// Waits until a replica of this server (a primary) acknowledged everything written so far
    /// (`WAIT 1`).
    pub fn wait_acked(&mut self) {
        wait_until("WAIT 1", || self.int(&["WAIT", "1", "5000"]) >= 1);
    }
}
