//! The differential test: every case of the corpus ([`super::corpus`]) sent over a raw socket to
//! the waiter service on every runtime (memory store, the same limits), and the answers compared.
//! An outcome is the final statuses the client read, each answer's JSON error code, and whether
//! the connection then still serves a request (a follow-up `GET /health` on it, not a timer). The
//! outcomes must agree on every runtime, but for the cases listed in [`PARSER_ANSWERS`]: where a
//! runtime's own HTTP parser answers before Brigade sees the request and cannot be configured
//! (docs/reliability.md lists them with the reason). Never a 5xx, never a hang past the limits.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use brigade_kit::limits::ServerLimits;
use brigade_launch::testing::{Deployment, StoreKind, Target};
use brigade_launch::Services;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::corpus::{self, Case, Limits};

/// How far a listed runtime's parser answer differs from the others'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Differs {
    /// The same status and connection state, but the parser's own bare body (no JSON error code).
    Body,
    /// Another outcome altogether; the other runtimes still agree among themselves.
    Outcome,
}

const ACTIX_PARSER: &str = "actix-http's request parser refuses it with a bare 400 before any \
    handler runs (RFC 9112 allows the 400; not configurable)";
const NTEX_CHUNKED: &str = "ntex's chunked decoder refuses it with a bare 400 before the kit's \
    body reader sees an error (not configurable)";
const BOTH_PARSERS: &str = "actix-http's and ntex's parsers refuse it with a bare 400 (not \
    configurable)";
const STRICT_PARSERS_TE: &str = "actix-http's and ntex's parsers refuse it with a bare 400, \
    and so does xitca-http's (not configurable)";
const HYPER_PARSER: &str = "hyper's parser (every runtime on hyper) refuses it with a bare 400 \
    before the service runs (not configurable)";
const SMUGGLING: &str = "hyper's parser lets Transfer-Encoding win over Content-Length (or \
    folds equal lengths), answers and closes, as RFC 9112 §6.3 allows; \
    actix-http's and ntex's refuse with 400, \
    and so does xitca-http's; \
    on hyper the kit never sees the Content-Length";
const PIPELINED_10: &str = "actix-http and ntex answer an HTTP/1.0 request already read \
    behind one that closes the connection; \
    hyper stops after the first (the client asked for the close either way)";
const PREFACE: &str = "an HTTP/2 preface on an HTTP/1.1 port: hyper closes without an answer, \
    actix-http and ntex answer a bare 400, \
    and so does xitca-http; \
    the kit sees no request (HTTP/2 is the TLS and HTTP/2 issue's)";
const NTEX_LENIENT: &str = "ntex's parser accepts it (a trailer section; two spaces in the \
    request line) where the others refuse, or refuses where they accept (not configurable)";
const XITCA_LENIENT: &str = "every parser but xitca-http's refuses it with a bare 400; xitca-http \
    lets it through (a `+` before a length, a coding other than chunked, a zero length beside \
    another) and the kit's framing rule answers the same 400 and close with its JSON body";
const XITCA_EXPECT: &str = "xitca-http refuses an `Expect` other than `100-continue` with a bare \
    400 (RFC 9110 §10.1.1 lets a server refuse it, with 417) where the others ignore it \
    (not configurable)";
const XITCA_CONTINUE: &str = "xitca-http, once it has written its 100 Continue, waits for more \
    bytes before it decodes the body it already holds: a body sent with its head, without waiting \
    for the 100, is read only when more bytes come, here never, so the kit answers 408 at the \
    body-read limit (not configurable)";

/// Which runtimes a listed case names.
#[derive(Debug, Clone, Copy)]
enum Who {
    /// These.
    Only(&'static [&'static str]),
    /// Every runtime but these (the ones on hyper, where the others have their own parsers).
    AllBut(&'static [&'static str]),
    /// The runtimes of either.
    Either(&'static Who, &'static Who),
}

impl Who {
    fn has(self, runtime: &str) -> bool {
        match self {
            Who::Only(rs) => rs.contains(&runtime),
            Who::AllBut(rs) => !rs.contains(&runtime),
            Who::Either(a, b) => a.has(runtime) || b.has(runtime),
        }
    }
}

