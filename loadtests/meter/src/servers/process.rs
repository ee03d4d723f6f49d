//! A server as a child process: started from its [`ServerSpec`], pinned, its stdout copied to its
//! log and read for its announcements until it has said what it serves, then `/ready` polled on
//! every service it announced; stopped cleanly (SIGTERM, then SIGKILL if it does not exit in time).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use brigade_records::protocol::{Protocol, TlsClient};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::announce::{Announced, Listening, Preloaded};
use super::launch::ServerSpec;
use crate::pin;
use brigade_records::stop::StopOutcome;

/// How long to wait for more announcements once a server whose services were not known before it
/// started answers `/ready` on the first: it printed them all before serving, so they are already
/// in the pipe and only the reading thread's turn is awaited.
const SETTLE: Duration = Duration::from_millis(300);

/// One runtime's services, running as a child process.
pub struct ServerProcess {
    runtime: String,
    child: Child,
    announced: Announced,
    workers_reported: Option<u32>,
    limits_reported: Option<String>,
    preloaded: Vec<Preloaded>,
    started_in: Duration,
    stopped: bool,
}

impl ServerProcess {
    /// Starts the process, reads its announcements until it has said what it serves (every
    /// service of `spec.services` when known; else all it printed before answering), and waits for
    /// `/ready` on every announced service.
    pub fn start(spec: &ServerSpec, ready_timeout: Duration) -> anyhow::Result<ServerProcess> {
        let began = Instant::now();
        let (mut server, lines_rx) = ServerProcess::spawn(spec)?;
        let deadline = began + ready_timeout;
        server.await_announcements(spec, &lines_rx, deadline, ready_timeout)?;
        server.check_announcements(spec, &lines_rx, deadline)?;
        let log_path = spec.log_path.display();
        for url in server.announced.urls().values() {
            let left = deadline.saturating_duration_since(Instant::now());
            wait_ready(url, spec.protocol, left)
                .with_context(|| format!("{} is not ready; see {log_path}", spec.runtime))?;
        }
        server.started_in = began.elapsed();
        Ok(server)
    }

    /// Runs the server pinned to its CPUs with its stderr to the log, and a thread that copies its
    /// stdout to the log and hands each line to the receiver answered.
    fn spawn(spec: &ServerSpec) -> anyhow::Result<(ServerProcess, mpsc::Receiver<String>)> {
        std::fs::create_dir_all(&spec.data_dir)
            .with_context(|| format!("Failed to create {}", spec.data_dir.display()))?;
        let log = File::create(&spec.log_path)
            .with_context(|| format!("Failed to create {}", spec.log_path.display()))?;
        let (program, args) = spec.command();
        let mut command = Command::new(&program);
        command
            .args(&args)
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
            .with_context(|| format!("Failed to run {}", program.display()))?;
        let stdout = child
            .stdout
            .take()
            .context("the server's stdout was not captured")?;
        let (lines_tx, lines_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("brigade-{}-stdout", spec.runtime))
            .spawn(move || copy_stdout(stdout, log, lines_tx))
            .context("Failed to start the log thread")?;
        let server = ServerProcess {
            runtime: spec.runtime.clone(),
            child,
            announced: Announced::default(),
            workers_reported: None,
            limits_reported: None,
            preloaded: Vec::new(),
            started_in: Duration::ZERO,
            stopped: false,
        };
        Ok((server, lines_rx))
    }

