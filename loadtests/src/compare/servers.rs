//! The services under test as child processes: `brigade serve --runtime R --service all ...` started
//! pinned on free ports with a fresh data folder (or fresh databases, or a preload), watched until
//! every service answers `/ready`, and stopped cleanly (SIGTERM, then SIGKILL if it does not exit in
//! time).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::pin;

/// The services `brigade serve --service all` starts, in port order.
pub const ALL_SERVICES: [&str; 3] = ["waiter", "tables", "kitchen"];

/// How to start one runtime's services.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The `brigade` binary.
    pub binary: PathBuf,
    /// The runtime to serve with (`axum`, `actix`, ...).
    pub runtime: String,
    /// The store kind (`embedded`, `memory`, `mongo`).
    pub store: String,
    /// The MongoDB URI, for `mongo`.
    pub mongodb_uri: Option<String>,
    /// Worker threads for the runtime.
    pub workers: u32,
    /// The first of three consecutive ports (waiter, tables, kitchen).
    pub port: u16,
    /// A fresh folder for the embedded store's files.
    pub data_dir: PathBuf,
    /// `--preload N`: documents per collection the server fills its empty store with before it
    /// listens (0: none).
    pub preload: u64,
    /// `--database-prefix`: fresh database names for a store shared between runs (MongoDB); the
    /// server drops those databases when it stops.
    pub database_prefix: Option<String>,
    /// Where the process's stdout and stderr go.
    pub log_path: PathBuf,
    /// CPUs to pin the process to, if any.
    pub cpus: Option<Vec<usize>>,
}

impl ServerSpec {
    /// The command line, without the binary.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec![
            "serve".to_owned(),
            "--runtime".to_owned(),
            self.runtime.clone(),
            "--service".to_owned(),
            "all".to_owned(),
            "--listen".to_owned(),
            format!("127.0.0.1:{}", self.port),
            "--store".to_owned(),
            self.store.clone(),
            "--data-dir".to_owned(),
            self.data_dir.display().to_string(),
            "--workers".to_owned(),
            self.workers.to_string(),
        ];
        if let Some(uri) = &self.mongodb_uri {
            args.push("--mongodb-uri".to_owned());
            args.push(uri.clone());
        }
        if self.preload > 0 {
            args.push("--preload".to_owned());
            args.push(self.preload.to_string());
        }
        if let Some(prefix) = &self.database_prefix {
            args.push("--database-prefix".to_owned());
            args.push(prefix.clone());
            args.push("--drop-databases-on-exit".to_owned());
        }
        args
    }
}

/// How a server process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StopOutcome {
    /// It exited on SIGTERM within the grace period.
    Graceful {
        /// Its exit code, if it exited normally.
        code: Option<i32>,
    },
    /// It ignored SIGTERM and was killed.
    Killed,
    /// It had already exited before it was asked to stop.
    AlreadyExited {
        /// Its exit code, if it exited normally.
        code: Option<i32>,
    },
}

impl std::fmt::Display for StopOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopOutcome::Graceful { code: Some(code) } => {
                write!(f, "stopped on SIGTERM, exit {code}")
            }
            StopOutcome::Graceful { code: None } => write!(f, "stopped on SIGTERM"),
            StopOutcome::Killed => write!(f, "killed after ignoring SIGTERM"),
            StopOutcome::AlreadyExited { code: Some(code) } => {
                write!(f, "had exited early, exit {code}")
            }
            StopOutcome::AlreadyExited { code: None } => write!(f, "had exited early (signal)"),
        }
    }
}

/// One runtime's services, running as a child process.
pub struct ServerProcess {
    runtime: String,
    child: Child,
    urls: BTreeMap<String, String>,
    workers_reported: Option<u32>,
    preloaded: Vec<Preloaded>,
    started_in: Duration,
    stopped: bool,
}

