//! Brigade's fuzz targets, one function each (the `fuzz_targets/` files are one line apiece):
//! what comes from outside — a client's bytes, a scenario file, a server's announcement, a saved
//! report, a server's answer — must never panic, hang or, on a server, answer 5xx. The invariants
//! are asserted here, so libFuzzer reports a breach as a crash. `scripts/fuzz.sh` builds and runs
//! them; crashes found are kept under `fuzz/regressions/<target>/` and replayed by CI.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use brigade_kit::peer::PeerTimeouts;
use brigade_kit::service::{build, ServiceConfig};
use brigade_kit::store::{StoreConfig, StoreKind};
use brigade_kit::http::{pattern_segments, Segment};
use brigade_kit::{AppHandle, RawRequest};
use brigade_kit::limits::ServerLimits;
use brigade_runtimes::MemoryServer;
use brigade_restaurant::ServiceName;

/// The limits the request-path targets serve under: the defaults with short timers (a case that
/// waits for a timer is slow, not wrong) and a small body limit.
fn limits() -> ServerLimits {
    ServerLimits {
        header_read_timeout: Duration::from_millis(500),
        keep_alive_timeout: Duration::from_millis(500),
        body_read_timeout: Duration::from_millis(500),
        max_body_bytes: 64 * 1024,
        ..ServerLimits::default()
    }
}

/// A current-thread tokio runtime for the whole process.
fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// The three services on the memory store, their peers refusing (a call to one is a 503).
fn apps() -> &'static Vec<Arc<dyn AppHandle>> {
    static APPS: OnceLock<Vec<Arc<dyn AppHandle>>> = OnceLock::new();
    APPS.get_or_init(|| {
        let config = ServiceConfig {
            runtime: "fuzz".into(),
            store: StoreKind::Memory,
            store_config: StoreConfig {
                data_dir: std::env::temp_dir(),
                mongodb_uri: None,
                timeout: Duration::from_secs(1),
                cache_bytes: None,
                concurrency: 0,
                writers: 0,
            },
            database_prefix: "fuzz_".into(),
            metrics: true,
            peer_transport: Default::default(),
            peers: HashMap::from([
                ("waiter".to_string(), "http://127.0.0.1:9".to_string()),
                ("tables".to_string(), "http://127.0.0.1:9".to_string()),
            ]),
            peer_timeouts: PeerTimeouts {
                connect: Duration::from_millis(100),
                request: Duration::from_millis(200),
            },
        };
        ServiceName::ALL
            .iter()
            .map(|s| rt().block_on(build(s, &config)).expect("the service builds").app)
            .collect()
    })
}

/// `runtime`'s in-memory server for the waiter service (which carries the bench routes).
fn server(runtime: &str) -> &'static MemoryServer {
    static SERVERS: OnceLock<Vec<(String, MemoryServer)>> = OnceLock::new();
    let servers = SERVERS.get_or_init(|| {
        // Made inside the runtime: some routers spawn or read the runtime as they are built.
        let _entered = rt().enter();
        brigade_runtimes::names()
            .into_iter()
            .filter_map(|name| {
                let r = brigade_runtimes::find(name)?;
                Some((name.to_owned(), r.memory_server(apps()[0].clone(), &limits())?))
            })
            .collect()
    });
    &servers
        .iter()
        .find(|(n, _)| n == runtime)
        .unwrap_or_else(|| panic!("{runtime} has no in-memory server in this build"))
        .1
}

/// The bytes as a client's on a fresh connection to `runtime`'s waiter service: the server closes
/// it within a few times its timers, and no answer it writes is a 5xx or malformed.
pub fn request_path(runtime: &str, data: &[u8]) {
    let out = server(runtime)
        .exchange(rt(), data, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("{runtime}: the connection did not end within 10 s"));
    let mut rest = &out[..];
    while !rest.is_empty() {
        // An answer to a HEAD has a length and no body; the framing that lands on the next
        // answer's status line (or the end) is the one the server meant. The whole status line,
        // not its first bytes: a body can hold "HTTP/1.1 request ..." (an error naming the
        // version), and a HEAD's length landing there is not an answer.
        let next = [false, true].into_iter().find_map(|head| {
            let (status, _, used) = brigade_clients::http1::read_answer(rest, head)?;
            let after = &rest[used..];
            (after.is_empty() || starts_with_status_line(after)).then_some((status, used))
        });
        let Some((status, used)) = next else {
            panic!(
                "{runtime}: an answer that is not HTTP/1.x: {:?}",
                String::from_utf8_lossy(&rest[..rest.len().min(300)])
            );
        };
        assert!(
            status < 500,
            "{runtime}: answered {status}: {:?}",
            String::from_utf8_lossy(&out)
        );
        rest = &rest[used..];
    }
}