const ACTIX: Who = Who::Only(&["actix"]);
const NTEX: Who = Who::Only(&["ntex", "ntex-uring"]);
const OWN_PARSERS: Who = Who::Only(&["actix", "ntex", "ntex-uring"]);
const XITCA: Who = Who::Only(&["xitca", "xitca-uring"]);
const STRICT_PARSERS: Who = Who::Either(&OWN_PARSERS, &XITCA);
const ALL_BUT_XITCA: Who = Who::AllBut(&["xitca", "xitca-uring"]);

/// Cases whose outcome a runtime's own parser decides before Brigade sees the request, with the
/// runtimes, how far they differ and why. docs/reliability.md lists the same; the test fails when
/// a listed case stops diverging too, so the list never claims more than is true.
const PARSER_ANSWERS: &[(&str, Who, Differs, &str)] = &[
    ("HTTP/1.1 without Host", ACTIX, Differs::Body, ACTIX_PARSER),
    (
        "HTTP/1.1 without Host, absolute-form",
        ACTIX,
        Differs::Body,
        ACTIX_PARSER,
    ),
    (
        "a GET then a request without Host pipelined",
        ACTIX,
        Differs::Body,
        ACTIX_PARSER,
    ),
    ("two Host headers", ACTIX, Differs::Body, ACTIX_PARSER),
    (
        "a query with a raw UTF-8 value",
        ACTIX,
        Differs::Body,
        ACTIX_PARSER,
    ),
    ("raw UTF-8 id", ACTIX, Differs::Body, ACTIX_PARSER),
    ("raw byte 0xFF", ACTIX, Differs::Body, ACTIX_PARSER),
    (
        "POST Transfer-Encoding chunked with a bad size",
        NTEX,
        Differs::Body,
        NTEX_CHUNKED,
    ),
    (
        "POST Transfer-Encoding chunked with a bare LF",
        NTEX,
        Differs::Body,
        NTEX_CHUNKED,
    ),
    (
        "POST Transfer-Encoding chunked with a negative size",
        NTEX,
        Differs::Body,
        NTEX_CHUNKED,
    ),
    (
        "POST Transfer-Encoding chunked with an overflowing size",
        NTEX,
        Differs::Body,
        NTEX_CHUNKED,
    ),
    (
        "POST Transfer-Encoding chunked without the CRLF after data",
        NTEX,
        Differs::Body,
        NTEX_CHUNKED,
    ),
    (
        "POST Transfer-Encoding chunked, chunked",
        STRICT_PARSERS,
        Differs::Body,
        STRICT_PARSERS_TE,
    ),
    (
        "POST Transfer-Encoding gzip, chunked",
        OWN_PARSERS,
        Differs::Body,
        BOTH_PARSERS,
    ),
    (
        "POST two Transfer-Encoding headers",
        STRICT_PARSERS,
        Differs::Body,
        STRICT_PARSERS_TE,
    ),
    (
        "POST Transfer-Encoding identity",
        Who::AllBut(&["ntex", "xitca"]),
        Differs::Body,
        HYPER_PARSER,
    ),
    (
        "smuggling CL.TE",
        STRICT_PARSERS,
        Differs::Outcome,
        SMUGGLING,
    ),
    (
        "smuggling TE.CL",
        STRICT_PARSERS,
        Differs::Outcome,
        SMUGGLING,
    ),
    (
        "smuggling TE.CL, short length",
        STRICT_PARSERS,
        Differs::Outcome,
        SMUGGLING,
    ),
    (
        "smuggling TE with a tab value",
        STRICT_PARSERS,
        Differs::Outcome,
        SMUGGLING,
    ),
    (
        "POST two equal Content-Lengths",
        STRICT_PARSERS,
        Differs::Outcome,
        SMUGGLING,
    ),
    (
        "HTTP/1.0 without keep-alive pipelined",
        OWN_PARSERS,
        Differs::Outcome,
        PIPELINED_10,
    ),
    (
        "an HTTP/2 preface",
        STRICT_PARSERS,
        Differs::Outcome,
        PREFACE,
    ),
    (
        "POST Content-Length with a plus",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "POST Transfer-Encoding chunked, gzip (not last)",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "POST Transfer-Encoding an unknown coding",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "POST Transfer-Encoding xchunked",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "POST Transfer-Encoding an empty Transfer-Encoding",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "smuggling CL.CL",
        ALL_BUT_XITCA,
        Differs::Body,
        XITCA_LENIENT,
    ),
    (
        "an unknown Expect without a body",
        XITCA,
        Differs::Outcome,
        XITCA_EXPECT,
    ),
    (
        "POST an unknown Expect with a body",
        XITCA,
        Differs::Outcome,
        XITCA_EXPECT,
    ),
    (
        "POST Expect 100-continue with a body",
        XITCA,
        Differs::Outcome,
        XITCA_CONTINUE,
    ),
    (
        "POST Expect 100-continue in capitals",
        XITCA,
        Differs::Outcome,
        XITCA_CONTINUE,
    ),
    (
        "POST Transfer-Encoding chunked with a trailer",
        NTEX,
        Differs::Outcome,
        NTEX_LENIENT,
    ),
    ("two spaces", NTEX, Differs::Outcome, NTEX_LENIENT),
];