impl ServerProcess {
    /// Starts the process, waits for its `listening` lines and for `/ready` on every service.
    pub fn start(spec: &ServerSpec, ready_timeout: Duration) -> anyhow::Result<ServerProcess> {
        let began = Instant::now();
        std::fs::create_dir_all(&spec.data_dir)
            .with_context(|| format!("Failed to create {}", spec.data_dir.display()))?;
        let log = File::create(&spec.log_path)
            .with_context(|| format!("Failed to create {}", spec.log_path.display()))?;
        let mut command = Command::new(&spec.binary);
        command
            .args(spec.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(
                log.try_clone().context("Failed to share the log file")?,
            ));
        if std::env::var_os("RUST_LOG").is_none() {
            // Request logging would cost the server CPU that the comparison is measuring.
            command.env("RUST_LOG", "warn");
        }
        let mut child = pin::spawn_pinned(&mut command, spec.cpus.as_deref())
            .with_context(|| format!("Failed to run {}", spec.binary.display()))?;
        let stdout = child
            .stdout
            .take()
            .context("the server's stdout was not captured")?;
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("brigade-{}-stdout", spec.runtime))
            .spawn(move || copy_stdout(stdout, log, lines_tx))
            .context("Failed to start the log thread")?;
        let mut server = ServerProcess {
            runtime: spec.runtime.clone(),
            child,
            urls: BTreeMap::new(),
            workers_reported: None,
            preloaded: Vec::new(),
            started_in: Duration::ZERO,
            stopped: false,
        };
        let deadline = began + ready_timeout;
        while server.urls.len() < ALL_SERVICES.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines_rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(preloaded) = Preloaded::parse(&line) {
                        server.preloaded.push(preloaded);
                    }
                    if let Some(listening) = Listening::parse(&line) {
                        if let Some(workers) = listening.workers {
                            server.workers_reported = Some(workers);
                        }
                        server.urls.insert(listening.service, listening.url);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = server.child.wait().ok();
                    bail!(
                        "{} exited before listening ({}); see {}",
                        spec.runtime,
                        status.map_or("unknown status".to_owned(), |s| s.to_string()),
                        spec.log_path.display()
                    );
                }
            }
            if let Some(status) = server.child.try_wait()? {
                bail!(
                    "{} exited before listening ({status}); see {}",
                    spec.runtime,
                    spec.log_path.display()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not print its listening lines within {:?}; see {}",
                    spec.runtime,
                    ready_timeout,
                    spec.log_path.display()
                );
            }
        }
        for url in server.urls.values() {
            let left = deadline.saturating_duration_since(Instant::now());
            wait_ready(url, left).with_context(|| {
                format!(
                    "{} is not ready; see {}",
                    spec.runtime,
                    spec.log_path.display()
                )
            })?;
        }
        server.started_in = began.elapsed();
        Ok(server)
    }

    /// The runtime it serves with.
    pub fn runtime(&self) -> &str {
        &self.runtime
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Service name → base URL, as the process printed them.
    pub fn urls(&self) -> &BTreeMap<String, String> {
        &self.urls
    }

    /// The worker count the process said it runs with, if it said.
    pub fn workers_reported(&self) -> Option<u32> {
        self.workers_reported
    }

    /// What the process said it preloaded before listening, one entry per collection.
    pub fn preloaded(&self) -> &[Preloaded] {
        &self.preloaded
    }

    /// How long it took from spawn to every service ready.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM, waits up to `grace`, then SIGKILL.
    pub fn stop(mut self, grace: Duration) -> StopOutcome {
        self.stopped = true;
        if let Ok(Some(status)) = self.child.try_wait() {
            return StopOutcome::AlreadyExited {
                code: status.code(),
            };
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        if kill(pid, Signal::SIGTERM).is_err() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return StopOutcome::Killed;
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return graceful(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        StopOutcome::Killed
    }
}

fn graceful(status: ExitStatus) -> StopOutcome {
    StopOutcome::Graceful {
        code: status.code(),
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // An error or a panic half-way through a comparison must not leave servers behind.
        if !self.stopped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Copies the server's stdout into its log, passing each line on for the `listening` lines.
fn copy_stdout(stdout: impl Read, mut log: File, lines: mpsc::Sender<String>) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let _ = writeln!(log, "{line}");
        // The receiver stops listening once the server is ready; keep copying to the log.
        let _ = lines.send(line);
    }
}

/// A parsed `{"brigade":"listening","service":"waiter","url":"http://127.0.0.1:8081",...}` line
/// (the kit's [`brigade_kit::announce`] contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// The service's name.
    pub service: String,
    /// Its base URL.
    pub url: String,
    /// The worker count, if printed.
    pub workers: Option<u32>,
}

impl Listening {
    /// Parses a stdout line; `None` unless it is a `listening` line with a service and a url.
    pub fn parse(line: &str) -> Option<Listening> {
        match brigade_kit::announce::Announcement::parse(line)? {
            brigade_kit::announce::Announcement::Listening(l) => Some(Listening {
                service: l.service,
                url: l.url.trim_end_matches('/').to_string(),
                workers: u32::try_from(l.workers).ok(),
            }),
            _ => None,
        }
    }
}

/// A parsed `{"brigade":"preloaded","service":"waiter","collection":"waiters","documents":1000,...}`
/// line, printed by `brigade serve --preload` before its `listening` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Preloaded {
    /// The service.
    pub service: String,
    /// The collection filled.
    pub collection: String,
    /// Documents written.
    pub documents: u64,
    /// Documents it held already (then none were written).
    pub existing: u64,
    /// Seconds the fill took.
    pub seconds: f64,
}