    /// Reads stdout lines until the server has announced as many services as `spec.services`
    /// lists (at least one), failing when it exits first or `deadline` passes.
    fn await_announcements(
        &mut self,
        spec: &ServerSpec,
        lines_rx: &mpsc::Receiver<String>,
        deadline: Instant,
        ready_timeout: Duration,
    ) -> anyhow::Result<()> {
        let log_path = spec.log_path.display();
        let wanted = spec.services.as_ref().map_or(1, Vec::len).max(1);
        while self.announced.len() < wanted {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines_rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => self.read(&line, spec)?,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    bail!(
                        "{} exited before announcing its services ({}){}; see {log_path}",
                        spec.runtime,
                        status.map_or("unknown status".to_owned(), |s| s.to_string()),
                        last_words(&spec.log_path),
                    );
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited before announcing its services ({status}){}; see {log_path}",
                    spec.runtime,
                    last_words(&spec.log_path),
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not announce its services within {ready_timeout:?} (a JSON \
                     `{{\"brigade\":\"listening\",...}}` line per service on stdout); see {log_path}",
                    spec.runtime,
                );
            }
        }
        Ok(())
    }

    /// With `spec.services` known, checks every one was announced; without, waits for the first
    /// service to be ready and collects the announcements printed before it.
    fn check_announcements(
        &mut self,
        spec: &ServerSpec,
        lines_rx: &mpsc::Receiver<String>,
        deadline: Instant,
    ) -> anyhow::Result<()> {
        let log_path = spec.log_path.display();
        match &spec.services {
            Some(expected) => {
                let names = self.announced.names();
                if expected.iter().any(|s| !names.contains(s)) {
                    bail!(
                        "{} announced {} where its `runtimes --json` lists {}; see {log_path}",
                        spec.runtime,
                        names.join(", "),
                        expected.join(", ")
                    );
                }
            }
            None => {
                // Every announcement comes before the first answer: once the first service is
                // ready, the rest are written; collect them as they are read.
                let first = self.announced.first_url().unwrap_or_default().to_owned();
                let left = deadline.saturating_duration_since(Instant::now());
                wait_ready(&first, spec.protocol, left)
                    .with_context(|| format!("{} is not ready; see {log_path}", spec.runtime))?;
                // A server that keeps printing other lines does not hold the start up for long.
                let settled_by = Instant::now() + SETTLE * 10;
                while let Ok(line) = lines_rx.recv_timeout(SETTLE) {
                    self.read(&line, spec)?;
                    if Instant::now() >= settled_by {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes in one stdout line: an announcement is recorded, anything else ignored; a server that
    /// announces another runtime than asked is refused.
    fn read(&mut self, line: &str, spec: &ServerSpec) -> anyhow::Result<()> {
        if let Some(preloaded) = Preloaded::parse(line) {
            self.preloaded.push(preloaded);
        }
        if let Some(listening) = Listening::parse(line) {
            if let Some(runtime) = listening.runtime.as_deref().filter(|r| *r != spec.runtime) {
                bail!(
                    "asked for runtime {} but the server announced {runtime} for {} (does the \
                     command pass {{runtime}} on?): {}",
                    spec.runtime,
                    listening.service,
                    spec.command_line()
                );
            }
            if let Some(workers) = listening.workers {
                self.workers_reported = Some(workers);
            }
            if let Some(limits) = listening.limits {
                self.limits_reported = Some(limits);
            }
            self.announced.insert(listening.service, listening.url);
        }
        Ok(())
    }

    /// The runtime it serves with.
    pub fn runtime(&self) -> &str {
        &self.runtime
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The services it announced, in order, with their URLs.
    pub fn announced(&self) -> &Announced {
        &self.announced
    }

    /// Service name → base URL, as the process announced them.
    pub fn urls(&self) -> BTreeMap<String, String> {
        self.announced.urls()
    }

    /// The worker count the process said it runs with, if it said.
    pub fn workers_reported(&self) -> Option<u32> {
        self.workers_reported
    }

    /// The server limits the process said it runs under, if it said.
    pub fn limits_reported(&self) -> Option<&str> {
        self.limits_reported.as_deref()
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

/// The last line a server that exited wrote to its log, as `: LINE` (the reason it refused to
/// start, such as a protocol its runtime cannot serve), or nothing.
fn last_words(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(": {}", l.chars().take(300).collect::<String>()))
        .unwrap_or_default()
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
/// Polls `GET {url}/ready` over `protocol` until it answers 200 or `timeout` passes.
pub fn wait_ready(url: &str, protocol: Protocol, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match get_status(url, "/ready", protocol) {
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

/// A minimal blocking `GET` that returns the status code (for readiness, not for load): over
/// plaintext HTTP/1.1 the hand-written [`http_get`]; over h2c or TLS the generator's own client
/// ([`brigade_clients::fetch`]; an h2c-only server answers no HTTP/1.1), trusting the
/// self-signed certificate compare's servers make for themselves.
fn get_status(base: &str, path: &str, protocol: Protocol) -> anyhow::Result<u16> {
    if protocol == Protocol::H1 {
        return Ok(http_get(base, path)?.0);
    }
    let tls = TlsClient {
        insecure: true,
        ..TlsClient::default()
    };
    Ok(brigade_clients::fetch::get(base, path, protocol, &tls, HTTP_GET_DEADLINE)?.0)
}

/// The whole of one [`http_get`], connection to last byte: a server that trickles its answer is cut
/// off here, not waited on.
pub const HTTP_GET_DEADLINE: Duration = Duration::from_secs(5);

/// The most one [`http_get`] reads, head and body together (a `/metrics` page is tens of KiB).
pub const HTTP_GET_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// A minimal blocking `GET {base}{path}` (`Connection: close`): the status code and the body (for
/// readiness, `/health` and `/metrics`, not for load), within [`HTTP_GET_DEADLINE`] and
/// [`HTTP_GET_MAX_BYTES`] whatever the server sends.
pub(crate) fn http_get(base: &str, path: &str) -> anyhow::Result<(u16, String)> {
    http_get_within(base, path, HTTP_GET_DEADLINE, HTTP_GET_MAX_BYTES)
}

/// A reader that fails once its deadline passes or its byte allowance is spent: every read waits
/// at most the time left, and reads at most the bytes left.
struct Bounded {
    stream: TcpStream,
    deadline: Instant,
    left: u64,
    max: u64,
}

/// The error of a read past the deadline.
fn past_deadline() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the answer did not end before the deadline",
    )
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let now = Instant::now();
        if now >= self.deadline {
            return Err(past_deadline());
        }
        if self.left == 0 {
            return Err(std::io::Error::other(format!(
                "the answer is longer than {} bytes",
                self.max
            )));
        }
        self.stream.set_read_timeout(Some(self.deadline - now))?;
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        // A read timed out by the socket says WouldBlock on Linux: it is the deadline.
        let n = self
            .stream
            .read(&mut buf[..want])
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => past_deadline(),
                _ => e,
            })?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// [`http_get`] with its deadline and byte cap given.
fn http_get_within(
    base: &str,
    path: &str,
    within: Duration,
    max_bytes: u64,
) -> anyhow::Result<(u16, String)> {
    let deadline = Instant::now() + within;
    let authority = base
        .strip_prefix("http://")
        .context("only http:// URLs are supported")?
        .split('/')
        .next()
        .unwrap_or_default();
    let addr: SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(authority)?
        .next()
        .with_context(|| format!("cannot resolve {authority}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, within.min(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(within))?;
    // One write: the head goes out in one segment.
    let head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    let mut reader = BufReader::new(Bounded {
        stream,
        deadline,
        left: max_bytes,
        max: max_bytes,
    });
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let code = status_line
        .split_whitespace()
        .nth(1)
        .with_context(|| format!("malformed status line {status_line:?}"))?;
    let code: u16 = code.parse()?;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        let lower = header.to_ascii_lowercase();
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = u64::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("malformed chunk size {size:?}"))?;
            if size == 0 {
                break;
            }
            // A chunk larger than what is left to read cannot be honest: refuse it before
            // allocating for it.
            let end = (body.len() as u64)
                .checked_add(size)
                .filter(|&end| end <= max_bytes)
                .with_context(|| {
                    format!("a chunk of {size} bytes passes the {max_bytes}-byte cap")
                })?;
            let start = body.len();
            body.resize(end as usize, 0);
            reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf)?;
        }
    } else {
        // Connection: close: the body ends where the connection does.
        reader.read_to_end(&mut body)?;
    }
    Ok((code, String::from_utf8_lossy(&body).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-connection server that reads the request head and answers with `answer`, a byte at a
    /// time every `pause` when `pause` is given; returns its base URL.
    fn serve_once(answer: Vec<u8>, pause: Option<Duration>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            // The whole head, so that closing leaves nothing unread (which would reset).
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            match pause {
                None => {
                    let _ = socket.write_all(&answer);
                }
                Some(pause) => {
                    for byte in answer {
                        if socket.write_all(&[byte]).is_err() {
                            return;
                        }
                        std::thread::sleep(pause);
                    }
                }
            }
        });
        base
    }

    #[test]
    fn a_server_that_refused_to_start_is_quoted_by_its_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        std::fs::write(
            &log,
            "starting\nError: ntex cannot serve --protocol auto\n\n",
        )
        .unwrap();
        assert_eq!(
            last_words(&log),
            ": Error: ntex cannot serve --protocol auto"
        );
        assert_eq!(last_words(&dir.path().join("none.log")), "");
    }

    #[test]
    fn plain_and_chunked_answers_are_read_whole() {
        let plain = serve_once(b"HTTP/1.1 200 OK\r\n\r\nready".to_vec(), None);
        assert_eq!(
            http_get(&plain, "/ready").unwrap(),
            (200, "ready".to_owned())
        );
        let chunked = serve_once(
            b"HTTP/1.1 503 No\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nnot\r\n6\r\n ready\r\n0\r\n\r\n"
                .to_vec(),
            None,
        );
        assert_eq!(
            http_get(&chunked, "/ready").unwrap(),
            (503, "not ready".to_owned())
        );
    }

    #[test]
    fn a_chunk_size_past_the_cap_is_refused_before_anything_is_allocated() {
        let base = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nx".to_vec(),
            None,
        );
        let err = format!("{:#}", http_get(&base, "/metrics").unwrap_err());
        assert!(err.contains("passes the"), "{err}");
    }

    #[test]
    fn an_answer_longer_than_the_cap_is_cut_off() {
        let mut answer = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        answer.extend(std::iter::repeat_n(b'x', 4096));
        let base = serve_once(answer, None);
        let err = format!(
            "{:#}",
            http_get_within(&base, "/metrics", HTTP_GET_DEADLINE, 1024).unwrap_err()
        );
        assert!(err.contains("longer than 1024 bytes"), "{err}");
    }

    #[test]
    fn a_server_that_trickles_its_answer_is_cut_off_at_the_deadline() {
        let mut answer = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        answer.extend(std::iter::repeat_n(b'x', 10_000));
        let base = serve_once(answer, Some(Duration::from_millis(20)));
        let err = http_get_within(
            &base,
            "/ready",
            Duration::from_millis(300),
            HTTP_GET_MAX_BYTES,
        )
        .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("deadline") || err.contains("timed out"),
            "{err}"
        );
    }
}