/// What one runtime did with one case.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Outcome {
    /// The final answers read: a status and the JSON error code (`-` for a body that is no JSON
    /// error), in order.
    answers: Vec<(u16, String)>,
    /// Whether the connection served a follow-up request afterwards.
    open: bool,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.answers.is_empty() {
            write!(f, "no answer")?;
        }
        for (i, (status, code)) in self.answers.iter().enumerate() {
            let sep = if i == 0 { "" } else { " + " };
            write!(f, "{sep}{status} {code}")?;
        }
        write!(f, ", {}", if self.open { "open" } else { "closed" })
    }
}

/// One answer's head as read off the wire.
struct Head {
    status: u16,
    length: Option<usize>,
    chunked: bool,
    close: bool,
}

/// A connection's read side with what has been read and not yet used.
struct Reader {
    stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
}

impl Reader {
    /// Reads more bytes; false at the end of the stream or on an error (a reset).
    async fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                self.eof = true;
                false
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// The next final answer's head (interim 1xx answers skipped), or None at the end of stream.
    async fn head(&mut self) -> Option<Head> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&self.buf) {
                Ok(httparse::Status::Complete(used)) => {
                    let status = response.code.unwrap_or(0);
                    let value = |name: &str| {
                        response
                            .headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case(name))
                            .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
                    };
                    let head = Head {
                        status,
                        length: value("content-length").and_then(|v| v.trim().parse().ok()),
                        chunked: value("transfer-encoding").is_some_and(|v| v.contains("chunked")),
                        close: value("connection").is_some_and(|v| v.contains("close")),
                    };
                    self.buf.drain(..used);
                    if (100..200).contains(&status) {
                        continue;
                    }
                    return Some(head);
                }
                Ok(httparse::Status::Partial) => {
                    if !self.fill().await {
                        return None;
                    }
                }
                Err(e) => panic!("an answer that is not HTTP: {e}: {:?}", self.buf),
            }
        }
    }

    /// Takes `n` bytes of body; None if the stream ends first.
    async fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() < n {
            if !self.fill().await {
                return None;
            }
        }
        Some(self.buf.drain(..n).collect())
    }

    /// A line ending in CRLF, without it.
    async fn line(&mut self) -> Option<String> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..at]).into_owned();
                self.buf.drain(..at + 2);
                return Some(line);
            }
            if !self.fill().await {
                return None;
            }
        }
    }

    /// The body that follows `head`.
    async fn body(&mut self, head: &Head, to_head: bool) -> Option<Vec<u8>> {
        if to_head || head.status == 204 || head.status == 304 {
            return Some(Vec::new());
        }
        if head.chunked {
            let mut body = Vec::new();
            loop {
                let size = self.line().await?;
                let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
                if size == 0 {
                    while !self.line().await?.is_empty() {}
                    return Some(body);
                }
                body.extend(self.take(size).await?);
                self.line().await?;
            }
        }
        match head.length {
            Some(n) => self.take(n).await,
            None => {
                while self.fill().await {}
                Some(std::mem::take(&mut self.buf))
            }
        }
    }
}