impl Preloaded {
    /// Parses a stdout line; `None` unless it is a complete `preloaded` line.
    pub fn parse(line: &str) -> Option<Preloaded> {
        match brigade_kit::announce::Announcement::parse(line)? {
            brigade_kit::announce::Announcement::Preloaded(p) => Some(Preloaded {
                service: p.service,
                collection: p.collection,
                documents: p.documents,
                existing: p.existing,
                seconds: p.seconds,
            }),
            _ => None,
        }
    }
}

/// Polls `GET {url}/ready` until it answers 200 or `timeout` passes.
pub fn wait_ready(url: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match get_status(url, "/ready") {
            Ok(200) => return Ok(()),
            Ok(status) => format!("answered {status}"),
            Err(err) => format!("{err:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{url}/ready did not answer 200 within {timeout:?} (last: {last})");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A minimal blocking `GET` that returns the status code (for readiness, not for load).
fn get_status(base: &str, path: &str) -> anyhow::Result<u16> {
    let authority = base
        .strip_prefix("http://")
        .context("only http:// URLs are supported")?
        .split('/')
        .next()
        .unwrap_or_default();
    let addr: SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(authority)?
        .next()
        .with_context(|| format!("cannot resolve {authority}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )?;
    let mut status_line = String::new();
    BufReader::new(stream).read_line(&mut status_line)?;
    let code = status_line
        .split_whitespace()
        .nth(1)
        .with_context(|| format!("malformed status line {status_line:?}"))?;
    Ok(code.parse()?)
}

/// Starts `spec` on a block of free ports (its `port` replaced), avoiding `taken`; a port found free
/// can be taken before the server binds it, so a few blocks are tried.
pub fn start_on_free_ports(
    spec: &ServerSpec,
    taken: &[u16],
    ready_timeout: Duration,
) -> anyhow::Result<ServerProcess> {
    let mut last_err = None;
    for _ in 0..3 {
        let port = free_port_block(ALL_SERVICES.len() as u16, taken)?;
        let spec = ServerSpec {
            port,
            ..spec.clone()
        };
        match ServerProcess::start(&spec, ready_timeout) {
            Ok(process) => return Ok(process),
            Err(err) => {
                // Only a port taken meanwhile is worth another block; anything else would fail
                // again (and a preload would be paid again).
                let log = std::fs::read_to_string(&spec.log_path).unwrap_or_default();
                if !log.contains("Failed to bind") {
                    return Err(err);
                }
                last_err = Some(err);
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("the server did not start")))
}

/// Finds `count` consecutive free TCP ports on 127.0.0.1, avoiding those in `taken`.
///
/// The ports are only free at the time of asking; the caller retries on another block if the
/// server then fails to bind.
pub fn free_port_block(count: u16, taken: &[u16]) -> anyhow::Result<u16> {
    for _ in 0..200 {
        let first = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let Some(last) = first.checked_add(count - 1) else {
            continue;
        };
        if (first..=last).any(|p| taken.contains(&p)) {
            continue;
        }
        let held: Vec<TcpListener> = (first..=last)
            .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
            .collect();
        if held.len() == count as usize {
            return Ok(first);
        }
    }
    bail!("could not find {count} consecutive free ports on 127.0.0.1")
}

/// The runtimes compiled into `binary`, each with the line `brigade runtimes` describes it by.
///
/// A runtime's line starts with its name; other lines (such as `stores: ...`) are skipped.
pub fn describe_runtimes(binary: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let output = Command::new(binary)
        .arg("runtimes")
        .output()
        .with_context(|| format!("Failed to run {} runtimes", binary.display()))?;
    if !output.status.success() {
        bail!(
            "{} runtimes failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let name = line.split_whitespace().next()?;
            let is_name = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            is_name.then(|| (name.to_owned(), line.trim().to_owned()))
        })
        .collect())
}

/// The names of the runtimes compiled into `binary`.
pub fn list_runtimes(binary: &Path) -> anyhow::Result<Vec<String>> {
    Ok(describe_runtimes(binary)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The binary's own `--version` line, if it prints one.
pub fn binary_version(binary: &Path) -> Option<String> {
    let output = Command::new(binary).arg("--version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_are_parsed_and_others_ignored() {
        let line = r#"{"brigade":"listening","service":"tables","url":"http://127.0.0.1:8082","runtime":"axum","store":"embedded","workers":2}"#;
        let parsed = Listening::parse(line).unwrap();
        assert_eq!(parsed.service, "tables");
        assert_eq!(parsed.url, "http://127.0.0.1:8082");
        assert_eq!(parsed.workers, Some(2));
        assert_eq!(Listening::parse("2024-01-01 INFO listening on 8082"), None);
        assert_eq!(
            Listening::parse(r#"{"brigade":"listening","service":"waiter"}"#),
            None
        );
        let preloaded = Preloaded::parse(
            r#"{"brigade":"preloaded","service":"kitchen","collection":"orders","documents":200,"existing":0,"seconds":0.125}"#,
        )
        .unwrap();
        assert_eq!(
            (
                preloaded.collection.as_str(),
                preloaded.documents,
                preloaded.seconds
            ),
            ("orders", 200, 0.125)
        );
        assert_eq!(Preloaded::parse(line), None);
    }

    #[test]
    fn free_port_blocks_are_bindable_and_avoid_taken_ports() {
        let first = free_port_block(3, &[]).unwrap();
        for port in first..first + 3 {
            TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
        let other = free_port_block(3, &[first, first + 1, first + 2]).unwrap();
        assert!(!(first..first + 3).contains(&other));
    }

    #[test]
    fn the_serve_command_line_carries_every_setting() {
        let spec = ServerSpec {
            binary: "brigade".into(),
            runtime: "warp".into(),
            store: "embedded".into(),
            mongodb_uri: None,
            workers: 1,
            port: 9000,
            data_dir: "/tmp/x".into(),
            preload: 0,
            database_prefix: None,
            log_path: "/tmp/x.log".into(),
            cpus: None,
        };
        assert_eq!(
            spec.args().join(" "),
            "serve --runtime warp --service all --listen 127.0.0.1:9000 --store embedded \
             --data-dir /tmp/x --workers 1"
        );
        let fresh = ServerSpec {
            store: "mongo".into(),
            mongodb_uri: Some("mongodb://h".into()),
            preload: 500,
            database_prefix: Some("run3_".into()),
            ..spec
        };
        assert!(
            fresh.args().join(" ").ends_with(
                "--mongodb-uri mongodb://h --preload 500 --database-prefix run3_ \
                 --drop-databases-on-exit"
            ),
            "{:?}",
            fresh.args()
        );
    }
}