/// Whether `bytes` open with an HTTP/1.x status line's start: `HTTP/1.0 ` or `HTTP/1.1 `, then
/// three digits and a space.
fn starts_with_status_line(bytes: &[u8]) -> bool {
    match bytes.get(..13) {
        Some([b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor, b' ', code @ .., b' ']) => {
            matches!(minor, b'0' | b'1') && code.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// The kit alone: the first part of the input as a request head through the house rules and the
/// head limits, the rest as a route, its parameters, query and body through the table's call. No
/// call answers 500.
pub fn kit_dispatch(data: &[u8]) {
    let mut parts = data.split(|b| *b == 0);
    let head = parts.next().unwrap_or_default();
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    if let Ok(httparse::Status::Complete(_)) = req.parse(head) {
        let version = if req.version == Some(0) {
            brigade_kit::rules::Version::Http10
        } else {
            brigade_kit::rules::Version::Http11
        };
        let list = || req.headers.iter().map(|h| (h.name.as_bytes(), h.value));
        let method = req.method.unwrap_or("GET");
        let path = req.path.unwrap_or("/");
        let _ = brigade_kit::rules::admit(&limits(), method, path, version, list);
        let _ = brigade_kit::rules::normalize_path(path);
        let app = &apps()[usize::from(head.first().copied().unwrap_or(0)) % 3];
        let matched = app.matcher().at(path).ok().map(|m| *m.value);
        let _ = app.unmatched(method, path, matched);
    }
    let selector = data.first().copied().unwrap_or(0);
    let app = &apps()[usize::from(selector) % 3];
    let routes = app.routes().len();
    let route = usize::from(data.get(1).copied().unwrap_or(0)) % routes;
    let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
    // The route's path with each parameter's segment taken from the input as it is: the kit's
    // decoding of raw segments is fuzzed too.
    let path: String = pattern_segments(app.routes()[route].path)
        .into_iter()
        .map(|s| match s {
            Segment::Param(_) => text(parts.next()).unwrap_or_default(),
            Segment::Literal(l) => l.to_string(),
        })
        .fold(String::new(), |path, segment| path + "/" + &segment);
    let query = text(parts.next());
    let content_type = text(parts.next());
    let body = parts.next().unwrap_or_default().to_vec();
    let request = RawRequest {
        path,
        query,
        content_type,
        body: body.into(),
        traceparent: text(parts.next()),
        budget: text(parts.next()),
    };
    let reply = rt().block_on(app.call(route, request));
    assert_ne!(
        reply.status,
        500,
        "route {route} answered 500: {}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// The scenario compiler: any text is a scenario or an error, never a panic.
pub fn scenario_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = brigade_load::scenario::Scenario::parse(text, "fuzz");
    }
}

/// The announcement parsers: any line is an announcement or not, never a panic.
pub fn announcement(data: &[u8]) {
    for line in String::from_utf8_lossy(data).lines() {
        let _ = brigade_kit::announce::Announcement::parse(line);
        let _ = brigade_meter::servers::announce::Listening::parse(line);
        let _ = brigade_meter::servers::announce::Preloaded::parse(line);
    }
}

/// A saved `report.json` judged again as `--rejudge` does: a report or an error, never a panic.
pub fn report_json(data: &[u8]) {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"));
    std::fs::write(dir.path().join("report.json"), data).expect("writing the report");
    let _ = brigade_compare::rejudge(dir.path(), &brigade_report::verdict::Rule::default());
}

/// The generator's answer parser on any bytes, for a GET and a HEAD: an answer or none, never a
/// panic, and never more bytes used than given.
pub fn response_parser(data: &[u8]) {
    for head_request in [false, true] {
        if let Some((_, body, used)) = brigade_clients::http1::read_answer(data, head_request) {
            assert!(used <= data.len() && body <= used);
        }
    }
}