/// The JSON error code of a body, `-` if it carries none.
fn error_code(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".to_owned())
}

/// Sends one case on a fresh connection and reads what comes back.
async fn outcome(addr: SocketAddr, case: &Case) -> Outcome {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let mut r = Reader {
        stream,
        buf: Vec::new(),
        eof: false,
    };
    // The server may answer and close before all of it is written.
    let _ = r.stream.write_all(&case.bytes).await;
    let mut answers = Vec::new();
    let mut closing = false;
    for i in 0..case.answers {
        let Some(head) = r.head().await else { break };
        let Some(body) = r.body(&head, case.heads.contains(&i)).await else {
            answers.push((head.status, "truncated".to_owned()));
            closing = true;
            break;
        };
        answers.push((head.status, error_code(&body)));
        if head.close {
            closing = true;
            break;
        }
    }
    let open = !closing && !r.eof && {
        let probe = b"GET /health HTTP/1.1\r\nHost: probe\r\n\r\n";
        r.stream.write_all(probe).await.is_ok() && r.head().await.is_some_and(|h| h.status == 200)
    };
    Outcome { answers, open }
}

/// Every case against one server, a few at a time, each under `deadline`.
async fn all_outcomes(addr: SocketAddr, cases: &[Case], deadline: Duration) -> Vec<Outcome> {
    use futures::stream::{self, StreamExt};
    stream::iter(cases.iter())
        .map(|case| async move {
            tokio::time::timeout(deadline, outcome(addr, case))
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "{:?} at {addr}: no answer and no close within {deadline:?}",
                        case.name
                    )
                })
        })
        .buffered(8)
        .collect()
        .await
}

