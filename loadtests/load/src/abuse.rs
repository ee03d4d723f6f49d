//! Abusive clients, for checking that a server's limits close what they should: slowloris
//! connections (a request head sent a byte at a time, never finished), idle keep-alive connections
//! (one request, then silence), bodies that never finish, and a flood of connections past the
//! server's connection limit. Each connection is watched until the server closes it or the watch
//! ends; the [`AbuseOutcome`] counts what happened (refused, answered with which status, closed and
//! how soon, still open), so a test asserts counts and closings rather than timings.
//!
//! Every connection is a raw TCP socket on the given address (a test keeps it on 127.0.0.1); many
//! at once need open files: [`raise_open_file_limit`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the abusive connections do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Abuse {
    /// Send a request head a byte at a time, never finishing it.
    Slowloris,
    /// Send one complete request, read the answer, then stay silent on the kept-alive connection.
    Idle,
    /// Send a request head announcing a body, a tenth of the body, then nothing.
    UnfinishedBody,
    /// Connect and send nothing: the connections past the server's limit.
    Flood,
}

impl Abuse {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Abuse::Slowloris => "slowloris",
            Abuse::Idle => "idle keep-alive",
            Abuse::UnfinishedBody => "unfinished body",
            Abuse::Flood => "connection flood",
        }
    }
}

/// A batch of abusive connections.
#[derive(Debug, Clone)]
pub struct AbuseConfig {
    /// What each connection does.
    pub abuse: Abuse,
    /// How many connections.
    pub connections: usize,
    /// The server's address.
    pub addr: SocketAddr,
    /// The path asked for (`/health`); [`Abuse::UnfinishedBody`] posts to it.
    pub path: String,
    /// [`Abuse::Slowloris`]: the pause between two bytes.
    pub trickle: Duration,
    /// How long each connection is watched before it is counted as still open.
    pub watch: Duration,
    /// How long a connect may take before it is counted as refused.
    pub connect_timeout: Duration,
}

impl AbuseConfig {
    /// `connections` connections doing `abuse` on `addr`, asking for `/health`, a byte a second,
    /// watched for 30 s.
    pub fn new(abuse: Abuse, connections: usize, addr: SocketAddr) -> AbuseConfig {
        AbuseConfig {
            abuse,
            connections,
            addr,
            path: "/health".to_owned(),
            trickle: Duration::from_secs(1),
            watch: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// What a batch of abusive connections met.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AbuseOutcome {
    /// Connections attempted.
    pub connections: u64,
    /// Connects that failed or timed out.
    pub refused: u64,
    /// Answers read, by status (a connection that got none is not counted here).
    pub answered: BTreeMap<u16, u64>,
    /// Connections the server closed (or reset) within the watch.
    pub closed: u64,
    /// Connections still open when the watch ended.
    pub still_open: u64,
    /// The longest a closed connection lasted, seconds from its connect.
    pub close_max_s: f64,
    /// The median time a closed connection lasted, seconds.
    pub close_p50_s: f64,
}

/// How one connection ended.
struct Ending {
    refused: bool,
    status: Option<u16>,
    closed_after: Option<Duration>,
}

/// Runs the batch: every connection at once, each watched until closed or `watch` passes.
pub async fn run(config: &AbuseConfig) -> AbuseOutcome {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..config.connections {
        let c = config.clone();
        tasks.spawn(async move { one(&c).await });
    }
    let mut out = AbuseOutcome {
        connections: config.connections as u64,
        ..AbuseOutcome::default()
    };
    let mut closes = Vec::new();
    while let Some(ended) = tasks.join_next().await {
        let Ok(e) = ended else {
            out.still_open += 1; // a task that panicked: nothing known, count it against the server
            continue;
        };
        if e.refused {
            out.refused += 1;
            continue;
        }
        if let Some(status) = e.status {
            *out.answered.entry(status).or_default() += 1;
        }
        match e.closed_after {
            Some(d) => {
                out.closed += 1;
                closes.push(d.as_secs_f64());
            }
            None => out.still_open += 1,
        }
    }
    closes.sort_by(f64::total_cmp);
    out.close_max_s = closes.last().copied().unwrap_or(0.0);
    out.close_p50_s = closes.get(closes.len() / 2).copied().unwrap_or(0.0);
    out
}

/// The bytes a connection sends first.
fn opening(config: &AbuseConfig) -> Vec<u8> {
    let path = &config.path;
    match config.abuse {
        Abuse::Slowloris => {
            format!("GET {path} HTTP/1.1\r\nHost: brigade\r\nX-Slow: ").into_bytes()
        }
        Abuse::Idle => format!("GET {path} HTTP/1.1\r\nHost: brigade\r\n\r\n").into_bytes(),
        Abuse::UnfinishedBody => format!(
            "POST {path} HTTP/1.1\r\nHost: brigade\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: 1000\r\n\r\n0123456789"
        )
        .into_bytes(),
        Abuse::Flood => Vec::new(),
    }
}

async fn one(config: &AbuseConfig) -> Ending {
    let began = Instant::now();
    let connect = tokio::time::timeout(config.connect_timeout, TcpStream::connect(config.addr));
    let Ok(Ok(stream)) = connect.await else {
        return Ending {
            refused: true,
            status: None,
            closed_after: None,
        };
    };
    let (mut reader, mut writer) = stream.into_split();
    let first = opening(config);
    let trickle = (config.abuse == Abuse::Slowloris).then_some(config.trickle);
    let write = async move {
        if !first.is_empty() && writer.write_all(&first).await.is_err() {
            return;
        }
        match trickle {
            Some(every) => loop {
                tokio::time::sleep(every).await;
                if writer.write_all(b"a").await.is_err() {
                    return;
                }
            },
            // Hold the write half open: dropping it would send a FIN, which is not silence.
            None => std::future::pending::<()>().await,
        }
    };
    let status = std::sync::Mutex::new(None);
    let read = async {
        let mut buf = vec![0u8; 4096];
        let mut head = Vec::new();
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return began.elapsed(),
                Ok(n) => {
                    if head.len() < 64 {
                        head.extend_from_slice(&buf[..n]);
                        if let Ok(mut s) = status.lock() {
                            *s = s.or(parse_status(&head));
                        }
                    }
                }
            }
        }
    };
    let closed_after = tokio::select! {
        closed = read => Some(closed),
        _ = write => None, // never ends on its own; here only to be polled alongside
        _ = tokio::time::sleep(config.watch) => None,
    };
    Ending {
        refused: false,
        status: status.into_inner().ok().flatten(),
        closed_after,
    }
}