#[test]
fn every_runtime_answers_every_corpus_case_alike() {
    let limits = Limits {
        max_headers: 16,
        max_header_bytes: 4096,
        max_body_bytes: 64 * 1024,
    };
    let cases = corpus::corpus(limits);
    assert!(cases.len() >= 200, "the corpus has {} cases", cases.len());
    let server_limits = ServerLimits {
        header_read_timeout: Duration::from_secs(2),
        keep_alive_timeout: Duration::from_secs(5),
        body_read_timeout: Duration::from_secs(2),
        max_headers: limits.max_headers,
        max_header_bytes: limits.max_header_bytes,
        max_body_bytes: limits.max_body_bytes,
        max_connections: 1024,
        ..ServerLimits::default()
    };
    // Past every timeout above, several times over: a case that takes longer hangs.
    let deadline = Duration::from_secs(20);
    let waiter = brigade_restaurant::services().into_iter().next().unwrap();
    let services = Services::from(vec![waiter]);
    let client = tokio::runtime::Runtime::new().unwrap();
    let mut by_runtime: Vec<(&str, Vec<Outcome>)> = Vec::new();
    for runtime in brigade_runtimes::names() {
        let d = Deployment::start_with_limits(
            &services,
            runtime,
            StoreKind::Memory,
            None,
            server_limits,
        )
        .unwrap_or_else(|e| panic!("starting on {runtime}: {e:#}"));
        let name = d.services().remove(0);
        let addr: SocketAddr = d.url(&name).trim_start_matches("http://").parse().unwrap();
        let outcomes = client.block_on(all_outcomes(addr, &cases, deadline));
        d.shutdown();
        by_runtime.push((runtime, outcomes));
    }

    let mut fivexx = Vec::new();
    let mut diverging = BTreeMap::new();
    let mut unexplained = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let mut groups: BTreeMap<&Outcome, Vec<&str>> = BTreeMap::new();
        for (runtime, outcomes) in &by_runtime {
            let o = &outcomes[i];
            if o.answers.iter().any(|(s, _)| *s >= 500) {
                fivexx.push(format!("{}: {runtime}: {o}", case.name));
            }
            groups.entry(o).or_default().push(runtime);
        }
        if groups.len() > 1 {
            let said: Vec<String> = groups
                .iter()
                .map(|(o, rs)| format!("{o} ({})", rs.join(", ")))
                .collect();
            diverging.insert(case.name.as_str(), said.join(" | "));
        }
        let listed = PARSER_ANSWERS.iter().find(|(n, ..)| *n == case.name);
        let agree = |keep: &dyn Fn(&str) -> bool, blank: bool| {
            let mut seen = by_runtime
                .iter()
                .filter(|(r, _)| keep(r))
                .map(|(_, o)| {
                    let mut o = o[i].clone();
                    if blank {
                        o.answers.iter_mut().for_each(|a| a.1 = "-".to_owned());
                    }
                    o
                })
                .collect::<Vec<_>>();
            seen.dedup();
            seen.len() <= 1
        };
        let explained = match listed {
            None => groups.len() == 1,
            Some((_, _, Differs::Body, _)) => agree(&|_| true, true),
            Some((_, who, Differs::Outcome, _)) => agree(&|r| !who.has(r), false),
        };
        if !explained {
            unexplained.push(case.name.as_str());
        }
    }
    let table: String = diverging
        .iter()
        .map(|(name, said)| format!("  {name}: {said}\n"))
        .collect();
    eprintln!(
        "differential: {} cases × {} runtimes, {} diverging ({} as listed parser answers)\n{table}",
        cases.len(),
        by_runtime.len(),
        diverging.len(),
        diverging.len() - unexplained.len().min(diverging.len()),
    );
    assert!(fivexx.is_empty(), "5xx answers:\n{}", fivexx.join("\n"));
    if by_runtime.len() < 2 {
        return;
    }
    assert!(
        unexplained.is_empty(),
        "cases whose answers diverge beyond what PARSER_ANSWERS says: {unexplained:?}\n{table}"
    );
    let stale: Vec<&str> = PARSER_ANSWERS
        .iter()
        .map(|(n, ..)| *n)
        .filter(|n| !diverging.contains_key(n))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as parser answers but now agreeing everywhere: {stale:?}"
    );
}

/// The request path the fuzz targets drive (`Runtime::memory_server`, `fuzz/`) answers as the
/// socket does: the same cases, the same statuses, on every runtime that has one.
#[test]
fn in_memory_connections_answer_as_sockets_do() {
    let waiter = brigade_restaurant::services().into_iter().next().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = brigade_kit::service::ServiceConfig {
        runtime: "memory-server".into(),
        store: brigade_kit::store::StoreKind::Memory,
        store_config: Default::default(),
        database_prefix: String::new(),
        peers: Default::default(),
        peer_timeouts: Default::default(),
        metrics: true,
        peer_transport: Default::default(),
    };
    let app = rt
        .block_on(brigade_kit::service::build(&*waiter, &config))
        .unwrap()
        .app;
    let mut served = 0;
    for name in brigade_runtimes::names() {
        let runtime = brigade_runtimes::find(name).unwrap();
        let server = {
            let _entered = rt.enter();
            runtime.memory_server(app.clone(), &ServerLimits::default())
        };
        let Some(server) = server else { continue };
        served += 1;
        for (request, status) in [
            (&b"GET /health HTTP/1.1\r\nHost: h\r\n\r\n"[..], "200"),
            (b"GET /no/such HTTP/1.1\r\nHost: h\r\n\r\n", "404"),
            (b"GET /health HTTP/1.1\r\n\r\n", "400"),
            (b"PATCH /health HTTP/1.1\r\nHost: h\r\n\r\n", "405"),
        ] {
            let out = server
                .exchange(&rt, request, Duration::from_secs(10))
                .unwrap_or_else(|| panic!("{name}: the in-memory connection ended"));
            let out = String::from_utf8_lossy(&out);
            assert_eq!(out.get(9..12), Some(status), "{name}: {out}");
        }
    }
    assert!(served > 0, "no runtime with an in-memory server");
}