/// The status of an HTTP/1.x status line at the start of `head`.
fn parse_status(head: &[u8]) -> Option<u16> {
    let line = head.strip_prefix(b"HTTP/1.")?;
    let code = line.get(2..5)?;
    std::str::from_utf8(code).ok()?.parse().ok()
}

/// Raises this process's soft limit on open files to `wanted` (at most the hard limit) and returns
/// the limit now in force: thousands of connections need thousands of descriptors.
pub fn raise_open_file_limit(wanted: u64) -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    let target = wanted.min(hard);
    if target > soft && setrlimit(Resource::RLIMIT_NOFILE, target, hard).is_ok() {
        return target;
    }
    soft
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read_from_the_first_bytes() {
        assert_eq!(parse_status(b"HTTP/1.1 408 Request Timeout\r\n"), Some(408));
        assert_eq!(parse_status(b"HTTP/1.0 200"), Some(200));
        assert_eq!(parse_status(b"HTTP/1.1 2"), None);
        assert_eq!(parse_status(b"garbage"), None);
    }

    /// A listener that accepts and never answers nor closes, and one that closes at once: the
    /// outcome tells them apart by counts.
    #[tokio::test]
    async fn connections_a_server_closes_are_told_from_those_it_keeps() {
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_addr = silent.local_addr().unwrap();
        let kept = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = silent.accept().await {
                held.push(s);
            }
        });
        let closing = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closing_addr = closing.local_addr().unwrap();
        let closer = tokio::spawn(async move {
            while let Ok((mut s, _)) = closing.accept().await {
                let _ = s
                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\n\r\n")
                    .await;
            }
        });
        let mut c = AbuseConfig::new(Abuse::Slowloris, 3, silent_addr);
        c.watch = Duration::from_millis(300);
        c.trickle = Duration::from_millis(50);
        let kept_open = run(&c).await;
        assert_eq!((kept_open.still_open, kept_open.closed), (3, 0));
        c.addr = closing_addr;
        c.abuse = Abuse::Flood;
        c.watch = Duration::from_secs(10);
        let closed = run(&c).await;
        assert_eq!((closed.closed, closed.still_open), (3, 0));
        assert_eq!(closed.answered.get(&503), Some(&3));
        kept.abort();
        closer.abort();
        assert!(raise_open_file_limit(64) >= 64);
    }
}
